package policytest

// Value types.
const (
	I32 = 0x7f
	I64 = 0x7e
)

// Func is a function of a module under construction.
type Func struct {
	Params, Results []byte
	Locals          []byte // one value type per local
	Code            []byte // instructions, without the final end
	Export          string // "" = not exported
}

// Import is a function import.
type Import struct {
	Module, Name    string
	Params, Results []byte
}

// Module is a module under construction. Function indices count imports
// first, as in the binary format.
type Module struct {
	Imports []Import
	Funcs   []Func
	// MemoryPages is the memory's initial size (0: no memory).
	MemoryPages uint32
	// MemoryMax, if non-zero, is the memory's declared maximum.
	MemoryMax uint32
	// ExportMemory exports the memory as "memory".
	ExportMemory bool
	// Globals are mutable i32 globals with initial values.
	Globals []int32
	// ImportMemory imports a memory (env.memory) instead of defining one.
	ImportMemory bool
	// Data are active data segments of memory 0.
	Data []Data
}

// Data is an active data segment.
type Data struct {
	Offset uint32
	Bytes  []byte
}

// Bytes encodes the module.
func (m *Module) Bytes() []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	sec := func(id byte, body []byte) {
		out = append(out, id)
		out = u32(out, uint32(len(body)))
		out = append(out, body...)
	}
	// Types: one per import and function, in order.
	var types []byte
	ntypes := 0
	addType := func(params, results []byte) uint32 {
		types = append(types, 0x60)
		types = vec(types, params)
		types = vec(types, results)
		ntypes++
		return uint32(ntypes - 1)
	}
	var imports []byte
	nimports := 0
	for _, im := range m.Imports {
		t := addType(im.Params, im.Results)
		imports = name(imports, im.Module)
		imports = name(imports, im.Name)
		imports = u32(append(imports, 0x00), t)
		nimports++
	}
	if m.ImportMemory {
		imports = name(imports, "env")
		imports = name(imports, "memory")
		imports = append(imports, 0x02, 0x00, 0x01)
		nimports++
	}
	var funcs []byte
	for _, f := range m.Funcs {
		funcs = u32(funcs, addType(f.Params, f.Results))
	}
	sec(1, u32(nil, uint32(ntypes), types...))
	if nimports > 0 {
		sec(2, u32(nil, uint32(nimports), imports...))
	}
	sec(3, u32(nil, uint32(len(m.Funcs)), funcs...))
	if m.MemoryPages > 0 && !m.ImportMemory {
		mem := []byte{0x01, 0x00}
		if m.MemoryMax > 0 {
			mem[1] = 0x01
		}
		mem = u32(mem, m.MemoryPages)
		if m.MemoryMax > 0 {
			mem = u32(mem, m.MemoryMax)
		}
		sec(5, mem)
	}
	if len(m.Globals) > 0 {
		var g []byte
		for _, v := range m.Globals {
			g = append(g, I32, 0x01, 0x41)
			g = s32(g, v)
			g = append(g, 0x0b)
		}
		sec(6, u32(nil, uint32(len(m.Globals)), g...))
	}
	var exps []byte
	nexp := 0
	for k, f := range m.Funcs {
		if f.Export != "" {
			exps = name(exps, f.Export)
			exps = u32(append(exps, 0x00), uint32(len(m.Imports)+k))
			nexp++
		}
	}
	if m.ExportMemory {
		exps = name(exps, "memory")
		exps = append(exps, 0x02, 0x00)
		nexp++
	}
	sec(7, u32(nil, uint32(nexp), exps...))
	var code []byte
	for _, f := range m.Funcs {
		var body []byte
		body = u32(body, uint32(len(f.Locals)))
		for _, l := range f.Locals {
			body = append(body, 0x01, l)
		}
		body = append(body, f.Code...)
		body = append(body, 0x0b)
		code = u32(code, uint32(len(body)), body...)
	}
	sec(10, u32(nil, uint32(len(m.Funcs)), code...))
	if len(m.Data) > 0 {
		var d []byte
		for _, seg := range m.Data {
			d = append(d, 0x00, 0x41)
			d = s32(d, int32(seg.Offset))
			d = append(d, 0x0b)
			d = vec(d, seg.Bytes)
		}
		sec(11, u32(nil, uint32(len(m.Data)), d...))
	}
	return out
}

func u32(b []byte, v uint32, rest ...byte) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		b = append(b, c)
		return append(b, rest...)
	}
}

func s32(b []byte, v int32) []byte { return s64(b, int64(v)) }

func s64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func vec(b []byte, items []byte) []byte { return u32(b, uint32(len(items)), items...) }

func name(b []byte, s string) []byte { return u32(b, uint32(len(s)), []byte(s)...) }

// Instruction helpers: each returns the encoding of one instruction.

// I32Const is i32.const v.
func I32Const(v int32) []byte { return s32([]byte{0x41}, v) }

// I64Const is i64.const v.
func I64Const(v int64) []byte { return s64([]byte{0x42}, v) }

// LocalGet is local.get n.
func LocalGet(n uint32) []byte { return u32([]byte{0x20}, n) }

// LocalSet is local.set n.
func LocalSet(n uint32) []byte { return u32([]byte{0x21}, n) }

// Call is call f.
func Call(f uint32) []byte { return u32([]byte{0x10}, f) }

// Br is br depth.
func Br(depth uint32) []byte { return u32([]byte{0x0c}, depth) }

// BrIf is br_if depth.
func BrIf(depth uint32) []byte { return u32([]byte{0x0d}, depth) }

// I32Load is i32.load offset=off (align 2).
func I32Load(off uint32) []byte { return u32([]byte{0x28, 0x02}, off) }

// I32Store is i32.store offset=off (align 2).
func I32Store(off uint32) []byte { return u32([]byte{0x36, 0x02}, off) }

// I64Load is i64.load offset=off (align 3).
func I64Load(off uint32) []byte { return u32([]byte{0x29, 0x03}, off) }

// I64Store is i64.store offset=off (align 3).
func I64Store(off uint32) []byte { return u32([]byte{0x37, 0x03}, off) }

// Single-byte instructions.
var (
	Loop        = []byte{0x03, 0x40}
	Block       = []byte{0x02, 0x40}
	End         = []byte{0x0b}
	Drop        = []byte{0x1a}
	Unreachable = []byte{0x00}
	Return      = []byte{0x0f}
	I32Add      = []byte{0x6a}
	I32Sub      = []byte{0x6b}
	I32Mul      = []byte{0x6c}
	I32Eqz      = []byte{0x45}
	I32GeU      = []byte{0x4f}
	I32Shl      = []byte{0x74}
	I64ExtendU  = []byte{0xad}
	I64Or       = []byte{0x84}
	I64Add      = []byte{0x7c}
	I64Shl      = []byte{0x86}
	MemoryGrow  = []byte{0x40, 0x00}
	MemorySize  = []byte{0x3f, 0x00}
)

// Code concatenates instructions.
func Code(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
