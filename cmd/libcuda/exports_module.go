package main

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/shim"
)

// Modules, libraries, functions and kernels.

func putHandle(name string, out *uint64, h uint64, r shim.Result) int32 {
	if r == cu.CUDA_SUCCESS {
		*out = h
	}
	return ret(name, r)
}

//export gpuos_cuModuleLoad
func gpuos_cuModuleLoad(mod *uint64, fname *C.char) int32 {
	path, ok := goString(fname)
	if mod == nil || !ok {
		return invalidValue
	}
	h, r := drv.ModuleLoad(thread(), path)
	return putHandle("cuModuleLoad", mod, h, r)
}

//export gpuos_cuModuleLoadData
func gpuos_cuModuleLoadData(mod *uint64, image unsafe.Pointer) int32 {
	if mod == nil || image == nil {
		return invalidValue
	}
	h, r := drv.ModuleLoadData(thread(), uintptr(image))
	return putHandle("cuModuleLoadData", mod, h, r)
}

// cuModuleLoadDataEx takes JIT options, which tune a compilation gpuos leaves
// to the daemon: they are ignored, except that log buffers are given empty
// logs (and the error log the error) so that callers printing them print
// something true.
//
//export gpuos_cuModuleLoadDataEx
func gpuos_cuModuleLoadDataEx(mod *uint64, image unsafe.Pointer, n uint32, options *uint32, values *unsafe.Pointer) int32 {
	if mod == nil || image == nil || (n > 0 && (options == nil || values == nil)) {
		return invalidValue
	}
	h, r := drv.ModuleLoadData(thread(), uintptr(image))
	if n > 0 {
		jitLogs(unsafe.Slice(options, n), unsafe.Slice(values, n), r)
	}
	return putHandle("cuModuleLoadDataEx", mod, h, r)
}

// jitLogs fills the log buffers among JIT options.
func jitLogs(opts []uint32, vals []unsafe.Pointer, r shim.Result) {
	size := func(which cu.CUjit_option) uintptr {
		for i, o := range opts {
			if cu.CUjit_option(o) == which {
				return uintptr(vals[i]) // a size travels as the pointer's value
			}
		}
		return 0
	}
	for i, o := range opts {
		var msg string
		var n uintptr
		switch cu.CUjit_option(o) {
		case cu.CU_JIT_INFO_LOG_BUFFER:
			n = size(cu.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
		case cu.CU_JIT_ERROR_LOG_BUFFER:
			n = size(cu.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
			if r != cu.CUDA_SUCCESS {
				msg = "gpuos: module load failed: " + r.Name() + " (see the gpuos-shim log)"
			}
		default:
			continue
		}
		if vals[i] != nil && n > 0 {
			putString((*C.char)(vals[i]), int32(min(n, 1<<30)), msg)
		}
	}
}

//export gpuos_cuModuleLoadFatBinary
func gpuos_cuModuleLoadFatBinary(mod *uint64, fatbin unsafe.Pointer) int32 {
	if mod == nil || fatbin == nil {
		return invalidValue
	}
	h, r := drv.ModuleLoadData(thread(), uintptr(fatbin))
	return putHandle("cuModuleLoadFatBinary", mod, h, r)
}

//export gpuos_cuModuleUnload
func gpuos_cuModuleUnload(mod uint64) int32 { return ret("cuModuleUnload", drv.ModuleUnload(mod)) }

//export gpuos_cuModuleGetLoadingMode
func gpuos_cuModuleGetLoadingMode(mode *uint32) int32 {
	if mode == nil {
		return invalidValue
	}
	*mode = uint32(cu.CU_MODULE_EAGER_LOADING)
	return success
}

//export gpuos_cuModuleGetFunction
func gpuos_cuModuleGetFunction(fn *uint64, mod uint64, name *C.char) int32 {
	s, ok := goString(name)
	if fn == nil || !ok {
		return invalidValue
	}
	h, r := drv.ModuleGetFunction(mod, s)
	return putHandle("cuModuleGetFunction", fn, h, r)
}

//export gpuos_cuModuleGetFunctionCount
func gpuos_cuModuleGetFunctionCount(count *uint32, mod uint64) int32 {
	if count == nil {
		return invalidValue
	}
	fs, r := drv.ModuleFunctions(mod)
	if r == cu.CUDA_SUCCESS {
		*count = uint32(len(fs))
	}
	return ret("cuModuleGetFunctionCount", r)
}

//export gpuos_cuModuleEnumerateFunctions
func gpuos_cuModuleEnumerateFunctions(fns *uint64, n uint32, mod uint64) int32 {
	if fns == nil && n > 0 {
		return invalidValue
	}
	fs, r := drv.ModuleFunctions(mod)
	if r == cu.CUDA_SUCCESS {
		copy(unsafe.Slice(fns, n), fs)
	}
	return ret("cuModuleEnumerateFunctions", r)
}

func getGlobal(name string, dptr *uint64, bytes *uintptr, addr, size uint64, r shim.Result) int32 {
	if r == cu.CUDA_SUCCESS {
		if dptr != nil {
			*dptr = addr
		}
		if bytes != nil {
			*bytes = uintptr(size)
		}
	}
	return ret(name, r)
}

//export gpuos_cuModuleGetGlobal_v2
func gpuos_cuModuleGetGlobal_v2(dptr *uint64, bytes *uintptr, mod uint64, name *C.char) int32 {
	s, ok := goString(name)
	if !ok {
		return invalidValue
	}
	addr, size, r := drv.ModuleGetGlobal(mod, s)
	return getGlobal("cuModuleGetGlobal", dptr, bytes, addr, size, r)
}

// Libraries. They need no context: internal/shim loads a library into a
// device's session when something first needs its code there. JIT options
// are hints for a compilation the daemon does.

// libraryOptions reads cuLibraryLoadData's library options (logged when
// tracing: what the CUDA runtime passes is worth seeing).
func libraryOptions(name string, opts *uint32, vals *unsafe.Pointer, n uint32) (shim.LibraryOptions, shim.Result) {
	if n == 0 {
		return shim.LibraryOptions{}, cu.CUDA_SUCCESS
	}
	if opts == nil || n > 64 {
		return shim.LibraryOptions{}, cu.CUDA_ERROR_INVALID_VALUE
	}
	ops := make([]cu.CUlibraryOption, n)
	vs := make([]uintptr, n)
	for i, o := range unsafe.Slice(opts, n) {
		ops[i] = cu.CUlibraryOption(o)
	}
	// No values: each option's is 0. cuBLAS 13 passes one option and a NULL
	// value array, which the real driver accepts (run 8: gpuos answered
	// CUDA_ERROR_INVALID_VALUE and cuBLAS failed to create its handle).
	if vals != nil {
		for i, v := range unsafe.Slice(vals, n) {
			vs[i] = uintptr(v)
		}
	}
	o, r := shim.ParseLibraryOptions(ops, vs)
	if drv.Log().Tracing(shim.TraceCalls) {
		drv.Log().Printf("%s: library options %v = %#x: %s", name, ops, vs, r.Name())
	}
	return o, r
}

//export gpuos_cuLibraryLoadData
func gpuos_cuLibraryLoadData(lib *uint64, code unsafe.Pointer, jitOpts *uint32, jitVals *unsafe.Pointer, nJit uint32,
	libOpts *uint32, libVals *unsafe.Pointer, nLib uint32) int32 {
	if lib == nil || code == nil || (nJit > 0 && (jitOpts == nil || jitVals == nil)) {
		return invalidValue
	}
	o, r := libraryOptions("cuLibraryLoadData", libOpts, libVals, nLib)
	if r != cu.CUDA_SUCCESS {
		return ret("cuLibraryLoadData", r)
	}
	h, r := drv.LibraryLoadData(thread(), uintptr(code), o)
	if nJit > 0 {
		jitLogs(unsafe.Slice(jitOpts, nJit), unsafe.Slice(jitVals, nJit), r)
	}
	return putHandle("cuLibraryLoadData", lib, h, r)
}

//export gpuos_cuLibraryLoadFromFile
func gpuos_cuLibraryLoadFromFile(lib *uint64, fname *C.char, jitOpts *uint32, jitVals *unsafe.Pointer, nJit uint32,
	libOpts *uint32, libVals *unsafe.Pointer, nLib uint32) int32 {
	path, ok := goString(fname)
	if lib == nil || !ok || (nJit > 0 && (jitOpts == nil || jitVals == nil)) {
		return invalidValue
	}
	o, r := libraryOptions("cuLibraryLoadFromFile", libOpts, libVals, nLib)
	if r != cu.CUDA_SUCCESS {
		return ret("cuLibraryLoadFromFile", r)
	}
	h, r := drv.LibraryLoadFromFile(thread(), path, o)
	if nJit > 0 {
		jitLogs(unsafe.Slice(jitOpts, nJit), unsafe.Slice(jitVals, nJit), r)
	}
	return putHandle("cuLibraryLoadFromFile", lib, h, r)
}

//export gpuos_cuLibraryUnload
func gpuos_cuLibraryUnload(lib uint64) int32 { return ret("cuLibraryUnload", drv.LibraryUnload(lib)) }

//export gpuos_cuLibraryGetKernel
func gpuos_cuLibraryGetKernel(k *uint64, lib uint64, name *C.char) int32 {
	s, ok := goString(name)
	if k == nil || !ok {
		return invalidValue
	}
	h, r := drv.LibraryGetKernel(thread(), lib, s)
	return putHandle("cuLibraryGetKernel", k, h, r)
}

//export gpuos_cuLibraryGetKernelCount
func gpuos_cuLibraryGetKernelCount(count *uint32, lib uint64) int32 {
	if count == nil {
		return invalidValue
	}
	ks, r := drv.LibraryKernels(thread(), lib)
	if r == cu.CUDA_SUCCESS {
		*count = uint32(len(ks))
	}
	return ret("cuLibraryGetKernelCount", r)
}

//export gpuos_cuLibraryEnumerateKernels
func gpuos_cuLibraryEnumerateKernels(ks *uint64, n uint32, lib uint64) int32 {
	if ks == nil && n > 0 {
		return invalidValue
	}
	all, r := drv.LibraryKernels(thread(), lib)
	if r == cu.CUDA_SUCCESS {
		copy(unsafe.Slice(ks, n), all)
	}
	return ret("cuLibraryEnumerateKernels", r)
}

//export gpuos_cuLibraryGetModule
func gpuos_cuLibraryGetModule(mod *uint64, lib uint64) int32 {
	if mod == nil {
		return invalidValue
	}
	h, r := drv.LibraryGetModule(thread(), lib)
	return putHandle("cuLibraryGetModule", mod, h, r)
}

//export gpuos_cuLibraryGetGlobal
func gpuos_cuLibraryGetGlobal(dptr *uint64, bytes *uintptr, lib uint64, name *C.char) int32 {
	s, ok := goString(name)
	if !ok {
		return invalidValue
	}
	addr, size, r := drv.LibraryGetGlobal(thread(), lib, s)
	return getGlobal("cuLibraryGetGlobal", dptr, bytes, addr, size, r)
}

//export gpuos_cuLibraryGetManaged
func gpuos_cuLibraryGetManaged(dptr *uint64, bytes *uintptr, lib uint64, name *C.char) int32 {
	return ret("cuLibraryGetManaged", drv.Refuse("cuLibraryGetManaged: managed memory"))
}

//export gpuos_cuLibraryGetUnifiedFunction
func gpuos_cuLibraryGetUnifiedFunction(fptr *unsafe.Pointer, lib uint64, symbol *C.char) int32 {
	return ret("cuLibraryGetUnifiedFunction", drv.Refuse("cuLibraryGetUnifiedFunction: unified function pointers"))
}

//export gpuos_cuKernelGetFunction
func gpuos_cuKernelGetFunction(fn *uint64, k uint64) int32 {
	if fn == nil {
		return invalidValue
	}
	h, r := drv.KernelGetFunction(thread(), k)
	return putHandle("cuKernelGetFunction", fn, h, r)
}

//export gpuos_cuKernelGetLibrary
func gpuos_cuKernelGetLibrary(lib *uint64, k uint64) int32 {
	if lib == nil {
		return invalidValue
	}
	h, r := drv.KernelGetLibrary(k)
	return putHandle("cuKernelGetLibrary", lib, h, r)
}

func funcAttr(name string, pi *int32, attr uint32, f uint64, dev int32) int32 {
	if pi == nil {
		return invalidValue
	}
	v, r := drv.FuncGetAttribute(thread(), cu.CUfunction_attribute(attr), f, dev)
	if r == cu.CUDA_SUCCESS {
		*pi = v
	}
	return ret(name, r)
}

//export gpuos_cuKernelGetAttribute
func gpuos_cuKernelGetAttribute(pi *int32, attr uint32, k uint64, dev int32) int32 {
	return funcAttr("cuKernelGetAttribute", pi, attr, k, dev)
}

//export gpuos_cuKernelSetAttribute
func gpuos_cuKernelSetAttribute(attr uint32, val int32, k uint64, dev int32) int32 {
	return ret("cuKernelSetAttribute", drv.FuncSetAttribute(thread(), k, cu.CUfunction_attribute(attr), val, dev))
}

//export gpuos_cuKernelSetCacheConfig
func gpuos_cuKernelSetCacheConfig(k uint64, cfg uint32, dev int32) int32 {
	return ret("cuKernelSetCacheConfig", drv.FuncSetCacheConfig(thread(), k, cu.CUfunc_cache(cfg), dev))
}

func funcName(name string, out **C.char, f uint64) int32 {
	if out == nil {
		return invalidValue
	}
	s, r := drv.FuncGetName(thread(), f)
	if r == cu.CUDA_SUCCESS {
		*out = cstring(s)
	}
	return ret(name, r)
}

//export gpuos_cuKernelGetName
func gpuos_cuKernelGetName(out **C.char, k uint64) int32 { return funcName("cuKernelGetName", out, k) }

func paramInfo(name string, f uint64, index uintptr, off, size *uintptr) int32 {
	o, s, r := drv.FuncGetParamInfo(thread(), f, uint64(index))
	if r == cu.CUDA_SUCCESS {
		if off != nil {
			*off = uintptr(o)
		}
		if size != nil {
			*size = uintptr(s)
		}
	}
	return ret(name, r)
}

//export gpuos_cuKernelGetParamInfo
func gpuos_cuKernelGetParamInfo(k uint64, index uintptr, off, size *uintptr) int32 {
	return paramInfo("cuKernelGetParamInfo", k, index, off, size)
}

//export gpuos_cuFuncGetAttribute
func gpuos_cuFuncGetAttribute(pi *int32, attr uint32, f uint64) int32 {
	return funcAttr("cuFuncGetAttribute", pi, attr, f, shim.AnyDevice)
}

//export gpuos_cuFuncSetAttribute
func gpuos_cuFuncSetAttribute(f uint64, attr uint32, val int32) int32 {
	return ret("cuFuncSetAttribute", drv.FuncSetAttribute(thread(), f, cu.CUfunction_attribute(attr), val, shim.AnyDevice))
}

//export gpuos_cuFuncSetCacheConfig
func gpuos_cuFuncSetCacheConfig(f uint64, cfg uint32) int32 {
	return ret("cuFuncSetCacheConfig", drv.FuncSetCacheConfig(thread(), f, cu.CUfunc_cache(cfg), shim.AnyDevice))
}

// cuFuncSetSharedMemConfig sets a deprecated bank-size preference that no
// current GPU has: accepted for a valid function and configuration.
//
//export gpuos_cuFuncSetSharedMemConfig
func gpuos_cuFuncSetSharedMemConfig(f uint64, cfg uint32) int32 {
	if _, r := drv.FuncGetModule(thread(), f); r != cu.CUDA_SUCCESS {
		return ret("cuFuncSetSharedMemConfig", r)
	}
	if cfg > uint32(cu.CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE) {
		return invalidValue
	}
	return success
}

//export gpuos_cuFuncGetModule
func gpuos_cuFuncGetModule(mod *uint64, f uint64) int32 {
	if mod == nil {
		return invalidValue
	}
	h, r := drv.FuncGetModule(thread(), f)
	return putHandle("cuFuncGetModule", mod, h, r)
}

//export gpuos_cuFuncGetName
func gpuos_cuFuncGetName(out **C.char, f uint64) int32 { return funcName("cuFuncGetName", out, f) }

//export gpuos_cuFuncGetParamInfo
func gpuos_cuFuncGetParamInfo(f uint64, index uintptr, off, size *uintptr) int32 {
	return paramInfo("cuFuncGetParamInfo", f, index, off, size)
}

//export gpuos_cuFuncIsLoaded
func gpuos_cuFuncIsLoaded(state *uint32, f uint64) int32 {
	if state == nil {
		return invalidValue
	}
	_, r := drv.FuncGetModule(thread(), f)
	if r == cu.CUDA_SUCCESS {
		*state = uint32(cu.CU_FUNCTION_LOADING_STATE_LOADED)
	}
	return ret("cuFuncIsLoaded", r)
}

//export gpuos_cuFuncLoad
func gpuos_cuFuncLoad(f uint64) int32 {
	_, r := drv.FuncGetModule(thread(), f)
	return ret("cuFuncLoad", r)
}
