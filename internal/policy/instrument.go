package policy

import (
	"fmt"
	"unicode/utf8"
)

// This file rewrites a policy module before wazero compiles it, so that a
// guest can always be stopped and never grows its memory past the limit
// without the host knowing:
//
//   - a mutable i32 global (the fuel counter) is added, and at every function
//     entry and every loop header the guest decrements it; when it is zero the
//     guest calls the injected import gpuos.__meter, which returns fresh fuel
//     or stops the guest. Every cycle of control flow inside a function passes
//     a loop header, and every cycle across functions passes a function entry
//     (tail calls are refused), so a guest cannot run without reaching the
//     meter. Interrupt zeroes the fuel from another goroutine to reach the
//     meter at the next check site.
//   - memory.grow becomes a call to the injected import gpuos.__grow, which
//     grows the memory itself and stops the guest when the limit is reached.
//
// wazero's own termination support (RuntimeConfig.WithCloseOnContextDone)
// would do the first job, but costs a goroutine per call and a Go call per
// loop iteration: 1.4 µs for a no-op hook of a Go guest instead of 44 ns.
//
// The pass decodes every instruction of every function (it refuses opcodes
// outside the feature set the runtime enables, so what it decodes is what
// wazero will compile) and re-emits the module with the injected imports
// appended to the import section: every function index at or above the first
// defined function shifts by two, in calls, ref.func, exports, the start
// function, element segments and global initializers. Custom sections are
// dropped (their names and debug offsets would be stale). wazero validates the
// result.

// Names of the injected imports, in module "gpuos". A guest that imports
// them itself is refused (names starting with "__" are reserved).
const (
	importMeter = "__meter"
	importGrow  = "__grow"
)

// Wasm encoding constants used by the pass.
const (
	wasmMagic   = "\x00asm"
	wasmVersion = "\x01\x00\x00\x00"

	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12

	valI32 = 0x7f
	valI64 = 0x7e
	valF32 = 0x7d
	valF64 = 0x7c
	valRef = 0x70 // funcref
	valExt = 0x6f // externref

	opUnreachable  = 0x00
	opBlock        = 0x02
	opLoop         = 0x03
	opIf           = 0x04
	opElse         = 0x05
	opEnd          = 0x0b
	opBr           = 0x0c
	opBrIf         = 0x0d
	opBrTable      = 0x0e
	opCall         = 0x10
	opCallIndirect = 0x11
	opSelectT      = 0x1c
	opGlobalGet    = 0x23
	opGlobalSet    = 0x24
	opMemorySize   = 0x3f
	opMemoryGrow   = 0x40
	opI32Const     = 0x41
	opI64Const     = 0x42
	opF32Const     = 0x43
	opF64Const     = 0x44
	opI32Eqz       = 0x45
	opI32Sub       = 0x6b
	opRefNull      = 0xd0
	opRefFunc      = 0xd2
	opPrefixFC     = 0xfc
)

// Limits of what the pass accepts, so that a hostile module cannot make it
// allocate without bound (each is far above what a policy needs).
const (
	maxModuleBytes = 16 << 20
	maxNesting     = 1 << 16
)

// instrumented is the result of the pass.
type instrumented struct {
	wasm []byte
	// funcImports are the (module, name) of the guest's own function imports,
	// in order; the injected ones follow them.
	funcImports []importRef
	// otherImports are imports of tables, memories or globals (refused).
	otherImports []importRef
	loops, funcs int // check sites inserted: loop headers, function entries
	// memPages is the initial size of the module's memory, in 64 KiB pages.
	memPages uint64
}

type importRef struct{ module, name, kind string }

// moduleReader decodes the binary format; every read is bounds-checked and
// failures are sticky (err), so the decoder never panics on hostile input.
type moduleReader struct {
	b   []byte
	off int
	err error
}

func (r *moduleReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: "+format, append([]any{r.off}, args...)...)
	}
}

func (r *moduleReader) done() bool { return r.err != nil || r.off >= len(r.b) }

func (r *moduleReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *moduleReader) bytes(n uint32) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)-r.off) {
		r.fail("length %d past the end", n)
		return nil
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

// leb reads an unsigned or signed LEB128 of at most bits bits, checking the
// encoding as the specification does (length and unused bits).
func (r *moduleReader) leb(bits uint, signed bool) uint64 {
	var v uint64
	var shift uint
	maxBytes := (bits + 6) / 7
	for i := uint(0); ; i++ {
		if i >= maxBytes {
			r.fail("integer too long")
			return 0
		}
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if i == maxBytes-1 {
			// The last byte may only use the bits that remain; for signed
			// values the unused ones must be copies of the sign bit.
			rem := bits - shift
			if c&0x80 != 0 {
				r.fail("integer too long")
				return 0
			}
			if rem < 7 {
				p := c & 0x7f
				bad := p>>rem != 0
				if signed {
					// The unused bits must repeat the sign bit.
					full := int8(p<<1) >> 1
					part := int8(p<<(8-rem)) >> (8 - rem)
					bad = full != part
				}
				if bad {
					r.fail("integer too large")
					return 0
				}
			}
		}
		v |= uint64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if signed && shift < 64 && c&0x40 != 0 {
				v |= ^uint64(0) << shift
			}
			return v
		}
	}
}

func (r *moduleReader) u32() uint32 { return uint32(r.leb(32, false)) }

func (r *moduleReader) name() string { return string(r.bytes(r.u32())) }

// count reads a vector length, refusing one that could not fit in what is left
// (each element takes at least min bytes).
func (r *moduleReader) count(min int) uint32 {
	n := r.u32()
	if r.err == nil && uint64(n)*uint64(min) > uint64(len(r.b)-r.off) {
		r.fail("count %d exceeds the data", n)
		return 0
	}
	return n
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func appendName(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

// section is one section of the input module.
type section struct {
	id   byte
	body []byte
}

// rewriter holds what the sections say that later sections need.
type rewriter struct {
	types        uint32 // entries in the type section before the pass
	funcImports  uint32
	globals      uint32 // imported + defined globals before the pass
	meterIdx     uint32 // function index of gpuos.__meter
	growIdx      uint32 // function index of gpuos.__grow
	fuelIdx      uint32 // global index of the fuel counter
	out          instrumented
	sawImportSec bool
	hasMemory    bool // defined or imported
}

// shift maps an input function index to the output's.
func (w *rewriter) shift(idx uint32) uint32 {
	if idx >= w.funcImports {
		return idx + 2
	}
	return idx
}

// instrument runs the pass over a module.
func instrument(wasm []byte) (*instrumented, error) {
	if len(wasm) > maxModuleBytes {
		return nil, fmt.Errorf("module is %d bytes, more than %d", len(wasm), maxModuleBytes)
	}
	if len(wasm) < 8 || string(wasm[:4]) != wasmMagic {
		return nil, fmt.Errorf("not a WebAssembly module")
	}
	if string(wasm[4:8]) != wasmVersion {
		return nil, fmt.Errorf("unsupported WebAssembly version %x", wasm[4:8])
	}
	r := &moduleReader{b: wasm, off: 8}
	var secs []section
	last := byte(0)
	for !r.done() {
		id := r.byte()
		body := r.bytes(r.u32())
		if r.err != nil {
			break
		}
		if id == secCustom {
			// Dropped, but only if well formed, as wazero would require.
			cr := &moduleReader{b: body}
			if name := cr.name(); cr.err != nil || name == "" || !utf8.ValidString(name) {
				return nil, fmt.Errorf("custom section with a bad name")
			}
			continue
		}
		if id > secDataCount {
			return nil, fmt.Errorf("unknown section %d", id)
		}
		if order(id) <= order(last) {
			return nil, fmt.Errorf("section %d out of order or repeated", id)
		}
		last = id
		secs = append(secs, section{id, body})
	}
	if r.err != nil {
		return nil, fmt.Errorf("read sections: %w", r.err)
	}

	w := &rewriter{}
	// First pass: what later sections and the injected entries depend on.
	for _, s := range secs {
		sr := &moduleReader{b: s.body}
		switch s.id {
		case secType:
			w.types = sr.count(1)
		case secImport:
			w.sawImportSec = true
			if err := w.readImports(sr); err != nil {
				return nil, err
			}
		case secGlobal:
			w.globals += sr.count(1)
		case secMemory:
			if sr.count(1) > 0 {
				w.hasMemory = true
				flag := sr.byte()
				w.out.memPages = uint64(sr.u32())
				if flag&1 != 0 {
					sr.u32()
				}
			}
		}
		if sr.err != nil {
			return nil, fmt.Errorf("section %d: %w", s.id, sr.err)
		}
	}
	w.meterIdx, w.growIdx = w.funcImports, w.funcImports+1
	w.fuelIdx = w.globals

	out := append([]byte(nil), wasmMagic+wasmVersion...)
	emit := func(id byte, body []byte) {
		out = append(out, id)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	have := map[byte]bool{}
	for _, s := range secs {
		have[s.id] = true
	}
	// Sections the pass must add to when the module lacks them.
	synth := func(id byte) {
		if have[id] {
			return
		}
		body, err := w.section(id, nil)
		if err != nil {
			panic(err) // synthesized sections cannot fail
		}
		emit(id, body)
	}
	for _, s := range secs {
		// Missing sections go where they belong.
		for _, id := range synthesized {
			if order(id) < order(s.id) {
				synth(id)
				have[id] = true
			}
		}
		body, err := w.section(s.id, s.body)
		if err != nil {
			return nil, err
		}
		emit(s.id, body)
	}
	for _, id := range synthesized {
		synth(id)
		have[id] = true
	}
	w.out.wasm = out
	return &w.out, nil
}

// synthesized are the sections the pass adds to, so creates if missing.
var synthesized = []byte{secType, secImport, secGlobal, secExport}

// order gives a section's place: the data count section comes before code.
func order(id byte) int {
	switch id {
	case secDataCount:
		return int(secElement) + 1
	case secCode, secData:
		return int(id) + 1
	}
	return int(id)
}

func (w *rewriter) readImports(r *moduleReader) error {
	n := r.count(4)
	for i := uint32(0); i < n && r.err == nil; i++ {
		mod, name := r.name(), r.name()
		switch kind := r.byte(); kind {
		case 0x00:
			w.typeIndex(r)
			w.funcImports++
			w.out.funcImports = append(w.out.funcImports, importRef{mod, name, "function"})
		case 0x01:
			r.byte()
			readLimits(r)
			w.out.otherImports = append(w.out.otherImports, importRef{mod, name, "table"})
		case 0x02:
			readLimits(r)
			w.hasMemory = true
			w.out.otherImports = append(w.out.otherImports, importRef{mod, name, "memory"})
		case 0x03:
			r.byte()
			r.byte()
			w.globals++
			w.out.otherImports = append(w.out.otherImports, importRef{mod, name, "global"})
		default:
			r.fail("import kind %d", kind)
		}
	}
	if r.err == nil && r.off != len(r.b) {
		r.fail("%d trailing bytes", len(r.b)-r.off)
	}
	if r.err != nil {
		return fmt.Errorf("import section: %w", r.err)
	}
	return nil
}

func readLimits(r *moduleReader) {
	switch flag := r.byte(); flag {
	case 0x00:
		r.u32()
	case 0x01:
		r.u32()
		r.u32()
	default:
		r.fail("limits flag %#x", flag)
	}
}

// section returns the rewritten body of a section (body nil: synthesize one).
func (w *rewriter) section(id byte, body []byte) ([]byte, error) {
	r := &moduleReader{b: body}
	var out []byte
	switch id {
	case secType:
		// Check every entry (wazero's decoder trusts the counts: a 17-byte
		// module could make it allocate gigabytes), then append
		// () -> i32 (meter) and (i32) -> i32 (grow).
		n := w.entries(r, body)
		start := r.off
		for i := uint32(0); i < n && r.err == nil; i++ {
			if form := r.byte(); form != 0x60 {
				r.fail("type %d is not a function type (%#x)", i, form)
			}
			for k := 0; k < 2; k++ { // params, results
				m := r.count(1)
				for j := uint32(0); j < m && r.err == nil; j++ {
					switch v := r.byte(); v {
					case valI32, valI64, valF32, valF64, valRef, valExt:
					default:
						r.fail("value type %#x", v)
					}
				}
			}
		}
		out = appendU32(out, n+2)
		out = append(out, body[start:r.off]...)
		out = append(out, 0x60, 0x00, 0x01, valI32)
		out = append(out, 0x60, 0x01, valI32, 0x01, valI32)
	case secImport:
		n := w.entries(r, body)
		out = appendU32(out, n+2)
		out = append(out, body[r.off:]...)
		r.off = len(body)
		for _, imp := range []struct {
			name string
			typ  uint32
		}{{importMeter, w.types}, {importGrow, w.types + 1}} {
			out = appendName(out, ModuleName)
			out = appendName(out, imp.name)
			out = append(out, 0x00)
			out = appendU32(out, imp.typ)
		}
	case secGlobal:
		n := w.entries(r, body)
		out = appendU32(out, n+1)
		for i := uint32(0); i < n && r.err == nil; i++ {
			out = append(out, r.byte(), r.byte()) // valtype, mutability
			out = w.constExpr(r, out)
		}
		// The fuel counter: mutable i32, initially 0 so the first check site
		// asks the meter.
		out = append(out, valI32, 0x01, opI32Const, 0x00, opEnd)
	case secExport:
		var n uint32
		if body != nil {
			n = r.count(2)
		}
		out = appendU32(out, n+1)
		for i := uint32(0); i < n && r.err == nil; i++ {
			out = appendName(out, r.name())
			kind := r.byte()
			idx := r.u32()
			switch kind {
			case 0x00:
				idx = w.shift(idx)
			case 0x03:
				if idx >= w.globals {
					r.fail("export of global %d", idx)
				}
			}
			out = appendU32(append(out, kind), idx)
		}
		// The fuel counter, for Interrupt (a guest exporting the same name
		// fails validation: export names are unique).
		out = appendName(out, exportFuel)
		out = appendU32(append(out, 0x03), w.fuelIdx)
	case secFunction:
		n := r.count(1)
		for i := uint32(0); i < n && r.err == nil; i++ {
			w.typeIndex(r)
		}
		out = append(out, body...)
	case secTable:
		n := r.count(3)
		for i := uint32(0); i < n && r.err == nil; i++ {
			switch t := r.byte(); t {
			case valRef, valExt:
			default:
				r.fail("table of %#x", t)
			}
			readLimits(r)
		}
		out = append(out, body...)
	case secData:
		// Checked entry by entry for the same reason as the type section.
		n := r.count(2)
		for i := uint32(0); i < n && r.err == nil; i++ {
			switch flag := r.u32(); flag {
			case 0:
				w.constExpr(r, nil)
			case 1:
			case 2:
				if mem := r.u32(); mem != 0 {
					r.fail("data segment of memory %d", mem)
				}
				w.constExpr(r, nil)
			default:
				r.fail("data segment flags %d", flag)
			}
			r.bytes(r.u32())
		}
		out = append(out, body...)
	case secStart:
		out = appendU32(out, w.shift(r.u32()))
	case secElement:
		out = w.elements(r, out)
	case secCode:
		out = w.code(r, out)
	default:
		return body, nil
	}
	if r.err == nil && r.off != len(body) {
		r.fail("%d trailing bytes", len(body)-r.off)
	}
	if r.err != nil {
		return nil, fmt.Errorf("section %d: %w", id, r.err)
	}
	return out, nil
}

// entries reads a section's entry count (0 for a section being synthesized).
func (w *rewriter) entries(r *moduleReader, body []byte) uint32 {
	if body == nil {
		return 0
	}
	return r.count(1)
}

// constExpr copies a constant expression, shifting ref.func indices.
func (w *rewriter) constExpr(r *moduleReader, out []byte) []byte {
	for r.err == nil {
		op := r.byte()
		out = append(out, op)
		switch op {
		case opEnd:
			return out
		case opI32Const:
			out = appendRaw(out, r, func() { r.leb(32, true) })
		case opI64Const:
			out = appendRaw(out, r, func() { r.leb(64, true) })
		case opF32Const:
			out = append(out, r.bytes(4)...)
		case opF64Const:
			out = append(out, r.bytes(8)...)
		case opGlobalGet:
			out = appendU32(out, w.globalIndex(r))
		case opRefNull:
			out = append(out, r.byte())
		case opRefFunc:
			out = appendU32(out, w.shift(r.u32()))
		default:
			r.fail("opcode %#x in a constant expression", op)
		}
	}
	return out
}

// appendRaw copies the bytes that read consumes.
func appendRaw(out []byte, r *moduleReader, read func()) []byte {
	start := r.off
	read()
	if r.err != nil {
		return out
	}
	return append(out, r.b[start:r.off]...)
}

// elements rewrites the element section (all eight segment encodings).
func (w *rewriter) elements(r *moduleReader, out []byte) []byte {
	n := r.count(1)
	out = appendU32(out, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		flags := r.u32()
		if flags > 7 {
			r.fail("element segment flags %d", flags)
			break
		}
		out = appendU32(out, flags)
		active, explicitTable, exprs := flags&1 == 0, flags&2 != 0, flags&4 != 0
		if active && explicitTable {
			out = appendU32(out, r.u32())
		}
		if active {
			out = w.constExpr(r, out)
		}
		if !active || explicitTable {
			out = append(out, r.byte()) // elemkind (0x00) or reftype
		}
		m := r.count(1)
		out = appendU32(out, m)
		for j := uint32(0); j < m && r.err == nil; j++ {
			if exprs {
				out = w.constExpr(r, out)
			} else {
				out = appendU32(out, w.shift(r.u32()))
			}
		}
	}
	return out
}

// code rewrites every function body.
func (w *rewriter) code(r *moduleReader, out []byte) []byte {
	n := r.count(1)
	out = appendU32(out, n)
	var body []byte
	for i := uint32(0); i < n && r.err == nil; i++ {
		size := r.u32()
		fr := &moduleReader{b: r.bytes(size)}
		if r.err != nil {
			break
		}
		body = w.function(fr, body[:0])
		if fr.err != nil {
			r.fail("function %d: %v", i, fr.err)
			break
		}
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
		w.out.funcs++
	}
	return out
}

// checkSite appends the fuel check: decrement the counter, and call the meter
// first when it is zero.
func (w *rewriter) checkSite(out []byte) []byte {
	out = appendU32(append(out, opGlobalGet), w.fuelIdx)
	out = append(out, opI32Eqz, opIf, 0x40)
	out = appendU32(append(out, opCall), w.meterIdx)
	out = appendU32(append(out, opGlobalSet), w.fuelIdx)
	out = append(out, opEnd)
	out = appendU32(append(out, opGlobalGet), w.fuelIdx)
	out = append(out, opI32Const, 0x01, opI32Sub)
	return appendU32(append(out, opGlobalSet), w.fuelIdx)
}

// function rewrites one body: locals, then instructions until the final end.
func (w *rewriter) function(r *moduleReader, out []byte) []byte {
	groups := r.count(2)
	out = appendU32(out, groups)
	var locals uint64
	for i := uint32(0); i < groups && r.err == nil; i++ {
		c := r.u32()
		locals += uint64(c)
		if locals > 50000 {
			r.fail("too many locals")
		}
		out = append(appendU32(out, c), r.byte())
	}
	out = w.checkSite(out)
	depth := 1
	for r.err == nil {
		if r.off >= len(r.b) {
			r.fail("function body ends before its end")
			break
		}
		op := r.byte()
		switch op {
		case opBlock, opLoop, opIf:
			out = append(out, op)
			out = appendRaw(out, r, func() { w.readBlockType(r) })
			depth++
			if depth > maxNesting {
				r.fail("blocks nested too deep")
			}
			if op == opLoop {
				out = w.checkSite(out)
				w.out.loops++
			}
		case opEnd:
			out = append(out, op)
			depth--
			if depth == 0 {
				if r.off != len(r.b) {
					r.fail("%d bytes after the function's end", len(r.b)-r.off)
				}
				return out
			}
		case opCall:
			out = appendU32(append(out, op), w.shift(r.u32()))
		case opRefFunc:
			out = appendU32(append(out, op), w.shift(r.u32()))
		case opMemoryGrow:
			if mem := r.u32(); mem != 0 || !w.hasMemory {
				r.fail("memory.grow of memory %d, which does not exist", mem)
			}
			out = appendU32(append(out, opCall), w.growIdx)
		default:
			out = append(out, op)
			out = appendRaw(out, r, func() { w.skipImmediates(r, op) })
		}
	}
	return out
}

func (w *rewriter) readBlockType(r *moduleReader) {
	if r.off >= len(r.b) {
		r.fail("unexpected end")
		return
	}
	switch c := r.b[r.off]; c {
	case 0x40, valI32, valI64, valF32, valF64, valRef, valExt:
		r.off++
	default:
		if v := int64(r.leb(33, true)); r.err == nil && (v < 0 || v >= int64(w.types)) {
			r.fail("block type %d", v)
		}
	}
}

// skipImmediates consumes the immediates of an instruction the pass copies
// unchanged, refusing opcodes outside the enabled features, and type and
// global indices that only the pass's own additions would make valid (the
// fuel counter must stay out of the guest's reach).
func (w *rewriter) skipImmediates(r *moduleReader, op byte) {
	switch {
	case op == 0x00 || op == 0x01 || op == opElse || op == 0x0f || op == 0x1a || op == 0x1b:
		// unreachable, nop, else, return, drop, select
	case op == opBr || op == opBrIf:
		r.u32()
	case op == opBrTable:
		n := r.count(1)
		for i := uint32(0); i <= n && r.err == nil; i++ {
			r.u32()
		}
	case op == opCallIndirect:
		w.typeIndex(r)
		r.u32()
	case op == opSelectT:
		n := r.count(1)
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.byte()
		}
	case op == opGlobalGet || op == opGlobalSet:
		w.globalIndex(r)
	case op >= 0x20 && op <= 0x26:
		// local.get/set/tee, table.get/set
		r.u32()
	case op >= 0x28 && op <= 0x3e:
		// loads and stores: align, offset
		r.u32()
		r.u32()
	case op == opMemorySize:
		if mem := r.u32(); mem != 0 {
			r.fail("memory.size of memory %d", mem)
		}
	case op == opI32Const:
		r.leb(32, true)
	case op == opI64Const:
		r.leb(64, true)
	case op == opF32Const:
		r.bytes(4)
	case op == opF64Const:
		r.bytes(8)
	case op >= 0x45 && op <= 0xc4:
		// numeric instructions, sign extension
	case op == opRefNull:
		r.byte()
	case op == 0xd1:
		// ref.is_null
	case op == opPrefixFC:
		switch sub := r.u32(); {
		case sub <= 7:
			// saturating truncations
		case sub == 8: // memory.init
			r.u32()
			r.u32()
		case sub == 9, sub == 11, sub == 13, sub == 15, sub == 16, sub == 17:
			// data.drop, memory.fill, elem.drop, table.grow/size/fill
			r.u32()
		case sub == 10, sub == 12, sub == 14:
			// memory.copy, table.init, table.copy
			r.u32()
			r.u32()
		default:
			r.fail("opcode 0xfc %d", sub)
		}
	case op == 0x12 || op == 0x13:
		r.fail("tail calls are not allowed")
	case op == 0xfd:
		r.fail("SIMD instructions are not allowed")
	case op == 0xfe:
		r.fail("atomic instructions are not allowed")
	default:
		r.fail("unknown opcode %#x", op)
	}
}

// typeIndex reads a type index of the input module.
func (w *rewriter) typeIndex(r *moduleReader) uint32 {
	v := r.u32()
	if r.err == nil && v >= w.types {
		r.fail("type index %d of %d", v, w.types)
	}
	return v
}

// globalIndex reads a global index of the input module.
func (w *rewriter) globalIndex(r *moduleReader) uint32 {
	v := r.u32()
	if r.err == nil && v >= w.globals {
		r.fail("global index %d of %d", v, w.globals)
	}
	return v
}

// isInjected reports whether an import name is reserved for the pass.
func isInjected(name string) bool { return len(name) >= 2 && name[:2] == "__" }
