package cuda

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/backendtest"
)

// Tests on the fake driver (testdata/fakecuda): every path from Go through
// the C wrappers to a dlopen'ed library, without a GPU.

// The conformance suite passes on the fake driver, except what needs real
// kernels.
func TestFakeConformance(t *testing.T) {
	backendtest.Run(t, openFake(t), backendtest.Options{SkipKernels: true, SASS: true})
}

// Without cgo, Open says so instead of failing obscurely.
func TestOpenWithoutCgo(t *testing.T) {
	if haveCgo {
		t.Skip("built with cgo")
	}
	if b, err := Open(); b != nil || !errors.Is(err, ErrNoCgo) || !errors.Is(err, backend.ErrUnsupported) {
		t.Fatalf("Open = %v, %v; want ErrNoCgo", b, err)
	}
}

func TestOpenErrors(t *testing.T) {
	if !haveCgo {
		t.Skip("built without cgo")
	}
	tests := []struct {
		name    string
		lib     func(t *testing.T) string
		env     string // set to "1" for the test
		want    error
		message string
	}{
		{"no such library", func(t *testing.T) string { return "/nonexistent/libcuda.so.1" }, "", ErrNoDriver, "/nonexistent/libcuda.so.1"},
		{"gpuos's own shim", func(t *testing.T) string { return fakeLib(t, "shim") }, "", ErrShim, "refusing to drive the GPU through gpuos's own libcuda shim"},
		{"a core entry point missing", func(t *testing.T) string { return fakeLib(t, "noretain") }, "", ErrMissingSymbol, "cuDevicePrimaryCtxRetain"},
		{"cuInit finds no device", func(t *testing.T) string { return fakeLib(t, "fake") }, "FAKECUDA_NO_DEVICE", backend.ErrNoDevice, "CUDA_ERROR_NO_DEVICE"},
		{"zero devices", func(t *testing.T) string { return fakeLib(t, "fake") }, "FAKECUDA_ZERO_DEVICES", backend.ErrNoDevice, "no devices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(LibraryEnv, tt.lib(t))
			if tt.env != "" {
				t.Setenv(tt.env, "1")
			}
			b, err := Open()
			if b != nil || !errors.Is(err, tt.want) || v1.CodeOf(err) != v1.CodeOf(tt.want) || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("Open = %v, %v; want %v saying %q", b, err, tt.want, tt.message)
			}
		})
	}
}

func TestFakeDevices(t *testing.T) {
	b := openFake(t)
	if b.Name() != "cuda" || b.DriverVersion() != 13000 || !strings.Contains(b.LibraryPath(), "gpuos-fakecuda-") {
		t.Fatalf("Name %q, DriverVersion %d, LibraryPath %q", b.Name(), b.DriverVersion(), b.LibraryPath())
	}
	if m := b.MissingEntryPoints(); len(m) != 0 {
		t.Fatalf("MissingEntryPoints = %v, want none", m)
	}
	infos, err := b.Devices()
	if err != nil || len(infos) != 1 {
		t.Fatalf("Devices = %v, %v", infos, err)
	}
	info := infos[0]
	want := [16]byte{0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf}
	if info.Name != "gpuos fake GPU" || info.UUID != want || info.PCIBusID != "0000:ab:00.0" || info.TotalMemory != 1<<30 ||
		info.ComputeMajor != 9 || info.ComputeMinor != 0 || info.SMCount != 132 {
		t.Fatalf("device %+v", info)
	}
	// The fake knows attributes below 140 (10 × the number); the rest are 0.
	for a := 1; a < int(cuda.CU_DEVICE_ATTRIBUTE_MAX); a++ {
		want := int32(10 * a)
		switch {
		case a >= 140:
			want = 0
		case a == int(cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), a == int(cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
			a == int(cuda.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT):
			continue
		}
		if info.Attributes[a] != want {
			t.Errorf("attribute %d (%v) = %d, want %d", a, cuda.CUdevice_attribute(a), info.Attributes[a], want)
		}
	}
	// Devices returns copies.
	infos[0].Attributes[1] = -1
	again, _ := b.Devices()
	if again[0].Attributes[1] != 10 {
		t.Fatal("Devices shares its attribute slice with the caller")
	}
}

// An optional entry point the library lacks fails only the call that needs
// it, with an Unsupported error that names it.
func TestFakeMissingEntryPoint(t *testing.T) {
	t.Setenv(LibraryEnv, fakeLib(t, "noglobal"))
	b, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	if got := b.MissingEntryPoints(); len(got) != 1 || got[0] != "cuModuleGetGlobal_v2" {
		t.Fatalf("MissingEntryPoints = %v", got)
	}
	d, err := b.open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m, err := d.LoadModule([]byte(fakePTX))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = m.Global("counter")
	if !errors.Is(err, ErrMissingSymbol) || !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), "cuModuleGetGlobal_v2") {
		t.Fatalf("Global without cuModuleGetGlobal_v2 = %v", err)
	}
	if _, err := m.Function("vecadd"); err != nil {
		t.Fatalf("Function still works: %v", err)
	}
}

// A stream's fences write its word; a destroyed stream's word, its last
// fence reached, goes to the next stream, which counts on from its value.
// Without cuStreamWriteValue32_v2, Fence is Unsupported and names it.
func TestFakeFences(t *testing.T) {
	_, d := openFakeDevice(t)
	st, err := d.NewStream(0)
	must(t, err)
	s := st.(*stream)
	for i := 1; i <= 3; i++ {
		f, err := s.Fence()
		must(t, err)
		if !f.Reached() { // the fake runs work at once
			t.Fatalf("fence %d not reached", i)
		}
	}
	word, seq := s.fences.word, s.fences.seq
	if seq != 3 || word.host.Load() != 3 {
		t.Fatalf("after 3 fences: seq %d, word %d", seq, word.host.Load())
	}
	f, err := s.Fence()
	must(t, err)
	must(t, st.Destroy())
	if f.Reached() {
		t.Fatal("a destroyed stream's fence reports reached")
	}
	st2, err := d.NewStream(0)
	must(t, err)
	s2 := st2.(*stream)
	f2, err := s2.Fence()
	must(t, err)
	if s2.fences.word.dptr != word.dptr || s2.fences.seq != 5 || !f2.Reached() {
		t.Fatalf("second stream: word %#x seq %d (first's word %#x), reached %v; want the word reused, seq 5",
			s2.fences.word.dptr, s2.fences.seq, word.dptr, f2.Reached())
	}
	must(t, d.Close()) // one open device per process

	t.Setenv(LibraryEnv, fakeLib(t, "nowrite"))
	b, err := Open()
	must(t, err)
	nd, err := b.open(0)
	must(t, err)
	defer nd.Close()
	nst, err := nd.NewStream(0)
	must(t, err)
	defer nst.Destroy()
	if _, err := nst.(backend.Fencer).Fence(); !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), "cuStreamWriteValue32_v2") {
		t.Fatalf("Fence without cuStreamWriteValue32_v2 = %v", err)
	}
}

// fakePTX loads on the fake driver, which knows kernels by name.
const fakePTX = ".version 9.0\n.target sm_90\n.visible .entry vecadd() { ret; }\n"

// Launch passes exactly the kernel's parameter bytes through
// CU_LAUNCH_PARAM_BUFFER_POINTER (the fake refuses any other size), and the
// fake's host-side vecadd computes with them.
func TestFakeLaunch(t *testing.T) {
	_, d := openFakeDevice(t)
	m, err := d.LoadModule([]byte(fakePTX))
	must(t, err)
	f, err := m.Function("vecadd")
	must(t, err)
	want := []backend.Param{{Offset: 0, Size: 8}, {Offset: 8, Size: 8}, {Offset: 16, Size: 8}, {Offset: 24, Size: 4}}
	if got := f.Params(); !equalParams(got, want) {
		t.Fatalf("Params = %v, want %v", got, want)
	}
	if a := f.Attributes(); a.MaxThreadsPerBlock != 1024 || a.NumRegs != 8 || a.PTXVersion != 90 || a.BinaryVersion != 90 || a.MaxDynamicSharedMem != 48<<10 {
		t.Fatalf("Attributes = %+v", a)
	}
	const n = 1000
	p := allocFake(t, d, 3*4*n)
	st, err := d.NewStream(0)
	must(t, err)
	defer st.Destroy()
	a := make([]byte, 8*n)
	for i := 0; i < 2*n; i++ {
		binary.LittleEndian.PutUint32(a[4*i:], math.Float32bits(float32(i)))
	}
	must(t, st.CopyHtoD(p, a))
	params := make([]byte, 40) // longer than the kernel's 28 bytes: only 28 go to the driver
	binary.LittleEndian.PutUint64(params, uint64(p))
	binary.LittleEndian.PutUint64(params[8:], uint64(p)+4*n)
	binary.LittleEndian.PutUint64(params[16:], uint64(p)+8*n)
	binary.LittleEndian.PutUint32(params[24:], n)
	must(t, st.Launch(f, backend.LaunchConfig{Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{256, 1, 1}}, params))
	out := make([]byte, 4*n)
	must(t, st.CopyDtoH(out, p+8*n))
	for i := 0; i < n; i++ {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])); got != float32(i)+float32(n+i) {
			t.Fatalf("c[%d] = %v, want %v", i, got, float32(i)+float32(n+i))
		}
	}
	// Parameters kept inside an object that holds Go pointers (as the
	// driver's launch command keeps them): cgo must not be handed that
	// object (it panics: run 7), nor a copy too large for the stack.
	for _, size := range []int{40, 1000} {
		type command struct {
			next   *command
			params []byte
			inline [1000]byte
		}
		c := &command{next: &command{}}
		copy(c.inline[:], params)
		c.params = c.inline[:size]
		must(t, st.Launch(f, backend.LaunchConfig{Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{256, 1, 1}}, c.params))
	}
	// More than 48 KiB of dynamic shared memory: the backend opts the
	// kernel in (cuBLAS's sm90 GEMMs ask for 80 KiB; the real driver refuses
	// such a launch otherwise, run 14a); past the device's limit the launch
	// fails.
	for _, c := range []struct {
		shared uint32
		ok     bool
	}{{80 << 10, true}, {64 << 10, true}, {232448, true}, {232448 + 4, false}} {
		err := st.Launch(f, backend.LaunchConfig{Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{256, 1, 1}, SharedMem: c.shared}, params)
		if (err == nil) != c.ok {
			t.Errorf("launch with %d bytes of dynamic shared memory: %v, want ok %v", c.shared, err, c.ok)
		}
	}
	if err := st.Launch(f, backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}, params[:27]); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("Launch with 27 parameter bytes = %v", err)
	}
	// A kernel without parameters takes none (nil and empty alike).
	empty, err := m.Function("empty")
	must(t, err)
	if len(empty.Params()) != 0 {
		t.Fatalf("empty's Params = %v", empty.Params())
	}
	must(t, st.Launch(empty, backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}, nil))
	must(t, st.Launch(empty, backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}, params))
	// The driver's own validation comes back typed.
	if err := st.Launch(empty, backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{2048, 1, 1}}, nil); !errors.Is(err, backend.ErrInvalidArgument) ||
		v1.ResultOf(err) != int32(cuda.CUDA_ERROR_INVALID_VALUE) {
		t.Fatalf("Launch of 2048 threads = %v (result %d)", err, v1.ResultOf(err))
	}
	if _, err := m.Function("missing"); !errors.Is(err, backend.ErrNotFound) || v1.ResultOf(err) != int32(cuda.CUDA_ERROR_NOT_FOUND) {
		t.Fatalf("Function(missing) = %v", err)
	}
	if _, err := m.Function("nul\x00inside"); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("Function with a NUL = %v", err)
	}
	// Module variables are copy targets, within their size.
	g, size, err := m.Global("counter")
	must(t, err)
	got := make([]byte, size)
	must(t, st.CopyDtoH(got, g))
	if string(got) != "0123456789abcdef" {
		t.Fatalf("counter = %q", got)
	}
	if err := st.CopyDtoH(make([]byte, 17), g); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("17 bytes out of a 16-byte global: %v", err)
	}
	must(t, m.Unload())
	if err := st.CopyDtoH(got, g); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("copy from a global of an unloaded module: %v", err)
	}
}

func equalParams(a, b []backend.Param) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// allocFake maps size bytes (rounded to the granularity), accessible.
func allocFake(t testing.TB, d *Device, size uint64) backend.DevicePtr {
	t.Helper()
	size = (size + d.gran - 1) &^ (d.gran - 1)
	p, err := d.Reserve(size, 0)
	must(t, err)
	c, err := d.CreateChunk(size)
	must(t, err)
	must(t, d.Map(p, size, c, 0))
	must(t, d.SetAccess(p, size))
	return p
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A failed PTX load carries the CUresult and the JIT's log.
func TestFakeJITLog(t *testing.T) {
	_, d := openFakeDevice(t)
	_, err := d.LoadModule([]byte(".version 9.0\n.target sm_90\n.visible .entry k() { BAD; }\n"))
	if !errors.Is(err, v1.ErrMalformed) || v1.ResultOf(err) != int32(cuda.CUDA_ERROR_INVALID_PTX) ||
		!strings.Contains(err.Error(), "fake JIT: syntax error near 'BAD'") || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_PTX") {
		t.Fatalf("LoadModule(bad PTX) = %v (result %d)", err, v1.ResultOf(err))
	}
}

// Every OS thread that calls the driver has the context current: the fake
// fails any call made on a thread where it is not.
func TestFakeContextOnEveryThread(t *testing.T) {
	_, d := openFakeDevice(t)
	p := allocFake(t, d, 1)
	checkThreads(t, d, p)
}

// checkThreads calls the device from 32 goroutines, each locked to its own
// OS thread (many of them new), while the others are too.
func checkThreads(t *testing.T, d *Device, p backend.DevicePtr) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 32)
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // the thread exits with the goroutine: a fresh one each time
			<-start
			if _, _, err := d.MemoryInfo(); err != nil {
				errs <- err
				return
			}
			st, err := d.NewStream(0)
			if err != nil {
				errs <- err
				return
			}
			buf := []byte{byte(i)}
			err = errors.Join(st.CopyHtoD(p+backend.DevicePtr(i), buf), st.CopyDtoH(buf, p+backend.DevicePtr(i)), st.Destroy())
			if err == nil && buf[0] != byte(i) {
				err = errors.New("round trip differs")
			}
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// The hot path allocates nothing: launches, copies, memsets, records, queries.
func TestFakeHotPathAllocatesNothing(t *testing.T) {
	_, d := openFakeDevice(t)
	checkHotPathAllocs(t, d, fakePTX, "empty")
}

func checkHotPathAllocs(t *testing.T, d *Device, image, kernel string) {
	m, err := d.LoadModule([]byte(image))
	must(t, err)
	f, err := m.Function(kernel)
	must(t, err)
	s, err := d.NewStream(0)
	must(t, err)
	defer s.Destroy()
	ev, err := d.NewEvent(backend.EventDisableTiming)
	must(t, err)
	defer ev.Destroy()
	p := allocFake(t, d, 1)
	pinned, err := d.AllocHost(64)
	must(t, err)
	defer pinned.Free()
	pageable := make([]byte, 64)
	var st backend.Stream = s
	cfg := backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}
	for name, op := range map[string]func() error{
		"Launch":            func() error { return st.Launch(f, cfg, nil) },
		"CopyHtoD pinned":   func() error { return st.CopyHtoD(p, pinned.Bytes()) },
		"CopyDtoH pinned":   func() error { return st.CopyDtoH(pinned.Bytes(), p) },
		"CopyHtoD pageable": func() error { return st.CopyHtoD(p, pageable) },
		"CopyDtoH pageable": func() error { return st.CopyDtoH(pageable, p) },
		"CopyDtoD":          func() error { return st.CopyDtoD(p+64, p, 64) },
		"Memset":            func() error { return st.Memset(p, 7, 4, 16) },
		"Record":            func() error { return st.Record(ev) },
		"WaitEvent":         func() error { return st.WaitEvent(ev) },
		"Query":             func() error { _, err := st.Query(); return err },
	} {
		allocs := testing.AllocsPerRun(200, func() {
			if err := op(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s allocates %v times per call, want 0", name, allocs)
		}
	}
	must(t, st.Synchronize())
}

// A fault loses the context for good (in a child process: the fake's fault
// is process-wide, like a real GPU's).
func TestFakeFault(t *testing.T) {
	runChild(t, "TestFakeFaultChild", LibraryEnv+"="+fakeLib(t, "fake"))
}

func TestFakeFaultChild(t *testing.T) {
	if !isChild("TestFakeFaultChild") {
		t.Skip("runs in its own process, started by TestFakeFault")
	}
	b, err := Open()
	must(t, err)
	checkFault(t, b, fakePTX, "poke")
}

// checkFault launches kernel (one 8-byte pointer parameter, a store through
// it) at address 8 and checks that the context is lost for good: the error
// surfaces, matches ErrContextLost with the driver's CUresult, a callback
// enqueued before it gets it, and every later call returns it.
func checkFault(t *testing.T, b *Backend, image, kernel string) {
	d, err := b.open(0)
	must(t, err)
	m, err := d.LoadModule([]byte(image))
	must(t, err)
	f, err := m.Function(kernel)
	must(t, err)
	st, err := d.NewStream(0)
	must(t, err)
	p := allocFake(t, d, 1)
	ev, err := d.NewEvent(0)
	must(t, err)

	params := binary.LittleEndian.AppendUint64(nil, 8)
	t0 := time.Now()
	must(t, st.Launch(f, backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}, params))
	cb := make(chan error, 1)
	cbErr := st.Callback(func(err error) { cb <- err })
	syncErr := st.Synchronize()
	t.Logf("the fault surfaced %v after the launch: %v", time.Since(t0), syncErr)
	if !errors.Is(syncErr, backend.ErrContextLost) || !errors.Is(syncErr, v1.ErrDeviceLost) {
		t.Fatalf("Synchronize after the faulting launch = %v, want ErrContextLost", syncErr)
	}
	switch r := cuda.CUresult(v1.ResultOf(syncErr)); r {
	case cuda.CUDA_ERROR_ILLEGAL_ADDRESS, cuda.CUDA_ERROR_LAUNCH_FAILED:
	default:
		t.Errorf("CUresult of the lost context = %v, want CUDA_ERROR_ILLEGAL_ADDRESS (or LAUNCH_FAILED)", r)
	}
	if cbErr == nil {
		select {
		case err := <-cb:
			if !errors.Is(err, backend.ErrContextLost) {
				t.Errorf("callback after the fault got %v, want ErrContextLost", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the callback enqueued after the faulting launch never ran")
		}
	} else if !errors.Is(cbErr, backend.ErrContextLost) {
		t.Errorf("Callback = %v", cbErr)
	}
	if !errors.Is(d.Lost(), backend.ErrContextLost) {
		t.Errorf("Lost() = %v", d.Lost())
	}
	for name, err := range map[string]error{
		"Synchronize":    d.Synchronize(),
		"MemoryInfo":     func() error { _, _, err := d.MemoryInfo(); return err }(),
		"Reserve":        func() error { _, err := d.Reserve(d.gran, 0); return err }(),
		"NewStream":      func() error { _, err := d.NewStream(0); return err }(),
		"NewEvent":       func() error { _, err := d.NewEvent(0); return err }(),
		"LoadModule":     func() error { _, err := d.LoadModule([]byte(image)); return err }(),
		"AllocHost":      func() error { _, err := d.AllocHost(64); return err }(),
		"Launch":         st.Launch(f, backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}, binary.LittleEndian.AppendUint64(nil, uint64(p))),
		"CopyHtoD":       st.CopyHtoD(p, []byte{1}),
		"Memset":         st.Memset(p, 0, 1, 1),
		"Record":         st.Record(ev),
		"Query":          func() error { _, err := st.Query(); return err }(),
		"Event.Query":    func() error { _, err := ev.Query(); return err }(),
		"Function":       func() error { _, err := m.Function(kernel); return err }(),
		"Fence":          func() error { _, err := st.(backend.Fencer).Fence(); return err }(),
		"stream Destroy": st.Destroy(),
	} {
		if !errors.Is(err, backend.ErrContextLost) || v1.ResultOf(err) != v1.ResultOf(syncErr) {
			t.Errorf("%s after the fault = %v, want the lost context's error", name, err)
		}
	}
	if _, err := b.Open(0); !errors.Is(err, backend.ErrContextLost) {
		t.Errorf("Open of the lost device = %v", err)
	}
	must(t, d.Close())
	if _, err := b.Open(0); !errors.Is(err, backend.ErrContextLost) {
		t.Errorf("Open of the lost device after Close = %v", err)
	}
	// A new Backend value (a new dlopen of the same library) does not get the
	// device back either; on a real GPU the driver itself may refuse earlier.
	other, err := Open()
	switch {
	case err != nil:
		t.Logf("Open of the driver after the fault: %v", err)
	default:
		if _, err := other.Open(0); err == nil {
			t.Error("a new Backend opened the lost device")
		} else if !errors.Is(err, backend.ErrContextLost) {
			t.Logf("Open of the lost device through another Backend: %v", err)
		}
	}
}

// The pinned-memory classification decides the copy path: pinned memory is
// handed to the driver asynchronously, other memory synchronously.
func TestFakeHostClassification(t *testing.T) {
	_, d := openFakeDevice(t)
	h, err := d.AllocHost(4096)
	must(t, err)
	reg := mmapped(t, 8192)
	must(t, d.RegisterHost(reg))
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"AllocHost memory", h.Bytes(), true},
		{"part of it", h.Bytes()[100:200], true},
		{"registered memory", reg, true},
		{"its tail", reg[4096:], true},
		{"Go memory", make([]byte, 64), false},
		{"empty", nil, false},
	} {
		if got := d.host.pinned(tc.b); got != tc.want {
			t.Errorf("%s: pinned = %v, want %v", tc.name, got, tc.want)
		}
	}
	must(t, d.UnregisterHost(reg))
	must(t, h.Free())
	if d.host.pinned(reg) || d.host.pinned(h.Bytes()) {
		t.Fatal("still pinned after UnregisterHost and Free")
	}
}

// Close releases what the device still holds and leaves the fake's memory as
// it found it.
func TestFakeCloseReleasesEverything(t *testing.T) {
	b := openFake(t)
	d, err := b.open(0)
	must(t, err)
	free0, _, err := d.MemoryInfo()
	must(t, err)
	allocFake(t, d, 64<<20)
	_, err = d.CreateChunk(32 << 20) // never mapped
	must(t, err)
	_, err = d.AllocHost(1 << 20)
	must(t, err)
	must(t, d.RegisterHost(mmapped(t, 1<<20)))
	_, err = d.LoadModule([]byte(fakePTX))
	must(t, err)
	_, err = d.NewStream(0)
	must(t, err)
	_, err = d.NewEvent(0)
	must(t, err)
	must(t, d.Close())
	d2, err := b.open(0)
	must(t, err)
	defer d2.Close()
	free, _, err := d2.MemoryInfo()
	must(t, err)
	if free != free0 {
		t.Fatalf("free memory %d after Close and reopen, %d before", free, free0)
	}
	if len(d.chunks)+len(d.streams)+len(d.events)+len(d.modules)+len(d.hostAllocs) != 0 {
		t.Fatal("Close left objects in the device's sets")
	}
	if bytes.Contains([]byte(d2.Info().Name), []byte{0}) {
		t.Fatal("name holds a NUL")
	}
}

// mmapped returns n bytes of anonymous memory outside the Go heap, which
// RegisterHost may page-lock.
func mmapped(t testing.TB, n int) []byte {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	must(t, err)
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	return b
}
