package shim

import (
	"math"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// Occupancy is computed from the function's attributes and the device's, the
// way the CUDA occupancy calculator does: a block's threads are allocated by
// whole warps, its registers in units of 256 per warp, its shared memory in
// units of 128 bytes plus the per-block reservation; an SM holds as many
// blocks as the scarcest of threads, blocks, registers and shared memory
// allows.

const (
	regAllocUnit    = 256 // registers, per warp
	sharedAllocUnit = 128 // bytes
)

func roundUp(v, unit uint64) uint64 { return (v + unit - 1) / unit * unit }

// blocksPerSM is how many blocks of f with blockSize threads and dynShared
// bytes of dynamic shared memory fit on one SM.
func blocksPerSM(f *function, blockSize uint64, dynShared uint64) uint64 {
	dv := f.mod.dev
	a := func(x cu.CUdevice_attribute) uint64 { return uint64(max(dv.attr(x), 0)) }
	warp := max(a(cu.CU_DEVICE_ATTRIBUTE_WARP_SIZE), 1)
	if blockSize == 0 || blockSize > uint64(f.maxThreads()) {
		return 0
	}
	warps := (blockSize + warp - 1) / warp
	n := a(cu.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) / (warps * warp)
	if mb := a(cu.CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR); mb > 0 {
		n = min(n, mb)
	}
	if regs := uint64(f.info.NumRegs); regs > 0 {
		perBlock := roundUp(regs*warp, regAllocUnit) * warps
		if lim := a(cu.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK); lim > 0 && perBlock > lim {
			return 0
		}
		if perSM := a(cu.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR); perSM > 0 {
			n = min(n, perSM/perBlock)
		}
	}
	shared := uint64(f.info.SharedSizeBytes) + dynShared
	if optin := a(cu.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN); optin > 0 && shared > optin {
		return 0
	}
	if shared > 0 {
		perBlock := roundUp(shared, sharedAllocUnit) + a(cu.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)
		if perSM := a(cu.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR); perSM > 0 {
			n = min(n, perSM/perBlock)
		}
	}
	return n
}

// OccupancyMaxActiveBlocks is cuOccupancyMaxActiveBlocksPerMultiprocessor
// (WithFlags: the only flag changes caching, which does not change the
// count).
func (d *Driver) OccupancyMaxActiveBlocks(t Thread, fh uint64, blockSize int32, dynShared uint64, flags uint32) (int32, Result) {
	f, r := d.function(t, fh, AnyDevice)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if flags > uint32(cu.CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE) || blockSize <= 0 {
		return 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	return int32(blocksPerSM(f, uint64(blockSize), dynShared)), cu.CUDA_SUCCESS
}

// OccupancyMaxPotentialBlockSize is cuOccupancyMaxPotentialBlockSize: the
// block size (a multiple of the warp size, at most limit when limit > 0) with
// the most threads per SM, and the grid that fills the device with it.
// sharedFor, if not nil, gives the dynamic shared memory a block size needs.
func (d *Driver) OccupancyMaxPotentialBlockSize(t Thread, fh uint64, sharedFor func(blockSize int32) uint64, dynShared uint64, limit int32, flags uint32) (minGrid, blockSize int32, r Result) {
	f, r := d.function(t, fh, AnyDevice)
	if r != cu.CUDA_SUCCESS {
		return 0, 0, r
	}
	if flags > uint32(cu.CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE) || limit < 0 {
		return 0, 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	dv := f.mod.dev
	warp := uint64(max(dv.attr(cu.CU_DEVICE_ATTRIBUTE_WARP_SIZE), 1))
	most := uint64(f.maxThreads())
	if limit > 0 {
		most = min(most, uint64(limit))
	}
	candidates := []uint64{}
	for b := most / warp * warp; b >= warp; b -= warp {
		candidates = append(candidates, b)
	}
	if len(candidates) == 0 && most > 0 {
		candidates = append(candidates, most)
	}
	var bestThreads, bestSize, bestBlocks uint64
	for _, b := range candidates {
		shared := dynShared
		if sharedFor != nil {
			shared = sharedFor(int32(b))
		}
		n := blocksPerSM(f, b, shared)
		if n*b > bestThreads {
			bestThreads, bestSize, bestBlocks = n*b, b, n
		}
	}
	sms := uint64(max(dv.attr(cu.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 1))
	return int32(bestBlocks * sms), int32(bestSize), cu.CUDA_SUCCESS
}

// OccupancyAvailableDynamicSMemPerBlock is
// cuOccupancyAvailableDynamicSMemPerBlock: the most dynamic shared memory a
// block may use for numBlocks blocks of blockSize threads to fit on an SM.
func (d *Driver) OccupancyAvailableDynamicSMemPerBlock(t Thread, fh uint64, numBlocks, blockSize int32) (uint64, Result) {
	f, r := d.function(t, fh, AnyDevice)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if numBlocks <= 0 || blockSize <= 0 {
		return 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	if blocksPerSM(f, uint64(blockSize), 0) < uint64(numBlocks) {
		return 0, cu.CUDA_SUCCESS
	}
	dv := f.mod.dev
	a := func(x cu.CUdevice_attribute) uint64 { return uint64(max(dv.attr(x), 0)) }
	share := a(cu.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) / uint64(numBlocks)
	reserved := a(cu.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)
	if share <= reserved {
		return 0, cu.CUDA_SUCCESS
	}
	perBlock := (share - reserved) / sharedAllocUnit * sharedAllocUnit
	perBlock = min(perBlock, a(cu.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
	static := uint64(f.info.SharedSizeBytes)
	if perBlock <= static {
		return 0, cu.CUDA_SUCCESS
	}
	return perBlock - static, cu.CUDA_SUCCESS
}

// Thread block clusters: gpuos launches none (the protocol's launches have no
// cluster shape, cuLaunchKernelEx refuses a cluster dimension above 1 and
// CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH says 0), so the cluster occupancy calls
// answer for what gpuos can run: a "cluster" of one block is a block, and a
// larger cluster never fits. A library that probes cluster sizes (cuBLAS does
// at handle creation, for sizes 1 to 32) learns that clusters are out and picks
// kernels without them, rather than failing on a refused launch later. The
// real driver's numbers depend on how many SMs each GPC of the particular chip
// has, which no attribute tells; they would only matter once gpuos launched
// clusters.

// clusterShape returns the cluster dimensions of a launch configuration: its
// CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, else 1x1x1 (no gpuos function has a
// required cluster size). A zero dimension, or a grid that is not a whole
// number of clusters, is CUDA_ERROR_INVALID_CLUSTER_SIZE.
func clusterShape(cfg LaunchConfig) ([3]uint32, Result) {
	c := [3]uint32{1, 1, 1}
	for _, a := range cfg.Attrs {
		if a.ID == cu.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION {
			v := a.Value[:]
			c = [3]uint32{leU32(v), leU32(v[4:]), leU32(v[8:])}
		}
	}
	for i := range 3 {
		if c[i] == 0 || cfg.Grid[i]%c[i] != 0 {
			return c, cu.CUDA_ERROR_INVALID_CLUSTER_SIZE
		}
	}
	return c, cu.CUDA_SUCCESS
}

// clusterFunction checks an occupancy query's configuration and returns its
// function and cluster size in blocks.
func (d *Driver) clusterFunction(t Thread, fh uint64, cfg LaunchConfig) (*function, uint64, Result) {
	f, r := d.function(t, fh, AnyDevice)
	if r != cu.CUDA_SUCCESS {
		return nil, 0, r
	}
	for i := range 3 {
		if cfg.Grid[i] == 0 || cfg.Block[i] == 0 {
			return nil, 0, cu.CUDA_ERROR_INVALID_VALUE
		}
	}
	c, r := clusterShape(cfg)
	if r != cu.CUDA_SUCCESS {
		return nil, 0, r
	}
	return f, uint64(c[0]) * uint64(c[1]) * uint64(c[2]), cu.CUDA_SUCCESS
}

// OccupancyMaxActiveClusters is cuOccupancyMaxActiveClusters: for clusters of
// one block, as many as the device holds blocks of the configuration; for
// larger ones 0 (see above).
func (d *Driver) OccupancyMaxActiveClusters(t Thread, fh uint64, cfg LaunchConfig) (int32, Result) {
	f, n, r := d.clusterFunction(t, fh, cfg)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if n > 1 {
		d.log.Once("clusters:occupancy", "cuOccupancyMaxActiveClusters: gpuos launches no thread block clusters: answering 0 for clusters of more than one block")
		return 0, cu.CUDA_SUCCESS
	}
	threads := uint64(cfg.Block[0]) * uint64(cfg.Block[1]) * uint64(cfg.Block[2])
	sms := uint64(max(f.mod.dev.attr(cu.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 1))
	return int32(min(blocksPerSM(f, threads, uint64(cfg.SharedMem))*sms, math.MaxInt32)), cu.CUDA_SUCCESS
}

// OccupancyMaxPotentialClusterSize is cuOccupancyMaxPotentialClusterSize: 1,
// the only cluster size gpuos launches, when a block of the configuration
// fits on an SM; else 0.
func (d *Driver) OccupancyMaxPotentialClusterSize(t Thread, fh uint64, cfg LaunchConfig) (int32, Result) {
	f, _, r := d.clusterFunction(t, fh, cfg)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	threads := uint64(cfg.Block[0]) * uint64(cfg.Block[1]) * uint64(cfg.Block[2])
	if blocksPerSM(f, threads, uint64(cfg.SharedMem)) == 0 {
		return 0, cu.CUDA_SUCCESS
	}
	return 1, cu.CUDA_SUCCESS
}
