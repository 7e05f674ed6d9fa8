package cuda

import (
	"fmt"
	"sort"
	"sync"

	"github.com/gpuos/gpuos/internal/backend"
)

// hostRegistry tracks page-locked host memory: AllocHost buffers and
// RegisterHost ranges. A copy from or to memory inside one of them is handed
// to the driver asynchronously; any other host memory (Go memory above all)
// is copied in stream order and waited for before the call returns, so the
// driver never holds on to memory the Go runtime manages.
type hostRegistry struct {
	mu     sync.RWMutex
	ranges []hostRange // sorted by start, disjoint
}

type hostRange struct {
	start, end uintptr
	buf        []byte   // the memory, for Close to unregister
	alloc      *hostMem // nil for RegisterHost ranges
}

// check validates adding b: non-empty, overlapping nothing registered.
func (h *hostRegistry) check(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("register host memory: empty range: %w", backend.ErrInvalidArgument)
	}
	start := addrOf(b)
	end := start + uintptr(len(b))
	h.mu.RLock()
	defer h.mu.RUnlock()
	i := sort.Search(len(h.ranges), func(i int) bool { return h.ranges[i].end > start })
	if i < len(h.ranges) && h.ranges[i].start < end {
		return fmt.Errorf("register host memory %#x+%#x: overlaps registered %#x+%#x: %w",
			start, len(b), h.ranges[i].start, h.ranges[i].end-h.ranges[i].start, backend.ErrInvalidArgument)
	}
	return nil
}

// add records b; check must have passed (callers serialize check and add).
func (h *hostRegistry) add(b []byte, alloc *hostMem) {
	start := addrOf(b)
	h.mu.Lock()
	defer h.mu.Unlock()
	i := sort.Search(len(h.ranges), func(i int) bool { return h.ranges[i].start > start })
	h.ranges = append(h.ranges, hostRange{})
	copy(h.ranges[i+1:], h.ranges[i:])
	h.ranges[i] = hostRange{start: start, end: start + uintptr(len(b)), buf: b, alloc: alloc}
}

// find returns the registered range that starts where b starts, whose alloc
// is alloc (nil for RegisterHost ranges, so AllocHost memory cannot be
// unregistered).
func (h *hostRegistry) find(b []byte, alloc *hostMem) (hostRange, error) {
	if len(b) == 0 {
		return hostRange{}, fmt.Errorf("unregister host memory: empty range: %w", backend.ErrInvalidArgument)
	}
	start := addrOf(b)
	h.mu.RLock()
	defer h.mu.RUnlock()
	i := sort.Search(len(h.ranges), func(i int) bool { return h.ranges[i].start >= start })
	if i == len(h.ranges) || h.ranges[i].start != start || h.ranges[i].alloc != alloc {
		return hostRange{}, fmt.Errorf("unregister host memory %#x: not the start of a registered range: %w", start, backend.ErrInvalidArgument)
	}
	return h.ranges[i], nil
}

// remove drops the range starting at start.
func (h *hostRegistry) remove(start uintptr) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := sort.Search(len(h.ranges), func(i int) bool { return h.ranges[i].start >= start })
	if i < len(h.ranges) && h.ranges[i].start == start {
		h.ranges = append(h.ranges[:i], h.ranges[i+1:]...)
	}
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

// registered returns the RegisterHost ranges (not AllocHost ones), for Close.
func (h *hostRegistry) registered() []hostRange {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []hostRange
	for _, r := range h.ranges {
		if r.alloc == nil {
			out = append(out, r)
		}
	}
	return out
}

func (h *hostRegistry) clear() {
	h.mu.Lock()
	h.ranges = nil
	h.mu.Unlock()
}

// hostMem is AllocHost memory: from cuMemHostAlloc, outside the Go heap.
type hostMem struct {
	dev *Device
	buf []byte

	mu    sync.Mutex
	freed bool
}

func (m *hostMem) Bytes() []byte { return m.buf }

// Free returns the memory to the driver. Copies still queued on it must have
// completed (the caller synchronizes first, as with cuMemFreeHost).
func (m *hostMem) Free() error {
	d := m.dev
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed {
		return fmt.Errorf("free host memory: already freed: %w", ErrInvalidHandle)
	}
	d.host.remove(addrOf(m.buf))
	m.freed = true
	d.mu.Lock()
	delete(d.hostAllocs, m)
	d.mu.Unlock()
	return d.fail("free host memory", d.c.hostFree(m.buf))
}

// maxHostAlloc bounds one AllocHost (1 TiB, as the sim), so a wild size is an
// error rather than a driver call that tries.
const maxHostAlloc = 1 << 40

// AllocHost allocates page-locked, portable host memory (cuMemHostAlloc)
// that copies use directly and asynchronously.
func (d *Device) AllocHost(size int) (backend.HostMemory, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.live.exit()
	if size <= 0 || size > maxHostAlloc {
		return nil, fmt.Errorf("alloc host memory of %d bytes: %w", size, backend.ErrInvalidArgument)
	}
	buf, r := d.c.hostAlloc(size)
	if r != 0 {
		return nil, d.fail(fmt.Sprintf("alloc %d bytes of host memory", size), r)
	}
	m := &hostMem{dev: d, buf: buf}
	d.hostMu.Lock()
	d.host.add(buf, m)
	d.hostMu.Unlock()
	d.mu.Lock()
	d.hostAllocs[m] = struct{}{}
	d.mu.Unlock()
	return m, nil
}

// AllocMappedHost allocates zeroed page-locked host memory that kernels reach
// through a device address (cuMemHostAlloc with DEVICEMAP, then
// cuMemHostGetDevicePointer): the PTX guard's fault records live there, so the
// driver reads them without a copy. It implements backend.MappedHostAllocator.
func (d *Device) AllocMappedHost(size int) (backend.HostMemory, backend.DevicePtr, error) {
	if err := d.enter(); err != nil {
		return nil, 0, err
	}
	defer d.live.exit()
	if size <= 0 || size > maxHostAlloc {
		return nil, 0, fmt.Errorf("alloc mapped host memory of %d bytes: %w", size, backend.ErrInvalidArgument)
	}
	buf, dptr, r := d.c.hostAllocMapped(size)
	if r != 0 {
		return nil, 0, d.fail(fmt.Sprintf("alloc %d bytes of mapped host memory", size), r)
	}
	clear(buf)
	m := &hostMem{dev: d, buf: buf}
	d.hostMu.Lock()
	d.host.add(buf, m)
	d.hostMu.Unlock()
	d.mu.Lock()
	d.hostAllocs[m] = struct{}{}
	d.mu.Unlock()
	return m, backend.DevicePtr(dptr), nil
}

var _ backend.MappedHostAllocator = (*Device)(nil)

// RegisterHost page-locks memory the caller mapped itself (mmap, a shared
// memory segment; never Go heap memory, which the driver would DMA into
// behind the garbage collector's back). Copies from and to it become
// asynchronous. Ranges may not overlap.
func (d *Device) RegisterHost(mem []byte) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	d.hostMu.Lock()
	defer d.hostMu.Unlock()
	if err := d.host.check(mem); err != nil {
		return err
	}
	if r := d.c.hostRegister(mem); r != 0 {
		return d.fail(fmt.Sprintf("register %d bytes of host memory", len(mem)), r)
	}
	d.host.add(mem, nil)
	return nil
}

// UnregisterHost undoes RegisterHost; mem must start where a registered
// range starts. Copies queued on the range must have completed.
func (d *Device) UnregisterHost(mem []byte) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	d.hostMu.Lock()
	defer d.hostMu.Unlock()
	rng, err := d.host.find(mem, nil)
	if err != nil {
		return err
	}
	d.host.remove(rng.start)
	return d.fail("unregister host memory", d.c.hostUnregister(mem))
}

var _ backend.HostMapper = (*Device)(nil)

// MapHost page-locks memory the caller mapped itself, as RegisterHost does,
// and maps it for the device (cuMemHostRegister with DEVICEMAP, then
// cuMemHostGetDevicePointer): kernels and stream memory writes reach it at
// the returned address (backend.HostMapper).
func (d *Device) MapHost(mem []byte) (backend.DevicePtr, error) {
	if err := d.enter(); err != nil {
		return 0, err
	}
	defer d.live.exit()
	d.hostMu.Lock()
	defer d.hostMu.Unlock()
	if err := d.host.check(mem); err != nil {
		return 0, err
	}
	dptr, r := d.c.hostRegisterMapped(mem)
	if r != 0 {
		return 0, d.fail(fmt.Sprintf("map %d bytes of host memory for the device", len(mem)), r)
	}
	d.host.add(mem, nil)
	return backend.DevicePtr(dptr), nil
}

// UnmapHost undoes MapHost.
func (d *Device) UnmapHost(mem []byte) error { return d.UnregisterHost(mem) }
