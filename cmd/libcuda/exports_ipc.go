package main

/*
#include "shim.h"

// The 64 bytes of a CUipcMemHandle, passed by value as CUDA does.
typedef struct { char reserved[64]; } gpuos_ipc_mem_handle;
*/
import "C"

import (
	"unsafe"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/shim"
)

// CUDA IPC of device memory, on gpuos grants (internal/shim/ipc.go).

//export gpuos_cuIpcGetMemHandle
func gpuos_cuIpcGetMemHandle(handle *C.gpuos_ipc_mem_handle, dptr uint64) int32 {
	if handle == nil {
		return invalidValue
	}
	h, r := drv.IpcGetMemHandle(thread(), dptr)
	if r == cu.CUDA_SUCCESS {
		*(*shim.IpcHandle)(unsafe.Pointer(handle)) = h
	}
	return ret("cuIpcGetMemHandle", r)
}

//export gpuos_cuIpcOpenMemHandle_v2
func gpuos_cuIpcOpenMemHandle_v2(pdptr *uint64, handle C.gpuos_ipc_mem_handle, flags uint32) int32 {
	if pdptr == nil {
		return invalidValue
	}
	h := *(*shim.IpcHandle)(unsafe.Pointer(&handle))
	p, r := drv.IpcOpenMemHandle(thread(), h, flags)
	if r == cu.CUDA_SUCCESS {
		*pdptr = p
	}
	return ret("cuIpcOpenMemHandle", r)
}

//export gpuos_cuIpcCloseMemHandle
func gpuos_cuIpcCloseMemHandle(dptr uint64) int32 {
	return ret("cuIpcCloseMemHandle", drv.IpcCloseMemHandle(thread(), dptr))
}

//export gpuos_cuIpcOpenMemHandle
func gpuos_cuIpcOpenMemHandle(pdptr *uint64, handle C.gpuos_ipc_mem_handle, flags uint32) int32 {
	return gpuos_cuIpcOpenMemHandle_v2(pdptr, handle, flags)
}
