package main

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// Device memory, host memory and pointer attributes.

//export gpuos_cuMemGetInfo_v2
func gpuos_cuMemGetInfo_v2(free, total *uintptr) int32 {
	if free == nil || total == nil {
		return invalidValue
	}
	f, t, r := drv.MemGetInfo(thread())
	if r == cu.CUDA_SUCCESS {
		*free, *total = uintptr(f), uintptr(t)
	}
	return ret("cuMemGetInfo", r)
}

//export gpuos_cuMemAlloc_v2
func gpuos_cuMemAlloc_v2(dptr *uint64, size uintptr) int32 {
	if dptr == nil {
		return invalidValue
	}
	p, r := drv.MemAlloc(thread(), uint64(size))
	if r == cu.CUDA_SUCCESS {
		*dptr = p
	}
	return ret("cuMemAlloc", r)
}

//export gpuos_cuMemAllocPitch_v2
func gpuos_cuMemAllocPitch_v2(dptr *uint64, pitch *uintptr, width, height uintptr, elemSize uint32) int32 {
	if dptr == nil || pitch == nil {
		return invalidValue
	}
	p, pp, r := drv.MemAllocPitch(thread(), uint64(width), uint64(height), elemSize)
	if r == cu.CUDA_SUCCESS {
		*dptr, *pitch = p, uintptr(pp)
	}
	return ret("cuMemAllocPitch", r)
}

//export gpuos_cuMemFree_v2
func gpuos_cuMemFree_v2(dptr uint64) int32 { return ret("cuMemFree", drv.MemFree(thread(), dptr)) }

//export gpuos_cuMemGetAddressRange_v2
func gpuos_cuMemGetAddressRange_v2(base *uint64, size *uintptr, dptr uint64) int32 {
	b, s, r := drv.MemGetAddressRange(thread(), dptr)
	if r == cu.CUDA_SUCCESS {
		if base != nil {
			*base = b
		}
		if size != nil {
			*size = uintptr(s)
		}
	}
	return ret("cuMemGetAddressRange", r)
}

// cuMemAllocManaged is refused: managed memory migrates between the host and
// the device on access, which a device in another process cannot do.
//
//export gpuos_cuMemAllocManaged
func gpuos_cuMemAllocManaged(dptr *uint64, size uintptr, flags uint32) int32 {
	if dptr == nil || size == 0 {
		return invalidValue
	}
	return ret("cuMemAllocManaged", drv.Refuse("cuMemAllocManaged: managed memory"))
}

func hostAlloc(name string, pp *unsafe.Pointer, size uintptr, flags uint32) int32 {
	if pp == nil {
		return invalidValue
	}
	p, r := drv.MemHostAlloc(thread(), uint64(size), flags)
	if r == cu.CUDA_SUCCESS {
		*pp = ptr(p)
	}
	return ret(name, r)
}

//export gpuos_cuMemAllocHost_v2
func gpuos_cuMemAllocHost_v2(pp *unsafe.Pointer, size uintptr) int32 {
	return hostAlloc("cuMemAllocHost", pp, size, 0)
}

//export gpuos_cuMemHostAlloc
func gpuos_cuMemHostAlloc(pp *unsafe.Pointer, size uintptr, flags uint32) int32 {
	return hostAlloc("cuMemHostAlloc", pp, size, flags)
}

//export gpuos_cuMemFreeHost
func gpuos_cuMemFreeHost(p unsafe.Pointer) int32 {
	return ret("cuMemFreeHost", drv.MemFreeHost(uintptr(p)))
}

//export gpuos_cuMemHostRegister
func gpuos_cuMemHostRegister(p unsafe.Pointer, size uintptr, flags uint32) int32 {
	return ret("cuMemHostRegister", drv.MemHostRegister(thread(), uintptr(p), uint64(size), flags))
}

//export gpuos_cuMemHostRegister_v2
func gpuos_cuMemHostRegister_v2(p unsafe.Pointer, size uintptr, flags uint32) int32 {
	return ret("cuMemHostRegister", drv.MemHostRegister(thread(), uintptr(p), uint64(size), flags))
}

//export gpuos_cuMemHostUnregister
func gpuos_cuMemHostUnregister(p unsafe.Pointer) int32 {
	return ret("cuMemHostUnregister", drv.MemHostUnregister(uintptr(p)))
}

//export gpuos_cuMemHostGetFlags
func gpuos_cuMemHostGetFlags(flags *uint32, p unsafe.Pointer) int32 {
	if flags == nil {
		return invalidValue
	}
	f, r := drv.MemHostGetFlags(uintptr(p))
	if r == cu.CUDA_SUCCESS {
		*flags = f
	}
	return ret("cuMemHostGetFlags", r)
}

// writeValue stores a pointer attribute's value where data points.
func writeValue(data unsafe.Pointer, size uint8, v uint64) {
	switch size {
	case 1:
		*(*uint8)(data) = uint8(v)
	case 4:
		*(*uint32)(data) = uint32(v)
	default:
		*(*uint64)(data) = v
	}
}

//export gpuos_cuPointerGetAttribute
func gpuos_cuPointerGetAttribute(data unsafe.Pointer, attr uint32, p uint64) int32 {
	if data == nil {
		return invalidValue
	}
	v, r := drv.PointerGetAttribute(cu.CUpointer_attribute(attr), p)
	if r == cu.CUDA_SUCCESS {
		writeValue(data, v.Size, v.V)
	}
	return ret("cuPointerGetAttribute", r)
}

//export gpuos_cuPointerGetAttributes
func gpuos_cuPointerGetAttributes(n uint32, attrs *uint32, data *unsafe.Pointer, p uint64) int32 {
	if n == 0 || attrs == nil || data == nil {
		return invalidValue
	}
	as := unsafe.Slice(attrs, n)
	ds := unsafe.Slice(data, n)
	list := make([]cu.CUpointer_attribute, n)
	for i, a := range as {
		list[i] = cu.CUpointer_attribute(a)
	}
	vals, r := drv.PointerGetAttributes(list, p)
	if r == cu.CUDA_SUCCESS {
		for i, v := range vals {
			if ds[i] != nil {
				writeValue(ds[i], v.Size, v.V)
			}
		}
	}
	return ret("cuPointerGetAttributes", r)
}

//export gpuos_cuPointerSetAttribute
func gpuos_cuPointerSetAttribute(value unsafe.Pointer, attr uint32, p uint64) int32 {
	if value == nil {
		return invalidValue
	}
	return ret("cuPointerSetAttribute", drv.PointerSetAttribute(cu.CUpointer_attribute(attr), p))
}
