package cuda

import (
	"bytes"
	"debug/elf"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/fatbin"
)

// jitLogSize is the JIT error log LoadModule captures (CU_JIT_ERROR_LOG_BUFFER).
const jitLogSize = 16 << 10

// numFuncAttrs is how many CUfunction_attribute values Function reads: those
// FuncAttributes holds (0 .. CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
const numFuncAttrs = int(cuda.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) + 1

// imageForDriver classifies a module image and returns the bytes to hand the
// driver: PTX text NUL-terminated (cuModuleLoadDataEx reads a C string), a
// cubin or fatbin as is. The driver reads an ELF or fatbin through its own
// headers, without a length, so their headers are checked against the input
// first: the driver never reads past the caller's bytes.
func imageForDriver(image []byte) ([]byte, error) {
	switch {
	case len(image) == 0:
		return nil, fmt.Errorf("empty image: %w", ErrInvalidImage)
	case fatbin.IsELF(image):
		if err := checkELF(image); err != nil {
			return nil, fmt.Errorf("cubin: %w: %v", ErrInvalidImage, err)
		}
		return image, nil
	case fatbin.IsFatbin(image):
		if _, err := fatbin.Parse(image); err != nil {
			return nil, fmt.Errorf("fatbin: %w", err)
		}
		return image, nil
	case fatbin.IsWrapper(image):
		return nil, fmt.Errorf("a fatbin wrapper (pass the fatbin it points to): %w", ErrInvalidImage)
	}
	text := bytes.TrimRight(image, "\x00")
	if !fatbin.IsPTX(text) || bytes.IndexByte(text, 0) >= 0 {
		return nil, ErrInvalidImage
	}
	if len(text) < len(image) {
		return image[:len(text)+1], nil // already NUL-terminated
	}
	out := make([]byte, len(text)+1)
	copy(out, text)
	return out, nil
}

// checkELF checks that an ELF's section and program headers, and the data
// they describe, lie inside it.
func checkELF(image []byte) error {
	f, err := fatbin.NewELFFile(image)
	if err != nil {
		return err
	}
	size := uint64(len(image))
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOBITS || s.Type == elf.SHT_NULL {
			continue
		}
		if s.Offset > size || size-s.Offset < s.FileSize {
			return fmt.Errorf("section %q [%#x, +%#x) is past the image's %d bytes", s.Name, s.Offset, s.FileSize, size)
		}
	}
	for _, p := range f.Progs {
		if p.Off > size || size-p.Off < p.Filesz {
			return fmt.Errorf("segment [%#x, +%#x) is past the image's %d bytes", p.Off, p.Filesz, size)
		}
	}
	return nil
}

// cString returns s NUL-terminated, or an error if s holds a NUL.
func cString(what, s string) ([]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("%s: empty name: %w", what, backend.ErrNotFound)
	}
	if bytes.IndexByte([]byte(s), 0) >= 0 {
		return nil, fmt.Errorf("%s %q: name holds a NUL: %w", what, s, backend.ErrInvalidArgument)
	}
	return append([]byte(s), 0), nil
}

// module is a loaded CUmodule: a backend.Module.
type module struct {
	dev  *Device
	h    hModule
	live liveness // Unload and Close end it

	mu      sync.Mutex
	funcs   map[string]*function
	globals map[string][2]uint64 // name → address, size
}

var _ backend.Module = (*module)(nil)

// LoadModule loads a PTX (text, NUL-terminated or not), cubin (ELF) or fatbin
// image with cuModuleLoadDataEx. When the driver rejects it (PTX that does
// not compile, no code for this GPU), the error carries the CUresult and the
// JIT's error log.
func (d *Device) LoadModule(image []byte) (backend.Module, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.live.exit()
	img, err := imageForDriver(image)
	if err != nil {
		return nil, fmt.Errorf("load module: %w", err)
	}
	log := make([]byte, jitLogSize)
	h, r := d.c.moduleLoad(img, log)
	if r != 0 {
		err := d.fail("load module", r)
		if n := bytes.IndexByte(log, 0); n > 0 {
			err = fmt.Errorf("%w; JIT error log:\n%s", err, bytes.TrimSpace(log[:n]))
		}
		return nil, err
	}
	m := &module{dev: d, h: h, funcs: map[string]*function{}, globals: map[string][2]uint64{}}
	d.mu.Lock()
	d.modules[m] = struct{}{}
	d.mu.Unlock()
	return m, nil
}

// enter admits a call on the module: it fails if the device is closed or
// lost or the module was unloaded. On success the caller must m.live.exit().
func (m *module) enter(what string) error {
	if !m.live.enter() {
		if m.dev.closed.Load() {
			return fmt.Errorf("%s: device %d: %w", what, m.dev.ordinal, ErrClosed)
		}
		return fmt.Errorf("%s: module was unloaded: %w", what, ErrInvalidHandle)
	}
	if err := m.dev.lostErr(); err != nil {
		m.live.exit()
		return err
	}
	return nil
}

// Function finds a kernel and reads its parameter layout
// (cuFuncGetParamInfo) and attributes (cuFuncGetAttribute).
func (m *module) Function(name string) (backend.Function, error) {
	if err := m.enter("function"); err != nil {
		return nil, err
	}
	defer m.live.exit()
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.funcs[name]; f != nil {
		return f, nil
	}
	cname, err := cString("function", name)
	if err != nil {
		return nil, err
	}
	h, attrs, params, r := m.dev.c.function(m.h, cname)
	if r != 0 {
		return nil, m.dev.fail(fmt.Sprintf("function %q", name), r)
	}
	f := &function{mod: m, name: name, h: h, params: params, paramSize: -1}
	if params != nil {
		f.paramSize = 0
		for _, p := range params {
			f.paramSize = max(f.paramSize, int(p.Offset)+int(p.Size))
		}
	}
	a := func(attr cuda.CUfunction_attribute) int { return int(attrs[attr]) }
	f.attrs = backend.FuncAttributes{
		MaxThreadsPerBlock:  a(cuda.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
		SharedSizeBytes:     a(cuda.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
		ConstSizeBytes:      a(cuda.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES),
		LocalSizeBytes:      a(cuda.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
		NumRegs:             a(cuda.CU_FUNC_ATTRIBUTE_NUM_REGS),
		PTXVersion:          a(cuda.CU_FUNC_ATTRIBUTE_PTX_VERSION),
		BinaryVersion:       a(cuda.CU_FUNC_ATTRIBUTE_BINARY_VERSION),
		MaxDynamicSharedMem: a(cuda.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
	}
	f.dynShared.Store(uint32(max(f.attrs.MaxDynamicSharedMem, 0)))
	m.funcs[name] = f
	return f, nil
}

// Global finds a module variable (cuModuleGetGlobal): its device address and
// size. Copies may then reach it.
func (m *module) Global(name string) (backend.DevicePtr, uint64, error) {
	if err := m.enter("global"); err != nil {
		return 0, 0, err
	}
	defer m.live.exit()
	m.mu.Lock()
	defer m.mu.Unlock()
	if g, ok := m.globals[name]; ok {
		return backend.DevicePtr(g[0]), g[1], nil
	}
	cname, err := cString("global", name)
	if err != nil {
		return 0, 0, err
	}
	p, size, r := m.dev.c.global(m.h, cname)
	if r != 0 {
		return 0, 0, m.dev.fail(fmt.Sprintf("global %q", name), r)
	}
	m.globals[name] = [2]uint64{p, size}
	m.dev.as.addGlobal(p, size, m)
	return backend.DevicePtr(p), size, nil
}

// Unload waits for the work queued in the context (kernels of this module
// may be among it), then unloads the module.
func (m *module) Unload() error {
	d := m.dev
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	if !m.live.end() {
		return fmt.Errorf("unload module: already unloaded: %w", ErrInvalidHandle)
	}
	d.mu.Lock()
	delete(d.modules, m)
	d.mu.Unlock()
	d.as.removeGlobals(m)
	if err := d.fail("unload module: synchronize", d.c.sync()); err != nil {
		return err
	}
	return d.fail("unload module", d.c.moduleUnload(m.h))
}

// function is a kernel: a backend.Function.
type function struct {
	mod       *module
	name      string
	h         hFunction
	params    []backend.Param
	paramSize int // bytes of the parameter buffer; -1 if the driver cannot say
	attrs     backend.FuncAttributes
	// dynShared is the dynamic shared memory a launch may ask for now
	// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), raised on demand.
	dynShared atomic.Uint32
}

var _ backend.Function = (*function)(nil)

func (f *function) Name() string { return f.name }

// Params is the parameter layout cuFuncGetParamInfo reports; nil on drivers
// before CUDA 12.4, which cannot report it.
func (f *function) Params() []backend.Param { return append([]backend.Param(nil), f.params...) }

func (f *function) Attributes() backend.FuncAttributes { return f.attrs }
