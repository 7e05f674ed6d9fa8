package guard

import (
	"sort"
	"strconv"
	"strings"

	"github.com/gpuos/gpuos/internal/ptx"
)

// setKey names a set of checks independently of its order.
func setKey(ks []int) string {
	s := append([]int(nil), ks...)
	sort.Ints(s)
	var b strings.Builder
	for _, k := range s {
		b.WriteString(strconv.Itoa(k))
		b.WriteByte(',')
	}
	return b.String()
}

// setReg returns the predicate of a set of checks, creating the register on
// first use (an access may come before the definition in the text and still
// be dominated by it). Segments whose accesses use the same checks share it,
// which keeps the number of predicates live across a loop small.
func (r *fnRewriter) setReg(h *hoisted, ks []int) *ptx.Reg {
	return regOfSet(h.setPred, ks, r.p)
}

// regOfSet returns the register m keeps for a set of checks, made with
// newReg on first use.
func regOfSet(m map[string]*ptx.Reg, ks []int, newReg func() *ptx.Reg) *ptx.Reg {
	key := setKey(ks)
	reg, ok := m[key]
	if !ok {
		reg = newReg()
		m[key] = reg
	}
	return reg
}

func (r *fnRewriter) checkInt(c *hcheck) *ptx.Reg {
	if c.okI == nil {
		c.okI = r.w()
	}
	return c.okI
}

// hoistCheck emits, right after the register's definition, the check of
// each set of accesses that a segment executes together (one range check
// when mergedCheck allows, else the AND of the accesses' own checks), and
// the own check of each access with a guard of its own.
func (r *fnRewriter) hoistCheck(h *hoisted) []ptx.Stmt {
	if h == nil || h.done {
		return nil
	}
	h.done = true
	var out []ptx.Stmt
	// emit checks one range into a fresh predicate.
	emit := func(c hcheck, dst *ptx.Reg) *ptx.Reg {
		r.g.res.Stats.Checked++
		pc := piece{}
		var ea ptx.Operand = &ptx.Reg{Name: h.reg}
		if c.off != 0 {
			t, op := r.q(), "add.s64"
			if h.bits == 32 {
				t, op = r.w(), "add.s32"
			}
			pc.pre = append(pc.pre, ins(op, t, ea, imm(c.off)))
			ea = t
		}
		acc := access{space: h.space, width: c.width, align: c.align}
		// The accesses use [reg+off]: with a positive offset from a 32-bit
		// register, (reg+off) mod 2^32 may pass while reg+off itself
		// (not wrapped, as the interpreter adds) is past 2^32. A register
		// below 2^31 cannot wrap with offsets below 2^30.
		if h.bits == 32 && c.off > 0 {
			pc.cmps = append(pc.cmps, cmp{"lt", "u32", &ptx.Reg{Name: h.reg}, imm(1 << 31)})
		}
		switch h.space {
		case spShared:
			r.sharedSpan(&pc, ea, c.width, c.align)
		case spGlobal:
			r.globalSpan(&pc, ea, c.width, c.align)
		case spLocal:
			ea = r.widen(&pc, target{ea: ea, bits: h.bits})
			r.localCmps(&pc, acc, ea)
		case spConst:
			ea = r.widen(&pc, target{ea: ea, bits: h.bits})
			r.constCmps(&pc, acc, ea, r.constRange())
		case spParam:
			ea = r.widen(&pc, target{ea: ea, bits: h.bits})
			if pr := r.paramRange(); pr != nil {
				r.rangeCmps(&pc, acc, ea, pr)
			} else {
				pc.cmps = append(pc.cmps, cmp{"ne", "u64", ea, ea}) // nothing is inside
			}
		default:
			pc.cmps = append(pc.cmps, cmp{"ne", "u64", ea, ea}) // a space hoisting does not know: fail closed
		}
		out = append(out, pc.pre...)
		pre, p := r.conjInto(pc.cmps, nil, dst)
		out = append(out, pre...)
		return p
	}
	preds := make([]*ptx.Reg, len(h.checks))
	own := func(k int) *ptx.Reg {
		if preds[k] == nil {
			preds[k] = emit(h.checks[k], nil)
		}
		return preds[k]
	}
	for k := range h.checks {
		if h.guarded[k] {
			c := &h.checks[k]
			out = append(out, ins("selp.u32", r.checkInt(c), imm(1), imm(0), own(k)))
		}
	}
	done := map[string]bool{}
	segs := make([]int, 0, len(h.sets))
	for seg := range h.sets {
		segs = append(segs, seg)
	}
	sort.Ints(segs) // deterministic output
	for _, seg := range segs {
		ks := h.sets[seg]
		key := setKey(ks)
		if done[key] {
			continue
		}
		done[key] = true
		p := r.setReg(h, ks)
		switch mc, ok := h.mergedCheck(ks); {
		case ok:
			emit(mc, p)
		case len(ks) == 1:
			out = append(out, ins("mov.pred", p, own(ks[0])))
		default:
			q := own(ks[0])
			for i, k := range ks[1:] {
				t := p
				if i < len(ks)-2 {
					t = r.p()
				}
				out = append(out, ins("and.pred", t, q, own(k)))
				q = t
			}
		}
		if base, ok := r.sinkBase(h, ks); ok {
			// The set's loads read at safe+off: reg's own address when the
			// set's checks hold, else inside the sink (see toSink).
			safe, t := r.safeReg(h, ks), r.sinkAddr()
			if base != 0 {
				t = r.q()
				out = append(out, ins("add.s64", t, r.sinkAddr(), imm(-base)))
			}
			out = append(out, ins("selp.b64", safe, &ptx.Reg{Name: h.reg}, t, p))
		}
	}
	return out
}

// sinkBase reports whether the loads of a set of a hoisted global register
// read at a chosen address (toSink) rather than under the set's predicate,
// and the offset b whose sink-relative address becomes the register's in
// the sink: every access [reg+off] of the set then lies in the sink at
// off-b, aligned (b is a multiple of the sink's alignment and each offset
// of its own). The sink grows to cover the widest set, up to maxSink;
// sets whose accesses do not fit keep their predicate.
func (r *fnRewriter) sinkBase(h *hoisted, ks []int) (int64, bool) {
	if h.space != spGlobal || h.bits != 64 || r.g.opts.PredicateLoads {
		return 0, false
	}
	loads := false
	for in, seg := range h.useSeg {
		if (in.Opcode == "ld" || in.Opcode == "ldu") && setKey(h.sets[seg]) == setKey(ks) {
			loads = true
		}
	}
	if !loads {
		return 0, false
	}
	lo, end := h.checks[ks[0]].off, int64(0)
	for _, k := range ks {
		c := h.checks[k]
		if c.width > SinkSize || c.off%int64(c.align) != 0 {
			return 0, false
		}
		lo = min(lo, c.off)
		end = max(end, c.off+int64(c.width))
	}
	b := floorDiv(lo, SinkSize) * SinkSize
	if end-b > maxSink {
		return 0, false
	}
	r.g.sinkSize = max(r.g.sinkSize, end-b)
	return b, true
}

// maxSink caps the sink's size: a set of loads spread wider keeps its
// predicate.
const maxSink = 4096

// safeReg returns the register a set's loads use as their base (sinkBase),
// creating it on first use like setReg.
func (r *fnRewriter) safeReg(h *hoisted, ks []int) *ptx.Reg {
	return regOfSet(h.setSafe, ks, r.q)
}

// hoistedUse predicates an access on its hoisted checks. An access without a
// guard of its own runs only if every check its straight-line segment uses
// on this register passed (all of them execute together, so a violation by
// one suppresses its neighbours too; the session is revoked anyway), and the
// segment records a violation once. An access with a guard combines its own
// check with the guard and records on its own.
func (r *fnRewriter) hoistedUse(in *ptx.Instruction, h *hoisted) []ptx.Stmt {
	addr := &ptx.Reg{Name: h.reg}
	if in.Guard == nil {
		seg := h.useSeg[in]
		set := r.setReg(h, h.sets[seg])
		key := cacheKey{space: h.space, base: h.reg, off: int64(seg), width: -1}
		var out []ptx.Stmt
		if _, done := r.cache[key]; !done {
			// A segment that accesses [reg, reg+width) only: a violating
			// reg is never the window's base, so the address alone records.
			ks := h.sets[seg]
			window := h.space == spGlobal && len(ks) == 1 && h.checks[ks[0]].off == 0
			out = append(out, r.record(addr, h.bits == 32, window, &ptx.Guard{Reg: set, Negated: true})...)
			r.cache[key] = cached{}
		}
		if in.Opcode == "ld" || in.Opcode == "ldu" {
			if _, ok := r.sinkBase(h, h.sets[seg]); ok {
				a := in.Operands[h.useOp[in]].(*ptx.Address)
				a.Base = r.safeReg(h, h.sets[seg])
				return append(out, in)
			}
		}
		// A suppressed load's destination is zeroed here too (in loops: see zero).
		out = append(out, r.zero(in, &ptx.Guard{Reg: set, Negated: true})...)
		in.Guard = &ptx.Guard{Reg: set}
		return append(out, in)
	}
	c := &h.checks[h.useCheck[in]]
	okI := r.checkInt(c)
	o, b := r.p(), r.p()
	out := []ptx.Stmt{setpPair("ne", "u32", o, b, okI, imm(0), in.Guard)}
	out = append(out, r.record(addr, h.bits == 32, false, &ptx.Guard{Reg: b})...)
	if (in.Opcode == "ld" || in.Opcode == "ldu") && h.space == spGlobal && h.bits == 64 && c.width <= SinkSize && !r.g.opts.PredicateLoads {
		// Its own guard stays; the address is the sink's when the check fails.
		var ea ptx.Operand = addr
		if c.off != 0 {
			t := r.q()
			out = append(out, ins("add.s64", t, addr, imm(c.off)))
			ea = t
		}
		s := r.q()
		out = append(out, ins("selp.b64", s, ea, r.sinkAddr(), o))
		in.Operands[h.useOp[in]] = &ptx.Address{Base: s}
		return append(out, in)
	}
	out = append(out, r.zero(in, &ptx.Guard{Reg: b})...)
	in.Guard = &ptx.Guard{Reg: o}
	return append(out, in)
}
