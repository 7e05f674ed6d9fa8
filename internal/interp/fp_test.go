package interp

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/gpuos/gpuos/internal/ptx"
)

// The oracle: exact values in math/big, rounded to a binary format by big's own
// rounding at the precision the result's exponent leaves (subnormals included).

type format struct{ p, emin, emax int }

var (
	fmt32 = format{24, -126, 127}
	fmt64 = format{53, -1022, 1023}
)

func bigMode(m rounding) big.RoundingMode {
	switch m {
	case rz:
		return big.ToZero
	case rm:
		return big.ToNegativeInf
	case rp:
		return big.ToPositiveInf
	}
	return big.ToNearestEven
}

// oracleRound rounds a finite nonzero exact value.
func oracleRound(x *big.Float, f format, m rounding) float64 {
	neg := x.Sign() < 0
	e := x.MantExp(nil) - 1 // |x| = 1.f × 2^e
	prec := f.p
	if e < f.emin {
		prec = f.p - (f.emin - e)
	}
	minsub := math.Ldexp(1, f.emin-f.p+1)
	var v float64
	if prec <= 0 {
		ax := new(big.Float).Abs(x)
		half := new(big.Float).SetMantExp(big.NewFloat(1), f.emin-f.p)
		switch {
		case m == rn:
			if ax.Cmp(half) > 0 {
				v = minsub
			}
		case m == rp && !neg, m == rm && neg:
			v = minsub
		}
		if neg {
			v = -v
		}
		if v == 0 && neg {
			v = math.Copysign(0, -1)
		}
		return v
	}
	z := new(big.Float).SetMode(bigMode(m)).SetPrec(uint(prec)).Set(x)
	v, _ = z.Float64()
	maxf := math.Ldexp(2-math.Ldexp(1, 1-f.p), f.emax)
	if math.Abs(v) > maxf {
		if m == rn || m == rp && !neg || m == rm && neg {
			v = math.Inf(1)
		} else {
			v = maxf
		}
		if neg {
			v = -v
		}
	}
	return v
}

// oracle computes op exactly and rounds; ok is false when the inputs are not
// finite (the caller compares against host IEEE arithmetic then).
func oracle(op string, a, b, c float64, f format, m rounding) (float64, bool) {
	for _, x := range []float64{a, b, c} {
		if !finite64(x) {
			return 0, false
		}
	}
	const prec = 4000
	A, B, C := bigf(a), bigf(b), bigf(c)
	x := new(big.Float).SetPrec(prec)
	var sa, sb bool // addend signs for an exact zero sum
	switch op {
	case "add":
		x.Add(A, B)
		sa, sb = math.Signbit(a), math.Signbit(b)
	case "mul":
		x.Mul(A, B)
		if x.Sign() == 0 {
			return math.Copysign(0, a) * math.Copysign(1, b), true
		}
	case "fma":
		p := new(big.Float).SetPrec(prec).Mul(A, B)
		x.Add(p, C)
		sa, sb = math.Signbit(a) != math.Signbit(b), math.Signbit(c)
	case "div":
		if b == 0 || a == 0 {
			return 0, false
		}
		// 300 bits: a quotient of 53-bit numbers that is not a midpoint lies
		// farther than 2^-300 (relative) from one, so rounding twice is exact.
		x.SetPrec(300).Quo(A, B)
	case "sqrt":
		if a <= 0 {
			return 0, false
		}
		return sqrtOracle(a, f, m), true
	}
	if x.Sign() == 0 {
		if sa == sb {
			return math.Copysign(0, map[bool]float64{true: -1, false: 1}[sa]), true
		}
		if m == rm {
			return math.Copysign(0, -1), true
		}
		return 0, true
	}
	return oracleRound(x, f, m), true
}

func nextAway(x float64, f format, neg bool) float64 {
	var y float64
	if f.p == 24 {
		if neg {
			y = float64(math.Nextafter32(float32(x), float32(math.Inf(-1))))
		} else {
			y = float64(math.Nextafter32(float32(x), float32(math.Inf(1))))
		}
	} else if neg {
		y = math.Nextafter(x, math.Inf(-1))
	} else {
		y = math.Nextafter(x, math.Inf(1))
	}
	return y
}

func evenMant(x float64, f format) bool {
	if f.p == 24 {
		return math.Float32bits(float32(x))&1 == 0
	}
	return math.Float64bits(x)&1 == 0
}

func sqrtOracle(a float64, f format, m rounding) float64 {
	// Find the largest r in the format with r² ≤ a, by bisection on the candidate
	// from big's square root, then decide the mode exactly.
	s := new(big.Float).SetPrec(400).Sqrt(bigf(a))
	lo := oracleRound(s, f, rz)
	sq := func(r float64) int { // sign(a − r²)
		rr := new(big.Float).SetPrec(300).Mul(bigf(r), bigf(r))
		return bigf(a).Cmp(rr)
	}
	for sq(lo) < 0 {
		lo = nextAway(lo, f, true)
	}
	for {
		n := nextAway(lo, f, false)
		if sq(n) >= 0 {
			lo = n
			continue
		}
		break
	}
	if sq(lo) == 0 {
		return lo
	}
	hi := nextAway(lo, f, false)
	switch m {
	case rz, rm:
		return lo
	case rp:
		return hi
	}
	mid := new(big.Float).SetPrec(300).Add(bigf(lo), bigf(hi))
	mid.Quo(mid, big.NewFloat(2))
	mm := new(big.Float).SetPrec(600).Mul(mid, mid)
	switch bigf(a).Cmp(mm) {
	case -1:
		return lo
	case 1:
		return hi
	}
	if evenMant(lo, f) {
		return lo
	}
	return hi
}

// Random operands that hit the hard cases: random bit patterns, subnormals,
// values near each other (cancellation), powers of two, extremes.
func rand32(r *rand.Rand) float32 {
	switch r.IntN(8) {
	case 0:
		return math.Float32frombits(r.Uint32() & 0x807fffff) // subnormal
	case 1:
		return float32(math.Ldexp(1, r.IntN(280)-150)) * float32(1-2*r.IntN(2))
	case 2:
		return math.Float32frombits(r.Uint32()&0x80000000 | uint32(0x7f7fffff-r.IntN(4)))
	case 3:
		return float32(r.NormFloat64())
	}
	for {
		f := math.Float32frombits(r.Uint32())
		if finite32(f) {
			return f
		}
	}
}

func rand64(r *rand.Rand) float64 {
	switch r.IntN(8) {
	case 0:
		return math.Float64frombits(r.Uint64() & 0x800fffffffffffff)
	case 1:
		return math.Ldexp(1, r.IntN(2100)-1075) * float64(1-2*r.IntN(2))
	case 2:
		return math.Float64frombits(r.Uint64()&(1<<63) | uint64(0x7fefffffffffffff-r.IntN(4)))
	case 3:
		return r.NormFloat64()
	}
	for {
		f := math.Float64frombits(r.Uint64())
		if finite64(f) {
			return f
		}
	}
}

func same(a, b float64) bool {
	if a != a && b != b {
		return true
	}
	return math.Float64bits(a) == math.Float64bits(b)
}

var modes = []rounding{rn, rz, rm, rp}

func TestFloat32AgainstBig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 30000
	if testing.Short() {
		n = 3000
	}
	for i := 0; i < n; i++ {
		a, b, c := rand32(r), rand32(r), rand32(r)
		if i%5 == 0 { // cancellation
			b = -a * float32(1+float64(r.IntN(7)-3)*0x1p-23)
			c = -a * b
		}
		for _, m := range modes {
			check := func(op string, got float32) {
				want, ok := oracle(op, float64(a), float64(b), float64(c), fmt32, m)
				if !ok {
					return
				}
				if !same(float64(got), want) {
					t.Fatalf("%s %v(%x, %x, %x) mode %d = %x, want %x", op, op, math.Float32bits(a), math.Float32bits(b), math.Float32bits(c), m, math.Float32bits(got), math.Float32bits(float32(want)))
				}
			}
			check("add", add32(a, b, m))
			check("mul", mul32(a, b, m))
			check("fma", fma32(a, b, c, m))
			check("div", div32(a, b, m))
			check("sqrt", sqrt32(float32(math.Abs(float64(a))), m))
		}
	}
}

func TestFloat64AgainstBig(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := 0; i < n; i++ {
		a, b, c := rand64(r), rand64(r), rand64(r)
		if i%5 == 0 {
			b = -a * (1 + float64(r.IntN(7)-3)*0x1p-52)
			c = -a * b
		}
		for _, m := range modes {
			check := func(op string, x, y, z float64, got float64) {
				want, ok := oracle(op, x, y, z, fmt64, m)
				if !ok {
					return
				}
				if !same(got, want) {
					t.Fatalf("%s(%x, %x, %x) mode %d = %x, want %x", op, math.Float64bits(x), math.Float64bits(y), math.Float64bits(z), m, math.Float64bits(got), math.Float64bits(want))
				}
			}
			check("add", a, b, 0, add64(a, b, m))
			check("mul", a, b, 0, mul64(a, b, m))
			check("fma", a, b, c, fma64(a, b, c, m))
			check("div", a, b, 0, div64(a, b, m))
			sa := math.Abs(a)
			check("sqrt", sa, 0, 0, sqrt64(sa, m))
		}
	}
}

func TestFloat32ExactZeroSigns(t *testing.T) {
	tests := []struct {
		a, b float32
		m    rounding
		neg  bool
	}{
		{1, -1, rn, false},
		{1, -1, rm, true},
		{1, -1, rz, false},
		{1, -1, rp, false},
		{0, float32(math.Copysign(0, -1)), rm, true},
		{0, 0, rm, false},
		{float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1)), rp, true},
	}
	for _, tt := range tests {
		got := add32(tt.a, tt.b, tt.m)
		if got != 0 || math.Signbit(float64(got)) != tt.neg {
			t.Errorf("add32(%v, %v, %d) = %v (neg %v), want zero neg %v", tt.a, tt.b, tt.m, got, math.Signbit(float64(got)), tt.neg)
		}
	}
}

func TestIntToFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 20000; i++ {
		v := r.Uint64() >> r.IntN(64)
		neg := r.IntN(2) == 0
		for _, m := range modes {
			for _, f := range []format{fmt32, fmt64} {
				got := intToFloat(v, neg, f.p, m)
				x := new(big.Float).SetUint64(v)
				if neg {
					x.Neg(x)
				}
				want := 0.0
				if v != 0 {
					want = oracleRound(x, f, m)
				}
				if got != want {
					t.Fatalf("intToFloat(%d, neg %v, p %d, mode %d) = %v, want %v", v, neg, f.p, m, got, want)
				}
			}
		}
	}
}

func TestRoundFmtAgainstBig(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	f16 := format{11, -14, 15}
	for i := 0; i < 20000; i++ {
		x := rand64(r)
		if i%2 == 0 {
			x = math.Ldexp(r.Float64(), r.IntN(50)-30)
		}
		for _, m := range modes {
			for _, f := range []format{fmt32, f16} {
				if x == 0 {
					continue
				}
				got := roundFmt(x, f.p, f.emin, f.emax, m)
				want := oracleRound(bigf(x), f, m)
				if !same(got, want) {
					t.Fatalf("roundFmt(%v, %+v, %d) = %v, want %v", x, f, m, got, want)
				}
			}
			if got, want := float64(f64to32(x, m)), oracleRound(bigf(x), fmt32, m); x != 0 && !same(got, want) {
				t.Fatalf("f64to32(%v, %d) = %v, want %v", x, m, got, want)
			}
		}
	}
}

func TestHalfEncoding(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		v := f16val(uint16(h))
		if v != v {
			continue
		}
		if got := f16bits(v); got != uint16(h) {
			t.Fatalf("f16bits(f16val(%#x)) = %#x", h, got)
		}
		if got := toF16(v, rn); got != uint16(h) {
			t.Fatalf("toF16(f16val(%#x)) = %#x", h, got)
		}
	}
	if got := toF16(65520, rn); got != 0x7c00 { // halfway to 2^16 rounds to inf
		t.Errorf("toF16(65520) = %#x, want 0x7c00", got)
	}
	if got := toF16(65520, rz); got != 0x7bff {
		t.Errorf("toF16(65520, rz) = %#x, want 0x7bff", got)
	}
	if got := toBF16(1.00390625, rn); got != 0x3f80 { // tie to even
		t.Errorf("toBF16(1+2^-8) = %#x, want 0x3f80", got)
	}
}

func TestFloatToIntSaturates(t *testing.T) {
	tests := []struct {
		x      float64
		m      rounding
		bits   int
		signed bool
		want   uint64
	}{
		{math.NaN(), rn, 32, true, 0},
		{1e20, rz, 32, true, 0x7fffffff},
		{-1e20, rz, 32, true, 0xffffffff80000000},
		{-1, rz, 32, false, 0},
		{4294967296, rz, 32, false, 0xffffffff},
		{2.5, rn, 32, true, 2},
		{-2.5, rm, 64, true, math.MaxUint64 - 2},
		{2.1, rp, 16, false, 3},
		{1e30, rn, 64, false, math.MaxUint64},
		{9.3e18, rn, 64, true, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := floatToInt(tt.x, tt.m, tt.bits, tt.signed); got != tt.want {
			t.Errorf("floatToInt(%v, %d, %d, %v) = %#x, want %#x", tt.x, tt.m, tt.bits, tt.signed, got, tt.want)
		}
	}
}

// Half-precision arithmetic against the math/big oracle, every packing.
func TestHalfAgainstBig(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, bf := range []bool{false, true} {
		h := halfFmt{bf: bf}
		f := format{11, -14, 15}
		tp, tp2 := ptx.TypeF16, ptx.TypeF16x2
		if bf {
			f, tp, tp2 = format{8, -126, 127}, ptx.TypeBF16, ptx.TypeBF16x2
		}
		randHalf := func() uint64 {
			for {
				v := uint64(r.Uint32() & 0xffff)
				if x := h.decode(v); finite64(x) {
					return v
				}
			}
		}
		ops := map[string]func(a, b, c float64) float64{
			"add": func(a, b, _ float64) float64 { return sumOdd(a, b) },
			"mul": func(a, b, _ float64) float64 { return a * b },
			"fma": func(a, b, c float64) float64 { return sumOdd(a*b, c) },
		}
		for name, op := range ops {
			fn, fn2 := halfOp(tp, op, false, false, false), halfOp(tp2, op, false, false, false)
			for i := 0; i < 20000; i++ {
				a, b, c := randHalf(), randHalf(), randHalf()
				in := inst{d: 0, a: 1, b: 2, c: 3}
				regs := []uint64{0, a, b, c}
				fn(regs, &in)
				got := regs[0]
				x, y, z := h.decode(a), h.decode(b), h.decode(c)
				oname := name
				if name == "add" { // x + y is fma(x, 1, y)
					y, z = 1, h.decode(b)
					oname = "fma"
				}
				want, ok := oracle(oname, x, y, z, f, rn)
				if !ok {
					continue
				}
				wbits := h.encode(want)
				if want == 0 {
					wbits = 0
					if math.Signbit(want) {
						wbits = 0x8000
					}
				}
				if got != wbits {
					t.Fatalf("bf16=%v %s(%#x, %#x, %#x) = %#x, want %#x (%v)", bf, name, a, b, c, got, wbits, want)
				}
				// The packed form computes both halves the same way.
				regs = []uint64{0, a | b<<16, b | c<<16, c | a<<16}
				fn2(regs, &in)
				if regs[0]&0xffff != got {
					t.Fatalf("bf16=%v %s x2 low half = %#x, want %#x", bf, name, regs[0]&0xffff, got)
				}
			}
		}
	}
}
