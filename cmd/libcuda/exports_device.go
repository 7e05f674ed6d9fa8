package main

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// Initialization, versions and devices.

//export gpuos_cuInit
func gpuos_cuInit(flags uint32) int32 { return ret("cuInit", drv.Init(flags)) }

//export gpuos_cuDriverGetVersion
func gpuos_cuDriverGetVersion(v *int32) int32 {
	if v == nil {
		return invalidValue
	}
	*v = int32(drv.DriverVersion())
	return success
}

//export gpuos_cuDeviceGet
func gpuos_cuDeviceGet(dev *int32, ordinal int32) int32 {
	if dev == nil {
		return invalidValue
	}
	d, r := drv.DeviceGet(ordinal)
	if r == cu.CUDA_SUCCESS {
		*dev = d
	}
	return ret("cuDeviceGet", r)
}

//export gpuos_cuDeviceGetCount
func gpuos_cuDeviceGetCount(n *int32) int32 {
	if n == nil {
		return invalidValue
	}
	c, r := drv.DeviceGetCount()
	if r == cu.CUDA_SUCCESS {
		*n = c
	}
	return ret("cuDeviceGetCount", r)
}

//export gpuos_cuDeviceGetName
func gpuos_cuDeviceGetName(name *C.char, n int32, dev int32) int32 {
	s, r := drv.DeviceGetName(dev)
	if r != cu.CUDA_SUCCESS {
		return ret("cuDeviceGetName", r)
	}
	if !putString(name, n, s) {
		return invalidValue
	}
	return success
}

func deviceUUID(uuid unsafe.Pointer, dev int32) int32 {
	if uuid == nil {
		return invalidValue
	}
	u, r := drv.DeviceGetUUID(dev)
	if r == cu.CUDA_SUCCESS {
		copy(unsafe.Slice((*byte)(uuid), 16), u[:])
	}
	return ret("cuDeviceGetUuid", r)
}

//export gpuos_cuDeviceGetUuid
func gpuos_cuDeviceGetUuid(uuid unsafe.Pointer, dev int32) int32 { return deviceUUID(uuid, dev) }

//export gpuos_cuDeviceGetUuid_v2
func gpuos_cuDeviceGetUuid_v2(uuid unsafe.Pointer, dev int32) int32 { return deviceUUID(uuid, dev) }

//export gpuos_cuDeviceTotalMem_v2
func gpuos_cuDeviceTotalMem_v2(bytes *uintptr, dev int32) int32 {
	if bytes == nil {
		return invalidValue
	}
	n, r := drv.DeviceTotalMem(dev)
	if r == cu.CUDA_SUCCESS {
		*bytes = uintptr(n)
	}
	return ret("cuDeviceTotalMem", r)
}

//export gpuos_cuDeviceGetAttribute
func gpuos_cuDeviceGetAttribute(pi *int32, attr uint32, dev int32) int32 {
	if pi == nil {
		return invalidValue
	}
	v, r := drv.DeviceGetAttribute(cu.CUdevice_attribute(attr), dev)
	if r == cu.CUDA_SUCCESS {
		*pi = v
	}
	return ret("cuDeviceGetAttribute", r)
}

//export gpuos_cuDeviceGetProperties
func gpuos_cuDeviceGetProperties(prop unsafe.Pointer, dev int32) int32 {
	if prop == nil {
		return invalidValue
	}
	p, r := drv.DeviceGetProperties(dev)
	if r == cu.CUDA_SUCCESS {
		*(*cu.CUdevprop)(prop) = p
	}
	return ret("cuDeviceGetProperties", r)
}

//export gpuos_cuDeviceComputeCapability
func gpuos_cuDeviceComputeCapability(major, minor *int32, dev int32) int32 {
	if major == nil || minor == nil {
		return invalidValue
	}
	a, b, r := drv.DeviceComputeCapability(dev)
	if r == cu.CUDA_SUCCESS {
		*major, *minor = a, b
	}
	return ret("cuDeviceComputeCapability", r)
}

//export gpuos_cuDeviceGetPCIBusId
func gpuos_cuDeviceGetPCIBusId(id *C.char, n int32, dev int32) int32 {
	s, r := drv.DeviceGetPCIBusID(dev)
	if r != cu.CUDA_SUCCESS {
		return ret("cuDeviceGetPCIBusId", r)
	}
	if !putString(id, n, s) {
		return invalidValue
	}
	return success
}

//export gpuos_cuDeviceGetByPCIBusId
func gpuos_cuDeviceGetByPCIBusId(dev *int32, id *C.char) int32 {
	s, ok := goString(id)
	if dev == nil || !ok {
		return invalidValue
	}
	d, r := drv.DeviceGetByPCIBusID(s)
	if r == cu.CUDA_SUCCESS {
		*dev = d
	}
	return ret("cuDeviceGetByPCIBusId", r)
}

//export gpuos_cuDeviceCanAccessPeer
func gpuos_cuDeviceCanAccessPeer(can *int32, dev, peer int32) int32 {
	if can == nil {
		return invalidValue
	}
	ok, r := drv.DeviceCanAccessPeer(dev, peer)
	if r == cu.CUDA_SUCCESS {
		*can = 0
		if ok {
			*can = 1
		}
	}
	return ret("cuDeviceCanAccessPeer", r)
}

// Primary contexts.

//export gpuos_cuDevicePrimaryCtxRetain
func gpuos_cuDevicePrimaryCtxRetain(pctx *uint64, dev int32) int32 {
	if pctx == nil {
		return invalidValue
	}
	h, r := drv.PrimaryCtxRetain(dev)
	if r == cu.CUDA_SUCCESS {
		*pctx = h
	}
	return ret("cuDevicePrimaryCtxRetain", r)
}

//export gpuos_cuDevicePrimaryCtxRelease
func gpuos_cuDevicePrimaryCtxRelease(dev int32) int32 {
	return ret("cuDevicePrimaryCtxRelease", drv.PrimaryCtxRelease(dev))
}

//export gpuos_cuDevicePrimaryCtxRelease_v2
func gpuos_cuDevicePrimaryCtxRelease_v2(dev int32) int32 {
	return ret("cuDevicePrimaryCtxRelease", drv.PrimaryCtxRelease(dev))
}

//export gpuos_cuDevicePrimaryCtxSetFlags
func gpuos_cuDevicePrimaryCtxSetFlags(dev int32, flags uint32) int32 {
	return ret("cuDevicePrimaryCtxSetFlags", drv.PrimaryCtxSetFlags(dev, flags))
}

//export gpuos_cuDevicePrimaryCtxSetFlags_v2
func gpuos_cuDevicePrimaryCtxSetFlags_v2(dev int32, flags uint32) int32 {
	return ret("cuDevicePrimaryCtxSetFlags", drv.PrimaryCtxSetFlags(dev, flags))
}

//export gpuos_cuDevicePrimaryCtxGetState
func gpuos_cuDevicePrimaryCtxGetState(dev int32, flags *uint32, active *int32) int32 {
	if flags == nil || active == nil {
		return invalidValue
	}
	f, a, r := drv.PrimaryCtxGetState(dev)
	if r == cu.CUDA_SUCCESS {
		*flags, *active = f, 0
		if a {
			*active = 1
		}
	}
	return ret("cuDevicePrimaryCtxGetState", r)
}

//export gpuos_cuDevicePrimaryCtxReset
func gpuos_cuDevicePrimaryCtxReset(dev int32) int32 {
	return ret("cuDevicePrimaryCtxReset", drv.PrimaryCtxReset(dev))
}

//export gpuos_cuDevicePrimaryCtxReset_v2
func gpuos_cuDevicePrimaryCtxReset_v2(dev int32) int32 {
	return ret("cuDevicePrimaryCtxReset", drv.PrimaryCtxReset(dev))
}
