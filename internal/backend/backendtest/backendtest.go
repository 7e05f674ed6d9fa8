package backendtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
)

// Options configure Run.
type Options struct {
	// Ordinal is the device the suite opens (default 0).
	Ordinal int
	// Testdata is the repository's testdata directory; "" finds it by
	// walking up from the working directory.
	Testdata string
	// SkipKernels leaves out the subtests that run testdata's kernels, for a
	// test double that cannot execute PTX.
	SkipKernels bool
	// SASS says the backend runs cubins (SASS): the real GPU does, the
	// software GPU does not (it must refuse them as Unsupported).
	SASS bool
	// Logf, if set, receives diagnostics worth keeping from a run on real
	// hardware (timings, attributes); default t.Logf.
	Logf func(format string, args ...any)
}

// Run runs the suite on b as subtests of t. It opens and closes device
// Ordinal several times (lifecycle subtests), then keeps one open for the
// rest and closes it at the end.
func Run(t *testing.T, b backend.Backend, opts Options) {
	s := &suite{b: b, opts: opts}
	if s.opts.Logf == nil {
		s.opts.Logf = t.Logf
	}
	t.Run("Devices", s.testDevices)
	t.Run("OpenTwice", s.testOpenTwice)
	t.Run("Close", s.testClose)
	dev, err := b.Open(opts.Ordinal)
	if err != nil {
		t.Fatalf("Open(%d): %v", opts.Ordinal, err)
	}
	s.dev = dev
	defer func() {
		if err := dev.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	for _, st := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"Info", s.testInfo},
		{"VMMErrors", s.testVMMErrors},
		{"ReserveLayout", s.testReserveLayout},
		{"MemoryInfo", s.testMemoryInfo},
		{"SimpleAllocator", s.testSimpleAllocator},
		{"Aliasing", s.testAliasing},
		{"CopiesSpanChunks", s.testCopiesSpanChunks},
		{"MemsetErrors", s.testMemsetErrors},
		{"HostMemoryPaths", s.testHostMemoryPaths},
		{"HostMemoryErrors", s.testHostMemoryErrors},
		{"StreamOrder", s.testStreamOrder},
		{"CrossStreamWait", s.testCrossStreamWait},
		{"Events", s.testEvents},
		{"Callbacks", s.testCallbacks},
		{"Fences", s.testFences},
		{"LatestFence", s.testLatestFence},
		{"FenceWord", s.testFenceWord},
		{"StreamLifecycle", s.testStreamLifecycle},
		{"Concurrent", s.testConcurrent},
		{"InvalidImages", s.testInvalidImages},
		{"JITError", s.testJITError},
	} {
		t.Run(st.name, st.fn)
	}
	if opts.SkipKernels {
		return
	}
	for _, st := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"Vecadd", s.testVecadd},
		{"VecaddFatbin", s.testVecaddFatbin},
		{"Cubin", s.testCubin},
		{"ParamLayout", s.testParamLayout},
		{"FunctionAttributes", s.testFunctionAttributes},
		{"Reduce", s.testReduce},
		{"Matmul", s.testMatmul},
		{"AliasingKernel", s.testAliasingKernel},
		{"MappedHost", s.testMappedHost},
		{"Global", s.testGlobal},
		{"LaunchErrors", s.testLaunchErrors},
		{"Unload", s.testUnload},
	} {
		t.Run(st.name, st.fn)
	}
}

type suite struct {
	b    backend.Backend
	dev  backend.Device
	opts Options
}

func (s *suite) testDevices(t *testing.T) {
	infos, err := s.b.Devices()
	must(t, err)
	if len(infos) == 0 || s.opts.Ordinal >= len(infos) {
		t.Fatalf("%d devices, want ordinal %d among them", len(infos), s.opts.Ordinal)
	}
	uuids := map[[16]byte]int{}
	for i, info := range infos {
		a := info.Attributes
		switch {
		case info.Ordinal != i:
			t.Errorf("device %d: Ordinal %d", i, info.Ordinal)
		case info.Name == "" || info.PCIBusID == "":
			t.Errorf("device %d: Name %q, PCIBusID %q", i, info.Name, info.PCIBusID)
		case info.TotalMemory == 0:
			t.Errorf("device %d: TotalMemory 0", i)
		case len(a) != int(cuda.CU_DEVICE_ATTRIBUTE_MAX):
			t.Errorf("device %d: %d attributes, want %d (every CUdevice_attribute by number)", i, len(a), cuda.CU_DEVICE_ATTRIBUTE_MAX)
		case a[0] != 0:
			t.Errorf("device %d: attribute 0 (no such attribute) = %d", i, a[0])
		case info.ComputeMajor <= 0 || int(a[cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR]) != info.ComputeMajor ||
			int(a[cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR]) != info.ComputeMinor:
			t.Errorf("device %d: compute capability %d.%d, attributes %d.%d", i, info.ComputeMajor, info.ComputeMinor,
				a[cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR], a[cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR])
		case info.SMCount <= 0 || int(a[cuda.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT]) != info.SMCount:
			t.Errorf("device %d: %d SMs, attribute %d", i, info.SMCount, a[cuda.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT])
		}
		if j, ok := uuids[info.UUID]; ok {
			t.Errorf("devices %d and %d share UUID %x", j, i, info.UUID)
		}
		uuids[info.UUID] = i
		s.opts.Logf("device %d: %q, %d.%d, %d SMs, %d MiB, bus %s, uuid %x, driver %d",
			i, info.Name, info.ComputeMajor, info.ComputeMinor, info.SMCount, info.TotalMemory>>20, info.PCIBusID, info.UUID, s.b.DriverVersion())
	}
	if s.b.DriverVersion() <= 0 {
		t.Errorf("DriverVersion %d", s.b.DriverVersion())
	}
}

func (s *suite) testOpenTwice(t *testing.T) {
	d, err := s.b.Open(s.opts.Ordinal)
	must(t, err)
	defer d.Close()
	if _, err := s.b.Open(s.opts.Ordinal); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Errorf("second Open = %v, want ErrInvalidArgument", err)
	}
	infos, err := s.b.Devices()
	must(t, err)
	for _, ord := range []int{-1, len(infos)} {
		if _, err := s.b.Open(ord); !errors.Is(err, backend.ErrNoDevice) {
			t.Errorf("Open(%d) = %v, want ErrNoDevice", ord, err)
		}
	}
}

// Close frees everything, later calls fail with an invalid-handle error, and
// the ordinal opens again.
func (s *suite) testClose(t *testing.T) {
	d, err := s.b.Open(s.opts.Ordinal)
	must(t, err)
	p := alloc(t, d, d.Granularity())
	st, err := d.NewStream(0)
	must(t, err)
	ev, err := d.NewEvent(0)
	must(t, err)
	must(t, st.Memset(p, 0x11, 1, 64))
	must(t, st.Record(ev))
	cb := make(chan error, 1)
	must(t, st.Callback(func(err error) { cb <- err }))
	must(t, d.Close())
	// Work queued at Close either completes (a real GPU cannot abort it) or
	// is dropped (the sim); either way its callback runs, once.
	if err := <-cb; err != nil && v1.CodeOf(err) != v1.CodeInvalidHandle {
		t.Errorf("callback enqueued before Close ran with %v, want nil or a closed-device error", err)
	}
	for name, err := range map[string]error{
		"Close":       d.Close(),
		"Reserve":     func() error { _, err := d.Reserve(d.Granularity(), 0); return err }(),
		"NewStream":   func() error { _, err := d.NewStream(0); return err }(),
		"Memset":      st.Memset(p, 0, 1, 1),
		"Synchronize": st.Synchronize(),
		"Event":       ev.Synchronize(),
		"Destroy":     st.Destroy(),
	} {
		if v1.CodeOf(err) != v1.CodeInvalidHandle {
			t.Errorf("%s after Close = %v, want an invalid-handle error", name, err)
		}
	}
	d2, err := s.b.Open(s.opts.Ordinal)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	must(t, d2.Close())
}

func (s *suite) testInfo(t *testing.T) {
	infos, err := s.b.Devices()
	must(t, err)
	got, want := s.dev.Info(), infos[s.opts.Ordinal]
	if got.UUID != want.UUID || got.Name != want.Name || len(got.Attributes) != len(want.Attributes) {
		t.Fatalf("Info %+v differs from Devices %+v", got, want)
	}
	g := s.dev.Granularity()
	if g < 4096 || g&(g-1) != 0 {
		t.Fatalf("Granularity %d is not a power of two of at least 4 KiB", g)
	}
	least, greatest := s.dev.StreamPriorityRange()
	if greatest > least {
		t.Fatalf("StreamPriorityRange = %d, %d: greatest (most urgent) must not be above least", least, greatest)
	}
	s.opts.Logf("granularity %d KiB, stream priorities %d..%d", g>>10, least, greatest)
}

// testdata returns a file of the repository's testdata directory.
func (s *suite) testdata(t testing.TB, rel string) []byte {
	t.Helper()
	dir := s.opts.Testdata
	if dir == "" {
		var err error
		if dir, err = FindTestdata(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FindTestdata returns the repository's testdata directory: the first
// testdata/kernels found walking up from the working directory.
func FindTestdata() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		td := filepath.Join(dir, "testdata")
		if _, err := os.Stat(filepath.Join(td, "kernels", "vecadd.ptx")); err == nil {
			return td, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no testdata/kernels/vecadd.ptx above the working directory")
		}
		dir = parent
	}
}
