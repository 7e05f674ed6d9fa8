package interp

import (
	"math"
)

type aluFn = func(r []uint64, in *inst)

// Round-to-nearest forms without .ftz/.sat: the commonest float instructions.

func addF32(r []uint64, in *inst) { r[in.d] = canon32(f32(r[in.a]) + f32(r[in.b])) }
func subF32(r []uint64, in *inst) { r[in.d] = canon32(f32(r[in.a]) - f32(r[in.b])) }
func mulF32(r []uint64, in *inst) { r[in.d] = canon32(f32(r[in.a]) * f32(r[in.b])) }
func fmaF32(r []uint64, in *inst) {
	a, b, c := f32(r[in.a]), f32(r[in.b]), f32(r[in.c])
	// The fast path of fma32: the exact product plus c rounded once to
	// float64 rounds correctly to float32 unless it sits on a midpoint.
	s := float64(a)*float64(b) + float64(c)
	if bits := math.Float64bits(s); bits&0x1fffffff != 0x10000000 && bits&0x7ff0000000000000 >= 0x3810000000000000 && bits&0x7ff0000000000000 != 0x7ff0000000000000 {
		r[in.d] = uint64(math.Float32bits(float32(s)))
		return
	}
	r[in.d] = canon32(fma32(a, b, c, rn))
}
func addF64(r []uint64, in *inst) { r[in.d] = canon64(f64(r[in.a]) + f64(r[in.b])) }
func subF64(r []uint64, in *inst) { r[in.d] = canon64(f64(r[in.a]) - f64(r[in.b])) }
func mulF64(r []uint64, in *inst) { r[in.d] = canon64(f64(r[in.a]) * f64(r[in.b])) }
func fmaF64(r []uint64, in *inst) {
	r[in.d] = canon64(math.FMA(f64(r[in.a]), f64(r[in.b]), f64(r[in.c])))
}

// sat32 clamps to [0, 1]; NaN becomes +0.
func sat32(x float32) float32 {
	switch {
	case !(x > 0):
		return 0
	case x > 1:
		return 1
	}
	return x
}

func sat64(x float64) float64 {
	switch {
	case !(x > 0):
		return 0
	case x > 1:
		return 1
	}
	return x
}

// f32 wraps a single-precision operation of up to three operands with the
// .ftz (flush subnormal inputs and result) and .sat modifiers.
func f32op(n int, op func(a, b, c float32) float32, ftz, sat bool) aluFn {
	return func(r []uint64, in *inst) {
		a, b, c := f32(r[in.a]), f32(r[in.b]), f32(r[in.c])
		if ftz {
			a, b, c = ftz32(a), ftz32(b), ftz32(c)
		}
		d := op(a, b, c)
		if ftz {
			d = ftz32(d)
		}
		if sat {
			d = sat32(d)
		}
		r[in.d] = canon32(d)
	}
}

func f64op(op func(a, b, c float64) float64, sat bool) aluFn {
	return func(r []uint64, in *inst) {
		d := op(f64(r[in.a]), f64(r[in.b]), f64(r[in.c]))
		if sat {
			d = sat64(d)
		}
		r[in.d] = canon64(d)
	}
}

// min and max: a NaN operand is ignored unless both are NaN (or .NaN asks
// for propagation); −0 orders below +0.
func fmin(a, b float64, propagate bool) float64 {
	if a != a || b != b {
		if propagate || a != a && b != b {
			return math.NaN()
		}
		if a != a {
			return b
		}
		return a
	}
	if a == b {
		if math.Signbit(a) {
			return a
		}
		return b
	}
	return math.Min(a, b)
}

func fmax(a, b float64, propagate bool) float64 {
	if a != a || b != b {
		if propagate || a != a && b != b {
			return math.NaN()
		}
		if a != a {
			return b
		}
		return a
	}
	if a == b {
		if math.Signbit(a) {
			return b
		}
		return a
	}
	return math.Max(a, b)
}

// Approximate single-precision functions. Each is computed in double
// precision and rounded once, so its error is at most 0.5 ulp plus the double
// computation's (far below 2^-40 relative), well inside every bound PTX states
// for the .approx forms.

func rcpApprox32(a float32) float32 { return 1 / a }

func sqrtApprox32(a float32) float32 { return sqrt32(a, rn) }

func rsqrtApprox32(a float32) float32 { return float32(1 / math.Sqrt(float64(a))) }

func ex2Approx32(a float32) float32 { return float32(math.Exp2(float64(a))) }

func lg2Approx32(a float32) float32 { return float32(math.Log2(float64(a))) }

func sinApprox32(a float32) float32 { return float32(math.Sin(float64(a))) }

func cosApprox32(a float32) float32 { return float32(math.Cos(float64(a))) }

func tanhApprox32(a float32) float32 { return float32(math.Tanh(float64(a))) }

// divApprox32 is a·(1/b): for 2^126 < |b| < 2^128 the reciprocal underflows
// and the result is 0 (NaN for an infinite a), as PTX specifies.
func divApprox32(a, b float32) float32 {
	if ab := math.Abs(float64(b)); ab > 0x1p126 && ab < math.Inf(1) {
		return a * 0
	}
	return a / b
}

// cmpFloat implements the setp/set comparisons on floats.
func cmpFloat(op string, a, b float64) bool {
	nan := a != a || b != b
	switch op {
	case "eq":
		return a == b
	case "ne":
		return a != b && !nan
	case "lt":
		return a < b
	case "le":
		return a <= b
	case "gt":
		return a > b
	case "ge":
		return a >= b
	case "equ":
		return nan || a == b
	case "neu":
		return a != b
	case "ltu":
		return nan || a < b
	case "leu":
		return nan || a <= b
	case "gtu":
		return nan || a > b
	case "geu":
		return nan || a >= b
	case "num":
		return !nan
	case "nan":
		return nan
	}
	return false
}

// testp classifies a float.
func testp(op string, x float64, single bool) bool {
	nan := x != x
	inf := math.IsInf(x, 0)
	ax := math.Abs(x)
	minNormal := 0x1p-1022
	if single {
		minNormal = 0x1p-126
	}
	switch op {
	case ".finite":
		return !nan && !inf
	case ".infinite":
		return inf
	case ".number":
		return !nan
	case ".notanumber":
		return nan
	case ".normal":
		return !nan && !inf && ax >= minNormal
	case ".subnormal":
		return ax != 0 && ax < minNormal
	}
	return false
}
