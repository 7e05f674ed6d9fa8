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

//export cuCtxCreate
func cuCtxCreate(pctx *uint64, flags uint32, dev int32) int32 {
	return ctxCreate("cuCtxCreate", pctx, flags, dev)
}

//export cuCtxCreate_v2
func cuCtxCreate_v2(pctx *uint64, flags uint32, dev int32) int32 {
	return ctxCreate("cuCtxCreate", pctx, flags, dev)
}

//export cuCtxCreate_v3
func cuCtxCreate_v3(pctx *uint64, params unsafe.Pointer, numParams int32, flags uint32, dev int32) int32 {
	if numParams < 0 || (numParams > 0 && params == nil) {
		return invalidValue
	}
	if numParams > 0 {
		return ret("cuCtxCreate", drv.Refuse("cuCtxCreate: execution affinity"))
	}
	return ctxCreate("cuCtxCreate", pctx, flags, dev)
}

//export cuCtxCreate_v4
func cuCtxCreate_v4(pctx *uint64, params unsafe.Pointer, flags uint32, dev int32) int32 {
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

//export cuCtxDestroy
func cuCtxDestroy(ctx uint64) int32 { return ret("cuCtxDestroy", drv.CtxDestroy(thread(), ctx)) }

//export cuCtxDestroy_v2
func cuCtxDestroy_v2(ctx uint64) int32 { return ret("cuCtxDestroy", drv.CtxDestroy(thread(), ctx)) }

//export cuCtxPushCurrent
func cuCtxPushCurrent(ctx uint64) int32 { return ret("cuCtxPushCurrent", drv.CtxPush(thread(), ctx)) }

//export cuCtxPushCurrent_v2
func cuCtxPushCurrent_v2(ctx uint64) int32 {
	return ret("cuCtxPushCurrent", drv.CtxPush(thread(), ctx))
}

func ctxPop(pctx *uint64) int32 {
	h, r := drv.CtxPop(thread())
	if r == cu.CUDA_SUCCESS && pctx != nil {
		*pctx = h
	}
	return ret("cuCtxPopCurrent", r)
}

//export cuCtxPopCurrent
func cuCtxPopCurrent(pctx *uint64) int32 { return ctxPop(pctx) }

//export cuCtxPopCurrent_v2
func cuCtxPopCurrent_v2(pctx *uint64) int32 { return ctxPop(pctx) }

//export cuCtxSetCurrent
func cuCtxSetCurrent(ctx uint64) int32 {
	return ret("cuCtxSetCurrent", drv.CtxSetCurrent(thread(), ctx))
}

//export cuCtxGetCurrent
func cuCtxGetCurrent(pctx *uint64) int32 {
	if pctx == nil {
		return invalidValue
	}
	h, r := drv.CtxGetCurrent(thread())
	if r == cu.CUDA_SUCCESS {
		*pctx = h
	}
	return ret("cuCtxGetCurrent", r)
}

//export cuCtxGetDevice
func cuCtxGetDevice(dev *int32) int32 { return cuCtxGetDevice_v2(dev, 0) }

//export cuCtxGetDevice_v2
func cuCtxGetDevice_v2(dev *int32, ctx uint64) int32 {
	if dev == nil {
		return invalidValue
	}
	d, r := drv.CtxGetDevice(thread(), ctx)
	if r == cu.CUDA_SUCCESS {
		*dev = d
	}
	return ret("cuCtxGetDevice", r)
}

//export cuCtxGetFlags
func cuCtxGetFlags(flags *uint32) int32 {
	if flags == nil {
		return invalidValue
	}
	f, r := drv.CtxGetFlags(thread())
	if r == cu.CUDA_SUCCESS {
		*flags = f
	}
	return ret("cuCtxGetFlags", r)
}

//export cuCtxSetFlags
func cuCtxSetFlags(flags uint32) int32 { return ret("cuCtxSetFlags", drv.CtxSetFlags(thread(), flags)) }

//export cuCtxGetId
func cuCtxGetId(ctx uint64, id *uint64) int32 {
	if id == nil {
		return invalidValue
	}
	v, r := drv.CtxGetID(thread(), ctx)
	if r == cu.CUDA_SUCCESS {
		*id = v
	}
	return ret("cuCtxGetId", r)
}

//export cuCtxGetApiVersion
func cuCtxGetApiVersion(ctx uint64, version *uint32) int32 {
	if version == nil {
		return invalidValue
	}
	v, r := drv.CtxGetAPIVersion(thread(), ctx)
	if r == cu.CUDA_SUCCESS {
		*version = v
	}
	return ret("cuCtxGetApiVersion", r)
}

//export cuCtxSynchronize
func cuCtxSynchronize() int32 { return ret("cuCtxSynchronize", drv.CtxSynchronize(thread(), 0)) }

//export cuCtxSynchronize_v2
func cuCtxSynchronize_v2(ctx uint64) int32 {
	return ret("cuCtxSynchronize", drv.CtxSynchronize(thread(), ctx))
}

//export cuCtxSetLimit
func cuCtxSetLimit(limit uint32, value uintptr) int32 {
	return ret("cuCtxSetLimit", drv.CtxSetLimit(thread(), cu.CUlimit(limit), uint64(value)))
}

//export cuCtxGetLimit
func cuCtxGetLimit(value *uintptr, limit uint32) int32 {
	if value == nil {
		return invalidValue
	}
	v, r := drv.CtxGetLimit(thread(), cu.CUlimit(limit))
	if r == cu.CUDA_SUCCESS {
		*value = uintptr(v)
	}
	return ret("cuCtxGetLimit", r)
}

//export cuCtxGetCacheConfig
func cuCtxGetCacheConfig(cfg *uint32) int32 {
	if cfg == nil {
		return invalidValue
	}
	v, r := drv.CtxGetCacheConfig(thread())
	if r == cu.CUDA_SUCCESS {
		*cfg = uint32(v)
	}
	return ret("cuCtxGetCacheConfig", r)
}

//export cuCtxSetCacheConfig
func cuCtxSetCacheConfig(cfg uint32) int32 {
	return ret("cuCtxSetCacheConfig", drv.CtxSetCacheConfig(thread(), cu.CUfunc_cache(cfg)))
}

//export cuCtxGetSharedMemConfig
func cuCtxGetSharedMemConfig(cfg *uint32) int32 {
	if cfg == nil {
		return invalidValue
	}
	v, r := drv.CtxGetSharedMemConfig(thread())
	if r == cu.CUDA_SUCCESS {
		*cfg = uint32(v)
	}
	return ret("cuCtxGetSharedMemConfig", r)
}

//export cuCtxSetSharedMemConfig
func cuCtxSetSharedMemConfig(cfg uint32) int32 {
	return ret("cuCtxSetSharedMemConfig", drv.CtxSetSharedMemConfig(thread(), cu.CUsharedconfig(cfg)))
}

//export cuCtxGetStreamPriorityRange
func cuCtxGetStreamPriorityRange(least, greatest *int32) int32 {
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
//export cuCtxResetPersistingL2Cache
func cuCtxResetPersistingL2Cache() int32 {
	_, r := drv.CtxGetCurrent(thread())
	return ret("cuCtxResetPersistingL2Cache", r)
}
