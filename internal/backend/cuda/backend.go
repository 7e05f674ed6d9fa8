package cuda

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
)

// LibraryEnv names the environment variable that overrides which driver
// library Open loads (a file name for dlopen, or a path).
const LibraryEnv = "GPUOS_LIBCUDA"

// DefaultLibrary is what Open loads by default, by soname: the dynamic linker
// finds the installed driver. FallbackLibrary is tried if that fails: where
// the NVIDIA container toolkit puts the driver.
const (
	DefaultLibrary  = "libcuda.so.1"
	FallbackLibrary = "/usr/local/nvidia/lib64/libcuda.so.1"
)

// Backend is the real NVIDIA driver as a backend.Backend. It stands for the
// process: each device has at most one context in it, and a device whose
// context was lost stays lost for as long as the process lives.
type Backend struct {
	lib     *lib
	path    string
	version int
	count   int

	infoOnce sync.Once
	infos    []backend.DeviceInfo
	infoErr  error
}

var _ backend.Backend = (*Backend)(nil)

// proc is what the process holds: the contexts open and the devices lost,
// by device UUID (a fault poisons the process's hold on that GPU, whichever
// Backend value opened it).
var proc struct {
	mu   sync.Mutex
	gen  uint64               // last context generation handed out
	open map[[16]byte]*Device // open devices
	lost map[[16]byte]error   // the error that lost each lost device
}

// Open loads the NVIDIA driver library, initializes it and counts its
// devices. The library is $GPUOS_LIBCUDA if set, else libcuda.so.1, else
// FallbackLibrary. It returns an error, never panics, on a machine without a
// driver (ErrNoDriver), with gpuos's own libcuda shim in the way (ErrShim),
// with a driver too old to have an essential entry point (ErrMissingSymbol)
// or without devices (backend.ErrNoDevice).
func Open() (*Backend, error) {
	if !haveCgo {
		return nil, ErrNoCgo
	}
	startSlowLog()
	paths := []string{DefaultLibrary, FallbackLibrary}
	if p := os.Getenv(LibraryEnv); p != "" {
		paths = []string{p}
	}
	// Every candidate is tried (the first may be gpuos's shim or a toolkit
	// stub on the library path); if none works, the error says why for each.
	var errs []error
	var missing []string
	for _, p := range paths {
		b, err := openPath(p)
		if err == nil {
			return b, nil
		}
		var nd noDriverError
		if errors.As(err, &nd) {
			missing = append(missing, nd.detail)
			continue
		}
		errs = append(errs, err)
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("%w: %s", ErrNoDriver, strings.Join(missing, "; ")))
	}
	return nil, errors.Join(errs...)
}

// noDriverError: dlopen could not load a candidate; detail is dlerror's text.
type noDriverError struct{ detail string }

func (e noDriverError) Error() string { return ErrNoDriver.Error() + ": " + e.detail }
func (e noDriverError) Unwrap() error { return ErrNoDriver }

// openPath loads one library and initializes it.
func openPath(path string) (*Backend, error) {
	l, status, detail := openLib(path)
	switch status {
	case openOK:
	case openShim:
		return nil, fmt.Errorf("load %s: %w", path, ErrShim)
	case openMissing:
		return nil, fmt.Errorf("load %s: %s: %w", path, detail, ErrMissingSymbol)
	default:
		if !strings.Contains(detail, path) {
			detail = path + ": " + detail
		}
		return nil, noDriverError{detail}
	}
	b, err := initLib(l)
	if err != nil {
		l.close()
		return nil, fmt.Errorf("initialize %s: %w", path, err)
	}
	b.path = l.path()
	if b.path == "" {
		b.path = path
	}
	return b, nil
}

func initLib(l *lib) (*Backend, error) {
	if r := l.init(); r != 0 {
		err := resultError("cuInit", r)
		if r == cuda.CUDA_ERROR_NO_DEVICE {
			err = fmt.Errorf("%w: %w", backend.ErrNoDevice, err)
		}
		return nil, err
	}
	version, r := l.driverVersion()
	if r != 0 {
		return nil, resultError("cuDriverGetVersion", r)
	}
	count, r := l.deviceCount()
	if r != 0 {
		return nil, resultError("cuDeviceGetCount", r)
	}
	if count <= 0 {
		return nil, fmt.Errorf("the driver reports no devices: %w", backend.ErrNoDevice)
	}
	return &Backend{lib: l, version: version, count: count}, nil
}

// Name is "cuda".
func (b *Backend) Name() string { return "cuda" }

// DriverVersion is cuDriverGetVersion's answer (13000 for CUDA 13.0).
func (b *Backend) DriverVersion() int { return b.version }

// LibraryPath is the driver library the backend loaded, as the dynamic linker
// resolved it.
func (b *Backend) LibraryPath() string { return b.path }

// MissingEntryPoints lists the entry points the backend uses that this
// driver library lacks (an older driver); the operations that need them
// return ErrMissingSymbol. Empty on driver 580.
func (b *Backend) MissingEntryPoints() []string {
	have := map[string]bool{}
	for i := range symbolCount {
		have[symbolName(i)] = b.lib.has(i)
	}
	var out []string
	for i := range symbolCount {
		name := symbolName(i)
		if !have[name] && !have[fallbacks[name]] && !isFallback[name] {
			out = append(out, name)
		}
	}
	return out
}

// fallbacks are the older entry points the backend uses when the driver lacks
// the newer one: the same call, or (cuCtxSynchronize) its current-context form.
var fallbacks = map[string]string{
	"cuCtxSynchronize_v2":   "cuCtxSynchronize",
	"cuEventElapsedTime_v2": "cuEventElapsedTime",
}

var isFallback = map[string]bool{"cuCtxSynchronize": true, "cuEventElapsedTime": true}

// Devices describes every device. Attributes holds every CUdevice_attribute
// from 1 to CU_DEVICE_ATTRIBUTE_MAX-1; one this driver does not know is 0.
func (b *Backend) Devices() ([]backend.DeviceInfo, error) {
	b.infoOnce.Do(func() {
		for i := range b.count {
			info, err := b.deviceInfo(i)
			if err != nil {
				b.infoErr = err
				return
			}
			b.infos = append(b.infos, info)
		}
	})
	if b.infoErr != nil {
		return nil, b.infoErr
	}
	out := make([]backend.DeviceInfo, len(b.infos))
	for i, info := range b.infos {
		info.Attributes = append([]int32(nil), info.Attributes...)
		out[i] = info
	}
	return out, nil
}

func (b *Backend) deviceInfo(ordinal int) (backend.DeviceInfo, error) {
	raw, failed, r := b.lib.deviceInfo(ordinal, int(cuda.CU_DEVICE_ATTRIBUTE_MAX))
	if r != 0 {
		return backend.DeviceInfo{}, resultError(fmt.Sprintf("describe device %d: %s", ordinal, failed), r)
	}
	a := raw.attrs
	return backend.DeviceInfo{
		Ordinal:      ordinal,
		Name:         raw.name,
		UUID:         raw.uuid,
		PCIBusID:     strings.ToLower(raw.busID),
		TotalMemory:  raw.total,
		ComputeMajor: int(a[cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR]),
		ComputeMinor: int(a[cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR]),
		SMCount:      int(a[cuda.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT]),
		Attributes:   a,
	}, nil
}

// Open retains the device's primary context: the context the CUDA runtime
// and the libraries built on it (cuBLAS, cuDNN) use, so any of them loaded
// into the driver process later shares it. A process opens a device once
// (backend.Backend); after Close it can open it again, unless a fatal fault
// lost it (on an H100 only a new process recovers).
func (b *Backend) Open(ordinal int) (backend.Device, error) {
	d, err := b.open(ordinal)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (b *Backend) open(ordinal int) (*Device, error) {
	if ordinal < 0 || ordinal >= b.count {
		return nil, fmt.Errorf("open device %d of %d: %w", ordinal, b.count, backend.ErrNoDevice)
	}
	infos, err := b.Devices()
	if err != nil {
		return nil, fmt.Errorf("open device %d: %w", ordinal, err)
	}
	uuid := infos[ordinal].UUID
	proc.mu.Lock()
	defer proc.mu.Unlock()
	if err := proc.lost[uuid]; err != nil {
		return nil, fmt.Errorf("open device %d: %w", ordinal, err)
	}
	if proc.open[uuid] != nil {
		return nil, fmt.Errorf("open device %d: already open in this process: %w", ordinal, backend.ErrInvalidArgument)
	}
	flags, err := schedFlags()
	if err != nil {
		return nil, fmt.Errorf("open device %d: %w", ordinal, err)
	}
	proc.gen++
	c, r := b.lib.openCtx(ordinal, proc.gen, flags)
	if r != 0 {
		return nil, resultError(fmt.Sprintf("open device %d: retain its primary context", ordinal), r)
	}
	info := infos[ordinal]
	info.Attributes = append([]int32(nil), info.Attributes...)
	d, err := newDevice(b, ordinal, info, c)
	if err != nil {
		c.close()
		return nil, fmt.Errorf("open device %d: %w", ordinal, err)
	}
	if proc.open == nil {
		proc.open = map[[16]byte]*Device{}
		proc.lost = map[[16]byte]error{}
	}
	proc.open[uuid] = d
	return d, nil
}

// closed forgets an open device.
func (b *Backend) closed(d *Device) {
	proc.mu.Lock()
	if proc.open[d.info.UUID] == d {
		delete(proc.open, d.info.UUID)
	}
	proc.mu.Unlock()
}

// markLost records that a device's context was lost for good.
func markLost(uuid [16]byte, err error) {
	proc.mu.Lock()
	if proc.lost == nil {
		proc.open = map[[16]byte]*Device{}
		proc.lost = map[[16]byte]error{}
	}
	if proc.lost[uuid] == nil {
		proc.lost[uuid] = err
	}
	proc.mu.Unlock()
}
