package guard

import (
	"strings"

	"github.com/gpuos/gpuos/internal/ptx"
)

// spaceClass is where an address operand points, for checking.
type spaceClass uint8

const (
	spNone    spaceClass = iota
	spGlobal             // .global: the session's window
	spGeneric            // no state space: classified at run time
	spShared             // .shared, .shared::cta, .shared::cluster: the block's shared memory
	spLocal              // .local: the function's local variables
	spConst              // .const: the module's constant variables
	spParam              // .param through a register: the kernel's own parameters
)

// constantBank reports whether loads of the space are constant-bank loads,
// which ptxas may run ahead of their predicate: their checks redirect the
// load to a safe address instead of predicating it (check.go's redirect),
// so they are neither hoisted nor reused.
func (s spaceClass) constantBank() bool { return s == spParam || s == spConst }

func (s spaceClass) String() string {
	return [...]string{"none", "global", "generic", "shared", "local", "const", "param"}[s]
}

// access is one memory operand of an instruction that the guard must check.
type access struct {
	op    int         // index of the *ptx.Address operand
	space spaceClass  //
	width int         // bytes accessed (a power of two); for bulk copies the unit (16)
	align int         // required alignment; 1 for hints
	size  ptx.Operand // bulk copies: the byte count (a register or *ptx.Int); nil otherwise
	write bool        // stores, atomics, reductions, copies' destinations, discard
	hint  bool        // prefetch-like: an address outside is suppressed, never recorded
}

// spaceOf maps a state-space modifier to the class the guard checks it as.
func spaceOf(s ptx.StateSpace) spaceClass {
	switch s {
	case ptx.SpaceNone:
		return spGeneric
	case ptx.SpaceGlobal:
		return spGlobal
	case ptx.SpaceShared, ptx.SpaceSharedCluster:
		return spShared
	case ptx.SpaceLocal:
		return spLocal
	case ptx.SpaceConst:
		return spConst
	}
	return spNone
}

// refusedOpcodes are instructions the guard cannot make safe, and why.
var refusedOpcodes = map[string]string{
	"multimem":             "multimem accesses reach memory of other devices through multicast objects; refused",
	"tensormap":            "tensormap.* creates or edits tensor maps, which address memory the guard cannot check; refused",
	"tex":                  "texture instructions read through handles the guard cannot validate; refused",
	"tld4":                 "texture instructions read through handles the guard cannot validate; refused",
	"txq":                  "texture queries use handles the guard cannot validate; refused",
	"suld":                 "surface instructions access memory through handles the guard cannot validate; refused",
	"sust":                 "surface instructions access memory through handles the guard cannot validate; refused",
	"sured":                "surface instructions access memory through handles the guard cannot validate; refused",
	"suq":                  "surface queries use handles the guard cannot validate; refused",
	"wgmma":                "wgmma reads shared memory through matrix descriptors the guard cannot check; refused",
	"tcgen05":              "tcgen05 accesses tensor memory and shared memory through descriptors the guard cannot check; refused",
	"mapa":                 "mapa makes addresses into other blocks' shared memory (distributed shared memory), which the guard confines to the own block; refused",
	"alloca":               "alloca allocates local memory the guard cannot bound; refused",
	"stacksave":            "stacksave/stackrestore move the local stack the guard bounds; refused",
	"stackrestore":         "stacksave/stackrestore move the local stack the guard bounds; refused",
	"clusterlaunchcontrol": "clusterlaunchcontrol is not supported by the guard; refused",
}

// accessesOf lists the memory operands of in that the guard must check. It
// returns a refusal for memory forms it cannot make safe, and for any
// instruction with a memory operand it does not know, so that a new memory
// instruction is never let through unchecked.
func accessesOf(fn string, in *ptx.Instruction) ([]access, error) {
	accs, err := classify(fn, in)
	if err != nil {
		return nil, err
	}
	// Every memory operand must be one the guard checks (or a named
	// parameter): a form with one more operand than the guard knows is refused.
	for i, o := range in.Operands {
		a, ok := o.(*ptx.Address)
		if !ok || in.Opcode == "call" {
			continue
		}
		covered := false
		for _, acc := range accs {
			covered = covered || acc.op == i
		}
		if _, named := a.Base.(*ptx.Symbol); !covered && !(named && in.StateSpace() == ptx.SpaceParam) {
			return nil, refuse(fn, in, "memory operand %d is not one the guard checks; refused", i+1)
		}
	}
	return accs, nil
}

// classify lists the checked memory operands of in.
func classify(fn string, in *ptx.Instruction) ([]access, error) {
	if why, ok := refusedOpcodes[in.Opcode]; ok {
		// wgmma's fences and group waits touch no memory; only mma_async does.
		if in.Opcode != "wgmma" || (len(in.Mods) > 0 && in.Mods[0] == ".mma_async") {
			return nil, refuse(fn, in, "%s", why)
		}
	}
	switch in.Opcode {
	case "ld", "ldu":
		return ldSt(fn, in, 1, false)
	case "st":
		if in.HasMod(".async") || in.HasMod(".bulk") {
			return nil, refuse(fn, in, "st.async and st.bulk write other blocks' or bulk shared memory; refused")
		}
		return ldSt(fn, in, 0, true)
	case "atom":
		return atomic(fn, in, 1)
	case "red":
		if in.HasMod(".async") {
			return nil, refuse(fn, in, "red.async reaches other blocks' shared memory; refused")
		}
		return atomic(fn, in, 0)
	case "prefetch", "prefetchu":
		if in.HasMod(".tensormap") {
			return hintAt(fn, in, 0, spGeneric)
		}
		sp := spaceOf(in.StateSpace())
		if sp != spGlobal && sp != spLocal && sp != spGeneric {
			return nil, refuse(fn, in, "prefetch of %s space", in.StateSpace())
		}
		return hintAt(fn, in, 0, sp)
	case "discard":
		if err := needAddr(fn, in, 0); err != nil {
			return nil, err
		}
		return []access{{op: 0, space: spGlobal, width: 128, align: 128, write: true}}, nil
	case "applypriority":
		if err := needAddr(fn, in, 0); err != nil {
			return nil, err
		}
		return []access{{op: 0, space: spGlobal, width: 128, align: 128, hint: true}}, nil
	case "cp":
		return copyAccesses(fn, in)
	case "mbarrier":
		var out []access
		sp := spaceOf(in.StateSpace())
		if sp != spShared && sp != spGeneric {
			return nil, refuse(fn, in, "mbarrier in %s space", in.StateSpace())
		}
		for _, i := range in.AddressOperands() {
			out = append(out, access{op: i, space: sp, width: 8, align: 8, write: true})
		}
		return out, nil
	case "ldmatrix", "stmatrix":
		op := 1
		if in.Opcode == "stmatrix" {
			op = 0
		}
		if err := needAddr(fn, in, op); err != nil {
			return nil, err
		}
		if sp := spaceOf(in.StateSpace()); sp != spShared {
			return nil, refuse(fn, in, "%s in %s space", in.Opcode, in.StateSpace())
		}
		return []access{{op: op, space: spShared, width: 16, align: 16, write: in.Opcode == "stmatrix"}}, nil
	case "wmma":
		if len(in.Mods) > 0 && (in.Mods[0] == ".load" || in.Mods[0] == ".store") {
			return nil, refuse(fn, in, "wmma.load/wmma.store access a strided matrix the guard does not bound yet; refused")
		}
	}
	for _, o := range in.Operands {
		switch o.(type) {
		case *ptx.Address:
			if in.Opcode == "call" {
				continue
			}
			return nil, refuse(fn, in, "instruction with a memory operand the guard does not know; refused")
		case *ptx.Bracket:
			return nil, refuse(fn, in, "instruction with a bracketed (texture, surface or tensor) operand; refused")
		}
	}
	return nil, nil
}

func needAddr(fn string, in *ptx.Instruction, i int) error {
	if i >= len(in.Operands) {
		return refuse(fn, in, "missing memory operand")
	}
	if _, ok := in.Operands[i].(*ptx.Address); !ok {
		return refuse(fn, in, "operand %d is not a memory operand", i+1)
	}
	return nil
}

func hintAt(fn string, in *ptx.Instruction, i int, sp spaceClass) ([]access, error) {
	if err := needAddr(fn, in, i); err != nil {
		return nil, err
	}
	return []access{{op: i, space: sp, width: 1, align: 1, hint: true}}, nil
}

// ldSt classifies ld, ldu and st.
func ldSt(fn string, in *ptx.Instruction, op int, write bool) ([]access, error) {
	if err := needAddr(fn, in, op); err != nil {
		return nil, err
	}
	w := in.AccessSize()
	if w <= 0 || w > 32 || w&(w-1) != 0 {
		return nil, refuse(fn, in, "access of %d bytes", w)
	}
	a := in.Operands[op].(*ptx.Address)
	space := in.StateSpace()
	switch space {
	case ptx.SpaceParam:
		// Named parameters are bounded at load time (kernel parameters, and
		// the .param variables of call sequences). A load through a register
		// (mov.u64 %rd, param; ld.param [%rd+off]: a kernel indexing an array
		// or struct parameter) is checked against the kernel's parameters at
		// run time (checkOf); stores through a register are refused.
		if _, ok := a.Base.(*ptx.Symbol); ok {
			return nil, nil
		}
		if write {
			return nil, refuse(fn, in, "parameter store through a register address; refused")
		}
		return []access{{op: op, space: spParam, width: w, align: w}}, nil
	case ptx.SpaceTex, ptx.SpaceReg, ptx.SpaceSReg:
		return nil, refuse(fn, in, "access to %s space", space)
	}
	sp := spaceOf(space)
	if sp == spConst && write {
		return nil, refuse(fn, in, "store to constant space")
	}
	return []access{{op: op, space: sp, width: w, align: w, write: write}}, nil
}

// atomic classifies atom and red: the whole vector width, any space that
// holds data.
func atomic(fn string, in *ptx.Instruction, op int) ([]access, error) {
	if err := needAddr(fn, in, op); err != nil {
		return nil, err
	}
	w := in.AccessSize()
	if w <= 0 || w > 32 || w&(w-1) != 0 {
		return nil, refuse(fn, in, "atomic of %d bytes", w)
	}
	sp := spaceOf(in.StateSpace())
	if sp != spGlobal && sp != spShared && sp != spGeneric {
		return nil, refuse(fn, in, "atomic in %s space", in.StateSpace())
	}
	return []access{{op: op, space: sp, width: w, align: w, write: true}}, nil
}

// copyAccesses classifies cp.async, cp.async.bulk and cp.reduce.async.bulk.
func copyAccesses(fn string, in *ptx.Instruction) ([]access, error) {
	if len(in.Mods) == 0 {
		return nil, refuse(fn, in, "unknown copy")
	}
	if in.HasMod(".tensor") {
		return nil, refuse(fn, in, "tensor-map copies address memory through a tensor map the guard cannot validate; refused")
	}
	bulk := in.HasMod(".bulk")
	switch {
	case in.Mods[0] == ".async" && !bulk:
		if in.HasMod(".mbarrier") { // cp.async.mbarrier.arrive{.noinc}.shared.b64 [mbar]
			if err := needAddr(fn, in, 0); err != nil {
				return nil, err
			}
			return []access{{op: 0, space: spShared, width: 8, align: 8, write: true}}, nil
		}
		if len(in.AddressOperands()) == 0 { // commit_group, wait_group, wait_all
			return nil, nil
		}
		ss := in.Spaces()
		if len(ss) != 2 || spaceOf(ss[0]) != spShared || ss[1] != ptx.SpaceGlobal {
			return nil, refuse(fn, in, "cp.async other than shared from global")
		}
		if err := needAddr(fn, in, 0); err != nil {
			return nil, err
		}
		if err := needAddr(fn, in, 1); err != nil {
			return nil, err
		}
		w := in.AccessSize()
		if w != 4 && w != 8 && w != 16 {
			return nil, refuse(fn, in, "cp.async size must be the constant 4, 8 or 16")
		}
		return []access{
			{op: 0, space: spShared, width: w, align: w, write: true},
			{op: 1, space: spGlobal, width: w, align: w},
		}, nil
	case (in.Mods[0] == ".async" || in.Mods[0] == ".reduce") && bulk:
		if len(in.AddressOperands()) == 0 { // commit_group, wait_group
			return nil, nil
		}
		if in.HasMod(".prefetch") { // cp.async.bulk.prefetch.L2.global [src], size
			if err := needAddr(fn, in, 0); err != nil {
				return nil, err
			}
			if len(in.Operands) < 2 {
				return nil, refuse(fn, in, "missing size")
			}
			return []access{{op: 0, space: spGlobal, width: 16, align: 16, size: in.Operands[1], hint: true}}, nil
		}
		ss := in.Spaces()
		if len(ss) < 2 || len(in.Operands) < 3 {
			return nil, refuse(fn, in, "bulk copy without a destination and source space")
		}
		for i := 0; i < 2; i++ {
			if err := needAddr(fn, in, i); err != nil {
				return nil, err
			}
		}
		dst, src := spaceOf(ss[0]), spaceOf(ss[1])
		if (dst != spGlobal && dst != spShared) || (src != spGlobal && src != spShared) {
			return nil, refuse(fn, in, "bulk copy between %s and %s", ss[0], ss[1])
		}
		out := []access{
			{op: 0, space: dst, width: 16, align: 16, size: in.Operands[2], write: true},
			{op: 1, space: src, width: 16, align: 16, size: in.Operands[2]},
		}
		for _, i := range in.AddressOperands() {
			if i > 2 { // the mbarrier
				out = append(out, access{op: i, space: spShared, width: 8, align: 8, write: true})
			}
		}
		return out, nil
	}
	return nil, refuse(fn, in, "copy form %s", strings.Join(in.Mods, ""))
}
