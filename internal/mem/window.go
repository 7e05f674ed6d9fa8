package mem

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gpuos/gpuos/internal/backend"
)

// Window is one session's address window: a naturally aligned range of device
// virtual addresses that holds all its allocations and attachments.
type Window struct {
	m    *Manager
	t    *Tenant
	id   uint64
	base backend.DevicePtr
	size uint64

	hi      atomic.Uint64 // end of the guard range; published after it is accessible
	lastUse atomic.Uint64

	mu      sync.RWMutex
	closed  bool  // refuses new allocations and attachments
	closing bool  // Close is tearing down: no sink re-backing, no Quiesce
	broken  error // a failed remap left the mappings unknown
	guard   uint64
	free    freeList  // free address space, in granules
	sinks   []extent  // sink mappings inside the guard range, sorted; one Map each
	regions []*region // chunk mappings, sorted by start
	slabs   []*slab   // sorted by address
	empty   int       // slabs without allocations

	// Swapping. evicted counts regions whose chunk is in host memory; while it
	// is positive the window is non-resident and keeps swapHold, the resume
	// of the quiesce taken when it was evicted, so its session stays stopped.
	// footprint is the bytes of chunks mapped (allocations, slabs,
	// attachments): all of it must fit the device at once for the session to run.
	evicted     int
	swapHold    func()
	footprint   uint64
	nonResident atomic.Bool
}

// region is a chunk mapped in a window: a slab, a chunk-exclusive allocation
// or an attachment of one.
type region struct {
	start, n uint64 // granules from the window's base
	ch       *chunk
	alloc    *Allocation // nil for a slab
	slab     *slab
	evicted  bool // the chunk is in host memory; the granules are sink-backed
}

// OpenWindow reserves a new window for a session of tenant t. Its size is a
// power of two of at least MinWindow and 1.5 times the tenant's quota (or the
// device limit if it has none), so the quota fits whatever the fragmentation.
func (m *Manager) OpenWindow(t *Tenant) (*Window, error) {
	if t == nil || t.m != m {
		return nil, fmt.Errorf("open window: tenant of another manager: %w", ErrInvalidArgument)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	m.nextWindow++
	id := m.nextWindow
	m.mu.Unlock()

	bound := t.quota.Load()
	if bound == 0 {
		bound = m.limit
	}
	want := max(m.minWindow, bound+bound/2, bound)
	size := nextPow2(want)
	if size == 0 {
		return nil, fmt.Errorf("open window for tenant %q: a window for %d bytes is too large: %w", t.name, bound, ErrInvalidArgument)
	}
	base, err := m.dev.Reserve(size, size)
	if err != nil {
		return nil, fmt.Errorf("open window for tenant %q: reserve %d bytes: %w", t.name, size, err)
	}
	w := &Window{m: m, t: t, id: id, base: base, size: size}
	w.free = freeList{{0, size >> m.shift}}
	if uint64(base)%size != 0 {
		err = fmt.Errorf("open window: backend reserved %#x, not aligned to %#x: %w", uint64(base), size, ErrInvalidArgument)
	} else {
		// An initial guard range, so a kernel launched before any allocation
		// still has somewhere harmless to go.
		err = w.growGuard(min(nextPow2(m.sinkGran), w.granules()))
	}
	if err == nil {
		m.mu.Lock()
		if m.closed {
			err = ErrClosed
		} else {
			m.windows[id] = w
		}
		m.mu.Unlock()
	}
	if err != nil {
		w.mu.Lock()
		w.closing = true
		errs := []error{err, w.unmapSinks()}
		w.mu.Unlock()
		if rerr := m.dev.Release(base, size); rerr != nil {
			errs = append(errs, fmt.Errorf("release window: %w", rerr))
		}
		return nil, fmt.Errorf("open window for tenant %q: %w", t.name, errors.Join(errs...))
	}
	w.lastUse.Store(m.stamp())
	t.windows.Add(1)
	return w, nil
}

// ID identifies the window among the manager's windows (1, 2, ...).
func (w *Window) ID() uint64 { return w.id }

// Tenant returns the tenant the window's allocations are charged to.
func (w *Window) Tenant() *Tenant { return w.t }

// Base returns the window's first address; it is aligned to Size.
func (w *Window) Base() backend.DevicePtr { return w.base }

// Size returns the window's size in bytes, a power of two.
func (w *Window) Size() uint64 { return w.size }

// GuardRange returns [lo, hi): every granule in it is mapped and accessible
// (a chunk of an allocation or attachment, or the shared sink chunk), so a
// kernel access inside it cannot fault. lo is Base and hi-lo is a power of
// two, so a guard may confine an address by masking. hi only grows while the
// window is open; after Close the range is empty. It takes no lock.
func (w *Window) GuardRange() (lo, hi backend.DevicePtr) {
	return w.base, backend.DevicePtr(w.hi.Load())
}

// Touch records that the session's work ran now, for eviction's choice of the
// least recently used window (the driver calls it when it dispatches).
func (w *Window) Touch() { w.lastUse.Store(w.m.stamp()) }

func (w *Window) granules() uint64 { return w.size >> w.m.shift }
func (w *Window) ptr(granule uint64) backend.DevicePtr {
	return w.base + backend.DevicePtr(granule<<w.m.shift)
}
func (w *Window) bytes(granules uint64) uint64 { return granules << w.m.shift }

// usable reports why the window cannot take new mappings. Caller holds w.mu.
func (w *Window) usable() error {
	switch {
	case w.closed:
		return ErrWindowClosed
	case w.broken != nil:
		return fmt.Errorf("window %d is unusable after a failed remap: %w", w.id, w.broken)
	}
	return nil
}

// quiesce stops the session's kernels before a remap inside the guard range.
func (w *Window) quiesce() (func(), error) {
	if w.closing || w.m.quiesceFn == nil {
		return func() {}, nil
	}
	resume, err := w.m.quiesceFn(w)
	if err != nil {
		return nil, fmt.Errorf("quiesce window %d: %w", w.id, err)
	}
	if resume == nil {
		resume = func() {}
	}
	return resume, nil
}

// mapSink maps the sink over granules [lo, hi) in whole sink chunks, the
// remainder granule by granule (the driver maps a chunk only whole: a prefix
// is CUDA_ERROR_NOT_SUPPORTED), records the pieces and returns them. On
// failure it unmaps the pieces it mapped.
func (w *Window) mapSink(lo, hi uint64) ([]extent, error) {
	var done []extent
	for s := lo; s < hi; {
		n := uint64(1)
		if hi-s >= w.m.sinkGran {
			n = w.m.sinkGran
		}
		if err := w.m.dev.Map(w.ptr(s), w.bytes(n), w.m.sinkOf(n), 0); err != nil {
			w.unmapSinkPieces(done)
			return nil, fmt.Errorf("map sink at %#x: %w", uint64(w.ptr(s)), err)
		}
		e := extent{s, n}
		w.addSink(e)
		done = append(done, e)
		s += n
	}
	return done, nil
}

// unmapSinkPieces undoes mapSink on a failure path, so errors are not reported:
// the caller is already returning one.
func (w *Window) unmapSinkPieces(es []extent) {
	for _, e := range es {
		w.m.dev.Unmap(w.ptr(e.start), w.bytes(e.n))
		w.dropSink(e)
	}
}

func (w *Window) addSink(e extent) {
	i := sort.Search(len(w.sinks), func(k int) bool { return w.sinks[k].start >= e.start })
	w.sinks = slices.Insert(w.sinks, i, e)
}

func (w *Window) dropSink(e extent) {
	i := sort.Search(len(w.sinks), func(k int) bool { return w.sinks[k].start >= e.start })
	if i < len(w.sinks) && w.sinks[i] == e {
		w.sinks = slices.Delete(w.sinks, i, i+1)
	}
}

// sinksIn returns the index range of sink mappings overlapping granules [lo, hi).
func (w *Window) sinksIn(lo, hi uint64) (i, j int) {
	i = sort.Search(len(w.sinks), func(k int) bool { return w.sinks[k].end() > lo })
	j = sort.Search(len(w.sinks), func(k int) bool { return w.sinks[k].start >= hi })
	return i, max(i, j)
}

// growGuard extends the guard range to n granules (a power of two), backing
// the new granules with the sink and granting access with one SetAccess.
// Caller holds w.mu (or owns w exclusively).
func (w *Window) growGuard(n uint64) error {
	if n <= w.guard {
		return nil
	}
	pieces, err := w.mapSink(w.guard, n)
	if err != nil {
		return err
	}
	if err := w.m.dev.SetAccess(w.ptr(w.guard), w.bytes(n-w.guard)); err != nil {
		w.unmapSinkPieces(pieces)
		return fmt.Errorf("set access on %d bytes at %#x: %w", w.bytes(n-w.guard), uint64(w.ptr(w.guard)), err)
	}
	w.guard = n
	w.hi.Store(uint64(w.ptr(n)))
	return nil
}

// backRegion maps ch at granules [start, start+n), free address space the
// caller took. Sink mappings there are replaced (with the session quiesced);
// if the region ends past the guard range, the range grows to the next power
// of two and the new granules are sink-backed; one SetAccess covers all that
// was mapped. On failure the window is as before. Caller holds w.mu.
func (w *Window) backRegion(start, n uint64, ch *chunk) (err error) {
	dev := w.m.dev
	end := start + n
	newGuard := w.guard
	if end > w.guard {
		newGuard = nextPow2(end)
	}
	i, j := w.sinksIn(start, min(end, w.guard))
	old := slices.Clone(w.sinks[i:j]) // the sink mappings to replace
	if len(old) > 0 {
		resume, err := w.quiesce()
		if err != nil {
			return err
		}
		defer resume() // after SetAccess: the granules are accessible again
	}
	var unmapped []extent // of old
	chunkMapped := false
	var added []extent // new sink mappings
	undo := func(cause error) error {
		errs := []error{cause}
		for _, e := range added {
			if err := dev.Unmap(w.ptr(e.start), w.bytes(e.n)); err != nil {
				errs = append(errs, err)
			}
			w.dropSink(e)
		}
		if chunkMapped {
			if err := dev.Unmap(w.ptr(start), w.bytes(n)); err != nil {
				errs = append(errs, err)
			}
		}
		for _, e := range unmapped {
			if err := dev.Map(w.ptr(e.start), w.bytes(e.n), w.m.sinkOf(e.n), 0); err != nil {
				errs = append(errs, err)
				continue
			}
			w.addSink(e)
			if err := dev.SetAccess(w.ptr(e.start), w.bytes(e.n)); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 1 {
			w.broken = errors.Join(errs[1:]...)
		}
		return errors.Join(errs...)
	}

	for _, e := range old {
		if err := dev.Unmap(w.ptr(e.start), w.bytes(e.n)); err != nil {
			return undo(fmt.Errorf("unmap sink at %#x: %w", uint64(w.ptr(e.start)), err))
		}
		w.dropSink(e)
		unmapped = append(unmapped, e)
	}
	if err := dev.Map(w.ptr(start), w.bytes(n), ch.c, 0); err != nil {
		return undo(fmt.Errorf("map %d bytes at %#x: %w", w.bytes(n), uint64(w.ptr(start)), err))
	}
	chunkMapped = true
	// [lo, hi) is everything this call maps: the chunk, the remainders of the
	// replaced sink mappings and the growth. It is contiguous, and one
	// SetAccess covers it.
	lo, hi := start, end
	var fill []extent // granules to sink-back: remainders of old, and growth
	if len(old) > 0 {
		lo = min(lo, old[0].start)
		hi = max(hi, old[len(old)-1].end())
		if f := old[0]; f.start < start {
			fill = append(fill, extent{f.start, start - f.start})
		}
		if l := old[len(old)-1]; l.end() > end {
			fill = append(fill, extent{end, l.end() - end})
		}
	}
	if newGuard > w.guard {
		lo, hi = min(lo, w.guard), newGuard
		if start > w.guard {
			fill = append(fill, extent{w.guard, start - w.guard})
		}
		if g := max(end, w.guard); newGuard > g {
			fill = append(fill, extent{g, newGuard - g})
		}
	}
	for _, f := range fill {
		pieces, err := w.mapSink(f.start, f.end())
		if err != nil {
			return undo(err)
		}
		added = append(added, pieces...)
	}
	if err := dev.SetAccess(w.ptr(lo), w.bytes(hi-lo)); err != nil {
		return undo(fmt.Errorf("set access on %d bytes at %#x: %w", w.bytes(hi-lo), uint64(w.ptr(lo)), err))
	}
	if newGuard > w.guard {
		w.guard = newGuard
		w.hi.Store(uint64(w.ptr(newGuard)))
	}
	return nil
}

// unbackRegion unmaps the chunk at granules [start, start+n) and backs them
// with the sink again (with the session quiesced). On failure it maps the
// chunk back if it can. Caller holds w.mu.
func (w *Window) unbackRegion(start, n uint64, ch *chunk) error {
	if w.closing {
		if err := w.m.dev.Unmap(w.ptr(start), w.bytes(n)); err != nil {
			return fmt.Errorf("unmap %d bytes at %#x: %w", w.bytes(n), uint64(w.ptr(start)), err)
		}
		return nil
	}
	resume, err := w.quiesce()
	if err != nil {
		return err
	}
	defer resume()
	return w.sinkBack(start, n, ch)
}

// sinkBack replaces the chunk mapped at granules [start, start+n) by the
// sink; the session must be quiesced. On failure it maps the chunk back if it
// can (else the window is broken). Caller holds w.mu.
func (w *Window) sinkBack(start, n uint64, ch *chunk) error {
	dev := w.m.dev
	if err := dev.Unmap(w.ptr(start), w.bytes(n)); err != nil {
		return fmt.Errorf("unmap %d bytes at %#x: %w", w.bytes(n), uint64(w.ptr(start)), err)
	}
	pieces, err := w.mapSink(start, start+n)
	if err == nil {
		if err = dev.SetAccess(w.ptr(start), w.bytes(n)); err == nil {
			return nil
		}
		err = fmt.Errorf("set access on %d bytes at %#x: %w", w.bytes(n), uint64(w.ptr(start)), err)
		w.unmapSinkPieces(pieces)
	}
	// Put the chunk back so the granules stay backed.
	if merr := dev.Map(w.ptr(start), w.bytes(n), ch.c, 0); merr != nil {
		w.broken = merr
		return errors.Join(err, merr)
	}
	if serr := dev.SetAccess(w.ptr(start), w.bytes(n)); serr != nil {
		w.broken = serr
		return errors.Join(err, serr)
	}
	return err
}

// unmapSinks unmaps every sink mapping. Caller holds w.mu, with w.closing set.
func (w *Window) unmapSinks() error {
	var errs []error
	for _, e := range w.sinks {
		if err := w.m.dev.Unmap(w.ptr(e.start), w.bytes(e.n)); err != nil {
			errs = append(errs, fmt.Errorf("unmap sink at %#x: %w", uint64(w.ptr(e.start)), err))
		}
	}
	w.sinks = nil
	return errors.Join(errs...)
}

// place takes n granules of free address space and maps ch there. Caller
// holds w.mu.
func (w *Window) place(n uint64, ch *chunk) (*region, error) {
	if w.m.swap != nil && w.footprint+w.bytes(n) > w.m.limit-w.m.gran*w.m.sinkGran {
		// The session could never be resident: all it maps must fit at once.
		return nil, fmt.Errorf("window %d would map %d bytes, more than fit the device limit of %d beside the sink: %w",
			w.id, w.footprint+w.bytes(n), w.m.limit, ErrOutOfMemory)
	}
	i := w.free.firstFit(n)
	if i < 0 {
		return nil, fmt.Errorf("window %d has no free range of %d bytes (largest %d): %w", w.id, w.bytes(n), w.bytes(w.free.largest()), ErrOutOfMemory)
	}
	start := w.free.takeFront(i, n)
	if err := w.backRegion(start, n, ch); err != nil {
		w.free.put(start, n)
		return nil, err
	}
	r := &region{start: start, n: n, ch: ch}
	k := sort.Search(len(w.regions), func(k int) bool { return w.regions[k].start >= start })
	w.regions = slices.Insert(w.regions, k, r)
	w.footprint += w.bytes(n)
	return r, nil
}

// unplace unmaps region r and returns its address space. Caller holds w.mu.
func (w *Window) unplace(r *region) error {
	if err := w.unback(r); err != nil {
		return err
	}
	w.dropRegion(r)
	return nil
}

// unback unmaps region r's chunk, sink-backing its granules; an evicted
// region is sink-backed already and only stops counting as evicted (which
// may make the window resident again). Caller holds w.mu.
func (w *Window) unback(r *region) error {
	if r.evicted {
		if rel := w.markResident(r); rel != nil {
			rel()
		}
		return nil
	}
	return w.unbackRegion(r.start, r.n, r.ch)
}

func (w *Window) dropRegion(r *region) {
	k := sort.Search(len(w.regions), func(k int) bool { return w.regions[k].start >= r.start })
	if k < len(w.regions) && w.regions[k] == r {
		w.regions = slices.Delete(w.regions, k, k+1)
		w.footprint -= w.bytes(r.n)
	}
	w.free.put(r.start, r.n)
}

// regionAt returns the region holding granule g, or nil. Caller holds w.mu.
func (w *Window) regionAt(g uint64) *region {
	k := sort.Search(len(w.regions), func(k int) bool { return w.regions[k].start > g }) - 1
	if k >= 0 && g < w.regions[k].start+w.regions[k].n {
		return w.regions[k]
	}
	return nil
}

// Resolve finds the allocation holding the whole range [ptr, ptr+n) and
// returns it with ptr's offset in it (for copies and launches by address).
// Anything else (outside the window, in free space, straddling two
// allocations or running past one's end) is ErrNoAllocation. n may be 0.
func (w *Window) Resolve(ptr backend.DevicePtr, n uint64) (*Allocation, uint64, error) {
	if ptr < w.base || uint64(ptr-w.base) >= w.size || uint64(ptr)+n < uint64(ptr) {
		return nil, 0, fmt.Errorf("resolve %d bytes at %#x: outside window %d: %w", n, uint64(ptr), w.id, ErrNoAllocation)
	}
	off := uint64(ptr - w.base)
	w.mu.RLock()
	defer w.mu.RUnlock()
	r := w.regionAt(off >> w.m.shift)
	var a *Allocation
	switch {
	case r == nil:
	case r.slab != nil:
		a = r.slab.find(ptr)
	default:
		a = r.alloc
	}
	if a == nil || uint64(ptr-a.ptr)+n > a.size || uint64(ptr-a.ptr) >= max(a.size, 1) {
		return nil, 0, fmt.Errorf("resolve %d bytes at %#x: %w", n, uint64(ptr), ErrNoAllocation)
	}
	r.ch.lastUse.Store(w.m.stamp())
	return a, uint64(ptr - a.ptr), nil
}

// Close frees every allocation of the window (revoking attachments of them in
// other windows), detaches its attachments, unmaps everything and releases its
// address range. The session's kernels must have stopped (Quiesce is called
// once, if set). Allocations of a closed window are revoked: Free on them
// returns nil once.
func (w *Window) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrWindowClosed
	}
	w.closed = true
	var shared []*Allocation
	for _, r := range w.regions {
		if r.alloc != nil {
			shared = append(shared, r.alloc)
		}
	}
	resume, err := w.quiesce()
	if err != nil {
		resume = func() {} // go on: the session is ending either way
	}
	w.closing = true
	w.mu.Unlock()
	defer resume()

	errs := []error{err}
	for _, a := range shared {
		errs = append(errs, a.release(true))
	}

	w.mu.Lock()
	var give []*chunk
	for _, s := range slices.Clone(w.slabs) {
		for _, a := range s.allocs {
			a.state = stateRevoked
			w.t.uncharge(a.charge)
		}
		s.allocs = nil
		if err := w.unback(s.region); err != nil {
			errs = append(errs, err)
			continue // leaked rather than reused while perhaps mapped
		}
		w.dropRegion(s.region)
		give = append(give, s.region.ch)
	}
	w.slabs, w.empty = nil, 0
	errs = append(errs, w.unmapSinks())
	w.guard = 0
	w.hi.Store(uint64(w.base))
	leftover := len(w.regions)
	hold := w.swapHold
	w.swapHold, w.evicted = nil, 0
	w.nonResident.Store(false)
	w.mu.Unlock()
	if hold != nil {
		hold()
	}

	for _, c := range give {
		errs = append(errs, w.m.putChunk(c))
	}
	if leftover == 0 {
		if err := w.m.dev.Release(w.base, w.size); err != nil {
			errs = append(errs, fmt.Errorf("release window %d: %w", w.id, err))
		}
	} else {
		errs = append(errs, fmt.Errorf("window %d: %d mappings could not be removed; its address range stays reserved", w.id, leftover))
	}
	w.m.mu.Lock()
	delete(w.m.windows, w.id)
	w.m.mu.Unlock()
	w.t.windows.Add(-1)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close window %d: %w", w.id, err)
	}
	return nil
}

func (w *Window) appendCandidates(out []Candidate) []Candidate {
	w.mu.RLock()
	defer w.mu.RUnlock()
	wl := w.lastUse.Load()
	for _, r := range w.regions {
		if r.evicted || r.alloc != nil && r.alloc.src != nil {
			continue // evicted, or an attachment: its chunk belongs to the owner's window
		}
		out = append(out, w.candidate(r, wl))
	}
	return out
}

// candidate describes region r, a slab or an allocation of w's own, as an
// eviction candidate. Caller holds w.mu.
func (w *Window) candidate(r *region, windowUse uint64) Candidate {
	c := Candidate{
		Tenant:   w.t.name,
		Priority: w.t.Priority(),
		Window:   w.id,
		Ptr:      w.ptr(r.start),
		Bytes:    r.ch.size,
		LastUse:  max(windowUse, r.ch.lastUse.Load()),
		Slab:     r.slab != nil,
		w:        w,
		r:        r,
	}
	if r.alloc != nil {
		c.Shared = r.alloc.sh.attached.Load() > 0
	}
	return c
}
