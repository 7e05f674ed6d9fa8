package interp

import (
	"math"
	"strings"

	"github.com/gpuos/gpuos/internal/ptx"
)

// Instruction selection: each PTX opcode has a handler that consumes the
// modifiers it understands and emits IR. A modifier no handler consumed makes
// the instruction unsupported, so nothing is silently ignored.

type handler func(fc *fnCompiler, in *ptx.Instruction, m *mods) error

var handlers map[string]handler

func init() {
	handlers = map[string]handler{
		"add": hAddSub, "sub": hAddSub, "addc": hAddcSubc, "subc": hAddcSubc,
		"mul": hMul, "mad": hMad, "madc": hMadc, "fma": hFma,
		"mul24": hMul24, "mad24": hMul24, "sad": hSad,
		"div": hDiv, "rem": hRem, "abs": hAbsNeg, "neg": hAbsNeg,
		"min": hMinMax, "max": hMinMax,
		"popc": hBitCount, "clz": hBitCount, "brev": hBitCount, "bfind": hBfind,
		"bfe": hBfe, "bfi": hBfi, "prmt": hPrmt, "lop3": hLop3, "shf": hShf,
		"dp4a": hDp, "dp2a": hDp, "bmsk": hBmsk, "szext": hSzext,
		"and": hLogic, "or": hLogic, "xor": hLogic, "not": hLogic, "cnot": hLogic,
		"shl": hShift, "shr": hShift,
		"setp": hSetp, "set": hSetp, "selp": hSelp, "slct": hSlct,
		"rcp": hUnaryFloat, "sqrt": hUnaryFloat, "rsqrt": hUnaryFloat, "ex2": hUnaryFloat,
		"lg2": hUnaryFloat, "sin": hUnaryFloat, "cos": hUnaryFloat, "tanh": hUnaryFloat,
		"copysign": hCopysign, "testp": hTestp,
		"cvt": hCvt, "cvta": hCvta, "isspacep": hIsspacep, "mov": hMov,
		"ld": hLd, "ldu": hLd, "st": hSt, "prefetch": hNop, "prefetchu": hNop,
		"atom": hAtom, "red": hAtom,
		"bar": hBar, "barrier": hBar, "membar": hNop, "fence": hNop,
		"shfl": hShfl, "vote": hVote, "match": hMatch, "redux": hRedux, "activemask": hActivemask,
		"bra": hBra, "call": hCall, "ret": hRet, "exit": hExit, "trap": hTrap, "brkpt": hTrap,
		"nanosleep": hNanosleep, "pmevent": hNop, "createpolicy": hCreatepolicy, "cp": hCp,
	}
}

func (fc *fnCompiler) instruction(in *ptx.Instruction) error {
	fc.guard, fc.gneg = slotTrue, 0
	if in.Guard != nil {
		s, err := fc.reg(in.Guard.Reg.Name)
		if err != nil {
			return err
		}
		fc.guard = s
		if in.Guard.Negated {
			fc.gneg = 1
		}
	}
	h, ok := handlers[in.Opcode]
	if !ok {
		return unsupported(in.Line, "instruction %s", in.Name())
	}
	m := &mods{list: in.Mods, used: make([]bool, len(in.Mods)), in: in}
	if err := h(fc, in, m); err != nil {
		return err
	}
	if err := fc.checkSlots(); err != nil {
		return err
	}
	return m.done()
}

// mods tracks which of an instruction's modifiers a handler consumed.
type mods struct {
	list []string
	used []bool
	in   *ptx.Instruction
}

func (m *mods) has(mod string) bool {
	for i, s := range m.list {
		if s == mod && !m.used[i] {
			m.used[i] = true
			return true
		}
	}
	return false
}

// one consumes the first of opts present and returns it, or "".
func (m *mods) one(opts ...string) string {
	for i, s := range m.list {
		if m.used[i] {
			continue
		}
		for _, o := range opts {
			if s == o {
				m.used[i] = true
				return s
			}
		}
	}
	return ""
}

// types consumes every type modifier, in order.
func (m *mods) types() []ptx.Type {
	var ts []ptx.Type
	for i, s := range m.list {
		if m.used[i] {
			continue
		}
		if t, ok := ptx.ParseType(s); ok {
			m.used[i] = true
			ts = append(ts, t)
		}
	}
	return ts
}

// typ consumes exactly one type modifier.
func (m *mods) typ() (ptx.Type, error) {
	ts := m.types()
	if len(ts) != 1 {
		return 0, invalid(m.in.Line, "%s needs exactly one type", m.in.Name())
	}
	return ts[0], nil
}

// rounding consumes a floating-point rounding modifier; ok is false if none.
func (m *mods) rounding() (rounding, bool) {
	switch m.one(".rn", ".rz", ".rm", ".rp") {
	case ".rn":
		return rn, true
	case ".rz":
		return rz, true
	case ".rm":
		return rm, true
	case ".rp":
		return rp, true
	}
	return rn, false
}

// ignore consumes modifiers that do not change the result under the
// interpreter's memory model (cache operators, eviction priorities, scopes).
func (m *mods) ignore(pred func(string) bool) {
	for i, s := range m.list {
		if !m.used[i] && pred(s) {
			m.used[i] = true
		}
	}
}

func (m *mods) done() error {
	for i, s := range m.list {
		if !m.used[i] {
			return unsupported(m.in.Line, "modifier %s of %s", s, m.in.Name())
		}
	}
	return nil
}

func isScope(s string) bool {
	switch s {
	case ".cta", ".gpu", ".sys", ".cluster":
		return true
	}
	return false
}

func isSem(s string) bool {
	switch s {
	case ".relaxed", ".acquire", ".release", ".acq_rel", ".sc", ".weak", ".volatile", ".mmio":
		return true
	}
	return false
}

func isCacheHint(s string) bool {
	switch s {
	case ".ca", ".cg", ".cs", ".lu", ".cv", ".wb", ".wt", ".nc":
		return true
	}
	return strings.HasPrefix(s, ".L1::") || strings.HasPrefix(s, ".L2::")
}

// --- helpers ---

func (fc *fnCompiler) nops(in *ptx.Instruction, n ...int) error {
	for _, k := range n {
		if len(in.Operands) == k {
			return nil
		}
	}
	return invalid(in.Line, "%s has %d operands", in.Name(), len(in.Operands))
}

// operands resolves d and the sources of an instruction whose operands all
// have type t.
func (fc *fnCompiler) operands(in *ptx.Instruction, t ptx.Type, n int) (d int32, s [4]int32, err error) {
	if err = fc.nops(in, n+1); err != nil {
		return
	}
	if d, err = fc.dst(in.Operands[0]); err != nil {
		return
	}
	for i := 0; i < n; i++ {
		if s[i], err = fc.src(in.Operands[i+1], t); err != nil {
			return
		}
	}
	return
}

// alu emits an arithmetic instruction d = fn(sources).
func (fc *fnCompiler) alu(d int32, s [4]int32, fn aluFn) {
	fc.emit(inst{op: opALU, d: d, a: s[0], b: s[1], c: s[2], e: s[3], d2: -1, fn: fn})
}

func isInt(t ptx.Type) bool { return t.IsInteger() && t.Bits() >= 8 && t.Bits() <= 64 }

func intKind(t ptx.Type) (width int, signed bool) { return t.Bits(), t.IsSigned() }

func (fc *fnCompiler) badType(in *ptx.Instruction, t ptx.Type) error {
	return unsupported(in.Line, "%s with type %s", in.Name(), t)
}

// binInt wraps a width-generic integer function as an ALU op.
func binInt(f func(a, b uint64, width int, signed bool) uint64, width int, signed bool) aluFn {
	return func(r []uint64, in *inst) { r[in.d] = f(r[in.a], r[in.b], width, signed) }
}

// --- integer and float arithmetic ---

func hAddSub(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	sub := in.Opcode == "sub"
	t, err := m.typ()
	if err != nil {
		return err
	}
	if isHalf(t) {
		return fc.halfArith(in, m, t, map[bool]string{false: "add", true: "sub"}[sub])
	}
	if t.IsFloat() {
		return fc.floatBinary(in, m, t, map[bool]string{false: "add", true: "sub"}[sub])
	}
	if !isInt(t) || t.Bits() < 16 {
		return fc.badType(in, t)
	}
	cc := m.has(".cc")
	sat := m.has(".sat")
	d, s, err := fc.operands(in, t, 2)
	if err != nil {
		return err
	}
	w, signed := intKind(t)
	switch {
	case cc:
		if w < 32 {
			return fc.badType(in, t)
		}
		s[3] = fc.carry()
		fc.alu(d, s, carryOp(sub, w, false, true))
		fc.fn.code[len(fc.fn.code)-1].e = s[3]
	case sat:
		if t != ptx.TypeS32 {
			return fc.badType(in, t)
		}
		fc.alu(d, s, map[bool]aluFn{false: addSatS32, true: subSatS32}[sub])
	case !sub && w == 32:
		fc.emit(inst{op: opAddI32, d: d, a: s[0], b: s[1], d2: -1})
	case !sub && w == 64:
		fc.emit(inst{op: opAddI64, d: d, a: s[0], b: s[1], d2: -1})
	default:
		_ = signed
		fc.alu(d, s, pickW(w, sub, addI[uint16], addI[uint32], addI[uint64], subI[uint16], subI[uint32], subI[uint64]))
	}
	return nil
}

func pickW(w int, alt bool, a16, a32, a64, b16, b32, b64 aluFn) aluFn {
	if alt {
		a16, a32, a64 = b16, b32, b64
	}
	switch w {
	case 16:
		return a16
	case 32:
		return a32
	}
	return a64
}

// carry returns the slot of the CC.CF flag.
func (fc *fnCompiler) carry() int32 {
	if fc.cc < 0 {
		fc.cc = fc.newSlot()
	}
	return fc.cc
}

func carryOp(sub bool, w int, cin, cout bool) aluFn {
	switch {
	case !sub && w == 32:
		return func(r []uint64, in *inst) { addCC32(r, in, r[in.e]&b2u(cin), cout) }
	case !sub:
		return func(r []uint64, in *inst) { addCC64(r, in, r[in.e]&b2u(cin), cout) }
	case w == 32:
		return func(r []uint64, in *inst) { subCC32(r, in, r[in.e]&b2u(cin), cout) }
	}
	return func(r []uint64, in *inst) { subCC64(r, in, r[in.e]&b2u(cin), cout) }
}

func hAddcSubc(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	cout := m.has(".cc")
	t, err := m.typ()
	if err != nil {
		return err
	}
	if !isInt(t) || t.Bits() < 32 {
		return fc.badType(in, t)
	}
	d, s, err := fc.operands(in, t, 2)
	if err != nil {
		return err
	}
	s[3] = fc.carry()
	fc.alu(d, s, carryOp(in.Opcode == "subc", t.Bits(), true, cout))
	return nil
}

func hMul(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	mode := m.one(".lo", ".hi", ".wide")
	t, err := m.typ()
	if err != nil {
		return err
	}
	if isHalf(t) && mode == "" {
		return fc.halfArith(in, m, t, "mul")
	}
	if t.IsFloat() {
		if mode != "" {
			return fc.badType(in, t)
		}
		return fc.floatBinary(in, m, t, "mul")
	}
	if !isInt(t) || t.Bits() < 16 {
		return fc.badType(in, t)
	}
	if mode == "" {
		return invalid(in.Line, "%s needs .lo, .hi or .wide", in.Name())
	}
	d, s, err := fc.operands(in, t, 2)
	if err != nil {
		return err
	}
	w, signed := intKind(t)
	switch mode {
	case ".lo":
		fc.alu(d, s, pickW(w, false, mulLo[uint16], mulLo[uint32], mulLo[uint64], nil, nil, nil))
	case ".hi":
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = mulHi(r[in.a], r[in.b], w, signed) })
	case ".wide":
		if w == 64 {
			return fc.badType(in, t)
		}
		if w == 32 && signed {
			fc.alu(d, s, mulWideS32)
		} else {
			fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = mulWide(r[in.a], r[in.b], w, signed) })
		}
	}
	return nil
}

func mulWideS32(r []uint64, in *inst) {
	r[in.d] = uint64(int64(int32(r[in.a])) * int64(int32(r[in.b])))
}

func madLoS32(r []uint64, in *inst) {
	r[in.d] = uint64(uint32(r[in.a])*uint32(r[in.b]) + uint32(r[in.c]))
}

func hMad(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	mode := m.one(".lo", ".hi", ".wide")
	t, err := m.typ()
	if err != nil {
		return err
	}
	if t.IsFloat() {
		if mode != "" {
			return fc.badType(in, t)
		}
		// mad.f32/f64 is fused (identical to fma.rn) on every target the
		// interpreter models.
		return fc.floatFma(in, m, t, false)
	}
	if !isInt(t) || t.Bits() < 16 {
		return fc.badType(in, t)
	}
	if mode == "" {
		return invalid(in.Line, "%s needs .lo, .hi or .wide", in.Name())
	}
	cc := m.has(".cc")
	sat := m.has(".sat")
	w, signed := intKind(t)
	if mode == ".wide" {
		if w == 64 || cc || sat {
			return fc.badType(in, t)
		}
		if err := fc.nops(in, 4); err != nil {
			return err
		}
		d, err := fc.dst(in.Operands[0])
		if err != nil {
			return err
		}
		var s [4]int32
		for i, op := range in.Operands[1:] {
			tt := t
			if i == 2 {
				tt = ptx.TypeU64
			}
			if s[i], err = fc.src(op, tt); err != nil {
				return err
			}
		}
		wideT := map[int]ptx.Type{16: ptx.TypeU32, 32: ptx.TypeU64}[w]
		fc.alu(d, s, func(r []uint64, in *inst) {
			r[in.d] = mulWide(r[in.a], r[in.b], w, signed) + zextW(r[in.c], wideT.Bits())
		})
		return nil
	}
	d, s, err := fc.operands(in, t, 3)
	if err != nil {
		return err
	}
	hi := mode == ".hi"
	switch {
	case sat:
		if !hi || t != ptx.TypeS32 || cc {
			return fc.badType(in, t)
		}
		fc.alu(d, s, func(r []uint64, in *inst) {
			r[in.d] = satS32(int64(int32(mulHi(r[in.a], r[in.b], 32, true))) + int64(int32(r[in.c])))
		})
	case cc:
		if w < 32 {
			return fc.badType(in, t)
		}
		s[3] = fc.carry()
		fc.alu(d, s, madCarry(w, signed, hi, false, true))
	case !hi && w == 32:
		fc.alu(d, s, madLoS32)
	case !hi:
		fc.alu(d, s, pickW(w, false, madLo[uint16], madLo[uint32], madLo[uint64], nil, nil, nil))
	default:
		fc.alu(d, s, func(r []uint64, in *inst) {
			r[in.d] = zextW(mulHi(r[in.a], r[in.b], w, signed)+r[in.c], w)
		})
	}
	return nil
}

// madCarry: d = (a·b).lo/hi + c (+ CF), optionally setting CF.
func madCarry(w int, signed, hi, cin, cout bool) aluFn {
	return func(r []uint64, in *inst) {
		var p uint64
		if hi {
			p = mulHi(r[in.a], r[in.b], w, signed)
		} else {
			p = r[in.a] * r[in.b]
		}
		c := r[in.e] & b2u(cin)
		if w == 32 {
			s := uint64(uint32(p)) + uint64(uint32(r[in.c])) + c
			r[in.d] = uint64(uint32(s))
			if cout {
				r[in.e] = s >> 32
			}
			return
		}
		s, co := addCarry64(p, r[in.c], c)
		r[in.d] = s
		if cout {
			r[in.e] = co
		}
	}
}

func addCarry64(a, b, c uint64) (uint64, uint64) {
	s := a + b
	co := b2u(s < a)
	s2 := s + c
	co |= b2u(s2 < s)
	return s2, co
}

func hMadc(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	mode := m.one(".lo", ".hi")
	cout := m.has(".cc")
	t, err := m.typ()
	if err != nil {
		return err
	}
	if !isInt(t) || t.Bits() < 32 || mode == "" {
		return fc.badType(in, t)
	}
	d, s, err := fc.operands(in, t, 3)
	if err != nil {
		return err
	}
	s[3] = fc.carry()
	fc.alu(d, s, madCarry(t.Bits(), t.IsSigned(), mode == ".hi", true, cout))
	return nil
}

func hMul24(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	mode := m.one(".lo", ".hi")
	sat := m.has(".sat")
	t, err := m.typ()
	if err != nil {
		return err
	}
	if (t != ptx.TypeU32 && t != ptx.TypeS32) || mode == "" || sat {
		return fc.badType(in, t)
	}
	n := 2
	if in.Opcode == "mad24" {
		n = 3
	}
	d, s, err := fc.operands(in, t, n)
	if err != nil {
		return err
	}
	signed, hi := t.IsSigned(), mode == ".hi"
	if n == 2 {
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = mul24(r[in.a], r[in.b], signed, hi) })
	} else {
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = uint64(uint32(mul24(r[in.a], r[in.b], signed, hi) + r[in.c])) })
	}
	return nil
}

func hSad(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if !isInt(t) || t.Bits() < 16 {
		return fc.badType(in, t)
	}
	d, s, err := fc.operands(in, t, 3)
	if err != nil {
		return err
	}
	w, signed := intKind(t)
	fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = sad(r[in.a], r[in.b], r[in.c], w, signed) })
	return nil
}

func hDiv(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if t.IsFloat() {
		return fc.floatDiv(in, m, t)
	}
	if !isInt(t) || t.Bits() < 16 {
		return fc.badType(in, t)
	}
	d, s, err := fc.operands(in, t, 2)
	if err != nil {
		return err
	}
	w, signed := intKind(t)
	if signed {
		fc.alu(d, s, binInt(func(a, b uint64, w int, _ bool) uint64 { return divS(a, b, w) }, w, true))
	} else {
		fc.alu(d, s, binInt(func(a, b uint64, w int, _ bool) uint64 { return divU(a, b, w) }, w, false))
	}
	return nil
}

func hRem(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if !isInt(t) || t.Bits() < 16 {
		return fc.badType(in, t)
	}
	d, s, err := fc.operands(in, t, 2)
	if err != nil {
		return err
	}
	w, signed := intKind(t)
	if signed {
		fc.alu(d, s, binInt(func(a, b uint64, w int, _ bool) uint64 { return remS(a, b, w) }, w, true))
	} else {
		fc.alu(d, s, binInt(func(a, b uint64, w int, _ bool) uint64 { return remU(a, b, w) }, w, false))
	}
	return nil
}

func hAbsNeg(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	neg := in.Opcode == "neg"
	t, err := m.typ()
	if err != nil {
		return err
	}
	if isHalf(t) {
		return fc.halfArith(in, m, t, in.Opcode)
	}
	ftz := m.has(".ftz")
	d, s, err := fc.operands(in, t, 1)
	if err != nil {
		return err
	}
	switch {
	case t == ptx.TypeF32:
		fc.alu(d, s, func(r []uint64, in *inst) {
			x := f32(r[in.a])
			if ftz {
				x = ftz32(x)
			}
			b := math.Float32bits(x)
			if neg {
				b ^= 1 << 31
			} else {
				b &^= 1 << 31
			}
			r[in.d] = uint64(b)
		})
	case t == ptx.TypeF64 && !ftz:
		if neg {
			fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = r[in.a] ^ 1<<63 })
		} else {
			fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = r[in.a] &^ (1 << 63) })
		}
	case isInt(t) && t.IsSigned() && t.Bits() >= 16 && !ftz:
		w := t.Bits()
		if neg {
			fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = -r[in.a] })
		} else {
			fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = absS(r[in.a], w) })
		}
	default:
		return fc.badType(in, t)
	}
	return nil
}

func hMinMax(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	isMax := in.Opcode == "max"
	t, err := m.typ()
	if err != nil {
		return err
	}
	if isHalf(t) {
		return fc.halfArith(in, m, t, in.Opcode)
	}
	ftz := m.has(".ftz")
	nan := m.has(".NaN")
	relu := m.has(".relu")
	d, s, err := fc.operands(in, t, 2)
	if err != nil {
		return err
	}
	switch {
	case t == ptx.TypeF32 && !relu:
		op := fmin
		if isMax {
			op = fmax
		}
		fc.alu(d, s, func(r []uint64, in *inst) {
			a, b := f32(r[in.a]), f32(r[in.b])
			if ftz {
				a, b = ftz32(a), ftz32(b)
			}
			r[in.d] = canon32(float32(op(float64(a), float64(b), nan)))
		})
	case t == ptx.TypeF64 && !ftz && !relu:
		op := fmin
		if isMax {
			op = fmax
		}
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = canon64(op(f64(r[in.a]), f64(r[in.b]), nan)) })
	case isInt(t) && t.Bits() >= 16 && !ftz && !nan:
		w, signed := intKind(t)
		if relu && t != ptx.TypeS32 {
			return fc.badType(in, t)
		}
		var f func(a, b uint64, w int) uint64
		switch {
		case signed && isMax:
			f = maxS
		case signed:
			f = minS
		case isMax:
			f = maxU
		default:
			f = minU
		}
		fc.alu(d, s, func(r []uint64, in *inst) {
			v := f(r[in.a], r[in.b], w)
			if relu && int32(v) < 0 {
				v = 0
			}
			r[in.d] = v
		})
	default:
		return fc.badType(in, t)
	}
	return nil
}

func hBitCount(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if t != ptx.TypeB32 && t != ptx.TypeB64 {
		return fc.badType(in, t)
	}
	d, s, err := fc.operands(in, t, 1)
	if err != nil {
		return err
	}
	w := t.Bits()
	switch in.Opcode {
	case "popc":
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = popc(r[in.a], w) })
	case "clz":
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = clz(r[in.a], w) })
	case "brev":
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = brev(r[in.a], w) })
	}
	return nil
}

func hBfind(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	sa := m.has(".shiftamt")
	t, err := m.typ()
	if err != nil {
		return err
	}
	if !isInt(t) || t.Bits() < 32 || strings.HasPrefix(t.String(), ".b") {
		return fc.badType(in, t)
	}
	d, s, err := fc.operands(in, t, 1)
	if err != nil {
		return err
	}
	w, signed := intKind(t)
	fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = bfind(r[in.a], w, signed, sa) })
	return nil
}

// srcs resolves operands 1.. with the given types.
func (fc *fnCompiler) srcs(in *ptx.Instruction, ts ...ptx.Type) (d int32, s [4]int32, err error) {
	if err = fc.nops(in, len(ts)+1); err != nil {
		return
	}
	if d, err = fc.dst(in.Operands[0]); err != nil {
		return
	}
	for i, t := range ts {
		if s[i], err = fc.src(in.Operands[i+1], t); err != nil {
			return
		}
	}
	return
}

func hBfe(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if !isInt(t) || t.Bits() < 32 || strings.HasPrefix(t.String(), ".b") {
		return fc.badType(in, t)
	}
	d, s, err := fc.srcs(in, t, ptx.TypeU32, ptx.TypeU32)
	if err != nil {
		return err
	}
	w, signed := intKind(t)
	fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = bfe(r[in.a], r[in.b], r[in.c], w, signed) })
	return nil
}

func hBfi(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if t != ptx.TypeB32 && t != ptx.TypeB64 {
		return fc.badType(in, t)
	}
	d, s, err := fc.srcs(in, t, t, ptx.TypeU32, ptx.TypeU32)
	if err != nil {
		return err
	}
	w := t.Bits()
	fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = bfi(r[in.a], r[in.b], r[in.c], r[in.e], w) })
	return nil
}

func hPrmt(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	mode := m.one(".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16")
	t, err := m.typ()
	if err != nil {
		return err
	}
	if t != ptx.TypeB32 {
		return fc.badType(in, t)
	}
	d, s, err := fc.operands(in, t, 3)
	if err != nil {
		return err
	}
	fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = prmt(r[in.a], r[in.b], r[in.c], mode) })
	return nil
}

func hLop3(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if t != ptx.TypeB32 || len(in.Operands) != 5 {
		return unsupported(in.Line, "%s with %d operands", in.Name(), len(in.Operands))
	}
	lut, _, err := constValue(in.Operands[4], ptx.TypeB32)
	if err != nil {
		return invalid(in.Line, "lop3 table %s", in.Operands[4])
	}
	d, err := fc.dst(in.Operands[0])
	if err != nil {
		return err
	}
	var s [4]int32
	for i := 0; i < 3; i++ {
		if s[i], err = fc.src(in.Operands[i+1], t); err != nil {
			return err
		}
	}
	l := uint8(lut)
	fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = lop3(r[in.a], r[in.b], r[in.c], l) })
	return nil
}

func hShf(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	dir := m.one(".l", ".r")
	mode := m.one(".wrap", ".clamp")
	t, err := m.typ()
	if err != nil {
		return err
	}
	if dir == "" || mode == "" || (t != ptx.TypeB32 && t != ptx.TypeU32 && t != ptx.TypeS32) {
		return fc.badType(in, t)
	}
	if t == ptx.TypeS32 && dir == ".r" {
		return unsupported(in.Line, "%s (signed funnel shift)", in.Name())
	}
	d, s, err := fc.srcs(in, ptx.TypeB32, ptx.TypeB32, ptx.TypeU32)
	if err != nil {
		return err
	}
	left, clamp := dir == ".l", mode == ".clamp"
	fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = shf(r[in.a], r[in.b], r[in.c], left, clamp) })
	return nil
}

func hDp(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	half := m.one(".lo", ".hi")
	ts := m.types()
	if len(ts) != 2 || (ts[0] != ptx.TypeU32 && ts[0] != ptx.TypeS32) || (ts[1] != ptx.TypeU32 && ts[1] != ptx.TypeS32) {
		return invalid(in.Line, "%s needs two types .u32/.s32", in.Name())
	}
	if (in.Opcode == "dp2a") != (half != "") {
		return invalid(in.Line, "%s: .lo/.hi is dp2a's", in.Name())
	}
	d, s, err := fc.srcs(in, ts[0], ts[1], ts[0])
	if err != nil {
		return err
	}
	sa, sb, hi := ts[0].IsSigned(), ts[1].IsSigned(), half == ".hi"
	if in.Opcode == "dp4a" {
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = dp4a(r[in.a], r[in.b], r[in.c], sa, sb) })
	} else {
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = dp2a(r[in.a], r[in.b], r[in.c], sa, sb, hi) })
	}
	return nil
}

func hBmsk(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	mode := m.one(".wrap", ".clamp")
	t, err := m.typ()
	if err != nil {
		return err
	}
	if t != ptx.TypeB32 || mode == "" {
		return fc.badType(in, t)
	}
	d, s, err := fc.srcs(in, ptx.TypeU32, ptx.TypeU32)
	if err != nil {
		return err
	}
	clamp := mode == ".clamp"
	fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = bmsk(r[in.a], r[in.b], clamp) })
	return nil
}

func hSzext(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	mode := m.one(".wrap", ".clamp")
	t, err := m.typ()
	if err != nil {
		return err
	}
	if (t != ptx.TypeU32 && t != ptx.TypeS32) || mode == "" {
		return fc.badType(in, t)
	}
	d, s, err := fc.srcs(in, t, ptx.TypeU32)
	if err != nil {
		return err
	}
	signed, clamp := t.IsSigned(), mode == ".clamp"
	fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = szext(r[in.a], r[in.b], signed, clamp) })
	return nil
}

func hLogic(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if t != ptx.TypePred && t != ptx.TypeB16 && t != ptx.TypeB32 && t != ptx.TypeB64 {
		return fc.badType(in, t)
	}
	unary := in.Opcode == "not" || in.Opcode == "cnot"
	n := 2
	if unary {
		n = 1
	}
	d, s, err := fc.operands(in, t, n)
	if err != nil {
		return err
	}
	w := t.Bits()
	switch in.Opcode {
	case "and":
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = r[in.a] & r[in.b] })
	case "or":
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = r[in.a] | r[in.b] })
	case "xor":
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = r[in.a] ^ r[in.b] })
	case "not":
		if t == ptx.TypePred {
			fc.alu(d, s, notPred)
		} else {
			fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = ^r[in.a] })
		}
	case "cnot":
		if t == ptx.TypePred {
			return fc.badType(in, t)
		}
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = b2u(zextW(r[in.a], w) == 0) })
	}
	return nil
}

func shlB32(r []uint64, in *inst) {
	n := uint32(r[in.b])
	if n >= 32 {
		r[in.d] = 0
		return
	}
	r[in.d] = uint64(uint32(r[in.a]) << n)
}

func hShift(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if !isInt(t) || t.Bits() < 16 || (in.Opcode == "shl" && t != ptx.TypeB16 && t != ptx.TypeB32 && t != ptx.TypeB64) {
		return fc.badType(in, t)
	}
	d, s, err := fc.srcs(in, t, ptx.TypeU32)
	if err != nil {
		return err
	}
	w, signed := intKind(t)
	switch {
	case in.Opcode == "shl" && w == 32:
		fc.alu(d, s, shlB32)
	case in.Opcode == "shl":
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = shl(r[in.a], r[in.b], w) })
	case signed:
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = shrS(r[in.a], r[in.b], w) })
	default:
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = shrU(r[in.a], r[in.b], w) })
	}
	return nil
}

// --- comparisons and selects ---

// intCmp returns a comparison of width-bit values: shifting both to the top
// of the word preserves their signed or unsigned order.
func intCmp(op string, width int, signed bool) func(a, b uint64) bool {
	s := uint(64 - width)
	if signed {
		switch op {
		case "eq":
			return func(a, b uint64) bool { return a<<s == b<<s }
		case "ne":
			return func(a, b uint64) bool { return a<<s != b<<s }
		case "lt":
			return func(a, b uint64) bool { return int64(a<<s) < int64(b<<s) }
		case "le":
			return func(a, b uint64) bool { return int64(a<<s) <= int64(b<<s) }
		case "gt":
			return func(a, b uint64) bool { return int64(a<<s) > int64(b<<s) }
		case "ge":
			return func(a, b uint64) bool { return int64(a<<s) >= int64(b<<s) }
		}
		return nil
	}
	switch op {
	case "eq":
		return func(a, b uint64) bool { return a<<s == b<<s }
	case "ne":
		return func(a, b uint64) bool { return a<<s != b<<s }
	case "lt", "lo":
		return func(a, b uint64) bool { return a<<s < b<<s }
	case "le", "ls":
		return func(a, b uint64) bool { return a<<s <= b<<s }
	case "gt", "hi":
		return func(a, b uint64) bool { return a<<s > b<<s }
	case "ge", "hs":
		return func(a, b uint64) bool { return a<<s >= b<<s }
	}
	return nil
}

// setpInt is the commonest setp: an integer comparison with one predicate
// result, the comparison inlined.
func setpInt(op string, width int, signed bool) aluFn {
	s := uint(64 - width)
	if signed {
		switch op {
		case "lt":
			return func(r []uint64, in *inst) { r[in.d] = b2u(int64(r[in.a]<<s) < int64(r[in.b]<<s)) }
		case "le":
			return func(r []uint64, in *inst) { r[in.d] = b2u(int64(r[in.a]<<s) <= int64(r[in.b]<<s)) }
		case "gt":
			return func(r []uint64, in *inst) { r[in.d] = b2u(int64(r[in.a]<<s) > int64(r[in.b]<<s)) }
		case "ge":
			return func(r []uint64, in *inst) { r[in.d] = b2u(int64(r[in.a]<<s) >= int64(r[in.b]<<s)) }
		}
	}
	switch op {
	case "eq":
		return func(r []uint64, in *inst) { r[in.d] = b2u(r[in.a]<<s == r[in.b]<<s) }
	case "ne":
		return func(r []uint64, in *inst) { r[in.d] = b2u(r[in.a]<<s != r[in.b]<<s) }
	case "lt", "lo":
		return func(r []uint64, in *inst) { r[in.d] = b2u(r[in.a]<<s < r[in.b]<<s) }
	case "le", "ls":
		return func(r []uint64, in *inst) { r[in.d] = b2u(r[in.a]<<s <= r[in.b]<<s) }
	case "gt", "hi":
		return func(r []uint64, in *inst) { r[in.d] = b2u(r[in.a]<<s > r[in.b]<<s) }
	default: // "ge", "hs"
		return func(r []uint64, in *inst) { r[in.d] = b2u(r[in.a]<<s >= r[in.b]<<s) }
	}
}

func floatCmp(op string) func(a, b float64) bool {
	switch op {
	case "eq":
		return func(a, b float64) bool { return a == b }
	case "ne":
		return func(a, b float64) bool { return a != b && a == a && b == b }
	case "lt":
		return func(a, b float64) bool { return a < b }
	case "le":
		return func(a, b float64) bool { return a <= b }
	case "gt":
		return func(a, b float64) bool { return a > b }
	case "ge":
		return func(a, b float64) bool { return a >= b }
	case "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan":
		return func(a, b float64) bool { return cmpFloat(op, a, b) }
	}
	return nil
}

var cmpOps = []string{".eq", ".ne", ".lt", ".le", ".gt", ".ge", ".lo", ".ls", ".hi", ".hs",
	".equ", ".neu", ".ltu", ".leu", ".gtu", ".geu", ".num", ".nan"}

// hSetp handles setp (predicate results p|q) and set (a 32-bit result).
func hSetp(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	op := strings.TrimPrefix(m.one(cmpOps...), ".")
	boolOp := m.one(".and", ".or", ".xor")
	ftz := m.has(".ftz")
	ts := m.types()
	isSet := in.Opcode == "set"
	var dt, t ptx.Type
	switch {
	case !isSet && len(ts) == 1:
		t = ts[0]
	case isSet && len(ts) == 2:
		dt, t = ts[0], ts[1]
		if dt != ptx.TypeU32 && dt != ptx.TypeS32 && dt != ptx.TypeF32 {
			return fc.badType(in, dt)
		}
	default:
		return invalid(in.Line, "%s has the wrong number of types", in.Name())
	}
	if op == "" {
		return invalid(in.Line, "%s needs a comparison", in.Name())
	}
	var cmp func(a, b uint64) bool
	switch {
	case t == ptx.TypeF32:
		fcmp := floatCmp(op)
		if fcmp == nil {
			return fc.badType(in, t)
		}
		cmp = func(a, b uint64) bool {
			x, y := f32(a), f32(b)
			if ftz {
				x, y = ftz32(x), ftz32(y)
			}
			return fcmp(float64(x), float64(y))
		}
	case t == ptx.TypeF64 && !ftz:
		fcmp := floatCmp(op)
		if fcmp == nil {
			return fc.badType(in, t)
		}
		cmp = func(a, b uint64) bool { return fcmp(f64(a), f64(b)) }
	case (t == ptx.TypeF16 || t == ptx.TypeBF16) && !isSet:
		if cmp = halfCmp(t, op, ftz); cmp == nil {
			return fc.badType(in, t)
		}
	case isInt(t) && t.Bits() >= 16 && !ftz:
		signed := t.IsSigned()
		if strings.HasPrefix(t.String(), ".b") && op != "eq" && op != "ne" {
			return fc.badType(in, t)
		}
		cmp = intCmp(op, t.Bits(), signed)
		if cmp == nil {
			return fc.badType(in, t)
		}
	default:
		return fc.badType(in, t)
	}
	want := 3
	if boolOp != "" {
		want = 4
	}
	if err := fc.nops(in, want); err != nil {
		return err
	}
	var p, q int32 = 0, -1
	var err error
	if pair, ok := in.Operands[0].(*ptx.Pair); ok {
		if isSet {
			return invalid(in.Line, "set has one destination")
		}
		if p, err = fc.dst(pair.First); err != nil {
			return err
		}
		if q, err = fc.dst(pair.Second); err != nil {
			return err
		}
	} else if p, err = fc.dst(in.Operands[0]); err != nil {
		return err
	}
	var s [4]int32
	for i := 0; i < 2; i++ {
		if s[i], err = fc.src(in.Operands[i+1], t); err != nil {
			return err
		}
	}
	var neg bool
	if boolOp != "" {
		if s[2], neg, err = fc.pred(in.Operands[3]); err != nil {
			return err
		}
	}
	combine := func(t bool, c uint64) bool {
		cv := (c != 0) != neg
		switch boolOp {
		case ".and":
			return t && cv
		case ".or":
			return t || cv
		case ".xor":
			return t != cv
		}
		return t
	}
	var fn aluFn
	switch {
	case isSet:
		one := uint64(0xffffffff)
		if dt == ptx.TypeF32 {
			one = uint64(math.Float32bits(1))
		}
		fn = func(r []uint64, in *inst) {
			if combine(cmp(r[in.a], r[in.b]), r[in.c]) {
				r[in.d] = one
			} else {
				r[in.d] = 0
			}
		}
	case boolOp == "" && q < 0 && isInt(t):
		fn = setpInt(op, t.Bits(), t.IsSigned())
	case boolOp == "" && q < 0:
		fn = func(r []uint64, in *inst) { r[in.d] = b2u(cmp(r[in.a], r[in.b])) }
	default:
		fn = func(r []uint64, in *inst) {
			t := cmp(r[in.a], r[in.b])
			r[in.d] = b2u(combine(t, r[in.c]))
			if in.d2 >= 0 {
				r[in.d2] = b2u(combine(!t, r[in.c]))
			}
		}
	}
	fc.emit(inst{op: opALU, d: p, d2: q, a: s[0], b: s[1], c: s[2], fn: fn})
	return nil
}

func hSelp(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if t == ptx.TypePred || t.Bits() < 16 || t.Bits() > 64 {
		return fc.badType(in, t)
	}
	d, s, err := fc.srcs(in, t, t, ptx.TypePred)
	if err != nil {
		return err
	}
	fc.alu(d, s, func(r []uint64, in *inst) {
		if r[in.c] != 0 {
			r[in.d] = r[in.a]
		} else {
			r[in.d] = r[in.b]
		}
	})
	return nil
}

func hSlct(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	ftz := m.has(".ftz")
	ts := m.types()
	if len(ts) != 2 || (ts[1] != ptx.TypeS32 && ts[1] != ptx.TypeF32) || ts[0].Bits() < 16 || ts[0] == ptx.TypePred {
		return invalid(in.Line, "%s needs a data type and .s32 or .f32", in.Name())
	}
	d, s, err := fc.srcs(in, ts[0], ts[0], ts[1])
	if err != nil {
		return err
	}
	if ts[1] == ptx.TypeS32 {
		fc.alu(d, s, func(r []uint64, in *inst) {
			if int32(r[in.c]) >= 0 {
				r[in.d] = r[in.a]
			} else {
				r[in.d] = r[in.b]
			}
		})
		return nil
	}
	fc.alu(d, s, func(r []uint64, in *inst) {
		c := f32(r[in.c])
		if ftz {
			c = ftz32(c)
		}
		if c >= 0 {
			r[in.d] = r[in.a]
		} else {
			r[in.d] = r[in.b]
		}
	})
	return nil
}

// --- floating point ---

// floatMods consumes .rnd, .ftz and .sat, checking them against t.
func (fc *fnCompiler) floatMods(in *ptx.Instruction, m *mods, t ptx.Type) (rnd rounding, hasRnd, ftz, sat bool, err error) {
	rnd, hasRnd = m.rounding()
	ftz = m.has(".ftz")
	sat = m.has(".sat")
	if t != ptx.TypeF32 && t != ptx.TypeF64 {
		return rnd, hasRnd, ftz, sat, fc.badType(in, t)
	}
	if t == ptx.TypeF64 && (ftz || sat) {
		return rnd, hasRnd, ftz, sat, unsupported(in.Line, "%s (.ftz/.sat apply to .f32 only)", in.Name())
	}
	return
}

func (fc *fnCompiler) floatBinary(in *ptx.Instruction, m *mods, t ptx.Type, op string) error {
	rnd, _, ftz, sat, err := fc.floatMods(in, m, t)
	if err != nil {
		return err
	}
	d, s, err := fc.operands(in, t, 2)
	if err != nil {
		return err
	}
	if t == ptx.TypeF64 {
		switch {
		case rnd == rn && op == "add":
			fc.alu(d, s, addF64)
		case rnd == rn && op == "sub":
			fc.alu(d, s, subF64)
		case rnd == rn && op == "mul":
			fc.alu(d, s, mulF64)
		case op == "mul":
			fc.alu(d, s, f64op(func(a, b, _ float64) float64 { return mul64(a, b, rnd) }, false))
		case op == "add":
			fc.alu(d, s, f64op(func(a, b, _ float64) float64 { return add64(a, b, rnd) }, false))
		default:
			fc.alu(d, s, f64op(func(a, b, _ float64) float64 { return add64(a, -b, rnd) }, false))
		}
		return nil
	}
	if rnd == rn && !ftz && !sat {
		fc.alu(d, s, map[string]aluFn{"add": addF32, "sub": subF32, "mul": mulF32}[op])
		return nil
	}
	var f func(a, b, c float32) float32
	switch op {
	case "add":
		f = func(a, b, _ float32) float32 { return add32(a, b, rnd) }
	case "sub":
		f = func(a, b, _ float32) float32 { return add32(a, -b, rnd) }
	default:
		f = func(a, b, _ float32) float32 { return mul32(a, b, rnd) }
	}
	fc.alu(d, s, f32op(2, f, ftz, sat))
	return nil
}

func hFma(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if isHalf(t) {
		return fc.halfArith(in, m, t, "fma")
	}
	return fc.floatFma(in, m, t, true)
}

func (fc *fnCompiler) floatFma(in *ptx.Instruction, m *mods, t ptx.Type, needRnd bool) error {
	rnd, hasRnd, ftz, sat, err := fc.floatMods(in, m, t)
	if err != nil {
		return err
	}
	if needRnd && !hasRnd {
		return invalid(in.Line, "%s needs a rounding modifier", in.Name())
	}
	d, s, err := fc.operands(in, t, 3)
	if err != nil {
		return err
	}
	switch {
	case t == ptx.TypeF64 && rnd == rn:
		fc.alu(d, s, fmaF64)
	case t == ptx.TypeF64:
		fc.alu(d, s, f64op(func(a, b, c float64) float64 { return fma64(a, b, c, rnd) }, false))
	case rnd == rn && !ftz && !sat:
		fc.alu(d, s, fmaF32)
	default:
		fc.alu(d, s, f32op(3, func(a, b, c float32) float32 { return fma32(a, b, c, rnd) }, ftz, sat))
	}
	return nil
}

func (fc *fnCompiler) floatDiv(in *ptx.Instruction, m *mods, t ptx.Type) error {
	kind := m.one(".approx", ".full")
	rnd, hasRnd, ftz, sat, err := fc.floatMods(in, m, t)
	if err != nil {
		return err
	}
	if sat || (kind != "") == hasRnd || (kind != "" && t != ptx.TypeF32) {
		return unsupported(in.Line, "%s", in.Name())
	}
	d, s, err := fc.operands(in, t, 2)
	if err != nil {
		return err
	}
	switch {
	case t == ptx.TypeF64:
		fc.alu(d, s, f64op(func(a, b, _ float64) float64 { return div64(a, b, rnd) }, false))
	case kind == ".approx":
		fc.alu(d, s, f32op(2, func(a, b, _ float32) float32 { return divApprox32(a, b) }, ftz, false))
	case kind == ".full":
		// Correctly rounded: within div.full's 2-ulp bound.
		fc.alu(d, s, f32op(2, func(a, b, _ float32) float32 { return a / b }, ftz, false))
	default:
		fc.alu(d, s, f32op(2, func(a, b, _ float32) float32 { return div32(a, b, rnd) }, ftz, false))
	}
	return nil
}

// hUnaryFloat handles rcp, sqrt, rsqrt, ex2, lg2, sin, cos and tanh.
func hUnaryFloat(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	approx := m.has(".approx")
	rnd, hasRnd := m.rounding()
	ftz := m.has(".ftz")
	t, err := m.typ()
	if err != nil {
		return err
	}
	d, s, err := fc.operands(in, t, 1)
	if err != nil {
		return err
	}
	if approx == hasRnd {
		return unsupported(in.Line, "%s (needs either .approx or a rounding modifier)", in.Name())
	}
	op := in.Opcode
	if t == ptx.TypeF64 {
		switch {
		case op == "rcp" && hasRnd && !ftz:
			fc.alu(d, s, f64op(func(a, _, _ float64) float64 { return div64(1, a, rnd) }, false))
		case op == "sqrt" && hasRnd && !ftz:
			fc.alu(d, s, f64op(func(a, _, _ float64) float64 { return sqrt64(a, rnd) }, false))
		case op == "rcp" && approx && ftz:
			// A gross approximation in hardware; the exact reciprocal is
			// within any bound, with subnormals flushed.
			fc.alu(d, s, f64op(func(a, _, _ float64) float64 { return ftz64(1 / ftz64(a)) }, false))
		case op == "rsqrt" && approx:
			fc.alu(d, s, f64op(func(a, _, _ float64) float64 {
				if ftz {
					a = ftz64(a)
				}
				v := 1 / math.Sqrt(a)
				if ftz {
					v = ftz64(v)
				}
				return v
			}, false))
		default:
			return unsupported(in.Line, "%s", in.Name())
		}
		return nil
	}
	if t != ptx.TypeF32 {
		return fc.badType(in, t)
	}
	var f func(a float32) float32
	switch {
	case op == "rcp" && hasRnd:
		f = func(a float32) float32 { return div32(1, a, rnd) }
	case op == "sqrt" && hasRnd:
		f = func(a float32) float32 { return sqrt32(a, rnd) }
	case !approx:
		return unsupported(in.Line, "%s", in.Name())
	case op == "rcp":
		f = rcpApprox32
	case op == "sqrt":
		f = sqrtApprox32
	case op == "rsqrt":
		f = rsqrtApprox32
	case op == "ex2":
		f = ex2Approx32
	case op == "lg2":
		f = lg2Approx32
	case op == "sin":
		f = sinApprox32
	case op == "cos":
		f = cosApprox32
	case op == "tanh" && !ftz:
		f = tanhApprox32
	default:
		return unsupported(in.Line, "%s", in.Name())
	}
	fc.alu(d, s, f32op(1, func(a, _, _ float32) float32 { return f(a) }, ftz, false))
	return nil
}

func ftz64(x float64) float64 {
	if x != 0 && math.Abs(x) < 0x1p-1022 {
		return math.Copysign(0, x)
	}
	return x
}

func hCopysign(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	d, s, err := fc.operands(in, t, 2)
	if err != nil {
		return err
	}
	switch t {
	case ptx.TypeF32:
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = uint64(uint32(r[in.b])&^(1<<31) | uint32(r[in.a])&(1<<31)) })
	case ptx.TypeF64:
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = r[in.b]&^(1<<63) | r[in.a]&(1<<63) })
	default:
		return fc.badType(in, t)
	}
	return nil
}

func hTestp(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	op := m.one(".finite", ".infinite", ".number", ".notanumber", ".normal", ".subnormal")
	t, err := m.typ()
	if err != nil {
		return err
	}
	if op == "" || (t != ptx.TypeF32 && t != ptx.TypeF64) {
		return fc.badType(in, t)
	}
	d, s, err := fc.operands(in, t, 1)
	if err != nil {
		return err
	}
	if t == ptx.TypeF32 {
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = b2u(testp(op, float64(f32(r[in.a])), true)) })
	} else {
		fc.alu(d, s, func(r []uint64, in *inst) { r[in.d] = b2u(testp(op, f64(r[in.a]), false)) })
	}
	return nil
}

// --- misc ---

func hNop(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	// prefetch, membar and fence order or hint memory; under the
	// interpreter's memory model (every access is performed in program order
	// and is immediately visible) they have no effect.
	m.ignore(func(s string) bool {
		return isScope(s) || isSem(s) || isCacheHint(s) || s == ".global" || s == ".local" || s == ".shared" ||
			s == ".shared::cta" || s == ".const" || s == ".param" || s == ".tensormap" || s == ".proxy" || s == ".async" ||
			strings.HasPrefix(s, ".L1") || strings.HasPrefix(s, ".L2") || s == ".gl" || s == ".sc" ||
			s == ".acq_rel" || s == ".sys" || s == ".alias"
	})
	return nil
}

func hCreatepolicy(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	m.ignore(func(s string) bool { return true })
	if len(in.Operands) == 0 {
		return invalid(in.Line, "createpolicy without a destination")
	}
	d, err := fc.dst(in.Operands[0])
	if err != nil {
		return err
	}
	fc.emit(inst{op: opMov, d: d, a: slotZero, d2: -1})
	return nil
}

func hNanosleep(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	t, err := m.typ()
	if err != nil {
		return err
	}
	if err := fc.nops(in, 1); err != nil {
		return err
	}
	a, err := fc.src(in.Operands[0], t)
	if err != nil {
		return err
	}
	fc.emit(inst{op: opNanosleep, a: a, d2: -1})
	return nil
}

func hTrap(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	fc.emit(inst{op: opTrap, d2: -1})
	return nil
}

func hExit(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	fc.emit(inst{op: opExit, d2: -1})
	return nil
}

func hRet(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	m.has(".uni")
	fc.emit(inst{op: opRet, d2: -1})
	return nil
}

func hBra(fc *fnCompiler, in *ptx.Instruction, m *mods) error {
	m.has(".uni")
	if err := fc.nops(in, 1); err != nil {
		return err
	}
	sym, ok := in.Operands[0].(*ptx.Symbol)
	if !ok || sym.Offset != 0 {
		return unsupported(in.Line, "branch to %s", in.Operands[0])
	}
	fc.fixups = append(fc.fixups, fixup{at: len(fc.fn.code), label: sym.Name, line: in.Line, scope: fc.scope})
	fc.emit(inst{op: opBra, d2: -1})
	return nil
}
