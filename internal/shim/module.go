package shim

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// module is a loaded module image (CUmodule). A library's image, loaded
// into a device's session, is one too: it belongs to no context.
type module struct {
	h    uint64
	ctx  *ctxObj // the context that loaded it; nil for a library's module
	dev  *device
	sess *session
	lib  *library // the library it is the code of, or nil
	prog *client.Program
	name string

	mu    sync.Mutex // guards funcs
	funcs map[string]*function
}

// function is a kernel of a module (CUfunction): the daemon's kernel handle,
// its parameter layout and attributes.
type function struct {
	h         uint64
	mod       *module
	name      string
	k         *client.Kernel
	info      v1.KernelInfo
	paramSize uint32

	threads      uint32        // the most threads a block may have (maxThreads)
	maxDynShared atomic.Uint32 // dynamic shared memory a launch may ask for

	mu          sync.Mutex // guards the attributes below
	carveout    int32
	cacheConfig cu.CUfunc_cache
}

// loadImage loads the module image at addr in the current context.
func (d *Driver) loadImage(t Thread, addr uintptr, label string) (*module, Result) {
	c, s, r := d.currentSession(t)
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
	data, r := d.readImage(addr, label)
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
	return d.loadBytes(c, s, nil, data, label)
}

// readImage returns the module image at addr, in the application's memory.
func (d *Driver) readImage(addr uintptr, label string) ([]byte, Result) {
	img, err := findImage(rawMem{}, uint64(addr))
	if err != nil {
		d.log.Printf("%s: %v", label, err)
		return nil, cu.CUDA_ERROR_INVALID_IMAGE
	}
	data := hostBytes(uintptr(img.addr), img.size)
	if img.kind == imagePTX && !bytes.Contains(data[:min(len(data), 4096)], []byte(".version")) {
		d.log.Printf("%s: text that is not PTX (no .version directive)", label)
		return nil, cu.CUDA_ERROR_INVALID_IMAGE
	}
	return data, cu.CUDA_SUCCESS
}

// loadBytes loads an image held in data (which is only read during the call)
// into session s, for context c or library l (one of them nil).
func (d *Driver) loadBytes(c *ctxObj, s *session, l *library, data []byte, label string) (*module, Result) {
	data, r := d.fitImage(s.dev, data, label)
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
	p, err := s.s.LoadProgram(bg, data, label)
	if err != nil {
		return nil, d.report(opLoad, err) // the error names the label
	}
	m := &module{ctx: c, dev: s.dev, sess: s, lib: l, prog: p, name: label, funcs: make(map[string]*function)}
	m.h = d.modules.add(m)
	return m, cu.CUDA_SUCCESS
}

// ModuleLoadData is cuModuleLoadData, cuModuleLoadDataEx and
// cuModuleLoadFatBinary: PTX, cubin, fat binary or fat binary wrapper, as the
// image's contents say.
func (d *Driver) ModuleLoadData(t Thread, image uintptr) (uint64, Result) {
	m, r := d.loadImage(t, image, "cuModuleLoadData")
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return m.h, cu.CUDA_SUCCESS
}

// ModuleLoad is cuModuleLoad: an image file.
func (d *Driver) ModuleLoad(t Thread, path string) (uint64, Result) {
	c, s, r := d.currentSession(t)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, cu.CUDA_ERROR_FILE_NOT_FOUND
	}
	m, r := d.loadBytes(c, s, nil, data, path)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return m.h, cu.CUDA_SUCCESS
}

func (d *Driver) module(h uint64) (*module, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return nil, r
	}
	m := d.modules.get(h)
	if m == nil {
		return nil, cu.CUDA_ERROR_INVALID_HANDLE
	}
	return m, cu.CUDA_SUCCESS
}

// ModuleUnload is cuModuleUnload. Modules of libraries go with the library.
func (d *Driver) ModuleUnload(h uint64) Result {
	m, r := d.module(h)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if m.lib != nil {
		return cu.CUDA_ERROR_INVALID_HANDLE
	}
	return d.unloadModule(m)
}

func (d *Driver) unloadModule(m *module) Result {
	if d.modules.remove(m.h) == nil {
		return cu.CUDA_ERROR_INVALID_HANDLE
	}
	m.mu.Lock()
	for _, f := range m.funcs {
		d.functions.remove(f.h)
	}
	m.funcs = nil
	m.mu.Unlock()
	d.mem.forgetModule(m)
	// Closing the program revokes its kernels in the daemon.
	return d.fail(m.prog.Close())
}

// ModuleGetFunction is cuModuleGetFunction: CUDA_ERROR_NOT_FOUND for a name
// the module does not define. The same name gives the same handle.
func (d *Driver) ModuleGetFunction(h uint64, name string) (uint64, Result) {
	m, r := d.module(h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	f, r := d.moduleFunction(m, name)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return f.h, cu.CUDA_SUCCESS
}

func (d *Driver) moduleFunction(m *module, name string) (*function, Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.funcs == nil {
		return nil, cu.CUDA_ERROR_INVALID_HANDLE
	}
	if f := m.funcs[name]; f != nil {
		return f, cu.CUDA_SUCCESS
	}
	k, err := m.prog.Kernel(bg, name)
	if err != nil {
		return nil, d.fail(err)
	}
	info := k.Info()
	f := &function{mod: m, name: name, k: k, info: info, carveout: -1}
	for _, p := range info.Params {
		f.paramSize = max(f.paramSize, p.Offset+p.Size)
	}
	f.maxDynShared.Store(defaultDynShared(m.dev, info))
	f.threads = maxThreads(m.dev, info)
	f.h = d.functions.add(f)
	m.funcs[name] = f
	return f, cu.CUDA_SUCCESS
}

// ModuleGetGlobal is cuModuleGetGlobal: the address and size of a
// module-scope variable, which copies and kernels may then use.
func (d *Driver) ModuleGetGlobal(h uint64, name string) (addr, size uint64, r Result) {
	m, r := d.module(h)
	if r != cu.CUDA_SUCCESS {
		return 0, 0, r
	}
	addr, size, err := m.prog.Global(bg, name)
	if err != nil {
		return 0, 0, d.fail(err)
	}
	if size > 0 {
		d.mem.insert(&alloc{base: addr, size: size, id: d.newID(), ctx: m.ctx, sess: m.sess, mod: m})
	}
	return addr, size, cu.CUDA_SUCCESS
}

// ModuleFunctions lists the kernels a module defines (known for PTX), for
// cuModuleGetFunctionCount and cuModuleEnumerateFunctions.
func (d *Driver) ModuleFunctions(h uint64) ([]uint64, Result) {
	m, r := d.module(h)
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
	var out []uint64
	for _, name := range m.prog.Kernels() {
		f, r := d.moduleFunction(m, name)
		if r != cu.CUDA_SUCCESS {
			return nil, r
		}
		out = append(out, f.h)
	}
	return out, cu.CUDA_SUCCESS
}

// FuncGetModule is cuFuncGetModule.
func (d *Driver) FuncGetModule(t Thread, h uint64) (uint64, Result) {
	f, r := d.function(t, h, AnyDevice)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return f.mod.h, cu.CUDA_SUCCESS
}

// FuncGetName is cuFuncGetName (and cuKernelGetName, which needs no load).
func (d *Driver) FuncGetName(t Thread, h uint64) (string, Result) {
	if handleKind(h) == kindKernel {
		k, r := d.kernel(h)
		if r != cu.CUDA_SUCCESS {
			return "", r
		}
		return k.name, cu.CUDA_SUCCESS
	}
	f, r := d.function(t, h, AnyDevice)
	if r != cu.CUDA_SUCCESS {
		return "", r
	}
	return f.name, cu.CUDA_SUCCESS
}

// FuncGetParamInfo is cuFuncGetParamInfo (and cuKernelGetParamInfo).
func (d *Driver) FuncGetParamInfo(t Thread, h uint64, index uint64) (offset, size uint64, r Result) {
	f, r := d.function(t, h, AnyDevice)
	if r != cu.CUDA_SUCCESS {
		return 0, 0, r
	}
	if index >= uint64(len(f.info.Params)) {
		return 0, 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	p := f.info.Params[index]
	return uint64(p.Offset), uint64(p.Size), cu.CUDA_SUCCESS
}

// String describes a function for logs.
func (f *function) String() string {
	return fmt.Sprintf("%s (%d parameters)", f.name, len(f.info.Params))
}
