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
	as := d.as
	n := alignUp(uint64(size), as.gran)
	base, err := as.reserve(n, as.gran, moduleStart, VAEnd)
	if err != nil {
		return nil, 0, fmt.Errorf("alloc mapped host memory: %w", err)
	}
	ch := &chunk{dev: d, size: n, data: make([]byte, n)}
	if err := as.mapChunk(base, n, ch, 0); err != nil {
		_ = as.release(base, n)
		return nil, 0, err
	}
	if err := as.setAccess(base, n); err != nil {
		_ = as.unmap(base, n)
		_ = as.release(base, n)
		return nil, 0, err
	}
	m := &mappedHost{d: d, base: base, size: n, buf: ch.data[:size:size]}
	if err := d.host.add(m.buf, nil); err != nil {
		m.unmap()
		return nil, 0, err
	}
	return m, backend.DevicePtr(base), nil
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
	m.unmap()
	return nil
}

func (m *mappedHost) unmap() {
	as := m.d.as
	_ = as.unmap(m.base, m.size)
	_ = as.release(m.base, m.size)
	m.d.view.flush()
}
