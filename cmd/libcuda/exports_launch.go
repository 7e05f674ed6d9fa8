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

// Launches and occupancy. The launch path stays short: no thread lookup, no
// allocation here; the packing buffer is pooled in internal/shim.

func launch(f uint64, gx, gy, gz, bx, by, bz, shared uint32, stream uint64, params, extra unsafe.Pointer) int32 {
	r := drv.LaunchKernel(thread, f, [3]uint32{gx, gy, gz}, [3]uint32{bx, by, bz}, shared, stream, uintptr(params), uintptr(extra))
	if r != cu.CUDA_SUCCESS {
		return ret("cuLaunchKernel", r)
	}
	return success
}

//export gpuos_cuLaunchKernel
func gpuos_cuLaunchKernel(f uint64, gx, gy, gz, bx, by, bz, shared uint32, stream uint64, params, extra unsafe.Pointer) int32 {
	return launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra)
}

//export gpuos_cuLaunchKernel_ptsz
func gpuos_cuLaunchKernel_ptsz(f uint64, gx, gy, gz, bx, by, bz, shared uint32, stream uint64, params, extra unsafe.Pointer) int32 {
	return launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra)
}

func launchEx(cfg unsafe.Pointer, f uint64, params, extra unsafe.Pointer) int32 {
	c, r := shim.ReadLaunchConfig(uintptr(cfg))
	if r != cu.CUDA_SUCCESS {
		return ret("cuLaunchKernelEx", r)
	}
	return ret("cuLaunchKernelEx", drv.LaunchKernelEx(thread(), c, f, uintptr(params), uintptr(extra)))
}

//export gpuos_cuLaunchKernelEx
func gpuos_cuLaunchKernelEx(cfg unsafe.Pointer, f uint64, params, extra unsafe.Pointer) int32 {
	return launchEx(cfg, f, params, extra)
}

//export gpuos_cuLaunchKernelEx_ptsz
func gpuos_cuLaunchKernelEx_ptsz(cfg unsafe.Pointer, f uint64, params, extra unsafe.Pointer) int32 {
	return launchEx(cfg, f, params, extra)
}

func maxActiveBlocks(n *int32, f uint64, blockSize int32, shared uintptr, flags uint32) int32 {
	if n == nil {
		return invalidValue
	}
	v, r := drv.OccupancyMaxActiveBlocks(thread(), f, blockSize, uint64(shared), flags)
	if r == cu.CUDA_SUCCESS {
		*n = v
	}
	return ret("cuOccupancyMaxActiveBlocksPerMultiprocessor", r)
}

//export gpuos_cuOccupancyMaxActiveBlocksPerMultiprocessor
func gpuos_cuOccupancyMaxActiveBlocksPerMultiprocessor(n *int32, f uint64, blockSize int32, shared uintptr) int32 {
	return maxActiveBlocks(n, f, blockSize, shared, 0)
}

//export gpuos_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags
func gpuos_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n *int32, f uint64, blockSize int32, shared uintptr, flags uint32) int32 {
	return maxActiveBlocks(n, f, blockSize, shared, flags)
}

func potentialBlockSize(minGrid, blockSize *int32, f uint64, b2d unsafe.Pointer, shared uintptr, limit int32, flags uint32) int32 {
	if minGrid == nil || blockSize == nil {
		return invalidValue
	}
	var sharedFor func(int32) uint64
	if b2d != nil {
		sharedFor = func(b int32) uint64 { return uint64(C.gpuos_call_b2d(b2d, C.int(b))) }
	}
	g, b, r := drv.OccupancyMaxPotentialBlockSize(thread(), f, sharedFor, uint64(shared), limit, flags)
	if r == cu.CUDA_SUCCESS {
		*minGrid, *blockSize = g, b
	}
	return ret("cuOccupancyMaxPotentialBlockSize", r)
}

//export gpuos_cuOccupancyMaxPotentialBlockSize
func gpuos_cuOccupancyMaxPotentialBlockSize(minGrid, blockSize *int32, f uint64, b2d unsafe.Pointer, shared uintptr, limit int32) int32 {
	return potentialBlockSize(minGrid, blockSize, f, b2d, shared, limit, 0)
}

//export gpuos_cuOccupancyMaxPotentialBlockSizeWithFlags
func gpuos_cuOccupancyMaxPotentialBlockSizeWithFlags(minGrid, blockSize *int32, f uint64, b2d unsafe.Pointer, shared uintptr, limit int32, flags uint32) int32 {
	return potentialBlockSize(minGrid, blockSize, f, b2d, shared, limit, flags)
}

//export gpuos_cuOccupancyAvailableDynamicSMemPerBlock
func gpuos_cuOccupancyAvailableDynamicSMemPerBlock(shared *uintptr, f uint64, numBlocks, blockSize int32) int32 {
	if shared == nil {
		return invalidValue
	}
	v, r := drv.OccupancyAvailableDynamicSMemPerBlock(thread(), f, numBlocks, blockSize)
	if r == cu.CUDA_SUCCESS {
		*shared = uintptr(v)
	}
	return ret("cuOccupancyAvailableDynamicSMemPerBlock", r)
}

func clusterQuery(name string, out *int32, f uint64, cfg unsafe.Pointer, q func(shim.Thread, uint64, shim.LaunchConfig) (int32, cu.CUresult)) int32 {
	if out == nil {
		return invalidValue
	}
	c, r := shim.ReadLaunchConfig(uintptr(cfg))
	if r != cu.CUDA_SUCCESS {
		return ret(name, r)
	}
	v, r := q(thread(), f, c)
	if r == cu.CUDA_SUCCESS {
		*out = v
	}
	return ret(name, r)
}

//export gpuos_cuOccupancyMaxActiveClusters
func gpuos_cuOccupancyMaxActiveClusters(n *int32, f uint64, cfg unsafe.Pointer) int32 {
	return clusterQuery("cuOccupancyMaxActiveClusters", n, f, cfg, drv.OccupancyMaxActiveClusters)
}

//export gpuos_cuOccupancyMaxPotentialClusterSize
func gpuos_cuOccupancyMaxPotentialClusterSize(size *int32, f uint64, cfg unsafe.Pointer) int32 {
	return clusterQuery("cuOccupancyMaxPotentialClusterSize", size, f, cfg, drv.OccupancyMaxPotentialClusterSize)
}
