package main

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// Contexts and the per-thread context stack.

func ctxCreate(name string, pctx *uint64, flags uint32, dev int32) int32 {
	if pctx == nil {
		return invalidValue
	}
	h, r := drv.CtxCreate(thread(), flags, dev)
	if r == cu.CUDA_SUCCESS {
		*pctx = h
	}
	return ret(name, r)
}

//export gpuos_cuCtxCreate
func gpuos_cuCtxCreate(pctx *uint64, flags uint32, dev int32) int32 {
	return ctxCreate("cuCtxCreate", pctx, flags, dev)
}

//export gpuos_cuCtxCreate_v2
func gpuos_cuCtxCreate_v2(pctx *uint64, flags uint32, dev int32) int32 {
	return ctxCreate("cuCtxCreate", pctx, flags, dev)
}

//export gpuos_cuCtxCreate_v3
func gpuos_cuCtxCreate_v3(pctx *uint64, params unsafe.Pointer, numParams int32, flags uint32, dev int32) int32 {
	if numParams < 0 || (numParams > 0 && params == nil) {
		return invalidValue
	}
	if numParams > 0 {
		return ret("cuCtxCreate", drv.Refuse("cuCtxCreate: execution affinity"))
	}
	return ctxCreate("cuCtxCreate", pctx, flags, dev)
}

//export gpuos_cuCtxCreate_v4
func gpuos_cuCtxCreate_v4(pctx *uint64, params unsafe.Pointer, flags uint32, dev int32) int32 {
	if params != nil {
		p := (*cu.CUctxCreateParams)(params)
		if p.NumExecAffinityParams != 0 {
			return ret("cuCtxCreate", drv.Refuse("cuCtxCreate: execution affinity"))
		}
		if p.CigParams != 0 {
			return ret("cuCtxCreate", drv.Refuse("cuCtxCreate: CUDA in graphics contexts"))
		}
	}
	return ctxCreate("cuCtxCreate", pctx, flags, dev)
}

//export gpuos_cuCtxDestroy
func gpuos_cuCtxDestroy(ctx uint64) int32 { return ret("cuCtxDestroy", drv.CtxDestroy(thread(), ctx)) }

//export gpuos_cuCtxDestroy_v2
func gpuos_cuCtxDestroy_v2(ctx uint64) int32 {
	return ret("cuCtxDestroy", drv.CtxDestroy(thread(), ctx))
}

//export gpuos_cuCtxPushCurrent
func gpuos_cuCtxPushCurrent(ctx uint64) int32 {
	return ret("cuCtxPushCurrent", drv.CtxPush(thread(), ctx))
}

//export gpuos_cuCtxPushCurrent_v2
func gpuos_cuCtxPushCurrent_v2(ctx uint64) int32 {
	return ret("cuCtxPushCurrent", drv.CtxPush(thread(), ctx))
}

func ctxPop(pctx *uint64) int32 {
	h, r := drv.CtxPop(thread())
	if r == cu.CUDA_SUCCESS && pctx != nil {
		*pctx = h
	}
	return ret("cuCtxPopCurrent", r)
}

//export gpuos_cuCtxPopCurrent
func gpuos_cuCtxPopCurrent(pctx *uint64) int32 { return ctxPop(pctx) }

//export gpuos_cuCtxPopCurrent_v2
func gpuos_cuCtxPopCurrent_v2(pctx *uint64) int32 { return ctxPop(pctx) }

//export gpuos_cuCtxSetCurrent
func gpuos_cuCtxSetCurrent(ctx uint64) int32 {
	return ret("cuCtxSetCurrent", drv.CtxSetCurrent(thread(), ctx))
}

//export gpuos_cuCtxGetCurrent
func gpuos_cuCtxGetCurrent(pctx *uint64) int32 {
	if pctx == nil {
		return invalidValue
	}
	h, r := drv.CtxGetCurrent(thread())
	if r == cu.CUDA_SUCCESS {
		*pctx = h
	}
	return ret("cuCtxGetCurrent", r)
}

//export gpuos_cuCtxGetDevice
func gpuos_cuCtxGetDevice(dev *int32) int32 { return gpuos_cuCtxGetDevice_v2(dev, 0) }

//export gpuos_cuCtxGetDevice_v2
func gpuos_cuCtxGetDevice_v2(dev *int32, ctx uint64) int32 {
	if dev == nil {
		return invalidValue
	}
	d, r := drv.CtxGetDevice(thread(), ctx)
	if r == cu.CUDA_SUCCESS {
		*dev = d
	}
	return ret("cuCtxGetDevice", r)
}

//export gpuos_cuCtxGetFlags
func gpuos_cuCtxGetFlags(flags *uint32) int32 {
	if flags == nil {
		return invalidValue
	}
	f, r := drv.CtxGetFlags(thread())
	if r == cu.CUDA_SUCCESS {
		*flags = f
	}
	return ret("cuCtxGetFlags", r)
}

//export gpuos_cuCtxSetFlags
func gpuos_cuCtxSetFlags(flags uint32) int32 {
	return ret("cuCtxSetFlags", drv.CtxSetFlags(thread(), flags))
}

//export gpuos_cuCtxGetId
func gpuos_cuCtxGetId(ctx uint64, id *uint64) int32 {
	if id == nil {
		return invalidValue
	}
	v, r := drv.CtxGetID(thread(), ctx)
	if r == cu.CUDA_SUCCESS {
		*id = v
	}
	return ret("cuCtxGetId", r)
}

//export gpuos_cuCtxGetApiVersion
func gpuos_cuCtxGetApiVersion(ctx uint64, version *uint32) int32 {
	if version == nil {
		return invalidValue
	}
	v, r := drv.CtxGetAPIVersion(thread(), ctx)
	if r == cu.CUDA_SUCCESS {
		*version = v
	}
	return ret("cuCtxGetApiVersion", r)
}

//export gpuos_cuCtxSynchronize
func gpuos_cuCtxSynchronize() int32 { return ret("cuCtxSynchronize", drv.CtxSynchronize(thread(), 0)) }

//export gpuos_cuCtxSynchronize_v2
func gpuos_cuCtxSynchronize_v2(ctx uint64) int32 {
	return ret("cuCtxSynchronize", drv.CtxSynchronize(thread(), ctx))
}

//export gpuos_cuCtxSetLimit
func gpuos_cuCtxSetLimit(limit uint32, value uintptr) int32 {
	return ret("cuCtxSetLimit", drv.CtxSetLimit(thread(), cu.CUlimit(limit), uint64(value)))
}

//export gpuos_cuCtxGetLimit
func gpuos_cuCtxGetLimit(value *uintptr, limit uint32) int32 {
	if value == nil {
		return invalidValue
	}
	v, r := drv.CtxGetLimit(thread(), cu.CUlimit(limit))
	if r == cu.CUDA_SUCCESS {
		*value = uintptr(v)
	}
	return ret("cuCtxGetLimit", r)
}

//export gpuos_cuCtxGetCacheConfig
func gpuos_cuCtxGetCacheConfig(cfg *uint32) int32 {
	if cfg == nil {
		return invalidValue
	}
	v, r := drv.CtxGetCacheConfig(thread())
	if r == cu.CUDA_SUCCESS {
		*cfg = uint32(v)
	}
	return ret("cuCtxGetCacheConfig", r)
}

//export gpuos_cuCtxSetCacheConfig
func gpuos_cuCtxSetCacheConfig(cfg uint32) int32 {
	return ret("cuCtxSetCacheConfig", drv.CtxSetCacheConfig(thread(), cu.CUfunc_cache(cfg)))
}

//export gpuos_cuCtxGetSharedMemConfig
func gpuos_cuCtxGetSharedMemConfig(cfg *uint32) int32 {
	if cfg == nil {
		return invalidValue
	}
	v, r := drv.CtxGetSharedMemConfig(thread())
	if r == cu.CUDA_SUCCESS {
		*cfg = uint32(v)
	}
	return ret("cuCtxGetSharedMemConfig", r)
}

//export gpuos_cuCtxSetSharedMemConfig
func gpuos_cuCtxSetSharedMemConfig(cfg uint32) int32 {
	return ret("cuCtxSetSharedMemConfig", drv.CtxSetSharedMemConfig(thread(), cu.CUsharedconfig(cfg)))
}

//export gpuos_cuCtxGetStreamPriorityRange
func gpuos_cuCtxGetStreamPriorityRange(least, greatest *int32) int32 {
	l, g, r := drv.CtxGetStreamPriorityRange(thread())
	if r == cu.CUDA_SUCCESS {
		if least != nil {
			*least = l
		}
		if greatest != nil {
			*greatest = g
		}
	}
	return ret("cuCtxGetStreamPriorityRange", r)
}

// cuCtxResetPersistingL2Cache resets the persisting lines of the L2 cache,
// which gpuos never sets: there is nothing to reset.
//
//export gpuos_cuCtxResetPersistingL2Cache
func gpuos_cuCtxResetPersistingL2Cache() int32 {
	_, r := drv.CtxGetCurrent(thread())
	return ret("cuCtxResetPersistingL2Cache", r)
}
