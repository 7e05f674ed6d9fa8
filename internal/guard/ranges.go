package guard

import (
	"sort"
	"strconv"
	"strings"

	"github.com/gpuos/gpuos/internal/ptx"
)

// Shared-memory proofs. Most shared addresses in real kernels are a shared
// variable plus a multiple of a thread index (s[threadIdx.x], As[ty][k],
// buf + blockDim.x + tid). This analysis bounds every 32-bit register of a
// kernel by affine forms over the block's dimensions and the shared
// variables' addresses, flow-sensitively (branch conditions narrow the
// bounds: s[tid + 32] under tid < 32), and proves a shared access inside
// [0, limit) — the same limit the run-time check uses, %total_smem_size plus
// the device's reserve — and aligned:
//
//   - statically, when the bounds are a sized .shared variable plus offsets
//     that stay inside it for every block shape the kernel allows (hardware
//     limits, .maxntid, .reqntid): no check at all;
//   - otherwise for the launch's block shape: the kernel gets two variants
//     in one body (specialize.go). Its prologue evaluates each proof's bounds
//     with the real %ntid, symbol addresses and limit, once per thread; if
//     every one holds, the thread runs the fast variant, where these accesses
//     are unchecked; if not, it branches to the fully checked variant, which
//     is the original kernel guarded as before. A launch with a larger block
//     (or less dynamic shared memory) than the proofs allow therefore only
//     loses speed, never isolation or correctness.
//
// Loops that advance a pointer beside a counter (nvcc strength-reduces
// buf[tid + k*ntid] into p += 4*ntid; k += 1) keep a fact p - s·k ∈ v (lin):
// each increment moves v exactly, so it survives the loop head where
// widening drops p's own bounds, and the counter's range from the loop's
// test bounds p again at the access.
//
// Soundness. A register's abstract value is an interval [lo, hi] of affine
// forms c + Σ k_i·a_i over atoms that are never negative (%ntid.x, .y, .z
// and the shared variables' addresses), plus a congruence (v ≡ rem mod 2^j),
// and stands for some integer congruent to the register's bits mod 2^32.
// Addition, subtraction, multiplication by a constant and shifts left are
// ring operations and keep that true whatever wraps; an operation that is
// not (shr, and, rem, comparisons) is used only when its operands' integer
// ranges lie where the bits read as exactly that integer (symbol-free forms
// evaluated over the allowed block shapes). The proof shows the address's
// integer is in [0, limit - width], where integer and bits coincide. The
// hardware keeps %tid below %ntid, %ntid.x and .y at most 1024 and .z at
// most 64; a .reqntid or .maxntid kernel cannot be launched outside them.
// The run-time evaluation of a bound uses the real values of its atoms and
// is exact (forms whose values could leave the int32 range are not used).
// Anything the analysis does not model makes a register unknown; an unknown
// address is checked as before.

// Atoms of the affine forms: the block dimensions, then the shared
// variables the function names.
const (
	atomNtidX = iota
	atomNtidY
	atomNtidZ
	// %ntid >> 1, per dimension: a loop halving from the block size
	// (for (s = ntid/2; s > 0; s >>= 1) if (tid < s) buf[tid + s]) stays
	// inside ntid words only if its start is known to be exactly that.
	atomHalfX
	atomHalfY
	atomHalfZ
	fixedAtoms
)

// symMax bounds a shared variable's address when a form with symbols must
// fit int32 (the shared window is a few hundred KiB).
const symMax = 1 << 20

// maxMod caps the congruence modulus.
const maxMod = 1 << 12

type form struct {
	c int64
	k []int64 // by atom; nil means all zero
}

type aval struct {
	lo, hi   *form // nil: unbounded
	mod, rem int64 // the integer is ≡ rem (mod mod); mod a power of two >= 1
}

var top = aval{mod: 1}

func (v aval) isTop() bool { return v.lo == nil && v.hi == nil && v.mod == 1 }

// rel is the fact x - y >= d between two registers' integers.
type rel struct {
	x, y string
	d    int64
}

// lin is the fact x - s·y ∈ v between two registers' integers, s a form
// that is never negative: a pointer that advances by s each time its loop's
// counter advances by 1 (nvcc strength-reduces buf[tid + k*ntid] into
// p += 4*ntid beside k += 1). With y's range from the loop's test it bounds
// x after widening has dropped x's own bounds.
type lin struct {
	x, y string
	s    *form
	v    aval
}

type rstate struct {
	vals map[string]aval
	rels []rel
	lins []lin
}

// maxRels bounds the relational facts one state keeps.
const maxRels = 64

// addRel records x - y >= d, keeping one fact per pair (the stronger) and
// the facts in order, so that joins stay linear and states compare equal.
// A refinement inside a loop would otherwise add the same fact on every
// pass, and each join multiply the copies (a cuSOLVER kernel took 16 GiB).
func (s *rstate) addRel(r rel) {
	for i := range s.rels {
		if s.rels[i].x == r.x && s.rels[i].y == r.y {
			s.rels[i].d = max(s.rels[i].d, r.d)
			return
		}
	}
	if len(s.rels) >= maxRels {
		return // dropping a fact only loses precision
	}
	i := sort.Search(len(s.rels), func(i int) bool {
		q := s.rels[i]
		return q.x > r.x || (q.x == r.x && q.y > r.y)
	})
	s.rels = append(s.rels, rel{})
	copy(s.rels[i+1:], s.rels[i:])
	s.rels[i] = r
}

func (s *rstate) clone() *rstate {
	n := &rstate{vals: make(map[string]aval, len(s.vals)), rels: append([]rel(nil), s.rels...), lins: append([]lin(nil), s.lins...)}
	for k, v := range s.vals {
		n.vals[k] = v
	}
	return n
}

func (s *rstate) get(name string) aval {
	if v, ok := s.vals[name]; ok {
		return v
	}
	return top
}

func (s *rstate) set(name string, v aval) {
	if v.isTop() {
		delete(s.vals, name)
	} else {
		s.vals[name] = v
	}
	rels := s.rels[:0]
	for _, r := range s.rels {
		if r.x != name && r.y != name {
			rels = append(rels, r)
		}
	}
	s.rels = rels
}

// rangeAnalysis is the state of one function's analysis.
type rangeAnalysis struct {
	r       *fnRewriter
	nodes   []flowNode
	fl      *flow
	single  map[string]int // register → its only definition (unguarded, sole destination)
	natoms  int
	atomOf  map[string]int // shared variable → atom
	atomVar []*ptx.Var     // atom → variable (nil for the dimensions)
	ntidMin [3]int64
	ntidMax [3]int64
	// linPairs are the (pointer, counter) pairs whose lin facts the
	// analysis tracks: registers incremented in the same basic block, the
	// counter by 1.
	linPairs [][2]string
	linStep  map[[2]string]ptx.Operand // a pair's pointer increment
	linOf    map[string][]int          // register → its pairs, by index
	defsAt   map[string][]int          // register → the instructions defining it
	index    map[*ptx.Instruction]int  // instruction → its node
	reachB   map[int][]bool            // block → the blocks reachable from it by one or more edges
}

// ---- forms ------------------------------------------------------------------

func (ra *rangeAnalysis) konst(c int64) *form { return &form{c: c} }

func (ra *rangeAnalysis) atom(i int, coef, c int64) *form {
	k := make([]int64, ra.natoms)
	k[i] = coef
	return &form{c: c, k: k}
}

func (f *form) coef(i int) int64 {
	if f.k == nil {
		return 0
	}
	return f.k[i]
}

func (ra *rangeAnalysis) combine(a, b *form, sa, sb int64) *form {
	if a == nil || b == nil {
		return nil
	}
	out := &form{c: a.c*sa + b.c*sb}
	if a.k != nil || b.k != nil {
		out.k = make([]int64, ra.natoms)
		for i := range out.k {
			out.k[i] = a.coef(i)*sa + b.coef(i)*sb
		}
	}
	if !out.sane() {
		return nil
	}
	return out
}

// sane keeps coefficients small enough that evaluating a form never
// overflows int64.
func (f *form) sane() bool {
	if f.c > 1<<40 || f.c < -(1<<40) {
		return false
	}
	for _, k := range f.k {
		if k > 1<<30 || k < -(1<<30) {
			return false
		}
	}
	return true
}

func (ra *rangeAnalysis) scale(a *form, s int64) *form { return ra.combine(a, ra.konst(0), s, 0) }

func (f *form) hasSym() bool {
	for i := fixedAtoms; i < len(f.k); i++ {
		if f.k[i] != 0 {
			return true
		}
	}
	return false
}

func (f *form) constOnly() bool {
	for _, k := range f.k {
		if k != 0 {
			return false
		}
	}
	return true
}

func (f *form) equal(g *form) bool {
	if f == nil || g == nil {
		return f == g
	}
	if f.c != g.c {
		return false
	}
	for i := 0; i < max(len(f.k), len(g.k)); i++ {
		if f.coef(i) != g.coef(i) {
			return false
		}
	}
	return true
}

// extremes are a form's least and greatest values over the allowed block
// shapes, symbols in [0, symMax] when withSyms, else ok is false if the
// form has any.
func (ra *rangeAnalysis) extremes(f *form, withSyms bool) (lo, hi int64, ok bool) {
	lo, hi = f.c, f.c
	for i, k := range f.k {
		if k == 0 {
			continue
		}
		var amin, amax int64
		switch {
		case i < atomHalfX:
			amin, amax = ra.ntidMin[i], ra.ntidMax[i]
		case i < fixedAtoms:
			amin, amax = ra.ntidMin[i-atomHalfX]/2, ra.ntidMax[i-atomHalfX]/2
		default:
			if !withSyms {
				return 0, 0, false
			}
			amin, amax = 0, symMax
		}
		if k > 0 {
			lo += k * amin
			hi += k * amax
		} else {
			lo += k * amax
			hi += k * amin
		}
	}
	return lo, hi, true
}

// intRange is the integer range of v (symbol-free), if bounded.
func (ra *rangeAnalysis) intRange(v aval) (lo, hi int64, ok bool) {
	if v.lo == nil || v.hi == nil {
		return 0, 0, false
	}
	lo, _, ok1 := ra.extremes(v.lo, false)
	_, hi, ok2 := ra.extremes(v.hi, false)
	return lo, hi, ok1 && ok2
}

// le reports whether f <= g for every value of the atoms (all >= 0, and
// each half atom at most half its dimension: g - f = … + a·ntid + b·half
// is >= 0 when a >= 0 and 2a + b >= 0).
func (f *form) le(g *form) bool {
	if f.c > g.c {
		return false
	}
	for i := 0; i < max(len(f.k), len(g.k)); i++ {
		d := g.coef(i) - f.coef(i)
		switch {
		case i < atomHalfX:
			if d < 0 || 2*d+g.coef(i+atomHalfX)-f.coef(i+atomHalfX) < 0 {
				return false
			}
		case i < fixedAtoms:
			// With its dimension, above.
		case d < 0:
			return false
		}
	}
	return true
}

func (ra *rangeAnalysis) cwMin(a, b *form) *form { return ra.coefwise(a, b, true) }

func (ra *rangeAnalysis) cwMax(a, b *form) *form { return ra.coefwise(a, b, false) }

// coefwise is the smaller (lower) or larger of a and b when one is known to
// be, else the form of their coefficient-wise minima or maxima.
func (ra *rangeAnalysis) coefwise(a, b *form, lower bool) *form {
	if a == nil || b == nil {
		return nil
	}
	small, large, ordered := a, b, a.le(b)
	if !ordered && b.le(a) {
		small, large, ordered = b, a, true
	}
	if ordered {
		if lower {
			return small
		}
		return large
	}
	pick := func(x, y int64) int64 { return max(x, y) }
	if lower {
		pick = func(x, y int64) int64 { return min(x, y) }
	}
	out := &form{c: pick(a.c, b.c)}
	if a.k != nil || b.k != nil {
		out.k = make([]int64, ra.natoms)
		for i := range out.k {
			out.k[i] = pick(a.coef(i), b.coef(i))
		}
	}
	return out
}

// tighterHi picks the better of two valid upper bounds (either is sound).
func (ra *rangeAnalysis) tighterHi(a, b *form) *form {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.le(b):
		return a
	case b.le(a):
		return b
	}
	_, ha, oka := ra.extremes(a, false)
	_, hb, okb := ra.extremes(b, false)
	if oka && (!okb || ha <= hb) {
		return a
	}
	return b
}

func (ra *rangeAnalysis) tighterLo(a, b *form) *form {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.le(b):
		return b
	case b.le(a):
		return a
	}
	la, _, oka := ra.extremes(a, false)
	lb, _, okb := ra.extremes(b, false)
	if oka && (!okb || la >= lb) {
		return a
	}
	return b
}

// ---- values -----------------------------------------------------------------

func lowbit(x int64) int64 {
	if x == 0 {
		return maxMod
	}
	if x < 0 {
		x = -x
	}
	return min(x&-x, maxMod)
}

func modp(x, m int64) int64 { return ((x % m) + m) % m }

func (ra *rangeAnalysis) constVal(c int64) aval {
	f := ra.konst(c)
	return aval{lo: f, hi: f, mod: maxMod, rem: modp(c, maxMod)}
}

func (ra *rangeAnalysis) join(a, b aval) aval {
	out := aval{lo: ra.cwMin(a.lo, b.lo), hi: ra.cwMax(a.hi, b.hi)}
	m := min(a.mod, b.mod)
	for m > 1 && modp(a.rem, m) != modp(b.rem, m) {
		m /= 2
	}
	out.mod, out.rem = m, modp(a.rem, m)
	return out
}

func (ra *rangeAnalysis) add(a, b aval, sb int64) aval {
	out := aval{mod: min(a.mod, b.mod)}
	if sb > 0 {
		out.lo, out.hi = ra.combine(a.lo, b.lo, 1, 1), ra.combine(a.hi, b.hi, 1, 1)
	} else {
		out.lo, out.hi = ra.combine(a.lo, b.hi, 1, -1), ra.combine(a.hi, b.lo, 1, -1)
	}
	out.rem = modp(a.rem+sb*b.rem, out.mod)
	return out
}

func (ra *rangeAnalysis) mulConst(a aval, c int64) aval {
	if c == 0 {
		return ra.constVal(0)
	}
	out := aval{}
	if c > 0 {
		out.lo, out.hi = ra.scale(a.lo, c), ra.scale(a.hi, c)
	} else {
		out.lo, out.hi = ra.scale(a.hi, c), ra.scale(a.lo, c)
	}
	out.mod = min(a.mod*lowbit(c), maxMod)
	out.rem = modp(a.rem*c, out.mod)
	return out
}

func (v aval) equal(w aval) bool {
	return v.lo.equal(w.lo) && v.hi.equal(w.hi) && v.mod == w.mod && v.rem == w.rem
}

// ---- transfer ---------------------------------------------------------------

// is32 reports whether in operates on 32-bit integers.
func is32(in *ptx.Instruction) (signed, ok bool) {
	ts := in.Types()
	if len(ts) == 0 {
		return false, false
	}
	switch ts[len(ts)-1] {
	case ptx.TypeS32:
		return true, true
	case ptx.TypeU32, ptx.TypeB32:
		return false, true
	}
	return false, false
}

// operand is the value of a source operand.
func (ra *rangeAnalysis) operand(o ptx.Operand, st *rstate) aval {
	switch o := o.(type) {
	case *ptx.Int:
		return ra.constVal(int64(int32(o.Value)))
	case *ptx.Reg:
		switch o.Name {
		case "%tid.x", "%tid.y", "%tid.z":
			i := int(o.Name[5] - 'x')
			return aval{lo: ra.konst(0), hi: ra.atom(i, 1, -1), mod: 1}
		case "%ntid.x", "%ntid.y", "%ntid.z":
			f := ra.atom(int(o.Name[6]-'x'), 1, 0)
			return aval{lo: f, hi: f, mod: 1}
		case "%laneid":
			return aval{lo: ra.konst(0), hi: ra.konst(31), mod: 1}
		}
		if strings.HasPrefix(o.Name, "%") && strings.Contains(o.Name, ".") {
			return top
		}
		return st.get(o.Name)
	case *ptx.Symbol:
		if o.Generic {
			return top
		}
		i, ok := ra.atomOf[o.Name]
		if !ok {
			return top
		}
		// ptxas places a variable at its declared alignment, the dynamic
		// shared memory (unsized extern arrays) included; the latter is
		// trusted up to 16 bytes, what the runtime guarantees whatever the
		// declaration (and what the interpreter gives).
		al := min(max(int64(ra.atomVar[i].Alignment()), 1), maxMod)
		if size, _, err := varShape(ra.atomVar[i]); err != nil || size == 0 {
			al = min(al, 16)
		}
		f := ra.atom(i, 1, o.Offset)
		return aval{lo: f, hi: f, mod: al, rem: modp(o.Offset, al)}
	}
	return top
}

// narrowRange is the integer range of a 8- or 16-bit type.
func narrowRange(t ptx.Type) (lo, hi int64, ok bool) {
	switch t {
	case ptx.TypeU8:
		return 0, 255, true
	case ptx.TypeS8:
		return -128, 127, true
	case ptx.TypeU16:
		return 0, 65535, true
	case ptx.TypeS16:
		return -32768, 32767, true
	}
	return 0, 0, false
}

// evalNarrow handles the 8- and 16-bit values bytes are indexed by: a
// loaded byte, its widening (cvt, mul.wide.u16).
func (ra *rangeAnalysis) evalNarrow(in *ptx.Instruction, st *rstate) (aval, bool) {
	ts := in.Types()
	switch {
	case (in.Opcode == "ld" || in.Opcode == "ldu") && len(ts) == 1 && in.VectorWidth() <= 1:
		if lo, hi, ok := narrowRange(ts[0]); ok {
			return aval{lo: ra.konst(lo), hi: ra.konst(hi), mod: 1}, true
		}
	case in.Opcode == "cvt" && len(ts) == 2 && len(in.Operands) == 2 && len(in.Mods) == 2:
		// A widening conversion from a narrow type keeps a value that the
		// source type reads exactly.
		if lo, hi, ok := narrowRange(ts[1]); ok && ts[0].Bits() >= 32 && ts[0].Bits() <= 32 {
			v := ra.operand(in.Operands[1], st)
			if vl, vh, ok := ra.intRange(v); ok && vl >= lo && vh <= hi {
				return v, true
			}
			if ts[0].Bits() > ts[1].Bits() && (ts[0] == ptx.TypeU32) == (ts[1] == ptx.TypeU8 || ts[1] == ptx.TypeU16) {
				return aval{lo: ra.konst(lo), hi: ra.konst(hi), mod: 1}, true
			}
		}
	case in.Opcode == "mul" && in.HasMod(".wide") && len(ts) == 1 && len(in.Operands) == 3 && (ts[0] == ptx.TypeU16 || ts[0] == ptx.TypeS16):
		lo, hi, _ := narrowRange(ts[0])
		a, b := ra.operand(in.Operands[1], st), in.Operands[2]
		if c, ok := b.(*ptx.Int); ok {
			if al, ah, ok := ra.intRange(a); ok && al >= lo && ah <= hi && c.Value >= lo && c.Value <= hi {
				return ra.mulConst(a, c.Value), true
			}
		}
	}
	return top, false
}

// eval is the value in writes to its one 32-bit destination.
func (ra *rangeAnalysis) eval(in *ptx.Instruction, st *rstate) aval {
	if v, ok := ra.evalNarrow(in, st); ok {
		return v
	}
	signed, ok := is32(in)
	if !ok || in.HasMod(".sat") || in.HasMod(".cc") || in.HasMod(".hi") || in.HasMod(".wide") {
		return top
	}
	ops := in.Operands
	arg := func(i int) aval {
		if i >= len(ops) {
			return top
		}
		return ra.operand(ops[i], st)
	}
	isConst := func(i int) (int64, bool) {
		if i >= len(ops) {
			return 0, false
		}
		if n, ok := ops[i].(*ptx.Int); ok {
			return int64(int32(n.Value)), true
		}
		return 0, false
	}
	switch in.Opcode {
	case "mov":
		if len(ops) == 2 {
			return arg(1)
		}
	case "cvt":
		ts := in.Types()
		if len(ops) == 2 && len(ts) == 2 && ts[0] == ts[1] && len(in.Mods) == 2 {
			return arg(1)
		}
	case "add", "sub":
		if len(ops) == 3 {
			s := int64(1)
			if in.Opcode == "sub" {
				s = -1
			}
			v := ra.add(arg(1), arg(2), s)
			if in.Opcode == "sub" {
				if lo, hi, ok := ra.lowBits(in, st); ok {
					return aval{lo: ra.konst(lo), hi: ra.konst(hi), mod: 1}
				}
				a, aok := ops[1].(*ptx.Reg)
				b, bok := ops[2].(*ptx.Reg)
				if aok && bok {
					for _, r := range st.rels {
						if r.x == a.Name && r.y == b.Name {
							v.lo = ra.tighterLo(v.lo, ra.konst(r.d))
						}
					}
				}
			}
			return v
		}
	case "mul":
		if len(ops) == 3 && in.HasMod(".lo") {
			if c, ok := isConst(2); ok {
				return ra.mulConst(arg(1), c)
			}
			if c, ok := isConst(1); ok {
				return ra.mulConst(arg(2), c)
			}
		}
	case "mad":
		if len(ops) == 4 && in.HasMod(".lo") {
			var p aval
			if c, ok := isConst(2); ok {
				p = ra.mulConst(arg(1), c)
			} else if c, ok := isConst(1); ok {
				p = ra.mulConst(arg(2), c)
			} else {
				return top
			}
			return ra.add(p, arg(3), 1)
		}
	case "shl":
		if c, ok := isConst(2); ok && len(ops) == 3 && c >= 0 && c < 31 {
			return ra.mulConst(arg(1), 1<<c)
		}
	case "shr":
		c, ok := isConst(2)
		if !ok || len(ops) != 3 || c < 0 || c > 31 {
			return top
		}
		a := arg(1)
		lo, hi, ok := ra.intRange(a)
		if !ok || (!signed && (lo < 0 || hi >= 1<<32)) || (signed && (lo < -(1<<31) || hi >= 1<<31)) {
			return top
		}
		d := int64(1) << c
		out := aval{lo: ra.divForm(a.lo, d, false), hi: ra.divForm(a.hi, d, true), mod: 1}
		if c == 1 && !signed {
			out.lo, out.hi = ra.halveForm(a.lo, false), ra.halveForm(a.hi, true)
		}
		if q := floorDiv(lo, d); q == floorDiv(hi, d) {
			// One quotient for the whole range (x >> 31 of a nonnegative
			// x: nvcc's sign of a signed index) is exact; the forms,
			// rounded per coefficient, are not.
			return ra.constVal(q)
		}
		if c >= 2 {
			// A form's coefficient below d rounds up to 1 (ntid/16 bounded
			// by ntid): the quotient of the range's greatest value is
			// tighter where the forms give nothing better for every launch.
			// Not for halving (c = 1), whose forms keep ntid's relation
			// exactly (halveForm) for the reductions' loops.
			out.hi = ra.tighterHi(out.hi, ra.konst(floorDiv(hi, d)))
			out.lo = ra.tighterLo(out.lo, ra.konst(floorDiv(lo, d)))
		}
		if a.mod > d && modp(a.rem, d) == 0 {
			out.mod, out.rem = a.mod/d, modp(a.rem/d, a.mod/d)
		}
		return out
	case "and":
		if len(ops) != 3 {
			return top
		}
		for i := 1; i <= 2; i++ {
			if m, ok := isConst(i); ok && m >= 0 {
				out := aval{lo: ra.konst(0), hi: ra.konst(m), mod: 1}
				if lo, hi, ok := ra.intRange(arg(3 - i)); ok && lo >= 0 && hi < m {
					out.hi = ra.konst(hi)
				}
				return out
			}
		}
	case "rem":
		if c, ok := isConst(2); ok && len(ops) == 3 && c > 0 && !signed {
			return aval{lo: ra.konst(0), hi: ra.konst(c - 1), mod: 1}
		}
	case "selp":
		if len(ops) == 4 {
			return ra.join(arg(1), arg(2))
		}
	}
	return top
}

// lowBits recognizes "sub d, a, b" where b is "and b, x, -2^j" and x is a
// itself or "add x, a, c" (either order) with c a small constant range:
// nvcc's a % 2^j for a signed a, x = a + (a >> 31 >>> (32-j)). Then
// d = a - x + (x & (2^j-1)) = (x's low j bits) - c, whatever a is (bit for
// bit, mod 2^32: no wrap to fear when the result's range is small).
// The values must be the ones b and x were computed from: a and c have one
// definition each, dominating x's (and x's, b's; b's, the sub's), and no
// definition of a or c can run between x's and the sub.
func (ra *rangeAnalysis) lowBits(in *ptx.Instruction, st *rstate) (lo, hi int64, ok bool) {
	at, ok := ra.index[in]
	if !ok || in.Guard != nil || len(in.Operands) != 3 {
		return 0, 0, false
	}
	a, ok1 := in.Operands[1].(*ptx.Reg)
	b, ok2 := in.Operands[2].(*ptx.Reg)
	if !ok1 || !ok2 || strings.Contains(a.Name, ".") || a.Name == b.Name {
		return 0, 0, false
	}
	def := func(name string) (*ptx.Instruction, int, bool) {
		d, ok := ra.single[name]
		if !ok {
			return nil, 0, false
		}
		in := ra.nodes[d].in
		if _, is := is32(in); !is || len(in.Operands) != 3 {
			return nil, 0, false
		}
		return in, d, true
	}
	bin, bd, ok := def(b.Name)
	if !ok || bin.Opcode != "and" || !ra.fl.dominates(bd, at) {
		return 0, 0, false
	}
	x, ok := bin.Operands[1].(*ptx.Reg)
	m, okm := bin.Operands[2].(*ptx.Int)
	if !ok || !okm {
		return 0, 0, false
	}
	mask := int64(int32(m.Value))
	if mask >= 0 || mask < -(1<<20) || mask&(-mask) != -mask {
		return 0, 0, false
	}
	stable := func(name string, from int) bool { // one value from from to the sub
		d, ok := ra.single[name]
		return ok && ra.fl.dominates(d, from) && !ra.redefinedBetween(name, from, at)
	}
	var cl, ch int64
	first := bd // where a's value must already be the one the sub reads
	if x.Name != a.Name {
		xin, xd, ok := def(x.Name)
		if !ok || xin.Opcode != "add" || !ra.fl.dominates(xd, bd) || ra.redefinedBetween(x.Name, xd, bd) {
			return 0, 0, false
		}
		p, ok1 := xin.Operands[1].(*ptx.Reg)
		q, ok2 := xin.Operands[2].(*ptx.Reg)
		if !ok1 || !ok2 {
			return 0, 0, false
		}
		if q.Name == a.Name {
			p, q = q, p
		}
		if p.Name != a.Name || strings.Contains(q.Name, ".") || !stable(q.Name, xd) {
			return 0, 0, false
		}
		cl, ch, ok = ra.intRange(st.get(q.Name))
		if !ok || cl < -(1<<20) || ch > 1<<20 {
			return 0, 0, false
		}
		first = xd
	}
	if !stable(a.Name, first) {
		return 0, 0, false
	}
	return -ch, -mask - 1 - cl, true
}

// halveForm bounds floor(v / 2) for v bounded by f, like divForm, but with a
// block dimension's coefficient k >= 0 moved onto its half atom: k·ntid/2
// lies in [k·half, k·half + k/2] (half = floor(ntid/2)), so an upper bound
// gains the constant k/2 and a lower one nothing.
func (ra *rangeAnalysis) halveForm(f *form, up bool) *form {
	if f == nil {
		return nil
	}
	out := &form{k: make([]int64, ra.natoms)}
	num := f.c // the constant, before halving
	for i := range out.k {
		k := f.coef(i)
		switch {
		case i < atomHalfX && k >= 0:
			out.k[i+atomHalfX] += k
			if up {
				num += k
			}
		case up:
			out.k[i] += (k + 1) >> 1 // ceil(k/2), also for negative k
		default:
			out.k[i] += k >> 1 // floor(k/2)
		}
	}
	out.c = floorDiv(num, 2)
	if !out.sane() {
		return nil
	}
	return out
}

// divForm bounds floor(v / d) for v bounded by f: a lower bound rounds each
// coefficient down, an upper bound up (the atoms are never negative).
func (ra *rangeAnalysis) divForm(f *form, d int64, up bool) *form {
	if f == nil {
		return nil
	}
	div := func(x int64) int64 {
		q := x / d
		if x%d != 0 && (x < 0) != up {
			if up {
				q++
			} else {
				q--
			}
		}
		return q
	}
	out := &form{c: floorDiv(f.c, d)}
	if f.k != nil {
		out.k = make([]int64, len(f.k))
		for i, k := range f.k {
			out.k[i] = div(k)
		}
	}
	return out
}

func floorDiv(x, d int64) int64 {
	q := x / d
	if x%d != 0 && x < 0 {
		q--
	}
	return q
}

// step applies in to st.
func (ra *rangeAnalysis) step(in *ptx.Instruction, st *rstate) {
	defs := defsOf(in)
	if len(defs) == 0 {
		return
	}
	// Memory destinations are not registers: a store defines nothing.
	if _, isAddr := in.Operands[0].(*ptx.Address); isAddr {
		return
	}
	if len(st.lins) > 0 || len(ra.linPairs) > 0 {
		ra.stepLins(in, defs, st)
	}
	ra.stepVals(in, defs, st)
	if len(ra.linPairs) > 0 {
		ra.makeLins(defs, st)
	}
}

// selfAdd returns t when in is an unguarded 32-bit "add d, d, t".
func selfAdd(in *ptx.Instruction) (d string, t ptx.Operand, ok bool) {
	if in.Opcode != "add" || in.Guard != nil || len(in.Operands) != 3 {
		return "", nil, false
	}
	if _, is := is32(in); !is {
		return "", nil, false
	}
	dr, ok1 := in.Operands[0].(*ptx.Reg)
	sr, ok2 := in.Operands[1].(*ptx.Reg)
	if !ok1 || !ok2 || dr.Name != sr.Name || strings.Contains(dr.Name, ".") {
		return "", nil, false
	}
	return dr.Name, in.Operands[2], true
}

// stepLins carries the lin facts over in (before st takes in's result):
// x += t adds t's value to v; y += k subtracts s·k; any other definition
// of x or y ends the fact (makeLins may start a new one).
func (ra *rangeAnalysis) stepLins(in *ptx.Instruction, defs []string, st *rstate) {
	d, t, self := selfAdd(in)
	out := st.lins[:0]
	for _, l := range st.lins {
		hit := false
		for _, x := range defs {
			hit = hit || x == l.x || x == l.y
		}
		if !hit {
			out = append(out, l)
			continue
		}
		if !self || len(defs) != 1 || l.x == l.y {
			continue
		}
		var nv aval
		switch d {
		case l.x:
			tv := ra.operand(t, st)
			if tv.lo == nil || tv.hi == nil {
				continue
			}
			nv = ra.add(l.v, tv, 1)
		case l.y:
			k, ok := t.(*ptx.Int)
			if !ok || k.Value < -(1<<20) || k.Value > 1<<20 {
				continue
			}
			nv = ra.add(l.v, ra.mulConst(ra.formVal(l.s), k.Value), -1)
		}
		if nv.lo == nil || nv.hi == nil {
			continue
		}
		l.v = nv
		out = append(out, l)
	}
	st.lins = out
}

// makeLins starts the fact x - s·y ∈ v for a tracked pair where in defined
// x or y and left y one known constant c: v is x's value less s·c. s is the
// value, one form, of what the pair's increment adds to x.
func (ra *rangeAnalysis) makeLins(defs []string, st *rstate) {
	for _, d := range defs {
		for _, k := range ra.linOf[d] {
			ra.makeLin(ra.linPairs[k], st)
		}
	}
}

func (ra *rangeAnalysis) makeLin(pr [2]string, st *rstate) {
	have := false
	for _, l := range st.lins {
		have = have || (l.x == pr[0] && l.y == pr[1])
	}
	if have {
		return
	}
	yv, xv := st.get(pr[1]), st.get(pr[0])
	if yv.lo == nil || !yv.lo.equal(yv.hi) || !yv.lo.constOnly() || xv.lo == nil || xv.hi == nil {
		return
	}
	s := ra.linStep[pr]
	if s == nil {
		return
	}
	sv := ra.operand(s, st)
	if sv.lo == nil || !sv.lo.equal(sv.hi) || !ra.nonNegative(sv.lo) {
		return
	}
	v := ra.add(xv, ra.mulConst(ra.formVal(sv.lo), yv.lo.c), -1)
	if v.lo == nil || v.hi == nil {
		return
	}
	st.lins = append(st.lins, lin{x: pr[0], y: pr[1], s: sv.lo, v: v})
}

// nonNegative reports whether f >= 0 for every value of the atoms.
func (ra *rangeAnalysis) nonNegative(f *form) bool {
	if f.c < 0 {
		return false
	}
	for _, k := range f.k {
		if k < 0 {
			return false
		}
	}
	return true
}

// formVal is the value of exactly f.
func (ra *rangeAnalysis) formVal(f *form) aval {
	m := int64(maxMod)
	for _, k := range f.k {
		if k != 0 {
			m = min(m, lowbit(k))
		}
	}
	return aval{lo: f, hi: f, mod: m, rem: modp(f.c, m)}
}

// linBound is what the lin facts on x give with their counters' ranges.
func (ra *rangeAnalysis) linBound(x string, v aval, st *rstate) aval {
	for _, l := range st.lins {
		if l.x != x {
			continue
		}
		a, b, ok := ra.intRange(st.get(l.y))
		if !ok || a < -(1<<20) || b > 1<<20 {
			continue
		}
		// s >= 0: s·y lies in [s·a, s·b] for y in [a, b].
		sy := aval{lo: ra.scale(l.s, a), hi: ra.scale(l.s, b), mod: ra.formVal(l.s).mod}
		if sy.lo == nil || sy.hi == nil {
			continue
		}
		if a == b {
			sy = ra.mulConst(ra.formVal(l.s), a)
		}
		if w := ra.add(l.v, sy, 1); w.lo != nil && w.hi != nil {
			v = ra.meet(v, w)
		}
	}
	return v
}

// stepVals sets the values in defines.
func (ra *rangeAnalysis) stepVals(in *ptx.Instruction, defs []string, st *rstate) {
	v := top
	if len(defs) == 1 {
		if _, isReg := in.Operands[0].(*ptx.Reg); isReg {
			v = ra.eval(in, st)
		}
	}
	for _, d := range defs {
		w := v
		if len(defs) > 1 {
			w = top
		}
		if in.Guard != nil {
			w = ra.join(st.get(d), w)
		}
		st.set(d, w)
	}
}

// ---- branch conditions ------------------------------------------------------

var negCmp = map[string]string{"lt": "ge", "ge": "lt", "le": "gt", "gt": "le", "eq": "ne", "ne": "eq",
	"lo": "hs", "hs": "lo", "ls": "hi", "hi": "ls"}

// refine narrows st with the condition that decided the branch ending a
// block: cond is the setp that computed its predicate, holds whether the
// predicate's comparison is true on this edge.
func (ra *rangeAnalysis) refine(st *rstate, setp *ptx.Instruction, holds bool) {
	signed, ok := is32(setp)
	if !ok || len(setp.Operands) != 3 || len(setp.Mods) < 2 {
		return
	}
	op := strings.TrimPrefix(setp.Mods[0], ".")
	switch op {
	case "lo":
		op = "lt"
	case "ls":
		op = "le"
	case "hi":
		op = "gt"
	case "hs":
		op = "ge"
	}
	if !holds {
		op = negCmp[op]
	}
	x, y := setp.Operands[1], setp.Operands[2]
	switch op {
	case "gt", "ge":
		x, y = y, x
		op = map[string]string{"gt": "lt", "ge": "le"}[op]
	}
	var strict int64
	switch op {
	case "lt":
		strict = 1
	case "le":
	default:
		return
	}
	// The integers compared: an operand's value if its bits read as it in
	// this comparison's domain, an unknown register's bits read in it.
	domLo, domHi := int64(0), int64(1)<<32-1
	if signed {
		domLo, domHi = -(1 << 31), 1<<31-1
	}
	// A register whose integer may not be what its bits read as in this
	// comparison is given that reading instead (its congruence holds for
	// the bits too: the modulus divides 2^32); facts about the old integer go.
	var reset []string
	read := func(o ptx.Operand) (aval, bool) {
		v := ra.operand(o, st)
		if lo, hi, ok := ra.intRange(v); ok && lo >= domLo && hi <= domHi {
			return v, true
		}
		if r, ok := o.(*ptx.Reg); ok && !strings.Contains(r.Name, ".") {
			reset = append(reset, r.Name)
			return aval{lo: ra.konst(domLo), hi: ra.konst(domHi), mod: v.mod, rem: v.rem}, true
		}
		return v, false
	}
	vx, okx := read(x)
	vy, oky := read(y)
	if !okx || !oky {
		return
	}
	for _, name := range reset {
		rels := st.rels[:0]
		for _, r := range st.rels {
			if r.x != name && r.y != name {
				rels = append(rels, r)
			}
		}
		st.rels = rels
	}
	// x <= y - strict.
	// The register is not redefined: facts about it stay (no set). Of two
	// bounds that do not compare, a constant one replaces the old (tid < 32
	// in a reduction's last warp); one from a register does not (tid < s,
	// with s growing in a loop, would never let the loop's state settle).
	pick := func(old, nw *form, other ptx.Operand, hi bool) *form {
		if nw == nil {
			return old
		}
		if old == nil {
			return nw
		}
		if _, isConst := other.(*ptx.Int); isConst {
			if hi {
				return ra.tighterHi(old, nw)
			}
			return ra.tighterLo(old, nw)
		}
		if hi && nw.le(old) || !hi && old.le(nw) {
			return nw
		}
		// Tighter for every allowed launch than a constant bound.
		if mn, mx, ok := ra.extremes(nw, true); ok && old.constOnly() && (hi && mx <= old.c || !hi && mn >= old.c) {
			return nw
		}
		return old
	}
	if r, ok := x.(*ptx.Reg); ok && !strings.Contains(r.Name, ".") && vy.hi != nil {
		vx.hi = pick(vx.hi, ra.combine(vy.hi, ra.konst(strict), 1, -1), y, true)
		st.vals[r.Name] = vx
	}
	if r, ok := y.(*ptx.Reg); ok && !strings.Contains(r.Name, ".") && vx.lo != nil {
		vy.lo = pick(vy.lo, ra.combine(vx.lo, ra.konst(strict), 1, 1), x, false)
		st.vals[r.Name] = vy
	}
	rx, okx := x.(*ptx.Reg)
	ry, oky := y.(*ptx.Reg)
	if okx && oky && !strings.Contains(rx.Name, ".") && !strings.Contains(ry.Name, ".") {
		st.addRel(rel{x: ry.Name, y: rx.Name, d: strict})
	}
}

// condOf finds the setp that computed the predicate of the branch ending
// nodes[first..last], with nothing in between redefining its operands.
func condOf(nodes []flowNode, first, last int) (setp *ptx.Instruction, negated bool) {
	br := nodes[last].in
	if br.Opcode != "bra" || br.Guard == nil {
		return nil, false
	}
	p := br.Guard.Reg.Name
	for i := last - 1; i >= first; i-- {
		in := nodes[i].in
		ds := defsOf(in)
		if in.Opcode == "setp" && in.Guard == nil && len(in.Operands) == 3 {
			switch d := in.Operands[0].(type) {
			case *ptx.Reg:
				if d.Name == p {
					return checkUnchanged(nodes, in, i, last, br.Guard.Negated)
				}
			case *ptx.Pair:
				if r, ok := d.First.(*ptx.Reg); ok && r.Name == p {
					return checkUnchanged(nodes, in, i, last, br.Guard.Negated)
				}
				if r, ok := d.Second.(*ptx.Reg); ok && r.Name == p {
					return checkUnchanged(nodes, in, i, last, !br.Guard.Negated)
				}
			}
		}
		for _, d := range ds {
			if d == p {
				return nil, false
			}
		}
	}
	return nil, false
}

func checkUnchanged(nodes []flowNode, setp *ptx.Instruction, at, last int, negated bool) (*ptx.Instruction, bool) {
	var srcs []string
	for _, o := range setp.Operands[1:] {
		if r, ok := o.(*ptx.Reg); ok {
			srcs = append(srcs, r.Name)
		}
	}
	for i := at + 1; i < last; i++ {
		for _, d := range defsOf(nodes[i].in) {
			for _, s := range srcs {
				if d == s {
					return nil, false
				}
			}
		}
	}
	return setp, negated
}

// ---- the analysis -------------------------------------------------------------

// proof is the outcome for one shared access.
type proof struct {
	static bool
	conds  []rcond // run-time conditions (none when static)
}

// rcond is one run-time condition of the fast variant: f >= 0 (lower) or
// f + width <= limit (upper, width folded into f).
type rcond struct {
	f     *form
	upper bool
}

func (c rcond) key() string {
	var b strings.Builder
	if c.upper {
		b.WriteString("u")
	} else {
		b.WriteString("l")
	}
	b.WriteString(strconv.FormatInt(c.f.c, 10))
	for _, k := range c.f.k {
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(k, 10))
	}
	return b.String()
}

// rangeResult is what the analysis proved about a function.
type rangeResult struct {
	ra     *rangeAnalysis
	static map[*ptx.Instruction]bool // proven whatever the launch
	shape  map[*ptx.Instruction]bool // proven when every cond holds
	conds  []rcond
	hot    int // shape-proven accesses, those in loops counting 8
}

// maxConds bounds the run-time conditions of one kernel's entry check.
const maxConds = 12

// analyzeRanges runs the analysis over r's function.
// rangeWorkBudget bounds the range analysis of one function, in
// instructions stepped plus register values copied and joined: 34 times
// what the largest bench or testdata kernel needs (gemm_reg, 29,434), far
// below what each of cuSOLVER's getrf kernels took (3 s each; their 8 MB
// module took 53 s to guard here, 100 s on the GPU machine, and 7.5 s with
// the budget).
var rangeWorkBudget = 1_000_000

func analyzeRanges(r *fnRewriter) *rangeResult {
	if len(shadowedRegs(r.f.Body)) > 0 {
		return nil
	}
	ra := &rangeAnalysis{r: r, atomOf: map[string]int{}, natoms: fixedAtoms}
	ra.atomVar = make([]*ptx.Var, fixedAtoms)
	var names []string
	for name, v := range r.shared {
		if v.Space == ptx.SpaceShared {
			names = append(names, name)
		}
	}
	for name, v := range r.g.vars {
		if v.Space == ptx.SpaceShared && r.shared[name] == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		v := r.shared[name]
		if v == nil {
			v = r.g.vars[name]
		}
		ra.atomOf[name] = ra.natoms
		ra.atomVar = append(ra.atomVar, v)
		ra.natoms++
	}
	ra.ntidMin = [3]int64{1, 1, 1}
	ra.ntidMax = [3]int64{1024, 1024, 64}
	for _, d := range r.f.Directives {
		dims := [3]int64{1, 1, 1}
		for i := 0; i < 3 && i < len(d.Args); i++ {
			if len(d.Args[i]) == 1 {
				if n, ok := d.Args[i][0].(*ptx.Int); ok && n.Value > 0 {
					dims[i] = n.Value
				}
			}
		}
		switch d.Name {
		case ".reqntid":
			for i := range dims {
				ra.ntidMin[i], ra.ntidMax[i] = dims[i], min(dims[i], ra.ntidMax[i])
			}
		case ".maxntid":
			total := dims[0] * dims[1] * dims[2]
			for i := range dims {
				ra.ntidMax[i] = min(ra.ntidMax[i], total)
			}
		}
	}

	nodes := flatten(r.f.Body)
	if len(nodes) == 0 || len(nodes) > 50000 {
		return nil
	}
	fl := buildFlow(nodes)
	if fl.unresolved {
		return nil
	}
	ra.nodes, ra.fl = nodes, fl
	ra.single = map[string]int{}
	ndefs := map[string]int{}
	ra.defsAt = map[string][]int{}
	for i, n := range nodes {
		for _, d := range defsOf(n.in) {
			ndefs[d]++
			ra.defsAt[d] = append(ra.defsAt[d], i)
			if n.in.Guard == nil && definesOnly(n.in, d) {
				ra.single[d] = i
			}
		}
	}
	for d, n := range ndefs {
		if n != 1 {
			delete(ra.single, d)
		}
	}
	ra.index = make(map[*ptx.Instruction]int, len(nodes))
	for i, n := range nodes {
		ra.index[n.in] = i
	}
	ra.findLinPairs()
	nb := len(fl.start)
	end := func(b int) int {
		if b+1 < nb {
			return fl.start[b+1] - 1
		}
		return len(nodes) - 1
	}
	in := make([]*rstate, nb)
	visits := make([]int, nb)
	in[0] = &rstate{vals: map[string]aval{}}
	order := make([]int, 0, nb)
	for b := 0; b < nb; b++ {
		if fl.rpo[b] >= 0 {
			order = append(order, b)
		}
	}
	sort.Slice(order, func(i, j int) bool { return fl.rpo[order[i]] < fl.rpo[order[j]] })
	// out computes the state at the end of b on its edge to s.
	out := func(b, s int, st *rstate) *rstate {
		last := end(b)
		setp, neg := condOf(nodes, fl.start[b], last)
		if setp == nil {
			return st
		}
		br := nodes[last].in
		taken := -1
		if sym, ok := br.Operands[0].(*ptx.Symbol); ok {
			if t, ok := nodes[last].scope.label(sym.Name); ok && t < len(nodes) {
				taken = fl.block[t]
			}
		}
		fall := -1
		if last+1 < len(nodes) {
			fall = fl.block[last+1]
		}
		if taken == fall {
			return st
		}
		e := st.clone()
		// The predicate is true on the taken edge (false when the guard is negated).
		ra.refine(e, setp, (s == taken) != neg)
		return e
	}
	work := 0
	for pass := 0; ; pass++ {
		if pass > 64 {
			return nil // did not settle: prove nothing
		}
		changed := false
		for _, b := range order {
			if in[b] == nil {
				continue
			}
			// The states are maps over the function's registers, copied per
			// block: on the largest library kernels (cuSOLVER's, 8 MB of
			// PTX) the fixpoint took minutes. Past the budget, prove
			// nothing: every shared access stays checked.
			if work += end(b) - fl.start[b] + 1 + len(in[b].vals); work > rangeWorkBudget {
				return nil
			}
			st := in[b].clone()
			for i := fl.start[b]; i <= end(b); i++ {
				ra.step(nodes[i].in, st)
			}
			for _, s := range fl.succ[b] {
				e := out(b, s, st)
				if in[s] == nil {
					in[s] = e.clone()
					changed = true
					continue
				}
				work += len(e.vals) + len(in[s].vals)
				nw := ra.joinStates(in[s], e)
				if fl.rpo[s] <= fl.rpo[b] {
					visits[s]++
					if visits[s] > 4 {
						nw = ra.widen(in[s], nw)
					}
				}
				if !ra.sameState(in[s], nw) {
					in[s] = nw
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}
	// Narrowing: widening dropped bounds that the loop's own exit test
	// restores (for (s = 1; s < ntid; s <<= 1)). Recompute each head from
	// its predecessors a few times; keep the result only if it is still a
	// fixpoint (every edge's state inside its target's), which is what
	// soundness needs.
	preds := make([][]int, nb)
	for _, b := range order {
		for _, s := range fl.succ[b] {
			preds[s] = append(preds[s], b)
		}
	}
	endState := func(st []*rstate, b int) *rstate {
		e := st[b].clone()
		for i := fl.start[b]; i <= end(b); i++ {
			ra.step(nodes[i].in, e)
		}
		return e
	}
	narrow := append([]*rstate(nil), in...)
	for round := 0; round < 3; round++ {
		for _, b := range order {
			var nw *rstate
			if b == 0 {
				nw = &rstate{vals: map[string]aval{}}
			}
			for _, p := range preds[b] {
				if narrow[p] == nil {
					continue
				}
				e := out(p, b, endState(narrow, p))
				if nw == nil {
					nw = e.clone()
				} else {
					nw = ra.joinStates(nw, e)
				}
			}
			if nw != nil {
				narrow[b] = nw
			}
		}
	}
	stable := true
	for _, b := range order {
		if narrow[b] == nil {
			continue
		}
		e := endState(narrow, b)
		for _, s := range fl.succ[b] {
			if narrow[s] == nil || !ra.sameState(narrow[s], ra.joinStates(narrow[s], out(b, s, e))) {
				stable = false
				if dbgHook != nil {
					dbgHook(nodes[fl.start[s]].in, narrow[s])
					dbgHook(nodes[fl.start[s]].in, ra.joinStates(narrow[s], out(b, s, e)))
				}
			}
		}
	}
	if stable {
		in = narrow
	}

	inLoop := fl.loopBlocks()

	res := &rangeResult{ra: ra, static: map[*ptx.Instruction]bool{}, shape: map[*ptx.Instruction]bool{}}
	for _, b := range order {
		if in[b] == nil {
			continue
		}
		st := in[b].clone()
		for i := fl.start[b]; i <= end(b); i++ {
			ins := nodes[i].in
			if dbgHook != nil {
				dbgHook(ins, st)
			}
			if pf, ok := ra.proveAccess(ins, i, st); ok {
				if pf.static {
					res.static[ins] = true
				} else if r.f.Entry {
					conds := res.conds
					for _, c := range pf.conds {
						conds = addCond(conds, c)
					}
					if len(conds) <= maxConds {
						res.conds = conds
						res.shape[ins] = true
						res.hot++
						if inLoop[b] {
							res.hot += 7
						}
					}
				}
			}
			ra.step(ins, st)
		}
	}
	return res
}

// addCond adds c to conds unless one there implies it, and drops those it
// implies: an upper bound form at least another's everywhere implies it (a
// lower one, at most). The unrolled offsets of one tile collapse into one.
func addCond(conds []rcond, c rcond) []rcond {
	implies := func(a, b rcond) bool { // a implies b
		if a.upper != b.upper {
			return false
		}
		if a.upper {
			return b.f.le(a.f)
		}
		return a.f.le(b.f)
	}
	for _, d := range conds {
		if implies(d, c) {
			return conds
		}
	}
	out := make([]rcond, 0, len(conds)+1)
	for _, d := range conds {
		if !implies(c, d) {
			out = append(out, d)
		}
	}
	return append(out, c)
}

func (ra *rangeAnalysis) joinStates(a, b *rstate) *rstate {
	out := &rstate{vals: map[string]aval{}}
	for k, va := range a.vals {
		if vb, ok := b.vals[k]; ok {
			if j := ra.join(va, vb); !j.isTop() {
				out.vals[k] = j
			}
		}
	}
	// Each state holds at most one fact per pair (addRel), in order.
	for _, ra1 := range a.rels {
		for _, rb := range b.rels {
			if ra1.x == rb.x && ra1.y == rb.y {
				out.rels = append(out.rels, rel{x: ra1.x, y: ra1.y, d: min(ra1.d, rb.d)})
			}
		}
	}
	for _, la := range a.lins {
		for _, lb := range b.lins {
			if la.x == lb.x && la.y == lb.y && la.s.equal(lb.s) {
				if j := ra.join(la.v, lb.v); j.lo != nil && j.hi != nil {
					out.lins = append(out.lins, lin{x: la.x, y: la.y, s: la.s, v: j})
				}
			}
		}
	}
	return out
}

// widen drops the bounds that still move at a loop head.
func (ra *rangeAnalysis) widen(old, nw *rstate) *rstate {
	out := nw.clone()
	for k, v := range nw.vals {
		o, ok := old.vals[k]
		if !ok {
			delete(out.vals, k)
			continue
		}
		if !v.lo.equal(o.lo) {
			v.lo = nil
		}
		if v.hi != nil && !v.hi.equal(o.hi) {
			v.hi = nil
		}
		if v.isTop() {
			delete(out.vals, k)
		} else {
			out.vals[k] = v
		}
	}
	// A lin fact whose bounds still move is dropped (it bounds nothing
	// without both).
	out.lins = out.lins[:0]
	for _, l := range nw.lins {
		for _, o := range old.lins {
			if o.x == l.x && o.y == l.y && o.s.equal(l.s) && o.v.lo.equal(l.v.lo) && o.v.hi.equal(l.v.hi) {
				out.lins = append(out.lins, l)
			}
		}
	}
	return out
}

func (ra *rangeAnalysis) sameState(a, b *rstate) bool {
	if len(a.vals) != len(b.vals) || len(a.rels) != len(b.rels) {
		return false
	}
	for k, v := range a.vals {
		w, ok := b.vals[k]
		if !ok || !v.equal(w) {
			return false
		}
	}
	for i := range a.rels {
		if a.rels[i] != b.rels[i] {
			return false
		}
	}
	if len(a.lins) != len(b.lins) {
		return false
	}
	for i := range a.lins {
		l, m := a.lins[i], b.lins[i]
		if l.x != m.x || l.y != m.y || !l.s.equal(m.s) || !l.v.equal(m.v) {
			return false
		}
	}
	return true
}

// deep is the value of register o at instruction at, recomputed from its
// definition where that is more precise than the state: an address computed
// before a branch (r4 = s + 4*tid; if (tid < 4) ... [r4+16]) gets the
// branch's bound on tid. Sound because o and every register its definition
// reads have one definition each, the operands' dominating o's and o's
// dominating at: no operand is redefined between o's definition and at
// without o being redefined too (else a path from the entry would reach at
// avoiding o's definition), so their values at at, which st bounds, are
// the ones o was computed from.
//
// An operand with several definitions qualifies too when none of them can
// execute between o's definition and orig, the instruction st describes
// (redefinedBetween): its value there is the one o was computed from.
func (ra *rangeAnalysis) deep(o ptx.Operand, st *rstate, at, orig, depth int) aval {
	v := ra.operand(o, st)
	reg, ok := o.(*ptx.Reg)
	if !ok || depth == 0 || strings.Contains(reg.Name, ".") {
		return v
	}
	d, ok := ra.single[reg.Name]
	if !ok || !ra.fl.dominates(d, at) {
		return v
	}
	def := ra.nodes[d].in
	tmp := &rstate{vals: map[string]aval{}}
	var regs []string
	for _, x := range def.Operands[1:] {
		y, ok := x.(*ptx.Reg)
		if !ok || strings.Contains(y.Name, ".") {
			continue
		}
		if _, single := ra.single[y.Name]; (!single || !ra.fl.dominates(ra.single[y.Name], d)) && ra.redefinedBetween(y.Name, d, orig) {
			return v
		}
		tmp.vals[y.Name] = ra.deep(y, st, d, orig, depth-1)
		regs = append(regs, y.Name)
	}
	for _, r := range st.rels {
		if contains(regs, r.x) && contains(regs, r.y) {
			tmp.rels = append(tmp.rels, r)
		}
	}
	return ra.meet(v, ra.eval(def, tmp))
}

// meet combines two bounds of one register. Each stands for an integer
// congruent to its bits; they are the same integer when both ranges lie in
// one span shorter than 2^32, and then the tighter of each bound holds.
func (ra *rangeAnalysis) meet(a, b aval) aval {
	if a.isTop() {
		return b
	}
	if b.isTop() {
		return a
	}
	if a.lo == nil || a.hi == nil || b.lo == nil || b.hi == nil {
		if b.lo != nil && b.hi != nil {
			return b
		}
		return a
	}
	al, _, ok1 := ra.extremes(a.lo, true)
	_, ah, ok2 := ra.extremes(a.hi, true)
	bl, _, ok3 := ra.extremes(b.lo, true)
	_, bh, ok4 := ra.extremes(b.hi, true)
	if !ok1 || !ok2 || !ok3 || !ok4 || max(ah, bh)-min(al, bl) >= 1<<32 {
		if bh-bl < ah-al {
			return b
		}
		return a
	}
	out := aval{lo: ra.tighterLo(a.lo, b.lo), hi: ra.tighterHi(a.hi, b.hi), mod: a.mod, rem: a.rem}
	if b.mod > a.mod {
		out.mod, out.rem = b.mod, b.rem
	}
	return out
}

// proveAccess tries to prove in's one shared access (a plain load, store or
// atomic at [reg+off] or [sym+off]) inside shared memory and aligned.
func (ra *rangeAnalysis) proveAccess(in *ptx.Instruction, at int, st *rstate) (proof, bool) {
	accs, err := accessesOf(ra.r.f.Name, in)
	if err != nil || len(accs) != 1 || accs[0].space != spShared || accs[0].size != nil || accs[0].hint {
		return proof{}, false
	}
	switch in.Opcode {
	case "ld", "st", "atom", "red":
	default:
		return proof{}, false
	}
	acc := accs[0]
	a := in.Operands[acc.op].(*ptx.Address)
	var v aval
	switch b := a.Base.(type) {
	case *ptx.Reg:
		if ra.r.regType(b.Name).Bits() != 32 {
			return proof{}, false
		}
		v = ra.linBound(b.Name, ra.deep(b, st, at, at, 8), st)
	case *ptx.Symbol:
		v = ra.operand(b, st)
	default:
		return proof{}, false
	}
	if v.lo == nil || v.hi == nil {
		return proof{}, false
	}
	w := int64(acc.width)
	// The register's own integer must be its bits too (not below 0) when
	// the offset is positive: [r+off] adds off to r's bits, unwrapped.
	lo := ra.combine(v.lo, ra.konst(min(a.Offset, 0)), 1, 1)
	hi := ra.combine(v.hi, ra.konst(a.Offset+w), 1, 1) // the end
	if lo == nil || hi == nil || v.mod < w || modp(v.rem+a.Offset, w) != 0 {
		return proof{}, false
	}
	// Statically: one sized variable plus offsets that stay inside it.
	for i := fixedAtoms; i < ra.natoms; i++ {
		if lo.coef(i) != 1 || hi.coef(i) != 1 {
			continue
		}
		vr := ra.atomVar[i]
		size, _, err := varShape(vr)
		if err != nil || size == 0 {
			break
		}
		rl, rh := ra.combine(lo, ra.atom(i, 1, 0), 1, -1), ra.combine(hi, ra.atom(i, 1, 0), 1, -1)
		mn, _, ok1 := ra.extremes(rl, false)
		_, mx, ok2 := ra.extremes(rh, false)
		if ok1 && ok2 && mn >= 0 && mx <= int64(size) {
			return proof{static: true}, true
		}
		break
	}
	// At run time: every form must evaluate exactly in int32.
	for _, f := range []*form{lo, hi} {
		mn, mx, ok := ra.extremes(f, true)
		if !ok || mn < -(1<<30) || mx > 1<<30 {
			return proof{}, false
		}
	}
	var pf proof
	if mn, _, ok := ra.extremes(lo, true); !ok || mn < 0 {
		pf.conds = append(pf.conds, rcond{f: lo})
	}
	pf.conds = append(pf.conds, rcond{f: hi, upper: true})
	return pf, true
}

var dbgHook func(*ptx.Instruction, *rstate)

// findLinPairs lists the (pointer, counter) pairs: a register x with an
// unguarded "add x, x, t" and a register y with "add y, y, 1" in the same
// basic block. x's increments must all add the same operand.
func (ra *rangeAnalysis) findLinPairs() {
	type inc struct {
		block int
		t     ptx.Operand
	}
	incs := map[string][]inc{}
	var names []string
	counters := map[int][]string{} // block → registers incremented by 1 there
	for i, n := range ra.nodes {
		d, t, ok := selfAdd(n.in)
		if !ok {
			continue
		}
		if _, seen := incs[d]; !seen {
			names = append(names, d)
		}
		b := ra.fl.block[i]
		incs[d] = append(incs[d], inc{b, t})
		if one, ok := t.(*ptx.Int); ok && one.Value == 1 && !contains(counters[b], d) {
			counters[b] = append(counters[b], d)
		}
	}
	ra.linStep = map[[2]string]ptx.Operand{}
	ra.linOf = map[string][]int{}
	for _, x := range names {
		xs := incs[x]
		same := true
		for _, a := range xs[1:] {
			same = same && operandKey(a.t) == operandKey(xs[0].t)
		}
		if !same {
			continue
		}
		for _, a := range xs {
			for _, y := range counters[a.block] {
				pr := [2]string{x, y}
				if _, dup := ra.linStep[pr]; dup || y == x || len(ra.linPairs) >= 64 {
					continue
				}
				ra.linOf[x] = append(ra.linOf[x], len(ra.linPairs))
				ra.linOf[y] = append(ra.linOf[y], len(ra.linPairs))
				ra.linPairs = append(ra.linPairs, pr)
				ra.linStep[pr] = xs[0].t
			}
		}
	}
}

func operandKey(o ptx.Operand) string {
	switch o := o.(type) {
	case *ptx.Reg:
		return "r" + o.Name
	case *ptx.Int:
		return "i" + strconv.FormatInt(o.Value, 10)
	}
	return "?"
}

// redefinedBetween reports whether some definition of reg may execute after
// instruction d and before instruction at: then reg's value at at need not
// be the one d read. Otherwise it is, whatever reg's other definitions
// elsewhere (a thread index copied into a register that a later loop
// advances), so deep may bound d's result from reg's bounds at at.
func (ra *rangeAnalysis) redefinedBetween(reg string, d, at int) bool {
	for _, x := range ra.defsAt[reg] {
		if ra.reaches(d, x) && ra.reaches(x, at) {
			return true
		}
	}
	return false
}

// reaches reports whether instruction j may execute after instruction i.
func (ra *rangeAnalysis) reaches(i, j int) bool {
	bi, bj := ra.fl.block[i], ra.fl.block[j]
	if bi == bj && i < j {
		return true
	}
	if ra.reachB == nil {
		ra.reachB = map[int][]bool{}
	}
	r, ok := ra.reachB[bi]
	if !ok {
		r = make([]bool, len(ra.fl.start))
		work := append([]int(nil), ra.fl.succ[bi]...)
		for len(work) > 0 {
			b := work[len(work)-1]
			work = work[:len(work)-1]
			if r[b] {
				continue
			}
			r[b] = true
			work = append(work, ra.fl.succ[b]...)
		}
		ra.reachB[bi] = r
	}
	return r[bj]
}
