package interp

import (
	"math"
	"strings"

	"github.com/gpuos/gpuos/internal/ptx"
)

// --- conversions ---

func roundingInt(m *mods) (rounding, bool) {
	switch m.one(".rni", ".rzi", ".rmi", ".rpi") {
	case ".rni":
		return rn, true
	case ".rzi":
		return rz, true
	case ".rmi":
		return rm, true
	case ".rpi":
		return rp, true
	}
	return rn, false
}

func hCvt(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	frnd, hasF := m.rounding()
	irnd, hasI := roundingInt(m)
	ftz := m.has(".ftz")
	sat := m.has(".sat")
	relu := m.has(".relu")
	ts := m.types()
	if len(ts) != 2 {
		return invalid(in.Line, "%s needs a destination and a source type", in.Name())
	}
	dt, st := ts[0], ts[1]
	if hasF && hasI {
		return invalid(in.Line, "%s has two rounding modifiers", in.Name())
	}
	bad := func() error { return unsupported(in.Line, "%s", in.Name()) }
	// cvt.rn.f16x2.f32 d, a, b packs two conversions.
	if dt == ptx.TypeF16x2 || dt == ptx.TypeBF16x2 {
		if st != ptx.TypeF32 || !hasF || sat || ftz {
			return bad()
		}
		d, s, err := fc.srcs(in, st, st)
		if err != nil {
			return err
		}
		conv := toF16
		if dt == ptx.TypeBF16x2 {
			conv = toBF16
		}
		fc.alu(d, s, func(r []uint64, in *inst) {
			hi, lo := float64(f32(r[in.a])), float64(f32(r[in.b]))
			if relu {
				hi, lo = reluF(hi), reluF(lo)
			}
			r[in.d] = uint64(conv(hi, frnd))<<16 | uint64(conv(lo, frnd))
		})
		return nil
	}
	d, s, err := fc.srcs(in, st)
	if err != nil {
		return err
	}
	di, si := isInt(dt), isInt(st)
	df, sf := isFloatScalar(dt), isFloatScalar(st)
	if !(di || df) || !(si || sf) || relu && !(dt == ptx.TypeF16 || dt == ptx.TypeBF16) {
		return bad()
	}
	dw, ds := dt.Bits(), dt.IsSigned()
	sw, ss := st.Bits(), st.IsSigned()
	readInt := func(v uint64) (mag uint64, neg bool) {
		if ss {
			x := sextW(v, sw)
			if x < 0 {
				return uint64(-x), true
			}
			return uint64(x), false
		}
		return zextW(v, sw), false
	}
	readFloat := floatReader(st, ftz)
	switch {
	case di && si:
		if hasF || hasI || ftz {
			return bad()
		}
		fc.alu(d, s, func(r []uint64, in *inst) {
			v := r[in.a]
			var x uint64
			if ss {
				x = uint64(sextW(v, sw))
			} else {
				x = zextW(v, sw)
			}
			if sat {
				x = saturateInt(x, ss, dw, ds)
			}
			r[in.d] = x
		})
	case di && sf:
		if !hasI || hasF || (ftz && st != ptx.TypeF32) {
			return invalid(in.Line, "%s needs an integer rounding modifier (.rni, .rzi, .rmi, .rpi)", in.Name())
		}
		// Float to integer conversions always saturate.
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = floatToInt(readFloat(r[in.a]), irnd, dw, ds) })
	case df && si:
		if !hasF || hasI || ftz {
			return invalid(in.Line, "%s needs a rounding modifier (.rn, .rz, .rm, .rp)", in.Name())
		}
		write := floatWriter(dt, frnd, false, sat, relu)
		p := 53
		if dt == ptx.TypeF32 {
			p = 24
		}
		fc.alu(d, s, func(r []uint64, in *inst) {
			mag, neg := readInt(r[in.a])
			// Rounding to the format's precision first is exact for f32/f64;
			// for f16/bf16 the integer is below 2^53 or overflows either way.
			r[in.d] = write(intToFloat(mag, neg, p, frnd))
		})
	default: // float to float
		if hasI && (dt != st) {
			return bad()
		}
		if hasF && dt.Bits() >= st.Bits() && dt != st {
			// Widening is exact: a rounding modifier is meaningless (PTX
			// rejects it); accept .rn as harmless.
		}
		if !hasF && !hasI && dt.Bits() < st.Bits() {
			return invalid(in.Line, "%s needs a rounding modifier", in.Name())
		}
		if ftz && st != ptx.TypeF32 && dt != ptx.TypeF32 {
			return bad()
		}
		write := floatWriter(dt, frnd, ftz, sat, relu)
		if hasI {
			fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = write(roundInt(readFloat(r[in.a]), irnd)) })
		} else {
			fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = write(readFloat(r[in.a])) })
		}
	}
	return nil
}

// reluF clamps negative values to zero; NaN stays NaN (and becomes the
// destination format's canonical NaN).
func reluF(x float64) float64 {
	if x < 0 {
		return 0
	}
	return x
}

func isFloatScalar(t ptx.Type) bool {
	switch t {
	case ptx.TypeF16, ptx.TypeBF16, ptx.TypeF32, ptx.TypeF64:
		return true
	}
	return false
}

// floatReader returns a float of type t from a register as an exact float64.
func floatReader(t ptx.Type, ftz bool) func(uint64) float64 {
	switch t {
	case ptx.TypeF16:
		return func(v uint64) float64 { return f16val(uint16(v)) }
	case ptx.TypeBF16:
		return func(v uint64) float64 { return bf16val(uint16(v)) }
	case ptx.TypeF32:
		if ftz {
			return func(v uint64) float64 { return float64(ftz32(f32(v))) }
		}
		return func(v uint64) float64 { return float64(f32(v)) }
	}
	return f64
}

// floatWriter rounds an exact float64 to type t in mode m (with .ftz, .sat,
// .relu) and returns its bits.
func floatWriter(t ptx.Type, m rounding, ftz, sat, relu bool) func(float64) uint64 {
	return func(x float64) uint64 {
		if sat {
			x = sat64(x)
		}
		if relu {
			x = reluF(x)
		}
		switch t {
		case ptx.TypeF16:
			return uint64(toF16(x, m))
		case ptx.TypeBF16:
			return uint64(toBF16(x, m))
		case ptx.TypeF32:
			v := f64to32(x, m)
			if ftz {
				v = ftz32(v)
			}
			return canon32(v)
		}
		return canon64(x)
	}
}

// saturateInt clamps x (an integer of the source signedness, extended to 64
// bits) to the destination type's range.
func saturateInt(x uint64, srcSigned bool, dw int, dstSigned bool) uint64 {
	var lo, hi int64
	if dstSigned {
		lo, hi = -1<<(dw-1), 1<<(dw-1)-1
	} else {
		lo = 0
		if dw == 64 {
			if srcSigned && int64(x) < 0 {
				return 0
			}
			return x
		}
		hi = 1<<dw - 1
	}
	if srcSigned {
		v := int64(x)
		return uint64(max(min(v, hi), lo))
	}
	if dstSigned && x > uint64(hi) {
		return uint64(hi)
	}
	if !dstSigned && x > uint64(hi) {
		return uint64(hi)
	}
	return x
}

func hCvta(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	to := m.has(".to")
	space := m.one(".global", ".shared", ".shared::cta", ".local", ".const", ".param", ".param::entry")
	t, err := m.typ()
	if err != nil {
		return err
	}
	if t != ptx.TypeU32 && t != ptx.TypeU64 && t != ptx.TypeB32 && t != ptx.TypeB64 && t != ptx.TypeS64 {
		return fc.badType(in, t)
	}
	var win uint64
	switch space {
	case ".global", ".const":
	case ".shared", ".shared::cta":
		win = SharedWindow
	case ".local":
		win = LocalWindow
	case ".param", ".param::entry":
		return unsupported(in.Line, "%s (generic addresses of parameters)", in.Name())
	default:
		return invalid(in.Line, "%s needs a state space", in.Name())
	}
	if to {
		win = -win
	}
	d, s, err := fc.operands(in, t, 1)
	if err != nil {
		return err
	}
	if win == 0 {
		fc.emit(inst{op: opMov, d: d, a: s[0], d2: -1})
		return nil
	}
	op := opAddI64
	if t.Bits() == 32 {
		op = opAddI32
	}
	fc.emit(inst{op: op, d: d, a: s[0], b: fc.konst(win), d2: -1})
	return nil
}

func hIsspacep(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	space := m.one(".global", ".shared", ".shared::cta", ".local", ".const", ".param", ".param::entry", ".shared::cluster")
	if space == "" {
		return invalid(in.Line, "%s needs a state space", in.Name())
	}
	d, s, err := fc.srcs(in, ptx.TypeU64)
	if err != nil {
		return err
	}
	var f func(a uint64) bool
	switch space {
	case ".global":
		f = func(a uint64) bool { return a-SharedWindow >= WindowSize && a-LocalWindow >= WindowSize }
	case ".shared", ".shared::cta", ".shared::cluster":
		f = func(a uint64) bool { return a-SharedWindow < WindowSize }
	case ".local":
		f = func(a uint64) bool { return a-LocalWindow < WindowSize }
	default:
		// .const data lives in global memory and parameters have no generic
		// addresses here: no generic address is in either space.
		f = func(uint64) bool { return false }
	}
	fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = b2u(f(r[in.a])) })
	return nil
}

func hMov(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if err := fc.nops(in, 2); err != nil {
		return err
	}
	if t != ptx.TypePred && (t.Bits() < 16 || t.Bits() > 64) {
		return fc.badType(in, t)
	}
	dv, dvec := in.Operands[0].(*ptx.Vector)
	sv, svec := in.Operands[1].(*ptx.Vector)
	switch {
	case dvec && svec:
		return invalid(in.Line, "%s between two vectors", in.Name())
	case svec: // pack
		n := len(sv.Elems)
		if n < 2 || t.Bits()%n != 0 {
			return invalid(in.Line, "%s packs %d elements", in.Name(), n)
		}
		d, err := fc.dst(in.Operands[0])
		if err != nil {
			return err
		}
		ew := t.Bits() / n
		vec := make([]int32, n)
		for i, e := range sv.Elems {
			if vec[i], err = fc.src(e, ptx.TypeU64); err != nil {
				return err
			}
		}
		fc.emit(inst{op: opALU, d: d, d2: -1, vec: vec, fn: func(r []uint64, in *inst) {
			var v uint64
			for i, s := range in.vec {
				v |= zextW(r[s], ew) << (i * ew)
			}
			r[in.d] = v
		}})
		return nil
	case dvec: // unpack
		n := len(dv.Elems)
		if n < 2 || t.Bits()%n != 0 {
			return invalid(in.Line, "%s unpacks %d elements", in.Name(), n)
		}
		a, err := fc.src(in.Operands[1], t)
		if err != nil {
			return err
		}
		ew := t.Bits() / n
		vec := make([]int32, n)
		for i, e := range dv.Elems {
			if vec[i], err = fc.dst(e); err != nil {
				return err
			}
		}
		fc.emit(inst{op: opALU, a: a, d2: -1, vec: vec, fn: func(r []uint64, in *inst) {
			v := r[in.a]
			for i, s := range in.vec {
				r[s] = zextW(v>>(i*ew), ew)
			}
		}})
		return nil
	}
	d, err := fc.dst(in.Operands[0])
	if err != nil {
		return err
	}
	a, err := fc.src(in.Operands[1], t)
	if err != nil {
		return err
	}
	fc.emit(inst{op: opMov, d: d, a: a, d2: -1})
	return nil
}

// --- memory ---

var spaceMods = []string{".global", ".shared", ".shared::cta", ".local", ".param", ".param::entry", ".param::func", ".const"}

func parseSpace(s string) ptx.StateSpace {
	sp, _ := ptx.ParseStateSpace(s)
	return sp
}

// memType checks a ld/st element type and returns its size and signedness.
func memType(t ptx.Type) (size uint8, signed, ok bool) {
	switch t {
	case ptx.TypeB8, ptx.TypeU8, ptx.TypeS8, ptx.TypeB16, ptx.TypeU16, ptx.TypeS16, ptx.TypeF16, ptx.TypeBF16,
		ptx.TypeB32, ptx.TypeU32, ptx.TypeS32, ptx.TypeF32, ptx.TypeF16x2, ptx.TypeBF16x2,
		ptx.TypeB64, ptx.TypeU64, ptx.TypeS64, ptx.TypeF64:
		return uint8(t.Size()), t.IsSigned() && !t.IsFloat(), true
	}
	return 0, false, false
}

func memVec(m *mods) uint8 {
	switch m.one(".v2", ".v4") {
	case ".v2":
		return 2
	case ".v4":
		return 4
	}
	return 1
}

func hLd(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	return fc.memAccess(in, m, false)
}

func hSt(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	return fc.memAccess(in, m, true)
}

func (fc *fnCompiler) memAccess(in *ptx.Instruction, m *mods, isStore bool) error {
	spaceName := m.one(spaceMods...)
	m.ignore(func(s string) bool { return isScope(s) || isSem(s) || isCacheHint(s) || s == ".unified" })
	count := memVec(m)
	t, err := m.typ()
	if err != nil {
		return err
	}
	size, signed, ok := memType(t)
	if !ok {
		return fc.badType(in, t)
	}
	// A trailing cache-policy operand (.L2::cache_hint) is ignored.
	ops := in.Operands
	if len(ops) == 3 && !isStore || len(ops) == 3 && isStore {
		if _, isAddr := ops[1].(*ptx.Address); isAddr || isStore {
			ops = ops[:2]
		}
	}
	if len(ops) != 2 {
		return invalid(in.Line, "%s has %d operands", in.Name(), len(in.Operands))
	}
	addrOp, valOp := ops[1], ops[0]
	if isStore {
		addrOp, valOp = ops[0], ops[1]
	}
	ref, err := fc.address(addrOp)
	if err != nil {
		return err
	}
	space := parseSpace(spaceName)
	x := inst{size: size, count: count, sext: signed, a: ref.base, imm: ref.off, d2: -1}
	// The value: a register (or immediate, for st), or a vector of them.
	if count == 1 {
		if isStore {
			x.b, err = fc.src(valOp, t)
		} else {
			x.d, err = fc.dst(valOp)
		}
		if err != nil {
			return err
		}
	} else {
		vec, ok := valOp.(*ptx.Vector)
		if !ok || len(vec.Elems) != int(count) {
			return invalid(in.Line, "%s needs a %d-element vector", in.Name(), count)
		}
		x.vec = make([]int32, count)
		for i, e := range vec.Elems {
			if isStore {
				x.vec[i], err = fc.src(e, t)
			} else {
				x.vec[i], err = fc.dst(e)
			}
			if err != nil {
				return err
			}
		}
	}
	if ref.sym != nil && space != ptx.SpaceNone && space != ref.space && !(space == ptx.SpaceGlobal && ref.space == ptx.SpaceConst) {
		return invalid(in.Line, "%s names %s, a %s variable", in.Name(), ref.sym.name, ref.space)
	}
	switch space {
	case ptx.SpaceParam:
		if ref.sym == nil {
			if !fc.fn.kernel || isStore {
				return unsupported(in.Line, "%s through a register address", in.Name())
			}
			x.op = opLdParam
			break
		}
		total := int(size) * int(count)
		if int(ref.off)+total > ref.sym.size {
			return invalid(in.Line, "%s beyond parameter %s", in.Name(), ref.sym.name)
		}
		switch {
		case ref.sym.kind == symKParam && !isStore:
			x.op, x.a, x.imm = opLdParam, slotZero, uint64(ref.sym.off)+ref.off
		case ref.sym.kind == symKParam:
			return unsupported(in.Line, "%s: kernel parameters are read-only here", in.Name())
		case isStore:
			x.op, x.imm = opStFrame, uint64(ref.sym.off)+ref.off
		default:
			x.op, x.imm = opLdFrame, uint64(ref.sym.off)+ref.off
		}
	case ptx.SpaceGlobal, ptx.SpaceConst:
		x.op = opLdGlobal
		if isStore {
			x.op = opStGlobal
			if space == ptx.SpaceConst {
				return invalid(in.Line, "%s: the constant space is read-only", in.Name())
			}
		}
	case ptx.SpaceShared:
		x.op = opLdShared
		if isStore {
			x.op = opStShared
		}
	case ptx.SpaceLocal:
		x.op = opLdLocal
		if isStore {
			x.op = opStLocal
		}
	case ptx.SpaceNone:
		x.op = opLdGeneric
		if isStore {
			x.op = opStGeneric
		}
		if ref.sym != nil {
			// ld [sym] without a space names the variable's own space.
			return fc.retarget(in, &x, ref, isStore)
		}
	default:
		return unsupported(in.Line, "%s in %s", in.Name(), space)
	}
	fc.emit(x)
	return nil
}

// retarget compiles a generic access that names a variable as an access in
// the variable's space.
func (fc *fnCompiler) retarget(in *ptx.Instruction, x *inst, ref memRef, isStore bool) error {
	switch ref.space {
	case ptx.SpaceGlobal, ptx.SpaceConst:
		x.op = opLdGlobal
		if isStore {
			x.op = opStGlobal
		}
	case ptx.SpaceShared:
		x.op = opLdShared
		if isStore {
			x.op = opStShared
		}
	case ptx.SpaceLocal:
		x.op = opLdLocal
		if isStore {
			x.op = opStLocal
		}
	default:
		return unsupported(in.Line, "%s of %s without a state space", in.Name(), ref.sym.name)
	}
	fc.emit(*x)
	return nil
}

// hCp handles the non-bulk cp.async forms. The copy is performed when the
// instruction executes, which cp.async permits (its destination is undefined
// until the wait), so commit_group and wait_group/wait_all have nothing to do.
func hCp(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	if !m.has(".async") {
		return unsupported(in.Line, "instruction %s", in.Name())
	}
	switch {
	case m.has(".commit_group"):
		return fc.nops(in, 0)
	case m.has(".wait_group"), m.has(".wait_all"):
		return nil
	}
	level := m.one(".ca", ".cg")
	dstSpace := m.one(".shared", ".shared::cta")
	srcSpace := m.has(".global")
	m.ignore(func(s string) bool { return strings.HasPrefix(s, ".L2::") || strings.HasPrefix(s, ".L1::") })
	if level == "" || dstSpace == "" || !srcSpace {
		return unsupported(in.Line, "instruction %s", in.Name())
	}
	ops := in.Operands
	if len(ops) < 3 || len(ops) > 5 {
		return invalid(in.Line, "%s has %d operands", in.Name(), len(ops))
	}
	size, _, err := constValue(ops[2], ptx.TypeU32)
	if err != nil || (size != 4 && size != 8 && size != 16) || (level == ".cg" && size != 16) {
		return invalid(in.Line, "%s copies %s bytes", in.Name(), ops[2])
	}
	dst, err := fc.address(ops[0])
	if err != nil {
		return err
	}
	src, err := fc.address(ops[1])
	if err != nil {
		return err
	}
	if dst.sym != nil && dst.space != ptx.SpaceShared || src.sym != nil && src.space != ptx.SpaceGlobal {
		return invalid(in.Line, "%s: operands in the wrong state spaces", in.Name())
	}
	x := inst{op: opCpAsync, size: uint8(size), a: dst.base, imm: dst.off, b: src.base, e: fc.konst(src.off), c: fc.konst(size), d: slotZero, d2: -1}
	for _, op := range ops[3:] {
		// src-size (an integer) or ignore-src (a predicate); a cache policy
		// (a 64-bit register after src-size) is ignored.
		if r, ok := op.(*ptx.Reg); ok {
			if sym := fc.scope.lookup(r.Name); sym != nil && sym.typ == ptx.TypePred {
				x.d, _ = fc.src(op, ptx.TypePred) // ignore-src
				continue
			}
			if sym := fc.scope.lookup(r.Name); sym != nil && sym.typ.Bits() == 64 {
				continue // cache policy
			}
		}
		if n, ok := op.(*ptx.Not); ok {
			return unsupported(in.Line, "%s with a negated ignore-src %s", in.Name(), n)
		}
		if x.c, err = fc.src(op, ptx.TypeU32); err != nil {
			return err
		}
	}
	fc.emit(x)
	return nil
}

// --- atomics ---

func hAtom(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	isRed := in.Opcode == "red"
	spaceName := m.one(".global", ".shared", ".shared::cta")
	m.ignore(func(s string) bool { return isScope(s) || isSem(s) || isCacheHint(s) })
	if v := m.one(".v2", ".v4", ".v8"); v != "" {
		return unsupported(in.Line, "%s (vector atomics)", in.Name())
	}
	op := m.one(".add", ".inc", ".dec", ".cas", ".exch", ".min", ".max", ".and", ".or", ".xor")
	noftz := m.has(".noftz")
	t, err := m.typ()
	if err != nil {
		return err
	}
	if op == "" || noftz {
		return unsupported(in.Line, "%s", in.Name())
	}
	var fn func(old, x, y uint64) uint64
	w := t.Bits()
	switch {
	case op == ".cas" && (t == ptx.TypeB32 || t == ptx.TypeB64):
		fn = func(old, x, y uint64) uint64 {
			if zextW(old, w) == zextW(x, w) {
				return y
			}
			return old
		}
	case op == ".exch" && (t == ptx.TypeB32 || t == ptx.TypeB64):
		fn = func(_, x, _ uint64) uint64 { return x }
	case (op == ".and" || op == ".or" || op == ".xor") && (t == ptx.TypeB32 || t == ptx.TypeB64):
		switch op {
		case ".and":
			fn = func(old, x, _ uint64) uint64 { return old & x }
		case ".or":
			fn = func(old, x, _ uint64) uint64 { return old | x }
		default:
			fn = func(old, x, _ uint64) uint64 { return old ^ x }
		}
	case op == ".add" && t == ptx.TypeF32:
		// atom.add.f32 rounds to nearest and flushes subnormals.
		fn = func(old, x, _ uint64) uint64 { return canon32(ftz32(ftz32(f32(old)) + ftz32(f32(x)))) }
	case op == ".add" && t == ptx.TypeF64:
		fn = func(old, x, _ uint64) uint64 { return canon64(f64(old) + f64(x)) }
	case op == ".add" && (t == ptx.TypeU32 || t == ptx.TypeS32 || t == ptx.TypeU64 || t == ptx.TypeS64):
		fn = func(old, x, _ uint64) uint64 { return old + x }
	case (op == ".inc" || op == ".dec") && t == ptx.TypeU32:
		if op == ".inc" {
			fn = func(old, x, _ uint64) uint64 {
				if uint32(old) >= uint32(x) {
					return 0
				}
				return uint64(uint32(old) + 1)
			}
		} else {
			fn = func(old, x, _ uint64) uint64 {
				if uint32(old) == 0 || uint32(old) > uint32(x) {
					return uint64(uint32(x))
				}
				return uint64(uint32(old) - 1)
			}
		}
	case (op == ".min" || op == ".max") && (t == ptx.TypeU32 || t == ptx.TypeS32 || t == ptx.TypeU64 || t == ptx.TypeS64):
		signed := t.IsSigned()
		isMax := op == ".max"
		fn = func(old, x, _ uint64) uint64 {
			var v uint64
			switch {
			case signed && isMax:
				v = maxS(old, x, w)
			case signed:
				v = minS(old, x, w)
			case isMax:
				v = maxU(old, x, w)
			default:
				v = minU(old, x, w)
			}
			return v
		}
	default:
		return unsupported(in.Line, "%s", in.Name())
	}
	nsrc := 1
	if op == ".cas" {
		nsrc = 2
	}
	ops := in.Operands
	// A trailing cache-policy operand is ignored.
	if len(ops) == nsrc+3 && !isRed || isRed && len(ops) == nsrc+2 {
		ops = ops[:len(ops)-1]
	}
	want := nsrc + 2
	if isRed {
		want = nsrc + 1
	}
	if len(ops) != want {
		return invalid(in.Line, "%s has %d operands", in.Name(), len(in.Operands))
	}
	x := inst{op: opAtom, size: uint8(w / 8), d: -1, d2: -1, atom: fn, b: slotZero, c: slotZero}
	if !isRed {
		if x.d, err = fc.dst(ops[0]); err != nil {
			return err
		}
		ops = ops[1:]
	}
	ref, err := fc.address(ops[0])
	if err != nil {
		return err
	}
	x.a, x.imm = ref.base, ref.off
	if x.b, err = fc.src(ops[1], t); err != nil {
		return err
	}
	if nsrc == 2 {
		if x.c, err = fc.src(ops[2], t); err != nil {
			return err
		}
	}
	switch parseSpace(spaceName) {
	case ptx.SpaceGlobal:
		x.space = spGlobal
	case ptx.SpaceShared:
		x.space = spShared
	default:
		x.space = spGeneric
		if ref.sym != nil {
			switch ref.space {
			case ptx.SpaceGlobal:
				x.space = spGlobal
			case ptx.SpaceShared:
				x.space = spShared
			default:
				return unsupported(in.Line, "%s on %s", in.Name(), ref.sym.name)
			}
		}
	}
	if ref.sym != nil && ref.space != ptx.SpaceGlobal && ref.space != ptx.SpaceShared {
		return unsupported(in.Line, "%s on %s variable %s", in.Name(), ref.space, ref.sym.name)
	}
	fc.emit(x)
	return nil
}

// --- barriers and warp collectives ---

func hBar(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	m.has(".cta")
	m.has(".aligned")
	kind := m.one(".sync", ".arrive", ".red")
	if in.Opcode == "bar" && kind == "" && len(in.Mods) == 0 {
		kind = ".sync"
	}
	if in.Opcode == "bar" && m.has(".warp") {
		// bar.warp.sync membermask: the warp barrier.
		if kind != ".sync" {
			return unsupported(in.Line, "%s", in.Name())
		}
		if err := fc.nops(in, 1); err != nil {
			return err
		}
		mask, err := fc.src(in.Operands[0], ptx.TypeB32)
		if err != nil {
			return err
		}
		fc.emit(inst{op: opWarp, kind: wSyncwarp, d: fc.sink, d2: -1, a: slotZero, b: slotZero, c: slotZero, e: mask})
		return nil
	}
	x := inst{op: opBar, d: fc.sink, b: -1, c: -1, d2: -1}
	ops := in.Operands
	var err error
	switch kind {
	case ".sync", ".arrive":
		x.kind = barSync
		if kind == ".arrive" {
			x.kind = barArrive
		}
		if len(ops) < 1 || len(ops) > 2 || kind == ".arrive" && len(ops) != 2 {
			return invalid(in.Line, "%s has %d operands", in.Name(), len(ops))
		}
	case ".red":
		red := m.one(".popc", ".and", ".or")
		rt := m.types()
		switch red {
		case ".popc":
			x.kind = barRedPopc
			if len(rt) != 1 || rt[0] != ptx.TypeU32 {
				return invalid(in.Line, "%s needs .u32", in.Name())
			}
		case ".and", ".or":
			x.kind = barRedAnd
			if red == ".or" {
				x.kind = barRedOr
			}
			if len(rt) != 1 || rt[0] != ptx.TypePred {
				return invalid(in.Line, "%s needs .pred", in.Name())
			}
		default:
			return unsupported(in.Line, "%s", in.Name())
		}
		if len(ops) < 3 || len(ops) > 4 {
			return invalid(in.Line, "%s has %d operands", in.Name(), len(ops))
		}
		if x.d, err = fc.dst(ops[0]); err != nil {
			return err
		}
		var neg bool
		if x.c, neg, err = fc.pred(ops[len(ops)-1]); err != nil {
			return err
		}
		if neg {
			x.flag = 1
		}
		ops = ops[1 : len(ops)-1]
	default:
		return unsupported(in.Line, "%s", in.Name())
	}
	if x.a, err = fc.src(ops[0], ptx.TypeU32); err != nil {
		return err
	}
	if len(ops) == 2 {
		if x.b, err = fc.src(ops[1], ptx.TypeU32); err != nil {
			return err
		}
	}
	fc.emit(x)
	return nil
}

func hShfl(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	if !m.has(".sync") {
		return unsupported(in.Line, "%s (only shfl.sync)", in.Name())
	}
	var kind uint8
	switch m.one(".up", ".down", ".bfly", ".idx") {
	case ".up":
		kind = wShflUp
	case ".down":
		kind = wShflDown
	case ".bfly":
		kind = wShflBfly
	case ".idx":
		kind = wShflIdx
	default:
		return invalid(in.Line, "%s needs a mode", in.Name())
	}
	t, err := m.typ()
	if err != nil {
		return err
	}
	if t != ptx.TypeB32 {
		return fc.badType(in, t)
	}
	if err := fc.nops(in, 5); err != nil {
		return err
	}
	x := inst{op: opWarp, kind: kind, d2: -1}
	if pair, ok := in.Operands[0].(*ptx.Pair); ok {
		if x.d, err = fc.dst(pair.First); err != nil {
			return err
		}
		if x.d2, err = fc.dst(pair.Second); err != nil {
			return err
		}
	} else if x.d, err = fc.dst(in.Operands[0]); err != nil {
		return err
	}
	slots := []*int32{&x.a, &x.b, &x.c, &x.e}
	for i, p := range slots {
		if *p, err = fc.src(in.Operands[i+1], ptx.TypeB32); err != nil {
			return err
		}
	}
	fc.emit(x)
	return nil
}

func hVote(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	if !m.has(".sync") {
		return unsupported(in.Line, "%s (only vote.sync)", in.Name())
	}
	mode := m.one(".all", ".any", ".uni", ".ballot")
	t, err := m.typ()
	if err != nil {
		return err
	}
	x := inst{op: opWarp, d2: -1, b: slotZero, c: slotZero}
	switch mode {
	case ".all":
		x.kind = wVoteAll
	case ".any":
		x.kind = wVoteAny
	case ".uni":
		x.kind = wVoteUni
	case ".ballot":
		x.kind = wVoteBallot
	default:
		return invalid(in.Line, "%s needs a mode", in.Name())
	}
	if (mode == ".ballot") != (t == ptx.TypeB32) || (mode != ".ballot" && t != ptx.TypePred) {
		return fc.badType(in, t)
	}
	if err := fc.nops(in, 3); err != nil {
		return err
	}
	if x.d, err = fc.dst(in.Operands[0]); err != nil {
		return err
	}
	var neg bool
	if x.a, neg, err = fc.pred(in.Operands[1]); err != nil {
		return err
	}
	if neg {
		x.flag = 1
	}
	if x.e, err = fc.src(in.Operands[2], ptx.TypeB32); err != nil {
		return err
	}
	fc.emit(x)
	return nil
}

func hMatch(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	mode := m.one(".any", ".all")
	if !m.has(".sync") {
		return unsupported(in.Line, "%s (only match.sync)", in.Name())
	}
	t, err := m.typ()
	if err != nil {
		return err
	}
	if t != ptx.TypeB32 && t != ptx.TypeB64 {
		return fc.badType(in, t)
	}
	x := inst{op: opWarp, d2: -1, b: slotZero, c: slotZero}
	switch {
	case mode == ".any" && t == ptx.TypeB32:
		x.kind = wMatchAny32
	case mode == ".any":
		x.kind = wMatchAny64
	case mode == ".all" && t == ptx.TypeB32:
		x.kind = wMatchAll32
	case mode == ".all":
		x.kind = wMatchAll64
	default:
		return invalid(in.Line, "%s needs .any or .all", in.Name())
	}
	if err := fc.nops(in, 3); err != nil {
		return err
	}
	if pair, ok := in.Operands[0].(*ptx.Pair); ok && mode == ".all" {
		if x.d, err = fc.dst(pair.First); err != nil {
			return err
		}
		if x.d2, err = fc.dst(pair.Second); err != nil {
			return err
		}
	} else if x.d, err = fc.dst(in.Operands[0]); err != nil {
		return err
	}
	if x.a, err = fc.src(in.Operands[1], t); err != nil {
		return err
	}
	if x.e, err = fc.src(in.Operands[2], ptx.TypeB32); err != nil {
		return err
	}
	fc.emit(x)
	return nil
}

func hRedux(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	if !m.has(".sync") {
		return unsupported(in.Line, "%s", in.Name())
	}
	op := m.one(".add", ".min", ".max", ".and", ".or", ".xor")
	t, err := m.typ()
	if err != nil {
		return err
	}
	x := inst{op: opWarp, d2: -1, b: slotZero, c: slotZero}
	switch {
	case op == ".add" && (t == ptx.TypeU32 || t == ptx.TypeS32):
		x.kind = wReduxAdd
	case op == ".min" && t == ptx.TypeU32:
		x.kind = wReduxMinU
	case op == ".max" && t == ptx.TypeU32:
		x.kind = wReduxMaxU
	case op == ".min" && t == ptx.TypeS32:
		x.kind = wReduxMinS
	case op == ".max" && t == ptx.TypeS32:
		x.kind = wReduxMaxS
	case op == ".and" && t == ptx.TypeB32:
		x.kind = wReduxAnd
	case op == ".or" && t == ptx.TypeB32:
		x.kind = wReduxOr
	case op == ".xor" && t == ptx.TypeB32:
		x.kind = wReduxXor
	default:
		return unsupported(in.Line, "%s", in.Name())
	}
	if err := fc.nops(in, 3); err != nil {
		return err
	}
	if x.d, err = fc.dst(in.Operands[0]); err != nil {
		return err
	}
	if x.a, err = fc.src(in.Operands[1], t); err != nil {
		return err
	}
	if x.e, err = fc.src(in.Operands[2], ptx.TypeB32); err != nil {
		return err
	}
	fc.emit(x)
	return nil
}

func hActivemask(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if t != ptx.TypeB32 {
		return fc.badType(in, t)
	}
	if err := fc.nops(in, 1); err != nil {
		return err
	}
	d, err := fc.dst(in.Operands[0])
	if err != nil {
		return err
	}
	fc.emit(inst{op: opWarp, kind: wActivemask, d: d, d2: -1, a: slotZero, b: slotZero, c: slotZero, e: slotZero})
	return nil
}

// --- calls ---

func hCall(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	m.has(".uni")
	var rets, args *ptx.Paren
	var callee ptx.Operand
	for _, op := range in.Operands {
		switch op := op.(type) {
		case *ptx.Paren:
			if callee == nil {
				if rets != nil {
					return invalid(in.Line, "call has two return lists")
				}
				rets = op
			} else if args == nil {
				args = op
			} else {
				return invalid(in.Line, "call has extra operands")
			}
		default:
			if callee != nil {
				// A prototype or target list: only indirect calls have one.
				return unsupported(in.Line, "indirect call through %s", callee)
			}
			callee = op
		}
	}
	sym, ok := callee.(*ptx.Symbol)
	if !ok {
		return unsupported(in.Line, "indirect call through %v", callee)
	}
	target := fc.kc.c.funcs[sym.Name]
	if target == nil || target.Entry {
		return invalid(in.Line, "call to %s, which is not a device function", sym.Name)
	}
	if target.Body == nil && sym.Name == "__assertfail" && len(target.Params) == 5 {
		// assert() in device code: the kernel traps, reporting the message.
		argRefs, err := fc.paramRefs(in, args, len(target.Params), sym.Name, "arguments")
		if err != nil {
			return err
		}
		fc.emit(inst{op: opTrap, call: &callSite{args: argRefs}, d2: -1})
		return nil
	}
	if target.Body == nil && sym.Name == "vprintf" && len(target.Params) == 2 && len(target.Returns) == 1 {
		site := &callSite{}
		var err error
		if site.args, err = fc.paramRefs(in, args, 2, sym.Name, "arguments"); err != nil {
			return err
		}
		if site.rets, err = fc.paramRefs(in, rets, 1, sym.Name, "return values"); err != nil {
			return err
		}
		fc.emit(inst{op: opPrintf, call: site, d2: -1})
		return nil
	}
	fn, err := fc.kc.function(target)
	if err != nil {
		return err
	}
	site := &callSite{callee: fn}
	if site.args, err = fc.paramRefs(in, args, len(target.Params), sym.Name, "arguments"); err != nil {
		return err
	}
	if site.rets, err = fc.paramRefs(in, rets, len(target.Returns), sym.Name, "return values"); err != nil {
		return err
	}
	fc.emit(inst{op: opCall, call: site, d2: -1})
	return nil
}

// paramRefs resolves a call's argument or return list: .param variables of
// the caller's frame.
func (fc *fnCompiler) paramRefs(in *ptx.Instruction, p *ptx.Paren, want int, callee, what string) ([]paramRef, error) {
	n := 0
	if p != nil {
		n = len(p.Elems)
	}
	if n != want {
		return nil, invalid(in.Line, "call to %s passes %d %s, it takes %d", callee, n, what, want)
	}
	var out []paramRef
	if p == nil {
		return out, nil
	}
	for _, e := range p.Elems {
		var name string
		switch e := e.(type) {
		case *ptx.Symbol:
			name = e.Name
		case *ptx.Reg:
			name = e.Name
		default:
			return nil, unsupported(in.Line, "call argument %s (only .param variables)", e)
		}
		ps := fc.scope.lookup(name)
		if ps == nil || ps.kind != symFParam {
			return nil, unsupported(in.Line, "call argument %s (only .param variables)", name)
		}
		out = append(out, paramRef{off: ps.off, size: ps.size})
	}
	return out, nil
}

var _ = math.Inf
