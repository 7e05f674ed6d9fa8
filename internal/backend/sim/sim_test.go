package sim

import (
	"errors"
	"testing"

	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
)

func TestOptions(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		ok   bool
	}{
		{"defaults", Options{}, true},
		{"four devices", Options{Devices: 4}, true},
		{"negative devices", Options{Devices: -1}, false},
		{"granularity not a power of two", Options{Granularity: 3 << 20}, false},
		{"granularity too small", Options{Granularity: 512}, false},
		{"memory below a granule", Options{Memory: 1 << 20}, false},
		{"negative SMs", Options{SMs: -2}, false},
		{"negative workers", Options{Workers: -1}, false},
	}
	for _, tt := range tests {
		b := New(tt.o)
		_, err := b.Devices()
		_, openErr := b.Open(0)
		if tt.ok {
			if err != nil || openErr != nil {
				t.Errorf("%s: Devices %v, Open %v", tt.name, err, openErr)
			}
			continue
		}
		if !errors.Is(err, backend.ErrInvalidArgument) || !errors.Is(openErr, backend.ErrInvalidArgument) {
			t.Errorf("%s: Devices %v, Open %v; want ErrInvalidArgument", tt.name, err, openErr)
		}
	}
}

func TestBackend(t *testing.T) {
	b := New(Options{Devices: 2, Memory: 8 << 30})
	if b.Name() != "sim" || b.DriverVersion() != 13000 {
		t.Fatalf("Name %q, DriverVersion %d", b.Name(), b.DriverVersion())
	}
	infos, err := b.Devices()
	must(t, err)
	if len(infos) != 2 {
		t.Fatalf("%d devices", len(infos))
	}
	for i, info := range infos {
		if info.Ordinal != i || info.Name != DefaultName || info.TotalMemory != 8<<30 ||
			info.ComputeMajor != 9 || info.ComputeMinor != 0 || info.SMCount != 132 || info.PCIBusID == "" {
			t.Errorf("device %d: %+v", i, info)
		}
	}
	if infos[0].UUID == infos[1].UUID || infos[0].PCIBusID == infos[1].PCIBusID {
		t.Fatal("devices share a UUID or bus id")
	}
	d, err := b.Open(1)
	must(t, err)
	defer d.Close()
	if _, err := b.Open(1); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("second Open = %v", err)
	}
	for _, ord := range []int{-1, 2} {
		if _, err := b.Open(ord); !errors.Is(err, backend.ErrNoDevice) {
			t.Fatalf("Open(%d) = %v", ord, err)
		}
	}
	if got := d.Info(); got.UUID != infos[1].UUID {
		t.Fatal("Info differs from Devices")
	}
	if d.Granularity() != DefaultGranularity {
		t.Fatalf("Granularity %d", d.Granularity())
	}
}

// Every attribute an H100 reports as nonzero is nonzero here, and the
// values programs check at start-up are the H100's.
func TestAttributes(t *testing.T) {
	info := deviceInfo(Options{}.mustNormalize(t), 0)
	a := info.Attributes
	if len(a) != int(cuda.CU_DEVICE_ATTRIBUTE_MAX) {
		t.Fatalf("%d attributes, want %d", len(a), cuda.CU_DEVICE_ATTRIBUTE_MAX)
	}
	want := map[cuda.CUdevice_attribute]int32{
		cuda.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:                   1024,
		cuda.CU_DEVICE_ATTRIBUTE_WARP_SIZE:                               32,
		cuda.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:                    132,
		cuda.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:             48 << 10,
		cuda.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:       227 << 10,
		cuda.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:                           50 << 20,
		cuda.CU_DEVICE_ATTRIBUTE_CLOCK_RATE:                              1980000,
		cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:                9,
		cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:                0,
		cuda.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:                      1,
		cuda.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:     1,
		cuda.CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:                      1,
		cuda.CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:                      2,
		cuda.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:                  1,
		cuda.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:                          1<<31 - 1,
		cuda.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:                         64,
		cuda.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:          2048,
		cuda.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:    228 << 10,
		cuda.CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:             1,
		cuda.CU_DEVICE_ATTRIBUTE_NUMA_ID:                                 -1,
		cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:                            0,
		cuda.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:                 65536,
		cuda.CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:                 5120,
		cuda.CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:                   64 << 10,
		cuda.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:                      1,
		cuda.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:                              0x19,
		cuda.CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: 1,
	}
	for attr, v := range want {
		if a[attr] != v {
			t.Errorf("attribute %d = %d, want %d", attr, a[attr], v)
		}
	}
	zeroOK := map[cuda.CUdevice_attribute]bool{
		cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:                      true,
		cuda.CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT:                           true,
		cuda.CU_DEVICE_ATTRIBUTE_INTEGRATED:                                    true,
		cuda.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:                                  true,
		cuda.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:                                 true,
		cuda.CU_DEVICE_ATTRIBUTE_TCC_DRIVER:                                    true,
		cuda.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:                                 true,
		cuda.CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD:                               true,
		cuda.CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID:                      true,
		cuda.CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED:                  true,
		cuda.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:                        true,
		cuda.CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH:               true,
		cuda.CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES:                       true,
		cuda.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:  true,
		cuda.CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST:           true,
		cuda.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED:            true,
		cuda.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED:        true,
		cuda.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:                  true,
		cuda.CU_DEVICE_ATTRIBUTE_NUMA_CONFIG:                                   true,
		cuda.CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:                           true,
		cuda.CU_DEVICE_ATTRIBUTE_MPS_ENABLED:                                   true,
		cuda.CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID:                                  true,
		cuda.CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED:                           true,
		cuda.CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK:                 true,
		cuda.CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH:                 true,
		cuda.CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED:                          true,
		cuda.CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: true,
		cuda.CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED:              true,
		cuda.CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED:             true,
		cuda.CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED:                   true,
		cuda.CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:      true,
		cuda.CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED:                  true,
		cuda.CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED:     true,
	}
	for attr := cuda.CUdevice_attribute(1); attr < cuda.CU_DEVICE_ATTRIBUTE_MAX; attr++ {
		if a[attr] == 0 && !zeroOK[attr] {
			t.Errorf("attribute %d is 0 and an H100 reports it nonzero", attr)
		}
	}
	// Options shape the profile.
	small := deviceInfo(Options{SMs: 8, Cost: CostModel{ClockMHz: 1000}}.mustNormalize(t), 3)
	if small.Attributes[cuda.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] != 8 ||
		small.Attributes[cuda.CU_DEVICE_ATTRIBUTE_CLOCK_RATE] != 1000000 ||
		small.Attributes[cuda.CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID] != 3 {
		t.Fatal("attributes do not follow the options")
	}
}

func (o Options) mustNormalize(t *testing.T) Options {
	t.Helper()
	n, err := o.normalize()
	must(t, err)
	return n
}
