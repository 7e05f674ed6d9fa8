package backend

// SimpleAllocator is implemented by backends that also offer the driver's own
// allocator (cuMemAlloc/cuMemFree on the NVIDIA driver). gpuos places every
// allocation in a session window through the VMM calls instead; benchmarks use
// this to compare with what a native program would do.
type SimpleAllocator interface {
	MemAlloc(size uint64) (DevicePtr, error)
	MemFree(ptr DevicePtr) error
}
