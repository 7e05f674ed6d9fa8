package cap

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
)

// Handle names an object in one Table. The zero Handle names nothing.
//
// Layout: the top indexBits bits are the slot index (never 0), the low
// tagBits bits a tag derived from the table's secret, the slot's generation
// and the object's kind.
type Handle uint64

const (
	indexBits = 24
	tagBits   = 64 - indexBits
	tagMask   = 1<<tagBits - 1

	// MaxHandles is the most live handles one table can hold.
	MaxHandles = 1<<indexBits - 1
)

func (h Handle) index() uint32 { return uint32(uint64(h) >> tagBits) }

func newSecret(s *[32]byte) {
	// crypto/rand.Read never returns an error; it crashes the program if the
	// kernel cannot provide randomness.
	rand.Read(s[:])
}

// makeHandle derives the handle of slot idx at generation gen holding kind.
// A prefix-keyed SHA-256 over a fixed-length message is a PRF, so without the
// table's secret a tag cannot be predicted from other tags.
func makeHandle(secret *[32]byte, idx uint32, gen uint64, kind Kind) Handle {
	var msg [32 + 4 + 8 + 1]byte
	copy(msg[:32], secret[:])
	binary.LittleEndian.PutUint32(msg[32:], idx)
	binary.LittleEndian.PutUint64(msg[36:], gen)
	msg[44] = byte(kind)
	sum := sha256.Sum256(msg[:])
	tag := binary.LittleEndian.Uint64(sum[:8]) & tagMask
	return Handle(uint64(idx)<<tagBits | tag)
}
