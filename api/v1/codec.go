package v1

import (
	"encoding/binary"
	"math"
)

// Encoder appends the wire form of values to a byte slice. The zero value is
// ready to use. Reset it and reuse it: once its buffer has grown to the largest
// frame, encoding allocates nothing.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an Encoder that appends to buf[:0], reusing its storage.
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf[:0]} }

// Reset empties the encoder and keeps its storage.
func (e *Encoder) Reset() { e.buf = e.buf[:0] }

// Bytes returns what has been encoded. It aliases the encoder's storage and is
// valid until the next call that changes the encoder.
func (e *Encoder) Bytes() []byte { return e.buf }

// Len returns how many bytes have been encoded.
func (e *Encoder) Len() int { return len(e.buf) }

// PutUint8 appends v.
func (e *Encoder) PutUint8(v uint8) { e.buf = append(e.buf, v) }

// PutUint16 appends v, little-endian.
func (e *Encoder) PutUint16(v uint16) { e.buf = binary.LittleEndian.AppendUint16(e.buf, v) }

// PutUint32 appends v, little-endian.
func (e *Encoder) PutUint32(v uint32) { e.buf = binary.LittleEndian.AppendUint32(e.buf, v) }

// PutUint64 appends v, little-endian.
func (e *Encoder) PutUint64(v uint64) { e.buf = binary.LittleEndian.AppendUint64(e.buf, v) }

// PutInt32 appends v in two's complement, little-endian.
func (e *Encoder) PutInt32(v int32) { e.PutUint32(uint32(v)) }

// PutInt64 appends v in two's complement, little-endian.
func (e *Encoder) PutInt64(v int64) { e.PutUint64(uint64(v)) }

// PutBool appends v as one byte, 0 or 1.
func (e *Encoder) PutBool(v bool) {
	var b uint8
	if v {
		b = 1
	}
	e.buf = append(e.buf, b)
}

// PutBytes appends a u32 length and then b.
// A slice longer than 4 GiB cannot be a frame; PutFrame rejects it as too large.
func (e *Encoder) PutBytes(b []byte) {
	e.PutCount(len(b))
	e.buf = append(e.buf, b...)
}

// PutString appends a u32 length and then the bytes of s.
func (e *Encoder) PutString(s string) {
	e.PutCount(len(s))
	e.buf = append(e.buf, s...)
}

// PutCount appends the u32 element count that precedes a slice's elements.
// Counts beyond MaxUint32 are saturated; such a frame exceeds MaxPayload anyway
// and PutFrame rejects it.
func (e *Encoder) PutCount(n int) {
	if n < 0 || uint64(n) > math.MaxUint32 {
		n = math.MaxUint32
	}
	e.PutUint32(uint32(n))
}

// PutUint32x3 appends a fixed [3]u32 inline (a grid or block shape).
func (e *Encoder) PutUint32x3(v [3]uint32) {
	e.PutUint32(v[0])
	e.PutUint32(v[1])
	e.PutUint32(v[2])
}

// PutBytes16 appends a fixed [16]byte inline (a UUID or a grant token).
func (e *Encoder) PutBytes16(v [16]byte) { e.buf = append(e.buf, v[:]...) }

// Decoder reads wire values from a byte slice with a cursor. The first error is
// sticky: after it every read returns the zero value, so a message's Decode can
// read all its fields and return d.Err() once. Every error is a Malformed *Error.
//
// A Decoder never allocates more than the input holds: byte slices alias the
// input, strings copy at most the input, and a slice's count is checked against
// the bytes left before anything is allocated for it.
type Decoder struct {
	buf []byte
	off int
	err error
}

// NewDecoder returns a Decoder reading b.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// Reset makes d read b from its start and clears the error.
func (d *Decoder) Reset(b []byte) { *d = Decoder{buf: b} }

// Err returns the first error met, or nil.
func (d *Decoder) Err() error { return d.err }

// Remaining returns how many bytes are left to read.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// Failf records a Malformed error (unless one is already recorded), for checks a
// message makes on what it decoded: an invalid enum, inconsistent fields.
func (d *Decoder) Failf(format string, args ...any) {
	if d.err == nil {
		d.err = Errorf(CodeMalformed, format, args...)
		d.off = len(d.buf)
	}
}

// Finish returns the first error, or a Malformed error if bytes are left over.
func (d *Decoder) Finish() error {
	if d.err == nil && d.off != len(d.buf) {
		d.Failf("%d trailing bytes", len(d.buf)-d.off)
	}
	return d.err
}

// Decode decodes m from the rest of d's input, which m must consume exactly.
func (d *Decoder) Decode(m Message) error {
	if err := m.Decode(d); err != nil && d.err == nil {
		d.err = err
	}
	return d.Finish()
}

// take returns the next n bytes, or nil after recording a truncation error.
func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf)-d.off {
		d.Failf("truncated: %d bytes needed at offset %d, %d left", n, d.off, len(d.buf)-d.off)
		return nil
	}
	b := d.buf[d.off : d.off+n : d.off+n]
	d.off += n
	return b
}

// Uint8 reads a u8.
func (d *Decoder) Uint8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

// Uint16 reads a little-endian u16.
func (d *Decoder) Uint16() uint16 {
	if b := d.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

// Uint32 reads a little-endian u32.
func (d *Decoder) Uint32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// Uint64 reads a little-endian u64.
func (d *Decoder) Uint64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// Int32 reads a little-endian two's-complement i32.
func (d *Decoder) Int32() int32 { return int32(d.Uint32()) }

// Int64 reads a little-endian two's-complement i64.
func (d *Decoder) Int64() int64 { return int64(d.Uint64()) }

// Bool reads a u8 that must be 0 or 1.
func (d *Decoder) Bool() bool {
	off := d.off
	switch v := d.Uint8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		d.Failf("bool at offset %d is %d, want 0 or 1", off, v)
		return false
	}
}

// Bytes reads a u32 length and that many bytes. The result aliases the input
// (copy it to keep it longer than the input lives); an empty field reads as nil.
func (d *Decoder) Bytes() []byte {
	n := d.Uint32()
	if d.err != nil || n == 0 {
		return nil
	}
	return d.take(int(n))
}

// Text reads a u32 length and that many bytes as a string (a copy).
func (d *Decoder) Text() string {
	n := d.Uint32()
	if d.err != nil || n == 0 {
		return ""
	}
	return string(d.take(int(n)))
}

// Count reads a slice's u32 element count and checks that count elements of at
// least minSize bytes each fit in what is left, so that the caller may allocate
// count elements. It returns 0 after an error.
func (d *Decoder) Count(minSize int) int {
	off := d.off
	n := d.Uint32()
	if d.err != nil {
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if uint64(n)*uint64(minSize) > uint64(len(d.buf)-d.off) {
		d.Failf("count %d at offset %d cannot fit: %d bytes left, elements take at least %d", n, off, len(d.buf)-d.off, minSize)
		return 0
	}
	return int(n)
}

// Uint32x3 reads a fixed [3]u32.
func (d *Decoder) Uint32x3() (v [3]uint32) {
	if b := d.take(12); b != nil {
		v[0] = binary.LittleEndian.Uint32(b)
		v[1] = binary.LittleEndian.Uint32(b[4:])
		v[2] = binary.LittleEndian.Uint32(b[8:])
	}
	return v
}

// Bytes16 reads a fixed [16]byte.
func (d *Decoder) Bytes16() (v [16]byte) {
	if b := d.take(16); b != nil {
		copy(v[:], b)
	}
	return v
}

// Marshal returns m's payload encoding in a new slice.
func Marshal(m Message) []byte {
	var e Encoder
	m.Encode(&e)
	return e.buf
}

// Unmarshal decodes payload into m strictly: every byte must be consumed and
// every field valid, else the error is Malformed. Byte-slice fields of m alias
// payload. (It allocates its Decoder; on a hot path, Reset and reuse one and
// call Decoder.Decode, which does not allocate for messages without strings
// or slices of elements.)
func Unmarshal(payload []byte, m Message) error {
	d := Decoder{buf: payload}
	return d.Decode(m)
}
