package shim

import (
	"unsafe"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// maxExtraEntries bounds the walk of a cuLaunchKernel extra list that lacks
// its CU_LAUNCH_PARAM_END.
const maxExtraEntries = 64

// packParams lays the launch's arguments out in buf (reused, grown as needed)
// as the kernel's parameter layout says.
func packParams(f *function, kernelParams, extra uintptr, buf []byte) ([]byte, Result) {
	n := f.paramSize
	switch {
	case kernelParams != 0 && extra != 0:
		return nil, cu.CUDA_ERROR_INVALID_VALUE
	case kernelParams != 0:
		if uint32(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		clear(buf) // alignment padding
		args := unsafe.Slice((*uintptr)(hostPtr(kernelParams)), len(f.info.Params))
		for i, p := range f.info.Params {
			if args[i] == 0 {
				return nil, cu.CUDA_ERROR_INVALID_VALUE
			}
			copy(buf[p.Offset:p.Offset+p.Size], hostBytes(args[i], uint64(p.Size)))
		}
		return buf, cu.CUDA_SUCCESS
	case extra != 0:
		var ptr, size uintptr
		var haveSize bool
		for i := uintptr(0); i < maxExtraEntries; i++ {
			key := readU64(extra + 8*i)
			if key == cu.CU_LAUNCH_PARAM_END {
				break
			}
			val := uintptr(readU64(extra + 8*(i+1)))
			switch key {
			case cu.CU_LAUNCH_PARAM_BUFFER_POINTER:
				ptr = val
			case cu.CU_LAUNCH_PARAM_BUFFER_SIZE:
				if val == 0 {
					return nil, cu.CUDA_ERROR_INVALID_VALUE
				}
				size, haveSize = uintptr(readU64(val)), true
			default:
				return nil, cu.CUDA_ERROR_INVALID_VALUE
			}
			i++
		}
		if !haveSize || (ptr == 0 && n > 0) || size < uintptr(n) {
			return nil, cu.CUDA_ERROR_INVALID_VALUE
		}
		return append(buf[:0], hostBytes(ptr, uint64(n))...), cu.CUDA_SUCCESS
	}
	if n != 0 {
		return nil, cu.CUDA_ERROR_INVALID_VALUE
	}
	return buf[:0], cu.CUDA_SUCCESS
}

// ReadLaunchConfig reads the CUlaunchConfig at p (and its attributes).
func ReadLaunchConfig(p uintptr) (LaunchConfig, Result) {
	if p == 0 {
		return LaunchConfig{}, cu.CUDA_ERROR_INVALID_VALUE
	}
	c := (*cu.CUlaunchConfig)(hostPtr(p))
	cfg := LaunchConfig{
		Grid:      [3]uint32{c.GridDimX, c.GridDimY, c.GridDimZ},
		Block:     [3]uint32{c.BlockDimX, c.BlockDimY, c.BlockDimZ},
		SharedMem: c.SharedMemBytes,
		Stream:    uint64(c.HStream),
	}
	if c.NumAttrs > 0 {
		if c.Attrs == 0 {
			return LaunchConfig{}, cu.CUDA_ERROR_INVALID_VALUE
		}
		cfg.Attrs = unsafe.Slice((*cu.CUlaunchAttribute)(hostPtr(uintptr(c.Attrs))), c.NumAttrs)
	}
	return cfg, cu.CUDA_SUCCESS
}
