package guard

import (
	"strings"

	"github.com/gpuos/gpuos/internal/ptx"
)

// PointerParams tells, for each kernel of an unguarded (trusted) module, which
// parameters may be used as addresses, so that the driver checks only those
// against the session's window at launch — not every 8-byte argument, which
// refuses 8-byte scalars (a size_t count, a double).
//
// The analysis over-approximates: a parameter is a pointer unless its value
// provably never reaches an address. It taints the registers a parameter is
// loaded into and follows the taint, flow-insensitively, through every
// instruction except comparisons, multiplications and floating-point
// arithmetic (a pointer is moved, converted, offset and masked, never
// multiplied or computed in floating point); the parameter is a pointer if
// a tainted register is used in an address, converted with cvta, stored to
// memory (it escapes, e.g. into a call's parameters), or appears in any
// instruction the analysis does not model. A kernel that takes the address of a
// parameter, or reads parameters in any other way, has all its parameters
// treated as pointers.
func PointerParams(m *ptx.Module) map[string][]bool {
	out := map[string][]bool{}
	for _, f := range m.Functions() {
		if !f.Entry || f.Body == nil {
			continue
		}
		out[f.Name] = pointerParams(f)
	}
	return out
}

// notPointer are the opcodes whose result cannot carry a pointer onward.
var notPointer = map[string]bool{
	"setp": true, "set": true, "mul": true, "mul24": true, "div": true, "rem": true,
	"popc": true, "clz": true, "bfind": true, "brev": true, "testp": true,
}

func pointerParams(f *ptx.Function) []bool {
	n := len(f.Params)
	ptr := make([]bool, n)
	all := func() []bool {
		for i := range ptr {
			ptr[i] = true
		}
		return ptr
	}
	index := map[string]int{}
	for i, p := range f.Params {
		index[p.Name] = i
	}
	var ins []*ptx.Instruction
	ptx.Inspect(f.Body, func(nd ptx.Node) bool {
		if in, ok := nd.(*ptx.Instruction); ok {
			ins = append(ins, in)
			return false
		}
		return true
	})
	// taint[r] is the set of parameters whose value register r may hold.
	taint := map[string]map[int]bool{}
	add := func(r string, ps map[int]bool) bool {
		changed := false
		if taint[r] == nil {
			taint[r] = map[int]bool{}
		}
		for p := range ps {
			if !taint[r][p] {
				taint[r][p] = true
				changed = true
			}
		}
		return changed
	}
	regsOf := func(op ptx.Operand) []string {
		var rs []string
		ptx.Inspect(op, func(nd ptx.Node) bool {
			if r, ok := nd.(*ptx.Reg); ok {
				rs = append(rs, r.Name)
			}
			return true
		})
		return rs
	}
	// Parameter reads: ld.param from a named parameter seeds the taint; any
	// other mention of a parameter's name (its address taken) gives up.
	for _, in := range ins {
		for oi, op := range in.Operands {
			isAddr := false
			for _, ai := range in.AddressOperands() {
				isAddr = isAddr || ai == oi
			}
			var named []int
			ptx.Inspect(op, func(nd ptx.Node) bool {
				if s, ok := nd.(*ptx.Symbol); ok {
					if i, ok := index[s.Name]; ok {
						named = append(named, i)
					}
				}
				return true
			})
			if len(named) == 0 {
				continue
			}
			if in.Opcode != "ld" || !isAddr || in.StateSpace() != ptx.SpaceParam || len(in.Operands) == 0 {
				return all()
			}
			seed := map[int]bool{}
			for _, i := range named {
				seed[i] = true
			}
			for _, r := range regsOf(in.Operands[0]) {
				add(r, seed)
			}
		}
	}
	reaches := func(rs []string) {
		for _, r := range rs {
			for p := range taint[r] {
				ptr[p] = true
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, in := range ins {
			if len(in.Operands) == 0 {
				continue
			}
			addrOps := map[int]bool{}
			for _, ai := range in.AddressOperands() {
				addrOps[ai] = true
			}
			// Sources and whether any is tainted.
			src := map[int]bool{}
			var srcRegs []string
			for oi, op := range in.Operands {
				if oi == 0 && !addrOps[0] && in.Opcode != "st" && in.Opcode != "red" {
					continue // the destination
				}
				for _, r := range regsOf(op) {
					srcRegs = append(srcRegs, r)
					for p := range taint[r] {
						src[p] = true
					}
				}
			}
			if len(src) == 0 {
				continue
			}
			switch {
			case len(addrOps) > 0:
				// Registers inside an address reach memory; a tainted value
				// stored (st, atom, red operands) escapes.
				for oi := range addrOps {
					reaches(regsOf(in.Operands[oi]))
				}
				if in.Opcode != "ld" {
					reaches(srcRegs)
				}
			case strings.HasPrefix(in.Opcode, "cvta"):
				reaches(srcRegs)
			case in.Opcode == "call", in.Opcode == "ret", in.Opcode == "bra", in.Opcode == "brx":
				reaches(srcRegs)
			case notPointer[in.Opcode]:
			case in.Type().IsFloat() && in.Opcode != "mov" && in.Opcode != "cvt":
				// Floating-point arithmetic yields no usable address.
			case in.Opcode == "mad":
				// d = a*b + c: only the addend carries a pointer on.
				if len(in.Operands) == 4 {
					c := map[int]bool{}
					for _, r := range regsOf(in.Operands[3]) {
						for p := range taint[r] {
							c[p] = true
						}
					}
					for _, r := range regsOf(in.Operands[0]) {
						changed = add(r, c) || changed
					}
				}
			default:
				for _, r := range regsOf(in.Operands[0]) {
					changed = add(r, src) || changed
				}
			}
		}
	}
	return ptr
}
