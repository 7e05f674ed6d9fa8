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

//export cuInit
func cuInit(flags uint32) int32 { return ret("cuInit", drv.Init(flags)) }

//export cuDriverGetVersion
func cuDriverGetVersion(v *int32) int32 {
	if v == nil {
		return invalidValue
	}
	*v = int32(drv.DriverVersion())
	return success
}

//export cuDeviceGet
func cuDeviceGet(dev *int32, ordinal int32) int32 {
	if dev == nil {
		return invalidValue
	}
	d, r := drv.DeviceGet(ordinal)
	if r == cu.CUDA_SUCCESS {
		*dev = d
	}
	return ret("cuDeviceGet", r)
}

//export cuDeviceGetCount
func cuDeviceGetCount(n *int32) int32 {
	if n == nil {
		return invalidValue
	}
	c, r := drv.DeviceGetCount()
	if r == cu.CUDA_SUCCESS {
		*n = c
	}
	return ret("cuDeviceGetCount", r)
}

//export cuDeviceGetName
func cuDeviceGetName(name *C.char, n int32, dev int32) int32 {
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

//export cuDeviceGetUuid
func cuDeviceGetUuid(uuid unsafe.Pointer, dev int32) int32 { return deviceUUID(uuid, dev) }

//export cuDeviceGetUuid_v2
func cuDeviceGetUuid_v2(uuid unsafe.Pointer, dev int32) int32 { return deviceUUID(uuid, dev) }

//export cuDeviceTotalMem_v2
func cuDeviceTotalMem_v2(bytes *uintptr, dev int32) int32 {
	if bytes == nil {
		return invalidValue
	}
	n, r := drv.DeviceTotalMem(dev)
	if r == cu.CUDA_SUCCESS {
		*bytes = uintptr(n)
	}
	return ret("cuDeviceTotalMem", r)
}

//export cuDeviceGetAttribute
func cuDeviceGetAttribute(pi *int32, attr uint32, dev int32) int32 {
	if pi == nil {
		return invalidValue
	}
	v, r := drv.DeviceGetAttribute(cu.CUdevice_attribute(attr), dev)
	if r == cu.CUDA_SUCCESS {
		*pi = v
	}
	return ret("cuDeviceGetAttribute", r)
}

//export cuDeviceGetProperties
func cuDeviceGetProperties(prop unsafe.Pointer, dev int32) int32 {
	if prop == nil {
		return invalidValue
	}
	p, r := drv.DeviceGetProperties(dev)
	if r == cu.CUDA_SUCCESS {
		*(*cu.CUdevprop)(prop) = p
	}
	return ret("cuDeviceGetProperties", r)
}

//export cuDeviceComputeCapability
func cuDeviceComputeCapability(major, minor *int32, dev int32) int32 {
	if major == nil || minor == nil {
		return invalidValue
	}
	a, b, r := drv.DeviceComputeCapability(dev)
	if r == cu.CUDA_SUCCESS {
		*major, *minor = a, b
	}
	return ret("cuDeviceComputeCapability", r)
}

//export cuDeviceGetPCIBusId
func cuDeviceGetPCIBusId(id *C.char, n int32, dev int32) int32 {
	s, r := drv.DeviceGetPCIBusID(dev)
	if r != cu.CUDA_SUCCESS {
		return ret("cuDeviceGetPCIBusId", r)
	}
	if !putString(id, n, s) {
		return invalidValue
	}
	return success
}

//export cuDeviceGetByPCIBusId
func cuDeviceGetByPCIBusId(dev *int32, id *C.char) int32 {
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

//export cuDeviceCanAccessPeer
func cuDeviceCanAccessPeer(can *int32, dev, peer int32) int32 {
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

//export cuDevicePrimaryCtxRetain
func cuDevicePrimaryCtxRetain(pctx *uint64, dev int32) int32 {
	if pctx == nil {
		return invalidValue
	}
	h, r := drv.PrimaryCtxRetain(dev)
	if r == cu.CUDA_SUCCESS {
		*pctx = h
	}
	return ret("cuDevicePrimaryCtxRetain", r)
}

//export cuDevicePrimaryCtxRelease
func cuDevicePrimaryCtxRelease(dev int32) int32 {
	return ret("cuDevicePrimaryCtxRelease", drv.PrimaryCtxRelease(dev))
}

//export cuDevicePrimaryCtxRelease_v2
func cuDevicePrimaryCtxRelease_v2(dev int32) int32 {
	return ret("cuDevicePrimaryCtxRelease", drv.PrimaryCtxRelease(dev))
}

//export cuDevicePrimaryCtxSetFlags
func cuDevicePrimaryCtxSetFlags(dev int32, flags uint32) int32 {
	return ret("cuDevicePrimaryCtxSetFlags", drv.PrimaryCtxSetFlags(dev, flags))
}

//export cuDevicePrimaryCtxSetFlags_v2
func cuDevicePrimaryCtxSetFlags_v2(dev int32, flags uint32) int32 {
	return ret("cuDevicePrimaryCtxSetFlags", drv.PrimaryCtxSetFlags(dev, flags))
}

//export cuDevicePrimaryCtxGetState
func cuDevicePrimaryCtxGetState(dev int32, flags *uint32, active *int32) int32 {
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

//export cuDevicePrimaryCtxReset
func cuDevicePrimaryCtxReset(dev int32) int32 {
	return ret("cuDevicePrimaryCtxReset", drv.PrimaryCtxReset(dev))
}

//export cuDevicePrimaryCtxReset_v2
func cuDevicePrimaryCtxReset_v2(dev int32) int32 {
	return ret("cuDevicePrimaryCtxReset", drv.PrimaryCtxReset(dev))
}
