package sim

import (
	"sync"

	"github.com/gpuos/gpuos/internal/backend"
)

// nativeAllocs are allocations made through MemAlloc, the sim's stand-in for
// cuMemAlloc: a reservation with one chunk mapped in it.
type nativeAllocs struct {
	mu sync.Mutex
	m  map[backend.DevicePtr]nativeAlloc
}

type nativeAlloc struct {
	size  uint64
	chunk backend.Chunk
}

var natives sync.Map // *Device -> *nativeAllocs

func (d *Device) natives() *nativeAllocs {
	v, _ := natives.LoadOrStore(d, &nativeAllocs{m: map[backend.DevicePtr]nativeAlloc{}})
	return v.(*nativeAllocs)
}

// MemAlloc allocates device memory the way a program calling cuMemAlloc would
// get it: its own range, mapped and accessible. It implements
// backend.SimpleAllocator for benchmarks that compare with native allocation.
func (d *Device) MemAlloc(size uint64) (backend.DevicePtr, error) {
	if size == 0 {
		return 0, backend.ErrInvalidArgument
	}
	g := d.Granularity()
	size = (size + g - 1) / g * g
	ptr, err := d.Reserve(size, g)
	if err != nil {
		return 0, err
	}
	c, err := d.CreateChunk(size)
	if err != nil {
		d.Release(ptr, size)
		return 0, err
	}
	if err := d.Map(ptr, size, c, 0); err != nil {
		c.Release()
		d.Release(ptr, size)
		return 0, err
	}
	if err := d.SetAccess(ptr, size); err != nil {
		d.Unmap(ptr, size)
		c.Release()
		d.Release(ptr, size)
		return 0, err
	}
	n := d.natives()
	n.mu.Lock()
	n.m[ptr] = nativeAlloc{size: size, chunk: c}
	n.mu.Unlock()
	return ptr, nil
}

// MemFree frees memory from MemAlloc.
func (d *Device) MemFree(ptr backend.DevicePtr) error {
	n := d.natives()
	n.mu.Lock()
	a, ok := n.m[ptr]
	delete(n.m, ptr)
	n.mu.Unlock()
	if !ok {
		return backend.ErrInvalidArgument
	}
	if err := d.Unmap(ptr, a.size); err != nil {
		return err
	}
	if err := a.chunk.Release(); err != nil {
		return err
	}
	return d.Release(ptr, a.size)
}

var _ backend.SimpleAllocator = (*Device)(nil)
