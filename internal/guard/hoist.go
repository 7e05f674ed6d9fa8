package guard

import "github.com/gpuos/gpuos/internal/ptx"

// checkRegs returns a hoisted check's predicate and its 0/1 value, creating
// the registers on first use (an access may come before the definition in
// the text and still be dominated by it).
func (r *fnRewriter) checkRegs(c *hcheck) (*ptx.Reg, *ptx.Reg) {
	if c.ok == nil {
		c.ok, c.okI = r.p(), r.w()
	}
	return c.ok, c.okI
}

// setReg returns the predicate of a segment's set of checks.
func (r *fnRewriter) setReg(h *hoisted, seg int) *ptx.Reg {
	ks := h.sets[seg]
	if len(ks) == 1 {
		ok, _ := r.checkRegs(&h.checks[ks[0]])
		return ok
	}
	p, ok := h.setPred[seg]
	if !ok {
		p = r.p()
		h.setPred[seg] = p
	}
	return p
}

// hoistCheck emits, right after the register's definition, each of its
// checks and the AND of each segment's set.
func (r *fnRewriter) hoistCheck(h *hoisted) []ptx.Stmt {
	if h == nil || h.done {
		return nil
	}
	h.done = true
	var out []ptx.Stmt
	reg := &ptx.Reg{Name: h.reg}
	for i := range h.checks {
		c := &h.checks[i]
		r.g.res.Stats.Checked++
		ok, okI := r.checkRegs(c)
		acc := access{space: h.space, width: c.width, align: c.align}
		pc := piece{}
		var ea ptx.Operand = reg
		if c.off != 0 {
			t := r.q()
			op := "add.s64"
			if h.bits == 32 {
				t, op = r.w(), "add.s32"
			}
			pc.pre = append(pc.pre, ins(op, t, reg, imm(c.off)))
			ea = t
		}
		switch h.space {
		case spShared:
			r.sharedCmps(&pc, acc, ea, 32)
		case spGlobal:
			r.globalCmps(&pc, acc, ea)
		case spLocal:
			ea = r.widen(&pc, target{ea: ea, bits: h.bits})
			r.localCmps(&pc, acc, ea)
		case spConst:
			ea = r.widen(&pc, target{ea: ea, bits: h.bits})
			r.constCmps(&pc, acc, ea, r.constRange())
		}
		out = append(out, pc.pre...)
		if len(pc.cmps) == 1 {
			cm := pc.cmps[0]
			out = append(out, ins("setp."+cm.op+"."+cm.typ, ok, cm.x, cm.y))
		} else {
			pre, p := r.conj(pc.cmps, nil)
			out = append(out, pre...)
			out = append(out, ins("mov.pred", ok, p))
		}
		out = append(out, ins("selp.u32", okI, imm(1), imm(0), ok))
	}
	for seg, ks := range h.sets {
		if len(ks) < 2 {
			continue
		}
		p := r.setReg(h, seg)
		first, _ := r.checkRegs(&h.checks[ks[0]])
		out = append(out, ins("mov.pred", p, first))
		for _, k := range ks[1:] {
			ok, _ := r.checkRegs(&h.checks[k])
			out = append(out, ins("and.pred", p, p, ok))
		}
	}
	return out
}

// hoistedUse predicates an access on its hoisted check. Accesses without a
// guard of their own record a violation once per segment (for all the
// segment's accesses of the register); guarded ones each combine the check
// with their guard and record on their own.
func (r *fnRewriter) hoistedUse(in *ptx.Instruction, h *hoisted) []ptx.Stmt {
	c := &h.checks[h.useCheck[in]]
	ok, okI := r.checkRegs(c)
	addr := &ptx.Reg{Name: h.reg}
	if in.Guard == nil {
		seg := h.useSeg[in]
		key := cacheKey{space: h.space, base: h.reg, off: int64(seg), width: -1}
		var out []ptx.Stmt
		if _, done := r.cache[key]; !done {
			set := r.setReg(h, seg)
			out = append(out, r.record(addr, h.bits == 32, false, &ptx.Guard{Reg: set, Negated: true})...)
			r.cache[key] = cached{}
		}
		in.Guard = &ptx.Guard{Reg: ok}
		return append(out, in)
	}
	o, b := r.p(), r.p()
	out := []ptx.Stmt{setpPair("ne", "u32", o, b, okI, imm(0), in.Guard)}
	out = append(out, r.record(addr, h.bits == 32, false, &ptx.Guard{Reg: b})...)
	in.Guard = &ptx.Guard{Reg: o}
	return append(out, in)
}
