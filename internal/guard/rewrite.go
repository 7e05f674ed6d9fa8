package guard

import (
	"github.com/gpuos/gpuos/internal/ptx"
)

// block rewrites the statements of b and of the blocks nested in it.
func (r *fnRewriter) block(b *ptx.Block, top bool) error {
	if !top {
		r.depth++
		defer func() { r.depth-- }()
	}
	r.cache = map[cacheKey]cached{}
	out := make([]ptx.Stmt, 0, len(b.Stmts)+len(b.Stmts)/2)
	for _, s := range b.Stmts {
		switch s := s.(type) {
		case *ptx.Block:
			if err := r.block(s, false); err != nil {
				return err
			}
			r.cache = map[cacheKey]cached{}
			out = append(out, s)
		case *ptx.Label:
			r.cache = map[cacheKey]cached{}
			out = append(out, s)
		case *ptx.Instruction:
			ss, err := r.instruction(s)
			if err != nil {
				return err
			}
			out = append(out, ss...)
			r.invalidate(s)
			for _, reg := range r.facts.defAt[s] {
				out = append(out, r.hoistCheck(r.facts.hoist[reg])...)
			}
		default:
			out = append(out, s)
		}
	}
	b.Stmts = out
	return nil
}

// invalidate drops cached checks that in makes stale: a redefined base or
// guard register, or any control transfer.
func (r *fnRewriter) invalidate(in *ptx.Instruction) {
	switch in.Opcode {
	case "bra", "brx", "call", "ret", "exit", "trap", "brkpt":
		r.cache = map[cacheKey]cached{}
		return
	}
	defs := defsOf(in)
	if len(defs) == 0 || len(r.cache) == 0 {
		return
	}
	for k := range r.cache {
		for _, d := range defs {
			if k.base == d || k.guard == d || k.guard == "!"+d {
				delete(r.cache, k)
				break
			}
		}
	}
}

// defsOf returns the registers an instruction may write: those in its first
// operand, unless that is a memory operand. (PTX instructions write only their
// first operand: a register, a vector of them or a "p|q" pair.)
func defsOf(in *ptx.Instruction) []string {
	if len(in.Operands) == 0 {
		return nil
	}
	var out []string
	var add func(o ptx.Operand)
	add = func(o ptx.Operand) {
		switch o := o.(type) {
		case *ptx.Reg:
			out = append(out, o.Name)
		case *ptx.Vector:
			for _, e := range o.Elems {
				add(e)
			}
		case *ptx.Pair:
			add(o.First)
			add(o.Second)
		}
	}
	add(in.Operands[0])
	return out
}

// instruction returns what replaces in.
func (r *fnRewriter) instruction(in *ptx.Instruction) ([]ptx.Stmt, error) {
	switch in.Opcode {
	case "trap", "brkpt":
		r.g.res.Stats.Stripped++
		return r.abort(in, KindTrap), nil
	case "ret", "exit":
		if !r.recorded {
			return []ptx.Stmt{in}, nil
		}
		if r.depth == 0 {
			return append(r.flushOut(in), in), nil
		}
		return append(r.flush(in.Guard), in), nil
	case "call":
		return r.call(in)
	case "brx":
		return r.brx(in)
	}
	if err := r.checkParams(in); err != nil {
		return nil, err
	}
	pre, err := r.relocOperands(in)
	if err != nil {
		return nil, err
	}
	if pre == nil && in.Opcode == "" {
		return nil, nil // replaced entirely (never happens; keeps vet quiet)
	}
	accs, err := accessesOf(r.f.Name, in)
	if err != nil {
		return nil, err
	}
	if len(accs) == 0 {
		return append(pre, in), nil
	}
	ss, err := r.guardAccesses(in, accs)
	if err != nil {
		return nil, err
	}
	return append(pre, ss...), nil
}

// relocOperands rewrites references to relocated .global variables outside
// memory operands ("mov.u64 %rd, var", "cvta.global.u64 %rd, var+8") into
// the relocated address.
func (r *fnRewriter) relocOperands(in *ptx.Instruction) ([]ptx.Stmt, error) {
	var pre []ptx.Stmt
	for i, o := range in.Operands {
		switch o := o.(type) {
		case *ptx.Symbol:
			gv, ok := r.g.layout.Var(o.Name)
			if !ok || !r.g.reloc[o.Name] {
				continue
			}
			if t := in.Type(); t.Size() != 8 && in.Opcode != "call" {
				return nil, refuse(r.f.Name, in, "the address of relocated variable %s in a %d-bit operand", o.Name, t.Bits())
			}
			off := int64(gv.Offset) + o.Offset
			// mov/cvta of the address becomes one add.
			if i == 1 && len(in.Operands) == 2 && (in.Opcode == "mov" || in.Opcode == "cvta") {
				in.Opcode, in.Mods = "add", []string{".u64"}
				in.Operands = []ptx.Operand{in.Operands[0], r.globalsBase(), imm(off)}
				return pre, nil
			}
			t := r.q()
			pre = append(pre, ins("add.u64", t, r.globalsBase(), imm(off)))
			in.Operands[i] = t
		case *ptx.Address:
			continue // memory operands are handled with the access
		default:
			var bad string
			ptx.Inspect(o, func(n ptx.Node) bool {
				if s, ok := n.(*ptx.Symbol); ok && r.g.reloc[s.Name] {
					bad = s.Name
				}
				return bad == ""
			})
			if bad != "" {
				return nil, refuse(r.f.Name, in, "relocated variable %s inside an expression operand", bad)
			}
		}
	}
	return pre, nil
}

// call handles direct calls (to functions the module defines, or the few
// runtime functions the guard replaces) and indirect calls (checked against
// the functions the module defines).
func (r *fnRewriter) call(in *ptx.Instruction) ([]ptx.Stmt, error) {
	ti := callTarget(in)
	if ti < 0 {
		return nil, refuse(r.f.Name, in, "call without a target")
	}
	switch t := in.Operands[ti].(type) {
	case *ptx.Symbol:
		f := r.g.funcs[t.Name]
		if f == nil {
			return nil, refuse(r.f.Name, in, "call to %s, which the module does not declare", t.Name)
		}
		if f.Body != nil {
			return []ptx.Stmt{in}, nil
		}
		switch t.Name {
		case "vprintf":
			// Device printf writes to the driver's own output, not the
			// tenant's: drop it and return 0 (characters printed).
			r.g.res.Stats.Stripped++
			if ti > 0 {
				if rets, ok := in.Operands[0].(*ptx.Paren); ok && len(rets.Elems) == 1 {
					if s, ok := rets.Elems[0].(*ptx.Symbol); ok {
						st := ins("st.param.b32", addr(&ptx.Symbol{Name: s.Name}, 0), imm(0))
						st.Guard = in.Guard
						return []ptx.Stmt{st}, nil
					}
				}
			}
			return nil, nil
		case "__assertfail":
			r.g.res.Stats.Stripped++
			return r.abort(in, KindAssert), nil
		}
		return nil, refuse(r.f.Name, in, "call to %s, which the module declares but does not define (device runtime, malloc, libraries linked at load): code outside the module cannot be guarded", t.Name)
	case *ptx.Reg:
		var targets []string
		if s, ok := in.Operands[len(in.Operands)-1].(*ptx.Symbol); ok && len(in.Operands)-1 > ti {
			if fs, ok := r.callTgt[s.Name]; ok {
				targets = fs
			}
		}
		if targets == nil {
			targets = r.g.addrTaken
		}
		var defined []string
		for _, name := range targets {
			if f := r.g.funcs[name]; f != nil && f.Body != nil {
				defined = append(defined, name)
			}
		}
		if len(defined) == 0 {
			return nil, refuse(r.f.Name, in, "indirect call, and the module takes the address of none of its functions")
		}
		var out []ptx.Stmt
		c := r.p()
		for i, name := range defined {
			fa := r.q()
			out = append(out, ins("mov.u64", fa, &ptx.Symbol{Name: name}))
			if i == 0 {
				out = append(out, ins("setp.eq.u64", c, t, fa))
			} else {
				out = append(out, ins("setp.eq.or.u64", c, t, fa, c))
			}
		}
		pre, ok, bad := r.pairWithGuard(c, in.Guard)
		out = append(out, pre...)
		out = append(out, r.event(KindCall, imm(int64(in.Line)), bad)...)
		in.Guard = &ptx.Guard{Reg: ok}
		return append(out, in), nil
	}
	return nil, refuse(r.f.Name, in, "call target %s", in.Operands[ti])
}

// brx checks an indirect branch's index against its target list.
func (r *fnRewriter) brx(in *ptx.Instruction) ([]ptx.Stmt, error) {
	if len(in.Operands) != 2 {
		return nil, refuse(r.f.Name, in, "brx.idx needs an index and a target list")
	}
	list, ok := in.Operands[1].(*ptx.Symbol)
	if !ok {
		return nil, refuse(r.f.Name, in, "brx.idx target list is not a .branchtargets label")
	}
	n, ok := r.branchTgt[list.Name]
	if !ok || n == 0 {
		return nil, refuse(r.f.Name, in, "brx.idx target list %s is not a .branchtargets directive of this function", list.Name)
	}
	okp, bad := r.p(), r.p()
	set := setpPair("lt", "u32", okp, bad, in.Operands[0], imm(int64(n)), in.Guard)
	out := []ptx.Stmt{set}
	out = append(out, r.event(KindCall, imm(int64(in.Line)), &ptx.Guard{Reg: bad})...)
	in.Guard = &ptx.Guard{Reg: okp}
	return append(out, in), nil
}

// abort replaces a trap, brkpt or __assertfail call: record the event, flush
// the function's violations and end the thread.
func (r *fnRewriter) abort(in *ptx.Instruction, kind uint32) []ptx.Stmt {
	out := r.event(kind, imm(int64(in.Line)), in.Guard)
	if r.recorded {
		out = append(out, r.flush(in.Guard)...)
	}
	exit := ins("exit")
	exit.Guard = in.Guard
	return append(out, exit)
}

// checkParams bounds named parameter accesses ("ld.param.u32 %r1, [p+8]"):
// the offset must stay inside the parameter, since the guard does not check
// them at run time.
func (r *fnRewriter) checkParams(in *ptx.Instruction) error {
	if in.StateSpace() != ptx.SpaceParam || (in.Opcode != "ld" && in.Opcode != "st" && in.Opcode != "ldu") {
		return nil
	}
	for _, o := range in.Operands {
		a, ok := o.(*ptx.Address)
		if !ok {
			continue
		}
		s, ok := a.Base.(*ptx.Symbol)
		if !ok {
			continue // refused by accessesOf
		}
		v := r.params[s.Name]
		if v == nil {
			return refuse(r.f.Name, in, "parameter access to %s, which is not a parameter of this function or of its call sequences", s.Name)
		}
		off, w := s.Offset+a.Offset, int64(in.AccessSize())
		if size := int64(v.Size()); w <= 0 || off < 0 || off+w > size {
			return refuse(r.f.Name, in, "access of %d bytes at offset %d of the %d-byte parameter %s", w, off, size, s.Name)
		}
	}
	return nil
}
