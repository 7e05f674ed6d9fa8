package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpuos/gpuos/internal/backend"
)

// Tests of real nvcc output (testdata/kernels, testdata/fatbin) run by the
// interpreter, against CPU references.

// devBuf is device memory for a test kernel.
type devBuf struct {
	ptr  backend.DevicePtr
	size uint64
}

// openPTX opens a device with the real PTX pipeline.
func openPTX(t testing.TB, o Options) *Device {
	t.Helper()
	b := New(o)
	dev, err := b.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dev.Close() })
	return dev.(*Device)
}

// loadImage loads an image; the test is skipped if the interpreter does not
// implement something in it yet (a typed Unsupported error at load).
func loadImage(t testing.TB, d *Device, image []byte) backend.Module {
	t.Helper()
	m, err := d.LoadModule(image)
	if errors.Is(err, backend.ErrUnsupported) {
		t.Skipf("the interpreter does not run this module yet: %v", err)
	}
	if err != nil {
		t.Fatalf("LoadModule: %v", err)
	}
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
// 8 bytes, int and uint32 4.
func params(t testing.TB, f backend.Function, args ...any) []byte {
	t.Helper()
	ps := f.Params()
	if len(ps) != len(args) {
		t.Fatalf("%s takes %d parameters, got %d", f.Name(), len(ps), len(args))
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

// upload allocates device memory for b and copies it there.
func upload(t testing.TB, d *Device, s backend.Stream, b []byte) devBuf {
	t.Helper()
	g := d.Granularity()
	size := (uint64(max(len(b), 1)) + g - 1) &^ (g - 1)
	buf := devBuf{alloc(t, d, size), uint64(len(b))}
	if len(b) > 0 {
		must(t, s.CopyHtoD(buf.ptr, b))
	}
	return buf
}

func download(t testing.TB, s backend.Stream, b devBuf) []byte {
	t.Helper()
	out := make([]byte, b.size)
	must(t, s.CopyDtoH(out, b.ptr))
	return out
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func f32s(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func f64bytes(v []float64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

func f64s(b []byte) []float64 {
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}

func randFloats(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*200 - 100
	}
	return v
}

// randSmallInts returns integer-valued floats, whose sums are exact in any order.
func randSmallInts(r *rand.Rand, n, bound int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.IntN(2*bound+1) - bound)
	}
	return v
}

func checkVecadd(t *testing.T, d *Device, m backend.Module, n int) {
	t.Helper()
	s := newStream(t, d)
	r := rand.New(rand.NewPCG(uint64(n), 1))
	a, b := randFloats(r, n), randFloats(r, n)
	da, db := upload(t, d, s, f32bytes(a)), upload(t, d, s, f32bytes(b))
	dc := upload(t, d, s, make([]byte, 4*n))
	f := getFunc(t, m, "vecadd")
	must(t, s.Launch(f, grid1(uint32((n+255)/256), 256), params(t, f, da, db, dc, n)))
	for i, got := range f32s(download(t, s, dc)) {
		if want := a[i] + b[i]; math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("c[%d] = %v, want %v", i, got, want)
		}
	}
}

func TestPTXVecadd(t *testing.T) {
	d := openPTX(t, Options{})
	m := loadImage(t, d, readTestdata(t, "kernels/vecadd.ptx"))
	for _, n := range []int{1, 255, 256, 10_000} {
		checkVecadd(t, d, m, n)
	}
	a := getFunc(t, m, "vecadd").Attributes()
	if a.PTXVersion != 90 || a.MaxThreadsPerBlock != 1024 {
		t.Fatalf("attributes %+v", a)
	}
}

func TestFatbinVecadd(t *testing.T) {
	for _, name := range []string{"vecadd.fatbin", "vecadd.compressed.fatbin", "vecadd.default.fatbin"} {
		t.Run(name, func(t *testing.T) {
			d := openPTX(t, Options{})
			m := loadImage(t, d, readTestdata(t, "fatbin/"+name))
			checkVecadd(t, d, m, 1000)
		})
	}
	d := openPTX(t, Options{})
	if _, err := d.LoadModule(readTestdata(t, "fatbin/vecadd.sm_90.cubin")); !errors.Is(err, ErrSASS) || !errors.Is(err, backend.ErrUnsupported) {
		t.Fatalf("LoadModule(cubin) = %v", err)
	}
}

func TestPTXReduce(t *testing.T) {
	d := openPTX(t, Options{})
	m := loadImage(t, d, readTestdata(t, "kernels/reduce.ptx"))
	s := newStream(t, d)
	r := rand.New(rand.NewPCG(5, 6))
	const n = 20_000
	in := randSmallInts(r, n, 100)
	var want float32
	for _, x := range in {
		want += x
	}
	din := upload(t, d, s, f32bytes(in))

	t.Run("shared", func(t *testing.T) {
		const threads = 256
		blocks := (n + 2*threads - 1) / (2 * threads)
		dout := upload(t, d, s, make([]byte, 4*blocks))
		f := getFunc(t, m, "reduce_shared")
		cfg := grid1(uint32(blocks), threads)
		cfg.SharedMem = threads * 4
		must(t, s.Launch(f, cfg, params(t, f, din, dout, n)))
		var got float32
		for i, part := range f32s(download(t, s, dout)) {
			var ref float32
			for j := i * 2 * threads; j < min((i+1)*2*threads, n); j++ {
				ref += in[j]
			}
			if part != ref {
				t.Fatalf("block %d sum = %v, want %v", i, part, ref)
			}
			got += part
		}
		if got != want {
			t.Fatalf("sum = %v, want %v", got, want)
		}
	})
	t.Run("shfl", func(t *testing.T) {
		dout := upload(t, d, s, make([]byte, 4))
		f := getFunc(t, m, "reduce_shfl")
		must(t, s.Launch(f, grid1(16, 256), params(t, f, din, dout, n)))
		if got := f32s(download(t, s, dout))[0]; got != want {
			t.Fatalf("sum = %v, want %v", got, want)
		}
	})
	t.Run("int atomics", func(t *testing.T) {
		ints := make([]byte, 4*n)
		var sum int64
		mx, mn := int32(math.MinInt32), int32(math.MaxInt32)
		for i := 0; i < n; i++ {
			v := int32(r.Uint32())
			binary.LittleEndian.PutUint32(ints[4*i:], uint32(v))
			sum += int64(v)
			mx, mn = max(mx, v), min(mn, v)
		}
		dints := upload(t, d, s, ints)
		init := make([]byte, 16)
		binary.LittleEndian.PutUint32(init[8:], 1<<31)          // max starts at INT_MIN
		binary.LittleEndian.PutUint32(init[12:], math.MaxInt32) // min starts at INT_MAX
		dsum, dmax, dmin := upload(t, d, s, init[:8]), upload(t, d, s, init[8:12]), upload(t, d, s, init[12:])
		f := getFunc(t, m, "reduce_int_atomic")
		must(t, s.Launch(f, grid1((n+255)/256, 256), params(t, f, dints, dsum, dmax, dmin, n)))
		gotSum := int64(binary.LittleEndian.Uint64(download(t, s, dsum)))
		gotMax := int32(binary.LittleEndian.Uint32(download(t, s, dmax)))
		gotMin := int32(binary.LittleEndian.Uint32(download(t, s, dmin)))
		if gotSum != sum || gotMax != mx || gotMin != mn {
			t.Fatalf("sum, max, min = %d, %d, %d; want %d, %d, %d", gotSum, gotMax, gotMin, sum, mx, mn)
		}
	})
}

func TestPTXMatmul(t *testing.T) {
	d := openPTX(t, Options{})
	m := loadImage(t, d, readTestdata(t, "kernels/matmul.ptx"))
	s := newStream(t, d)
	r := rand.New(rand.NewPCG(7, 8))
	const M, N, K = 37, 29, 45 // not multiples of the 16×16 tile

	t.Run("tiled f32", func(t *testing.T) {
		a, b := randSmallInts(r, M*K, 4), randSmallInts(r, K*N, 4) // exact in any order
		da, db := upload(t, d, s, f32bytes(a)), upload(t, d, s, f32bytes(b))
		dc := upload(t, d, s, make([]byte, 4*M*N))
		f := getFunc(t, m, "matmul_tiled")
		cfg := backend.LaunchConfig{Grid: [3]uint32{(N + 15) / 16, (M + 15) / 16, 1}, Block: [3]uint32{16, 16, 1}}
		must(t, s.Launch(f, cfg, params(t, f, da, db, dc, M, N, K)))
		got := f32s(download(t, s, dc))
		for i := 0; i < M; i++ {
			for j := 0; j < N; j++ {
				var want float32
				for k := 0; k < K; k++ {
					want += a[i*K+k] * b[k*N+j]
				}
				if got[i*N+j] != want {
					t.Fatalf("C[%d][%d] = %v, want %v", i, j, got[i*N+j], want)
				}
			}
		}
		if fa := f.Attributes(); fa.SharedSizeBytes != 2*16*16*4 {
			t.Fatalf("static shared = %d, want %d", fa.SharedSizeBytes, 2*16*16*4)
		}
	})
	t.Run("naive f64", func(t *testing.T) {
		a, b := make([]float64, M*K), make([]float64, K*N)
		for i := range a {
			a[i] = r.NormFloat64()
		}
		for i := range b {
			b[i] = r.NormFloat64()
		}
		da, db := upload(t, d, s, f64bytes(a)), upload(t, d, s, f64bytes(b))
		dc := upload(t, d, s, make([]byte, 8*M*N))
		f := getFunc(t, m, "dgemm_naive")
		cfg := backend.LaunchConfig{Grid: [3]uint32{(N + 7) / 8, (M + 7) / 8, 1}, Block: [3]uint32{8, 8, 1}}
		must(t, s.Launch(f, cfg, params(t, f, da, db, dc, M, N, K)))
		got := f64s(download(t, s, dc))
		for i := 0; i < M; i++ {
			for j := 0; j < N; j++ {
				var want float64
				for k := 0; k < K; k++ {
					want = math.FMA(a[i*K+k], b[k*N+j], want)
				}
				if math.Float64bits(got[i*N+j]) != math.Float64bits(want) {
					t.Fatalf("C[%d][%d] = %v, want %v", i, j, got[i*N+j], want)
				}
			}
		}
	})
}

// A module variable from real nvcc output: Global returns where it was
// placed and its initializer is there.
func TestPTXGlobal(t *testing.T) {
	d := openPTX(t, Options{})
	m := loadImage(t, d, readTestdata(t, "kernels/libm.ptx"))
	p, size, err := m.Global("__cudart_i2opi_f")
	must(t, err)
	if size != 24 || uint64(p) < moduleStart || uint64(p) >= VAEnd || p%4 != 0 {
		t.Fatalf("Global = %#x, %d", p, size)
	}
	s := newStream(t, d)
	got := make([]byte, 24)
	must(t, s.CopyDtoH(got, p))
	want := []byte{65, 144, 67, 60, 153, 149, 98, 219, 192, 221, 52, 245, 209, 87, 39, 252, 41, 21, 68, 78, 110, 131, 249, 162}
	if !bytes.Equal(got, want) {
		t.Fatalf("__cudart_i2opi_f = %v, want %v", got, want)
	}
}

// A real kernel storing through a bad pointer loses device 0 and names the
// fault; device 1 of the same backend keeps working.
func TestPTXFaultIsolatedPerDevice(t *testing.T) {
	b := New(Options{Devices: 2})
	var devs [2]*Device
	var mods [2]backend.Module
	for i := range devs {
		dev, err := b.Open(i)
		must(t, err)
		t.Cleanup(func() { _ = dev.Close() })
		devs[i] = dev.(*Device)
		mods[i] = loadImage(t, devs[i], readTestdata(t, "kernels/vecadd.ptx"))
	}
	s := newStream(t, devs[0])
	da := upload(t, devs[0], s, make([]byte, 4096))
	f := getFunc(t, mods[0], "vecadd")
	bad := devBuf{ptr: da.ptr + 64<<20} // reserved by nobody
	must(t, s.Launch(f, grid1(4, 256), params(t, f, da, da, bad, 1024)))
	err := s.Synchronize()
	if !errors.Is(err, backend.ErrContextLost) || !errors.Is(err, ErrLaunchFailed) {
		t.Fatalf("Synchronize = %v, want a lost context naming the launch failure", err)
	}
	for _, want := range []string{"vecadd", "illegal address", fmt.Sprintf("%#x", uint64(bad.ptr))} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("lost error %q does not say %q", err, want)
		}
	}
	t.Logf("lost: %v", err)
	if _, err := devs[0].LoadModule(readTestdata(t, "kernels/vecadd.ptx")); !errors.Is(err, backend.ErrContextLost) {
		t.Fatalf("LoadModule after the fault = %v", err)
	}
	checkVecadd(t, devs[1], mods[1], 3000)
}

// The same program of real kernels gets the same virtual times on every run.
func TestPTXVirtualTimeReproducible(t *testing.T) {
	run := func() string {
		d := openPTX(t, Options{Workers: 2})
		m := loadImage(t, d, readTestdata(t, "kernels/reduce.ptx"))
		s1, s2 := newStream(t, d), newStream(t, d)
		r := rand.New(rand.NewPCG(1, 1))
		din := upload(t, d, s1, f32bytes(randSmallInts(r, 4096, 10)))
		out1, out2 := upload(t, d, s1, make([]byte, 4)), upload(t, d, s2, make([]byte, 4))
		f := getFunc(t, m, "reduce_shfl")
		start, err := d.NewEvent(0)
		must(t, err)
		stop, err := d.NewEvent(0)
		must(t, err)
		must(t, s1.Record(start))
		for i := 0; i < 3; i++ {
			must(t, s1.Launch(f, grid1(8, 128), params(t, f, din, out1, 4096)))
			must(t, s2.Launch(f, grid1(4, 64), params(t, f, din, out2, 4096)))
		}
		must(t, s2.Record(stop))
		must(t, d.Synchronize())
		el, err := stop.Elapsed(start)
		must(t, err)
		return fmt.Sprint(el, s1.VirtualTime(), s2.VirtualTime(), d.VirtualTime())
	}
	first := run()
	for i := 0; i < 2; i++ {
		if got := run(); got != first {
			t.Fatalf("run %d: %s; first run %s", i, got, first)
		}
	}
	t.Logf("times: %s", first)
}
