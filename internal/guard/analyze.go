package guard

import (
	"strconv"
	"strings"

	"github.com/gpuos/gpuos/internal/ptx"
)

// Hoisted checks. A register that is defined exactly once, by an instruction
// without a guard, at a point that dominates every memory access that uses
// it as its base, and that is used as the base in one state space only, is
// checked once, right after its definition, for the whole range its accesses
// cover ([reg+min offset, reg+max end)) and for the alignment they need.
// Its accesses are then predicated on that one result: tiled kernels, whose
// shared-memory addresses are computed once and read at a dozen constant
// offsets in an unrolled loop, pay nothing per access. A thread that computes
// an address it never uses for an access is not a violation: the violation
// is recorded where an access executes (once per block and register), not at
// the definition.

// facts are what the analysis found for one function.
type facts struct {
	hoist map[string]*hoisted // by register name
	defAt map[*ptx.Instruction][]string
	// proven are the shared accesses the range analysis proved in bounds
	// (ranges.go): statically, or in the fast variant under its entry check.
	proven map[*ptx.Instruction]bool
	// paramAt are parameter loads through a register that holds exactly a
	// kernel parameter's address plus a constant (mov.b64 %rd, p; [%rd+8]),
	// inside the parameter and aligned: the address the access becomes.
	paramAt map[*ptx.Instruction]*ptx.Address
	// inLoop are the instructions that may run more than once per call
	// (an over-approximation: everything when the flow is not resolved).
	inLoop map[*ptx.Instruction]bool
}

// hoisted is a register whose accesses are checked at its definition: one
// check per distinct (offset, width, alignment) of its accesses.
type hoisted struct {
	reg    string
	space  spaceClass
	bits   int // 32 or 64
	checks []hcheck
	// sets: for each straight-line segment with accesses that have no guard
	// of their own, the checks they use; the segment records a violation
	// when the AND of them fails (all of them execute together).
	sets     map[int][]int
	setPred  map[string]*ptx.Reg      // a set's predicate, by its checks (segments with the same set share it)
	setSafe  map[string]*ptx.Reg      // a set's register address for its loads: reg, or in the sink when the set fails
	guarded  map[int]bool             // checks used by accesses with a guard of their own
	useCheck map[*ptx.Instruction]int // access → its check
	useSeg   map[*ptx.Instruction]int // access → its segment
	useOp    map[*ptx.Instruction]int // access → its address operand
	done     bool
}

// hcheck is one hoisted check: [reg+off, reg+off+width) inside the space,
// reg+off aligned to align. After merge, width is the span of all the
// register's accesses and need not be a power of two.
type hcheck struct {
	off     int64
	width   int
	align   int
	ok, okI *ptx.Reg // the result as a predicate and as 0/1
}

// mergedCheck returns one check of the whole range the checks ks cover,
// [reg+min offset, reg+max end), when one alignment of its start implies
// every access's: each access's offset from the lowest is a multiple of its
// own alignment, and the start is checked for the largest. The spaces are
// contiguous ranges (the window, the block's shared memory, the local and
// const spans), so the ends being inside puts everything between inside.
// Only the checks of one segment are merged: its accesses all execute
// together, so the range holds no address the thread does not access (a
// merge across segments would check offsets of accesses this thread skips:
// in[g-2] under g >= 2). An unrolled tile loop's 32 offsets cost one check
// and keep one predicate live instead of 32 (ptxas otherwise kept the
// checks' values in registers: the tiled GEMM failed to launch).
func (h *hoisted) mergedCheck(ks []int) (hcheck, bool) {
	c0 := h.checks[ks[0]]
	lo, end, al := c0.off, c0.off+int64(c0.width), 1
	for _, k := range ks {
		c := h.checks[k]
		lo = min(lo, c.off)
		end = max(end, c.off+int64(c.width))
		al = max(al, c.align)
	}
	for _, k := range ks {
		c := h.checks[k]
		if (c.off-lo)%int64(c.align) != 0 {
			return hcheck{}, false
		}
	}
	if end-lo > 1<<30 {
		return hcheck{}, false
	}
	return hcheck{off: lo, width: int(end - lo), align: al}, true
}

// paramLoad returns the named address a parameter load through a register
// becomes (see paramAliases), or nil.
func (f *facts) paramLoad(in *ptx.Instruction) *ptx.Address {
	if f == nil {
		return nil
	}
	return f.paramAt[in]
}

// provenAt reports whether in's shared access needs no check (ranges.go).
func (f *facts) provenAt(in *ptx.Instruction) bool { return f != nil && f.proven[in] }

// hoistedFor returns the hoisted check covering an access, or nil.
func (f *facts) hoistedFor(reg string) *hoisted {
	if f == nil {
		return nil
	}
	return f.hoist[reg]
}

// flowNode is an instruction in the flattened body.
type flowNode struct {
	in    *ptx.Instruction
	scope *flowScope
}

type flowScope struct {
	parent  *flowScope
	labels  map[string]int // label → index of the next instruction
	targets map[string][]string
}

func (s *flowScope) label(name string) (int, bool) {
	for ; s != nil; s = s.parent {
		if i, ok := s.labels[name]; ok {
			return i, true
		}
	}
	return 0, false
}

func (s *flowScope) branchTargets(name string) ([]string, bool) {
	for ; s != nil; s = s.parent {
		if t, ok := s.targets[name]; ok {
			return t, true
		}
	}
	return nil, false
}

// flatten lists a body's instructions in order, each with its label scope.
func flatten(body *ptx.Block) []flowNode { return flattenAfter(body, nil) }

// flattenAfter is flatten with instruction first put before the body's
// first, in its outermost scope (nil for none).
func flattenAfter(body *ptx.Block, first *ptx.Instruction) []flowNode {
	var nodes []flowNode
	var walk func(b *ptx.Block, sc *flowScope)
	walk = func(b *ptx.Block, parent *flowScope) {
		sc := &flowScope{parent: parent, labels: map[string]int{}, targets: map[string][]string{}}
		if parent == nil && first != nil {
			nodes = append(nodes, flowNode{in: first, scope: sc})
		}
		for _, s := range b.Stmts {
			switch s := s.(type) {
			case *ptx.Label:
				sc.labels[s.Name] = len(nodes)
			case *ptx.Directive:
				if s.Name == ".branchtargets" {
					var ls []string
					for _, g := range s.Args {
						for _, o := range g {
							if sym, ok := o.(*ptx.Symbol); ok {
								ls = append(ls, sym.Name)
							}
						}
					}
					sc.targets[s.Label] = ls
				}
			case *ptx.Block:
				walk(s, sc)
			case *ptx.Instruction:
				nodes = append(nodes, flowNode{in: s, scope: sc})
			}
		}
	}
	walk(body, nil)
	return nodes
}

// analyze finds the function's hoistable registers.
func analyze(r *fnRewriter) *facts {
	f := &facts{hoist: map[string]*hoisted{}, defAt: map[*ptx.Instruction][]string{}, proven: r.proven}
	// A kernel with two variants starts with the entry check's branch to
	// the checked one (finish emits it in the prologue, before any of the
	// body's instructions): without it the checked copy would be
	// unreachable here and none of its registers' checks hoisted.
	var entry *ptx.Instruction
	if r.variant != nil {
		entry = when(ins("bra", &ptx.Symbol{Name: r.variant.label}), &ptx.Reg{Name: "%__gpuos_entry"}, true)
	}
	nodes := flattenAfter(r.f.Body, entry)
	if len(nodes) == 0 || len(nodes) > 200000 {
		return f
	}
	cfg := buildFlow(nodes)
	f.inLoop = map[*ptx.Instruction]bool{}
	if cfg.unresolved {
		for _, n := range nodes {
			f.inLoop[n.in] = true
		}
	} else {
		loops := cfg.loopBlocks()
		for i, n := range nodes {
			if loops[cfg.block[i]] {
				f.inLoop[n.in] = true
			}
		}
	}

	// Definitions and declarations.
	defs := map[string][]int{}
	for i, n := range nodes {
		for _, d := range defsOf(n.in) {
			defs[d] = append(defs[d], i)
		}
	}
	shadowed := shadowedRegs(r.f.Body)
	f.paramAt = paramAliases(r, nodes, cfg, defs, shadowed)

	// Memory uses of registers as bases.
	type use struct {
		node int
		acc  access
		off  int64
	}
	uses := map[string][]use{}
	bad := map[string]bool{}
	for i, n := range nodes {
		accs, err := accessesOf(r.f.Name, n.in)
		if err != nil || len(accs) == 0 || f.provenAt(n.in) || f.paramAt[n.in] != nil {
			continue
		}
		for _, acc := range accs {
			a, ok := n.in.Operands[acc.op].(*ptx.Address)
			if !ok {
				continue
			}
			b, ok := a.Base.(*ptx.Reg)
			if !ok {
				continue
			}
			if len(accs) > 1 || acc.size != nil || acc.hint || acc.space == spGeneric || acc.space.constantBank() {
				bad[b.Name] = true
				continue
			}
			uses[b.Name] = append(uses[b.Name], use{node: i, acc: acc, off: a.Offset})
		}
	}
	for reg, us := range uses {
		if bad[reg] || shadowed[reg] || len(defs[reg]) != 1 {
			continue
		}
		d := defs[reg][0]
		def := nodes[d].in
		if def.Guard != nil || !definesOnly(def, reg) {
			continue
		}
		bits := r.regType(reg).Bits()
		if bits != 32 && bits != 64 {
			continue
		}
		h := &hoisted{reg: reg, space: us[0].acc.space, bits: bits, sets: map[int][]int{}, guarded: map[int]bool{},
			setPred: map[string]*ptx.Reg{}, setSafe: map[string]*ptx.Reg{}, useCheck: map[*ptx.Instruction]int{}, useSeg: map[*ptx.Instruction]int{},
			useOp: map[*ptx.Instruction]int{}}
		okAll := true
		for _, u := range us {
			if u.acc.space != h.space || !cfg.dominates(d, u.node) || u.off < -(1<<30) || u.off > 1<<30 {
				okAll = false
				break
			}
			k := -1
			for i, c := range h.checks {
				if c.off == u.off && c.width == u.acc.width && c.align == u.acc.align {
					k = i
				}
			}
			if k < 0 {
				k = len(h.checks)
				h.checks = append(h.checks, hcheck{off: u.off, width: u.acc.width, align: u.acc.align})
			}
			in := nodes[u.node].in
			h.useCheck[in] = k
			h.useOp[in] = u.acc.op
			if in.Guard == nil {
				seg := cfg.segment[u.node]
				h.useSeg[in] = seg
				if !containsInt(h.sets[seg], k) {
					h.sets[seg] = append(h.sets[seg], k)
				}
			} else {
				h.guarded[k] = true
			}
		}
		if !okAll || len(h.checks) > 256 {
			continue
		}
		if (h.space == spGlobal && bits != 64) || (h.space == spShared && bits != 32) {
			continue
		}
		f.hoist[reg] = h
		f.defAt[def] = append(f.defAt[def], reg)
	}
	return f
}

// definesOnly reports whether in's destination is the register itself (not a
// vector or pair that also writes others, which is fine too, but keep it simple).
func definesOnly(in *ptx.Instruction, reg string) bool {
	if len(in.Operands) == 0 {
		return false
	}
	r, ok := in.Operands[0].(*ptx.Reg)
	return ok && r.Name == reg
}

// shadowedRegs lists register names declared in more than one block: such a
// name can mean two registers, so no fact about it is trusted.
func shadowedRegs(body *ptx.Block) map[string]bool {
	exact := map[string]int{}
	fams := map[string][]int{} // family base name → the counts declared
	var walk func(b *ptx.Block)
	walk = func(b *ptx.Block) {
		for _, s := range b.Stmts {
			switch s := s.(type) {
			case *ptx.Var:
				if s.Space != ptx.SpaceReg {
					continue
				}
				if s.Count > 0 {
					fams[s.Name] = append(fams[s.Name], s.Count)
				} else {
					exact[s.Name]++
				}
			case *ptx.Block:
				walk(s)
			}
		}
	}
	walk(body)
	out := map[string]bool{}
	for name, n := range exact {
		base := strings.TrimRightFunc(name, func(c rune) bool { return c >= '0' && c <= '9' })
		if k, err := strconv.Atoi(name[len(base):]); err == nil && base != name {
			for _, c := range fams[base] {
				if k < c {
					n++
				}
			}
		}
		if n > 1 {
			out[name] = true
		}
	}
	for base, cs := range fams {
		if len(cs) > 1 {
			m := 0
			for _, c := range cs {
				m = max(m, c)
			}
			for k := 0; k < m && k < 1<<16; k++ {
				out[base+strconv.Itoa(k)] = true
			}
		}
	}
	return out
}

// flow is the control-flow graph of a function's flattened instructions.
type flow struct {
	// unresolved: a branch whose target this analysis could not find; then
	// no dominance is claimed at all.
	unresolved bool
	block      []int   // instruction → basic block
	segment    []int   // instruction → straight-line segment: basic blocks, also split after calls
	start      []int   // basic block → first instruction
	idom       []int   // basic block → immediate dominator (-1 for the entry and unreachable blocks)
	rpo        []int   // reverse postorder number; -1 when unreachable
	succ       [][]int // basic block → successors
}

func isJump(in *ptx.Instruction) bool {
	switch in.Opcode {
	case "bra", "brx", "ret", "exit", "trap", "brkpt":
		return true
	}
	return false
}

func buildFlow(nodes []flowNode) *flow {
	n := len(nodes)
	leader := make([]bool, n+1)
	leader[0] = true
	target := func(i int, name string) (int, bool) { return nodes[i].scope.label(name) }
	for i, nd := range nodes {
		if isJump(nd.in) && i+1 < n {
			leader[i+1] = true
		}
		switch nd.in.Opcode {
		case "bra":
			if len(nd.in.Operands) > 0 {
				if s, ok := nd.in.Operands[0].(*ptx.Symbol); ok {
					if t, ok := target(i, s.Name); ok && t < n {
						leader[t] = true
					}
				}
			}
		case "brx":
			if len(nd.in.Operands) == 2 {
				if s, ok := nd.in.Operands[1].(*ptx.Symbol); ok {
					ls, _ := nd.scope.branchTargets(s.Name)
					for _, l := range ls {
						if t, ok := target(i, l); ok && t < n {
							leader[t] = true
						}
					}
				}
			}
		}
	}
	// Labels are leaders too (a branch from a scope we did not resolve).
	for _, nd := range nodes {
		for _, i := range nd.scope.labels {
			if i < n {
				leader[i] = true
			}
		}
	}
	fl := &flow{block: make([]int, n), segment: make([]int, n)}
	seg := -1
	for i := 0; i < n; i++ {
		if leader[i] {
			fl.start = append(fl.start, i)
		}
		fl.block[i] = len(fl.start) - 1
		// A call may not return (a device function can exit the thread).
		if leader[i] || (i > 0 && nodes[i-1].in.Opcode == "call") {
			seg++
		}
		fl.segment[i] = seg
	}
	nb := len(fl.start)
	fl.succ = make([][]int, nb)
	for b := 0; b < nb; b++ {
		last := n - 1
		if b+1 < nb {
			last = fl.start[b+1] - 1
		}
		in := nodes[last].in
		fall := last+1 < n
		add := func(i int) { fl.succ[b] = append(fl.succ[b], fl.block[i]) }
		switch in.Opcode {
		case "bra":
			var s *ptx.Symbol
			ok := len(in.Operands) > 0
			if ok {
				s, ok = in.Operands[0].(*ptx.Symbol)
			}
			if ok {
				if t, found := target(last, s.Name); found && t < n {
					add(t)
				} else {
					ok = false
				}
			}
			fl.unresolved = fl.unresolved || !ok
			fall = fall && in.Guard != nil
		case "brx":
			if len(in.Operands) == 2 {
				if s, ok := in.Operands[1].(*ptx.Symbol); ok {
					ls, found := nodes[last].scope.branchTargets(s.Name)
					fl.unresolved = fl.unresolved || !found
					for _, l := range ls {
						if t, ok := target(last, l); ok && t < n {
							add(t)
						} else {
							fl.unresolved = true
						}
					}
				}
			} else {
				fl.unresolved = true
			}
			fall = fall && in.Guard != nil
		case "ret", "exit", "trap", "brkpt":
			fall = fall && in.Guard != nil
		}
		if fall {
			add(last + 1)
		}
	}
	fl.dominators()
	return fl
}

// dominators computes immediate dominators (Cooper, Harvey and Kennedy).
func (fl *flow) dominators() {
	nb := len(fl.start)
	fl.rpo = make([]int, nb)
	for i := range fl.rpo {
		fl.rpo[i] = -1
	}
	var order []int
	seen := make([]bool, nb)
	// Iterative DFS for postorder.
	type frame struct{ b, next int }
	stack := []frame{{0, 0}}
	seen[0] = true
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next < len(fl.succ[top.b]) {
			s := fl.succ[top.b][top.next]
			top.next++
			if !seen[s] {
				seen[s] = true
				stack = append(stack, frame{s, 0})
			}
			continue
		}
		order = append(order, top.b)
		stack = stack[:len(stack)-1]
	}
	for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
		order[i], order[j] = order[j], order[i]
	}
	for i, b := range order {
		fl.rpo[b] = i
	}
	preds := make([][]int, nb)
	for b, ss := range fl.succ {
		for _, s := range ss {
			preds[s] = append(preds[s], b)
		}
	}
	fl.idom = make([]int, nb)
	for i := range fl.idom {
		fl.idom[i] = -1
	}
	fl.idom[0] = 0
	intersect := func(a, b int) int {
		for a != b {
			for fl.rpo[a] > fl.rpo[b] {
				a = fl.idom[a]
			}
			for fl.rpo[b] > fl.rpo[a] {
				b = fl.idom[b]
			}
		}
		return a
	}
	for changed := true; changed; {
		changed = false
		for _, b := range order[1:] {
			nd := -1
			for _, p := range preds[b] {
				if fl.idom[p] == -1 {
					continue
				}
				if nd == -1 {
					nd = p
				} else {
					nd = intersect(p, nd)
				}
			}
			if nd != -1 && fl.idom[b] != nd {
				fl.idom[b] = nd
				changed = true
			}
		}
	}
	fl.idom[0] = -1
}

// dominates reports whether instruction d executes before instruction u on
// every path from the function's entry to u.
func (fl *flow) dominates(d, u int) bool {
	bd, bu := fl.block[d], fl.block[u]
	if fl.unresolved || fl.rpo[bu] < 0 || fl.rpo[bd] < 0 {
		return false
	}
	if bd == bu {
		return d < u
	}
	for b := bu; b != -1; b = fl.idom[b] {
		if b == bd {
			return true
		}
		if b == 0 {
			break
		}
	}
	return false
}

// loopBlocks marks the blocks that may lie on a cycle, roughly: those
// between a back edge's head and its source in reverse postorder.
func (fl *flow) loopBlocks() []bool {
	nb := len(fl.start)
	in := make([]bool, nb)
	for b := 0; b < nb; b++ {
		for _, s := range fl.succ[b] {
			if fl.rpo[b] >= 0 && fl.rpo[s] >= 0 && fl.rpo[s] <= fl.rpo[b] {
				for x := 0; x < nb; x++ {
					if fl.rpo[x] >= fl.rpo[s] && fl.rpo[x] <= fl.rpo[b] {
						in[x] = true
					}
				}
			}
		}
	}
	return in
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// paramAliases finds the parameter loads whose register address is exactly
// a kernel parameter's address plus a constant: the register has one
// definition, an unguarded mov of the parameter (or of such a register)
// or an add of a constant to such a register, each definition dominating
// the next and the last dominating the access, so the register holds that
// value wherever the access runs. nvcc leaves such loads of struct
// parameters in cuBLAS (mov.b64 %rd7, p; mov.u64 %rd1, %rd7; ld.param
// [%rd1+16]); inside the parameter they need no check.
func paramAliases(r *fnRewriter, nodes []flowNode, cfg *flow, defs map[string][]int, shadowed map[string]bool) map[*ptx.Instruction]*ptx.Address {
	out := map[*ptx.Instruction]*ptx.Address{}
	if !r.f.Entry || cfg.unresolved {
		return out
	}
	params := map[string]*ptx.Var{}
	for _, p := range r.f.Params {
		params[p.Name] = p
	}
	type alias struct {
		param string
		off   int64
		def   int
		ok    bool
	}
	memo := map[string]alias{}
	var resolve func(reg string, depth int) alias
	resolve = func(reg string, depth int) alias {
		if a, done := memo[reg]; done {
			return a
		}
		var a alias
		memo[reg] = a // cycles resolve to nothing
		if depth == 0 || shadowed[reg] || len(defs[reg]) != 1 {
			return a
		}
		d := defs[reg][0]
		in := nodes[d].in
		if in.Guard != nil || !definesOnly(in, reg) || len(in.Operands) < 2 {
			return a
		}
		from := func(o ptx.Operand) alias {
			switch o := o.(type) {
			case *ptx.Symbol:
				if p := params[o.Name]; p != nil && !o.Generic {
					return alias{param: o.Name, off: o.Offset, def: d, ok: true}
				}
			case *ptx.Reg:
				if b := resolve(o.Name, depth-1); b.ok && cfg.dominates(b.def, d) {
					return alias{param: b.param, off: b.off, def: d, ok: true}
				}
			}
			return alias{}
		}
		switch {
		case in.Opcode == "mov" && len(in.Operands) == 2:
			a = from(in.Operands[1])
		case in.Opcode == "add" && len(in.Operands) == 3 && in.Type().Bits() == 64:
			if k, isInt := in.Operands[2].(*ptx.Int); isInt && k.Value > -(1<<20) && k.Value < 1<<20 {
				if a = from(in.Operands[1]); a.ok {
					a.off += k.Value
				}
			}
		}
		memo[reg] = a
		return a
	}
	for i, n := range nodes {
		in := n.in
		if in.Opcode != "ld" || in.StateSpace() != ptx.SpaceParam || len(in.Operands) < 2 || in.Guard != nil {
			continue
		}
		ad, ok := in.Operands[1].(*ptx.Address)
		if !ok {
			continue
		}
		b, ok := ad.Base.(*ptx.Reg)
		if !ok {
			continue
		}
		a := resolve(b.Name, 8)
		if !a.ok || !cfg.dominates(a.def, i) {
			continue
		}
		p := params[a.param]
		off, w := a.off+ad.Offset, int64(in.AccessSize())
		if w <= 0 || off < 0 || off+w > int64(p.Size()) || off%w != 0 || int64(p.Alignment()) < w {
			continue
		}
		out[in] = &ptx.Address{Base: &ptx.Symbol{Name: a.param}, Offset: off}
	}
	return out
}
