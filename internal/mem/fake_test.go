package mem

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gpuos/gpuos/internal/backend"
)

// fakeDevice is a backend.Device with only VMM memory (plus a stream that can
// Memset, for scrubbing). It simulates memory as byte slices and checks the
// rules of the real VMM API strictly: Map only onto reserved, unmapped
// granules; Unmap whole mappings only; SetAccess only over mapped granules;
// Release of ranges and chunks only once unmapped.
type fakeDevice struct {
	gran, total uint64

	mu       sync.Mutex
	nextVA   uint64
	reserved map[backend.DevicePtr]uint64
	maps     map[backend.DevicePtr]*fakeMapping // by start
	pages    map[backend.DevicePtr]*fakePage    // by granule address
	chunks   map[*fakeChunk]struct{}
	used     uint64
	calls    fakeCalls
	// hostBytes is the host memory AllocHost handed out and not freed.
	hostBytes uint64
	// beforeUnmap runs, with mu held, before each Unmap.
	beforeUnmap func(ptr backend.DevicePtr, size uint64)
	// fail, if set, may make an operation ("Map", "Unmap", "SetAccess",
	// "CreateChunk", "Reserve", "Memset") fail; called with mu held.
	fail func(op string) error
	// hostGate, if set, holds every AllocHost until it can receive from it
	// (set it before the manager runs); hostWaiting counts the calls held.
	hostGate    chan struct{}
	hostWaiting atomic.Int32
}

type fakeCalls struct {
	Reserve, Release, CreateChunk, ReleaseChunk, Map, Unmap, SetAccess, Memset int
	CopyDtoH, CopyHtoD                                                         int
}

type fakeMapping struct {
	ptr  backend.DevicePtr
	size uint64
	c    *fakeChunk
	off  uint64
}

type fakePage struct {
	m      *fakeMapping
	access bool
}

type fakeChunk struct {
	d        *fakeDevice
	data     []byte
	maps     int
	released bool
}

func newFakeDevice(gran, total uint64) *fakeDevice {
	return &fakeDevice{
		gran: gran, total: total, nextVA: 1 << 40,
		reserved: map[backend.DevicePtr]uint64{},
		maps:     map[backend.DevicePtr]*fakeMapping{},
		pages:    map[backend.DevicePtr]*fakePage{},
		chunks:   map[*fakeChunk]struct{}{},
	}
}

func (d *fakeDevice) failing(op string) error {
	if d.fail != nil {
		return d.fail(op)
	}
	return nil
}

func (d *fakeDevice) aligned(v uint64) bool { return v != 0 && v%d.gran == 0 }

func (d *fakeDevice) Info() backend.DeviceInfo {
	return backend.DeviceInfo{Name: "fake", TotalMemory: d.total}
}
func (d *fakeDevice) Close() error        { return nil }
func (d *fakeDevice) Granularity() uint64 { return d.gran }

func (d *fakeDevice) Reserve(size, alignment uint64) (backend.DevicePtr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls.Reserve++
	if err := d.failing("Reserve"); err != nil {
		return 0, err
	}
	if !d.aligned(size) || alignment != 0 && (alignment&(alignment-1) != 0 || alignment < d.gran) {
		return 0, fmt.Errorf("reserve %#x align %#x: %w", size, alignment, backend.ErrInvalidArgument)
	}
	alignment = max(alignment, d.gran)
	base := (d.nextVA + alignment - 1) / alignment * alignment
	d.nextVA = base + size
	d.reserved[backend.DevicePtr(base)] = size
	return backend.DevicePtr(base), nil
}

func (d *fakeDevice) Release(ptr backend.DevicePtr, size uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls.Release++
	if d.reserved[ptr] != size {
		return fmt.Errorf("release %#x+%#x: not a reservation: %w", uint64(ptr), size, backend.ErrInvalidArgument)
	}
	for p := ptr; p < ptr+backend.DevicePtr(size); p += backend.DevicePtr(d.gran) {
		if d.pages[p] != nil {
			return fmt.Errorf("release %#x: %#x still mapped: %w", uint64(ptr), uint64(p), backend.ErrInvalidArgument)
		}
	}
	delete(d.reserved, ptr)
	return nil
}

// inReservation reports whether [ptr, ptr+size) lies in one reservation.
func (d *fakeDevice) inReservation(ptr backend.DevicePtr, size uint64) bool {
	for b, s := range d.reserved {
		if ptr >= b && uint64(ptr-b)+size <= s {
			return true
		}
	}
	return false
}

func (d *fakeDevice) CreateChunk(size uint64) (backend.Chunk, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls.CreateChunk++
	if err := d.failing("CreateChunk"); err != nil {
		return nil, err
	}
	if !d.aligned(size) {
		return nil, fmt.Errorf("create chunk %#x: %w", size, backend.ErrInvalidArgument)
	}
	if d.used+size > d.total {
		return nil, backend.ErrOutOfMemory
	}
	d.used += size
	c := &fakeChunk{d: d, data: make([]byte, size)}
	d.chunks[c] = struct{}{}
	return c, nil
}

func (c *fakeChunk) Size() uint64 { return uint64(len(c.data)) }

func (c *fakeChunk) Release() error {
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls.ReleaseChunk++
	if c.released || c.maps > 0 {
		return fmt.Errorf("release chunk: released %v, %d mappings: %w", c.released, c.maps, backend.ErrInvalidArgument)
	}
	c.released = true
	d.used -= uint64(len(c.data))
	delete(d.chunks, c)
	return nil
}

func (d *fakeDevice) Map(ptr backend.DevicePtr, size uint64, chunk backend.Chunk, offset uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls.Map++
	if err := d.failing("Map"); err != nil {
		return err
	}
	c, ok := chunk.(*fakeChunk)
	switch {
	case !ok || c.d != d || c.released:
		return fmt.Errorf("map: bad chunk: %w", backend.ErrInvalidArgument)
	case !d.aligned(size) || uint64(ptr)%d.gran != 0 || offset%d.gran != 0 || offset+size > uint64(len(c.data)):
		return fmt.Errorf("map %#x+%#x at chunk offset %#x: %w", uint64(ptr), size, offset, backend.ErrInvalidArgument)
	case !d.inReservation(ptr, size):
		return fmt.Errorf("map %#x+%#x: not reserved: %w", uint64(ptr), size, backend.ErrInvalidArgument)
	}
	for p := ptr; p < ptr+backend.DevicePtr(size); p += backend.DevicePtr(d.gran) {
		if d.pages[p] != nil {
			return fmt.Errorf("map %#x+%#x: %#x already mapped: %w", uint64(ptr), size, uint64(p), backend.ErrInvalidArgument)
		}
	}
	m := &fakeMapping{ptr: ptr, size: size, c: c, off: offset}
	d.maps[ptr] = m
	for p := ptr; p < ptr+backend.DevicePtr(size); p += backend.DevicePtr(d.gran) {
		d.pages[p] = &fakePage{m: m}
	}
	c.maps++
	return nil
}

func (d *fakeDevice) Unmap(ptr backend.DevicePtr, size uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls.Unmap++
	if err := d.failing("Unmap"); err != nil {
		return err
	}
	m := d.maps[ptr]
	if m == nil || m.size != size {
		return fmt.Errorf("unmap %#x+%#x: not one whole mapping: %w", uint64(ptr), size, backend.ErrInvalidArgument)
	}
	if d.beforeUnmap != nil {
		d.beforeUnmap(ptr, size)
	}
	delete(d.maps, ptr)
	for p := ptr; p < ptr+backend.DevicePtr(size); p += backend.DevicePtr(d.gran) {
		delete(d.pages, p)
	}
	m.c.maps--
	return nil
}

func (d *fakeDevice) SetAccess(ptr backend.DevicePtr, size uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls.SetAccess++
	if err := d.failing("SetAccess"); err != nil {
		return err
	}
	if !d.aligned(size) {
		return fmt.Errorf("set access %#x+%#x: %w", uint64(ptr), size, backend.ErrInvalidArgument)
	}
	for p := ptr; p < ptr+backend.DevicePtr(size); p += backend.DevicePtr(d.gran) {
		if d.pages[p] == nil {
			return fmt.Errorf("set access %#x+%#x: %#x unmapped: %w", uint64(ptr), size, uint64(p), backend.ErrInvalidArgument)
		}
	}
	for p := ptr; p < ptr+backend.DevicePtr(size); p += backend.DevicePtr(d.gran) {
		d.pages[p].access = true
	}
	return nil
}

func (d *fakeDevice) MemoryInfo() (free, total uint64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.total - d.used, d.total, nil
}

// access calls fn on the pieces of chunk memory behind [ptr, ptr+n), in
// order, as a kernel would reach them, failing like a fault on an unmapped or
// inaccessible granule. Caller holds mu.
func (d *fakeDevice) access(ptr backend.DevicePtr, n uint64, fn func(b []byte)) error {
	for n > 0 {
		g := ptr - ptr%backend.DevicePtr(d.gran)
		pg := d.pages[g]
		if pg == nil || !pg.access {
			return fmt.Errorf("fault at %#x (mapped %v)", uint64(ptr), pg != nil)
		}
		in := uint64(ptr - g)
		k := min(n, d.gran-in)
		at := pg.m.off + uint64(g-pg.m.ptr) + in
		fn(pg.m.c.data[at : at+k])
		ptr += backend.DevicePtr(k)
		n -= k
	}
	return nil
}

func (d *fakeDevice) write(ptr backend.DevicePtr, data []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.access(ptr, uint64(len(data)), func(b []byte) { data = data[copy(b, data):] })
}

func (d *fakeDevice) read(ptr backend.DevicePtr, n uint64) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]byte, 0, n)
	err := d.access(ptr, n, func(b []byte) { out = append(out, b...) })
	return out, err
}

// backedLocked reports the first granule of [lo, hi) that is not mapped and
// accessible. Caller holds mu.
func (d *fakeDevice) backedLocked(lo, hi backend.DevicePtr) error {
	for p := lo; p < hi; p += backend.DevicePtr(d.gran) {
		if pg := d.pages[p]; pg == nil || !pg.access {
			return fmt.Errorf("granule %#x of guard range [%#x, %#x) is not backed (mapped %v)", uint64(p), uint64(lo), uint64(hi), pg != nil)
		}
	}
	return nil
}

type fakeCounts struct {
	chunks, mappings, reservations int
	used                           uint64
	calls                          fakeCalls
	host                           uint64
}

func (d *fakeDevice) counts() fakeCounts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fakeCounts{len(d.chunks), len(d.maps), len(d.reserved), d.used, d.calls, d.hostBytes}
}

// mappingSizes lists the mappings of [lo, hi), sorted by address, as sizes in granules.
func (d *fakeDevice) mappingSizes(lo, hi backend.DevicePtr) []uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ms []*fakeMapping
	for _, m := range d.maps {
		if m.ptr >= lo && m.ptr < hi {
			ms = append(ms, m)
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].ptr < ms[j].ptr })
	out := make([]uint64, len(ms))
	for i, m := range ms {
		out[i] = m.size / d.gran
	}
	return out
}

// AllocHost returns host memory the fake counts, so tests can check that the
// swap store gives back what it pinned.
func (d *fakeDevice) AllocHost(n int) (backend.HostMemory, error) {
	if d.hostGate != nil {
		d.hostWaiting.Add(1)
		<-d.hostGate
		d.hostWaiting.Add(-1)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.failing("AllocHost"); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, backend.ErrInvalidArgument
	}
	d.hostBytes += uint64(n)
	return &fakeHost{d: d, buf: make([]byte, n)}, nil
}

type fakeHost struct {
	d     *fakeDevice
	buf   []byte
	freed bool
}

func (h *fakeHost) Bytes() []byte { return h.buf }
func (h *fakeHost) Free() error {
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	if h.freed {
		return backend.ErrInvalidArgument
	}
	h.freed = true
	h.d.hostBytes -= uint64(len(h.buf))
	return nil
}

func (d *fakeDevice) RegisterHost([]byte) error                 { return backend.ErrUnsupported }
func (d *fakeDevice) UnregisterHost([]byte) error               { return backend.ErrUnsupported }
func (d *fakeDevice) LoadModule([]byte) (backend.Module, error) { return nil, backend.ErrUnsupported }
func (d *fakeDevice) NewStream(int) (backend.Stream, error)     { return &fakeStream{d: d}, nil }
func (d *fakeDevice) StreamPriorityRange() (int, int)           { return 0, 0 }
func (d *fakeDevice) NewEvent(backend.EventFlags) (backend.Event, error) {
	return nil, backend.ErrUnsupported
}
func (d *fakeDevice) Synchronize() error { return nil }

// fakeStream runs Memset and host copies at once; everything else is unsupported.
type fakeStream struct {
	d   *fakeDevice
	err error
}

func (s *fakeStream) Memset(dst backend.DevicePtr, value uint32, elemSize int, count uint64) error {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls.Memset++
	if err := d.failing("Memset"); err != nil {
		return err
	}
	if elemSize != 4 {
		return backend.ErrUnsupported
	}
	var i uint64
	err := d.access(dst, count*4, func(b []byte) {
		if value == 0 {
			clear(b)
			return
		}
		for k := range b {
			b[k] = byte(value >> (8 * (i % 4)))
			i++
		}
	})
	if err != nil && s.err == nil {
		s.err = err
	}
	return nil
}

func (s *fakeStream) Synchronize() error {
	err := s.err
	s.err = nil
	return err
}
func (s *fakeStream) Destroy() error { return nil }
func (s *fakeStream) Launch(backend.Function, backend.LaunchConfig, []byte) error {
	return backend.ErrUnsupported
}
func (s *fakeStream) CopyHtoD(dst backend.DevicePtr, src []byte) error {
	d := s.d
	d.mu.Lock()
	d.calls.CopyHtoD++
	err := d.failing("CopyHtoD")
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if err := d.write(dst, src); err != nil && s.err == nil {
		s.err = err
	}
	return nil
}

func (s *fakeStream) CopyDtoH(dst []byte, src backend.DevicePtr) error {
	d := s.d
	d.mu.Lock()
	d.calls.CopyDtoH++
	err := d.failing("CopyDtoH")
	d.mu.Unlock()
	if err != nil {
		return err
	}
	b, err := d.read(src, uint64(len(dst)))
	if err != nil && s.err == nil {
		s.err = err
	}
	copy(dst, b)
	return nil
}
func (s *fakeStream) CopyDtoD(backend.DevicePtr, backend.DevicePtr, uint64) error {
	return backend.ErrUnsupported
}
func (s *fakeStream) Record(backend.Event) error    { return backend.ErrUnsupported }
func (s *fakeStream) WaitEvent(backend.Event) error { return backend.ErrUnsupported }
func (s *fakeStream) Callback(func(error)) error    { return backend.ErrUnsupported }
func (s *fakeStream) Query() (bool, error)          { return true, s.err }

var _ backend.Device = (*fakeDevice)(nil)
