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

// Copies and memsets. Each API has its legacy-stream symbol and its
// per-thread-default-stream one (_ptds, _ptsz); gpuos gives both default
// streams the same meaning (see internal/shim), so the two share a body.

func memcpyGeneric(dst, src uint64, n uintptr, stream uint64, async bool) int32 {
	return ret("cuMemcpy", drv.Memcpy(thread(), dst, src, uint64(n), stream, async))
}

func memcpyHtoD(dst uint64, src unsafe.Pointer, n uintptr, stream uint64, async bool) int32 {
	return ret("cuMemcpyHtoD", drv.MemcpyHtoD(thread(), dst, uintptr(src), uint64(n), stream, async))
}

func memcpyDtoH(dst unsafe.Pointer, src uint64, n uintptr, stream uint64) int32 {
	return ret("cuMemcpyDtoH", drv.MemcpyDtoH(thread(), uintptr(dst), src, uint64(n), stream))
}

func memcpyDtoD(dst, src uint64, n uintptr, stream uint64) int32 {
	return ret("cuMemcpyDtoD", drv.MemcpyDtoD(thread(), dst, src, uint64(n), stream))
}

// copy2D reads a CUDA_MEMCPY2D.
func copy2D(p unsafe.Pointer) shim.Copy3D {
	c := (*cu.CUDA_MEMCPY2D)(p)
	return shim.Copy3D{
		Src: shim.Side{MemoryType: c.SrcMemoryType, Host: uintptr(c.SrcHost), Device: uint64(c.SrcDevice), Array: uint64(c.SrcArray),
			X: c.SrcXInBytes, Y: c.SrcY, Pitch: c.SrcPitch},
		Dst: shim.Side{MemoryType: c.DstMemoryType, Host: uintptr(c.DstHost), Device: uint64(c.DstDevice), Array: uint64(c.DstArray),
			X: c.DstXInBytes, Y: c.DstY, Pitch: c.DstPitch},
		Width: c.WidthInBytes, Height: c.Height, Depth: 1,
	}
}

// copy3D reads a CUDA_MEMCPY3D; mipmap levels and the reserved fields must be
// zero.
func copy3D(p unsafe.Pointer) (shim.Copy3D, bool) {
	c := (*cu.CUDA_MEMCPY3D)(p)
	if c.SrcLOD != 0 || c.DstLOD != 0 || c.Reserved0 != 0 || c.Reserved1 != 0 {
		return shim.Copy3D{}, false
	}
	return shim.Copy3D{
		Src: shim.Side{MemoryType: c.SrcMemoryType, Host: uintptr(c.SrcHost), Device: uint64(c.SrcDevice), Array: uint64(c.SrcArray),
			X: c.SrcXInBytes, Y: c.SrcY, Z: c.SrcZ, Pitch: c.SrcPitch, Height: c.SrcHeight},
		Dst: shim.Side{MemoryType: c.DstMemoryType, Host: uintptr(c.DstHost), Device: uint64(c.DstDevice), Array: uint64(c.DstArray),
			X: c.DstXInBytes, Y: c.DstY, Z: c.DstZ, Pitch: c.DstPitch, Height: c.DstHeight},
		Width: c.WidthInBytes, Height: c.Height, Depth: c.Depth,
	}, true
}

func memcpy2D(p unsafe.Pointer, stream uint64, async bool) int32 {
	if p == nil {
		return invalidValue
	}
	return ret("cuMemcpy2D", drv.Memcpy3D(thread(), copy2D(p), stream, async))
}

func memcpy3D(p unsafe.Pointer, stream uint64, async bool) int32 {
	if p == nil {
		return invalidValue
	}
	c, ok := copy3D(p)
	if !ok {
		return invalidValue
	}
	return ret("cuMemcpy3D", drv.Memcpy3D(thread(), c, stream, async))
}

// memcpyPeer copies between contexts: gpuos copies between contexts of one
// device; between devices it refuses.
func memcpyPeer(dst, dstCtx, src, srcCtx uint64, n uintptr, stream uint64, async bool) int32 {
	if dstCtx == 0 || srcCtx == 0 {
		return int32(cu.CUDA_ERROR_INVALID_CONTEXT)
	}
	return ret("cuMemcpyPeer", drv.MemcpyPeer(thread(), dst, dstCtx, src, srcCtx, uint64(n), stream, async))
}

func memset(name string, dst uint64, v uint32, elem int, n uintptr, stream uint64) int32 {
	return ret(name, drv.Memset(thread(), dst, v, elem, uint64(n), stream))
}

func memset2D(name string, dst uint64, pitch uintptr, v uint32, elem int, w, h uintptr, stream uint64) int32 {
	return ret(name, drv.Memset2D(thread(), dst, uint64(pitch), v, elem, uint64(w), uint64(h), stream))
}

//export gpuos_cuMemcpy
func gpuos_cuMemcpy(dst, src uint64, n uintptr) int32 { return memcpyGeneric(dst, src, n, 0, false) }

//export gpuos_cuMemcpy_ptds
func gpuos_cuMemcpy_ptds(dst, src uint64, n uintptr) int32 {
	return memcpyGeneric(dst, src, n, 0, false)
}

//export gpuos_cuMemcpyAsync
func gpuos_cuMemcpyAsync(dst, src uint64, n uintptr, stream uint64) int32 {
	return memcpyGeneric(dst, src, n, stream, true)
}

//export gpuos_cuMemcpyAsync_ptsz
func gpuos_cuMemcpyAsync_ptsz(dst, src uint64, n uintptr, stream uint64) int32 {
	return memcpyGeneric(dst, src, n, stream, true)
}

//export gpuos_cuMemcpyHtoD_v2
func gpuos_cuMemcpyHtoD_v2(dst uint64, src unsafe.Pointer, n uintptr) int32 {
	return memcpyHtoD(dst, src, n, 0, false)
}

//export gpuos_cuMemcpyHtoD_v2_ptds
func gpuos_cuMemcpyHtoD_v2_ptds(dst uint64, src unsafe.Pointer, n uintptr) int32 {
	return memcpyHtoD(dst, src, n, 0, false)
}

//export gpuos_cuMemcpyHtoDAsync_v2
func gpuos_cuMemcpyHtoDAsync_v2(dst uint64, src unsafe.Pointer, n uintptr, stream uint64) int32 {
	return memcpyHtoD(dst, src, n, stream, true)
}

//export gpuos_cuMemcpyHtoDAsync_v2_ptsz
func gpuos_cuMemcpyHtoDAsync_v2_ptsz(dst uint64, src unsafe.Pointer, n uintptr, stream uint64) int32 {
	return memcpyHtoD(dst, src, n, stream, true)
}

//export gpuos_cuMemcpyDtoH_v2
func gpuos_cuMemcpyDtoH_v2(dst unsafe.Pointer, src uint64, n uintptr) int32 {
	return memcpyDtoH(dst, src, n, 0)
}

//export gpuos_cuMemcpyDtoH_v2_ptds
func gpuos_cuMemcpyDtoH_v2_ptds(dst unsafe.Pointer, src uint64, n uintptr) int32 {
	return memcpyDtoH(dst, src, n, 0)
}

//export gpuos_cuMemcpyDtoHAsync_v2
func gpuos_cuMemcpyDtoHAsync_v2(dst unsafe.Pointer, src uint64, n uintptr, stream uint64) int32 {
	return memcpyDtoH(dst, src, n, stream)
}

//export gpuos_cuMemcpyDtoHAsync_v2_ptsz
func gpuos_cuMemcpyDtoHAsync_v2_ptsz(dst unsafe.Pointer, src uint64, n uintptr, stream uint64) int32 {
	return memcpyDtoH(dst, src, n, stream)
}

//export gpuos_cuMemcpyDtoD_v2
func gpuos_cuMemcpyDtoD_v2(dst, src uint64, n uintptr) int32 { return memcpyDtoD(dst, src, n, 0) }

//export gpuos_cuMemcpyDtoD_v2_ptds
func gpuos_cuMemcpyDtoD_v2_ptds(dst, src uint64, n uintptr) int32 { return memcpyDtoD(dst, src, n, 0) }

//export gpuos_cuMemcpyDtoDAsync_v2
func gpuos_cuMemcpyDtoDAsync_v2(dst, src uint64, n uintptr, stream uint64) int32 {
	return memcpyDtoD(dst, src, n, stream)
}

//export gpuos_cuMemcpyDtoDAsync_v2_ptsz
func gpuos_cuMemcpyDtoDAsync_v2_ptsz(dst, src uint64, n uintptr, stream uint64) int32 {
	return memcpyDtoD(dst, src, n, stream)
}

//export gpuos_cuMemcpy2D_v2
func gpuos_cuMemcpy2D_v2(p unsafe.Pointer) int32 { return memcpy2D(p, 0, false) }

//export gpuos_cuMemcpy2D_v2_ptds
func gpuos_cuMemcpy2D_v2_ptds(p unsafe.Pointer) int32 { return memcpy2D(p, 0, false) }

//export gpuos_cuMemcpy2DUnaligned_v2
func gpuos_cuMemcpy2DUnaligned_v2(p unsafe.Pointer) int32 { return memcpy2D(p, 0, false) }

//export gpuos_cuMemcpy2DUnaligned_v2_ptds
func gpuos_cuMemcpy2DUnaligned_v2_ptds(p unsafe.Pointer) int32 { return memcpy2D(p, 0, false) }

//export gpuos_cuMemcpy2DAsync_v2
func gpuos_cuMemcpy2DAsync_v2(p unsafe.Pointer, stream uint64) int32 {
	return memcpy2D(p, stream, true)
}

//export gpuos_cuMemcpy2DAsync_v2_ptsz
func gpuos_cuMemcpy2DAsync_v2_ptsz(p unsafe.Pointer, stream uint64) int32 {
	return memcpy2D(p, stream, true)
}

//export gpuos_cuMemcpy3D_v2
func gpuos_cuMemcpy3D_v2(p unsafe.Pointer) int32 { return memcpy3D(p, 0, false) }

//export gpuos_cuMemcpy3D_v2_ptds
func gpuos_cuMemcpy3D_v2_ptds(p unsafe.Pointer) int32 { return memcpy3D(p, 0, false) }

//export gpuos_cuMemcpy3DAsync_v2
func gpuos_cuMemcpy3DAsync_v2(p unsafe.Pointer, stream uint64) int32 {
	return memcpy3D(p, stream, true)
}

//export gpuos_cuMemcpy3DAsync_v2_ptsz
func gpuos_cuMemcpy3DAsync_v2_ptsz(p unsafe.Pointer, stream uint64) int32 {
	return memcpy3D(p, stream, true)
}

//export gpuos_cuMemcpyPeer
func gpuos_cuMemcpyPeer(dst, dstCtx, src, srcCtx uint64, n uintptr) int32 {
	return memcpyPeer(dst, dstCtx, src, srcCtx, n, 0, false)
}

//export gpuos_cuMemcpyPeer_ptds
func gpuos_cuMemcpyPeer_ptds(dst, dstCtx, src, srcCtx uint64, n uintptr) int32 {
	return memcpyPeer(dst, dstCtx, src, srcCtx, n, 0, false)
}

//export gpuos_cuMemcpyPeerAsync
func gpuos_cuMemcpyPeerAsync(dst, dstCtx, src, srcCtx uint64, n uintptr, stream uint64) int32 {
	return memcpyPeer(dst, dstCtx, src, srcCtx, n, stream, true)
}

//export gpuos_cuMemcpyPeerAsync_ptsz
func gpuos_cuMemcpyPeerAsync_ptsz(dst, dstCtx, src, srcCtx uint64, n uintptr, stream uint64) int32 {
	return memcpyPeer(dst, dstCtx, src, srcCtx, n, stream, true)
}

//export gpuos_cuMemsetD8_v2
func gpuos_cuMemsetD8_v2(dst uint64, v uint8, n uintptr) int32 {
	return memset("cuMemsetD8", dst, uint32(v), 1, n, 0)
}

//export gpuos_cuMemsetD8_v2_ptds
func gpuos_cuMemsetD8_v2_ptds(dst uint64, v uint8, n uintptr) int32 {
	return memset("cuMemsetD8", dst, uint32(v), 1, n, 0)
}

//export gpuos_cuMemsetD8Async
func gpuos_cuMemsetD8Async(dst uint64, v uint8, n uintptr, stream uint64) int32 {
	return memset("cuMemsetD8Async", dst, uint32(v), 1, n, stream)
}

//export gpuos_cuMemsetD8Async_ptsz
func gpuos_cuMemsetD8Async_ptsz(dst uint64, v uint8, n uintptr, stream uint64) int32 {
	return memset("cuMemsetD8Async", dst, uint32(v), 1, n, stream)
}

//export gpuos_cuMemsetD2D8_v2
func gpuos_cuMemsetD2D8_v2(dst uint64, pitch uintptr, v uint8, w, h uintptr) int32 {
	return memset2D("cuMemsetD2D8", dst, pitch, uint32(v), 1, w, h, 0)
}

//export gpuos_cuMemsetD2D8_v2_ptds
func gpuos_cuMemsetD2D8_v2_ptds(dst uint64, pitch uintptr, v uint8, w, h uintptr) int32 {
	return memset2D("cuMemsetD2D8", dst, pitch, uint32(v), 1, w, h, 0)
}

//export gpuos_cuMemsetD2D8Async
func gpuos_cuMemsetD2D8Async(dst uint64, pitch uintptr, v uint8, w, h uintptr, stream uint64) int32 {
	return memset2D("cuMemsetD2D8Async", dst, pitch, uint32(v), 1, w, h, stream)
}

//export gpuos_cuMemsetD2D8Async_ptsz
func gpuos_cuMemsetD2D8Async_ptsz(dst uint64, pitch uintptr, v uint8, w, h uintptr, stream uint64) int32 {
	return memset2D("cuMemsetD2D8Async", dst, pitch, uint32(v), 1, w, h, stream)
}

//export gpuos_cuMemsetD16_v2
func gpuos_cuMemsetD16_v2(dst uint64, v uint16, n uintptr) int32 {
	return memset("cuMemsetD16", dst, uint32(v), 2, n, 0)
}

//export gpuos_cuMemsetD16_v2_ptds
func gpuos_cuMemsetD16_v2_ptds(dst uint64, v uint16, n uintptr) int32 {
	return memset("cuMemsetD16", dst, uint32(v), 2, n, 0)
}

//export gpuos_cuMemsetD16Async
func gpuos_cuMemsetD16Async(dst uint64, v uint16, n uintptr, stream uint64) int32 {
	return memset("cuMemsetD16Async", dst, uint32(v), 2, n, stream)
}

//export gpuos_cuMemsetD16Async_ptsz
func gpuos_cuMemsetD16Async_ptsz(dst uint64, v uint16, n uintptr, stream uint64) int32 {
	return memset("cuMemsetD16Async", dst, uint32(v), 2, n, stream)
}

//export gpuos_cuMemsetD2D16_v2
func gpuos_cuMemsetD2D16_v2(dst uint64, pitch uintptr, v uint16, w, h uintptr) int32 {
	return memset2D("cuMemsetD2D16", dst, pitch, uint32(v), 2, w, h, 0)
}

//export gpuos_cuMemsetD2D16_v2_ptds
func gpuos_cuMemsetD2D16_v2_ptds(dst uint64, pitch uintptr, v uint16, w, h uintptr) int32 {
	return memset2D("cuMemsetD2D16", dst, pitch, uint32(v), 2, w, h, 0)
}

//export gpuos_cuMemsetD2D16Async
func gpuos_cuMemsetD2D16Async(dst uint64, pitch uintptr, v uint16, w, h uintptr, stream uint64) int32 {
	return memset2D("cuMemsetD2D16Async", dst, pitch, uint32(v), 2, w, h, stream)
}

//export gpuos_cuMemsetD2D16Async_ptsz
func gpuos_cuMemsetD2D16Async_ptsz(dst uint64, pitch uintptr, v uint16, w, h uintptr, stream uint64) int32 {
	return memset2D("cuMemsetD2D16Async", dst, pitch, uint32(v), 2, w, h, stream)
}

//export gpuos_cuMemsetD32_v2
func gpuos_cuMemsetD32_v2(dst uint64, v uint32, n uintptr) int32 {
	return memset("cuMemsetD32", dst, uint32(v), 4, n, 0)
}

//export gpuos_cuMemsetD32_v2_ptds
func gpuos_cuMemsetD32_v2_ptds(dst uint64, v uint32, n uintptr) int32 {
	return memset("cuMemsetD32", dst, uint32(v), 4, n, 0)
}

//export gpuos_cuMemsetD32Async
func gpuos_cuMemsetD32Async(dst uint64, v uint32, n uintptr, stream uint64) int32 {
	return memset("cuMemsetD32Async", dst, uint32(v), 4, n, stream)
}

//export gpuos_cuMemsetD32Async_ptsz
func gpuos_cuMemsetD32Async_ptsz(dst uint64, v uint32, n uintptr, stream uint64) int32 {
	return memset("cuMemsetD32Async", dst, uint32(v), 4, n, stream)
}

//export gpuos_cuMemsetD2D32_v2
func gpuos_cuMemsetD2D32_v2(dst uint64, pitch uintptr, v uint32, w, h uintptr) int32 {
	return memset2D("cuMemsetD2D32", dst, pitch, uint32(v), 4, w, h, 0)
}

//export gpuos_cuMemsetD2D32_v2_ptds
func gpuos_cuMemsetD2D32_v2_ptds(dst uint64, pitch uintptr, v uint32, w, h uintptr) int32 {
	return memset2D("cuMemsetD2D32", dst, pitch, uint32(v), 4, w, h, 0)
}

//export gpuos_cuMemsetD2D32Async
func gpuos_cuMemsetD2D32Async(dst uint64, pitch uintptr, v uint32, w, h uintptr, stream uint64) int32 {
	return memset2D("cuMemsetD2D32Async", dst, pitch, uint32(v), 4, w, h, stream)
}

//export gpuos_cuMemsetD2D32Async_ptsz
func gpuos_cuMemsetD2D32Async_ptsz(dst uint64, pitch uintptr, v uint32, w, h uintptr, stream uint64) int32 {
	return memset2D("cuMemsetD2D32Async", dst, pitch, uint32(v), 4, w, h, stream)
}
