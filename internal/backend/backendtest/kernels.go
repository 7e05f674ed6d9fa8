package backendtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/fatbin"
	"github.com/gpuos/gpuos/internal/ptx"
)

// Both PTX flavours nvcc wrote for each kernel source.
var ptxVariants = []string{"", ".sm_90"}

// devBuf is device memory for a kernel argument.
type devBuf struct {
	ptr  backend.DevicePtr
	size uint64
}

func (s *suite) load(t testing.TB, rel string) backend.Module {
	t.Helper()
	m, err := s.dev.LoadModule(s.testdata(t, rel))
	if err != nil {
		t.Fatalf("LoadModule(%s): %v", rel, err)
	}
	t.Cleanup(func() { _ = m.Unload() })
	return m
}

func getFunc(t testing.TB, m backend.Module, name string) backend.Function {
	t.Helper()
	f, err := m.Function(name)
	if err != nil {
		t.Fatalf("Function(%q): %v", name, err)
	}
	return f
}

// params packs args by the kernel's parameter layout: devBuf and uint64 are
// 8 bytes, int and uint32 4, float32 4.
func params(t testing.TB, f backend.Function, args ...any) []byte {
	t.Helper()
	ps := f.Params()
	if len(ps) != len(args) {
		t.Fatalf("%s takes %d parameters (%v), got %d", f.Name(), len(ps), ps, len(args))
	}
	var size uint32
	for _, p := range ps {
		size = max(size, p.Offset+p.Size)
	}
	buf := make([]byte, size)
	for i, p := range ps {
		var v uint64
		switch a := args[i].(type) {
		case devBuf:
			v = uint64(a.ptr)
		case uint64:
			v = a
		case int:
			v = uint64(uint32(int32(a)))
		case uint32:
			v = uint64(a)
		case float32:
			v = uint64(math.Float32bits(a))
		default:
			t.Fatalf("parameter %d: %T", i, a)
		}
		switch p.Size {
		case 8:
			binary.LittleEndian.PutUint64(buf[p.Offset:], v)
		case 4:
			binary.LittleEndian.PutUint32(buf[p.Offset:], uint32(v))
		default:
			t.Fatalf("parameter %d of %d bytes", i, p.Size)
		}
	}
	return buf
}

func (s *suite) upload(t testing.TB, st backend.Stream, b []byte) devBuf {
	t.Helper()
	buf := devBuf{alloc(t, s.dev, uint64(len(b))), uint64(len(b))}
	if len(b) > 0 {
		must(t, st.CopyHtoD(buf.ptr, b))
	}
	return buf
}

func download(t testing.TB, st backend.Stream, b devBuf) []byte {
	t.Helper()
	out := make([]byte, b.size)
	must(t, st.CopyDtoH(out, b.ptr))
	return out
}

func (s *suite) checkVecadd(t *testing.T, m backend.Module, n int) {
	t.Helper()
	st := newStream(t, s.dev)
	r := rand.New(rand.NewPCG(uint64(n), 1))
	a, b := randFloats(r, n), randFloats(r, n)
	da, db := s.upload(t, st, f32bytes(a)), s.upload(t, st, f32bytes(b))
	dc := s.upload(t, st, make([]byte, 4*n))
	f := getFunc(t, m, "vecadd")
	must(t, st.Launch(f, grid1(uint32((n+255)/256), 256), params(t, f, da, db, dc, n)))
	for i, got := range f32s(download(t, st, dc)) {
		if want := a[i] + b[i]; math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("n=%d: c[%d] = %v, want %v", n, i, got, want)
		}
	}
}

func (s *suite) testVecadd(t *testing.T) {
	for _, v := range ptxVariants {
		t.Run("vecadd"+v, func(t *testing.T) {
			m := s.load(t, "kernels/vecadd"+v+".ptx")
			for _, n := range []int{1, 255, 256, 10_000} {
				s.checkVecadd(t, m, n)
			}
		})
	}
	// PTX that ends in NUL, as cuModuleLoadData callers often pass it.
	img := append(s.testdata(t, "kernels/vecadd.ptx"), 0)
	m, err := s.dev.LoadModule(img)
	must(t, err)
	defer m.Unload()
	s.checkVecadd(t, m, 1000)
}

func (s *suite) testVecaddFatbin(t *testing.T) {
	for _, name := range []string{"vecadd.fatbin", "vecadd.compressed.fatbin", "vecadd.default.fatbin"} {
		t.Run(name, func(t *testing.T) {
			img := s.testdata(t, "fatbin/"+name)
			m, err := s.dev.LoadModule(img)
			if !s.opts.SASS && errors.Is(err, backend.ErrUnsupported) {
				if ents, perr := fatbin.Parse(img); perr == nil {
					if p, _ := fatbin.Select(ents, 9, 0); p == nil {
						t.Skipf("%s holds only SASS, which this backend does not run: %v", name, err)
					}
				}
			}
			if err != nil {
				t.Fatalf("LoadModule(%s): %v", name, err)
			}
			defer m.Unload()
			s.checkVecadd(t, m, 1000)
		})
	}
}

// A cubin runs on a backend that runs SASS and is Unsupported elsewhere.
func (s *suite) testCubin(t *testing.T) {
	img := s.testdata(t, "fatbin/vecadd.sm_90.cubin")
	m, err := s.dev.LoadModule(img)
	if !s.opts.SASS {
		if !errors.Is(err, backend.ErrUnsupported) {
			t.Fatalf("LoadModule(cubin) = %v, want Unsupported from a backend that runs no SASS", err)
		}
		return
	}
	if info := s.dev.Info(); info.ComputeMajor != 9 || info.ComputeMinor != 0 {
		t.Skipf("the sample cubin is for sm_90, the device is sm_%d%d", info.ComputeMajor, info.ComputeMinor)
	}
	must(t, err)
	defer m.Unload()
	s.checkVecadd(t, m, 4096)
}

// The parameter layout a backend reports is the one the PTX declares.
func (s *suite) testParamLayout(t *testing.T) {
	for _, base := range []string{"vecadd", "reduce", "matmul", "bench"} {
		for _, v := range ptxVariants {
			rel := "kernels/" + base + v + ".ptx"
			src := s.testdata(t, rel)
			mod, err := ptx.Parse(src)
			if err != nil {
				t.Fatalf("parse %s: %v", rel, err)
			}
			m := s.load(t, rel)
			for _, fn := range mod.Functions() {
				if !fn.Entry {
					continue
				}
				slots, err := fn.ParamLayout()
				must(t, err)
				var want []backend.Param
				for _, sl := range slots {
					want = append(want, backend.Param{Offset: uint32(sl.Offset), Size: uint32(sl.Size)})
				}
				got := getFunc(t, m, fn.Name).Params()
				if !slices.Equal(got, want) {
					t.Errorf("%s %s: Params = %v, PTX layout %v", rel, fn.Name, got, want)
				}
			}
		}
	}
}

func (s *suite) testFunctionAttributes(t *testing.T) {
	info := s.dev.Info()
	m := s.load(t, "kernels/matmul.ptx")
	a := getFunc(t, m, "matmul_tiled").Attributes()
	s.opts.Logf("matmul_tiled attributes: %+v", a)
	switch {
	case a.MaxThreadsPerBlock <= 0 || a.MaxThreadsPerBlock > 1024:
		t.Errorf("MaxThreadsPerBlock %d", a.MaxThreadsPerBlock)
	case a.SharedSizeBytes != 2*16*16*4:
		t.Errorf("SharedSizeBytes %d, want %d (two 16x16 float tiles)", a.SharedSizeBytes, 2*16*16*4)
	case a.BinaryVersion != 10*info.ComputeMajor+info.ComputeMinor:
		t.Errorf("BinaryVersion %d on a %d.%d device", a.BinaryVersion, info.ComputeMajor, info.ComputeMinor)
	case a.PTXVersion <= 0:
		t.Errorf("PTXVersion %d", a.PTXVersion)
	}
}

func (s *suite) testReduce(t *testing.T) {
	for _, v := range ptxVariants {
		t.Run("reduce"+v, func(t *testing.T) {
			m := s.load(t, "kernels/reduce"+v+".ptx")
			st := newStream(t, s.dev)
			r := rand.New(rand.NewPCG(7, 8))
			const n = 100_000
			in := randSmallInts(r, n, 1000)
			var want float32
			for _, x := range in {
				want += x
			}
			din := s.upload(t, st, f32bytes(in))

			const threads = 256
			blocks := (n + 2*threads - 1) / (2 * threads)
			dout := s.upload(t, st, make([]byte, 4*blocks))
			f := getFunc(t, m, "reduce_shared")
			cfg := grid1(uint32(blocks), threads)
			cfg.SharedMem = threads * 4
			must(t, st.Launch(f, cfg, params(t, f, din, dout, n)))
			for i, part := range f32s(download(t, st, dout)) {
				var ref float32
				for j := i * 2 * threads; j < min((i+1)*2*threads, n); j++ {
					ref += in[j]
				}
				if part != ref {
					t.Fatalf("reduce_shared: block %d sum = %v, want %v", i, part, ref)
				}
			}

			dsum := s.upload(t, st, make([]byte, 4))
			f = getFunc(t, m, "reduce_shfl")
			must(t, st.Launch(f, grid1(16, 256), params(t, f, din, dsum, n)))
			if got := f32s(download(t, st, dsum))[0]; got != want {
				t.Fatalf("reduce_shfl: sum = %v, want %v", got, want)
			}

			ints := make([]byte, 4*n)
			var sum int64
			mx, mn := int32(math.MinInt32), int32(math.MaxInt32)
			for i := 0; i < n; i++ {
				v := int32(r.Uint32())
				binary.LittleEndian.PutUint32(ints[4*i:], uint32(v))
				sum += int64(v)
				mx, mn = max(mx, v), min(mn, v)
			}
			dints := s.upload(t, st, ints)
			dlsum := s.upload(t, st, make([]byte, 8))
			minInt32 := int32(math.MinInt32)
			dmax := s.upload(t, st, binary.LittleEndian.AppendUint32(nil, uint32(minInt32)))
			dmin := s.upload(t, st, binary.LittleEndian.AppendUint32(nil, uint32(math.MaxInt32)))
			f = getFunc(t, m, "reduce_int_atomic")
			must(t, st.Launch(f, grid1((n+255)/256, 256), params(t, f, dints, dlsum, dmax, dmin, n)))
			gotSum := int64(binary.LittleEndian.Uint64(download(t, st, dlsum)))
			gotMax := int32(binary.LittleEndian.Uint32(download(t, st, dmax)))
			gotMin := int32(binary.LittleEndian.Uint32(download(t, st, dmin)))
			if gotSum != sum || gotMax != mx || gotMin != mn {
				t.Fatalf("reduce_int_atomic: sum, max, min = %d, %d, %d; want %d, %d, %d", gotSum, gotMax, gotMin, sum, mx, mn)
			}
		})
	}
}

// closeEnough compares a GPU product with the CPU's: the order of the fused
// multiply-adds is the kernel's, but float rounding may still differ in the
// last bits.
func closeEnough(got, want, scale float64) bool {
	return math.Abs(got-want) <= 1e-5*scale+1e-30
}

func (s *suite) testMatmul(t *testing.T) {
	for _, v := range ptxVariants {
		t.Run("matmul"+v, func(t *testing.T) {
			m := s.load(t, "kernels/matmul"+v+".ptx")
			st := newStream(t, s.dev)
			r := rand.New(rand.NewPCG(9, 10))
			const M, N, K = 67, 45, 83 // not multiples of the tile
			a, b := randFloats(r, M*K), randFloats(r, K*N)
			da, db := s.upload(t, st, f32bytes(a)), s.upload(t, st, f32bytes(b))
			dc := s.upload(t, st, make([]byte, 4*M*N))
			f := getFunc(t, m, "matmul_tiled")
			cfg := backend.LaunchConfig{Grid: [3]uint32{(N + 15) / 16, (M + 15) / 16, 1}, Block: [3]uint32{16, 16, 1}}
			must(t, st.Launch(f, cfg, params(t, f, da, db, dc, M, N, K)))
			got := f32s(download(t, st, dc))
			for i := 0; i < M; i++ {
				for j := 0; j < N; j++ {
					var want, scale float64
					for k := 0; k < K; k++ {
						p := float64(a[i*K+k]) * float64(b[k*N+j])
						want += p
						scale += math.Abs(p)
					}
					if !closeEnough(float64(got[i*N+j]), want, scale) {
						t.Fatalf("matmul_tiled: C[%d][%d] = %v, want %v", i, j, got[i*N+j], want)
					}
				}
			}

			a64, b64 := make([]float64, M*K), make([]float64, K*N)
			for i := range a64 {
				a64[i] = r.NormFloat64()
			}
			for i := range b64 {
				b64[i] = r.NormFloat64()
			}
			da, db = s.upload(t, st, f64bytes(a64)), s.upload(t, st, f64bytes(b64))
			dc = s.upload(t, st, make([]byte, 8*M*N))
			f = getFunc(t, m, "dgemm_naive")
			cfg = backend.LaunchConfig{Grid: [3]uint32{(N + 7) / 8, (M + 7) / 8, 1}, Block: [3]uint32{8, 8, 1}}
			must(t, st.Launch(f, cfg, params(t, f, da, db, dc, M, N, K)))
			got64 := f64s(download(t, st, dc))
			for i := 0; i < M; i++ {
				for j := 0; j < N; j++ {
					var want float64
					for k := 0; k < K; k++ {
						want = math.FMA(a64[i*K+k], b64[k*N+j], want)
					}
					if math.Float64bits(got64[i*N+j]) != math.Float64bits(want) {
						t.Fatalf("dgemm_naive: C[%d][%d] = %v, want %v (the same fma chain)", i, j, got64[i*N+j], want)
					}
				}
			}
		})
	}
}

// A kernel writing through one mapping of a chunk is read through another.
func (s *suite) testAliasingKernel(t *testing.T) {
	d := s.dev
	G := d.Granularity()
	c := chunk(t, d, 2*G)
	p1, p2 := reserve(t, d, 2*G), reserve(t, d, 2*G)
	mapped(t, d, p1, 2*G, c, 0)
	mapped(t, d, p2, 2*G, c, 0)
	must(t, d.SetAccess(p1, 2*G))
	must(t, d.SetAccess(p2, 2*G))
	st := newStream(t, d)
	const n = 1000
	a := make([]float32, n)
	for i := range a {
		a[i] = float32(i)
	}
	must(t, st.CopyHtoD(p1, f32bytes(a)))
	must(t, st.CopyHtoD(p1+4*n, f32bytes(a)))
	m := s.load(t, "kernels/vecadd.ptx")
	f := getFunc(t, m, "vecadd")
	// c = a + a, written through p2 into the chunk's second granule.
	must(t, st.Launch(f, grid1((n+255)/256, 256), params(t, f, devBuf{ptr: p1}, devBuf{ptr: p1 + 4*n}, devBuf{ptr: p2 + backend.DevicePtr(G) + 64}, n)))
	got := make([]byte, 4*n)
	must(t, st.CopyDtoH(got, p1+backend.DevicePtr(G)+64))
	for i, x := range f32s(got) {
		if x != 2*float32(i) {
			t.Fatalf("element %d read through p1 = %v, want %v", i, x, 2*float32(i))
		}
	}
}

// globalPTX has two module variables and a kernel that copies one to its
// argument, so a test can see copies and kernels meet in the same memory.
const globalPTX = `.version 8.0
.target sm_80
.address_size 64

.visible .global .align 8 .u64 counter = 42;
.visible .global .align 4 .b8 table[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

.visible .entry read_counter(.param .u64 out)
{
	.reg .u64 %rd<4>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd2, %rd1;
	ld.global.u64 %rd3, [counter];
	st.global.u64 [%rd2], %rd3;
	ret;
}
`

// Module variables: their initializers are at the addresses Global returns,
// copies reach them both ways, and kernels see what copies wrote.
func (s *suite) testGlobal(t *testing.T) {
	m, err := s.dev.LoadModule([]byte(globalPTX))
	must(t, err)
	defer m.Unload()
	st := newStream(t, s.dev)
	p, size, err := m.Global("counter")
	must(t, err)
	if size != 8 || p == 0 || p%8 != 0 {
		t.Fatalf("Global(counter) = %#x, %d; want an 8-aligned address of 8 bytes", p, size)
	}
	got := make([]byte, 8)
	must(t, st.CopyDtoH(got, p))
	if v := binary.LittleEndian.Uint64(got); v != 42 {
		t.Fatalf("counter = %d, want its initializer 42", v)
	}
	tp, tsize, err := m.Global("table")
	must(t, err)
	tab := make([]byte, tsize)
	must(t, st.CopyDtoH(tab, tp))
	if !bytes.Equal(tab, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}) {
		t.Fatalf("table = %v", tab)
	}
	must(t, st.CopyHtoD(p, binary.LittleEndian.AppendUint64(nil, 0x1234_5678_9abc)))
	out := s.upload(t, st, make([]byte, 8))
	f := getFunc(t, m, "read_counter")
	must(t, st.Launch(f, grid1(1, 1), params(t, f, out)))
	if v := binary.LittleEndian.Uint64(download(t, st, out)); v != 0x1234_5678_9abc {
		t.Fatalf("the kernel read counter = %#x, want what the copy wrote", v)
	}
	if _, _, err := m.Global("no_such_global"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("Global(no_such_global) = %v, want ErrNotFound", err)
	}

	// A variable of real nvcc output, declared without .visible: the sim
	// finds it; a driver may keep such a local symbol to itself.
	lm := s.load(t, "kernels/libm.ptx")
	lp, lsize, err := lm.Global("__cudart_i2opi_f")
	if errors.Is(err, backend.ErrNotFound) {
		s.opts.Logf("libm.ptx: the non-visible __cudart_i2opi_f is not found: %v", err)
		return
	}
	must(t, err)
	if lsize != 24 {
		t.Fatalf("__cudart_i2opi_f has %d bytes, want 24", lsize)
	}
	want := []byte{65, 144, 67, 60, 153, 149, 98, 219, 192, 221, 52, 245, 209, 87, 39, 252, 41, 21, 68, 78, 110, 131, 249, 162}
	lgot := make([]byte, 24)
	must(t, st.CopyDtoH(lgot, lp))
	if !bytes.Equal(lgot, want) {
		t.Fatalf("__cudart_i2opi_f = %v, want %v", lgot, want)
	}
}

func (s *suite) testLaunchErrors(t *testing.T) {
	m := s.load(t, "kernels/vecadd.ptx")
	f := getFunc(t, m, "vecadd")
	st := newStream(t, s.dev)
	buf := alloc(t, s.dev, 4096)
	ok := params(t, f, devBuf{ptr: buf}, devBuf{ptr: buf}, devBuf{ptr: buf}, 0)
	for _, tc := range []struct {
		name   string
		cfg    backend.LaunchConfig
		params []byte
	}{
		{"block of 0", backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{0, 1, 1}}, ok},
		{"2048 threads", backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1024, 2, 1}}, ok},
		{"grid of 0", backend.LaunchConfig{Grid: [3]uint32{0, 1, 1}, Block: [3]uint32{32, 1, 1}}, ok},
		{"grid y of 65536", backend.LaunchConfig{Grid: [3]uint32{1, 65536, 1}, Block: [3]uint32{32, 1, 1}}, ok},
		{"too much shared memory", backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 1, 1}, SharedMem: 1 << 20}, ok},
		{"short parameters", grid1(1, 32), ok[:20]},
	} {
		if err := st.Launch(f, tc.cfg, tc.params); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("%s: Launch = %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	if _, err := m.Function("no_such_kernel"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("Function(no_such_kernel) = %v, want ErrNotFound", err)
	}
	// The stream still works.
	must(t, st.Launch(f, grid1(1, 32), ok))
	must(t, st.Synchronize())
}

func (s *suite) testUnload(t *testing.T) {
	m, err := s.dev.LoadModule(s.testdata(t, "kernels/vecadd.ptx"))
	must(t, err)
	f := getFunc(t, m, "vecadd")
	st := newStream(t, s.dev)
	buf := alloc(t, s.dev, 4096)
	p := params(t, f, devBuf{ptr: buf}, devBuf{ptr: buf}, devBuf{ptr: buf}, 1024)
	for i := 0; i < 10; i++ {
		must(t, st.Launch(f, grid1(4, 256), p))
	}
	must(t, m.Unload()) // waits for the launches
	for name, err := range map[string]error{
		"Unload":   m.Unload(),
		"Function": func() error { _, err := m.Function("vecadd"); return err }(),
		"Global":   func() error { _, _, err := m.Global("x"); return err }(),
		"Launch":   st.Launch(f, grid1(1, 32), p),
	} {
		if v1.CodeOf(err) != v1.CodeInvalidHandle {
			t.Errorf("%s after Unload = %v, want an invalid-handle error", name, err)
		}
	}
	must(t, st.Synchronize())
}

func (s *suite) testInvalidImages(t *testing.T) {
	vecadd := s.testdata(t, "kernels/vecadd.ptx")
	for _, tc := range []struct {
		name  string
		image []byte
	}{
		{"empty", nil},
		{"garbage", []byte("hello world")},
		{"NUL inside", []byte(".version 9.0\x00.target sm_90")},
		{"truncated fatbin", s.testdata(t, "fatbin/vecadd.fatbin")[:40]},
		{"wrapper", append(binary.LittleEndian.AppendUint32(nil, fatbin.WrapperMagic), make([]byte, 20)...)},
		{"ELF header only", s.testdata(t, "fatbin/vecadd.sm_90.cubin")[:64]},
		{"PTX prefix", vecadd[:len(vecadd)/2]},
	} {
		_, err := s.dev.LoadModule(tc.image)
		if code := v1.CodeOf(err); code != v1.CodeMalformed && !(code == v1.CodeUnsupported && tc.name == "ELF header only" && !s.opts.SASS) {
			t.Errorf("%s: LoadModule = %v (code %v), want a malformed-image error", tc.name, err, code)
		}
	}
}

// badPTX does not parse: a missing semicolon and an unbalanced brace.
const badPTX = `.version 9.0
.target sm_80
.address_size 64

.visible .entry bad()
{
	ret
}
}
`

// PTX that does not compile is a malformed-image error that says why.
func (s *suite) testJITError(t *testing.T) {
	_, err := s.dev.LoadModule([]byte(badPTX))
	if v1.CodeOf(err) != v1.CodeMalformed {
		t.Fatalf("LoadModule(bad PTX) = %v (code %v), want a malformed-image error", err, v1.CodeOf(err))
	}
	s.opts.Logf("bad PTX: %v", err)
}

// Host memory a kernel writes through its device address is seen by the host
// once the launch has completed (backends that implement MappedHostAllocator).
func (s *suite) testMappedHost(t *testing.T) {
	d := s.dev
	ma, ok := d.(backend.MappedHostAllocator)
	if !ok {
		t.Skip("the backend has no mapped host memory")
	}
	const n = 1000
	hm, dptr, err := ma.AllocMappedHost(4 * n)
	must(t, err)
	defer hm.Free()
	if got := hm.Bytes(); len(got) != 4*n || !bytes.Equal(got, make([]byte, 4*n)) {
		t.Fatalf("mapped host memory: %d bytes, not all zero", len(got))
	}
	G := d.Granularity()
	p := alloc(t, d, G)
	st := newStream(t, d)
	a := make([]float32, n)
	for i := range a {
		a[i] = float32(i) + 0.5
	}
	must(t, st.CopyHtoD(p, f32bytes(a)))
	m := s.load(t, "kernels/vecadd.ptx")
	f := getFunc(t, m, "vecadd")
	must(t, st.Launch(f, grid1((n+255)/256, 256), params(t, f, devBuf{ptr: p}, devBuf{ptr: p}, devBuf{ptr: dptr}, n)))
	must(t, st.Synchronize())
	for i, x := range f32s(hm.Bytes()) {
		if x != 2*a[i] {
			t.Fatalf("element %d in host memory = %v, want %v", i, x, 2*a[i])
		}
	}
}
