package shim

import (
	"fmt"
	"strings"

	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// attributeOverrides are device attributes whose answer is what the shim can
// do rather than what the GPU can: memory a kernel reads in place from this
// process, managed memory, IPC, memory pools, virtual memory management,
// cooperative and cluster launches and stream memory operations are not
// offered through gpuos, so applications that ask take their other path.
// Unified addressing is the shim's own: device and host addresses never
// collide in this process.
var attributeOverrides = map[cu.CUdevice_attribute]int32{
	cu.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:                            1,
	cu.CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:                           0,
	cu.CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:                                0,
	cu.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:                     0,
	cu.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:                        0,
	cu.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:  0,
	cu.CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST:           0,
	cu.CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:       0,
	cu.CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED:                  0,
	cu.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:                            0,
	cu.CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH:               0,
	cu.CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH:                                0,
	cu.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:           0,
	cu.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:   0,
	cu.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED:            0,
	cu.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED:        0,
	cu.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:                  0,
	cu.CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED:                 0,
	cu.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:       0,
	cu.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:                     0,
	cu.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS:          0,
	cu.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING:               0,
	cu.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:                        0,
	cu.CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:                0,
	cu.CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:                           0,
	cu.CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1:                     0,
	cu.CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1:              0,
	cu.CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1:              0,
	cu.CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:                 0,
	cu.CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:                 0,
	cu.CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES:                       0,
	cu.CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED:                   0,
	cu.CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED:         0,
	cu.CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED:          0,
	cu.CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:                             0,
	cu.CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:                           0,
	cu.CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:                       1,
	cu.CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:             1,
	cu.CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: 0,
	cu.CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED:              0,
	cu.CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED:             0,
	cu.CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED:                   0,
	cu.CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:      0,
	cu.CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED:                  0,
	cu.CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED:     0,
	cu.CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:                   1,
}

// deviceAttributes is what cuDeviceGetAttribute answers for a device: the
// daemon's values with the overrides applied, and the compute capability and
// SM count from the device description where the attribute list lacks them.
func deviceAttributes(info client.Device) []int32 {
	a := make([]int32, cu.CU_DEVICE_ATTRIBUTE_MAX)
	copy(a, info.Attributes)
	if a[cu.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] == 0 {
		a[cu.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] = int32(info.ComputeMajor)
		a[cu.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR] = int32(info.ComputeMinor)
	}
	if a[cu.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] == 0 {
		a[cu.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] = int32(info.SMCount)
	}
	for attr, v := range attributeOverrides {
		a[attr] = v
	}
	return a
}

// DeviceGetCount is cuDeviceGetCount.
func (d *Driver) DeviceGetCount() (int32, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return int32(len(d.devices)), cu.CUDA_SUCCESS
}

// DeviceGet is cuDeviceGet.
func (d *Driver) DeviceGet(ordinal int32) (int32, Result) {
	if _, r := d.device(ordinal); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return ordinal, cu.CUDA_SUCCESS
}

// DeviceGetName is cuDeviceGetName.
func (d *Driver) DeviceGetName(dev int32) (string, Result) {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return "", r
	}
	return dv.info.Name, cu.CUDA_SUCCESS
}

// DeviceGetUUID is cuDeviceGetUuid.
func (d *Driver) DeviceGetUUID(dev int32) ([16]byte, Result) {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return [16]byte{}, r
	}
	return dv.info.UUID, cu.CUDA_SUCCESS
}

// DeviceTotalMem is cuDeviceTotalMem.
func (d *Driver) DeviceTotalMem(dev int32) (uint64, Result) {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return dv.info.TotalMemory, cu.CUDA_SUCCESS
}

// DeviceGetAttribute is cuDeviceGetAttribute.
func (d *Driver) DeviceGetAttribute(attr cu.CUdevice_attribute, dev int32) (int32, Result) {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if attr == 0 || attr >= cu.CU_DEVICE_ATTRIBUTE_MAX {
		return 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	return dv.attrs[attr], cu.CUDA_SUCCESS
}

// attr is a device attribute of a known device.
func (dv *device) attr(a cu.CUdevice_attribute) int32 { return dv.attrs[a] }

// DeviceComputeCapability is cuDeviceComputeCapability.
func (d *Driver) DeviceComputeCapability(dev int32) (major, minor int32, r Result) {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return 0, 0, r
	}
	return dv.attr(cu.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), dv.attr(cu.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), cu.CUDA_SUCCESS
}

// DeviceGetProperties is cuDeviceGetProperties.
func (d *Driver) DeviceGetProperties(dev int32) (cu.CUdevprop, Result) {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return cu.CUdevprop{}, r
	}
	a := dv.attr
	return cu.CUdevprop{
		MaxThreadsPerBlock: a(cu.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
		MaxThreadsDim: [3]int32{a(cu.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X), a(cu.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
			a(cu.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)},
		MaxGridSize: [3]int32{a(cu.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), a(cu.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
			a(cu.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)},
		SharedMemPerBlock:   a(cu.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
		TotalConstantMemory: a(cu.CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY),
		SIMDWidth:           a(cu.CU_DEVICE_ATTRIBUTE_WARP_SIZE),
		MemPitch:            a(cu.CU_DEVICE_ATTRIBUTE_MAX_PITCH),
		RegsPerBlock:        a(cu.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
		ClockRate:           a(cu.CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
		TextureAlign:        a(cu.CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT),
	}, cu.CUDA_SUCCESS
}

// DeviceGetPCIBusID is cuDeviceGetPCIBusId.
func (d *Driver) DeviceGetPCIBusID(dev int32) (string, Result) {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return "", r
	}
	if dv.info.PCIBusID != "" {
		return dv.info.PCIBusID, cu.CUDA_SUCCESS
	}
	return fmt.Sprintf("%04x:%02x:%02x.0", dv.attr(cu.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
		dv.attr(cu.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID), dv.attr(cu.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)), cu.CUDA_SUCCESS
}

// DeviceGetByPCIBusID is cuDeviceGetByPCIBusId: the forms domain:bus:device.fn
// and bus:device.fn, case-insensitive.
func (d *Driver) DeviceGetByPCIBusID(id string) (int32, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	want := normalizePCI(id)
	for _, dv := range d.devices {
		bus, _ := d.DeviceGetPCIBusID(int32(dv.ordinal))
		if normalizePCI(bus) == want {
			return int32(dv.ordinal), cu.CUDA_SUCCESS
		}
	}
	return 0, cu.CUDA_ERROR_INVALID_VALUE
}

func normalizePCI(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if strings.Count(s, ":") == 1 {
		s = "0000:" + s
	}
	if i := strings.IndexByte(s, ':'); i > 4 { // an 8-digit domain
		s = s[i-4:]
	}
	return s
}

// DeviceCanAccessPeer is cuDeviceCanAccessPeer: gpuos offers no peer access.
func (d *Driver) DeviceCanAccessPeer(dev, peer int32) (bool, Result) {
	if _, r := d.device(dev); r != cu.CUDA_SUCCESS {
		return false, r
	}
	if _, r := d.device(peer); r != cu.CUDA_SUCCESS {
		return false, r
	}
	return false, cu.CUDA_SUCCESS
}
