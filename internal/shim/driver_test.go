package shim

import (
	"bytes"
	"encoding/binary"
	"math"
	"sync"
	"testing"

	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/testenv"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// cmem is memory outside the Go heap, standing for the application's memory.
type cmem struct{ b []byte }

func newCmem(t testing.TB, n int) *cmem {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return &cmem{b: b}
}

func (m *cmem) addr(off int) uintptr { return addrOf(m.b) + uintptr(off) }

// args lays out a kernelParams array at off: pointers to each value, the
// values after them.
func (m *cmem) args(off int, vals ...any) uintptr {
	le := binary.LittleEndian
	at := off + 8*len(vals)
	for i, v := range vals {
		le.PutUint64(m.b[off+8*i:], uint64(m.addr(at)))
		switch v := v.(type) {
		case uint64:
			le.PutUint64(m.b[at:], v)
			at += 8
		case int32:
			le.PutUint32(m.b[at:], uint32(v))
			at += 8
		case float32:
			le.PutUint32(m.b[at:], math.Float32bits(v))
			at += 8
		}
	}
	return m.addr(off)
}

// threadOf is the thread argument of LaunchKernel for thread th.
func threadOf(th Thread) func() Thread { return func() Thread { return th } }

func newDriver(t testing.TB) (*Driver, *bytes.Buffer) {
	t.Helper()
	env := testenv.Start(t, testenv.Options{SimMemory: "512MiB"})
	var log syncBuffer
	d := New(Config{Options: client.Options{Socket: env.Socket}, Log: NewLog(&log, TraceCalls)})
	if r := d.Init(0); r != cu.CUDA_SUCCESS {
		t.Fatalf("Init: %v", r)
	}
	return d, &log.b
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func must(t testing.TB, what string, r Result) {
	t.Helper()
	if r != cu.CUDA_SUCCESS {
		t.Fatalf("%s: %v", what, r)
	}
}

func want(t testing.TB, what string, got, want Result) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// loadVecadd loads testdata/kernels/vecadd.ptx from C memory.
func loadVecadd(t testing.TB, d *Driver, th Thread) uint64 {
	ptx := append(readTestdata(t, "kernels/vecadd.ptx"), 0)
	m := newCmem(t, len(ptx))
	copy(m.b, ptx)
	mod, r := d.ModuleLoadData(th, m.addr(0))
	must(t, "ModuleLoadData", r)
	f, r := d.ModuleGetFunction(mod, "vecadd")
	must(t, "ModuleGetFunction", r)
	return f
}

func TestDriverVecadd(t *testing.T) {
	d, _ := newDriver(t)
	const th = Thread(1)
	_, r := d.CtxCreate(th, 0, 0)
	must(t, "CtxCreate", r)
	f := loadVecadd(t, d, th)
	host, dev := runVecadd(t, d, th, f)
	const n = vecaddN
	// Generic copies classify each side.
	must(t, "Memcpy DtoD", d.Memcpy(th, dev[0], dev[2], 4*n, 0, false))
	must(t, "Memcpy DtoH", d.Memcpy(th, uint64(host.addr(0)), dev[0], 4*n, 0, false))
	if !bytes.Equal(host.b[:4*n], host.b[2*4*n:3*4*n]) {
		t.Error("generic device-to-device-to-host copy differs")
	}
}

const vecaddN = 1000

// runVecadd launches vecadd (f: a CUfunction or a CUkernel) on vecaddN
// elements in the current context and checks the sums; it returns the host
// memory (a, b and c, then the launch's arguments) and the device buffers.
func runVecadd(t *testing.T, d *Driver, th Thread, f uint64) (*cmem, [3]uint64) {
	t.Helper()
	const n = vecaddN
	host := newCmem(t, 3*4*n+4096)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(host.b[4*i:], math.Float32bits(float32(i)))
		binary.LittleEndian.PutUint32(host.b[4*n+4*i:], math.Float32bits(float32(2*i)))
	}
	var dev [3]uint64
	var r Result
	for i := range dev {
		dev[i], r = d.MemAlloc(th, 4*n)
		must(t, "MemAlloc", r)
	}
	must(t, "HtoD a", d.MemcpyHtoD(th, dev[0], host.addr(0), 4*n, 0, false))
	must(t, "HtoD b", d.MemcpyHtoD(th, dev[1], host.addr(4*n), 4*n, 0, false))
	args := host.args(3*4*n, dev[0], dev[1], dev[2], int32(n))
	must(t, "LaunchKernel", d.LaunchKernel(threadOf(th), f, [3]uint32{(n + 127) / 128, 1, 1}, [3]uint32{128, 1, 1}, 0, 0, args, 0))
	must(t, "DtoH", d.MemcpyDtoH(th, host.addr(2*4*n), dev[2], 4*n, 0))
	for i := 0; i < n; i++ {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(host.b[2*4*n+4*i:])); got != float32(3*i) {
			t.Fatalf("c[%d] = %v, want %v", i, got, 3*i)
		}
	}
	return host, dev
}

func TestDriverErrors(t *testing.T) {
	d, log := newDriver(t)
	const th = Thread(7)
	_, r := d.MemAlloc(th, 16)
	want(t, "MemAlloc without a context", r, cu.CUDA_ERROR_INVALID_CONTEXT)
	c, r := d.CtxCreate(th, 0, 0)
	must(t, "CtxCreate", r)
	_, r = d.MemAlloc(th, 1<<50)
	want(t, "absurd MemAlloc", r, cu.CUDA_ERROR_OUT_OF_MEMORY)
	p, r := d.MemAlloc(th, 4096)
	must(t, "MemAlloc", r)
	want(t, "MemFree interior", d.MemFree(th, p+8), cu.CUDA_ERROR_INVALID_VALUE)
	want(t, "MemFree foreign", d.MemFree(th, 0x1234), cu.CUDA_ERROR_INVALID_VALUE)
	f := loadVecadd(t, d, th)
	mod, r := d.FuncGetModule(th, f)
	must(t, "FuncGetModule", r)
	_, r = d.ModuleGetFunction(mod, "nope")
	want(t, "unknown kernel", r, cu.CUDA_ERROR_NOT_FOUND)
	want(t, "launch of a stream handle", d.LaunchKernel(threadOf(th), c, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 0, 0, 0), cu.CUDA_ERROR_INVALID_HANDLE)
	want(t, "launch without arguments", d.LaunchKernel(threadOf(th), f, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 0, 0, 0), cu.CUDA_ERROR_INVALID_VALUE)

	// Destroying the context frees its memory.
	must(t, "CtxDestroy", d.CtxDestroy(th, c))
	_, _, r = d.MemGetAddressRange(th, p)
	want(t, "address range after destroy", r, cu.CUDA_ERROR_NOT_FOUND)
	if _, r := d.CtxGetCurrent(th); r != cu.CUDA_SUCCESS {
		t.Error(r)
	}
	if !bytes.Contains(log.Bytes(), []byte("")) {
		t.Log(log.String())
	}
}

func TestDriverHostFunctionsInOrder(t *testing.T) {
	d, _ := newDriver(t)
	const th = Thread(3)
	_, r := d.CtxCreate(th, 0, 0)
	must(t, "CtxCreate", r)
	s, r := d.StreamCreate(th, uint32(cu.CU_STREAM_NON_BLOCKING), 0)
	must(t, "StreamCreate", r)
	var mu sync.Mutex
	var order []int
	release := make(chan struct{})
	note := func(i int) func(Result) {
		return func(Result) {
			if i == 1 {
				<-release
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		}
	}
	must(t, "host 1", d.LaunchHostFunc(th, s, note(1)))
	if r := d.StreamQuery(th, s); r != cu.CUDA_ERROR_NOT_READY {
		t.Errorf("StreamQuery with a host function pending = %v", r)
	}
	done := make(chan Result, 1)
	go func() { done <- d.LaunchHostFunc(th, s, note(2)) }() // waits for the first
	close(release)
	must(t, "host 2", <-done)
	must(t, "StreamSynchronize", d.StreamSynchronize(th, s))
	if len(order) != 2 || order[0] != 1 || order[1] != 2 {
		t.Errorf("host functions ran as %v", order)
	}
	// A host function that submits to its own stream is refused, not hung.
	inner := make(chan Result, 1)
	must(t, "host 3", d.LaunchHostFunc(th, s, func(Result) { inner <- d.LaunchHostFunc(th+1, s, func(Result) {}) }))
	if r := <-inner; r != cu.CUDA_ERROR_NOT_PERMITTED {
		t.Errorf("a host function submitting to its own stream: %v", r)
	}
	must(t, "StreamDestroy", d.StreamDestroy(s))
}

func TestDriverEvents(t *testing.T) {
	d, _ := newDriver(t)
	const th = Thread(4)
	_, r := d.CtxCreate(th, 0, 0)
	must(t, "CtxCreate", r)
	a, r := d.EventCreate(th, 0)
	must(t, "EventCreate", r)
	b, r := d.EventCreate(th, 0)
	must(t, "EventCreate", r)
	_, r = d.EventElapsedTime(a, b)
	want(t, "elapsed before records", r, cu.CUDA_ERROR_INVALID_HANDLE)
	must(t, "record a", d.EventRecord(th, a, 0))
	must(t, "record b", d.EventRecord(th, b, uint64(cu.CU_STREAM_LEGACY)))
	must(t, "sync b", d.EventSynchronize(b))
	ms, r := d.EventElapsedTime(a, b)
	must(t, "elapsed", r)
	if ms < 0 {
		t.Errorf("elapsed %v ms", ms)
	}
	must(t, "record a again", d.EventRecord(th, a, 0))
	// The record may still be in flight (NOT_READY); once synchronized, the
	// query answers success.
	if r := d.EventQuery(a); r != cu.CUDA_SUCCESS && r != cu.CUDA_ERROR_NOT_READY {
		t.Errorf("query in flight: %s", r.Name())
	}
	must(t, "sync a", d.EventSynchronize(a))
	must(t, "query", d.EventQuery(a))
	must(t, "destroy", d.EventDestroy(a))
	want(t, "query destroyed", d.EventQuery(a), cu.CUDA_ERROR_INVALID_HANDLE)
}

// BenchmarkLaunchKernel measures the shim's launch path (handle lookups,
// validation, packing, the client's send) against the client's own launch
// of the same kernel on the same daemon stream: the difference is what the
// shim adds, less the cgo crossing (bench/launch_bench.c measures that).
// "args" launches a kernel of four parameters through kernelParams.
func BenchmarkLaunchKernel(b *testing.B) {
	d, _ := newDriver(b)
	const th = Thread(9)
	_, r := d.CtxCreate(th, 0, 0)
	must(b, "CtxCreate", r)
	ptx := append(readTestdata(b, "kernels/bench.ptx"), 0)
	m := newCmem(b, len(ptx)+4096)
	copy(m.b, ptx)
	mod, r := d.ModuleLoadData(th, m.addr(0))
	must(b, "ModuleLoadData", r)
	f, r := d.ModuleGetFunction(mod, "empty")
	must(b, "ModuleGetFunction", r)
	vf := loadVecadd(b, d, th)
	dp, r := d.MemAlloc(th, 4096)
	must(b, "MemAlloc", r)
	args := newCmem(b, 4096)
	params := args.args(0, dp, dp, dp, int32(0))
	s, r := d.StreamCreate(th, uint32(cu.CU_STREAM_NON_BLOCKING), 0)
	must(b, "StreamCreate", r)
	one := [3]uint32{1, 1, 1}
	thread := threadOf(th)
	b.Run("client", func(b *testing.B) {
		st := d.streams.get(s)
		fn := d.functions.get(f)
		cfg := client.LaunchConfig{Grid: client.Dim3{X: 1, Y: 1, Z: 1}, Block: client.Dim3{X: 1, Y: 1, Z: 1}, Stream: st.ds.cs}
		b.ReportAllocs()
		for b.Loop() {
			if err := st.ds.sess.s.LaunchRaw(fn.k, cfg, nil); err != nil {
				b.Fatal(err)
			}
		}
		must(b, "StreamSynchronize", d.StreamSynchronize(th, s))
	})
	b.Run("shim", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := d.LaunchKernel(thread, f, one, one, 0, s, 0, 0); r != cu.CUDA_SUCCESS {
				b.Fatal(r)
			}
		}
		must(b, "StreamSynchronize", d.StreamSynchronize(th, s))
	})
	b.Run("args", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := d.LaunchKernel(thread, vf, one, one, 0, s, params, 0); r != cu.CUDA_SUCCESS {
				b.Fatal(r)
			}
		}
		must(b, "StreamSynchronize", d.StreamSynchronize(th, s))
	})
}

// BenchmarkLaunchPrepare is the shim's own share of a launch: all of
// LaunchKernel but the client's send.
func BenchmarkLaunchPrepare(b *testing.B) {
	d, _ := newDriver(b)
	const th = Thread(10)
	_, r := d.CtxCreate(th, 0, 0)
	must(b, "CtxCreate", r)
	vf := loadVecadd(b, d, th)
	ptx := append(readTestdata(b, "kernels/bench.ptx"), 0)
	m := newCmem(b, len(ptx)+4096)
	copy(m.b, ptx)
	mod, r := d.ModuleLoadData(th, m.addr(0))
	must(b, "ModuleLoadData", r)
	f, r := d.ModuleGetFunction(mod, "empty")
	must(b, "ModuleGetFunction", r)
	dp, r := d.MemAlloc(th, 4096)
	must(b, "MemAlloc", r)
	args := newCmem(b, 4096)
	params := args.args(0, dp, dp, dp, int32(0))
	s, r := d.StreamCreate(th, uint32(cu.CU_STREAM_NON_BLOCKING), 0)
	must(b, "StreamCreate", r)
	fat := inCmem(b, readTestdata(b, "fatbin/vecadd.fatbin"))
	lib, r := d.LibraryLoadData(th, fat.addr(0), LibraryOptions{Preserved: true})
	must(b, "LibraryLoadData", r)
	k, r := d.LibraryGetKernel(th, lib, "vecadd")
	must(b, "LibraryGetKernel", r)
	one := [3]uint32{1, 1, 1}
	thread := threadOf(th)
	for _, bc := range []struct {
		name   string
		f      uint64
		stream uint64
		params uintptr
	}{{"empty", f, s, 0}, {"args", vf, s, params}, {"CUkernel on the default stream", k, 0, params}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var l launch
				if r := d.prepareLaunch(&l, thread, bc.f, one, one, 0, bc.stream, bc.params, 0); r != cu.CUDA_SUCCESS {
					b.Fatal(r)
				}
				l.done()
			}
		})
	}
}

func TestDriverWithoutDaemon(t *testing.T) {
	var log syncBuffer
	d := New(Config{Options: client.Options{Socket: t.TempDir() + "/nobody.sock"}, Log: NewLog(&log, TraceOff)})
	want(t, "Init", d.Init(0), cu.CUDA_ERROR_NO_DEVICE)
	want(t, "Init again", d.Init(0), cu.CUDA_ERROR_NO_DEVICE)
	_, r := d.DeviceGetCount()
	want(t, "DeviceGetCount", r, cu.CUDA_ERROR_NOT_INITIALIZED)
	if !bytes.Contains(log.b.Bytes(), []byte("cannot reach the gpuos daemon")) {
		t.Errorf("log: %q", log.b.String())
	}
	if d.DriverVersion() != cu.CUDA_VERSION {
		t.Errorf("driver version %d", d.DriverVersion())
	}
}

// The session's device window is reserved in this process: no host mapping
// can land on device addresses.
func TestDriverReservesWindow(t *testing.T) {
	d, _ := newDriver(t)
	const th = Thread(11)
	_, r := d.CtxCreate(th, 0, 0)
	must(t, "CtxCreate", r)
	base, size := d.devices[0].sess.s.Window()
	if err := reserveHostRange(base, min(size, 1<<20)); err == nil {
		t.Errorf("the window %#x+%#x was free to map again", base, size)
	}
}
