package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/fatbin"
)

func readTestdata(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPTXFromImage(t *testing.T) {
	vecadd := readTestdata(t, "kernels/vecadd.ptx")
	tests := []struct {
		name  string
		image []byte
		want  string // a substring of the PTX, or "" for an error
		err   error
	}{
		{"ptx", vecadd, ".visible .entry vecadd(", nil},
		{"ptx with NUL", append(bytes.Clone(vecadd), 0, 0), ".visible .entry vecadd(", nil},
		{"fatbin", readTestdata(t, "fatbin/vecadd.fatbin"), ".entry vecadd", nil},
		{"default fatbin", readTestdata(t, "fatbin/vecadd.default.fatbin"), ".entry vecadd", nil},
		{"zstd fatbin", readTestdata(t, "fatbin/vecadd.compressed.fatbin"), ".entry vecadd", nil},
		{"cubin", readTestdata(t, "fatbin/vecadd.sm_90.cubin"), "", ErrSASS},
		{"empty", nil, "", ErrInvalidImage},
		{"garbage", []byte("hello world"), "", ErrInvalidImage},
		{"NUL inside", []byte(".version 9.0\x00.target sm_90"), "", ErrInvalidImage},
		{"truncated fatbin", readTestdata(t, "fatbin/vecadd.fatbin")[:40], "", v1.ErrMalformed},
		{"wrapper", binary.LittleEndian.AppendUint32(make([]byte, 0, 24), fatbin.WrapperMagic), "", ErrInvalidImage},
	}
	for _, tt := range tests {
		if tt.name == "wrapper" {
			tt.image = append(tt.image, make([]byte, 20)...)
		}
		got, err := ptxFromImage(tt.image)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("%s: err = %v, want %v", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || !bytes.Contains(got, []byte(tt.want)) || bytes.IndexByte(got, 0) >= 0 {
			t.Errorf("%s: %d bytes, err %v; want PTX containing %q", tt.name, len(got), err, tt.want)
		}
	}
	// A cubin is unsupported, in the backend's terms.
	_, err := ptxFromImage(readTestdata(t, "fatbin/vecadd.sm_90.cubin"))
	if !errors.Is(err, backend.ErrUnsupported) || v1.CodeOf(err) != v1.CodeUnsupported {
		t.Fatalf("cubin: %v", err)
	}
}

// globalsProgram has a module variable with an initializer, a table that
// holds the addresses of two others (relocations), and a .const.
func globalsProgram() *goProgram {
	p := testProgram()
	p.vars = []globalVar{
		{name: "counter", size: 4, align: 4, init: []byte{1, 2, 3, 4}},
		{name: "table", size: 16, align: 8, relocs: []reloc{{0, "counter", 0}, {8, "coeffs", 8}}},
		{name: "coeffs", isConst: true, size: 32, align: 16, init: bytes.Repeat([]byte{9}, 32)},
	}
	return p
}

func TestModuleGlobals(t *testing.T) {
	d := openTest(t, smallOptions())
	prog := globalsProgram()
	useGoPrograms(d, map[string]*goProgram{"globals": prog})
	free0, _, _ := d.MemoryInfo()
	m, err := d.LoadModule([]byte(".version 9.0 // go:globals"))
	must(t, err)
	addr := map[string]backend.DevicePtr{}
	for _, g := range []struct {
		name  string
		size  uint64
		align uint64
	}{{"counter", 4, 4}, {"table", 16, 8}, {"coeffs", 32, 16}} {
		p, size, err := m.Global(g.name)
		must(t, err)
		if size != g.size || uint64(p)%g.align != 0 || uint64(p) < moduleStart || uint64(p) >= VAEnd {
			t.Fatalf("Global(%q) = %#x, %d", g.name, p, size)
		}
		if prog.bound[g.name] != uint64(p) {
			t.Fatalf("bound %q at %#x, Global says %#x", g.name, prog.bound[g.name], p)
		}
		addr[g.name] = p
	}
	if _, _, err := m.Global("nope"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("Global(missing) = %v", err)
	}
	if free, _, _ := d.MemoryInfo(); free != free0-G {
		t.Fatalf("module globals took %d bytes, want one granule", free0-free)
	}

	// Contents: initializers and relocations, readable and writable by copies.
	s := newStream(t, d)
	b := make([]byte, 16)
	must(t, s.CopyDtoH(b[:4], addr["counter"]))
	if !bytes.Equal(b[:4], []byte{1, 2, 3, 4}) {
		t.Fatalf("counter = %v", b[:4])
	}
	must(t, s.CopyDtoH(b, addr["table"]))
	if got := binary.LittleEndian.Uint64(b); got != uint64(addr["counter"]) {
		t.Fatalf("table[0] = %#x, want &counter %#x", got, addr["counter"])
	}
	if got := binary.LittleEndian.Uint64(b[8:]); got != uint64(addr["coeffs"])+8 {
		t.Fatalf("table[1] = %#x, want &coeffs+8", got)
	}
	must(t, s.CopyHtoD(addr["counter"], []byte{7, 7, 7, 7}))
	must(t, s.CopyDtoH(b[:4], addr["counter"]))
	if !bytes.Equal(b[:4], []byte{7, 7, 7, 7}) {
		t.Fatalf("counter after write = %v", b[:4])
	}
	f, err := m.Function("fill")
	must(t, err)
	if f.Attributes().ConstSizeBytes != 32 {
		t.Fatalf("ConstSizeBytes = %d", f.Attributes().ConstSizeBytes)
	}
	// Module memory lies outside every reservation: the caller cannot map,
	// unmap or release it.
	if err := d.Unmap(addr["counter"]&^(G-1), G); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("Unmap of module memory = %v", err)
	}
	if err := d.Release(addr["counter"]&^(G-1), G); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("Release of module memory = %v", err)
	}

	must(t, m.Unload())
	if free, _, _ := d.MemoryInfo(); free != free0 {
		t.Fatalf("after Unload %d free, want %d", free, free0)
	}
	for name, err := range map[string]error{
		"Unload":   m.Unload(),
		"Function": func() error { _, err := m.Function("fill"); return err }(),
		"Global":   func() error { _, _, err := m.Global("counter"); return err }(),
		"Launch":   s.Launch(f, grid1(1, 1), fillParams(0, 0, 0)),
	} {
		if !errors.Is(err, ErrInvalidHandle) {
			t.Errorf("%s after Unload: %v", name, err)
		}
	}
}

func TestModuleGlobalErrors(t *testing.T) {
	tests := []struct {
		name string
		vars []globalVar
		want error
	}{
		{"alignment not a power of two", []globalVar{{name: "a", size: 4, align: 3}}, backend.ErrInvalidArgument},
		{"initializer too long", []globalVar{{name: "a", size: 2, init: []byte{1, 2, 3}}}, backend.ErrInvalidArgument},
		{"declared twice", []globalVar{{name: "a", size: 4}, {name: "a", size: 4}}, backend.ErrInvalidArgument},
		{"relocation to a function", []globalVar{{name: "a", size: 8, relocs: []reloc{{0, "kernel", 0}}}}, backend.ErrUnsupported},
		{"relocation past the variable", []globalVar{{name: "a", size: 8, relocs: []reloc{{4, "a", 0}}}}, backend.ErrInvalidArgument},
		{"larger than the device", []globalVar{{name: "a", size: 1 << 40}}, backend.ErrOutOfMemory},
		{"more than free memory", []globalVar{{name: "a", size: 17 * G}}, backend.ErrOutOfMemory},
	}
	for _, tt := range tests {
		d := openTest(t, smallOptions())
		p := testProgram()
		p.vars = tt.vars
		useGoPrograms(d, map[string]*goProgram{"p": p})
		free0, _, _ := d.MemoryInfo()
		if _, err := d.LoadModule([]byte(".version 9.0 // go:p")); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
		if free, _, _ := d.MemoryInfo(); free != free0 {
			t.Errorf("%s: a failed load kept %d bytes", tt.name, free0-free)
		}
	}
}

// Unload waits for the module's enqueued launches.
func TestUnloadWaitsForLaunches(t *testing.T) {
	d := openTest(t, smallOptions())
	m, fns := loadTest(t, d)
	p := alloc(t, d, G)
	s := newStream(t, d)
	gate := make(chan struct{})
	must(t, s.hold(gate))
	must(t, s.Launch(fns["fill"], grid1(1, 4), fillParams(p, 4, 3)))
	unloaded := make(chan error)
	go func() { unloaded <- m.Unload() }()
	select {
	case err := <-unloaded:
		t.Fatalf("Unload returned (%v) with a launch pending", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	must(t, <-unloaded)
	must(t, s.Synchronize())
	out := make([]byte, 16)
	must(t, s.CopyDtoH(out, p))
	for _, w := range words(out) {
		if w != 3 {
			t.Fatalf("the pending launch did not run: %v", words(out))
		}
	}
}

func TestFunctions(t *testing.T) {
	d := openTest(t, smallOptions())
	m, fns := loadTest(t, d)
	if _, err := m.Function("missing"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("Function(missing) = %v", err)
	}
	f := fns["fill"]
	if f.Name() != "fill" || len(f.Params()) != 3 || f.Params()[2] != (backend.Param{Offset: 12, Size: 4}) {
		t.Fatalf("fill: %q %v", f.Name(), f.Params())
	}
	again, err := m.Function("fill")
	must(t, err)
	if again != f {
		t.Fatal("Function returned a different value for the same kernel")
	}
	a := f.Attributes()
	if a.MaxThreadsPerBlock != 1024 || a.BinaryVersion != 90 || a.MaxDynamicSharedMem != 48<<10 {
		t.Fatalf("attributes %+v", a)
	}
	if _, err := d.LoadModule([]byte(".version 9.0 // go:nope")); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("LoadModule of an unknown program = %v", err)
	}
}

func TestLaunchValidation(t *testing.T) {
	d := openTest(t, smallOptions())
	_, fns := loadTest(t, d)
	other := openTest(t, smallOptions())
	_, otherFns := loadTest(t, other)
	s := newStream(t, d)
	f := fns["fill"]
	ok := fillParams(0, 0, 0)
	cfg := func(grid, block [3]uint32, shared uint32) backend.LaunchConfig {
		return backend.LaunchConfig{Grid: grid, Block: block, SharedMem: shared}
	}
	tests := []struct {
		name   string
		f      backend.Function
		cfg    backend.LaunchConfig
		params []byte
		want   error
	}{
		{"ok", f, cfg([3]uint32{1, 1, 1}, [3]uint32{1024, 1, 1}, 0), ok, nil},
		{"max grid", fns["work"], cfg([3]uint32{1<<31 - 1, 65535, 65535}, [3]uint32{1, 1, 1}, 0), ok, nil},
		{"max shared", f, cfg([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 227<<10), ok, nil},
		{"zero block", f, cfg([3]uint32{1, 1, 1}, [3]uint32{0, 1, 1}, 0), ok, backend.ErrInvalidArgument},
		{"too many threads", f, cfg([3]uint32{1, 1, 1}, [3]uint32{32, 32, 2}, 0), ok, backend.ErrInvalidArgument},
		{"block z too large", f, cfg([3]uint32{1, 1, 1}, [3]uint32{1, 1, 65}, 0), ok, backend.ErrInvalidArgument},
		{"zero grid", f, cfg([3]uint32{1, 0, 1}, [3]uint32{1, 1, 1}, 0), ok, backend.ErrInvalidArgument},
		{"grid y too large", f, cfg([3]uint32{1, 65536, 1}, [3]uint32{1, 1, 1}, 0), ok, backend.ErrInvalidArgument},
		{"grid x too large", f, cfg([3]uint32{1 << 31, 1, 1}, [3]uint32{1, 1, 1}, 0), ok, backend.ErrInvalidArgument},
		{"too much shared", f, cfg([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 227<<10+1), ok, backend.ErrInvalidArgument},
		{"short params", f, cfg([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0), ok[:15], backend.ErrInvalidArgument},
		{"foreign function", otherFns["fill"], cfg([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0), ok, ErrInvalidHandle},
		{"nil function", nil, cfg([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0), ok, ErrInvalidHandle},
	}
	for _, tt := range tests {
		err := s.Launch(tt.f, tt.cfg, tt.params)
		if (tt.want == nil && err != nil) || !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	// Parameters are copied at Launch.
	p := alloc(t, d, G)
	params := fillParams(p, 4, 11)
	gate := make(chan struct{})
	must(t, s.hold(gate))
	must(t, s.Launch(f, grid1(1, 4), params))
	copy(params, fillParams(p, 4, 22))
	close(gate)
	out := make([]byte, 16)
	must(t, s.CopyDtoH(out, p))
	if words(out)[0] != 11 {
		t.Fatalf("kernel saw parameters changed after Launch: %v", words(out))
	}
}

// FuzzLoadModule loads arbitrary images through the real pipeline (fatbin,
// PTX parser, interpreter) and launches every kernel that loads, with zeroed
// parameters and an instruction bound: errors must be typed, never a panic
// or a hang.
func FuzzLoadModule(f *testing.F) {
	for _, rel := range []string{"kernels/vecadd.ptx", "fatbin/vecadd.fatbin", "fatbin/vecadd.compressed.fatbin", "fatbin/vecadd.sm_90.cubin"} {
		f.Add(readTestdata(f, rel))
	}
	f.Add([]byte(".version 9.0\n.target sm_90\n.address_size 64\n"))
	b := New(Options{Granularity: G, Memory: 64 * G, MaxInstructions: 100_000, NonFatalFaults: true, Workers: 1})
	dev, err := b.Open(0)
	must(f, err)
	d := dev.(*Device)
	f.Cleanup(func() { _ = d.Close() })
	s := newStream(f, d)
	f.Fuzz(func(t *testing.T, image []byte) {
		m, err := d.LoadModule(image)
		if err != nil {
			if v1.CodeOf(err) == v1.CodeInternal {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		defer func() { must(t, m.Unload()) }()
		ip, ok := m.(*module).prog.(interpProgram)
		if !ok {
			t.Fatalf("program %T", m.(*module).prog)
		}
		for _, name := range ip.p.Kernels() {
			fn, err := m.Function(name)
			must(t, err)
			params := make([]byte, fn.(*function).paramSize)
			if err := s.Launch(fn, grid1(2, 32), params); err != nil {
				if v1.CodeOf(err) == v1.CodeInternal {
					t.Fatalf("launch %s: untyped error: %v", name, err)
				}
				continue
			}
		}
		if err := s.Synchronize(); err != nil && v1.CodeOf(err) == v1.CodeInternal {
			t.Fatalf("untyped error from a launch: %v", err)
		}
	})
}
