package v1

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// Protocol constants.
const (
	// Magic opens every Hello: "GPOS" as little-endian bytes.
	Magic uint32 = 0x534f5047
	// Major is the protocol's major version; peers of different majors refuse
	// each other with VersionMismatch.
	Major uint16 = 1
	// Minor is the protocol's minor version; it only adds, so peers of the same
	// major interoperate.
	Minor uint16 = 1

	// HeaderSize is the size of a frame header.
	HeaderSize = 16
	// MaxPayload is the largest payload a frame may carry (16 MiB). Bulk data
	// larger than this travels in several requests or through shared memory.
	MaxPayload = 16 << 20
	// MaxFDs is the most file descriptors one frame may carry.
	MaxFDs = 15
)

// Flags is the header's flag word.
type Flags uint16

// Header flags. Bits 3..6 hold the number of attached file descriptors; set them
// with WithFDs. Every other bit must be zero.
const (
	// FlagReply marks a frame that answers the request with the same ID.
	FlagReply Flags = 1 << 0
	// FlagNoReply marks an asynchronous request: the sender wants no reply, and an
	// error it causes is returned by the session's next synchronizing call.
	FlagNoReply Flags = 1 << 1
	// FlagError marks a reply whose payload is an Error (type TypeError).
	FlagError Flags = 1 << 2

	fdShift          = 3
	flagFDMask Flags = MaxFDs << fdShift
	knownFlags       = FlagReply | FlagNoReply | FlagError | flagFDMask
)

// FDs returns the number of file descriptors the frame says it carries.
func (f Flags) FDs() int { return int(f&flagFDMask) >> fdShift }

// WithFDs returns f saying that the frame carries n file descriptors.
// n must be in 0..MaxFDs; only its low four bits are used.
func (f Flags) WithFDs(n int) Flags { return f&^flagFDMask | Flags(n&MaxFDs)<<fdShift }

// String returns the set flags joined by "|", e.g. "reply|error|fds=1".
func (f Flags) String() string {
	var parts []string
	if f&FlagReply != 0 {
		parts = append(parts, "reply")
	}
	if f&FlagNoReply != 0 {
		parts = append(parts, "noreply")
	}
	if f&FlagError != 0 {
		parts = append(parts, "error")
	}
	if n := f.FDs(); n != 0 {
		parts = append(parts, "fds="+strconv.Itoa(n))
	}
	if u := f &^ knownFlags; u != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(u), 16))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// Header is the fixed 16-byte prefix of every frame:
// u32 payload length | u16 type | u16 flags | u64 request id, little-endian.
type Header struct {
	Length uint32 // payload bytes that follow the header
	Type   Type   // what the payload is
	Flags  Flags
	ID     uint64 // chosen by the requester; a reply repeats its request's ID
}

// Put writes h into b[:HeaderSize]. b must be at least HeaderSize long.
func (h Header) Put(b []byte) {
	_ = b[HeaderSize-1]
	binary.LittleEndian.PutUint32(b[0:], h.Length)
	binary.LittleEndian.PutUint16(b[4:], uint16(h.Type))
	binary.LittleEndian.PutUint16(b[6:], uint16(h.Flags))
	binary.LittleEndian.PutUint64(b[8:], h.ID)
}

// Append appends h's 16 bytes to b.
func (h Header) Append(b []byte) []byte {
	var a [HeaderSize]byte
	h.Put(a[:])
	return append(b, a[:]...)
}

// ParseHeader decodes the header at the start of b. It checks what a header can
// say alone: a length within MaxPayload, no unknown flag bits, and no
// contradictory flags (Reply with NoReply, Error without Reply). On error the
// fields that could be read are returned too, so that a server can answer an
// oversized request by its ID before closing the connection.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, Errorf(CodeMalformed, "header truncated: %d of %d bytes", len(b), HeaderSize)
	}
	h := Header{
		Length: binary.LittleEndian.Uint32(b[0:]),
		Type:   Type(binary.LittleEndian.Uint16(b[4:])),
		Flags:  Flags(binary.LittleEndian.Uint16(b[6:])),
		ID:     binary.LittleEndian.Uint64(b[8:]),
	}
	return h, h.check()
}

func (h Header) check() error {
	switch {
	case h.Length > MaxPayload:
		return Errorf(CodeMalformed, "frame too large: %d byte payload, limit %d", h.Length, MaxPayload)
	case h.Flags&^knownFlags != 0:
		return Errorf(CodeMalformed, "unknown header flags %#x", uint16(h.Flags&^knownFlags))
	case h.Flags&FlagReply != 0 && h.Flags&FlagNoReply != 0:
		return Errorf(CodeMalformed, "header flags reply and noreply together")
	case h.Flags&FlagError != 0 && h.Flags&FlagReply == 0:
		return Errorf(CodeMalformed, "header flag error without reply")
	}
	return nil
}

// IsReply reports whether the frame answers a request.
func (h Header) IsReply() bool { return h.Flags&FlagReply != 0 }

// IsError reports whether the frame is an error reply.
func (h Header) IsError() bool { return h.Flags&FlagError != 0 }

// NoReply reports whether the frame is an asynchronous request.
func (h Header) NoReply() bool { return h.Flags&FlagNoReply != 0 }

// FDs returns the number of file descriptors the frame carries.
func (h Header) FDs() int { return h.Flags.FDs() }
