package guard_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpuos/gpuos/internal/guard"
	"github.com/gpuos/gpuos/internal/interp"
	"github.com/gpuos/gpuos/internal/ptx"
)

// A software device for running kernels on the interpreter directly: two
// adjacent session windows (the attacker's and a victim's), module memory
// and a fault record, all mapped, so that an unguarded attack really reaches
// the victim and a guarded one shows it does not.
const (
	winSpan    = 1 << 24
	ownBase    = 0x0000_2000_0000_0000
	victimBase = ownBase + winSpan
	faultAddr  = 0x0000_3000_0000_0000
	moduleBase = 0x0000_4000_0000_0000
	globalsOff = winSpan / 2 // where relocated .global variables go in the window
)

type region struct {
	base uint64
	b    []byte
}

type testMem struct{ regions []region }

func (m *testMem) add(base uint64, b []byte) { m.regions = append(m.regions, region{base, b}) }

func (m *testMem) Slice(addr uint64, n int, write bool) ([]byte, error) {
	for _, r := range m.regions {
		if addr >= r.base && addr-r.base < uint64(len(r.b)) && uint64(n) <= uint64(len(r.b))-(addr-r.base) {
			o := addr - r.base
			return r.b[o : o+uint64(n)], nil
		}
	}
	return nil, fmt.Errorf("unmapped address %#x", addr)
}

// device is one test run's memory.
type device struct {
	mem    testMem
	own    []byte // the attacker's (or benign kernel's) window
	victim []byte
	fault  []byte
	next   uint64 // bump allocator in own, from its base
}

func newDevice() *device {
	d := &device{own: make([]byte, winSpan), victim: make([]byte, winSpan), fault: make([]byte, guard.RecordSize)}
	d.mem.add(ownBase, d.own)
	d.mem.add(victimBase, d.victim)
	d.mem.add(faultAddr, d.fault)
	return d
}

// alloc returns the address of n bytes in the own window, filled by fill.
func (d *device) alloc(n int) uint64 {
	a := (d.next + 255) &^ 255
	d.next = a + uint64(n)
	if d.next > globalsOff {
		panic("test window exhausted")
	}
	return ownBase + a
}

func (d *device) bytesAt(addr uint64, n int) []byte {
	b, err := d.mem.Slice(addr, n, false)
	if err != nil {
		panic(err)
	}
	return b
}

// load compiles m for the device, placing its module variables and, for a
// guarded module, writing the guard's parameters and relocated globals.
func (d *device) load(t testing.TB, m *ptx.Module, res *guard.Result) *interp.Program {
	t.Helper()
	p, err := interp.Compile(m)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	addrs := map[string]uint64{}
	off := uint64(0)
	gs := p.Globals()
	for _, g := range gs {
		off = (off + max(g.Align, 1) - 1) &^ (max(g.Align, 1) - 1)
		addrs[g.Name] = moduleBase + off
		off += g.Size
	}
	modMem := make([]byte, max(off, 1))
	d.mem.add(moduleBase, modMem)
	for _, g := range gs {
		copy(modMem[addrs[g.Name]-moduleBase:], g.Init)
		for _, r := range g.Relocs {
			binary.LittleEndian.PutUint64(modMem[addrs[g.Name]-moduleBase+r.Offset:], addrs[r.Symbol]+uint64(r.Addend))
		}
	}
	if err := p.Bind(addrs); err != nil {
		t.Fatalf("bind: %v", err)
	}
	if res == nil {
		return p
	}
	params := guard.Params{Lo: ownBase, Span: winSpan, Fault: faultAddr}
	if l := res.Globals; l != nil {
		params.Globals = ownBase + globalsOff
		b, err := l.Bytes(params.Globals, func(name string) (uint64, bool) { a, ok := addrs[name]; return a, ok })
		if err != nil {
			t.Fatalf("layout: %v", err)
		}
		copy(d.own[globalsOff:], b)
	}
	for _, cp := range res.ConstPatches {
		v, _ := res.Globals.Var(cp.Symbol)
		binary.LittleEndian.PutUint64(modMem[addrs[cp.Var]-moduleBase+cp.Offset:], params.Globals+v.Offset+uint64(cp.Addend))
	}
	pa, ok := addrs[guard.ParamsVar]
	if !ok {
		t.Fatalf("guarded module has no %s", guard.ParamsVar)
	}
	copy(modMem[pa-moduleBase:], params.Bytes())
	return p
}

func (d *device) record(t testing.TB) guard.Record {
	t.Helper()
	r, err := guard.DecodeRecord(d.fault)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func readPTX(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parse(t testing.TB, src []byte) *ptx.Module {
	t.Helper()
	m, err := ptx.Parse(src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return m
}

// guardText guards PTX text, prints it and parses the result again: what the
// driver does, so every test goes through the round trip.
func guardText(t testing.TB, src []byte) (*ptx.Module, *guard.Result) {
	t.Helper()
	m := parse(t, src)
	res, err := guard.Guard(m, guard.Options{})
	if err != nil {
		t.Fatalf("guard: %v", err)
	}
	return parse(t, m.Bytes()), res
}

// ---- benign kernels ---------------------------------------------------------

// arg is one kernel argument: a buffer (bytes, filled by fill) or a scalar.
type arg struct {
	buf  int    // bytes; 0 for a scalar
	fill string // f32, f64, u32, u64, i32small, bytes, zero
	val  any    // scalar value: uint32, int32, uint64, float32, float64
}

type kspec struct {
	grid, block [3]uint32
	shared      uint32
	args        []arg
}

func f32buf(n int) arg         { return arg{buf: 4 * n, fill: "f32"} }
func f64buf(n int) arg         { return arg{buf: 8 * n, fill: "f64"} }
func u32buf(n int) arg         { return arg{buf: 4 * n, fill: "u32"} }
func u64buf(n int) arg         { return arg{buf: 8 * n, fill: "u64"} }
func i32buf(n int) arg         { return arg{buf: 4 * n, fill: "i32small"} }
func zeros(n int) arg          { return arg{buf: n, fill: "zero"} }
func s32(v int32) arg          { return arg{val: v} }
func u64v(v uint64) arg        { return arg{val: v} }
func f32v(v float32) arg       { return arg{val: v} }
func f64v(v float64) arg       { return arg{val: v} }
func d3(x uint32) [3]uint32    { return [3]uint32{x, 1, 1} }
func d2(x, y uint32) [3]uint32 { return [3]uint32{x, y, 1} }

// kernelSpecs gives every kernel in testdata/kernels inputs that keep it in
// bounds: the benign corpus.
var kernelSpecs = map[string]kspec{
	"empty":             {grid: d3(1), block: d3(32)},
	"param_index":       {grid: d3(2), block: d3(64), args: []arg{zeros(4 * 128), s32(120), s32(3), s32(-70000), s32(11), s32(1 << 20)}},
	"scale_copy":        {grid: d3(4), block: d3(128), args: []arg{f32buf(1000), zeros(4000), u64v(1000), f32v(1.5)}},
	"fma_loop":          {grid: d3(2), block: d3(64), args: []arg{zeros(4 * 128), s32(40)}},
	"spin":              {grid: d3(1), block: d3(32), args: []arg{u64v(0), zeros(4)}},
	"floatops":          {grid: d3(3), block: d3(100), args: []arg{f32buf(300), f32buf(300), zeros(4 * 12 * 300), s32(300)}},
	"doubleops":         {grid: d3(3), block: d3(100), args: []arg{f64buf(300), f64buf(300), zeros(8 * 6 * 300), s32(300)}},
	"generic_mix":       {grid: d3(2), block: d3(128), args: []arg{f32buf(260), zeros(4 * 258), zeros(8 * 4), s32(256)}},
	"histogram256":      {grid: d3(4), block: d3(128), args: []arg{{buf: 5000, fill: "bytes"}, zeros(4 * 256), s32(5000)}},
	"intops":            {grid: d3(3), block: d3(100), args: []arg{u32buf(300), u32buf(300), zeros(4 * 12 * 300), s32(300)}},
	"int64ops":          {grid: d3(3), block: d3(100), args: []arg{u64buf(300), u64buf(300), zeros(8 * 6 * 300), s32(300)}},
	"libm_f32":          {grid: d3(3), block: d3(100), args: []arg{f32buf(300), zeros(4 * 6 * 300), s32(300)}},
	"matmul_tiled":      {grid: d2(3, 2), block: d2(16, 16), args: []arg{f32buf(20 * 40), f32buf(40 * 36), zeros(4 * 20 * 36), s32(20), s32(36), s32(40)}},
	"dgemm_naive":       {grid: d2(2, 2), block: d2(16, 16), args: []arg{f64buf(20 * 24), f64buf(24 * 30), zeros(8 * 20 * 30), s32(20), s32(30), s32(24)}},
	"reduce_shared":     {grid: d3(4), block: d3(128), shared: 128 * 4, args: []arg{f32buf(1000), zeros(4 * 4), s32(1000)}},
	"reduce_shfl":       {grid: d3(4), block: d3(128), args: []arg{f32buf(3000), zeros(4), s32(3000)}},
	"reduce_int_atomic": {grid: d3(4), block: d3(128), args: []arg{i32buf(500), zeros(8), {buf: 4, fill: "min"}, {buf: 4, fill: "maxint"}, s32(500)}},
	"saxpy":             {grid: d3(2), block: d3(128), args: []arg{s32(1000), f32v(2.5), f32buf(1000), f32buf(1000)}},
	"daxpy":             {grid: d3(2), block: d3(128), args: []arg{s32(1000), f64v(-0.5), f64buf(1000), f64buf(1000)}},
	"scan_block":        {grid: d3(4), block: d3(128), shared: 128 * 4, args: []arg{i32buf(500), zeros(4 * 500), s32(500)}},
	"softmax_rows":      {grid: d3(6), block: d3(64), shared: 64 * 4, args: []arg{f32buf(6 * 100), zeros(4 * 6 * 100), s32(100)}},
	"special_regs":      {grid: [3]uint32{2, 2, 1}, block: [3]uint32{8, 2, 2}, args: []arg{zeros(4 * 8 * 4 * 32)}},
	"stencil1d":         {grid: d3(4), block: d3(128), shared: (128 + 4) * 4, args: []arg{f32buf(500), zeros(4 * 500), s32(500)}},
	"jacobi2d":          {grid: d2(3, 3), block: d2(16, 16), args: []arg{f32buf(40 * 37), zeros(4 * 40 * 37), s32(40), s32(37)}},
	"transpose":         {grid: d2(2, 3), block: d2(32, 8), args: []arg{f32buf(50 * 70), zeros(4 * 50 * 70), s32(50), s32(70)}},
	"vecadd":            {grid: d3(4), block: d3(128), args: []arg{f32buf(500), f32buf(500), zeros(4 * 500), s32(500)}},
}

// fillBytes makes a buffer's initial contents.
func fillBytes(rng *rand.Rand, a arg) []byte {
	b := make([]byte, a.buf)
	switch a.fill {
	case "f32":
		for i := 0; i+4 <= len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(rng.Float64()*2-1)))
		}
	case "f64":
		for i := 0; i+8 <= len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], math.Float64bits(rng.Float64()*2-1))
		}
	case "u32", "u64", "bytes":
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
	case "i32small":
		for i := 0; i+4 <= len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], uint32(rng.Int32N(2000)-1000))
		}
	case "min":
		binary.LittleEndian.PutUint32(b, 0x80000000)
	case "maxint":
		binary.LittleEndian.PutUint32(b, 0x7fffffff)
	}
	return b
}

// benignRun is one launch's inputs, fixed so that guarded and unguarded runs
// see the same.
type benignRun struct {
	spec kspec
	data [][]byte
	// instructions is the last run's count of thread-instructions executed
	// (predicated-off ones included): the overhead model of bench_test.go.
	instructions uint64
}

func newBenignRun(spec kspec, seed uint64) *benignRun {
	rng := rand.New(rand.NewPCG(seed, 7))
	br := &benignRun{spec: spec}
	for _, a := range spec.args {
		if a.buf > 0 {
			br.data = append(br.data, fillBytes(rng, a))
		} else {
			br.data = append(br.data, nil)
		}
	}
	return br
}

// run launches the kernel on a fresh device and returns every buffer after it.
func (br *benignRun) run(t testing.TB, m *ptx.Module, res *guard.Result, kernel string) ([][]byte, *device) {
	t.Helper()
	d := newDevice()
	p := d.load(t, m, res)
	k, err := p.Kernel(kernel)
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]uint64, len(br.data))
	for i, b := range br.data {
		if b != nil {
			addrs[i] = d.alloc(len(b))
			copy(d.bytesAt(addrs[i], len(b)), b)
		}
	}
	ps := k.Params()
	if len(ps) != len(br.spec.args) {
		t.Fatalf("%s takes %d parameters; the spec gives %d", kernel, len(ps), len(br.spec.args))
	}
	params := make([]byte, k.ParamSize())
	for i, a := range br.spec.args {
		at := params[ps[i].Offset:]
		switch v := a.val.(type) {
		case nil:
			binary.LittleEndian.PutUint64(at, addrs[i])
		case int32:
			binary.LittleEndian.PutUint32(at, uint32(v))
		case uint32:
			binary.LittleEndian.PutUint32(at, v)
		case uint64:
			binary.LittleEndian.PutUint64(at, v)
		case float32:
			binary.LittleEndian.PutUint32(at, math.Float32bits(v))
		case float64:
			binary.LittleEndian.PutUint64(at, math.Float64bits(v))
		}
	}
	st, err := k.Run(context.Background(), interp.Launch{Grid: br.spec.grid, Block: br.spec.block,
		DynamicShared: br.spec.shared, Params: params, Global: &d.mem, Workers: 1, MaxInstructions: 1 << 30})
	if err != nil {
		t.Fatalf("run %s (guarded %v): %v", kernel, res != nil, err)
	}
	br.instructions = st.Instructions
	out := make([][]byte, len(br.data))
	for i, b := range br.data {
		if b != nil {
			out[i] = append([]byte(nil), d.bytesAt(addrs[i], len(b))...)
		}
	}
	return out, d
}

// kernelFiles lists testdata/kernels/*.ptx.
func kernelFiles(t testing.TB) []string {
	t.Helper()
	fs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "kernels", "*.ptx"))
	if err != nil || len(fs) == 0 {
		t.Fatalf("no kernels: %v", err)
	}
	sort.Strings(fs)
	return fs
}

func entries(m *ptx.Module) []string {
	var ks []string
	for _, f := range m.Functions() {
		if f.Entry && f.Body != nil {
			ks = append(ks, f.Name)
		}
	}
	return ks
}

func shortName(path string) string { return strings.TrimSuffix(filepath.Base(path), ".ptx") }

// wantInOrder fails the test unless out holds every string of want, in
// that order.
func wantInOrder(t testing.TB, out string, want []string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(out[at:], w)
		if i < 0 {
			t.Fatalf("guarded text lacks %q after offset %d:\n%s", w, at, out)
		}
		at += i + len(w)
	}
}
