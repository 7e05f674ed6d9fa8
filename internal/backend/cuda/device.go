package cuda

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
)

// Device is an open context on one NVIDIA device: a backend.Device. All
// methods are safe for concurrent use.
type Device struct {
	b       *Backend
	ordinal int
	info    backend.DeviceInfo
	c       *dctx

	live   liveness // the context itself: Close ends it
	closed atomic.Bool
	lost   atomic.Pointer[error] // the error that lost the context, once lost

	gran            uint64
	least, greatest int // stream priorities
	// prop and access are allocations of their own: cgo passes them to C,
	// which checks that the memory a pointer reaches holds no Go pointer.
	prop       *cuda.CUmemAllocationProp
	access     *cuda.CUmemAccessDesc
	vmmMu      sync.Mutex // serializes VMM changes (see addressSpace)
	as         *addressSpace
	hostMu     sync.Mutex // serializes host registrations
	host       hostRegistry
	mu         sync.Mutex // guards the sets below
	chunks     map[*chunk]struct{}
	streams    map[*stream]struct{}
	events     map[*event]struct{}
	modules    map[*module]struct{}
	hostAllocs map[*hostMem]struct{}
	callbacks  map[*callback]struct{} // enqueued, not yet run
	partitions map[*partition]struct{}
	fences     fencePool
}

var _ backend.Device = (*Device)(nil)

func newDevice(b *Backend, ordinal int, info backend.DeviceInfo, c *dctx) (*Device, error) {
	d := &Device{
		b: b, ordinal: ordinal, info: info, c: c,
		chunks:     map[*chunk]struct{}{},
		streams:    map[*stream]struct{}{},
		events:     map[*event]struct{}{},
		modules:    map[*module]struct{}{},
		hostAllocs: map[*hostMem]struct{}{},
		callbacks:  map[*callback]struct{}{},
		partitions: map[*partition]struct{}{},
	}
	d.prop = &cuda.CUmemAllocationProp{
		Type:     cuda.CU_MEM_ALLOCATION_TYPE_PINNED,
		Location: cuda.CUmemLocation{Type: cuda.CU_MEM_LOCATION_TYPE_DEVICE, ID: int32(ordinal)},
	}
	d.access = &cuda.CUmemAccessDesc{
		Location: d.prop.Location,
		Flags:    cuda.CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	}
	g, r := c.granularity(d.prop)
	if r != 0 {
		return nil, resultError("cuMemGetAllocationGranularity", r)
	}
	if g == 0 || g&(g-1) != 0 {
		return nil, fmt.Errorf("the driver reports a VMM granularity of %d, not a power of two: %w", g, backend.ErrUnsupported)
	}
	d.gran = g
	d.as = newAddressSpace(g)
	if d.least, d.greatest, r = c.priorityRange(); r != 0 {
		return nil, resultError("cuCtxGetStreamPriorityRange", r)
	}
	return d, nil
}

// enter admits a device-level call: it fails on a closed or lost device.
// On success the caller must d.live.exit().
func (d *Device) enter() error {
	if !d.live.enter() {
		return fmt.Errorf("device %d: %w", d.ordinal, ErrClosed)
	}
	if p := d.lost.Load(); p != nil {
		d.live.exit()
		return *p
	}
	return nil
}

// lostErr returns the error that lost the context, or nil.
func (d *Device) lostErr() error {
	if p := d.lost.Load(); p != nil {
		return *p
	}
	return nil
}

// Lost returns the error that lost the context, or nil.
func (d *Device) Lost() error { return d.lostErr() }

// fail converts a driver result into an error for op; a result that loses
// the context latches the device lost (the first one wins and is what every
// later call returns). It returns nil for CUDA_SUCCESS.
func (d *Device) fail(op string, r cuda.CUresult) error {
	if r == cuda.CUDA_SUCCESS {
		return nil
	}
	err := resultError(op, r)
	if isLost(r) {
		return d.lose(err)
	}
	return err
}

// lose latches the context lost and returns the latched error.
func (d *Device) lose(cause error) error {
	err := fmt.Errorf("device %d: context lost: %w", d.ordinal, cause)
	if !d.lost.CompareAndSwap(nil, &err) {
		return *d.lost.Load()
	}
	markLost(d.info.UUID, err)
	return err
}

// Info describes the device.
func (d *Device) Info() backend.DeviceInfo {
	info := d.info
	info.Attributes = append([]int32(nil), d.info.Attributes...)
	return info
}

// Close waits for the work queued in the context, then destroys everything
// created in it (streams, events, modules, mappings, reservations, chunks,
// host memory) and releases the primary context. Callbacks that never ran
// (the context was lost) run with the error. After Close the ordinal can be
// opened again, unless the context was lost.
func (d *Device) Close() error {
	d.closed.Store(true)
	if !d.live.end() {
		return fmt.Errorf("close device %d: %w", d.ordinal, ErrClosed)
	}
	// End every child, so no call is inside one; a child whose Destroy or
	// Unload ended it first is that call's to free.
	d.mu.Lock()
	streams, events, modules := keys(d.streams), keys(d.events), keys(d.modules)
	clear(d.streams)
	clear(d.events)
	clear(d.modules)
	d.mu.Unlock()
	streams = ended(streams, func(s *stream) bool { return s.live.end() })
	events = ended(events, func(e *event) bool { return e.live.end() })
	modules = ended(modules, func(m *module) bool { return m.live.end() })
	// Let queued work finish, so that no copy still reaches memory freed
	// below. Errors are the lost context's, already latched.
	_ = d.fail("close: synchronize", d.c.sync())
	for _, s := range streams {
		_ = d.c.streamDestroy(s.h)
	}
	// Green contexts after their streams, before the primary context goes.
	d.mu.Lock()
	parts := keys(d.partitions)
	clear(d.partitions)
	d.mu.Unlock()
	for _, p := range parts {
		p.mu.Lock()
		if !p.closed {
			p.closed = true
			_ = d.c.partitionDestroy(p.g)
		}
		p.mu.Unlock()
	}
	for _, e := range events {
		_ = d.c.eventDestroy(e.h)
	}
	for _, m := range modules {
		_ = d.c.moduleUnload(m.h)
	}
	d.vmmMu.Lock()
	ms, rs := d.as.all()
	for _, m := range ms {
		_ = d.c.memUnmap(m.start, m.size)
	}
	d.as.removeMappings(ms)
	for _, r := range rs {
		_ = d.c.addressFree(r.start, r.size)
		d.as.removeReservation(r)
	}
	d.mu.Lock()
	chunks, allocs := keys(d.chunks), keys(d.hostAllocs)
	d.chunks, d.hostAllocs = map[*chunk]struct{}{}, map[*hostMem]struct{}{}
	d.mu.Unlock()
	for _, c := range chunks {
		c.released = true
		_ = d.c.memRelease(c.h)
	}
	d.vmmMu.Unlock()
	d.hostMu.Lock()
	for _, r := range d.host.registered() {
		_ = d.c.hostUnregister(r.buf)
	}
	for _, m := range allocs {
		m.mu.Lock()
		if !m.freed {
			m.freed = true
			_ = d.c.hostFree(m.buf)
		}
		m.mu.Unlock()
	}
	d.host.clear()
	d.hostMu.Unlock()
	// Callbacks the driver will never run: the context was lost, or the
	// driver dropped them with the context.
	d.mu.Lock()
	pending := keys(d.callbacks)
	d.mu.Unlock()
	closedErr := d.lostErr()
	if closedErr == nil {
		closedErr = fmt.Errorf("device %d: %w", d.ordinal, ErrClosed)
	}
	for _, cb := range pending {
		cb.abandon(closedErr)
	}
	_ = d.c.close()
	d.b.closed(d)
	return nil
}

// ended keeps the objects end reports it ended.
func ended[T any](objs []T, end func(T) bool) []T {
	kept := objs[:0]
	for _, o := range objs {
		if end(o) {
			kept = append(kept, o)
		}
	}
	return kept
}

func keys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Granularity is the minimum VMM granularity of pinned device memory
// (cuMemGetAllocationGranularity): 2 MiB on an H100.
func (d *Device) Granularity() uint64 { return d.gran }

// Reserve reserves size bytes of device virtual addresses aligned to
// alignment (0: the granularity).
func (d *Device) Reserve(size, alignment uint64) (backend.DevicePtr, error) {
	if err := d.enter(); err != nil {
		return 0, err
	}
	defer d.live.exit()
	align, err := d.as.checkReserve(size, alignment)
	if err != nil {
		return 0, err
	}
	d.vmmMu.Lock()
	defer d.vmmMu.Unlock()
	p, r := d.c.reserve(size, align)
	if r != 0 {
		return 0, d.fail(fmt.Sprintf("reserve %#x bytes aligned to %#x", size, align), r)
	}
	d.as.addReservation(p, size)
	return backend.DevicePtr(p), nil
}

// Release returns a whole reservation, which must have nothing mapped.
func (d *Device) Release(ptr backend.DevicePtr, size uint64) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	d.vmmMu.Lock()
	defer d.vmmMu.Unlock()
	rs, err := d.as.checkRelease(uint64(ptr), size)
	if err != nil {
		return err
	}
	if r := d.c.addressFree(uint64(ptr), size); r != 0 {
		return d.fail(fmt.Sprintf("release %#x+%#x", ptr, size), r)
	}
	d.as.removeReservation(rs)
	return nil
}

// chunk is physical device memory from cuMemCreate.
type chunk struct {
	dev  *Device
	h    uint64
	size uint64

	// Guarded by dev.vmmMu.
	maps     int
	released bool
}

var _ backend.Chunk = (*chunk)(nil)

// CreateChunk allocates pinned physical memory on this device (cuMemCreate).
func (d *Device) CreateChunk(size uint64) (backend.Chunk, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.live.exit()
	if size == 0 || size%d.gran != 0 {
		return nil, fmt.Errorf("create chunk of %#x bytes: not a positive multiple of the granularity %#x: %w", size, d.gran, backend.ErrInvalidArgument)
	}
	h, r := d.c.memCreate(size, d.prop)
	if r != 0 {
		return nil, d.fail(fmt.Sprintf("create chunk of %#x bytes", size), r)
	}
	c := &chunk{dev: d, h: h, size: size}
	d.mu.Lock()
	d.chunks[c] = struct{}{}
	d.mu.Unlock()
	return c, nil
}

func (c *chunk) Size() uint64 { return c.size }

// Release frees the chunk; it must be unmapped everywhere.
func (c *chunk) Release() error {
	d := c.dev
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	d.vmmMu.Lock()
	defer d.vmmMu.Unlock()
	switch {
	case c.released:
		return fmt.Errorf("release chunk: already released: %w", ErrInvalidHandle)
	case c.maps > 0:
		return fmt.Errorf("release chunk: still mapped %d times: %w", c.maps, backend.ErrInvalidArgument)
	}
	c.released = true
	d.mu.Lock()
	delete(d.chunks, c)
	d.mu.Unlock()
	return d.fail("release chunk", d.c.memRelease(c.h))
}

// Map maps [offset, offset+size) of chunk at ptr, inside one reservation,
// over granules not mapped yet. The range is inaccessible until SetAccess.
func (d *Device) Map(ptr backend.DevicePtr, size uint64, ch backend.Chunk, offset uint64) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	c, ok := ch.(*chunk)
	if !ok || c.dev != d {
		return fmt.Errorf("map %#x: chunk of another device or backend: %w", ptr, ErrInvalidHandle)
	}
	d.vmmMu.Lock()
	defer d.vmmMu.Unlock()
	if c.released {
		return fmt.Errorf("map %#x: chunk was released: %w", ptr, ErrInvalidHandle)
	}
	rs, err := d.as.checkMap(uint64(ptr), size, c, offset)
	if err != nil {
		return err
	}
	if r := d.c.memMap(uint64(ptr), size, offset, c.h); r != 0 {
		return d.fail(fmt.Sprintf("map %#x+%#x", ptr, size), r)
	}
	d.as.addMapping(&mapping{start: uint64(ptr), size: size, chunk: c, offset: offset, resv: rs})
	return nil
}

// Unmap unmaps [ptr, ptr+size), which must consist of whole mappings. Work
// queued on the range must have completed (the caller synchronizes first).
func (d *Device) Unmap(ptr backend.DevicePtr, size uint64) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	d.vmmMu.Lock()
	defer d.vmmMu.Unlock()
	ms, err := d.as.checkUnmap(uint64(ptr), size)
	if err != nil {
		return err
	}
	access := d.as.accessOf(ms)
	d.as.removeMappings(ms) // first: no copy is let through from now on
	if r := d.c.memUnmap(uint64(ptr), size); r != 0 {
		d.as.restoreMappings(ms, access)
		return d.fail(fmt.Sprintf("unmap %#x+%#x", ptr, size), r)
	}
	return nil
}

// SetAccess makes a mapped range readable and writable by this device
// (cuMemSetAccess, one descriptor). It may span many mappings.
func (d *Device) SetAccess(ptr backend.DevicePtr, size uint64) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	d.vmmMu.Lock()
	defer d.vmmMu.Unlock()
	if err := d.as.checkSetAccess(uint64(ptr), size); err != nil {
		return err
	}
	if r := d.c.setAccess(uint64(ptr), size, d.access); r != 0 {
		return d.fail(fmt.Sprintf("set access %#x+%#x", ptr, size), r)
	}
	d.as.setAccess(uint64(ptr), size)
	return nil
}

// MemoryInfo reports the device's free and total memory (cuMemGetInfo).
func (d *Device) MemoryInfo() (free, total uint64, err error) {
	if err := d.enter(); err != nil {
		return 0, 0, err
	}
	defer d.live.exit()
	free, total, r := d.c.memInfo()
	if r != 0 {
		return 0, 0, d.fail("get memory info", r)
	}
	return free, total, nil
}

// StreamPriorityRange is the context's range (cuCtxGetStreamPriorityRange):
// least 0, greatest -5 on an H100.
func (d *Device) StreamPriorityRange() (least, greatest int) { return d.least, d.greatest }

// Synchronize waits for all work in the context. Errors of the work are
// reported on its streams; this returns only a lost or closed context.
func (d *Device) Synchronize() error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	return d.fail("synchronize", d.c.sync())
}
