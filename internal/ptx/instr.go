package ptx

import (
	"math"
	"strings"
)

// NewInstruction builds an instruction from its full dotted name and operands:
// NewInstruction("ld.global.v2.u32", vec, addr) has Opcode "ld" and Mods
// [".global" ".v2" ".u32"].
func NewInstruction(name string, operands ...Operand) *Instruction {
	op, mods := splitName(name)
	return &Instruction{Opcode: op, Mods: mods, Operands: operands}
}

// splitName splits "ld.global.f32" into "ld" and [".global" ".f32"].
func splitName(name string) (string, []string) {
	i := strings.IndexByte(name, '.')
	if i < 0 {
		return name, nil
	}
	op := name[:i]
	mods := make([]string, 0, strings.Count(name[i:], "."))
	rest := name[i:]
	for rest != "" {
		j := strings.IndexByte(rest[1:], '.')
		if j < 0 {
			mods = append(mods, rest)
			break
		}
		mods = append(mods, rest[:j+1])
		rest = rest[j+1:]
	}
	return op, mods
}

// Name returns the full dotted name: "ld.global.nc.v4.f32".
func (in *Instruction) Name() string {
	if len(in.Mods) == 0 {
		return in.Opcode
	}
	n := len(in.Opcode)
	for _, m := range in.Mods {
		n += len(m)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(in.Opcode)
	for _, m := range in.Mods {
		b.WriteString(m)
	}
	return b.String()
}

// HasMod reports whether the instruction carries the modifier mod (with its
// dot: ".nc").
func (in *Instruction) HasMod(mod string) bool {
	for _, m := range in.Mods {
		if m == mod {
			return true
		}
	}
	return false
}

// Types returns the type modifiers in source order: [.f32 .s32] for
// "cvt.rn.f32.s32".
func (in *Instruction) Types() []Type {
	var ts []Type
	for _, m := range in.Mods {
		if t, ok := ParseType(m); ok {
			ts = append(ts, t)
		}
	}
	return ts
}

// Type returns the first type modifier, TypeNone if there is none. For most
// instructions it is the only one; for cvt and similar conversions it is the
// destination type.
func (in *Instruction) Type() Type {
	for _, m := range in.Mods {
		if t, ok := ParseType(m); ok {
			return t
		}
	}
	return TypeNone
}

// StateSpace returns the first state-space modifier, SpaceNone (generic) if
// there is none. Instructions that name two spaces (cp.async.ca.shared.global,
// cvta.to.global) name the destination first; use Spaces for all.
func (in *Instruction) StateSpace() StateSpace {
	for _, m := range in.Mods {
		if s, ok := ParseStateSpace(m); ok {
			return s
		}
	}
	return SpaceNone
}

// Spaces returns every state-space modifier in source order.
func (in *Instruction) Spaces() []StateSpace {
	var ss []StateSpace
	for _, m := range in.Mods {
		if s, ok := ParseStateSpace(m); ok {
			ss = append(ss, s)
		}
	}
	return ss
}

// VectorWidth returns 2, 4 or 8 for a .v2/.v4/.v8 modifier, else 1.
func (in *Instruction) VectorWidth() int {
	for _, m := range in.Mods {
		switch m {
		case ".v2":
			return 2
		case ".v4":
			return 4
		case ".v8":
			return 8
		}
	}
	return 1
}

// AccessSize returns how many bytes of memory a data-movement instruction
// reads or writes at its address operand: the type's size times the vector
// width for ld, ldu, st, atom, red and multimem; the cp-size operand for
// cp.async (non-bulk). It returns 0 for other instructions and when the size
// is not a constant (bulk copies, whose size is a register).
func (in *Instruction) AccessSize() int {
	switch in.Opcode {
	case "ld", "ldu", "st", "atom", "red", "multimem":
		return in.Type().Size() * in.VectorWidth()
	case "cp":
		if len(in.Mods) > 0 && in.Mods[0] == ".async" && !in.HasMod(".bulk") && len(in.Operands) >= 3 {
			if n, ok := in.Operands[2].(*Int); ok {
				return int(n.Value)
			}
		}
	}
	return 0
}

// AddressOperands returns the indices of the instruction's memory operands,
// the *Address values ("[%rd1+8]"), in order: 0 for st, 1 for ld and atom, 0
// and 1 for cp.async. Bracketed lists ("[tex, {x, y}]", "[tmap, {c0, c1}]")
// are *Bracket values and are not included.
func (in *Instruction) AddressOperands() []int {
	var idx []int
	for i, o := range in.Operands {
		if _, ok := o.(*Address); ok {
			idx = append(idx, i)
		}
	}
	return idx
}

// Float32Imm returns a single-precision literal (printed 0fXXXXXXXX).
func Float32Imm(v float32) *Float {
	return &Float{Bits: uint64(math.Float32bits(v)), Single: true}
}

// Float64Imm returns a double-precision literal (printed 0dXXXXXXXXXXXXXXXX).
func Float64Imm(v float64) *Float {
	return &Float{Bits: math.Float64bits(v)}
}

// Float64 returns the literal's value as a float64 (exact for single precision).
func (f *Float) Float64() float64 {
	if f.Single {
		return float64(math.Float32frombits(uint32(f.Bits)))
	}
	return math.Float64frombits(f.Bits)
}
