package guard

import (
	"slices"
	"strings"

	"github.com/gpuos/gpuos/internal/ptx"
)

// Options tune the pass. The zero value is what the driver uses.
type Options struct {
	// KeepSuppressedLoads leaves the destination registers of a suppressed
	// load or atomic unchanged instead of setting them to 0. It saves one
	// predicated instruction per loaded register; the values are never
	// another tenant's (they are what the thread's registers held), and the
	// session is revoked before it can read any result back.
	KeepSuppressedLoads bool
	// PredicateLoads predicates global loads on their checks instead of
	// redirecting the failing ones to SinkVar (the form before the sink;
	// for comparing the two).
	PredicateLoads bool
}

// Result describes a guarded module to the driver.
type Result struct {
	// Functions lists the module's function definitions (kernels and device
	// functions) in source order; Record.Function-1 indexes it.
	Functions []string
	// Kernels lists the .entry functions, in source order.
	Kernels []string
	// Globals is the layout of the relocated .global variables; nil if the
	// module has none.
	Globals *Layout
	// ConstPatches are addresses of relocated variables to write into .const
	// variables after loading.
	ConstPatches []ConstPatch
	Stats        Stats
}

// Stats count what the pass did.
type Stats struct {
	Accesses int // memory operands of the module's instructions
	Checked  int // checked at run time, each by a check of its own
	Hoisted  int // covered by one check at their address register's definition
	Proven   int // proven inside their variable at load time: no check
	// ProvenShape counts shared accesses the range analysis proved inside
	// the block's shared memory from the thread index bounds: no check, in
	// the fast variant of their kernel when the proof needs the launch's
	// block shape (checked once per thread at entry; see ranges.go).
	ProvenShape int
	Variants    int // kernels given a fast variant and a fully checked one
	Reused      int // reused an earlier check of the same address in the same block
	Stripped    int // trap, brkpt, __assertfail and vprintf sites replaced
}

// Function returns the name of the function with the 1-based index id (as in
// Record.Function), or "".
func (r *Result) Function(id uint32) string {
	if id == 0 || int(id) > len(r.Functions) {
		return ""
	}
	return r.Functions[id-1]
}

// reservedPrefix starts every name the guard adds; a module that already
// uses one is refused, so that nothing can pose as the guard's own state.
const reservedPrefix = "__gpuos"

// guarder is the state of one Guard call.
type guarder struct {
	m    *ptx.Module
	opts Options
	res  *Result

	vars   map[string]*ptx.Var      // module-scope variables
	funcs  map[string]*ptx.Function // definitions, else declarations
	reloc  map[string]bool          // relocated .global variables
	layout *Layout

	consts    []*ptx.Var // the module's .const variables, ParamsVar included
	addrTaken []string   // defined functions whose address is taken

	// Whether the module makes generic addresses of these spaces (cvta).
	genericShared, genericLocal, genericConst, genericParam bool

	sinkUsed bool  // some function redirects loads to SinkVar
	sinkSize int64 // SinkVar's size: SinkSize, or more for hoisted loads (hoist.go)
}

// dynamicShared names a module-scope unsized .extern .shared array (the
// block's dynamic shared memory, which every such array starts), or "".
func (g *guarder) dynamicShared() string {
	names := make([]string, 0, 1)
	for name, v := range g.vars {
		if v.Space != ptx.SpaceShared || v.Linkage != ptx.LinkExtern {
			continue
		}
		if size, _, err := varShape(v); err == nil && size == 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return slices.Min(names) // the same one every time
}

// Guard rewrites m in place so that no memory access of its code can leave
// the session's window (see the package documentation), and returns what the
// driver needs to load and run it. On error m is left partly rewritten and
// must be discarded; the error is a *FormError matching ErrUnsupported or
// ErrInvalid.
func Guard(m *ptx.Module, opts Options) (*Result, error) {
	g := &guarder{m: m, opts: opts, res: &Result{}, vars: map[string]*ptx.Var{},
		funcs: map[string]*ptx.Function{}, reloc: map[string]bool{}}
	if m.AddressSize != 64 {
		why := "32-bit addresses cannot be confined to a 64-bit window; compile for 64-bit (.address_size 64)"
		if m.AddressSize == 0 {
			why = "no .address_size directive means 32-bit addresses, which cannot be confined to a 64-bit window; compile for 64-bit"
		}
		return nil, &FormError{Code: ErrUnsupported.Code, Form: ".address_size", Why: why}
	}
	if err := g.collect(); err != nil {
		return nil, err
	}
	if err := g.scanModule(); err != nil {
		return nil, err
	}
	if err := g.relocate(); err != nil {
		return nil, err
	}
	if err := g.declareParams(); err != nil {
		return nil, err
	}
	id := 0
	for _, f := range m.Functions() {
		if f.Body == nil {
			continue
		}
		id++
		g.res.Functions = append(g.res.Functions, f.Name)
		if f.Entry {
			g.res.Kernels = append(g.res.Kernels, f.Name)
		}
		if err := g.function(f, id); err != nil {
			return nil, err
		}
	}
	if g.sinkUsed {
		sv := &ptx.Var{Space: ptx.SpaceGlobal, Align: SinkSize, Type: ptx.TypeB8, Name: SinkVar, Dims: []int{int(max(g.sinkSize, SinkSize))}}
		if err := g.m.DeclareGlobal(sv); err != nil {
			return nil, invalidDecl("", SinkVar, "%v", err)
		}
	}
	g.res.Globals = g.layout
	return g.res, nil
}

// collect indexes the module's variables and functions and refuses reserved names.
func (g *guarder) collect() error {
	for _, it := range g.m.Items {
		switch it := it.(type) {
		case *ptx.Var:
			if strings.HasPrefix(it.Name, reservedPrefix) {
				return invalidDecl("", it.Name, "names starting with %s are reserved for the guard", reservedPrefix)
			}
			if _, dup := g.vars[it.Name]; dup {
				return invalidDecl("", it.Name, "declared twice")
			}
			g.vars[it.Name] = it
		case *ptx.Function:
			if strings.HasPrefix(it.Name, reservedPrefix) {
				return invalidDecl("", it.Name, "names starting with %s are reserved for the guard", reservedPrefix)
			}
			if old, ok := g.funcs[it.Name]; !ok || old.Body == nil {
				g.funcs[it.Name] = it
			}
		}
	}
	for name := range g.vars {
		if _, ok := g.funcs[name]; ok {
			return invalidDecl("", name, "names both a variable and a function")
		}
	}
	return nil
}

// scanModule classifies module variables and notes the module-wide facts the
// rewrite needs: generic address spaces in use and address-taken functions.
func (g *guarder) scanModule() error {
	for _, it := range g.m.Items {
		v, ok := it.(*ptx.Var)
		if !ok {
			continue
		}
		switch v.Space {
		case ptx.SpaceGlobal:
			switch {
			case v.Linkage == ptx.LinkExtern:
				return refuseDecl("", v.Name, "an external .global variable is defined by another module, which the guard cannot relocate")
			case hasAttr(v, ".managed"):
				return refuseDecl("", v.Name, "managed variables are reachable from the host outside the session's window; refused")
			case v.Type == ptx.TypeTexRef || v.Type == ptx.TypeSamplerRef || v.Type == ptx.TypeSurfRef:
				return refuseDecl("", v.Name, "texture, sampler and surface references are refused")
			}
			g.reloc[v.Name] = true
		case ptx.SpaceConst:
			if v.Linkage == ptx.LinkExtern {
				return refuseDecl("", v.Name, "an external .const variable is defined by another module; refused")
			}
			g.consts = append(g.consts, v)
		case ptx.SpaceShared:
		default:
			return refuseDecl("", v.Name, "module-scope %s variable", v.Space)
		}
	}
	var err error
	ptx.Inspect(g.m, func(n ptx.Node) bool {
		if err != nil {
			return false
		}
		switch n := n.(type) {
		case *ptx.Section:
			return false
		case *ptx.Var:
			if n.Init != nil {
				ptx.Inspect(n.Init, func(n ptx.Node) bool {
					if s, ok := n.(*ptx.Symbol); ok && s.Generic {
						if v := g.vars[s.Name]; v != nil && v.Space == ptx.SpaceShared {
							g.genericShared = true
						}
					}
					return true
				})
			}
			return false
		case *ptx.Directive:
			return false // .calltargets name call targets; they do not take addresses
		case *ptx.Instruction:
			if n.Opcode == "cvta" && !n.HasMod(".to") {
				switch spaceOf(n.StateSpace()) {
				case spShared:
					g.genericShared = true
				case spLocal:
					g.genericLocal = true
				case spConst:
					g.genericConst = true
				}
				if n.StateSpace() == ptx.SpaceParam {
					g.genericParam = true
				}
			}
			for i, o := range n.Operands {
				if n.Opcode == "call" && i == callTarget(n) {
					continue
				}
				ptx.Inspect(o, func(x ptx.Node) bool {
					if s, ok := x.(*ptx.Symbol); ok {
						if f := g.funcs[s.Name]; f != nil && f.Body != nil && !contains(g.addrTaken, s.Name) {
							g.addrTaken = append(g.addrTaken, s.Name)
						}
					}
					return true
				})
			}
			return false
		}
		return true
	})
	return err
}

func hasAttr(v *ptx.Var, name string) bool {
	for _, a := range v.Attrs {
		if a.Name == name {
			return true
		}
	}
	return false
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// callTarget returns the index of a call's target operand: the first that is
// not a parenthesised parameter list.
func callTarget(in *ptx.Instruction) int {
	for i, o := range in.Operands {
		if _, ok := o.(*ptx.Paren); !ok {
			return i
		}
	}
	return -1
}

// relocate lays out the .global variables, removes their declarations,
// patches .const initializers that take their addresses, and drops debug
// sections that refer to them.
func (g *guarder) relocate() error {
	var vars []*ptx.Var
	for _, it := range g.m.Items {
		if v, ok := it.(*ptx.Var); ok && g.reloc[v.Name] {
			vars = append(vars, v)
		}
	}
	if len(vars) > 0 {
		if err := g.layoutGlobals(vars); err != nil {
			return err
		}
	}
	for _, c := range g.consts {
		if c.Init == nil {
			continue
		}
		size, _, err := varShape(c)
		if err != nil {
			return err
		}
		w := &initWriter{g: g, v: c, buf: make([]byte, size), elem: uint64(c.Type.Size())}
		w.patch = func(off uint64, s *ptx.Symbol) ptx.Operand {
			if g.reloc[s.Name] {
				g.res.ConstPatches = append(g.res.ConstPatches, ConstPatch{Var: c.Name, Offset: off, Symbol: s.Name, Addend: s.Offset})
				return &ptx.Int{Value: 0}
			}
			return nil
		}
		r, err := w.walk(c.Init, 0)
		if err != nil {
			return err
		}
		if r != nil {
			c.Init = r
		}
	}
	if len(vars) == 0 {
		return nil
	}
	items := g.m.Items[:0]
	for _, it := range g.m.Items {
		switch it := it.(type) {
		case *ptx.Var:
			if g.reloc[it.Name] {
				continue
			}
		case *ptx.Section:
			if g.mentionsRelocated(it) {
				continue // DWARF describing the old placement; ptxas would fail on it
			}
		}
		items = append(items, it)
	}
	g.m.Items = items
	return nil
}

func (g *guarder) mentionsRelocated(n ptx.Node) bool {
	found := false
	ptx.Inspect(n, func(x ptx.Node) bool {
		if s, ok := x.(*ptx.Symbol); ok && g.reloc[s.Name] {
			found = true
		}
		return !found
	})
	return found
}

// addressable checks that an initializer of variable v may hold the address
// of target.
func (g *guarder) addressable(v, target string) error {
	if tv := g.vars[target]; tv != nil {
		if tv.Space == ptx.SpaceGlobal || tv.Space == ptx.SpaceConst {
			return nil
		}
		return refuseDecl("", v, "initializer takes the address of %s variable %s", tv.Space, target)
	}
	if _, ok := g.funcs[target]; ok {
		return refuseDecl("", v, "initializer takes the address of function %s (function-pointer tables, virtual functions): function addresses are not known before the driver loads the module; refused", target)
	}
	return invalidDecl("", v, "initializer refers to %s, which the module does not define", target)
}

// declareParams adds ParamsVar with its unguarded initial values.
func (g *guarder) declareParams() error {
	init := &ptx.Vector{}
	lo := uint64(initLo)
	for i := 0; i < ParamsSize/8; i++ {
		var v int64
		switch i * 8 {
		case paramLo:
			v = int64(lo)
		case paramMask:
			v = initMask
		default:
			for w := 2; w <= 128; w *= 2 {
				if i*8 == paramMaskW(w) {
					v = initMask | int64(w-1)
				}
			}
		}
		init.Elems = append(init.Elems, &ptx.Int{Value: v, Hex: true, Unsigned: true})
	}
	// Aligned to 32: a suppressed constant load of any width reads it (check.go).
	pv := &ptx.Var{Space: ptx.SpaceConst, Align: 32, Type: ptx.TypeU64, Name: ParamsVar, Dims: []int{ParamsSize / 8}, Init: init}
	if err := g.m.DeclareGlobal(pv); err != nil {
		return invalidDecl("", ParamsVar, "%v", err)
	}
	g.vars[ParamsVar] = pv
	g.consts = append(g.consts, pv)
	return nil
}
