package guard

import (
	"strings"

	"github.com/gpuos/gpuos/internal/ptx"
)

// cmp is one "setp.op.typ p, x, y" comparison; a check holds when all of its
// comparisons do.
type cmp struct {
	op, typ string
	x, y    ptx.Operand
}

// piece is the check of one access: instructions, then either comparisons
// (all must hold) or a predicate register already holding the result.
type piece struct {
	pre   []ptx.Stmt
	cmps  []cmp
	pred  *ptx.Reg
	rec   ptx.Operand // the address to record on a violation
	acc   access
	rec32 bool // rec is a 32-bit register
}

// target is an access's address, resolved.
type target struct {
	proven bool        // known inside its variable: no check
	ea     ptx.Operand // register holding the address in the access's space
	bits   int         // 32 or 64: ea's width
	pre    []ptx.Stmt
}

// guardAccesses checks every access of in and predicates it on the result.
func (r *fnRewriter) guardAccesses(in *ptx.Instruction, accs []access) ([]ptx.Stmt, error) {
	st := &r.g.res.Stats
	var out []ptx.Stmt
	var pieces []piece
	hint := true
	// One access at a register address: an identical earlier check in this
	// block (same base, offset, width and guard) is reused.
	var key cacheKey
	keyed := false
	if len(accs) == 1 && accs[0].size == nil && !accs[0].space.constantBank() {
		if a, ok := in.Operands[accs[0].op].(*ptx.Address); ok {
			if b, ok := a.Base.(*ptx.Reg); ok {
				key = cacheKey{space: accs[0].space, base: b.Name, off: a.Offset, width: accs[0].width,
					align: accs[0].align, guard: guardKey(in.Guard), hint: accs[0].hint}
				keyed = true
			}
		}
	}
	if pa := r.facts.paramLoad(in); pa != nil && len(accs) == 1 && accs[0].space == spParam {
		// The register holds exactly a parameter's address plus a
		// constant: the load becomes the named access it is.
		in.Operands[accs[0].op] = pa
		st.Accesses++
		st.Proven++
		return append(out, in), nil
	}
	for _, acc := range accs {
		// A device function's parameters have no .param address of their
		// own (PTX: taking one's address puts it on the stack, in .local).
		if acc.space == spParam && r.paramRange() == nil {
			return nil, refuse(r.f.Name, in, "parameter access through a register address outside a kernel with parameters; refused")
		}
	}
	if len(accs) == 1 && r.facts.provenAt(in) {
		st.Accesses++
		st.ProvenShape++
		return append(out, in), nil
	}
	if len(accs) == 1 && !accs[0].space.constantBank() {
		if a, ok := in.Operands[accs[0].op].(*ptx.Address); ok {
			if b, ok := a.Base.(*ptx.Reg); ok {
				if h := r.facts.hoistedFor(b.Name); h != nil {
					st.Accesses++
					st.Hoisted++
					return append(out, r.hoistedUse(in, h)...), nil
				}
			}
		}
	}
	for _, acc := range accs {
		st.Accesses++
		t, err := r.resolve(in, acc)
		if err != nil {
			return nil, err
		}
		if t.proven {
			out = append(out, t.pre...)
			st.Proven++
			continue
		}
		if !acc.hint {
			hint = false
		}
		pc, err := r.checkOf(in, acc, t)
		if err != nil {
			return nil, err
		}
		pc.pre = append(t.pre, pc.pre...)
		pieces = append(pieces, pc)
		// A 32-bit address with an offset: the access uses the sum the
		// check computed. In [r+off] the sum may not wrap at 32 bits (the
		// interpreter adds in 64), so r = 0xfffffff8, off 8 passes a check
		// of (r+off) mod 2^32 = 0 and then reaches 2^32.
		if a, ok := in.Operands[acc.op].(*ptx.Address); ok && t.bits == 32 && a.Offset != 0 {
			if _, isReg := a.Base.(*ptx.Reg); isReg {
				in.Operands[acc.op] = addr(t.ea, 0)
				keyed = false
			}
		}
	}
	if len(pieces) == 0 {
		return append(out, in), nil
	}

	if keyed {
		if c, hit := r.cache[key]; hit {
			st.Reused++
			if r.sinkable(in, pieces) {
				// The earlier check's address: the base plus the offset.
				pc := pieces[0]
				if a := in.Operands[pc.acc.op].(*ptx.Address); a.Offset != 0 {
					t := r.q()
					out = append(out, ins("add.s64", t, a.Base, imm(a.Offset)))
					pc.rec = t
				}
				return append(append(out, r.toSink(in, pc, c.ok)...), in), nil
			}
			out = append(out, r.zero(in, &ptx.Guard{Reg: c.bad})...)
			in.Guard = &ptx.Guard{Reg: c.ok}
			return append(out, in), nil
		}
	}
	st.Checked += len(pieces)
	for _, pc := range pieces {
		out = append(out, pc.pre...)
	}

	var ok *ptx.Reg
	var bad *ptx.Guard
	if len(pieces) == 1 && pieces[0].pred == nil && len(pieces[0].cmps) == 1 {
		c := pieces[0].cmps[0]
		okr, badr := r.p(), r.p()
		out = append(out, setpPair(c.op, c.typ, okr, badr, c.x, c.y, in.Guard))
		ok, bad = okr, &ptx.Guard{Reg: badr}
		if keyed {
			r.cache[key] = cached{ok: okr, bad: badr}
		}
	} else {
		var acc *ptx.Reg
		for _, pc := range pieces {
			pre, p := r.conj(pc.cmps, acc)
			out = append(out, pre...)
			if pc.pred != nil {
				if p == nil {
					p = pc.pred
				} else {
					out = append(out, ins("and.pred", p, p, pc.pred))
				}
			}
			acc = p
		}
		pre, okr, badg := r.pairWithGuard(acc, in.Guard)
		out = append(out, pre...)
		ok, bad = okr, badg
		if keyed && !badg.Negated {
			r.cache[key] = cached{ok: okr, bad: badg.Reg}
		}
	}
	if !hint {
		window := len(pieces) == 1 && pieces[0].acc.space == spGlobal && pieces[0].acc.size == nil
		out = append(out, r.record(pieces[0].rec, pieces[0].rec32, window, bad)...)
	}
	if len(pieces) == 1 && pieces[0].acc.space.constantBank() && in.Opcode == "ld" {
		// A parameter or .const load through a register is a constant-bank
		// load, which ptxas may execute ahead of its predicate: predicated,
		// a misaligned parameter index took the shared context down on the
		// H100 (run 8, param_register_oob: CUDA_ERROR_MISALIGNED_ADDRESS).
		// So it is not predicated but redirected: when its check fails it
		// reads a safe address of its own width instead — a parameter of the
		// kernel, or the guard's own parameters (ParamsVar, aligned to 32
		// and 96 bytes long) — whose value leaks nothing.
		pc := pieces[0]
		var safe *ptx.Var
		if pc.acc.space == spParam {
			safe = r.paramFallback(pc.acc.width)
			if safe == nil || pc.rec32 {
				return nil, refuse(r.f.Name, in, "parameter load through a register address of %d bytes: no parameter of that size and alignment to read instead; refused", pc.acc.width)
			}
		} else if pc.acc.width > 32 {
			return nil, refuse(r.f.Name, in, "constant load of %d bytes through a register; refused", pc.acc.width)
		}
		name := ParamsVar
		if safe != nil {
			name = safe.Name
		}
		return append(append(out, r.redirect(in, pc, ok, name)...), in), nil
	}
	if r.sinkable(in, pieces) {
		return append(append(out, r.toSink(in, pieces[0], ok)...), in), nil
	}
	out = append(out, r.zero(in, bad)...)
	in.Guard = &ptx.Guard{Reg: ok}
	return append(out, in), nil
}

// sinkable reports whether in is a load of global memory whose one window
// check can choose its address instead of predicating it (toSink).
func (r *fnRewriter) sinkable(in *ptx.Instruction, pieces []piece) bool {
	if len(pieces) != 1 || (in.Opcode != "ld" && in.Opcode != "ldu") {
		return false
	}
	pc := pieces[0]
	return pc.acc.space == spGlobal && pc.acc.size == nil && !pc.acc.hint && !pc.rec32 &&
		pc.acc.width <= SinkSize && !r.g.opts.PredicateLoads
}

// toSink makes a global load read at pc's address when ok holds, else in the
// guard's zeroed sink (SinkVar), and returns the instruction that chooses.
// The load itself stays unpredicated (or keeps its own guard): ptxas turns a
// predicated load inside a conditional block into a branch around it, and
// holds a predicate register for every load it would batch (it has seven),
// so predicated loads went out one at a time where the plain kernel issued
// four or eight together (transpose, stencil1d, gemm_reg's tile loads lost
// 22-27%). A suppressed load reads zeros that nobody writes: nothing of
// another tenant's, and the value the old predicated form gave in loops.
func (r *fnRewriter) toSink(in *ptx.Instruction, pc piece, ok *ptx.Reg) []ptx.Stmt {
	s := r.q()
	in.Operands[pc.acc.op] = addr(s, 0)
	return []ptx.Stmt{ins("selp.b64", s, pc.rec, r.sinkAddr(), ok)}
}

// redirect makes in's access of pc read at pc's address when ok holds, else
// at the variable name, and returns the instructions that choose.
func (r *fnRewriter) redirect(in *ptx.Instruction, pc piece, ok *ptx.Reg, name string) []ptx.Stmt {
	var safe ptx.Operand
	var mov, selp string
	if pc.rec32 {
		safe, mov, selp = r.w(), "mov.u32", "selp.b32"
	} else {
		safe, mov, selp = r.q(), "mov.u64", "selp.b64"
	}
	in.Operands[pc.acc.op] = addr(safe, 0)
	return []ptx.Stmt{ins(mov, safe, &ptx.Symbol{Name: name}), ins(selp, safe, pc.rec, safe, ok)}
}

// paramFallback is a kernel parameter at least width bytes long whose
// address is aligned to width (its alignment is at least width), or nil.
func (r *fnRewriter) paramFallback(width int) *ptx.Var {
	for _, p := range r.f.Params {
		if p.Space == ptx.SpaceParam && p.Size() >= width && p.Alignment() >= width && p.Alignment()%width == 0 {
			return p
		}
	}
	return nil
}

// conj evaluates comparisons into a predicate (ANDed onto init, if any).
func (r *fnRewriter) conj(cs []cmp, init *ptx.Reg) ([]ptx.Stmt, *ptx.Reg) {
	return r.conjInto(cs, init, nil)
}

// conjInto is conj into dst, or a fresh predicate when dst is nil.
func (r *fnRewriter) conjInto(cs []cmp, init, dst *ptx.Reg) ([]ptx.Stmt, *ptx.Reg) {
	if len(cs) == 0 {
		switch {
		case dst != nil && init != nil:
			return []ptx.Stmt{ins("mov.pred", dst, init)}, dst
		case dst != nil: // nothing to compare: fail closed
			return []ptx.Stmt{ins("setp.ne.u32", dst, imm(0), imm(0))}, dst
		}
		return nil, init
	}
	p := dst
	if p == nil {
		p = r.p()
	}
	var out []ptx.Stmt
	for i, c := range cs {
		if i == 0 && init == nil {
			out = append(out, ins("setp."+c.op+"."+c.typ, p, c.x, c.y))
			continue
		}
		prev := p
		if i == 0 {
			prev = init
		}
		out = append(out, ins("setp."+c.op+".and."+c.typ, p, c.x, c.y, prev))
	}
	return out, p
}

// zero sets the destination registers of a suppressed load or atomic to 0,
// where it may run more than once: there a destination left unchanged
// would carry the previous iteration's value into this one, a predicated
// write that ptxas must order after the last, which serialises a loop's
// loads (reduce_sum lost 28%). Elsewhere the destination keeps its value,
// the thread's own, at no cost.
func (r *fnRewriter) zero(in *ptx.Instruction, bad *ptx.Guard) []ptx.Stmt {
	if r.g.opts.KeepSuppressedLoads || bad == nil || (r.facts != nil && r.facts.inLoop != nil && !r.facts.inLoop[in]) {
		return nil
	}
	switch in.Opcode {
	case "ld", "ldu", "atom", "ldmatrix":
	default:
		return nil
	}
	if len(in.Operands) == 0 {
		return nil
	}
	var regs []*ptx.Reg
	switch d := in.Operands[0].(type) {
	case *ptx.Reg:
		regs = append(regs, d)
	case *ptx.Vector:
		for _, e := range d.Elems {
			if rg, ok := e.(*ptx.Reg); ok {
				regs = append(regs, rg)
			}
		}
	}
	// Without a guard of its own, and when no destination is also read by
	// the instruction, the zeroing need not be predicated: the checked
	// access overwrites it. A destination written by a predicated move and
	// a predicated load is defined piecewise, and ptxas then kept each of an
	// unrolled loop's loaded values in a register of its own (the tiled
	// GEMM's checked variant: 87 registers; gemm_reg 72 instead of 64).
	uncond := in.Guard == nil
	for _, o := range in.Operands[1:] {
		ptx.Inspect(o, func(n ptx.Node) bool {
			if x, ok := n.(*ptx.Reg); ok {
				for _, rg := range regs {
					uncond = uncond && x.Name != rg.Name
				}
			}
			return true
		})
	}
	var out []ptx.Stmt
	for _, rg := range regs {
		t := r.regType(rg.Name)
		b := t.Bits()
		if t == ptx.TypePred || (b != 16 && b != 32 && b != 64) {
			continue
		}
		mv := ins("mov.b"+itoa(b), rg, imm(0))
		if !uncond {
			mv.Guard = bad
		}
		out = append(out, mv)
	}
	return out
}

func itoa(n int) string {
	switch n {
	case 16:
		return "16"
	case 32:
		return "32"
	}
	return "64"
}

// resolve finds an access's address: a named variable's (proven or computed)
// or a register's.
func (r *fnRewriter) resolve(in *ptx.Instruction, acc access) (target, error) {
	a := in.Operands[acc.op].(*ptx.Address)
	switch b := a.Base.(type) {
	case nil:
		reg := r.q()
		return target{ea: reg, bits: 64, pre: []ptx.Stmt{ins("mov.u64", reg, imm(a.Offset))}}, nil
	case *ptx.Reg:
		bits := r.regType(b.Name).Bits()
		if strings.HasPrefix(b.Name, "%") && strings.Contains(b.Name, ".") {
			return target{}, refuse(r.f.Name, in, "address in special register %s", b.Name)
		}
		if bits == 0 {
			bits = 64 // undeclared: ptxas rejects it anyway; check it as 64-bit
		}
		if bits != 32 && bits != 64 {
			return target{}, refuse(r.f.Name, in, "address in a %d-bit register", bits)
		}
		if bits == 32 && (acc.space == spGlobal || acc.space == spGeneric) {
			return target{}, refuse(r.f.Name, in, "a 32-bit register as a %s address", acc.space)
		}

		if a.Offset == 0 {
			return target{ea: b, bits: bits}, nil
		}
		var t *ptx.Reg
		var add *ptx.Instruction
		if bits == 32 {
			t = r.w()
			add = ins("add.s32", t, b, imm(a.Offset))
		} else {
			t = r.q()
			add = ins("add.s64", t, b, imm(a.Offset))
		}
		return target{ea: t, bits: bits, pre: []ptx.Stmt{add}}, nil
	case *ptx.Symbol:
		return r.resolveSymbol(in, acc, a, b)
	}
	return target{}, refuse(r.f.Name, in, "memory operand %s", a)
}

// resolveSymbol resolves [var+off].
func (r *fnRewriter) resolveSymbol(in *ptx.Instruction, acc access, a *ptx.Address, s *ptx.Symbol) (target, error) {
	off := s.Offset + a.Offset
	inside := func(size uint64, align uint64) bool {
		return acc.size == nil && off >= 0 && uint64(off)+uint64(acc.width) <= size &&
			uint64(off)%uint64(acc.align) == 0 && align >= uint64(acc.align)
	}
	if gv, ok := r.g.layout.Var(s.Name); ok && r.g.reloc[s.Name] {
		if acc.space != spGlobal && acc.space != spGeneric {
			return target{}, refuse(r.f.Name, in, "relocated .global variable %s accessed as %s", s.Name, acc.space)
		}
		t := r.q()
		pre := []ptx.Stmt{ins("add.u64", t, r.globalsBase(), imm(int64(gv.Offset)+off))}
		in.Operands[acc.op] = addr(t, 0)
		// The layout's base is 256-aligned and each variable aligned in it.
		return target{proven: inside(gv.Size, 256), ea: t, bits: 64, pre: pre}, nil
	}
	v := r.shared[s.Name]
	if v == nil {
		for _, lv := range r.localVars {
			if lv.Name == s.Name {
				v = lv
			}
		}
	}
	if v == nil {
		v = r.g.vars[s.Name]
	}
	if v == nil {
		return target{}, refuse(r.f.Name, in, "memory operand names %s, which is not a variable of the module or function", s.Name)
	}
	var want spaceClass
	switch v.Space {
	case ptx.SpaceShared:
		want = spShared
	case ptx.SpaceLocal:
		want = spLocal
	case ptx.SpaceConst:
		want = spConst
	default:
		return target{}, refuse(r.f.Name, in, "memory operand names %s variable %s", v.Space, s.Name)
	}
	if acc.space != want {
		return target{}, refuse(r.f.Name, in, "%s variable %s accessed as %s", v.Space, s.Name, acc.space)
	}
	size, align, err := varShape(v)
	if err != nil {
		return target{}, err
	}
	if size > 0 && inside(size, align) {
		return target{proven: true}, nil
	}
	// Unsized (dynamic shared memory) or outside: check the computed address.
	if want == spShared {
		t := r.w()
		pre := []ptx.Stmt{ins("mov.u32", t, &ptx.Symbol{Name: s.Name})}
		if off != 0 {
			pre = append(pre, ins("add.s32", t, t, imm(off)))
		}
		return target{ea: t, bits: 32, pre: pre}, nil
	}
	t := r.q()
	pre := []ptx.Stmt{ins("mov.u64", t, &ptx.Symbol{Name: s.Name})}
	if off != 0 {
		pre = append(pre, ins("add.s64", t, t, imm(off)))
	}
	return target{ea: t, bits: 64, pre: pre}, nil
}

// checkOf builds the run-time check of one access.
func (r *fnRewriter) checkOf(in *ptx.Instruction, acc access, t target) (piece, error) {
	pc := piece{rec: t.ea, rec32: t.bits == 32, acc: acc}
	switch acc.space {
	case spGlobal:
		r.globalCmps(&pc, acc, t.ea)
	case spShared:
		r.sharedCmps(&pc, acc, t.ea, t.bits)
	case spLocal:
		ea := r.widen(&pc, t)
		r.localCmps(&pc, acc, ea)
	case spConst:
		ea := r.widen(&pc, t)
		r.constCmps(&pc, acc, ea, r.constRange())
	case spParam:
		pr := r.paramRange()
		if pr == nil {
			return pc, refuse(r.f.Name, in, "parameter access through a register address outside a kernel with parameters; refused")
		}
		ea := r.widen(&pc, t)
		r.rangeCmps(&pc, acc, ea, pr)
	case spGeneric:
		if acc.size != nil {
			return pc, refuse(r.f.Name, in, "bulk copy through a generic address")
		}
		r.genericCheck(&pc, acc, t.ea)
	default:
		return pc, refuse(r.f.Name, in, "access to %s space", acc.space)
	}
	return pc, nil
}

// widen returns a 64-bit register with the access's address.
func (r *fnRewriter) widen(pc *piece, t target) ptx.Operand {
	if t.bits == 64 {
		return t.ea
	}
	q := r.q()
	pc.pre = append(pc.pre, ins("cvt.u64.u32", q, t.ea))
	return q
}

// globalCmps: the address masked with ~(span-1) | (width-1) equals the
// window's base, i.e. it is inside the window and aligned. A bulk copy also
// checks its last 16 bytes and its size.
func (r *fnRewriter) globalCmps(pc *piece, acc access, ea ptx.Operand) {
	t := r.q()
	pc.pre = append(pc.pre, ins("and.b64", t, ea, r.mask(acc.width)))
	pc.cmps = append(pc.cmps, cmp{"eq", "u64", t, r.needLo()})
	if acc.size == nil {
		return
	}
	last := r.q()
	r.sizeCmps(pc, acc, func(size64 ptx.Operand) {
		pc.pre = append(pc.pre, ins("add.s64", last, ea, size64), ins("sub.s64", last, last, imm(16)))
	})
	t2 := r.q()
	pc.pre = append(pc.pre, ins("and.b64", t2, last, r.mask(16)))
	pc.cmps = append(pc.cmps, cmp{"eq", "u64", t2, r.needLo()})
}

// sizeCmps checks a bulk size (a nonzero multiple of 16) and gives its 64-bit
// value to use.
func (r *fnRewriter) sizeCmps(pc *piece, acc access, use func(size64 ptx.Operand)) {
	switch s := acc.size.(type) {
	case *ptx.Int:
		if s.Value <= 0 || s.Value%16 != 0 {
			// Never valid: a comparison that fails.
			z := r.w()
			pc.pre = append(pc.pre, ins("mov.u32", z, imm(0)))
			pc.cmps = append(pc.cmps, cmp{"ne", "u32", z, imm(0)})
		}
		use(imm(s.Value))
	case *ptx.Reg:
		sz := ptx.Operand(s)
		if r.regType(s.Name).Bits() == 64 {
			c := r.w()
			pc.pre = append(pc.pre, ins("cvt.u32.u64", c, s))
			sz = c
		}
		m := r.w()
		pc.pre = append(pc.pre, ins("and.b32", m, sz, imm(15)))
		pc.cmps = append(pc.cmps, cmp{"eq", "u32", m, imm(0)}, cmp{"ne", "u32", sz, imm(0)})
		q := r.q()
		pc.pre = append(pc.pre, ins("cvt.u64.u32", q, sz))
		use(q)
	default:
		z := r.w()
		pc.pre = append(pc.pre, ins("mov.u32", z, imm(0)))
		pc.cmps = append(pc.cmps, cmp{"ne", "u32", z, imm(0)})
		use(imm(16))
	}
}

// sharedCmps: the address, rotated right by log2(width), is below the
// block's shared size over the width: rotation moves misaligned low bits to
// the top, so one unsigned comparison checks both bound and alignment.
func (r *fnRewriter) sharedCmps(pc *piece, acc access, ea ptx.Operand, bits int) {
	s := ea
	if bits == 64 {
		c := r.w()
		pc.pre = append(pc.pre, ins("cvt.u32.u64", c, ea))
		pc.cmps = append(pc.cmps, cmp{"lt", "u64", ea, imm(1 << 32)})
		s = c
	}
	r.shared32(pc, s, acc.width)
	if acc.size == nil {
		return
	}
	last := r.w()
	r.sizeCmps(pc, acc, func(size64 ptx.Operand) {
		sz := size64
		if q, ok := size64.(*ptx.Reg); ok {
			c := r.w()
			pc.pre = append(pc.pre, ins("cvt.u32.u64", c, q))
			sz = c
			pc.cmps = append(pc.cmps, cmp{"le", "u32", c, r.sharedLimit()})
		}
		pc.pre = append(pc.pre, ins("add.s32", last, s, sz), ins("sub.s32", last, last, imm(16)))
	})
	r.shared32(pc, last, 16)
}

func (r *fnRewriter) shared32(pc *piece, s ptx.Operand, width int) {
	r.sharedSpan(pc, s, width, width)
}

// sharedSpan: [s, s+span) inside the block's shared memory and s aligned
// to align (a power of two): s rotated right by log2(align) is below
// sharedLimitSpan. One funnel shift and one compare, whatever the span.
func (r *fnRewriter) sharedSpan(pc *piece, s ptx.Operand, span, align int) {
	k := log2(align)
	t := s
	if k > 0 {
		t = r.w()
		pc.pre = append(pc.pre, ins("shf.r.wrap.b32", t, s, s, imm(int64(k))))
	}
	pc.cmps = append(pc.cmps, cmp{"lt", "u32", t, r.sharedLimitSpan(span, k)})
}

// globalSpan: [ea, ea+span) inside the window and ea aligned to align. The
// window is one contiguous range, so checking the first and the last byte
// covers the rest.
func (r *fnRewriter) globalSpan(pc *piece, ea ptx.Operand, span, align int) {
	if span == align {
		r.globalCmps(pc, access{width: span, align: align}, ea)
		return
	}
	t, last, t2 := r.q(), r.q(), r.q()
	pc.pre = append(pc.pre, ins("and.b64", t, ea, r.mask(align)),
		ins("add.s64", last, ea, imm(int64(span-1))), ins("and.b64", t2, last, r.mask(1)))
	pc.cmps = append(pc.cmps, cmp{"eq", "u64", t, r.needLo()}, cmp{"eq", "u64", t2, r.needLo()})
}

// rangeCmps: lo <= ea and ea+width <= lo+size, and ea aligned.
func (r *fnRewriter) rangeCmps(pc *piece, acc access, ea ptx.Operand, sr *spanRange) {
	d := r.q()
	pc.pre = append(pc.pre, ins("sub.u64", d, ea, sr.lo))
	if sr.sizeReg == nil {
		lim := sr.size - int64(acc.width) + 1
		if lim <= 0 {
			pc.cmps = append(pc.cmps, cmp{"ne", "u64", ea, ea})
			return
		}
		pc.cmps = append(pc.cmps, cmp{"lt", "u64", d, imm(lim)})
	} else {
		e := r.q()
		pc.pre = append(pc.pre, ins("add.u64", e, d, imm(int64(acc.width))))
		pc.cmps = append(pc.cmps, cmp{"lt", "u64", d, sr.sizeReg}, cmp{"le", "u64", e, sr.sizeReg})
	}
	if acc.align > 1 {
		t := r.q()
		pc.pre = append(pc.pre, ins("and.b64", t, ea, imm(int64(acc.align-1))))
		pc.cmps = append(pc.cmps, cmp{"eq", "u64", t, imm(0)})
	}
}

// localCmps: inside the function's own .local variables.
func (r *fnRewriter) localCmps(pc *piece, acc access, ea ptx.Operand) {
	lr := r.localRange()
	if lr == nil {
		pc.cmps = append(pc.cmps, cmp{"ne", "u64", ea, ea}) // no local variables: nothing is inside
		return
	}
	r.rangeCmps(pc, acc, ea, lr)
}

// constCmps: inside the module's .const variables.
func (r *fnRewriter) constCmps(pc *piece, acc access, ea ptx.Operand, sr *spanRange) {
	r.rangeCmps(pc, acc, ea, sr)
}

// genericCheck: a generic address must be inside the window, or inside the
// block's shared memory, the function's local variables, the module's
// constants or the kernel's parameters, when the module makes generic
// addresses of those spaces at all (cvta). An address of a space the module
// never converts is checked against the window only, and fails there.
func (r *fnRewriter) genericCheck(pc *piece, acc access, ea ptx.Operand) {
	g := r.g
	var extra []piece
	if g.genericShared {
		var x piece
		d, e := r.q(), r.q()
		x.pre = append(x.pre, ins("sub.u64", d, ea, r.genericSharedBase()), ins("add.u64", e, d, imm(int64(acc.width))))
		lim := r.sharedLimit64()
		x.cmps = append(x.cmps, cmp{"lt", "u64", d, lim}, cmp{"le", "u64", e, lim})
		if acc.align > 1 {
			t := r.q()
			x.pre = append(x.pre, ins("and.b64", t, ea, imm(int64(acc.align-1))))
			x.cmps = append(x.cmps, cmp{"eq", "u64", t, imm(0)})
		}
		extra = append(extra, x)
	}
	if g.genericLocal && r.localRange() != nil {
		if r.localGeneric == nil {
			r.localGeneric = r.q()
		}
		var x piece
		r.rangeCmps(&x, acc, ea, &spanRange{lo: r.localGeneric, size: r.local.size, sizeReg: r.local.sizeReg})
		extra = append(extra, x)
	}
	if !acc.write && g.genericConst {
		var x piece
		r.rangeCmps(&x, acc, ea, r.genericConstRange())
		extra = append(extra, x)
	}
	if !acc.write && g.genericParam {
		if pr := r.genericParamRange(); pr != nil {
			var x piece
			r.rangeCmps(&x, acc, ea, pr)
			extra = append(extra, x)
		}
	}
	if len(extra) == 0 {
		r.globalCmps(pc, acc, ea)
		return
	}
	var gp piece
	r.globalCmps(&gp, acc, ea)
	pc.pre = append(pc.pre, gp.pre...)
	pre, p := r.conj(gp.cmps, nil)
	pc.pre = append(pc.pre, pre...)
	for _, x := range extra {
		pc.pre = append(pc.pre, x.pre...)
		pre, q := r.conj(x.cmps, nil)
		pc.pre = append(pc.pre, pre...)
		pc.pre = append(pc.pre, ins("or.pred", p, p, q))
	}
	pc.pred = p
}
