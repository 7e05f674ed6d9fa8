package interp

import (
	"math"
	"math/bits"
)

// Integer and bit operations. Each is a func(r, in) that reads its sources
// from r[in.a], r[in.b], r[in.c] (and r[in.e] for a carry or fourth operand)
// and writes r[in.d]. Values are truncated to the instruction's width on read;
// results may carry garbage above it.

type uword interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}
type sword interface {
	~int8 | ~int16 | ~int32 | ~int64
}

func addI[T uword](r []uint64, in *inst)  { r[in.d] = uint64(T(r[in.a]) + T(r[in.b])) }
func subI[T uword](r []uint64, in *inst)  { r[in.d] = uint64(T(r[in.a]) - T(r[in.b])) }
func mulLo[T uword](r []uint64, in *inst) { r[in.d] = uint64(T(r[in.a]) * T(r[in.b])) }
func madLo[T uword](r []uint64, in *inst) {
	r[in.d] = uint64(T(r[in.a])*T(r[in.b]) + T(r[in.c]))
}

func satS32(v int64) uint64 {
	return uint64(uint32(int32(max(min(v, math.MaxInt32), math.MinInt32))))
}

func addSatS32(r []uint64, in *inst) {
	r[in.d] = satS32(int64(int32(r[in.a])) + int64(int32(r[in.b])))
}
func subSatS32(r []uint64, in *inst) {
	r[in.d] = satS32(int64(int32(r[in.a])) - int64(int32(r[in.b])))
}

// Carry chains: r[in.e] is the CC.CF flag (0 or 1).

func addCC32(r []uint64, in *inst, cin uint64, setCF bool) {
	s := uint64(uint32(r[in.a])) + uint64(uint32(r[in.b])) + cin
	r[in.d] = uint64(uint32(s))
	if setCF {
		r[in.e] = s >> 32
	}
}

func addCC64(r []uint64, in *inst, cin uint64, setCF bool) {
	s, c := bits.Add64(r[in.a], r[in.b], cin)
	r[in.d] = s
	if setCF {
		r[in.e] = c
	}
}

func subCC32(r []uint64, in *inst, bin uint64, setCF bool) {
	d, b := bits.Sub32(uint32(r[in.a]), uint32(r[in.b]), uint32(bin))
	r[in.d] = uint64(d)
	if setCF {
		r[in.e] = uint64(b)
	}
}

func subCC64(r []uint64, in *inst, bin uint64, setCF bool) {
	d, b := bits.Sub64(r[in.a], r[in.b], bin)
	r[in.d] = d
	if setCF {
		r[in.e] = b
	}
}

// mulHi returns the high half of the full product of two width-bit values.
func mulHi(a, b uint64, width int, signed bool) uint64 {
	switch {
	case width == 64 && !signed:
		hi, _ := bits.Mul64(a, b)
		return hi
	case width == 64:
		hi, _ := bits.Mul64(a, b)
		// Convert the unsigned product to the signed one.
		if int64(a) < 0 {
			hi -= b
		}
		if int64(b) < 0 {
			hi -= a
		}
		return hi
	case signed:
		sa, sb := sextW(a, width), sextW(b, width)
		return uint64(sa*sb) >> width
	}
	m := uint64(1)<<width - 1
	return (a & m) * (b & m) >> width
}

// mulWide returns the 2·width-bit product of two width-bit values (width ≤ 32).
func mulWide(a, b uint64, width int, signed bool) uint64 {
	if signed {
		return uint64(sextW(a, width) * sextW(b, width))
	}
	m := uint64(1)<<width - 1
	return (a & m) * (b & m)
}

func sextW(v uint64, width int) int64 {
	s := 64 - uint(width)
	return int64(v<<s) >> s
}

func zextW(v uint64, width int) uint64 {
	if width >= 64 {
		return v
	}
	return v & (1<<uint(width) - 1)
}

// div and rem: PTX leaves division by zero unspecified; like the hardware we
// return all ones for the quotient and the dividend for the remainder. The
// overflowing signed quotient MIN/−1 wraps to MIN (remainder 0).
func divU(a, b uint64, width int) uint64 {
	a, b = zextW(a, width), zextW(b, width)
	if b == 0 {
		return math.MaxUint64
	}
	return a / b
}

func remU(a, b uint64, width int) uint64 {
	a, b = zextW(a, width), zextW(b, width)
	if b == 0 {
		return a
	}
	return a % b
}

func divS(a, b uint64, width int) uint64 {
	sa, sb := sextW(a, width), sextW(b, width)
	switch {
	case sb == 0:
		return math.MaxUint64
	case sb == -1:
		return uint64(-sa)
	}
	return uint64(sa / sb)
}

func remS(a, b uint64, width int) uint64 {
	sa, sb := sextW(a, width), sextW(b, width)
	switch {
	case sb == 0:
		return uint64(sa)
	case sb == -1:
		return 0
	}
	return uint64(sa % sb)
}

func minS(a, b uint64, width int) uint64 { return uint64(min(sextW(a, width), sextW(b, width))) }
func maxS(a, b uint64, width int) uint64 { return uint64(max(sextW(a, width), sextW(b, width))) }
func minU(a, b uint64, width int) uint64 { return min(zextW(a, width), zextW(b, width)) }
func maxU(a, b uint64, width int) uint64 { return max(zextW(a, width), zextW(b, width)) }

func absS(a uint64, width int) uint64 {
	s := sextW(a, width)
	if s < 0 {
		s = -s
	}
	return uint64(s)
}

// shl and shr: shift amounts of the width or more clamp (PTX).
func shl(a, n uint64, width int) uint64 {
	n = uint64(uint32(n))
	if n >= uint64(width) {
		return 0
	}
	return a << n
}

func shrU(a, n uint64, width int) uint64 {
	n = uint64(uint32(n))
	if n >= uint64(width) {
		return 0
	}
	return zextW(a, width) >> n
}

func shrS(a, n uint64, width int) uint64 {
	n = uint64(uint32(n))
	if n >= uint64(width) {
		n = uint64(width) - 1
	}
	return uint64(sextW(a, width) >> n)
}

func popc(a uint64, width int) uint64 { return uint64(bits.OnesCount64(zextW(a, width))) }
func clz(a uint64, width int) uint64 {
	return uint64(bits.LeadingZeros64(zextW(a, width)) - (64 - width))
}

func brev(a uint64, width int) uint64 { return bits.Reverse64(a) >> (64 - uint(width)) }

// bfind returns the position of the most significant set bit (unsigned) or
// non-sign bit (signed); 0xffffffff if there is none. With shiftAmt it
// returns the left shift that moves that bit to the top instead.
func bfind(a uint64, width int, signed, shiftAmt bool) uint64 {
	v := zextW(a, width)
	if signed && sextW(a, width) < 0 {
		v = zextW(^a, width)
	}
	if v == 0 {
		return 0xffffffff
	}
	pos := uint64(63 - bits.LeadingZeros64(v))
	if shiftAmt {
		return uint64(width-1) - pos
	}
	return pos
}

// bfe extracts len bits at pos (both taken from the low 8 bits of their
// operands), sign-extending from the last extracted bit when signed.
func bfe(a, pos, ln uint64, width int, signed bool) uint64 {
	p, l := pos&0xff, ln&0xff
	msb := uint64(width - 1)
	var sbit uint64
	if signed && l != 0 {
		sbit = a >> min(p+l-1, msb) & 1
	}
	var d uint64
	for i := uint64(0); i <= msb; i++ {
		bit := sbit
		if i < l && p+i <= msb {
			bit = a >> (p + i) & 1
		}
		d |= bit << i
	}
	return d
}

// bfi inserts the low len bits of a into b at pos.
func bfi(a, b, pos, ln uint64, width int) uint64 {
	p, l := pos&0xff, ln&0xff
	msb := uint64(width - 1)
	d := b
	for i := uint64(0); i < l && p+i <= msb; i++ {
		d = d&^(1<<(p+i)) | (a>>i&1)<<(p+i)
	}
	return d
}

// prmt selects bytes of the 8-byte value {b, a} (a in the low four bytes) by
// the selector c, in the given mode.
func prmt(a, b, c uint64, mode string) uint64 {
	x := uint64(uint32(a)) | uint64(uint32(b))<<32
	sel := uint32(c)
	byteOf := func(i uint32) uint64 { return x >> (8 * (i & 7)) & 0xff }
	var d uint64
	switch mode {
	case "":
		for k := 0; k < 4; k++ {
			s := sel >> (4 * k) & 0xf
			v := byteOf(s & 7)
			if s&8 != 0 { // replicate the byte's sign bit
				if v&0x80 != 0 {
					v = 0xff
				} else {
					v = 0
				}
			}
			d |= v << (8 * k)
		}
		return d
	}
	n := sel & 3
	var idx [4]uint32
	switch mode {
	case ".f4e": // forward 4 extract
		idx = [4]uint32{n, n + 1, n + 2, n + 3}
	case ".b4e": // backward 4 extract
		idx = [4]uint32{n, (n + 7) & 7, (n + 6) & 7, (n + 5) & 7}
	case ".rc8": // replicate 8
		idx = [4]uint32{n, n, n, n}
	case ".ecl": // edge clamp left
		idx = [4]uint32{n, max(n, 1), max(n, 2), 3}
	case ".ecr": // edge clamp right
		idx = [4]uint32{0, min(n, 1), min(n, 2), n}
	case ".rc16": // replicate 16
		h := (n & 1) * 2
		idx = [4]uint32{h, h + 1, h, h + 1}
	}
	for k := 0; k < 4; k++ {
		d |= byteOf(idx[k]&7) << (8 * k)
	}
	return d
}

// lop3 applies the three-input truth table lut bitwise.
func lop3(a, b, c uint64, lut uint8) uint64 {
	var d uint64
	for i := 0; i < 8; i++ {
		if lut>>i&1 == 0 {
			continue
		}
		// Minterm i: bit 2 selects a, bit 1 b, bit 0 c (0xF0, 0xCC, 0xAA).
		ta, tb, tc := a, b, c
		if i&4 == 0 {
			ta = ^a
		}
		if i&2 == 0 {
			tb = ^b
		}
		if i&1 == 0 {
			tc = ^c
		}
		d |= ta & tb & tc
	}
	return uint64(uint32(d))
}

// shf is the funnel shift of the 64-bit value {b, a} by c.
func shf(a, b, c uint64, left, clamp bool) uint64 {
	n := uint32(c)
	if clamp {
		n = min(n, 32)
	} else {
		n &= 31
	}
	x := uint64(uint32(a)) | uint64(uint32(b))<<32
	if left {
		return uint64(uint32((x << n) >> 32))
	}
	return uint64(uint32(x >> n))
}

// dp4a: c + the dot product of the four bytes of a and b.
func dp4a(a, b, c uint64, sa, sb bool) uint64 {
	acc := int64(int32(c))
	for i := 0; i < 4; i++ {
		acc += byteVal(a, i, sa) * byteVal(b, i, sb)
	}
	return uint64(uint32(acc))
}

// dp2a: c + the dot product of the two halves of a with two bytes of b
// (the low pair for .lo, the high pair for .hi).
func dp2a(a, b, c uint64, sa, sb, hi bool) uint64 {
	acc := int64(int32(c))
	k := 0
	if hi {
		k = 2
	}
	for i := 0; i < 2; i++ {
		h := int64(uint16(a >> (16 * i)))
		if sa {
			h = int64(int16(a >> (16 * i)))
		}
		acc += h * byteVal(b, k+i, sb)
	}
	return uint64(uint32(acc))
}

func byteVal(v uint64, i int, signed bool) int64 {
	if signed {
		return int64(int8(v >> (8 * i)))
	}
	return int64(uint8(v >> (8 * i)))
}

// sad: c + |a − b|.
func sad(a, b, c uint64, width int, signed bool) uint64 {
	var d uint64
	if signed {
		x, y := sextW(a, width), sextW(b, width)
		if x > y {
			d = uint64(x - y)
		} else {
			d = uint64(y - x)
		}
	} else {
		x, y := zextW(a, width), zextW(b, width)
		if x > y {
			d = x - y
		} else {
			d = y - x
		}
	}
	return c + d
}

// mul24: the 48-bit product of the low 24 bits; lo returns bits 31..0, hi
// bits 47..16.
func mul24(a, b uint64, signed, hi bool) uint64 {
	var p int64
	if signed {
		p = sextW(a, 24) * sextW(b, 24)
	} else {
		p = int64(zextW(a, 24) * zextW(b, 24))
	}
	if hi {
		return uint64(uint32(uint64(p) >> 16))
	}
	return uint64(uint32(p))
}

// bmsk: a mask of b bits starting at bit a.
func bmsk(a, b uint64, clamp bool) uint64 {
	p, l := uint32(a), uint32(b)
	if clamp {
		p, l = min(p, 32), min(l, 32)
	} else {
		p, l = p&31, l&31
	}
	if p >= 32 {
		return 0
	}
	m := (uint64(1)<<l - 1) << p
	return uint64(uint32(m))
}

// szext sign- or zero-extends the low b bits of a (b clamped or wrapped).
func szext(a, b uint64, signed, clamp bool) uint64 {
	n := uint32(b)
	if clamp {
		n = min(n, 32)
	} else {
		n &= 31
	}
	if n == 0 {
		return 0
	}
	if n == 32 {
		return uint64(uint32(a))
	}
	if signed {
		return uint64(uint32(sextW(a, int(n))))
	}
	return zextW(a, int(n))
}

// Integer comparisons for setp/set/slct.

func cmpInt(op string, a, b uint64, width int, signed bool) bool {
	if signed {
		x, y := sextW(a, width), sextW(b, width)
		switch op {
		case "eq":
			return x == y
		case "ne":
			return x != y
		case "lt":
			return x < y
		case "le":
			return x <= y
		case "gt":
			return x > y
		case "ge":
			return x >= y
		}
		return false
	}
	x, y := zextW(a, width), zextW(b, width)
	switch op {
	case "eq":
		return x == y
	case "ne":
		return x != y
	case "lt", "lo":
		return x < y
	case "le", "ls":
		return x <= y
	case "gt", "hi":
		return x > y
	case "ge", "hs":
		return x >= y
	}
	return false
}
