package shim

import (
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// h100 is a device with the H100's per-SM resources.
func h100() *device {
	a := make([]int32, cu.CU_DEVICE_ATTRIBUTE_MAX)
	a[cu.CU_DEVICE_ATTRIBUTE_WARP_SIZE] = 32
	a[cu.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = 1024
	a[cu.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR] = 2048
	a[cu.CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR] = 32
	a[cu.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR] = 65536
	a[cu.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK] = 65536
	a[cu.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR] = 233472
	a[cu.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK] = 49152
	a[cu.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN] = 232448
	a[cu.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK] = 1024
	a[cu.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] = 132
	return &device{attrs: a}
}

func fn(dv *device, regs, shared uint32) *function {
	info := v1.KernelInfo{NumRegs: regs, SharedSizeBytes: shared, MaxThreadsPerBlock: 1024}
	return &function{mod: &module{ctx: &ctxObj{dev: dv}, dev: dv}, info: info, threads: maxThreads(dv, info)}
}

func TestBlocksPerSM(t *testing.T) {
	dv := h100()
	tests := []struct {
		name             string
		regs, shared     uint32
		block, dynShared uint64
		want             uint64
	}{
		{"threads bound", 16, 0, 256, 0, 8},
		{"block count bound", 8, 0, 32, 0, 32},
		{"registers bound", 64, 0, 256, 0, 4},
		{"registers rounded per warp", 34, 0, 256, 0, 6},
		{"shared memory bound", 16, 0, 128, 48 * 1024, 4},
		{"static and dynamic shared", 16, 16 * 1024, 128, 32 * 1024, 4},
		{"too much shared", 16, 0, 128, 240 * 1024, 0},
		{"block too large", 16, 0, 2048, 0, 0},
		{"partial warp counts whole", 16, 0, 33, 0, 32},
	}
	for _, tt := range tests {
		if got := blocksPerSM(fn(dv, tt.regs, tt.shared), tt.block, tt.dynShared); got != tt.want {
			t.Errorf("%s: %d blocks, want %d", tt.name, got, tt.want)
		}
	}
}
