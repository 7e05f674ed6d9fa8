package main

/*
#include "shim.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/shim"
)

// Streams, host functions, stream capture (never active) and events.

//export gpuos_cuStreamCreate
func gpuos_cuStreamCreate(ph *uint64, flags uint32) int32 {
	if ph == nil {
		return invalidValue
	}
	h, r := drv.StreamCreate(thread(), flags, 0)
	return putHandle("cuStreamCreate", ph, h, r)
}

//export gpuos_cuStreamCreateWithPriority
func gpuos_cuStreamCreateWithPriority(ph *uint64, flags uint32, priority int32) int32 {
	if ph == nil {
		return invalidValue
	}
	h, r := drv.StreamCreate(thread(), flags, priority)
	return putHandle("cuStreamCreateWithPriority", ph, h, r)
}

func streamDestroy(h uint64) int32 { return ret("cuStreamDestroy", drv.StreamDestroy(h)) }

//export gpuos_cuStreamDestroy
func gpuos_cuStreamDestroy(h uint64) int32 { return streamDestroy(h) }

//export gpuos_cuStreamDestroy_v2
func gpuos_cuStreamDestroy_v2(h uint64) int32 { return streamDestroy(h) }

func streamPriority(h uint64, p *int32) int32 {
	if p == nil {
		return invalidValue
	}
	v, r := drv.StreamGetPriority(thread(), h)
	if r == cu.CUDA_SUCCESS {
		*p = v
	}
	return ret("cuStreamGetPriority", r)
}

//export gpuos_cuStreamGetPriority
func gpuos_cuStreamGetPriority(h uint64, p *int32) int32 { return streamPriority(h, p) }

//export gpuos_cuStreamGetPriority_ptsz
func gpuos_cuStreamGetPriority_ptsz(h uint64, p *int32) int32 { return streamPriority(h, p) }

func streamFlags(h uint64, p *uint32) int32 {
	if p == nil {
		return invalidValue
	}
	v, r := drv.StreamGetFlags(thread(), h)
	if r == cu.CUDA_SUCCESS {
		*p = v
	}
	return ret("cuStreamGetFlags", r)
}

//export gpuos_cuStreamGetFlags
func gpuos_cuStreamGetFlags(h uint64, p *uint32) int32 { return streamFlags(h, p) }

//export gpuos_cuStreamGetFlags_ptsz
func gpuos_cuStreamGetFlags_ptsz(h uint64, p *uint32) int32 { return streamFlags(h, p) }

func streamID(h uint64, p *uint64) int32 {
	if p == nil {
		return invalidValue
	}
	v, r := drv.StreamGetID(thread(), h)
	return putHandle("cuStreamGetId", p, v, r)
}

//export gpuos_cuStreamGetId
func gpuos_cuStreamGetId(h uint64, p *uint64) int32 { return streamID(h, p) }

//export gpuos_cuStreamGetId_ptsz
func gpuos_cuStreamGetId_ptsz(h uint64, p *uint64) int32 { return streamID(h, p) }

func streamCtx(h uint64, p *uint64) int32 {
	if p == nil {
		return invalidValue
	}
	v, r := drv.StreamGetCtx(thread(), h)
	return putHandle("cuStreamGetCtx", p, v, r)
}

//export gpuos_cuStreamGetCtx
func gpuos_cuStreamGetCtx(h uint64, p *uint64) int32 { return streamCtx(h, p) }

//export gpuos_cuStreamGetCtx_ptsz
func gpuos_cuStreamGetCtx_ptsz(h uint64, p *uint64) int32 { return streamCtx(h, p) }

// cuStreamGetCtx_v2 also names the stream's green context: gpuos has none.
//
//export gpuos_cuStreamGetCtx_v2
func gpuos_cuStreamGetCtx_v2(h uint64, p, green *uint64) int32 {
	if green != nil {
		*green = 0
	}
	return streamCtx(h, p)
}

//export gpuos_cuStreamGetCtx_v2_ptsz
func gpuos_cuStreamGetCtx_v2_ptsz(h uint64, p, green *uint64) int32 {
	return gpuos_cuStreamGetCtx_v2(h, p, green)
}

func streamDevice(h uint64, p *int32) int32 {
	if p == nil {
		return invalidValue
	}
	v, r := drv.StreamGetDevice(thread(), h)
	if r == cu.CUDA_SUCCESS {
		*p = v
	}
	return ret("cuStreamGetDevice", r)
}

//export gpuos_cuStreamGetDevice
func gpuos_cuStreamGetDevice(h uint64, p *int32) int32 { return streamDevice(h, p) }

//export gpuos_cuStreamGetDevice_ptsz
func gpuos_cuStreamGetDevice_ptsz(h uint64, p *int32) int32 { return streamDevice(h, p) }

func streamWaitEvent(h, ev uint64, flags uint32) int32 {
	return ret("cuStreamWaitEvent", drv.StreamWaitEvent(thread(), h, ev, flags))
}

//export gpuos_cuStreamWaitEvent
func gpuos_cuStreamWaitEvent(h, ev uint64, flags uint32) int32 { return streamWaitEvent(h, ev, flags) }

//export gpuos_cuStreamWaitEvent_ptsz
func gpuos_cuStreamWaitEvent_ptsz(h, ev uint64, flags uint32) int32 {
	return streamWaitEvent(h, ev, flags)
}

func streamQuery(h uint64) int32 { return ret("cuStreamQuery", drv.StreamQuery(thread(), h)) }

//export gpuos_cuStreamQuery
func gpuos_cuStreamQuery(h uint64) int32 { return streamQuery(h) }

//export gpuos_cuStreamQuery_ptsz
func gpuos_cuStreamQuery_ptsz(h uint64) int32 { return streamQuery(h) }

func streamSync(h uint64) int32 {
	return ret("cuStreamSynchronize", drv.StreamSynchronize(thread(), h))
}

//export gpuos_cuStreamSynchronize
func gpuos_cuStreamSynchronize(h uint64) int32 { return streamSync(h) }

//export gpuos_cuStreamSynchronize_ptsz
func gpuos_cuStreamSynchronize_ptsz(h uint64) int32 { return streamSync(h) }

func hostFunc(h uint64, fn, user unsafe.Pointer) int32 {
	if fn == nil {
		return invalidValue
	}
	return ret("cuLaunchHostFunc", drv.LaunchHostFunc(thread(), h, func(shim.Result) {
		C.gpuos_call_host_fn(fn, user)
	}))
}

//export gpuos_cuLaunchHostFunc
func gpuos_cuLaunchHostFunc(h uint64, fn, user unsafe.Pointer) int32 { return hostFunc(h, fn, user) }

//export gpuos_cuLaunchHostFunc_ptsz
func gpuos_cuLaunchHostFunc_ptsz(h uint64, fn, user unsafe.Pointer) int32 {
	return hostFunc(h, fn, user)
}

func streamCallback(h uint64, cb, user unsafe.Pointer, flags uint32) int32 {
	if cb == nil || flags != 0 {
		return invalidValue
	}
	return ret("cuStreamAddCallback", drv.LaunchHostFunc(thread(), h, func(status shim.Result) {
		C.gpuos_call_stream_callback(cb, C.uint64_t(h), C.int(status), user)
	}))
}

//export gpuos_cuStreamAddCallback
func gpuos_cuStreamAddCallback(h uint64, cb, user unsafe.Pointer, flags uint32) int32 {
	return streamCallback(h, cb, user, flags)
}

//export gpuos_cuStreamAddCallback_ptsz
func gpuos_cuStreamAddCallback_ptsz(h uint64, cb, user unsafe.Pointer, flags uint32) int32 {
	return streamCallback(h, cb, user, flags)
}

// Stream capture is never active in gpuos (cuStreamBeginCapture is refused),
// so the queries answer CU_STREAM_CAPTURE_STATUS_NONE for a valid stream.

func captureStatus(name string, h uint64, status *uint32) int32 {
	if status == nil {
		return invalidValue
	}
	if _, r := drv.StreamGetFlags(thread(), h); r != cu.CUDA_SUCCESS {
		return ret(name, r)
	}
	*status = uint32(cu.CU_STREAM_CAPTURE_STATUS_NONE)
	return success
}

//export gpuos_cuStreamIsCapturing
func gpuos_cuStreamIsCapturing(h uint64, status *uint32) int32 {
	return captureStatus("cuStreamIsCapturing", h, status)
}

//export gpuos_cuStreamIsCapturing_ptsz
func gpuos_cuStreamIsCapturing_ptsz(h uint64, status *uint32) int32 {
	return captureStatus("cuStreamIsCapturing", h, status)
}

//export gpuos_cuStreamGetCaptureInfo
func gpuos_cuStreamGetCaptureInfo(h uint64, status *uint32, id *uint64) int32 {
	return captureStatus("cuStreamGetCaptureInfo", h, status)
}

//export gpuos_cuStreamGetCaptureInfo_ptsz
func gpuos_cuStreamGetCaptureInfo_ptsz(h uint64, status *uint32, id *uint64) int32 {
	return captureStatus("cuStreamGetCaptureInfo", h, status)
}

//export gpuos_cuStreamGetCaptureInfo_v2
func gpuos_cuStreamGetCaptureInfo_v2(h uint64, status *uint32, id *uint64, graph, deps, n unsafe.Pointer) int32 {
	return captureStatus("cuStreamGetCaptureInfo", h, status)
}

//export gpuos_cuStreamGetCaptureInfo_v2_ptsz
func gpuos_cuStreamGetCaptureInfo_v2_ptsz(h uint64, status *uint32, id *uint64, graph, deps, n unsafe.Pointer) int32 {
	return captureStatus("cuStreamGetCaptureInfo", h, status)
}

//export gpuos_cuStreamGetCaptureInfo_v3
func gpuos_cuStreamGetCaptureInfo_v3(h uint64, status *uint32, id *uint64, graph, deps, edges, n unsafe.Pointer) int32 {
	return captureStatus("cuStreamGetCaptureInfo", h, status)
}

//export gpuos_cuStreamGetCaptureInfo_v3_ptsz
func gpuos_cuStreamGetCaptureInfo_v3_ptsz(h uint64, status *uint32, id *uint64, graph, deps, edges, n unsafe.Pointer) int32 {
	return captureStatus("cuStreamGetCaptureInfo", h, status)
}

// captureModes is each thread's stream-capture mode; it only matters while
// capturing, which never happens, but the exchange is kept faithful.
var captureModes sync.Map // shim.Thread -> uint32

//export gpuos_cuThreadExchangeStreamCaptureMode
func gpuos_cuThreadExchangeStreamCaptureMode(mode *uint32) int32 {
	if mode == nil || *mode > 2 {
		return invalidValue
	}
	t := thread()
	old, _ := captureModes.Load(t)
	captureModes.Store(t, *mode)
	if old == nil {
		old = uint32(0) // CU_STREAM_CAPTURE_MODE_GLOBAL
	}
	*mode = old.(uint32)
	return success
}

// Events.

//export gpuos_cuEventCreate
func gpuos_cuEventCreate(ph *uint64, flags uint32) int32 {
	if ph == nil {
		return invalidValue
	}
	h, r := drv.EventCreate(thread(), flags)
	return putHandle("cuEventCreate", ph, h, r)
}

func eventRecord(ev, stream uint64, flags uint32) int32 {
	switch cu.CUevent_record_flags(flags) {
	case cu.CU_EVENT_RECORD_DEFAULT:
	case cu.CU_EVENT_RECORD_EXTERNAL:
		return ret("cuEventRecordWithFlags", drv.Refuse("cuEventRecordWithFlags: external events (graphs)"))
	default:
		return invalidValue
	}
	return ret("cuEventRecord", drv.EventRecord(thread(), ev, stream))
}

//export gpuos_cuEventRecord
func gpuos_cuEventRecord(ev, stream uint64) int32 { return eventRecord(ev, stream, 0) }

//export gpuos_cuEventRecord_ptsz
func gpuos_cuEventRecord_ptsz(ev, stream uint64) int32 { return eventRecord(ev, stream, 0) }

//export gpuos_cuEventRecordWithFlags
func gpuos_cuEventRecordWithFlags(ev, stream uint64, flags uint32) int32 {
	return eventRecord(ev, stream, flags)
}

//export gpuos_cuEventRecordWithFlags_ptsz
func gpuos_cuEventRecordWithFlags_ptsz(ev, stream uint64, flags uint32) int32 {
	return eventRecord(ev, stream, flags)
}

//export gpuos_cuEventQuery
func gpuos_cuEventQuery(ev uint64) int32 {
	r := drv.EventQuery(ev)
	if r == cu.CUDA_ERROR_NOT_READY {
		return int32(r) // an answer, not a failure
	}
	return ret("cuEventQuery", r)
}

//export gpuos_cuEventSynchronize
func gpuos_cuEventSynchronize(ev uint64) int32 {
	return ret("cuEventSynchronize", drv.EventSynchronize(ev))
}

func elapsed(ms *float32, start, end uint64) int32 {
	if ms == nil {
		return invalidValue
	}
	v, r := drv.EventElapsedTime(start, end)
	if r == cu.CUDA_SUCCESS {
		*ms = v
	}
	return ret("cuEventElapsedTime", r)
}

//export gpuos_cuEventElapsedTime
func gpuos_cuEventElapsedTime(ms *float32, start, end uint64) int32 { return elapsed(ms, start, end) }

//export gpuos_cuEventElapsedTime_v2
func gpuos_cuEventElapsedTime_v2(ms *float32, start, end uint64) int32 {
	return elapsed(ms, start, end)
}

//export gpuos_cuEventDestroy
func gpuos_cuEventDestroy(ev uint64) int32 { return ret("cuEventDestroy", drv.EventDestroy(ev)) }

//export gpuos_cuEventDestroy_v2
func gpuos_cuEventDestroy_v2(ev uint64) int32 { return ret("cuEventDestroy", drv.EventDestroy(ev)) }
