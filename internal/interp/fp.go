package interp

import (
	"math"
	"math/big"
	"math/bits"
)

// Exact IEEE-754 arithmetic in every PTX rounding mode.
//
// Every exactly rounded operation is computed the same way: the round-to-nearest
// result r comes from the host's own IEEE arithmetic (Go's float32/float64
// operations, math.FMA and math.Sqrt are correctly rounded), and the sign of the
// residual (exact value − r) decides whether a directed mode must step r by one
// unit in the last place. The residual's sign is found with error-free
// transformations (TwoSum, FMA) where they are exact and with math/big where they
// might not be (underflow); the tests check every path against math/big.

// rounding is a PTX floating-point rounding mode.
type rounding uint8

const (
	rn rounding = iota // to nearest, ties to even
	rz                 // toward zero
	rm                 // toward −∞
	rp                 // toward +∞
)

// Canonical NaNs: what the GPU returns for an arithmetic NaN result.
const (
	canonNaN32 = 0x7fffffff
	canonNaN64 = 0x7fffffffffffffff
)

func canon32(f float32) uint64 {
	if f != f {
		return canonNaN32
	}
	return uint64(math.Float32bits(f))
}

func canon64(f float64) uint64 {
	if f != f {
		return canonNaN64
	}
	return math.Float64bits(f)
}

func f32(v uint64) float32 { return math.Float32frombits(uint32(v)) }
func f64(v uint64) float64 { return math.Float64frombits(v) }

// ftz32 flushes a subnormal to a zero of the same sign.
func ftz32(x float32) float32 {
	b := math.Float32bits(x)
	if b&0x7f800000 == 0 {
		return math.Float32frombits(b & 0x80000000)
	}
	return x
}

// sign returns the sign of x as -1, 0 or 1.
func sign(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func next32(x float32, up bool) float32 {
	if up {
		return math.Nextafter32(x, float32(math.Inf(1)))
	}
	return math.Nextafter32(x, float32(math.Inf(-1)))
}

func next64(x float64, up bool) float64 {
	if up {
		return math.Nextafter(x, math.Inf(1))
	}
	return math.Nextafter(x, math.Inf(-1))
}

// adjust32 turns r, the round-to-nearest result for an exact value x with
// sign(x − r) = res, into the result of mode m.
func adjust32(r float32, res int, m rounding) float32 {
	switch {
	case res == 0 || m == rn:
		return r
	case m == rm && res < 0, m == rp && res > 0:
		return next32(r, res > 0)
	case m == rz && res < 0 && r > 0, m == rz && res > 0 && r < 0:
		return next32(r, res > 0)
	}
	return r
}

func adjust64(r float64, res int, m rounding) float64 {
	switch {
	case res == 0 || m == rn:
		return r
	case m == rm && res < 0, m == rp && res > 0:
		return next64(r, res > 0)
	case m == rz && res < 0 && r > 0, m == rz && res > 0 && r < 0:
		return next64(r, res > 0)
	}
	return r
}

// twoSum returns s = fl(a+b) and e with s+e = a+b exactly (no overflow).
func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	return
}

// residual compares the exact value s+e (|e| ≤ ulp(s)/2) with r.
func residual(s, e, r float64) int {
	if s != r {
		if s > r {
			return 1
		}
		return -1
	}
	return sign(e)
}

// exactZero returns the signed zero IEEE-754 gives an exact zero sum of two
// addends with sign bits sa and sb in mode m.
func exactZero(sa, sb bool, m rounding) float64 {
	if sa == sb {
		if sa {
			return math.Copysign(0, -1)
		}
		return 0
	}
	if m == rm {
		return math.Copysign(0, -1)
	}
	return 0
}

func finite32(x float32) bool { return math.Float32bits(x)&0x7f800000 != 0x7f800000 }
func finite64(x float64) bool { return math.Float64bits(x)&0x7ff0000000000000 != 0x7ff0000000000000 }

// --- single precision ---

func add32(a, b float32, m rounding) float32 {
	r := a + b
	if m == rn || !finite32(a) || !finite32(b) {
		return r
	}
	s, e := twoSum(float64(a), float64(b))
	res := residual(s, e, float64(r))
	if res == 0 && r == 0 {
		return float32(exactZero(math.Signbit(float64(a)), math.Signbit(float64(b)), m))
	}
	return adjust32(r, res, m)
}

func mul32(a, b float32, m rounding) float32 {
	r := a * b
	if m == rn || !finite32(a) || !finite32(b) {
		return r
	}
	p := float64(a) * float64(b) // exact: 48 significant bits
	return adjust32(r, sign(p-float64(r)), m)
}

// fma32 is a*b+c with one rounding.
func fma32(a, b, c float32, m rounding) float32 {
	p := float64(a) * float64(b) // exact
	s := p + float64(c)
	if m == rn && finite64(s) {
		// s is the exact sum rounded once; rounding it again to float32 is
		// wrong only when s lies exactly on a float32 midpoint (or in the
		// subnormal range, where the midpoints sit elsewhere).
		if bits := math.Float64bits(s); bits&0x1fffffff != 0x10000000 && math.Abs(s) >= 0x1p-126 {
			return float32(s)
		}
	}
	if !finite32(a) || !finite32(b) || !finite32(c) {
		return float32(math.FMA(float64(a), float64(b), float64(c)))
	}
	s, e := twoSum(p, float64(c))
	// Round to odd in float64 (53 ≥ 24+2 bits), then once to float32.
	odd := s
	if e != 0 {
		if (e > 0) != (s > 0) { // s is above |exact|: truncate toward zero
			odd = next64(s, s < 0)
		}
		odd = math.Float64frombits(math.Float64bits(odd) | 1)
	}
	r := float32(odd)
	if m == rn {
		return r
	}
	res := residual(s, e, float64(r))
	if res == 0 && r == 0 {
		return float32(exactZero(math.Signbit(p), math.Signbit(float64(c)), m))
	}
	return adjust32(r, res, m)
}

func div32(a, b float32, m rounding) float32 {
	r := a / b
	if m == rn || !finite32(a) || !finite32(b) || a == 0 || b == 0 || r != r {
		return r
	}
	if math.IsInf(float64(r), 0) { // overflow: the exact quotient is finite
		return adjust32(r, -sign(float64(r)), m)
	}
	// sign(a/b − r) = sign(a − r·b)·sign(b); r·b is exact in float64.
	res := sign(float64(a) - float64(r)*float64(b))
	if b < 0 {
		res = -res
	}
	return adjust32(r, res, m)
}

func sqrt32(a float32, m rounding) float32 {
	// Rounding the float64 root again is innocuous: 53 ≥ 2·24+2.
	r := float32(math.Sqrt(float64(a)))
	if m == rn || !(a > 0) || math.IsInf(float64(a), 1) {
		return r
	}
	return adjust32(r, sign(float64(a)-float64(r)*float64(r)), m)
}

// --- double precision ---

func add64(a, b float64, m rounding) float64 {
	s := a + b
	if m == rn || !finite64(a) || !finite64(b) {
		return s
	}
	if math.IsInf(s, 0) {
		return adjust64(s, -sign(s), m)
	}
	_, e := twoSum(a, b)
	if s == 0 && e == 0 {
		return exactZero(math.Signbit(a), math.Signbit(b), m)
	}
	return adjust64(s, sign(e), m)
}

func mul64(a, b float64, m rounding) float64 {
	p := a * b
	if m == rn || !finite64(a) || !finite64(b) || a == 0 || b == 0 {
		return p
	}
	if math.IsInf(p, 0) {
		return adjust64(p, -sign(p), m)
	}
	if math.Abs(p) >= 0x1p-960 {
		return adjust64(p, sign(math.FMA(a, b, -p)), m)
	}
	x := new(big.Float).SetPrec(106).Mul(bigf(a), bigf(b))
	return adjust64(p, x.Cmp(bigf(p)), m)
}

func fma64(a, b, c float64, m rounding) float64 {
	r := math.FMA(a, b, c)
	if m == rn || !finite64(a) || !finite64(b) || !finite64(c) {
		return r
	}
	x := new(big.Float).SetPrec(106).Mul(bigf(a), bigf(b))
	prodNeg := math.Signbit(a) != math.Signbit(b)
	x = new(big.Float).SetPrec(3400).Add(x, bigf(c)) // 3400 bits span any two float64 exponents
	if x.Sign() == 0 {
		return exactZero(prodNeg, math.Signbit(c), m)
	}
	return adjust64(r, x.Cmp(bigf(r)), m)
}

func div64(a, b float64, m rounding) float64 {
	r := a / b
	if m == rn || !finite64(a) || !finite64(b) || a == 0 || b == 0 || r != r {
		return r
	}
	var res int
	switch {
	case math.IsInf(r, 0):
		res = -sign(r)
		return adjust64(r, res, m)
	case math.Abs(a) >= 0x1p-960 && math.Abs(r) >= 0x1p-1000:
		res = sign(math.FMA(-r, b, a)) // exact remainder
	default:
		rb := new(big.Float).SetPrec(106).Mul(bigf(r), bigf(b))
		res = bigf(a).Cmp(rb)
	}
	if b < 0 {
		res = -res
	}
	return adjust64(r, res, m)
}

func sqrt64(a float64, m rounding) float64 {
	r := math.Sqrt(a)
	if m == rn || !(a > 0) || math.IsInf(a, 1) {
		return r
	}
	var res int
	if a >= 0x1p-960 {
		res = sign(math.FMA(-r, r, a))
	} else {
		rr := new(big.Float).SetPrec(106).Mul(bigf(r), bigf(r))
		res = bigf(a).Cmp(rr)
	}
	return adjust64(r, res, m)
}

func bigf(x float64) *big.Float { return new(big.Float).SetFloat64(x) }

// --- conversions ---

// f64to32 rounds a double to single precision in mode m.
func f64to32(x float64, m rounding) float32 {
	r := float32(x)
	if m == rn || !finite64(x) {
		return r
	}
	return adjust32(r, sign(x-float64(r)), m)
}

// intToFloat rounds the integer (−1)^neg·mag to a float with p significand
// bits (24 or 53) in mode m and returns it as a float64 (exact for p ≤ 53).
func intToFloat(mag uint64, neg bool, p int, m rounding) float64 {
	if mag == 0 {
		return 0
	}
	n := bits.Len64(mag)
	shift := 0
	if n > p {
		shift = n - p
		q := mag >> shift
		rem := mag & (1<<shift - 1)
		half := uint64(1) << (shift - 1)
		up := false
		switch m {
		case rn:
			up = rem > half || rem == half && q&1 == 1
		case rm:
			up = neg && rem != 0
		case rp:
			up = !neg && rem != 0
		}
		if up {
			q++
		}
		mag = q
	}
	v := math.Ldexp(float64(mag), shift)
	if neg {
		v = -v
	}
	return v
}

// roundInt rounds a float64 to an integral value in mode m (cvt .rni/.rzi/.rmi/.rpi).
func roundInt(x float64, m rounding) float64 {
	switch m {
	case rz:
		return math.Trunc(x)
	case rm:
		return math.Floor(x)
	case rp:
		return math.Ceil(x)
	}
	return math.RoundToEven(x)
}

// floatToInt converts x (already integral, or rounded here in mode m) to an
// integer of the given width and signedness, saturating; NaN becomes 0.
func floatToInt(x float64, m rounding, bitsN int, signed bool) uint64 {
	if x != x {
		return 0
	}
	x = roundInt(x, m)
	if signed {
		lo := -math.Ldexp(1, bitsN-1)
		hi := math.Ldexp(1, bitsN-1)
		switch {
		case x < lo:
			return uint64(int64(-1) << (bitsN - 1))
		case x >= hi:
			return uint64(1)<<(bitsN-1) - 1
		}
		return uint64(int64(x))
	}
	hi := math.Ldexp(1, bitsN)
	switch {
	case x <= 0:
		return 0
	case x >= hi:
		if bitsN == 64 {
			return math.MaxUint64
		}
		return 1<<bitsN - 1
	}
	return uint64(x)
}

// roundFmt rounds a float64 to a narrower binary format with p significand
// bits, minimum normal exponent emin and maximum exponent emax, in mode m; the
// result is returned as a float64 (exactly representable in the format).
func roundFmt(x float64, p, emin, emax int, m rounding) float64 {
	if x == 0 || !finite64(x) {
		return x
	}
	neg := x < 0
	ax := math.Abs(x)
	_, e := math.Frexp(ax)
	e-- // ax = 1.f × 2^e
	qe := e - p + 1
	if e < emin {
		qe = emin - p + 1
	}
	n := math.Ldexp(ax, -qe)
	var k float64
	switch {
	case m == rn:
		k = math.RoundToEven(n)
	case m == rz, m == rm && !neg, m == rp && neg:
		k = math.Floor(n)
	default:
		k = math.Ceil(n)
	}
	v := math.Ldexp(k, qe)
	maxf := math.Ldexp(2-math.Ldexp(1, 1-p), emax)
	if v > maxf {
		if m == rn || m == rp && !neg || m == rm && neg {
			v = math.Inf(1)
		} else {
			v = maxf
		}
	}
	if neg {
		v = -v
	}
	return v
}

// Half precision (binary16) and bfloat16 encodings.

func f16bits(v float64) uint16 {
	sgn := uint16(0)
	if math.Signbit(v) {
		sgn = 0x8000
	}
	a := math.Abs(v)
	switch {
	case a != a:
		return 0x7fff
	case math.IsInf(a, 0):
		return sgn | 0x7c00
	case a == 0:
		return sgn
	}
	_, e := math.Frexp(a)
	e--
	if e < -14 { // subnormal: units of 2^-24
		return sgn | uint16(math.Ldexp(a, 24))
	}
	mant := uint16(math.Ldexp(a, -e+10)) & 0x3ff
	return sgn | uint16(e+15)<<10 | mant
}

func f16val(h uint16) float64 {
	sgn := 1.0
	if h&0x8000 != 0 {
		sgn = -1
	}
	e := int(h >> 10 & 0x1f)
	mant := float64(h & 0x3ff)
	switch e {
	case 0:
		return sgn * math.Ldexp(mant, -24)
	case 0x1f:
		if mant != 0 {
			return math.NaN()
		}
		return sgn * math.Inf(1)
	}
	return sgn * math.Ldexp(1024+mant, e-25)
}

// toF16 rounds x to binary16 in mode m.
func toF16(x float64, m rounding) uint16 {
	if x != x {
		return 0x7fff
	}
	return f16bits(roundFmt(x, 11, -14, 15, m))
}

// toBF16 rounds x to bfloat16 in mode m.
func toBF16(x float64, m rounding) uint16 {
	if x != x {
		return 0x7fff
	}
	v := float32(roundFmt(x, 8, -126, 127, m))
	return uint16(math.Float32bits(v) >> 16)
}

func bf16val(h uint16) float64 {
	return float64(math.Float32frombits(uint32(h) << 16))
}
