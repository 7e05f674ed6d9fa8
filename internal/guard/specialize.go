package guard

import (
	"strings"

	"github.com/gpuos/gpuos/internal/ptx"
)

// Two variants of a kernel in one body. When the range analysis (ranges.go)
// proves shared accesses in bounds only for some launches — those whose
// block shape, dynamic shared memory and variable placement satisfy its
// conditions — the kernel's body becomes:
//
//	prologue; P := every condition, evaluated once per thread
//	@!P bra checked
//	fast variant: the original code; the proven accesses unchecked
//	checked: a copy of the original code, every access checked as before
//
// The copy has its own labels and registers (renamed), so each variant's
// registers keep a single definition and the hoisting analysis works on
// both. A thread decides with values of its own launch only (%ntid, the
// symbols' addresses, %total_smem_size), so no launch can reach the fast
// variant without its conditions holding: a larger block than the proofs
// allow runs the checked variant and stays isolated. The driver needs to
// pass nothing.

// specialize runs the range analysis and, when worthwhile, appends the
// checked variant to the body. It sets r.proven.
func (r *fnRewriter) specialize() {
	res := analyzeRanges(r)
	if res == nil {
		return
	}
	r.proven = map[*ptx.Instruction]bool{}
	for in := range res.static {
		r.proven[in] = true
	}
	// Worth a second variant: enough proven accesses, or any in a loop.
	// Otherwise the entry check would cost about what it saves.
	if !r.f.Entry || len(res.shape) == 0 || res.hot < 3 {
		return
	}
	body := r.f.Body
	cl := r.newCloner()
	var copyStmts []ptx.Stmt
	for _, s := range body.Stmts {
		switch s.(type) {
		case *ptx.Var, *ptx.Prototype:
			continue // declarations of the body, shared by both variants
		}
		copyStmts = append(copyStmts, cl.stmt(s))
	}
	for orig, c := range cl.ins {
		if res.static[orig] {
			r.proven[c] = true
		}
	}
	for in := range res.shape {
		r.proven[in] = true
	}
	slow := r.lprefix + "checked"
	var decls []ptx.Stmt
	for _, s := range body.Stmts {
		v, ok := s.(*ptx.Var)
		if !ok || v.Space != ptx.SpaceReg {
			continue
		}
		nv := *v
		nv.Name = cl.regs[v.Name]
		decls = append(decls, &nv)
		if nv.Count > 0 {
			r.families[nv.Name] = nv.Type
		} else {
			r.regs[nv.Name] = nv.Type
		}
	}
	stmts := append(decls, body.Stmts...)
	if !endsFlow(body) {
		stmts = append(stmts, ins("ret"))
	}
	stmts = append(stmts, &ptx.Label{Name: slow})
	body.Stmts = append(stmts, copyStmts...)
	r.indexDirectives(&ptx.Block{Stmts: copyStmts})
	r.variant = &variant{res: res, label: slow}
	r.sharedLimit()
	r.g.res.Stats.Variants++
}

// variant is what finish needs to emit the entry check.
type variant struct {
	res   *rangeResult
	label string
}

// cloner copies statements with the body's registers and the function's
// labels renamed.
type cloner struct {
	r      *fnRewriter
	regs   map[string]string // top-level register or family name → new name
	fams   map[string]int    // family base → count
	labels map[string]string
	ins    map[*ptx.Instruction]*ptx.Instruction
}

func (r *fnRewriter) newCloner() *cloner {
	cl := &cloner{r: r, regs: map[string]string{}, fams: map[string]int{}, labels: map[string]string{},
		ins: map[*ptx.Instruction]*ptx.Instruction{}}
	for _, s := range r.f.Body.Stmts {
		if v, ok := s.(*ptx.Var); ok && v.Space == ptx.SpaceReg {
			cl.regs[v.Name] = r.prefix + "c_" + strings.TrimPrefix(v.Name, "%")
			if v.Count > 0 {
				cl.fams[v.Name] = v.Count
			}
		}
	}
	ptx.Inspect(r.f.Body, func(n ptx.Node) bool {
		switch n := n.(type) {
		case *ptx.Label:
			cl.labels[n.Name] = r.lprefix + "c" + n.Name
		case *ptx.Directive:
			if n.Label != "" {
				cl.labels[n.Label] = r.lprefix + "c" + n.Label
			}
			return false
		}
		return true
	})
	return cl
}

func (cl *cloner) reg(name string) string {
	if n, ok := cl.regs[name]; ok {
		if _, fam := cl.fams[name]; !fam {
			return n
		}
	}
	base := strings.TrimRightFunc(name, func(c rune) bool { return c >= '0' && c <= '9' })
	if base != name {
		if c, ok := cl.fams[base]; ok {
			var k int
			for _, ch := range name[len(base):] {
				k = k*10 + int(ch-'0')
				if k > 1<<24 {
					return name
				}
			}
			if k < c && !(len(name)-len(base) > 1 && name[len(base)] == '0') {
				return cl.regs[base] + name[len(base):]
			}
		}
	}
	return name
}

func (cl *cloner) stmt(s ptx.Stmt) ptx.Stmt {
	switch s := s.(type) {
	case *ptx.Instruction:
		n := &ptx.Instruction{Opcode: s.Opcode, Mods: append([]string(nil), s.Mods...), Line: s.Line}
		if s.Guard != nil {
			n.Guard = &ptx.Guard{Reg: &ptx.Reg{Name: cl.reg(s.Guard.Reg.Name)}, Negated: s.Guard.Negated}
		}
		for _, o := range s.Operands {
			n.Operands = append(n.Operands, cl.operand(o))
		}
		cl.ins[s] = n
		return n
	case *ptx.Label:
		return &ptx.Label{Name: cl.labels[s.Name]}
	case *ptx.Block:
		b := &ptx.Block{}
		for _, x := range s.Stmts {
			b.Stmts = append(b.Stmts, cl.stmt(x))
		}
		return b
	case *ptx.Directive:
		d := &ptx.Directive{Name: s.Name, Semicolon: s.Semicolon, Label: s.Label}
		if nl, ok := cl.labels[s.Label]; ok && s.Label != "" {
			d.Label = nl
		}
		for _, g := range s.Args {
			var ng []ptx.Operand
			for _, o := range g {
				ng = append(ng, cl.operand(o))
			}
			d.Args = append(d.Args, ng)
		}
		return d
	case *ptx.Var:
		v := *s
		return &v
	}
	return s
}

func (cl *cloner) operand(o ptx.Operand) ptx.Operand {
	switch o := o.(type) {
	case *ptx.Reg:
		return &ptx.Reg{Name: cl.reg(o.Name)}
	case *ptx.Symbol:
		if nl, ok := cl.labels[o.Name]; ok {
			return &ptx.Symbol{Name: nl, Generic: o.Generic, Offset: o.Offset}
		}
		return &ptx.Symbol{Name: o.Name, Generic: o.Generic, Offset: o.Offset}
	case *ptx.Address:
		a := &ptx.Address{Offset: o.Offset}
		if o.Base != nil {
			a.Base = cl.operand(o.Base)
		}
		return a
	case *ptx.Vector:
		v := &ptx.Vector{}
		for _, e := range o.Elems {
			v.Elems = append(v.Elems, cl.operand(e))
		}
		return v
	case *ptx.Bracket:
		v := &ptx.Bracket{}
		for _, e := range o.Elems {
			v.Elems = append(v.Elems, cl.operand(e))
		}
		return v
	case *ptx.Paren:
		v := &ptx.Paren{}
		for _, e := range o.Elems {
			v.Elems = append(v.Elems, cl.operand(e))
		}
		return v
	case *ptx.Pair:
		return &ptx.Pair{First: cl.operand(o.First), Second: cl.operand(o.Second)}
	case *ptx.Not:
		return &ptx.Not{X: cl.operand(o.X)}
	case *ptx.Expr:
		e := &ptx.Expr{Op: o.Op, X: cl.operand(o.X)}
		if o.Y != nil {
			e.Y = cl.operand(o.Y)
		}
		return e
	}
	return o
}

// entryCheck computes the fast variant's conditions and branches to the
// checked variant when one fails. It runs after the prologue (it needs the
// shared limit).
func (r *fnRewriter) entryCheck() []ptx.Stmt {
	v := r.variant
	if v == nil {
		return nil
	}
	ra := v.res.ra
	var out []ptx.Stmt
	atoms := map[int]*ptx.Reg{}
	var atomReg func(i int) *ptx.Reg
	atomReg = func(i int) *ptx.Reg {
		if a, ok := atoms[i]; ok {
			return a
		}
		a := r.w()
		switch {
		case i < atomHalfX:
			out = append(out, ins("mov.u32", a, &ptx.Reg{Name: "%ntid." + string(rune('x'+i))}))
		case i < fixedAtoms:
			out = append(out, ins("shr.u32", a, atomReg(i-atomHalfX), imm(1)))
		default:
			out = append(out, ins("mov.u32", a, &ptx.Symbol{Name: ra.atomVar[i].Name}))
		}
		atoms[i] = a
		return a
	}
	p := r.p()
	first := true
	test := func(op string, x, y ptx.Operand) {
		if first {
			out = append(out, ins("setp."+op+".s32", p, x, y))
			first = false
			return
		}
		out = append(out, ins("setp."+op+".and.s32", p, x, y, p))
	}
	for _, c := range v.res.conds {
		acc := r.w()
		started := false
		for i, k := range c.f.k {
			if k == 0 {
				continue
			}
			switch {
			case !started && k == 1:
				out = append(out, ins("mov.u32", acc, atomReg(i)))
			case !started:
				out = append(out, ins("mul.lo.s32", acc, atomReg(i), imm(k)))
			case k == 1:
				out = append(out, ins("add.s32", acc, acc, atomReg(i)))
			default:
				out = append(out, ins("mad.lo.s32", acc, atomReg(i), imm(k), acc))
			}
			started = true
		}
		if !started {
			out = append(out, ins("mov.u32", acc, imm(c.f.c)))
		} else if c.f.c != 0 {
			out = append(out, ins("add.s32", acc, acc, imm(c.f.c)))
		}
		if c.upper {
			test("le", acc, r.shLim)
		} else {
			test("ge", acc, imm(0))
		}
	}
	if first {
		return nil
	}
	return append(out, when(ins("bra", &ptx.Symbol{Name: v.label}), p, true))
}

// indexDirectives records the .branchtargets and .calltargets of b.
func (r *fnRewriter) indexDirectives(b *ptx.Block) {
	ptx.Inspect(b, func(n ptx.Node) bool {
		d, ok := n.(*ptx.Directive)
		if !ok {
			return true
		}
		switch d.Name {
		case ".branchtargets":
			k := 0
			for _, grp := range d.Args {
				k += len(grp)
			}
			r.branchTgt[d.Label] = k
		case ".calltargets":
			var fs []string
			for _, grp := range d.Args {
				for _, o := range grp {
					if s, ok := o.(*ptx.Symbol); ok {
						fs = append(fs, s.Name)
					}
				}
			}
			r.callTgt[d.Label] = fs
		}
		return false
	})
}
