package interp

import (
	"encoding/binary"
	"sync"
)

// Atomics on global memory take one of these mutexes, chosen by the address's
// 32-byte granule, so that read-modify-writes are atomic across blocks running
// in parallel and across concurrent launches. Shared memory needs no lock: a
// block runs on one goroutine. In race-detector builds plain global accesses
// take the stripe too (see race.go), so that the detector checks the
// interpreter rather than the guest kernel's own benign races.
const nStripes = 1024

type paddedMutex struct {
	sync.Mutex
	_ [56]byte // one per cache line
}

var stripes [nStripes]paddedMutex

func stripe(addr uint64) *paddedMutex { return &stripes[(addr>>5)%nStripes] }

func load(b []byte, size uint8) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func store(b []byte, size uint8, v uint64) {
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}

// signExtend extends the low size bytes of v.
func signExtend(v uint64, size uint8) uint64 {
	s := 64 - 8*uint(size)
	return uint64(int64(v<<s) >> s)
}

// loadElems copies the elements of a (vector) load from b into registers.
func loadElems(r []uint64, in *inst, b []byte) {
	if in.count == 1 {
		v := load(b, in.size)
		if in.sext {
			v = signExtend(v, in.size)
		}
		r[in.d] = v
		return
	}
	for i, s := range in.vec {
		v := load(b[i*int(in.size):], in.size)
		if in.sext {
			v = signExtend(v, in.size)
		}
		r[s] = v
	}
}

// storeElems copies the register elements of a (vector) store into b.
func storeElems(r []uint64, in *inst, b []byte) {
	if in.count == 1 {
		store(b, in.size, r[in.b])
		return
	}
	for i, s := range in.vec {
		store(b[i*int(in.size):], in.size, r[s])
	}
}
