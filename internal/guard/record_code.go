package guard

import (
	"strconv"

	"github.com/gpuos/gpuos/internal/ptx"
)

// Code that writes the fault record. It runs only on a violation (or at a
// thread's return, predicated on the per-call count), so its cost is a few
// predicated-off instructions.

func (r *fnRewriter) countReg() *ptx.Reg {
	if r.n == nil {
		r.n, r.a = r.w(), r.q()
	}
	return r.n
}

// record notes a violation at address a when bad holds. A thread keeps its
// last violating address in a register that starts as the window's base,
// which no violating window access can have: so a window check costs one
// predicated instruction. Other checks (shared, local, const, generic) also
// raise a flag, since their addresses could equal the base.
func (r *fnRewriter) record(a ptx.Operand, a32, window bool, bad *ptx.Guard) []ptx.Stmt {
	n := r.countReg()
	var out []ptx.Stmt
	if !window {
		inc := ins("mov.u32", n, imm(1))
		inc.Guard = bad
		out = append(out, inc)
	}
	mv := ins("mov.b64", r.a, a)
	if a32 {
		mv = ins("cvt.u64.u32", r.a, a)
	}
	mv.Guard = bad
	return append(out, mv)
}

// tail adds count to the fault record at fw when fp holds and, for the first
// recorder, stores this function's id and value.
func (r *fnRewriter) tail(fw, fp *ptx.Reg, count ptx.Operand, kind uint32, value ptx.Operand) []ptx.Stmt {
	fq, x := r.p(), r.w()
	return []ptx.Stmt{
		when(ins("atom.global.add.u32", x, addr(fw, 0), count), fp, false),
		when(ins("atom.global.or.b32", x, addr(fw, 16), imm(int64(kind))), fp, false),
		when(ins("atom.global.cas.b32", x, addr(fw, 4), imm(0), imm(r.id)), fp, false),
		ins("setp.eq.and.u32", fq, x, imm(0), fp),
		when(ins("st.global.u64", addr(fw, 8), value), fq, false),
	}
}

// event records one violation of the given kind right away (a trap, an
// assert, a bad indirect call), with value (a PTX line) as its address; cond
// is nil (always) or the guard under which it happened.
func (r *fnRewriter) event(kind uint32, value ptx.Operand, cond *ptx.Guard) []ptx.Stmt {
	fw, fp := r.q(), r.p()
	out := []ptx.Stmt{
		ins("ld.const.u64", fw, addr(&ptx.Symbol{Name: ParamsVar}, paramFault)),
		setpC("ne", "u64", fp, fw, imm(0), cond),
	}
	return append(out, r.tail(fw, fp, imm(1), kind, value)...)
}

// flush adds one to the fault record's count if this call of the function
// violated (under the return's guard), with its last violating address.
func (r *fnRewriter) flush(gd *ptx.Guard) []ptx.Stmt {
	n := r.countReg()
	fw, fp := r.q(), r.p()
	out := []ptx.Stmt{
		ins("setp.ne.u32", fp, n, imm(0)),
		ins("setp.ne.or.u64", fp, r.a, r.needLo(), fp),
	}
	out = append(out, andGuard(r, fp, gd)...)
	out = append(out,
		ins("ld.const.u64", fw, addr(&ptx.Symbol{Name: ParamsVar}, paramFault)),
		ins("setp.ne.and.u64", fp, fw, imm(0), fp))
	return append(out, r.tail(fw, fp, imm(1), KindAccess, r.a)...)
}

// slowFlush is an out-of-line block at the end of the function: it writes
// the fault record, then ends the way the flushing instruction did.
type slowFlush struct {
	label string
	end   *ptx.Instruction // ret or exit, its modifiers kept, no guard
}

// flushOut is flush for a ret or exit of the function's body: two compares
// and a branch, never taken unless the thread violated; the atomics that
// write the record are out of line (slowBlocks), off the path every thread
// runs at its end.
func (r *fnRewriter) flushOut(in *ptx.Instruction) []ptx.Stmt {
	n := r.countReg()
	fp := r.p()
	out := []ptx.Stmt{
		ins("setp.ne.u32", fp, n, imm(0)),
		ins("setp.ne.or.u64", fp, r.a, r.needLo(), fp),
	}
	out = append(out, andGuard(r, fp, in.Guard)...)
	name := in.Name()
	var sf *slowFlush
	for _, s := range r.slow {
		if s.end.Name() == name {
			sf = s
		}
	}
	if sf == nil {
		end := ins(name)
		sf = &slowFlush{label: r.lprefix + "flush" + strconv.Itoa(len(r.slow)), end: end}
		r.slow = append(r.slow, sf)
	}
	return append(out, when(ins("bra", &ptx.Symbol{Name: sf.label}), fp, false))
}

// slowBlocks are the out-of-line record writers flushOut branches to.
func (r *fnRewriter) slowBlocks() []ptx.Stmt {
	var out []ptx.Stmt
	for _, sf := range r.slow {
		fw, fp := r.q(), r.p()
		out = append(out, &ptx.Label{Name: sf.label},
			ins("ld.const.u64", fw, addr(&ptx.Symbol{Name: ParamsVar}, paramFault)),
			ins("setp.ne.u64", fp, fw, imm(0)))
		out = append(out, r.tail(fw, fp, imm(1), KindAccess, r.a)...)
		out = append(out, sf.end)
	}
	return out
}

// andGuard ANDs a guard into predicate p.
func andGuard(r *fnRewriter, p *ptx.Reg, gd *ptx.Guard) []ptx.Stmt {
	if gd == nil {
		return nil
	}
	if !gd.Negated {
		return []ptx.Stmt{ins("and.pred", p, p, &ptx.Reg{Name: gd.Reg.Name})}
	}
	t := r.p()
	return []ptx.Stmt{ins("not.pred", t, &ptx.Reg{Name: gd.Reg.Name}), ins("and.pred", p, p, t)}
}

// setpC is "setp.cmp.type p, x, y" or, under a guard, "setp.cmp.and.type p,
// x, y, g" (p true only where the guard holds).
func setpC(cmp, typ string, p ptx.Operand, x, y ptx.Operand, gd *ptx.Guard) *ptx.Instruction {
	if gd == nil {
		return ins("setp."+cmp+"."+typ, p, x, y)
	}
	return ins("setp."+cmp+".and."+typ, p, x, y, guardOperand(gd))
}

// setpPair is "setp.cmp.type ok|bad, x, y" with the guard folded in: ok
// where the comparison holds (and the guard), bad where it fails (and the
// guard).
func setpPair(cmp, typ string, ok, bad *ptx.Reg, x, y ptx.Operand, gd *ptx.Guard) *ptx.Instruction {
	return setpC(cmp, typ, &ptx.Pair{First: ok, Second: bad}, x, y, gd)
}

// pairWithGuard turns a condition c into ok (c and the guard) and bad (not c,
// and the guard).
func (r *fnRewriter) pairWithGuard(c *ptx.Reg, gd *ptx.Guard) ([]ptx.Stmt, *ptx.Reg, *ptx.Guard) {
	if gd == nil {
		return nil, c, &ptx.Guard{Reg: c, Negated: true}
	}
	t, ok, bad := r.w(), r.p(), r.p()
	return []ptx.Stmt{
		ins("selp.u32", t, imm(1), imm(0), c),
		setpPair("ne", "u32", ok, bad, t, imm(0), gd),
	}, ok, &ptx.Guard{Reg: bad}
}
