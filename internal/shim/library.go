package shim

import (
	"bytes"
	"os"
	"sync"
	"sync/atomic"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// Libraries (CUlibrary) are CUDA's context-independent modules: since CUDA
// 12 the runtime loads its fat binaries with cuLibraryLoadData before any
// context exists and launches CUkernels, which stand for a kernel in every
// context. gpuos gives each device one session, which plays the part of its
// contexts, so a library is loaded into a device's session the first time
// something needs its code there — a CUkernel's function, a launch, a
// global, the library's module — and stays loaded until cuLibraryUnload.
// Kernel names are checked against the image itself (kernelnames.go), so
// that looking every kernel up, as the runtime does at start-up, loads
// nothing: a library whose kernels are never launched (most of cuBLAS's)
// never reaches the daemon, and an image the daemon would refuse fails
// where it is first used, as with CUDA's lazy loading — except machine code
// for a guarded tenant, refused at load (trust.go).

// library is a CUlibrary.
type library struct {
	h     uint64
	label string
	// image is the library's code: a copy, or the application's own memory
	// when it promised to keep it (CU_LIBRARY_BINARY_IS_PRESERVED).
	image []byte

	names     sync.Once
	kernelSet map[string]bool // the kernels the image defines; nil: the image does not say
	kernelIDs []string        // the same, in the image's order

	mu      sync.Mutex // guards the fields below; held while loading into a device
	loads   []libLoad  // by device ordinal
	kernels map[string]*kernel
	gone    bool
}

// libLoad is a library's code in one device's session: the module, or why it
// could not be loaded (remembered, so that a refused image is not sent again
// for every kernel of it).
type libLoad struct {
	mod *module
	r   Result
}

// kernel is a CUkernel: a kernel of a library, usable wherever a CUfunction
// is, on any device.
type kernel struct {
	h    uint64
	lib  *library
	name string
	fns  []atomic.Pointer[function] // by device ordinal, once looked up there
}

// LibraryOptions are cuLibraryLoadData's library options.
type LibraryOptions struct {
	// Preserved: the application keeps the image in place until
	// cuLibraryUnload (CU_LIBRARY_BINARY_IS_PRESERVED), so it is not copied.
	Preserved bool
}

// ParseLibraryOptions reads cuLibraryLoadData's option arrays: unknown
// options are CUDA_ERROR_INVALID_VALUE; CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_
// AND_DATA_TABLE (for unified function pointers, which gpuos refuses where
// they are used) is accepted and ignored.
func ParseLibraryOptions(opts []cu.CUlibraryOption, vals []uintptr) (LibraryOptions, Result) {
	var o LibraryOptions
	if len(opts) != len(vals) {
		return o, cu.CUDA_ERROR_INVALID_VALUE
	}
	for i, opt := range opts {
		switch opt {
		case cu.CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE:
		case cu.CU_LIBRARY_BINARY_IS_PRESERVED:
			// The value is a flag passed as the pointer itself.
			o.Preserved = vals[i] != 0
		default:
			return o, cu.CUDA_ERROR_INVALID_VALUE
		}
	}
	return o, cu.CUDA_SUCCESS
}

// LibraryLoadData is cuLibraryLoadData. It needs no context: the image is
// checked and kept, and loaded into a device's session when first needed
// there.
func (d *Driver) LibraryLoadData(t Thread, code uintptr, o LibraryOptions) (uint64, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	data, r := d.readImage(code, "cuLibraryLoadData")
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if r := d.admitImage(data, "cuLibraryLoadData"); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if !o.Preserved {
		data = bytes.Clone(data)
	}
	return d.newLibrary(data, "cuLibraryLoadData"), cu.CUDA_SUCCESS
}

// LibraryLoadFromFile is cuLibraryLoadFromFile.
func (d *Driver) LibraryLoadFromFile(t Thread, path string, o LibraryOptions) (uint64, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if o.Preserved {
		return 0, cu.CUDA_ERROR_INVALID_VALUE // as documented: the file's bytes are the driver's
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, cu.CUDA_ERROR_FILE_NOT_FOUND
	}
	if len(data) == 0 {
		return 0, cu.CUDA_ERROR_INVALID_IMAGE
	}
	if r := d.admitImage(data, "cuLibraryLoadFromFile"); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return d.newLibrary(data, path), cu.CUDA_SUCCESS
}

func (d *Driver) newLibrary(data []byte, label string) uint64 {
	l := &library{label: label, image: data, loads: make([]libLoad, len(d.devices)), kernels: make(map[string]*kernel)}
	l.h = d.libraries.add(l)
	return l.h
}

func (d *Driver) library(h uint64) (*library, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return nil, r
	}
	l := d.libraries.get(h)
	if l == nil {
		return nil, cu.CUDA_ERROR_INVALID_HANDLE
	}
	return l, cu.CUDA_SUCCESS
}

// lookupDevice is the device that a call on a context-independent object
// (a library, a kernel) that names none means: the calling thread's
// context's, else the first device whose session is open, else device 0.
func (d *Driver) lookupDevice(t Thread) (*device, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return nil, r
	}
	if c := d.thread(t).top(); c != nil && !c.dead.Load() {
		return c.dev, cu.CUDA_SUCCESS
	}
	for _, dv := range d.devices {
		if dv.opened() {
			return dv, cu.CUDA_SUCCESS
		}
	}
	return d.devices[0], cu.CUDA_SUCCESS
}

// kernelNames lists what the library's image defines, for device dv's
// architecture, working it out once.
func (l *library) kernelNames(dv *device) (set map[string]bool, ordered []string) {
	l.names.Do(func() {
		names, ok := imageKernels(l.image, int(dv.info.ComputeMajor), int(dv.info.ComputeMinor))
		if !ok {
			return
		}
		l.kernelIDs = names
		l.kernelSet = make(map[string]bool, len(names))
		for _, n := range names {
			l.kernelSet[n] = true
		}
	})
	return l.kernelSet, l.kernelIDs
}

// libraryModule returns the library's module on device dv, loading it there
// the first time.
func (d *Driver) libraryModule(l *library, dv *device) (*module, Result) {
	s, r := d.session(dv) // before l.mu: device.mu comes first
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone {
		return nil, cu.CUDA_ERROR_INVALID_HANDLE
	}
	ld := &l.loads[dv.ordinal]
	if ld.mod == nil && ld.r == cu.CUDA_SUCCESS {
		ld.mod, ld.r = d.loadBytes(nil, s, l, l.image, l.label)
	}
	return ld.mod, ld.r
}

// LibraryUnload is cuLibraryUnload.
func (d *Driver) LibraryUnload(h uint64) Result {
	l, r := d.library(h)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	return d.unloadLibrary(l)
}

func (d *Driver) unloadLibrary(l *library) Result {
	if d.libraries.remove(l.h) == nil {
		return cu.CUDA_ERROR_INVALID_HANDLE
	}
	l.mu.Lock()
	l.gone = true
	for _, k := range l.kernels {
		d.kernels.remove(k.h)
	}
	l.kernels = nil
	loads := l.loads
	l.loads = nil
	l.mu.Unlock()
	res := cu.CUDA_SUCCESS
	for _, ld := range loads {
		if ld.mod != nil {
			if r := d.unloadModule(ld.mod); r != cu.CUDA_SUCCESS && res == cu.CUDA_SUCCESS {
				res = r
			}
		}
	}
	return res
}

// LibraryGetKernel is cuLibraryGetKernel: CUDA_ERROR_NOT_FOUND for a name
// the image does not define. The same name gives the same handle. It loads
// nothing unless the image does not say which kernels it has.
func (d *Driver) LibraryGetKernel(t Thread, h uint64, name string) (uint64, Result) {
	l, r := d.library(h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	k, r := d.libraryKernel(t, l, name)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return k.h, cu.CUDA_SUCCESS
}

func (d *Driver) libraryKernel(t Thread, l *library, name string) (*kernel, Result) {
	dv, r := d.lookupDevice(t)
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
	l.mu.Lock()
	if l.gone {
		l.mu.Unlock()
		return nil, cu.CUDA_ERROR_INVALID_HANDLE
	}
	k := l.kernels[name]
	l.mu.Unlock()
	if k != nil {
		return k, cu.CUDA_SUCCESS
	}
	var f *function
	if set, _ := l.kernelNames(dv); set != nil {
		if !set[name] {
			return nil, cu.CUDA_ERROR_NOT_FOUND
		}
	} else {
		// The image does not say: the daemon does, once it has loaded it.
		m, r := d.libraryModule(l, dv)
		if r != cu.CUDA_SUCCESS {
			return nil, r
		}
		if f, r = d.moduleFunction(m, name); r != cu.CUDA_SUCCESS {
			return nil, r
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone {
		return nil, cu.CUDA_ERROR_INVALID_HANDLE
	}
	if k := l.kernels[name]; k != nil {
		return k, cu.CUDA_SUCCESS
	}
	k = &kernel{lib: l, name: name, fns: make([]atomic.Pointer[function], len(d.devices))}
	if f != nil {
		k.fns[dv.ordinal].Store(f)
	}
	k.h = d.kernels.add(k)
	l.kernels[name] = k
	return k, cu.CUDA_SUCCESS
}

// LibraryKernels lists a library's kernels (cuLibraryGetKernelCount,
// cuLibraryEnumerateKernels).
func (d *Driver) LibraryKernels(t Thread, h uint64) ([]uint64, Result) {
	l, r := d.library(h)
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
	dv, r := d.lookupDevice(t)
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
	_, names := l.kernelNames(dv)
	if names == nil {
		m, r := d.libraryModule(l, dv)
		if r != cu.CUDA_SUCCESS {
			return nil, r
		}
		names = m.prog.Kernels()
	}
	out := make([]uint64, 0, len(names))
	for _, name := range names {
		k, r := d.libraryKernel(t, l, name)
		if r != cu.CUDA_SUCCESS {
			return nil, r
		}
		out = append(out, k.h)
	}
	return out, cu.CUDA_SUCCESS
}

// LibraryGetModule is cuLibraryGetModule: the library's module on the
// calling thread's device.
func (d *Driver) LibraryGetModule(t Thread, h uint64) (uint64, Result) {
	l, r := d.library(h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	dv, r := d.lookupDevice(t)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	m, r := d.libraryModule(l, dv)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return m.h, cu.CUDA_SUCCESS
}

// LibraryGetGlobal is cuLibraryGetGlobal: the variable on the calling
// thread's device.
func (d *Driver) LibraryGetGlobal(t Thread, h uint64, name string) (addr, size uint64, r Result) {
	mh, r := d.LibraryGetModule(t, h)
	if r != cu.CUDA_SUCCESS {
		return 0, 0, r
	}
	return d.ModuleGetGlobal(mh, name)
}

func (d *Driver) kernel(h uint64) (*kernel, Result) {
	if k := d.kernels.get(h); k != nil {
		return k, cu.CUDA_SUCCESS
	}
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return nil, r
	}
	return nil, cu.CUDA_ERROR_INVALID_HANDLE
}

// kernelFunction returns kernel k's function on device dv, loading the
// library there if need be.
func (d *Driver) kernelFunction(k *kernel, dv *device) (*function, Result) {
	if f := k.fns[dv.ordinal].Load(); f != nil {
		return f, cu.CUDA_SUCCESS
	}
	m, r := d.libraryModule(k.lib, dv)
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
	f, r := d.moduleFunction(m, k.name)
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
	k.fns[dv.ordinal].Store(f)
	return f, cu.CUDA_SUCCESS
}

// KernelGetFunction is cuKernelGetFunction: the kernel's function on the
// calling thread's device.
func (d *Driver) KernelGetFunction(t Thread, h uint64) (uint64, Result) {
	k, r := d.kernel(h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	dv, r := d.lookupDevice(t)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	f, r := d.kernelFunction(k, dv)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return f.h, cu.CUDA_SUCCESS
}

// KernelGetLibrary is cuKernelGetLibrary.
func (d *Driver) KernelGetLibrary(h uint64) (uint64, Result) {
	k, r := d.kernel(h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return k.lib.h, cu.CUDA_SUCCESS
}

// Device is a device ordinal for the calls that name one (cuKernelGetAttribute
// and friends); AnyDevice means the calling thread's.
const AnyDevice = -1

// function returns the function h names: a CUfunction, or a CUkernel's
// function on device dev (AnyDevice: the calling thread's, see lookupDevice).
func (d *Driver) function(t Thread, h uint64, dev int32) (*function, Result) {
	if handleKind(h) == kindKernel {
		k, r := d.kernel(h)
		if r != cu.CUDA_SUCCESS {
			return nil, r
		}
		var dv *device
		if dev == AnyDevice {
			dv, r = d.lookupDevice(t)
		} else {
			dv, r = d.device(dev)
		}
		if r != cu.CUDA_SUCCESS {
			return nil, r
		}
		return d.kernelFunction(k, dv)
	}
	if f := d.functions.get(h); f != nil {
		return f, cu.CUDA_SUCCESS
	}
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return nil, r
	}
	return nil, cu.CUDA_ERROR_INVALID_HANDLE
}
