package shim

import (
	"encoding/binary"
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

// Cluster occupancy answers for what gpuos launches: one-block clusters.
func TestDriverClusterOccupancy(t *testing.T) {
	d, _ := newDriver(t)
	const th = Thread(31)
	_, r := d.CtxCreate(th, 0, 0)
	must(t, "CtxCreate", r)
	f := loadVecadd(t, d, th)
	perSM, r := d.OccupancyMaxActiveBlocks(th, f, 128, 0, 0)
	must(t, "OccupancyMaxActiveBlocks", r)
	cluster := func(x, y, z uint32) cu.CUlaunchAttribute {
		a := cu.CUlaunchAttribute{ID: cu.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION}
		binary.LittleEndian.PutUint32(a.Value[0:], x)
		binary.LittleEndian.PutUint32(a.Value[4:], y)
		binary.LittleEndian.PutUint32(a.Value[8:], z)
		return a
	}
	cfg := func(grid, block uint32, attrs ...cu.CUlaunchAttribute) LaunchConfig {
		return LaunchConfig{Grid: [3]uint32{grid, 1, 1}, Block: [3]uint32{block, 1, 1}, Attrs: attrs}
	}
	tests := []struct {
		name  string
		cfg   LaunchConfig
		want  int32
		wantR Result
	}{
		{"no cluster dimension: clusters of one block", cfg(8, 128), perSM * 132, cu.CUDA_SUCCESS},
		{"1x1x1", cfg(8, 128, cluster(1, 1, 1)), perSM * 132, cu.CUDA_SUCCESS},
		{"2x1x1: gpuos launches none", cfg(8, 128, cluster(2, 1, 1)), 0, cu.CUDA_SUCCESS},
		{"16x1x1", cfg(16, 128, cluster(16, 1, 1)), 0, cu.CUDA_SUCCESS},
		{"grid not a whole number of clusters", cfg(8, 128, cluster(3, 1, 1)), 0, cu.CUDA_ERROR_INVALID_CLUSTER_SIZE},
		{"zero cluster dimension", cfg(8, 128, cluster(0, 1, 1)), 0, cu.CUDA_ERROR_INVALID_CLUSTER_SIZE},
		{"empty block", cfg(8, 0), 0, cu.CUDA_ERROR_INVALID_VALUE},
		{"block too large to fit", cfg(8, 2048), 0, cu.CUDA_SUCCESS},
	}
	for _, tt := range tests {
		got, r := d.OccupancyMaxActiveClusters(th, f, tt.cfg)
		if got != tt.want || r != tt.wantR {
			t.Errorf("%s: OccupancyMaxActiveClusters = %d, %v; want %d, %v", tt.name, got, r, tt.want, tt.wantR)
		}
	}
	if got, r := d.OccupancyMaxPotentialClusterSize(th, f, cfg(8, 128)); got != 1 || r != cu.CUDA_SUCCESS {
		t.Errorf("OccupancyMaxPotentialClusterSize = %d, %v; want 1", got, r)
	}
	if got, r := d.OccupancyMaxPotentialClusterSize(th, f, cfg(8, 2048)); got != 0 || r != cu.CUDA_SUCCESS {
		t.Errorf("OccupancyMaxPotentialClusterSize of a block that does not fit = %d, %v; want 0", got, r)
	}
	if _, r := d.OccupancyMaxActiveClusters(th, 0xdead, cfg(8, 128)); r != cu.CUDA_ERROR_INVALID_HANDLE {
		t.Errorf("OccupancyMaxActiveClusters of no function: %v, want CUDA_ERROR_INVALID_HANDLE", r)
	}
}
