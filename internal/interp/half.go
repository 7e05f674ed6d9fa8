package interp

import (
	"math"

	"github.com/gpuos/gpuos/internal/ptx"
)

// Half-precision arithmetic: .f16 and .bf16 scalars and their packed .f16x2
// and .bf16x2 pairs (the low half is element 0). Operands are widened exactly
// to float64; sums are formed with TwoSum and rounded to odd, which keeps
// enough bits (53 ≥ 11+2) for the single rounding to the narrow format that
// follows to be exact in round-to-nearest, the only mode PTX offers for them.

type halfFmt struct {
	bf bool // bfloat16 rather than binary16
}

func (h halfFmt) decode(v uint64) float64 {
	if h.bf {
		return bf16val(uint16(v))
	}
	return f16val(uint16(v))
}

func (h halfFmt) encode(x float64) uint64 {
	if h.bf {
		return uint64(toBF16(x, rn))
	}
	return uint64(toF16(x, rn))
}

// flush replaces a subnormal of the format with a zero of the same sign.
func (h halfFmt) flush(x float64) float64 {
	min := 0x1p-14
	if h.bf {
		min = 0x1p-126
	}
	if x != 0 && math.Abs(x) < min {
		return math.Copysign(0, x)
	}
	return x
}

// sumOdd returns x+y rounded to float64 by round-to-odd.
func sumOdd(x, y float64) float64 {
	s, e := twoSum(x, y)
	if e == 0 || !finite64(s) {
		return s
	}
	if (e > 0) != (s > 0) {
		s = next64(s, s < 0)
	}
	return math.Float64frombits(math.Float64bits(s) | 1)
}

func isHalf(t ptx.Type) bool {
	switch t {
	case ptx.TypeF16, ptx.TypeBF16, ptx.TypeF16x2, ptx.TypeBF16x2:
		return true
	}
	return false
}

// halfLanes returns the format and the number of packed elements of t.
func halfLanes(t ptx.Type) (halfFmt, int) {
	switch t {
	case ptx.TypeBF16:
		return halfFmt{bf: true}, 1
	case ptx.TypeF16x2:
		return halfFmt{}, 2
	case ptx.TypeBF16x2:
		return halfFmt{bf: true}, 2
	}
	return halfFmt{}, 1
}

// halfOp applies op to each packed element with .ftz, .sat and .relu.
func halfOp(t ptx.Type, op func(a, b, c float64) float64, ftz, sat, relu bool) aluFn {
	h, lanes := halfLanes(t)
	return func(r []uint64, in *inst) {
		var d uint64
		for l := 0; l < lanes; l++ {
			sh := uint(16 * l)
			a, b, c := h.decode(r[in.a]>>sh), h.decode(r[in.b]>>sh), h.decode(r[in.c]>>sh)
			if ftz {
				a, b, c = h.flush(a), h.flush(b), h.flush(c)
			}
			x := op(a, b, c)
			var v uint64
			switch {
			case x != x && sat:
				v = 0 // .sat flushes NaN to +0
			case x != x:
				v = 0x7fff
			default:
				v = h.encode(x)
				if ftz {
					v = h.encode(h.flush(h.decode(v)))
				}
				y := h.decode(v)
				switch {
				case sat && !(y > 0):
					v = 0
				case sat && y > 1:
					v = h.encode(1)
				case relu && y < 0:
					v = 0
				}
			}
			d |= v << sh
		}
		r[in.d] = d
	}
}

// halfArith compiles add, sub, mul, fma, min, max, neg and abs on half types.
func (fc *fnCompiler) halfArith(in *ptx.Instruction, m *mods, t ptx.Type, op string) error {
	rnd, hasRnd := m.rounding()
	ftz := m.has(".ftz")
	sat := m.has(".sat")
	relu := m.has(".relu")
	nan := m.has(".NaN")
	bf := t == ptx.TypeBF16 || t == ptx.TypeBF16x2
	if hasRnd && rnd != rn || op == "fma" && !hasRnd || bf && (ftz || sat) || relu && op != "fma" && op != "min" && op != "max" ||
		nan && op != "min" && op != "max" {
		return unsupported(in.Line, "%s", in.Name())
	}
	n := 2
	switch op {
	case "fma":
		n = 3
	case "neg", "abs":
		n = 1
	}
	d, s, err := fc.operands(in, t, n)
	if err != nil {
		return err
	}
	var f func(a, b, c float64) float64
	switch op {
	case "add":
		f = func(a, b, _ float64) float64 { return sumOdd(a, b) }
	case "sub":
		f = func(a, b, _ float64) float64 { return sumOdd(a, -b) }
	case "mul":
		f = func(a, b, _ float64) float64 { return a * b } // exact: at most 2×11 bits
	case "fma":
		f = func(a, b, c float64) float64 { return sumOdd(a*b, c) }
	case "min":
		f = func(a, b, _ float64) float64 { return fmin(a, b, nan) }
	case "max":
		f = func(a, b, _ float64) float64 { return fmax(a, b, nan) }
	case "neg", "abs":
		_, lanes := halfLanes(t)
		h, _ := halfLanes(t)
		fc.alu(d, s, func(r []uint64, in *inst) {
			var out uint64
			for l := 0; l < lanes; l++ {
				sh := uint(16 * l)
				v := r[in.a] >> sh & 0xffff
				if ftz {
					v = h.encode(h.flush(h.decode(v))) | v&0x8000
				}
				if op == "neg" {
					v ^= 0x8000
				} else {
					v &^= 0x8000
				}
				out |= v << sh
			}
			r[in.d] = out
		})
		return nil
	}
	fc.alu(d, s, halfOp(t, f, ftz, sat, relu))
	return nil
}

// halfCmp returns a comparison of scalar half values for setp.
func halfCmp(t ptx.Type, op string, ftz bool) func(a, b uint64) bool {
	h, lanes := halfLanes(t)
	fcmp := floatCmp(op)
	if lanes != 1 || fcmp == nil {
		return nil
	}
	return func(a, b uint64) bool {
		x, y := h.decode(a), h.decode(b)
		if ftz {
			x, y = h.flush(x), h.flush(y)
		}
		return fcmp(x, y)
	}
}
