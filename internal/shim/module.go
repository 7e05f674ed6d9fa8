package shim

import (
	"bytes"
	"fmt"
	"os"
	"sync"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// module is a loaded module image (CUmodule); a library's code is one too.
type module struct {
	h    uint64
	ctx  *ctxObj
	sess *session
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

	mu           sync.Mutex // guards the attributes below
	maxDynShared uint32
	carveout     int32
	cacheConfig  cu.CUfunc_cache
}

// library is a CUlibrary: a module whose kernels are looked up as CUkernels.
type library struct {
	h   uint64
	mod *module

	mu      sync.Mutex // guards kernels
	kernels map[string]*kernel
}

// kernel is a CUkernel: a function of a library, usable wherever a CUfunction
// is.
type kernel struct {
	h   uint64
	lib *library
	fn  *function
}

// loadImage loads the module image at addr in the current context.
func (d *Driver) loadImage(t Thread, addr uintptr, label string) (*module, Result) {
	c, s, r := d.currentSession(t)
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
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
	return d.loadBytes(c, s, data, label)
}

// loadBytes loads an image held in data (which is only read during the call).
func (d *Driver) loadBytes(c *ctxObj, s *session, data []byte, label string) (*module, Result) {
	p, err := s.s.LoadProgram(bg, data, label)
	if err != nil {
		if d.log.Tracing(TraceCalls) {
			d.log.Printf("%s: %v", label, err)
		}
		return nil, resultOf(opLoad, err)
	}
	m := &module{ctx: c, sess: s, prog: p, name: label, funcs: make(map[string]*function)}
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
	m, r := d.loadBytes(c, s, data, path)
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
	for _, l := range d.libraries.each() {
		if l.mod == m {
			return cu.CUDA_ERROR_INVALID_HANDLE
		}
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
	return resultOf(opAny, m.prog.Close())
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
		return nil, resultOf(opAny, err)
	}
	info := k.Info()
	f := &function{mod: m, name: name, k: k, info: info, carveout: -1}
	for _, p := range info.Params {
		f.paramSize = max(f.paramSize, p.Offset+p.Size)
	}
	f.maxDynShared = defaultDynShared(m.ctx.dev, info)
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
		return 0, 0, resultOf(opAny, err)
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

// function returns the function h names: a CUfunction or a CUkernel.
func (d *Driver) function(h uint64) (*function, Result) {
	switch handleKind(h) {
	case kindFunction:
		if f := d.functions.get(h); f != nil {
			return f, cu.CUDA_SUCCESS
		}
	case kindKernel:
		if k := d.kernels.get(h); k != nil {
			return k.fn, cu.CUDA_SUCCESS
		}
	}
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return nil, r
	}
	return nil, cu.CUDA_ERROR_INVALID_HANDLE
}

// FuncGetModule is cuFuncGetModule.
func (d *Driver) FuncGetModule(h uint64) (uint64, Result) {
	f, r := d.function(h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return f.mod.h, cu.CUDA_SUCCESS
}

// FuncGetName is cuFuncGetName (and cuKernelGetName).
func (d *Driver) FuncGetName(h uint64) (string, Result) {
	f, r := d.function(h)
	if r != cu.CUDA_SUCCESS {
		return "", r
	}
	return f.name, cu.CUDA_SUCCESS
}

// FuncGetParamInfo is cuFuncGetParamInfo (and cuKernelGetParamInfo).
func (d *Driver) FuncGetParamInfo(h uint64, index uint64) (offset, size uint64, r Result) {
	f, r := d.function(h)
	if r != cu.CUDA_SUCCESS {
		return 0, 0, r
	}
	if index >= uint64(len(f.info.Params)) {
		return 0, 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	p := f.info.Params[index]
	return uint64(p.Offset), uint64(p.Size), cu.CUDA_SUCCESS
}

// ---- libraries ----------------------------------------------------------------

// LibraryLoadData is cuLibraryLoadData: the image is loaded at once in the
// current context (gpuos has no lazy loading).
func (d *Driver) LibraryLoadData(t Thread, code uintptr) (uint64, Result) {
	m, r := d.loadImage(t, code, "cuLibraryLoadData")
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return d.newLibrary(m), cu.CUDA_SUCCESS
}

// LibraryLoadFromFile is cuLibraryLoadFromFile.
func (d *Driver) LibraryLoadFromFile(t Thread, path string) (uint64, Result) {
	mh, r := d.ModuleLoad(t, path)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return d.newLibrary(d.modules.get(mh)), cu.CUDA_SUCCESS
}

func (d *Driver) newLibrary(m *module) uint64 {
	l := &library{mod: m, kernels: make(map[string]*kernel)}
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
	for _, k := range l.kernels {
		d.kernels.remove(k.h)
	}
	l.kernels = nil
	l.mu.Unlock()
	return d.unloadModule(l.mod)
}

// LibraryGetKernel is cuLibraryGetKernel: CUDA_ERROR_NOT_FOUND for an unknown
// name.
func (d *Driver) LibraryGetKernel(h uint64, name string) (uint64, Result) {
	l, r := d.library(h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	k, r := d.libraryKernel(l, name)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return k.h, cu.CUDA_SUCCESS
}

func (d *Driver) libraryKernel(l *library, name string) (*kernel, Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kernels == nil {
		return nil, cu.CUDA_ERROR_INVALID_HANDLE
	}
	if k := l.kernels[name]; k != nil {
		return k, cu.CUDA_SUCCESS
	}
	f, r := d.moduleFunction(l.mod, name)
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
	k := &kernel{lib: l, fn: f}
	k.h = d.kernels.add(k)
	l.kernels[name] = k
	return k, cu.CUDA_SUCCESS
}

// LibraryKernels lists a library's kernels (cuLibraryGetKernelCount,
// cuLibraryEnumerateKernels).
func (d *Driver) LibraryKernels(h uint64) ([]uint64, Result) {
	l, r := d.library(h)
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
	var out []uint64
	for _, name := range l.mod.prog.Kernels() {
		k, r := d.libraryKernel(l, name)
		if r != cu.CUDA_SUCCESS {
			return nil, r
		}
		out = append(out, k.h)
	}
	return out, cu.CUDA_SUCCESS
}

// LibraryGetModule is cuLibraryGetModule.
func (d *Driver) LibraryGetModule(h uint64) (uint64, Result) {
	l, r := d.library(h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return l.mod.h, cu.CUDA_SUCCESS
}

// LibraryGetGlobal is cuLibraryGetGlobal.
func (d *Driver) LibraryGetGlobal(h uint64, name string) (addr, size uint64, r Result) {
	l, r := d.library(h)
	if r != cu.CUDA_SUCCESS {
		return 0, 0, r
	}
	return d.ModuleGetGlobal(l.mod.h, name)
}

// KernelGetFunction is cuKernelGetFunction.
func (d *Driver) KernelGetFunction(h uint64) (uint64, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	k := d.kernels.get(h)
	if k == nil {
		return 0, cu.CUDA_ERROR_INVALID_HANDLE
	}
	return k.fn.h, cu.CUDA_SUCCESS
}

// KernelGetLibrary is cuKernelGetLibrary.
func (d *Driver) KernelGetLibrary(h uint64) (uint64, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	k := d.kernels.get(h)
	if k == nil {
		return 0, cu.CUDA_ERROR_INVALID_HANDLE
	}
	return k.lib.h, cu.CUDA_SUCCESS
}

// String describes a function for logs.
func (f *function) String() string {
	return fmt.Sprintf("%s (%d parameters)", f.name, len(f.info.Params))
}
