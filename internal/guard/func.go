package guard

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuos/gpuos/internal/ptx"
)

// fnRewriter guards one function definition.
type fnRewriter struct {
	g  *guarder
	f  *ptx.Function
	id int64 // 1-based, as Record.Function

	regs       map[string]ptx.Type // declared registers by name
	families   map[string]ptx.Type // parameterized register families by base name
	prefix     string
	nq, nr, np int // fresh .b64, .b32 and .pred registers used

	// Values the prologue computes, created on first use.
	lo, smask, n, a, gbase, shLim, gsb *ptx.Reg
	masks                              map[int]*ptx.Reg   // smask | (width-1), by width
	shLimK                             map[spanK]*ptx.Reg // (shLim - span + 2^k) >> k, clamped at 0
	local                              *spanRange         // the function's own .local variables
	cnst, gconst, gparam               *spanRange         // const space, and generic const/param ranges
	kparam                             *spanRange         // the kernel's parameters in .param space
	shLim64                            *ptx.Reg
	localGeneric                       *ptx.Reg // the generic address of local.lo
	sink                               *ptx.Reg // SinkVar's address

	localVars []*ptx.Var
	shared    map[string]*ptx.Var // function-scope .shared variables
	params    map[string]*ptx.Var // the function's parameters and the .param variables of its call sequences
	branchTgt map[string]int      // .branchtargets label → number of targets
	callTgt   map[string][]string // .calltargets label → functions

	proven   map[*ptx.Instruction]bool // shared accesses proven in bounds (ranges.go)
	variant  *variant                  // the kernel has a fast and a checked variant (specialize.go)
	slowCopy map[*ptx.Instruction]bool // the checked variant's instructions
	recorded bool                      // the function records violations: it needs the count registers and flushes
	depth    int                       // nesting of the block being rewritten; 0 for the body
	labels   map[string]bool
	lprefix  string       // a prefix no label of the function starts with
	slow     []*slowFlush // out-of-line record writers, by the instruction they end with
	cache    map[cacheKey]cached
	facts    *facts
}

// spanRange is a run-time range [lo, lo+size): lo a register; size an
// immediate (known) or a register.
type spanRange struct {
	lo      *ptx.Reg
	size    int64
	sizeReg *ptx.Reg
}

type cacheKey struct {
	space        spaceClass
	base         string
	off          int64
	width, align int
	guard        string
	hint         bool
}

type cached struct{ ok, bad *ptx.Reg }

func (g *guarder) function(f *ptx.Function, id int) error {
	r := &fnRewriter{g: g, f: f, id: int64(id), regs: map[string]ptx.Type{}, families: map[string]ptx.Type{},
		masks: map[int]*ptx.Reg{}, shLimK: map[spanK]*ptx.Reg{}, shared: map[string]*ptx.Var{}, params: map[string]*ptx.Var{},
		branchTgt: map[string]int{}, callTgt: map[string][]string{}}
	r.index()
	ptx.Inspect(f.Body, func(n ptx.Node) bool {
		if in, ok := n.(*ptx.Instruction); ok && !r.recorded {
			accs, _ := accessesOf(f.Name, in)
			for _, a := range accs {
				if !a.hint {
					r.recorded = true
				}
			}
		}
		return !r.recorded
	})
	if r.recorded {
		// Created up front: every flush compares the address register with lo.
		r.needLo()
		r.countReg()
	}
	r.specialize()
	r.facts = analyze(r)
	if err := r.block(f.Body, true); err != nil {
		return err
	}
	// A body that falls off its end returns: flush there too. Then the
	// out-of-line blocks that write the record.
	if r.recorded {
		if !endsFlow(f.Body) {
			ret := ins("ret")
			f.Body.Stmts = append(f.Body.Stmts, r.flushOut(ret)...)
			f.Body.Stmts = append(f.Body.Stmts, ret)
		}
		f.Body.Stmts = append(f.Body.Stmts, r.slowBlocks()...)
	}
	r.finish()
	return nil
}

// endsFlow reports whether b's last statement is an unconditional ret, exit
// or branch: nothing falls off its end.
func endsFlow(b *ptx.Block) bool {
	if len(b.Stmts) == 0 {
		return false
	}
	in, ok := b.Stmts[len(b.Stmts)-1].(*ptx.Instruction)
	if !ok || in.Guard != nil {
		return false
	}
	switch in.Opcode {
	case "ret", "exit", "bra":
		return true
	}
	return false
}

// index records the function's declarations.
func (r *fnRewriter) index() {
	var names []string
	ptx.Inspect(r.f.Body, func(n ptx.Node) bool {
		switch n := n.(type) {
		case *ptx.Var:
			switch n.Space {
			case ptx.SpaceReg:
				if n.Count > 0 {
					r.families[n.Name] = n.Type
				} else {
					r.regs[n.Name] = n.Type
				}
				names = append(names, n.Name)
			case ptx.SpaceShared:
				r.shared[n.Name] = n
			case ptx.SpaceParam:
				r.params[n.Name] = n
			}
			return false
		case *ptx.Directive:
			switch n.Name {
			case ".branchtargets":
				k := 0
				for _, grp := range n.Args {
					k += len(grp)
				}
				r.branchTgt[n.Label] = k
			case ".calltargets":
				var fs []string
				for _, grp := range n.Args {
					for _, o := range grp {
						if s, ok := o.(*ptx.Symbol); ok {
							fs = append(fs, s.Name)
						}
					}
				}
				r.callTgt[n.Label] = fs
			}
			return false
		}
		return true
	})
	for _, s := range r.f.Body.Stmts {
		if v, ok := s.(*ptx.Var); ok && v.Space == ptx.SpaceLocal {
			r.localVars = append(r.localVars, v)
		}
	}
	r.labels = map[string]bool{}
	ptx.Inspect(r.f.Body, func(n ptx.Node) bool {
		if l, ok := n.(*ptx.Label); ok {
			r.labels[l.Name] = true
		}
		return true
	})
	for i := 0; ; i++ {
		p := "$gd" + strconv.Itoa(i) + "_"
		clash := false
		for l := range r.labels {
			if strings.HasPrefix(l, p) {
				clash = true
				break
			}
		}
		if !clash {
			r.lprefix = p
			break
		}
	}
	for _, p := range append(append([]*ptx.Var{}, r.f.Params...), r.f.Returns...) {
		names = append(names, p.Name)
		r.params[p.Name] = p
	}
	// A prefix no declared name starts with, so that our registers collide with nothing.
	for i := 0; ; i++ {
		p := "%gd"
		if i > 0 {
			p = "%gd" + strconv.Itoa(i) + "_"
		}
		clash := false
		for _, n := range names {
			if strings.HasPrefix(n, p) {
				clash = true
				break
			}
		}
		if !clash {
			r.prefix = p
			return
		}
	}
}

// regType returns a declared register's type, TypeNone if unknown.
func (r *fnRewriter) regType(name string) ptx.Type {
	if t, ok := r.regs[name]; ok {
		return t
	}
	base := strings.TrimRightFunc(name, func(c rune) bool { return c >= '0' && c <= '9' })
	if base != name {
		if t, ok := r.families[base]; ok {
			return t
		}
	}
	return ptx.TypeNone
}

func (r *fnRewriter) q() *ptx.Reg {
	r.nq++
	return &ptx.Reg{Name: fmt.Sprintf("%sq%d", r.prefix, r.nq-1)}
}
func (r *fnRewriter) w() *ptx.Reg {
	r.nr++
	return &ptx.Reg{Name: fmt.Sprintf("%sr%d", r.prefix, r.nr-1)}
}
func (r *fnRewriter) p() *ptx.Reg {
	r.np++
	return &ptx.Reg{Name: fmt.Sprintf("%sp%d", r.prefix, r.np-1)}
}

func ins(name string, ops ...ptx.Operand) *ptx.Instruction { return ptx.NewInstruction(name, ops...) }
func imm(v int64) *ptx.Int                                 { return &ptx.Int{Value: v} }
func addr(base ptx.Operand, off int64) *ptx.Address        { return &ptx.Address{Base: base, Offset: off} }

func when(in *ptx.Instruction, p *ptx.Reg, neg bool) *ptx.Instruction {
	in.Guard = &ptx.Guard{Reg: p, Negated: neg}
	return in
}

func guardKey(gd *ptx.Guard) string {
	if gd == nil {
		return ""
	}
	if gd.Negated {
		return "!" + gd.Reg.Name
	}
	return gd.Reg.Name
}

// guardOperand is the guard as a predicate source operand ("%p" or "!%p").
func guardOperand(gd *ptx.Guard) ptx.Operand {
	if gd.Negated {
		return &ptx.Not{X: &ptx.Reg{Name: gd.Reg.Name}}
	}
	return &ptx.Reg{Name: gd.Reg.Name}
}

// ---- prologue values --------------------------------------------------------

func (r *fnRewriter) needLo() *ptx.Reg {
	if r.lo == nil {
		r.lo = r.q()
	}
	return r.lo
}

func (r *fnRewriter) mask(width int) *ptx.Reg {
	if r.smask == nil {
		r.smask = r.q()
	}
	if width == 1 {
		return r.smask
	}
	m, ok := r.masks[width]
	if !ok {
		m = r.q()
		r.masks[width] = m
	}
	return m
}

// sinkAddr is the address of SinkVar, which the module then declares.
func (r *fnRewriter) sinkAddr() *ptx.Reg {
	if r.sink == nil {
		r.sink = r.q()
		r.g.sinkUsed = true
	}
	return r.sink
}

func (r *fnRewriter) globalsBase() *ptx.Reg {
	if r.gbase == nil {
		r.gbase = r.q()
	}
	return r.gbase
}

func (r *fnRewriter) sharedLimit() *ptx.Reg {
	if r.shLim == nil {
		r.shLim = r.w()
	}
	return r.shLim
}

// spanK keys the shared limits: a range of span bytes whose start is
// aligned to 2^k.
type spanK struct{ span, k int }

// sharedLimitK is the bound of a rotated shared address for an access of
// 2^k bytes aligned to its width (see shared32).
func (r *fnRewriter) sharedLimitK(k int) *ptx.Reg { return r.sharedLimitSpan(1<<k, k) }

// sharedLimitSpan is (limit - span + 2^k) >> k, 0 when that is negative: a
// start s aligned to 2^k has s+span <= limit exactly when s>>k is below it.
func (r *fnRewriter) sharedLimitSpan(span, k int) *ptx.Reg {
	r.sharedLimit()
	if span == 1 && k == 0 {
		return r.shLim
	}
	key := spanK{span, k}
	l, ok := r.shLimK[key]
	if !ok {
		l = r.w()
		r.shLimK[key] = l
	}
	return l
}

func (r *fnRewriter) sharedLimit64() *ptx.Reg {
	r.sharedLimit()
	if r.shLim64 == nil {
		r.shLim64 = r.q()
	}
	return r.shLim64
}

func (r *fnRewriter) genericSharedBase() *ptx.Reg {
	if r.gsb == nil {
		r.gsb = r.q()
	}
	return r.gsb
}

func (r *fnRewriter) localRange() *spanRange {
	if r.local == nil && len(r.localVars) > 0 {
		r.local = &spanRange{lo: r.q()}
		if len(r.localVars) == 1 {
			size, _, _ := varShape(r.localVars[0])
			r.local.size = int64(size)
		} else {
			r.local.sizeReg = r.q()
		}
	}
	return r.local
}

func (r *fnRewriter) constRange() *spanRange {
	if r.cnst == nil {
		r.cnst = &spanRange{lo: r.q(), sizeReg: r.q()}
	}
	return r.cnst
}

func (r *fnRewriter) genericConstRange() *spanRange {
	if r.gconst == nil {
		r.constRange()
		r.gconst = &spanRange{lo: r.q(), sizeReg: r.cnst.sizeReg}
	}
	return r.gconst
}

// paramRange is the kernel's parameters in .param space: from the lowest
// parameter's address to the highest one's end, whatever the layout (the
// addresses are constants ptxas folds). nil outside a kernel or without
// parameters.
func (r *fnRewriter) paramRange() *spanRange {
	if r.kparam == nil && r.f.Entry && len(r.f.Params) > 0 {
		for _, p := range r.f.Params {
			if p.Space != ptx.SpaceParam || p.Size() <= 0 {
				return nil
			}
		}
		r.kparam = &spanRange{lo: r.q()}
		if len(r.f.Params) == 1 {
			r.kparam.size = int64(r.f.Params[0].Size())
		} else {
			r.kparam.sizeReg = r.q()
		}
	}
	return r.kparam
}

// genericParamRange is paramRange as generic addresses (cvta.param of its
// lowest address, the same size).
func (r *fnRewriter) genericParamRange() *spanRange {
	if r.gparam == nil {
		kp := r.paramRange()
		if kp == nil {
			return nil
		}
		r.gparam = &spanRange{lo: r.q(), size: kp.size, sizeReg: kp.sizeReg}
	}
	return r.gparam
}

// finish declares the guard's registers and inserts the prologue after the
// body's leading declarations.
func (r *fnRewriter) finish() {
	var pro []ptx.Stmt
	add := func(in *ptx.Instruction) { pro = append(pro, in) }
	pv := &ptx.Symbol{Name: ParamsVar}
	if r.lo != nil {
		add(ins("ld.const.u64", r.lo, addr(pv, paramLo)))
	}
	if r.smask != nil {
		add(ins("ld.const.u64", r.smask, addr(pv, paramMask)))
		for _, wd := range sortedKeys(r.masks) {
			if off := paramMaskW(wd); off != 0 {
				add(ins("ld.const.u64", r.masks[wd], addr(pv, int64(off))))
			} else {
				add(ins("or.b64", r.masks[wd], r.smask, imm(int64(wd-1))))
			}
		}
	}
	if r.gbase != nil {
		add(ins("ld.const.u64", r.gbase, addr(pv, paramGlobals)))
	}
	if r.sink != nil {
		add(ins("mov.u64", r.sink, &ptx.Symbol{Name: SinkVar}))
	}
	if r.shLim != nil {
		t := r.w()
		add(ins("mov.u32", t, &ptx.Reg{Name: "%total_smem_size"}))
		add(ins("ld.const.u32", r.shLim, addr(pv, paramReserve)))
		add(ins("add.u32", r.shLim, r.shLim, t))
		if dyn := r.g.dynamicShared(); dyn != "" {
			// The block's shared memory ends with its dynamic part, whose
			// end is exact, where %total_smem_size is rounded up to the
			// allocation granularity: a word past a 132-byte dynamic array
			// lies inside the rounding. The lesser of the two is the limit.
			e, d := r.w(), r.w()
			add(ins("mov.u32", e, &ptx.Symbol{Name: dyn}))
			add(ins("mov.u32", d, &ptx.Reg{Name: "%dynamic_smem_size"}))
			add(ins("add.u32", e, e, d))
			add(ins("min.u32", r.shLim, r.shLim, e))
		}
		for _, sk := range sortedSpanKeys(r.shLimK) {
			l := r.shLimK[sk]
			if d := sk.span - 1<<sk.k; d != 0 {
				// limit < 2^31 (shared memory is at most a few hundred KiB),
				// so the signed subtraction cannot wrap.
				add(ins("sub.s32", l, r.shLim, imm(int64(d))))
				add(ins("max.s32", l, l, imm(0)))
				add(ins("shr.u32", l, l, imm(int64(sk.k))))
			} else {
				add(ins("shr.u32", l, r.shLim, imm(int64(sk.k))))
			}
		}
		if r.shLim64 != nil {
			add(ins("cvt.u64.u32", r.shLim64, r.shLim))
		}
	}
	if r.gsb != nil {
		add(ins("mov.u64", r.gsb, imm(0)))
		add(ins("cvta.shared.u64", r.gsb, r.gsb))
	}
	if r.local != nil {
		pro = append(pro, r.rangeOf(r.local, r.localVars, "")...)
		if r.localGeneric != nil {
			add(ins("cvta.local.u64", r.localGeneric, r.local.lo))
		}
	}
	if r.cnst != nil {
		pro = append(pro, r.rangeOf(r.cnst, r.g.consts, "")...)
		if r.gconst != nil {
			add(ins("cvta.const.u64", r.gconst.lo, r.cnst.lo))
		}
	}
	if kp := r.kparam; kp != nil {
		add(ins("mov.u64", kp.lo, &ptx.Symbol{Name: r.f.Params[0].Name}))
		if kp.sizeReg != nil {
			// The size register holds the end until the last subtraction.
			t := r.q()
			add(ins("add.u64", kp.sizeReg, kp.lo, imm(int64(r.f.Params[0].Size()))))
			for _, p := range r.f.Params[1:] {
				add(ins("mov.u64", t, &ptx.Symbol{Name: p.Name}))
				add(ins("min.u64", kp.lo, kp.lo, t))
				add(ins("add.u64", t, t, imm(int64(p.Size()))))
				add(ins("max.u64", kp.sizeReg, kp.sizeReg, t))
			}
			add(ins("sub.u64", kp.sizeReg, kp.sizeReg, kp.lo))
		}
	}
	if r.gparam != nil {
		add(ins("cvta.param.u64", r.gparam.lo, r.kparam.lo))
	}
	if r.recorded {
		add(ins("mov.u32", r.countReg(), imm(0)))
		if r.lo != nil {
			add(ins("mov.b64", r.a, r.lo))
		}
	}
	var late []ptx.Stmt
	if r.variant != nil {
		pro, late = r.splitPrologue(pro)
	}
	var decls []ptx.Stmt
	for _, d := range []struct {
		n int
		t ptx.Type
		s string
	}{{r.nq, ptx.TypeB64, "q"}, {r.nr, ptx.TypeB32, "r"}, {r.np, ptx.TypePred, "p"}} {
		if d.n > 0 {
			decls = append(decls, &ptx.Var{Space: ptx.SpaceReg, Type: d.t, Name: r.prefix + d.s, Count: d.n})
		}
	}
	body := r.f.Body.Stmts
	at := 0
	for at < len(body) {
		if _, ok := body[at].(*ptx.Var); !ok {
			break
		}
		at++
	}
	out := make([]ptx.Stmt, 0, len(body)+len(decls)+len(pro)+len(late))
	out = append(out, decls...)
	out = append(out, body[:at]...)
	out = append(out, pro...)
	for _, s := range body[at:] {
		out = append(out, s)
		if l, ok := s.(*ptx.Label); ok && r.variant != nil && l.Name == r.variant.label {
			out = append(out, late...)
		}
	}
	r.f.Body.Stmts = out
}

// splitPrologue appends the entry check to the prologue of a kernel with
// two variants and moves the values only the checked variant uses (the
// shared bounds of its checks) past the branch, so the fast variant does
// not compute them.
func (r *fnRewriter) splitPrologue(pro []ptx.Stmt) (early, late []ptx.Stmt) {
	used := map[string]bool{}
	note := func(n ptx.Node) {
		ptx.Inspect(n, func(x ptx.Node) bool {
			if rg, ok := x.(*ptx.Reg); ok {
				used[rg.Name] = true
			}
			return true
		})
	}
	for _, s := range r.f.Body.Stmts {
		if l, ok := s.(*ptx.Label); ok && l.Name == r.variant.label {
			break
		}
		if _, ok := s.(*ptx.Var); !ok {
			note(s)
		}
	}
	check := r.entryCheck()
	for _, s := range check {
		note(s)
	}
	keep := make([]bool, len(pro))
	for i := len(pro) - 1; i >= 0; i-- {
		in, ok := pro[i].(*ptx.Instruction)
		if !ok {
			keep[i] = true
			continue
		}
		for _, d := range defsOf(in) {
			keep[i] = keep[i] || used[d]
		}
		if keep[i] {
			for _, o := range in.Operands[1:] {
				note(o)
			}
		}
	}
	for i, s := range pro {
		if keep[i] {
			early = append(early, s)
		} else {
			late = append(late, s)
		}
	}
	return append(early, check...), late
}

// rangeOf computes [lo, lo+size) covering the variables vs: their lowest
// address and highest end. With one variable the size is an immediate.
func (r *fnRewriter) rangeOf(sr *spanRange, vs []*ptx.Var, _ string) []ptx.Stmt {
	var out []ptx.Stmt
	if sr.sizeReg == nil { // one variable: its size is known
		return append(out, ins("mov.u64", sr.lo, &ptx.Symbol{Name: vs[0].Name}))
	}
	end := sr.sizeReg
	t := r.q()
	for i, v := range vs {
		size, _, _ := varShape(v)
		if i == 0 {
			out = append(out, ins("mov.u64", sr.lo, &ptx.Symbol{Name: v.Name}))
			out = append(out, ins("add.u64", end, sr.lo, imm(int64(size))))
			continue
		}
		out = append(out, ins("mov.u64", t, &ptx.Symbol{Name: v.Name}))
		out = append(out, ins("min.u64", sr.lo, sr.lo, t))
		out = append(out, ins("add.u64", t, t, imm(int64(size))))
		out = append(out, ins("max.u64", end, end, t))
	}
	// The size register holds the end until here.
	out = append(out, ins("sub.u64", end, end, sr.lo))
	return out
}

func sortedKeys[V any](m map[int]V) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}

func sortedSpanKeys(m map[spanK]*ptx.Reg) []spanK {
	ks := make([]spanK, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].span != ks[j].span {
			return ks[i].span < ks[j].span
		}
		return ks[i].k < ks[j].k
	})
	return ks
}

func log2(w int) int { return bits.TrailingZeros(uint(w)) }
