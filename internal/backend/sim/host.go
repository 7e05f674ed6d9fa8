package sim

import (
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/gpuos/gpuos/internal/backend"
)

// hostRegistry tracks page-locked host memory: AllocHost buffers and
// RegisterHost ranges. Copies from or to memory inside one of them are
// asynchronous; others are staged (host to device) or synchronous (device to
// host), as in CUDA.
type hostRegistry struct {
	mu     sync.RWMutex
	ranges []hostRange // sorted by start, disjoint
}

type hostRange struct {
	start, end uintptr
	alloc      *hostMem // nil for RegisterHost ranges
}

// addrOf is the address of b's first byte, used only to identify ranges (it is
// never turned back into a pointer, so no unsafe is needed).
func addrOf(b []byte) uintptr { return reflect.ValueOf(b).Pointer() }

func (h *hostRegistry) add(b []byte, alloc *hostMem) error {
	if len(b) == 0 {
		return fmt.Errorf("register host memory: empty range: %w", backend.ErrInvalidArgument)
	}
	start := addrOf(b)
	end := start + uintptr(len(b))
	h.mu.Lock()
	defer h.mu.Unlock()
	i := sort.Search(len(h.ranges), func(i int) bool { return h.ranges[i].end > start })
	if i < len(h.ranges) && h.ranges[i].start < end {
		return fmt.Errorf("register host memory %#x+%#x: overlaps registered %#x+%#x: %w",
			start, len(b), h.ranges[i].start, h.ranges[i].end-h.ranges[i].start, backend.ErrInvalidArgument)
	}
	h.ranges = append(h.ranges, hostRange{})
	copy(h.ranges[i+1:], h.ranges[i:])
	h.ranges[i] = hostRange{start: start, end: end, alloc: alloc}
	return nil
}

// remove drops the range that starts where b starts; alloc must match (nil
// for UnregisterHost, so AllocHost memory cannot be unregistered).
func (h *hostRegistry) remove(b []byte, alloc *hostMem) error {
	if len(b) == 0 {
		return fmt.Errorf("unregister host memory: empty range: %w", backend.ErrInvalidArgument)
	}
	start := addrOf(b)
	h.mu.Lock()
	defer h.mu.Unlock()
	i := sort.Search(len(h.ranges), func(i int) bool { return h.ranges[i].start >= start })
	if i == len(h.ranges) || h.ranges[i].start != start || h.ranges[i].alloc != alloc {
		return fmt.Errorf("unregister host memory %#x: not the start of a registered range: %w", start, backend.ErrInvalidArgument)
	}
	h.ranges = append(h.ranges[:i], h.ranges[i+1:]...)
	return nil
}

// pinned reports whether all of b lies inside one registered range.
func (h *hostRegistry) pinned(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	start := addrOf(b)
	end := start + uintptr(len(b))
	h.mu.RLock()
	defer h.mu.RUnlock()
	i := sort.Search(len(h.ranges), func(i int) bool { return h.ranges[i].end > start })
	return i < len(h.ranges) && h.ranges[i].start <= start && end <= h.ranges[i].end
}

func (h *hostRegistry) clear() {
	h.mu.Lock()
	h.ranges = nil
	h.mu.Unlock()
}

// hostMem is AllocHost memory: Go memory, which never moves, registered as
// page-locked for the device's lifetime or until Free.
type hostMem struct {
	dev *Device
	buf []byte

	mu    sync.Mutex
	freed bool
}

func (m *hostMem) Bytes() []byte { return m.buf }

func (m *hostMem) Free() error {
	if err := m.dev.check(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed {
		return fmt.Errorf("free host memory: already freed: %w", ErrInvalidHandle)
	}
	if err := m.dev.host.remove(m.buf, m); err != nil {
		return err
	}
	m.freed = true
	return nil
}

// maxHostAlloc bounds one AllocHost (1 TiB), so a wild size is an error
// rather than a Go out-of-memory crash.
const maxHostAlloc = 1 << 40

// AllocHost allocates page-locked host memory that copies use directly.
func (d *Device) AllocHost(size int) (backend.HostMemory, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if size <= 0 || size > maxHostAlloc {
		return nil, fmt.Errorf("alloc host memory of %d bytes: %w", size, backend.ErrInvalidArgument)
	}
	m := &hostMem{dev: d, buf: make([]byte, size)}
	if err := d.host.add(m.buf, m); err != nil {
		return nil, err
	}
	return m, nil
}

// RegisterHost page-locks memory the caller mapped itself; copies from and to
// it become asynchronous. Ranges may not overlap.
func (d *Device) RegisterHost(mem []byte) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.host.add(mem, nil)
}

// UnregisterHost undoes RegisterHost; mem must start where a registered
// range starts.
func (d *Device) UnregisterHost(mem []byte) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.host.remove(mem, nil)
}
