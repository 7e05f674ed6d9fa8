package sim

import (
	"fmt"
	"sync"

	"github.com/gpuos/gpuos/internal/backend"
)

var _ backend.MappedHostAllocator = (*Device)(nil)

// mappedHost is host memory kernels reach at a device address: a chunk of
// Go memory mapped in the sim's module region (outside every reservation),
// not counted against the device's memory. It is also pinned for copies.
type mappedHost struct {
	d          *Device
	base, size uint64
	buf        []byte

	mu    sync.Mutex
	freed bool
}

// AllocMappedHost allocates size bytes of zeroed host memory that kernels
// can access at the returned device address (backend.MappedHostAllocator).
func (d *Device) AllocMappedHost(size int) (backend.HostMemory, backend.DevicePtr, error) {
	if err := d.check(); err != nil {
		return nil, 0, err
	}
	if size <= 0 || size > maxHostAlloc {
		return nil, 0, fmt.Errorf("alloc mapped host memory of %d bytes: %w", size, backend.ErrInvalidArgument)
	}
	data := make([]byte, alignUp(uint64(size), d.as.gran))
	base, n, err := d.mapHostData(data)
	if err != nil {
		return nil, 0, fmt.Errorf("alloc mapped host memory: %w", err)
	}
	m := &mappedHost{d: d, base: base, size: n, buf: data[:size:size]}
	if err := d.host.add(m.buf, nil); err != nil {
		d.unmapHostData(base, n)
		return nil, 0, err
	}
	return m, backend.DevicePtr(base), nil
}

// mapHostData maps data, as a chunk of its own, in the module region
// (outside every reservation) and makes it accessible. A range of whole
// granules is mapped: past data's end it is not accessible.
func (d *Device) mapHostData(data []byte) (base, size uint64, err error) {
	as := d.as
	n := alignUp(uint64(len(data)), as.gran)
	base, err = as.reserve(n, as.gran, moduleStart, VAEnd)
	if err != nil {
		return 0, 0, err
	}
	ch := &chunk{dev: d, size: n, data: data[:len(data):len(data)]}
	if err := as.mapChunk(base, n, ch, 0); err != nil {
		_ = as.release(base, n)
		return 0, 0, err
	}
	if err := as.setAccess(base, n); err != nil {
		_ = as.unmap(base, n)
		_ = as.release(base, n)
		return 0, 0, err
	}
	return base, n, nil
}

// unmapHostData undoes mapHostData.
func (d *Device) unmapHostData(base, size uint64) {
	_ = d.as.unmap(base, size)
	_ = d.as.release(base, size)
	d.view.flush()
}

func (m *mappedHost) Bytes() []byte { return m.buf }

func (m *mappedHost) Free() error {
	if err := m.d.check(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed {
		return fmt.Errorf("free mapped host memory: already freed: %w", ErrInvalidHandle)
	}
	m.freed = true
	if err := m.d.host.remove(m.buf, nil); err != nil {
		return err
	}
	m.d.unmapHostData(m.base, m.size)
	return nil
}

var _ backend.HostMapper = (*Device)(nil)

// MapHost maps memory the caller mapped itself into the sim's module region
// (backend.HostMapper): kernels reach mem's bytes at the returned address, and
// the rest of the last granule is not accessible. It is also pinned for
// copies.
func (d *Device) MapHost(mem []byte) (backend.DevicePtr, error) {
	if err := d.check(); err != nil {
		return 0, err
	}
	if len(mem) == 0 || len(mem) > maxHostAlloc {
		return 0, fmt.Errorf("map %d bytes of host memory: %w", len(mem), backend.ErrInvalidArgument)
	}
	if err := d.host.add(mem, nil); err != nil {
		return 0, err
	}
	base, n, err := d.mapHostData(mem)
	if err != nil {
		_ = d.host.remove(mem, nil)
		return 0, fmt.Errorf("map host memory: %w", err)
	}
	d.mappedMu.Lock()
	if d.hostMaps == nil {
		d.hostMaps = make(map[*byte]mappedRange)
	}
	d.hostMaps[&mem[0]] = mappedRange{base: base, size: n}
	d.mappedMu.Unlock()
	return backend.DevicePtr(base), nil
}

// mappedRange is where MapHost mapped a caller's memory.
type mappedRange struct{ base, size uint64 }

// UnmapHost undoes MapHost.
func (d *Device) UnmapHost(mem []byte) error {
	if err := d.check(); err != nil {
		return err
	}
	if len(mem) == 0 {
		return fmt.Errorf("unmap host memory: %w", backend.ErrInvalidArgument)
	}
	d.mappedMu.Lock()
	r, ok := d.hostMaps[&mem[0]]
	delete(d.hostMaps, &mem[0])
	d.mappedMu.Unlock()
	if !ok {
		return fmt.Errorf("unmap host memory: not mapped: %w", backend.ErrInvalidArgument)
	}
	d.unmapHostData(r.base, r.size)
	return d.host.remove(mem, nil)
}

// ExecutesOnHost reports that the software GPU's work runs on the host's
// CPUs (backend.HostExecutor): pollers of its fences yield.
func (d *Device) ExecutesOnHost() bool { return true }
