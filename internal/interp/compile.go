package interp

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuos/gpuos/internal/ptx"
)

// symKind is what a name in scope denotes.
type symKind uint8

const (
	symReg       symKind = iota // a register: slot
	symRegFamily                // %r<N>: slots slot … slot+count-1
	symKParam                   // a kernel parameter: off in the parameter buffer
	symFParam                   // a device-function parameter, return value or call-site .param: off in the frame
	symLocal                    // a .local variable: off in the function's local frame
	symShared                   // a .shared variable: off in the block's shared memory
	symGlobal                   // a module-scope .global/.const variable: name
	symFunc                     // a function
)

type symbol struct {
	kind  symKind
	slot  int32
	count int
	off   int
	size  int
	align int
	typ   ptx.Type
	name  string
	konst bool // symGlobal: .const
}

type scope struct {
	parent   *scope
	names    map[string]*symbol
	families map[string]*symbol
	labels   map[string]int32 // labels are scoped like names: inline asm repeats them
}

func newScope(parent *scope) *scope {
	return &scope{parent: parent, names: map[string]*symbol{}, families: map[string]*symbol{}, labels: map[string]int32{}}
}

func (s *scope) label(name string) (int32, bool) {
	for sc := s; sc != nil; sc = sc.parent {
		if at, ok := sc.labels[name]; ok {
			return at, true
		}
	}
	return 0, false
}

func (s *scope) lookup(name string) *symbol {
	for sc := s; sc != nil; sc = sc.parent {
		if sym, ok := sc.names[name]; ok {
			return sym
		}
		// A parameterized family: %r12 is member 12 of %r<N>.
		i := len(name)
		for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
			i--
		}
		if i < len(name) && i > 0 {
			if fam, ok := sc.families[name[:i]]; ok {
				n, err := strconv.Atoi(name[i:])
				if err == nil && n < fam.count && (name[i] != '0' || len(name) == i+1) {
					return &symbol{kind: symReg, slot: fam.slot + int32(n), typ: fam.typ, name: name}
				}
			}
		}
	}
	return nil
}

// addrPatch is a constant slot that must hold a global's address once bound.
type addrPatch struct {
	fn   *function
	slot int32
	sym  string
	off  int64
}

// compiler holds the module-wide state of one Compile.
type compiler struct {
	m      *ptx.Module
	prog   *Program
	module *scope
	funcs  map[string]*ptx.Function
}

// Compile compiles a parsed PTX module. An instruction, directive, type or
// state space the interpreter does not support is an error naming it and its
// line (ErrUnsupported, v1.CodeUnsupported), never a wrong result at run time.
func Compile(m *ptx.Module) (*Program, error) {
	if m == nil {
		return nil, fmt.Errorf("compile: nil module: %w", ErrInvalid)
	}
	c := &compiler{m: m, prog: &Program{kernels: map[string]*Kernel{}, symbols: map[string]*symbol{}},
		module: newScope(nil), funcs: map[string]*ptx.Function{}}
	if err := c.header(); err != nil {
		return nil, err
	}
	if err := c.moduleItems(); err != nil {
		return nil, err
	}
	for _, f := range m.Functions() {
		if !f.Entry || f.Body == nil || c.funcs[f.Name] != f {
			continue
		}
		k, err := c.kernel(f)
		if err != nil {
			return nil, err
		}
		c.prog.kernels[f.Name] = k
	}
	c.prog.names = sortedKeys(c.prog.kernels)
	c.prog.needBind = len(c.prog.globals) > 0
	return c.prog, nil
}

func (c *compiler) header() error {
	switch c.m.AddressSize {
	case 64:
	case 0, 32:
		return unsupported(0, "32-bit addressing (.address_size %d); only .address_size 64 is supported", c.m.AddressSize)
	default:
		return invalid(0, ".address_size %d", c.m.AddressSize)
	}
	maj, min, ok := strings.Cut(c.m.Version, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if !ok || err1 != nil || err2 != nil {
		return invalid(0, ".version %q", c.m.Version)
	}
	c.prog.version = a*10 + b
	for _, t := range c.m.Target {
		switch {
		case strings.HasPrefix(t, "sm_"), t == "debug", t == "texmode_unified":
		default:
			return unsupported(0, ".target %s", t)
		}
	}
	return nil
}

func (c *compiler) moduleItems() error {
	for _, it := range c.m.Items {
		switch it := it.(type) {
		case *ptx.Function:
			if prev, ok := c.funcs[it.Name]; ok && prev.Body != nil && it.Body == nil {
				continue
			}
			c.funcs[it.Name] = it
			c.module.names[it.Name] = &symbol{kind: symFunc, name: it.Name}
		case *ptx.Var:
			if err := c.moduleVar(it); err != nil {
				return err
			}
		case *ptx.Directive:
			switch it.Name {
			case ".file", ".loc", ".pragma":
			default:
				return unsupported(0, "module directive %s", it.Name)
			}
		case *ptx.Section:
			// DWARF: nothing to execute.
		default:
			return unsupported(0, "module item %T", it)
		}
	}
	return nil
}

func (c *compiler) moduleVar(v *ptx.Var) error {
	if len(v.Attrs) > 0 {
		return unsupported(0, "variable %s with .attribute(%s)", v.Name, v.Attrs[0].Name)
	}
	switch v.Space {
	case ptx.SpaceGlobal, ptx.SpaceConst:
		if v.Linkage == ptx.LinkExtern {
			return unsupported(0, "external variable %s (modules are not linked)", v.Name)
		}
		if !validType(v.Type) {
			return unsupported(0, "variable %s of type %s", v.Name, v.Type)
		}
		size, align, err := varSize(v, 0)
		if err != nil {
			return err
		}
		if size <= 0 {
			return invalid(0, "variable %s has no size", v.Name)
		}
		if _, dup := c.module.names[v.Name]; dup {
			return invalid(0, "%s declared twice", v.Name)
		}
		g := Global{Name: v.Name, Const: v.Space == ptx.SpaceConst, Size: uint64(size), Align: uint64(align)}
		if v.Init != nil {
			g.Init = make([]byte, size)
			if err := c.initializer(&g, v, v.Init); err != nil {
				return err
			}
		}
		c.prog.globals = append(c.prog.globals, g)
		sym := &symbol{kind: symGlobal, name: v.Name, size: size, align: align, typ: v.Type, konst: g.Const}
		c.module.names[v.Name] = sym
		c.prog.symbols[v.Name] = sym
	case ptx.SpaceShared:
		if v.Init != nil {
			return invalid(0, "shared variable %s has an initializer", v.Name)
		}
		size, align, err := varSize(v, 0)
		if err != nil {
			return err
		}
		if _, dup := c.module.names[v.Name]; dup {
			return invalid(0, "%s declared twice", v.Name)
		}
		c.module.names[v.Name] = &symbol{kind: symShared, name: v.Name, size: size, align: align, typ: v.Type, off: -1}
	default:
		return unsupported(0, "module-scope %s variable %s", v.Space, v.Name)
	}
	return nil
}

// Limits that keep a hostile module from exhausting memory at load time.
const (
	maxVarSize = 1 << 31 // bytes of one variable
	maxAlign   = 1 << 16
	maxSlots   = 1 << 18 // registers and constants of one function frame
)

// varSize returns a variable's size and alignment, checking them.
func varSize(v *ptx.Var, line int) (size, align int, err error) {
	n := uint64(v.Type.Size())
	if v.Vector > 0 {
		n *= uint64(v.Vector)
	}
	for _, d := range v.Dims {
		if d == ptx.UnsizedDim {
			n = 0
			continue
		}
		if d < 0 || d > maxVarSize {
			return 0, 0, invalid(line, "variable %s has dimension %d", v.Name, d)
		}
		n *= uint64(d)
		if n > maxVarSize {
			return 0, 0, unsupported(line, "variable %s is larger than %d bytes", v.Name, maxVarSize)
		}
	}
	if n > maxVarSize {
		return 0, 0, unsupported(line, "variable %s is larger than %d bytes", v.Name, maxVarSize)
	}
	align = v.Alignment()
	if align <= 0 || align&(align-1) != 0 || align > maxAlign {
		return 0, 0, invalid(line, "variable %s has alignment %d", v.Name, align)
	}
	return int(n), align, nil
}

func validType(t ptx.Type) bool {
	switch t {
	case ptx.TypeB8, ptx.TypeB16, ptx.TypeB32, ptx.TypeB64, ptx.TypeU8, ptx.TypeU16, ptx.TypeU32, ptx.TypeU64,
		ptx.TypeS8, ptx.TypeS16, ptx.TypeS32, ptx.TypeS64, ptx.TypeF16, ptx.TypeBF16, ptx.TypeF32, ptx.TypeF64,
		ptx.TypeF16x2, ptx.TypeBF16x2:
		return true
	}
	return false
}

// initializer fills g.Init (and g.Relocs) from a variable's initializer.
func (c *compiler) initializer(g *Global, v *ptx.Var, init ptx.Operand) error {
	esize := v.Type.Size()
	if v.Vector > 0 {
		// A vector variable's initializer lists its elements.
	}
	var elems []ptx.Operand
	var flatten func(op ptx.Operand)
	flatten = func(op ptx.Operand) {
		if vec, ok := op.(*ptx.Vector); ok {
			for _, e := range vec.Elems {
				flatten(e)
			}
			return
		}
		elems = append(elems, op)
	}
	flatten(init)
	if len(elems)*esize > len(g.Init) {
		return invalid(0, "initializer of %s has %d elements, more than its size allows", v.Name, len(elems))
	}
	for i, e := range elems {
		off := i * esize
		val, sym, err := constValue(e, v.Type)
		if err != nil {
			return fmt.Errorf("initializer of %s: %w", v.Name, err)
		}
		if sym != nil {
			if esize != 8 {
				return unsupported(0, "initializer of %s stores an address in a %d-byte element", v.Name, esize)
			}
			target, ok := c.module.names[sym.Name]
			if !ok || target.kind != symGlobal {
				return unsupported(0, "initializer of %s takes the address of %s, which is not a global variable", v.Name, sym.Name)
			}
			g.Relocs = append(g.Relocs, Reloc{Offset: uint64(off), Symbol: sym.Name, Addend: sym.Offset})
			continue
		}
		switch esize {
		case 1:
			g.Init[off] = byte(val)
		case 2:
			binary.LittleEndian.PutUint16(g.Init[off:], uint16(val))
		case 4:
			binary.LittleEndian.PutUint32(g.Init[off:], uint32(val))
		case 8:
			binary.LittleEndian.PutUint64(g.Init[off:], val)
		}
	}
	return nil
}

// constValue evaluates a literal operand as a value of type t; a symbol
// (address) is returned as such.
func constValue(op ptx.Operand, t ptx.Type) (uint64, *ptx.Symbol, error) {
	switch op := op.(type) {
	case *ptx.Int:
		if t == ptx.TypeF32 {
			return uint64(math.Float32bits(float32(op.Value))), nil, nil
		}
		if t == ptx.TypeF64 {
			return math.Float64bits(float64(op.Value)), nil, nil
		}
		return uint64(op.Value), nil, nil
	case *ptx.Float:
		switch t {
		case ptx.TypeF32:
			if op.Single {
				return op.Bits, nil, nil
			}
			return uint64(math.Float32bits(float32(op.Float64()))), nil, nil
		case ptx.TypeF64:
			return math.Float64bits(op.Float64()), nil, nil
		case ptx.TypeF16:
			return uint64(toF16(op.Float64(), rn)), nil, nil
		case ptx.TypeBF16:
			return uint64(toBF16(op.Float64(), rn)), nil, nil
		}
		return op.Bits, nil, nil // a bit pattern for a .b/.u/.s type
	case *ptx.Symbol:
		return 0, op, nil
	case *ptx.Expr:
		v, err := evalExpr(op)
		return uint64(v), nil, err
	}
	return 0, nil, fmt.Errorf("operand %s is not a constant: %w", op, ErrInvalid)
}

func evalExpr(op ptx.Operand) (int64, error) {
	switch op := op.(type) {
	case *ptx.Int:
		return op.Value, nil
	case *ptx.Expr:
		x, err := evalExpr(op.X)
		if err != nil {
			return 0, err
		}
		if op.Y == nil {
			switch op.Op {
			case "-":
				return -x, nil
			case "~":
				return ^x, nil
			case "!":
				if x == 0 {
					return 1, nil
				}
				return 0, nil
			case "()", "+":
				return x, nil
			}
			return 0, fmt.Errorf("operator %s: %w", op.Op, ErrUnsupported)
		}
		y, err := evalExpr(op.Y)
		if err != nil {
			return 0, err
		}
		switch op.Op {
		case "+":
			return x + y, nil
		case "-":
			return x - y, nil
		case "*":
			return x * y, nil
		case "/", "%":
			if y == 0 {
				return 0, fmt.Errorf("division by zero in constant expression: %w", ErrInvalid)
			}
			if op.Op == "/" {
				return x / y, nil
			}
			return x % y, nil
		case "<<":
			return x << uint(y&63), nil
		case ">>":
			return x >> uint(y&63), nil
		case "&":
			return x & y, nil
		case "|":
			return x | y, nil
		case "^":
			return x ^ y, nil
		}
		return 0, fmt.Errorf("operator %s: %w", op.Op, ErrUnsupported)
	}
	return 0, fmt.Errorf("constant expression operand %s: %w", op, ErrUnsupported)
}

// --- kernels ---

type kernelCompiler struct {
	c      *compiler
	k      *Kernel
	funcs  map[string]*function
	shared map[*symbol]int // per-kernel offsets of module-scope shared variables
	// function-scope .shared declarations, by function and name
	fshared  map[*ptx.Var]int
	next     int // next free static shared byte
	dynAlign int
	pending  []pendingFunc
}

type pendingFunc struct {
	f  *ptx.Function
	fn *function
}

func (c *compiler) kernel(f *ptx.Function) (*Kernel, error) {
	k := &Kernel{prog: c.prog, name: f.Name}
	k.attrs.MaxThreadsPerBlock = MaxThreadsPerBlock
	k.attrs.PTXVersion = c.prog.version
	if err := k.directives(f); err != nil {
		return nil, err
	}
	for _, p := range f.Params {
		if _, _, err := varSize(p, f.Line); err != nil {
			return nil, err
		}
	}
	slots, err := f.ParamLayout()
	if err != nil {
		return nil, unsupported(f.Line, "kernel %s parameters: %v", f.Name, err)
	}
	for i, s := range slots {
		if f.Params[i].Space != ptx.SpaceParam {
			return nil, unsupported(f.Line, "kernel %s parameter %s in %s", f.Name, s.Name, f.Params[i].Space)
		}
		k.params = append(k.params, Param{Name: s.Name, Offset: s.Offset, Size: s.Size, Align: s.Align})
		k.psize = s.Offset + s.Size
		if k.psize > maxParamBytes {
			return nil, unsupported(f.Line, "kernel %s takes more than %d bytes of parameters", f.Name, maxParamBytes)
		}
	}
	kc := &kernelCompiler{c: c, k: k, funcs: map[string]*function{}, shared: map[*symbol]int{},
		fshared: map[*ptx.Var]int{}, dynAlign: 16}
	if err := kc.layoutShared(f); err != nil {
		return nil, err
	}
	entry, err := kc.function(f)
	if err != nil {
		return nil, err
	}
	for len(kc.pending) > 0 {
		p := kc.pending[0]
		kc.pending = kc.pending[1:]
		if err := kc.compileBody(p.f, p.fn); err != nil {
			return nil, err
		}
	}
	k.entry = entry
	k.shared = kc.next
	k.dynAlign = kc.dynAlign
	k.attrs.StaticShared = kc.next
	k.attrs.LocalPerThread = entry.local
	k.attrs.NumRegs = min(255, entry.regWords)
	return k, nil
}

func (k *Kernel) directives(f *ptx.Function) error {
	for _, d := range f.Directives {
		switch d.Name {
		case ".maxntid", ".reqntid":
			n := 1
			var dims [3]int
			for i, g := range d.Args {
				if len(g) != 1 || i >= 3 {
					return invalid(f.Line, "%s of %s", d.Name, f.Name)
				}
				v, err := evalExpr(g[0])
				if err != nil || v <= 0 {
					return invalid(f.Line, "%s of %s", d.Name, f.Name)
				}
				n *= int(v)
				dims[i] = int(v)
			}
			if n > MaxThreadsPerBlock {
				n = MaxThreadsPerBlock
			}
			k.attrs.MaxThreadsPerBlock = min(k.attrs.MaxThreadsPerBlock, n)
			if d.Name == ".reqntid" {
				for i := range dims {
					if dims[i] == 0 {
						dims[i] = 1
					}
				}
				k.reqntid = dims
			}
		case ".minnctapersm", ".maxnreg", ".noreturn", ".pragma", ".maxnctapersm":
		case ".reqnctapercluster", ".maxclusterrank", ".explicitcluster":
			ones := true
			for _, g := range d.Args {
				for _, a := range g {
					if v, err := evalExpr(a); err != nil || v != 1 {
						ones = false
					}
				}
			}
			if !ones || d.Name == ".explicitcluster" {
				return unsupported(f.Line, "thread block clusters (%s on %s)", d.Name, f.Name)
			}
		default:
			return unsupported(f.Line, "directive %s on %s", d.Name, f.Name)
		}
	}
	return nil
}

// layoutShared places the shared variables the kernel can reach: those its
// functions declare and the module-scope ones they name. Extern (unsized)
// shared arrays all start where static shared memory ends: the dynamic part.
func (kc *kernelCompiler) layoutShared(entry *ptx.Function) error {
	seen := map[*ptx.Function]bool{}
	work := []*ptx.Function{entry}
	var decls []*ptx.Var
	names := map[string]bool{}
	for len(work) > 0 {
		f := work[len(work)-1]
		work = work[:len(work)-1]
		if seen[f] || f.Body == nil {
			continue
		}
		seen[f] = true
		ptx.Inspect(f.Body, func(n ptx.Node) bool {
			switch n := n.(type) {
			case *ptx.Var:
				if n.Space == ptx.SpaceShared {
					decls = append(decls, n)
				}
			case *ptx.Symbol:
				names[n.Name] = true
				if g, ok := kc.c.funcs[n.Name]; ok {
					work = append(work, g)
				}
			case *ptx.Reg:
				names[n.Name] = true
			}
			return true
		})
	}
	place := func(v *ptx.Var) (int, error) {
		size, align, err := varSize(v, entry.Line)
		if err != nil {
			return 0, err
		}
		if isUnsized(v) {
			kc.dynAlign = max(kc.dynAlign, align)
			return -1, nil
		}
		off := alignUp(kc.next, align)
		kc.next = off + size
		if kc.next > MaxSharedPerBlock {
			return 0, unsupported(entry.Line, "kernel %s declares %d bytes of shared memory, more than %d", entry.Name, kc.next, MaxSharedPerBlock)
		}
		return off, nil
	}
	// Module-scope variables first, in source order.
	for _, it := range kc.c.m.Items {
		v, ok := it.(*ptx.Var)
		if !ok || v.Space != ptx.SpaceShared || !names[v.Name] {
			continue
		}
		sym := kc.c.module.names[v.Name]
		off, err := place(v)
		if err != nil {
			return err
		}
		kc.shared[sym] = off
	}
	for _, v := range decls {
		off, err := place(v)
		if err != nil {
			return err
		}
		kc.fshared[v] = off
	}
	return nil
}

func isUnsized(v *ptx.Var) bool {
	for _, d := range v.Dims {
		if d == ptx.UnsizedDim {
			return true
		}
	}
	return false
}

// dynOffset is where the dynamic shared memory starts.
func (kc *kernelCompiler) dynOffset() int { return alignUp(kc.next, kc.dynAlign) }

// function returns the compiled form of f for this kernel, compiling its body
// later (so that recursion finds the function already registered).
func (kc *kernelCompiler) function(f *ptx.Function) (*function, error) {
	if fn, ok := kc.funcs[f.Name]; ok {
		return fn, nil
	}
	if f.Body == nil {
		return nil, unsupported(f.Line, "call to %s, which is declared but not defined in this module", f.Name)
	}
	fn := &function{name: f.Name, kernel: f.Entry}
	kc.funcs[f.Name] = fn
	if f.Entry {
		if err := kc.compileBody(f, fn); err != nil {
			return nil, err
		}
		return fn, nil
	}
	// Lay out the parameter frame now: callers need it before the body is compiled.
	off := 0
	for _, lists := range [][]*ptx.Var{f.Params, f.Returns} {
		for _, p := range lists {
			if p.Space != ptx.SpaceParam {
				return nil, unsupported(f.Line, "%s: %s parameter %s (only .param parameters are supported)", f.Name, p.Space, p.Name)
			}
			size, align, err := varSize(p, f.Line)
			if err != nil {
				return nil, err
			}
			if size <= 0 || size > maxParamBytes {
				return nil, invalid(f.Line, "%s: parameter %s has size %d", f.Name, p.Name, size)
			}
			off = alignUp(off, align)
			ref := paramRef{off: off, size: size}
			if len(fn.formals) < len(f.Params) {
				fn.formals = append(fn.formals, ref)
			} else {
				fn.returns = append(fn.returns, ref)
			}
			off += size
		}
	}
	fn.pframe = off
	kc.pending = append(kc.pending, pendingFunc{f, fn})
	return fn, nil
}

// fnCompiler compiles one function body.
type fnCompiler struct {
	kc     *kernelCompiler
	f      *ptx.Function
	fn     *function
	scope  *scope
	nslots int32
	consts map[uint64]int32
	sregs  map[sreg]int32
	fixups []fixup
	line   int
	opcode string // of the instruction being compiled
	guard  int32
	gneg   uint8
	cc     int32 // the carry flag's slot, -1 until used
	sink   int32 // where "_" results go
}

type fixup struct {
	at    int
	label string
	line  int
	scope *scope
}

// Reserved slots of every frame.
const (
	slotZero int32 = 0 // constant 0: unused operands
	slotTrue int32 = 1 // constant 1: the guard of unguarded instructions
)

func (kc *kernelCompiler) compileBody(f *ptx.Function, fn *function) error {
	fc := &fnCompiler{kc: kc, f: f, fn: fn, scope: newScope(kc.c.module), nslots: 2,
		consts: map[uint64]int32{0: slotZero, 1: slotTrue}, sregs: map[sreg]int32{}, cc: -1, line: f.Line}
	fc.sink = fc.newSlot()
	if f.Entry {
		slots, _ := f.ParamLayout()
		for i, p := range f.Params {
			fc.scope.names[p.Name] = &symbol{kind: symKParam, off: slots[i].Offset, size: slots[i].Size, typ: p.Type, name: p.Name}
		}
	} else {
		for i, p := range f.Params {
			fc.scope.names[p.Name] = &symbol{kind: symFParam, off: fn.formals[i].off, size: fn.formals[i].size, typ: p.Type, name: p.Name}
		}
		for i, p := range f.Returns {
			fc.scope.names[p.Name] = &symbol{kind: symFParam, off: fn.returns[i].off, size: fn.returns[i].size, typ: p.Type, name: p.Name}
		}
	}
	if err := fc.block(f.Body, false); err != nil {
		return err
	}
	// Falling off the end returns.
	fc.guard, fc.gneg = slotTrue, 0
	fc.emit(inst{op: opRet})
	for _, fx := range fc.fixups {
		target, ok := fx.scope.label(fx.label)
		if !ok {
			return invalid(fx.line, "branch to undefined label %s", fx.label)
		}
		fn.code[fx.at].imm = uint64(target)
	}
	fn.nslots = int(fc.nslots)
	fn.template = make([]uint64, fc.nslots)
	for v, s := range fc.consts {
		fn.template[s] = v
	}
	for k, s := range fc.sregs {
		fn.sregs = append(fn.sregs, sregSlot{slot: s, kind: k})
	}
	sort.Slice(fn.sregs, func(i, j int) bool { return fn.sregs[i].slot < fn.sregs[j].slot })
	fn.lalign = max(fn.lalign, 1)
	return nil
}

func (fc *fnCompiler) newSlot() int32 {
	s := fc.nslots
	fc.nslots++
	return s
}

// checkSlots reports a frame that grew past the limit (constants and
// temporaries are allocated without checks; this runs once per instruction).
func (fc *fnCompiler) checkSlots() error {
	if fc.nslots > maxSlots {
		return unsupported(fc.line, "%s needs more than %d register slots", fc.f.Name, maxSlots)
	}
	return nil
}

// konst returns the slot of a constant.
func (fc *fnCompiler) konst(v uint64) int32 {
	if s, ok := fc.consts[v]; ok {
		return s
	}
	s := fc.newSlot()
	fc.consts[v] = s
	return s
}

// addrSlot returns a fresh slot that Bind fills with a global's address.
func (fc *fnCompiler) addrSlot(name string, off int64) int32 {
	s := fc.newSlot()
	fc.kc.c.prog.patches = append(fc.kc.c.prog.patches, addrPatch{fn: fc.fn, slot: s, sym: name, off: off})
	return s
}

func (fc *fnCompiler) emit(in inst) {
	in.guard, in.gneg = fc.guard, fc.gneg
	fc.fn.code = append(fc.fn.code, in)
	fc.fn.lines = append(fc.fn.lines, int32(fc.line))
}

// block compiles a brace-delimited list of statements in a new scope (the
// function body shares the function's scope).
func (fc *fnCompiler) block(b *ptx.Block, nested bool) error {
	if nested {
		fc.scope = newScope(fc.scope)
		defer func() { fc.scope = fc.scope.parent }()
	}
	for _, s := range b.Stmts {
		switch s := s.(type) {
		case *ptx.Var:
			if err := fc.declare(s); err != nil {
				return err
			}
		case *ptx.Label:
			if _, dup := fc.scope.labels[s.Name]; dup {
				return invalid(fc.line, "label %s defined twice", s.Name)
			}
			fc.scope.labels[s.Name] = int32(len(fc.fn.code))
		case *ptx.Instruction:
			fc.line, fc.opcode = s.Line, s.Opcode
			if err := fc.instruction(s); err != nil {
				return err
			}
		case *ptx.Block:
			if err := fc.block(s, true); err != nil {
				return err
			}
		case *ptx.Directive:
			switch s.Name {
			case ".loc", ".file", ".pragma", ".section":
			default:
				return unsupported(fc.line, "directive %s in %s", s.Name, fc.f.Name)
			}
		case *ptx.Prototype:
			return unsupported(fc.line, "call prototype %s (indirect calls)", s.Name)
		default:
			return unsupported(fc.line, "statement %T", s)
		}
	}
	return nil
}

func (fc *fnCompiler) declare(v *ptx.Var) error {
	if len(v.Attrs) > 0 {
		return unsupported(fc.line, "variable %s with .attribute(%s)", v.Name, v.Attrs[0].Name)
	}
	switch v.Space {
	case ptx.SpaceReg:
		if v.Type != ptx.TypePred && !validType(v.Type) {
			return unsupported(fc.line, "register %s of type %s", v.Name, v.Type)
		}
		if v.Vector > 0 || len(v.Dims) > 0 {
			return unsupported(fc.line, "vector or array register %s", v.Name)
		}
		words := (v.Type.Bits() + 31) / 32
		if v.Count < 0 || v.Count > maxSlots || int(fc.nslots)+v.Count > maxSlots {
			return unsupported(fc.line, "%s declares more than %d registers", fc.f.Name, maxSlots)
		}
		if v.Count > 0 {
			sym := &symbol{kind: symRegFamily, slot: fc.nslots, count: v.Count, typ: v.Type, name: v.Name}
			fc.nslots += int32(v.Count)
			fc.scope.families[v.Name] = sym
			fc.fn.regWords += words * v.Count
			return nil
		}
		fc.scope.names[v.Name] = &symbol{kind: symReg, slot: fc.newSlot(), typ: v.Type, name: v.Name}
		fc.fn.regWords += words
	case ptx.SpaceParam:
		size, align, err := varSize(v, fc.line)
		if err != nil {
			return err
		}
		if size <= 0 || size > maxParamBytes || fc.fn.pframe > maxParamBytes {
			return invalid(fc.line, "parameter %s has size %d", v.Name, size)
		}
		off := alignUp(fc.fn.pframe, align)
		fc.fn.pframe = off + size
		fc.scope.names[v.Name] = &symbol{kind: symFParam, off: off, size: size, typ: v.Type, name: v.Name}
	case ptx.SpaceLocal:
		size, al, err := varSize(v, fc.line)
		if err != nil {
			return err
		}
		if size <= 0 {
			return unsupported(fc.line, "local variable %s without a size", v.Name)
		}
		if v.Init != nil {
			return unsupported(fc.line, "initialized local variable %s", v.Name)
		}
		if fc.fn.local+size+al > MaxLocalPerThread {
			return unsupported(fc.line, "%s uses more than %d bytes of local memory", fc.f.Name, MaxLocalPerThread)
		}
		off := alignUp(fc.fn.local, al)
		fc.fn.local = off + size
		fc.fn.lalign = max(fc.fn.lalign, al)
		fc.scope.names[v.Name] = &symbol{kind: symLocal, off: off, size: size, typ: v.Type, name: v.Name}
	case ptx.SpaceShared:
		off, ok := fc.kc.fshared[v]
		if !ok {
			return invalid(fc.line, "shared variable %s was not laid out", v.Name)
		}
		if off < 0 {
			off = fc.kc.dynOffset()
		}
		size, _, _ := varSize(v, fc.line) // checked by layoutShared
		fc.scope.names[v.Name] = &symbol{kind: symShared, off: off, size: size, typ: v.Type, name: v.Name}
	default:
		return unsupported(fc.line, "%s variable %s in a function body", v.Space, v.Name)
	}
	return nil
}

// --- operands ---

// reg resolves a register or special-register operand to a slot.
func (fc *fnCompiler) reg(name string) (int32, error) {
	if sym := fc.scope.lookup(name); sym != nil {
		if sym.kind == symReg {
			return sym.slot, nil
		}
		return 0, invalid(fc.line, "%s is not a register", name)
	}
	if s, ok := sregNames[name]; ok {
		if fc.opcode != "" && fc.opcode != "mov" {
			// As ptxas: "Special register argument not allowed for instruction".
			return 0, invalid(fc.line, "special register %s is read only by mov, not by %s", name, fc.opcode)
		}
		if s.dynamic() {
			d := fc.newSlot()
			fc.emit(inst{op: opSreg, d: d, kind: uint8(s)})
			return d, nil
		}
		if slot, ok := fc.sregs[s]; ok {
			return slot, nil
		}
		slot := fc.newSlot()
		fc.sregs[s] = slot
		return slot, nil
	}
	if strings.HasPrefix(name, "%") {
		if fc.scope.lookup(name) == nil && isSpecialName(name) {
			return 0, unsupported(fc.line, "special register %s", name)
		}
	}
	return 0, invalid(fc.line, "undeclared register %s", name)
}

func isSpecialName(n string) bool {
	for _, p := range []string{"%envreg", "%pm", "%cluster", "%is_explicit", "%reserved", "%current_graph", "%aggr_smem", "%nclusterid", "%clusterid", "%ncluster", "%lanemask", "%ntid", "%tid", "%ctaid", "%nctaid"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// dst resolves a destination operand: a register or the sink "_".
func (fc *fnCompiler) dst(op ptx.Operand) (int32, error) {
	switch op := op.(type) {
	case *ptx.Reg:
		if _, ok := sregNames[op.Name]; ok && fc.scope.lookup(op.Name) == nil {
			return 0, invalid(fc.line, "special register %s as a destination", op.Name)
		}
		return fc.reg(op.Name)
	case *ptx.Symbol:
		if sym := fc.scope.lookup(op.Name); sym != nil && sym.kind == symReg && op.Offset == 0 && !op.Generic {
			return sym.slot, nil
		}
	case *ptx.Sink:
		return fc.sink, nil
	}
	return 0, invalid(fc.line, "destination %s is not a register", op)
}

// src resolves a source operand of type t: a register, a special register, an
// immediate (converted to t), or a symbol's address.
func (fc *fnCompiler) src(op ptx.Operand, t ptx.Type) (int32, error) {
	switch op := op.(type) {
	case *ptx.Reg:
		return fc.reg(op.Name)
	case *ptx.Int, *ptx.Float, *ptx.Expr:
		v, _, err := constValue(op, t)
		if err != nil {
			return 0, invalid(fc.line, "%v", err)
		}
		switch {
		case t == ptx.TypePred:
			v = b2u(v != 0)
		case t.Bits() < 64 && t.Bits() > 0 && !t.IsFloat():
			v &= 1<<uint(t.Bits()) - 1
		}
		return fc.konst(v), nil
	case *ptx.Symbol:
		if sym := fc.scope.lookup(op.Name); sym != nil && sym.kind == symReg && op.Offset == 0 && !op.Generic {
			return sym.slot, nil
		}
		if _, ok := sregNames[op.Name]; ok && op.Offset == 0 && fc.scope.lookup(op.Name) == nil {
			return fc.reg(op.Name)
		}
		return fc.symAddr(op)
	case *ptx.Sink:
		return fc.sink, nil
	}
	return 0, invalid(fc.line, "operand %s cannot be a source", op)
}

// symAddr returns a slot holding the address of a variable (mov %r, sym):
// its address in its own state space, or its generic address for generic(sym).
func (fc *fnCompiler) symAddr(op *ptx.Symbol) (int32, error) {
	sym := fc.scope.lookup(op.Name)
	if sym == nil {
		return 0, invalid(fc.line, "undeclared symbol %s", op.Name)
	}
	off := uint64(op.Offset)
	switch sym.kind {
	case symGlobal:
		return fc.addrSlot(sym.name, op.Offset), nil
	case symShared:
		base := uint64(fc.sharedOff(sym))
		if op.Generic {
			base += SharedWindow
		}
		return fc.konst(base + off), nil
	case symLocal:
		var win uint64
		if op.Generic {
			win = LocalWindow
		}
		if fc.fn.kernel {
			return fc.konst(win + uint64(sym.off) + off), nil
		}
		d := fc.newSlot()
		fc.emit(inst{op: opLocalAddr, d: d, imm: win + uint64(sym.off) + off})
		return d, nil
	case symKParam:
		if op.Generic {
			return 0, unsupported(fc.line, "generic address of kernel parameter %s", op.Name)
		}
		return fc.konst(uint64(sym.off) + off), nil
	case symFParam:
		return 0, unsupported(fc.line, "address of device-function parameter %s", op.Name)
	case symFunc:
		return 0, unsupported(fc.line, "address of function %s (indirect calls)", op.Name)
	}
	return 0, invalid(fc.line, "%s has no address", op.Name)
}

func (fc *fnCompiler) sharedOff(sym *symbol) int {
	if sym.off >= 0 {
		return sym.off // function-scope: resolved at declaration
	}
	off, ok := fc.kc.shared[sym]
	if !ok || off < 0 {
		return fc.kc.dynOffset()
	}
	return off
}

// pred resolves a predicate source, possibly negated ("!%p").
func (fc *fnCompiler) pred(op ptx.Operand) (int32, bool, error) {
	neg := false
	if n, ok := op.(*ptx.Not); ok {
		neg, op = true, n.X
	}
	s, err := fc.src(op, ptx.TypePred)
	return s, neg, err
}

// predSlot is pred with the negation folded into a fresh slot when needed.
func (fc *fnCompiler) predSlot(op ptx.Operand) (int32, error) {
	s, neg, err := fc.pred(op)
	if err != nil || !neg {
		return s, err
	}
	d := fc.newSlot()
	fc.emit(inst{op: opALU, d: d, a: s, fn: notPred})
	return d, nil
}

func notPred(r []uint64, in *inst) { r[in.d] = r[in.a] ^ 1 }

// memRef is a resolved address operand.
type memRef struct {
	base  int32
	off   uint64
	sym   *symbol // the variable named, if any
	space ptx.StateSpace
}

// address resolves "[reg+off]", "[sym+off]" or "[imm]".
func (fc *fnCompiler) address(op ptx.Operand) (memRef, error) {
	a, ok := op.(*ptx.Address)
	if !ok {
		return memRef{}, invalid(fc.line, "operand %s is not an address", op)
	}
	ref := memRef{base: slotZero, off: uint64(a.Offset)}
	switch b := a.Base.(type) {
	case nil:
	case *ptx.Reg:
		s, err := fc.reg(b.Name)
		if err != nil {
			return ref, err
		}
		ref.base = s
	case *ptx.Symbol:
		if b.Generic {
			s, err := fc.symAddr(b)
			if err != nil {
				return ref, err
			}
			ref.base = s
			return ref, nil
		}
		sym := fc.scope.lookup(b.Name)
		if sym == nil {
			return ref, invalid(fc.line, "undeclared symbol %s", b.Name)
		}
		ref.off += uint64(b.Offset)
		ref.sym = sym
		switch sym.kind {
		case symReg:
			ref.base = sym.slot
			ref.sym = nil
		case symGlobal:
			ref.base = fc.addrSlot(sym.name, 0)
			ref.space = ptx.SpaceGlobal
			if sym.konst {
				ref.space = ptx.SpaceConst
			}
		case symShared:
			ref.off += uint64(fc.sharedOff(sym))
			ref.space = ptx.SpaceShared
		case symLocal:
			ref.space = ptx.SpaceLocal
			if fc.fn.kernel {
				ref.off += uint64(sym.off)
			} else {
				d := fc.newSlot()
				fc.emit(inst{op: opLocalAddr, d: d, imm: uint64(sym.off)})
				ref.base = d
			}
		case symKParam, symFParam:
			ref.space = ptx.SpaceParam
		default:
			return ref, invalid(fc.line, "%s is not a variable", b.Name)
		}
	default:
		return ref, invalid(fc.line, "address base %s", a.Base)
	}
	return ref, nil
}
