package backend

// MappedHostAllocator is an optional Device capability: page-locked host
// memory that kernels can read and write through a device address. The PTX
// guard keeps each guarded program's fault record there, so the driver learns
// of a violation by reading host memory after a launch completes — no copy
// per launch.
//
// What an implementation must do:
//   - Return size bytes of zeroed host memory (HostMemory.Bytes is exactly
//     size bytes) and the device address at which kernels reach the same
//     bytes; the address lies outside every range Reserve hands out.
//   - Kernels' ordinary and atomic accesses to the device address must work
//     (on CUDA: cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP, plus
//     CU_MEMHOSTALLOC_PORTABLE, then cuMemHostGetDevicePointer; with unified
//     addressing the two addresses are equal).
//   - Once a kernel's completion has been observed (stream or event
//     synchronization, or a scheduler completion), the host sees its writes.
//   - The memory is also valid as pinned memory for asynchronous copies.
//   - HostMemory.Free releases it (cuMemFreeHost); the device address must
//     not be used afterwards.
type MappedHostAllocator interface {
	AllocMappedHost(size int) (HostMemory, DevicePtr, error)
}

// HostMapper is an optional Device capability: host memory the caller mapped
// itself (a shared memory object, never the Go heap) made page-locked and
// reachable by kernels and stream memory writes at a device address, like
// MappedHostAllocator's. The driver shares a session's completion words and
// fault records with its client this way: the device writes them, and the
// client reads them in its own mapping of the same pages.
//
// What an implementation must do:
//   - MapHost page-locks mem and returns the device address of its first
//     byte; mem must not overlap memory registered before (RegisterHost,
//     MapHost). Writes by kernels and by the Fence of a stream using a word
//     of mem (FenceWordSetter) reach mem's pages, so every mapping of them
//     sees them.
//   - UnmapHost undoes it; mem must start where a mapped range starts, and
//     no work still pending may write it.
type HostMapper interface {
	MapHost(mem []byte) (DevicePtr, error)
	UnmapHost(mem []byte) error
}
