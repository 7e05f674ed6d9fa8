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

// allocAlign is the alignment of every allocation, as cudaMalloc guarantees.
const allocAlign = 256

// AllocFlags modify Alloc.
type AllocFlags uint32

const (
	// Shareable gives the allocation chunks of its own (rounded up to the
	// granularity and charged so), so that it can be attached to other windows.
	// Allocations of at least the granularity always have their own chunks.
	Shareable AllocFlags = 1 << iota

	knownFlags = Shareable
)

type allocState uint8

const (
	stateLive    allocState = iota
	stateRevoked            // taken away by Close or by the owner's Free; Free drops it
	stateFreed              // Free was called
)

// Allocation is device memory inside a window: a sub-allocation of a slab, an
// allocation with chunks of its own, or an attachment of one of those.
type Allocation struct {
	w        *Window
	ptr      backend.DevicePtr
	size     uint64
	charge   uint64 // bytes charged to the window's tenant
	readOnly bool

	slab   *slab       // a sub-allocation's slab
	region *region     // otherwise, its mapping in w
	sh     *share      // otherwise, the chunk's sharing state
	src    *Allocation // an attachment's source allocation

	// Guarded by w.mu for sub-allocations, by sh.mu for the others (whose
	// changes also hold w.mu).
	state allocState
}

// share is what an allocation with chunks of its own and its attachments have
// in common. Its lock comes before any window's.
type share struct {
	mu        sync.Mutex
	receivers map[*Allocation]struct{}
	mixed     bool         // attached by another tenant: the chunk may hold its data
	attached  atomic.Int64 // len(receivers), readable without mu
}

// slab is a chunk of one granule that holds sub-allocations.
type slab struct {
	region  *region
	base    backend.DevicePtr
	free    freeList      // in units of allocAlign
	maxFree uint64        // largest free extent, in units
	allocs  []*Allocation // live, sorted by ptr
}

// Ptr returns the allocation's first address in its window.
func (a *Allocation) Ptr() backend.DevicePtr { return a.ptr }

// Size returns the size that was asked for (for an attachment: the source's).
func (a *Allocation) Size() uint64 { return a.size }

// Window returns the window the allocation is mapped in.
func (a *Allocation) Window() *Window { return a.w }

// ReadOnly reports whether the allocation is a read-only attachment. The
// driver enforces it on copies; the mapping itself is writable (see doc.go).
func (a *Allocation) ReadOnly() bool { return a.readOnly }

// Attached reports whether the allocation is an attachment of another one.
func (a *Allocation) Attached() bool { return a.src != nil }

// Revoked reports whether the allocation was taken away without Free: its
// window closed or, for an attachment, its owner freed it. Its address may
// since hold another allocation.
func (a *Allocation) Revoked() bool {
	if a.slab != nil {
		a.w.mu.RLock()
		defer a.w.mu.RUnlock()
	} else {
		a.sh.mu.Lock()
		defer a.sh.mu.Unlock()
	}
	return a.state == stateRevoked
}

// Shareable reports whether the allocation owns its chunks, so Attach accepts it.
func (a *Allocation) Shareable() bool { return a.slab == nil }

// Alloc allocates size bytes in the window, aligned to 256 bytes. Sizes below
// the granularity are sub-allocated from chunks the window holds unless flags
// has Shareable; larger ones get a chunk of their own. A tenant over quota
// gets ErrQuotaExceeded, a device at its limit (or a window without a large
// enough free range) ErrOutOfMemory. Memory that last held another tenant's
// data is zeroed; other memory is not initialised, as with cuMemAlloc.
func (w *Window) Alloc(size uint64, flags AllocFlags) (*Allocation, error) {
	switch {
	case size == 0:
		return nil, fmt.Errorf("alloc: zero size: %w", ErrInvalidArgument)
	case flags&^knownFlags != 0:
		return nil, fmt.Errorf("alloc: unknown flags %#x: %w", uint32(flags&^knownFlags), ErrInvalidArgument)
	case roundUp(size, w.m.gran) == 0:
		return nil, fmt.Errorf("alloc: size %d is too large: %w", size, ErrInvalidArgument)
	}
	if size < w.m.gran && flags&Shareable == 0 {
		a, err := w.allocSub(size)
		if err != nil {
			return nil, fmt.Errorf("alloc %d bytes: %w", size, err)
		}
		return a, nil
	}
	a, err := w.allocChunk(size)
	if err != nil {
		return nil, fmt.Errorf("alloc %d bytes: %w", size, err)
	}
	return a, nil
}

// pressure is what an allocation in w may evict for.
func (w *Window) pressure() *pressure {
	return &pressure{p: Pressure{Tenant: w.t.name, Window: w.id}}
}

func (w *Window) allocChunk(size uint64) (*Allocation, error) {
	bytes := roundUp(size, w.m.gran)
	if err := w.t.charge(bytes); err != nil {
		return nil, err
	}
	if bytes > w.size {
		w.t.uncharge(bytes)
		return nil, fmt.Errorf("larger than the %d-byte window: %w", w.size, ErrOutOfMemory)
	}
	ch, err := w.m.getChunk(bytes, w.t, w.pressure())
	if err != nil {
		w.t.uncharge(bytes)
		return nil, err
	}
	w.mu.Lock()
	var r *region
	err = w.usable()
	if err == nil {
		r, err = w.place(bytes>>w.m.shift, ch)
	}
	if err == nil {
		err = w.claim(r)
	}
	if err != nil {
		w.mu.Unlock()
		w.t.uncharge(bytes)
		return nil, errors.Join(err, w.m.putChunk(ch))
	}
	a := &Allocation{w: w, ptr: w.ptr(r.start), size: size, charge: bytes, region: r, sh: &share{}}
	r.alloc = a
	w.mu.Unlock()
	return a, nil
}

// claim makes a freshly placed chunk the window's: zeroed if it may hold
// another tenant's data, owned and stamped. On failure the region is
// unplaced. Caller holds w.mu.
func (w *Window) claim(r *region) error {
	ch := r.ch
	if ch.needsScrub(w.t) {
		if err := w.m.scrub(w.ptr(r.start), ch.size); err != nil {
			if uerr := w.unplace(r); uerr != nil {
				return errors.Join(err, uerr)
			}
			return err
		}
	}
	ch.clean, ch.tenant, ch.owner = false, w.t, w
	ch.lastUse.Store(w.m.stamp())
	return nil
}

func (w *Window) allocSub(size uint64) (*Allocation, error) {
	units := (size + allocAlign - 1) / allocAlign
	charge := units * allocAlign
	if err := w.t.charge(charge); err != nil {
		return nil, err
	}
	w.mu.Lock()
	if err := w.usable(); err != nil {
		w.mu.Unlock()
		w.t.uncharge(charge)
		return nil, err
	}
	if a := w.fitSub(units, size); a != nil {
		w.mu.Unlock()
		return a, nil
	}
	w.mu.Unlock()

	// No slab has room: get a chunk without holding the lock, then look
	// again, since another thread may have made a slab meanwhile.
	ch, err := w.m.getChunk(w.m.gran, w.t, w.pressure())
	if err != nil {
		w.t.uncharge(charge)
		return nil, err
	}
	w.mu.Lock()
	a, err := w.allocSubWith(ch, units, size)
	w.mu.Unlock()
	if err != nil {
		w.t.uncharge(charge)
	}
	if a == nil || a.slab.region.ch != ch {
		err = errors.Join(err, w.m.putChunk(ch))
	}
	return a, err
}

// allocSubWith sub-allocates, making a slab of ch if no slab has room.
// Caller holds w.mu.
func (w *Window) allocSubWith(ch *chunk, units, size uint64) (*Allocation, error) {
	if err := w.usable(); err != nil {
		return nil, err
	}
	if a := w.fitSub(units, size); a != nil {
		return a, nil
	}
	r, err := w.place(1, ch)
	if err != nil {
		return nil, err
	}
	if err := w.claim(r); err != nil {
		return nil, err
	}
	s := &slab{region: r, base: w.ptr(r.start)}
	n := w.m.gran / allocAlign
	s.free, s.maxFree = freeList{{0, n}}, n
	r.slab = s
	k := sort.Search(len(w.slabs), func(k int) bool { return w.slabs[k].base >= s.base })
	w.slabs = slices.Insert(w.slabs, k, s)
	w.empty++
	return w.fitSub(units, size), nil
}

// fitSub sub-allocates units from the lowest slab with room (best fit inside
// it), or returns nil. Caller holds w.mu.
func (w *Window) fitSub(units, size uint64) *Allocation {
	for _, s := range w.slabs {
		if s.maxFree < units {
			continue
		}
		off := s.free.takeFront(s.free.bestFit(units), units)
		s.maxFree = s.free.largest()
		a := &Allocation{w: w, ptr: s.base + backend.DevicePtr(off*allocAlign), size: size, charge: units * allocAlign, slab: s}
		k := sort.Search(len(s.allocs), func(k int) bool { return s.allocs[k].ptr > a.ptr })
		s.allocs = slices.Insert(s.allocs, k, a)
		if len(s.allocs) == 1 {
			w.empty--
		}
		s.region.ch.lastUse.Store(w.m.stamp())
		return a
	}
	return nil
}

// find returns the live sub-allocation holding ptr's first byte, or nil.
func (s *slab) find(ptr backend.DevicePtr) *Allocation {
	k := sort.Search(len(s.allocs), func(k int) bool { return s.allocs[k].ptr > ptr }) - 1
	if k >= 0 {
		return s.allocs[k]
	}
	return nil
}

func (a *Allocation) freeSub() error {
	w, s := a.w, a.slab
	w.mu.Lock()
	switch a.state {
	case stateFreed:
		w.mu.Unlock()
		return ErrFreed
	case stateRevoked:
		a.state = stateFreed
		w.mu.Unlock()
		return nil
	}
	a.state = stateFreed
	k := sort.Search(len(s.allocs), func(k int) bool { return s.allocs[k].ptr >= a.ptr })
	s.allocs = slices.Delete(s.allocs, k, k+1)
	s.free.put(uint64(a.ptr-s.base)/allocAlign, a.charge/allocAlign)
	s.maxFree = s.free.largest()
	w.t.uncharge(a.charge)
	var give *chunk
	var err error
	if len(s.allocs) == 0 {
		w.empty++
		// One empty slab stays, so alloc/free cycles cost no remapping; not an
		// evicted one, though: bringing it back would cost a copy for nothing.
		if (w.empty > 1 || s.region.evicted) && !w.closed {
			if err = w.unplace(s.region); err != nil {
				err = fmt.Errorf("release empty slab: %w", err)
			} else {
				k := slices.Index(w.slabs, s)
				w.slabs = slices.Delete(w.slabs, k, k+1)
				w.empty--
				give = s.region.ch
			}
		}
	}
	w.mu.Unlock()
	if give != nil {
		err = w.m.putChunk(give)
	}
	return err
}

// Free frees the allocation. Freeing an allocation with attachments revokes
// them first: their mappings in the receivers' windows are replaced by the
// sink, so the receivers' kernels read zeros-or-garbage instead of faulting,
// and their Free returns nil. Freeing an attachment detaches it. An
// allocation taken away by Close or by its owner's Free can be freed once
// (nil); a second Free returns ErrFreed.
func (a *Allocation) Free() error {
	if a == nil || a.w == nil {
		return fmt.Errorf("free: nil allocation: %w", ErrInvalidArgument)
	}
	var err error
	if a.slab != nil {
		err = a.freeSub()
	} else {
		err = a.release(false)
	}
	if err != nil {
		return fmt.Errorf("free %d bytes at %#x: %w", a.size, uint64(a.ptr), err)
	}
	return nil
}

// release frees (revoke false) or revokes (revoke true: Close) an allocation
// with chunks of its own or an attachment.
func (a *Allocation) release(revoke bool) error {
	sh := a.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	switch a.state {
	case stateFreed:
		if revoke {
			return nil
		}
		return ErrFreed
	case stateRevoked:
		if !revoke {
			a.state = stateFreed
		}
		return nil
	}
	next := stateFreed
	if revoke {
		next = stateRevoked
	}
	if a.src != nil {
		return a.detach(next)
	}
	var errs []error
	for r := range sh.receivers {
		if err := r.detach(stateRevoked); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// Still mapped somewhere: keep the chunk, and the allocation, alive.
		return errors.Join(errs...)
	}
	w, ch := a.w, a.region.ch
	w.mu.Lock()
	if err := w.unplace(a.region); err != nil {
		w.mu.Unlock()
		return err
	}
	a.state = next
	w.mu.Unlock()
	w.t.uncharge(a.charge)
	if sh.mixed {
		ch.tenant = nil
	}
	return w.m.putChunk(ch)
}

// detach unmaps attachment a from its window. Caller holds a.sh.mu.
func (a *Allocation) detach(next allocState) error {
	w := a.w
	w.mu.Lock()
	err := w.unplace(a.region)
	if err == nil {
		a.state = next
	}
	w.mu.Unlock()
	if err != nil {
		return fmt.Errorf("detach from window %d: %w", w.id, err)
	}
	delete(a.sh.receivers, a)
	a.sh.attached.Add(-1)
	return nil
}

// Attach maps the physical memory of a (an allocation of any window of this
// manager, or an attachment of one) into w: a write through one is read
// through the other. The attachment is charged to nobody: the owner's tenant
// pays once. It lasts until it is freed, its window closes, or the owner frees
// a (which revokes it). readOnly is recorded for the driver to enforce; an
// attachment of a read-only attachment must be read-only too. A sub-allocated
// a is ErrNotShareable.
func (w *Window) Attach(a *Allocation, readOnly bool) (*Allocation, error) {
	if a == nil || a.w == nil || a.w.m != w.m {
		return nil, fmt.Errorf("attach: allocation of another manager: %w", ErrInvalidArgument)
	}
	if a.slab != nil {
		return nil, fmt.Errorf("attach %d bytes at %#x: %w", a.size, uint64(a.ptr), ErrNotShareable)
	}
	src := a
	if a.src != nil {
		if a.readOnly && !readOnly {
			return nil, fmt.Errorf("attach %d bytes at %#x read-write: %w", a.size, uint64(a.ptr), ErrReadOnly)
		}
		src = a.src
	}
	sh := src.sh
	sh.mu.Lock()
	for src.state == stateLive && src.region.ch.slot.Load() != nil {
		// Evicted: bring it back first, so the new mapping has a chunk to map.
		sh.mu.Unlock()
		if err := w.m.bringBack(src, w); err != nil {
			return nil, fmt.Errorf("attach %d bytes at %#x: %w", a.size, uint64(a.ptr), err)
		}
		sh.mu.Lock()
	}
	defer sh.mu.Unlock()
	switch {
	case a.state == stateFreed:
		return nil, fmt.Errorf("attach %d bytes at %#x: %w", a.size, uint64(a.ptr), ErrFreed)
	case a.state != stateLive || src.state != stateLive:
		return nil, fmt.Errorf("attach %d bytes at %#x: %w", a.size, uint64(a.ptr), ErrRevoked)
	}
	ch := src.region.ch
	w.mu.Lock()
	err := w.usable()
	var r *region
	if err == nil {
		r, err = w.place(ch.size>>w.m.shift, ch)
	}
	if err != nil {
		w.mu.Unlock()
		return nil, fmt.Errorf("attach %d bytes at %#x: %w", a.size, uint64(a.ptr), err)
	}
	att := &Allocation{w: w, ptr: w.ptr(r.start), size: src.size, readOnly: readOnly, region: r, sh: sh, src: src}
	r.alloc = att
	ch.lastUse.Store(w.m.stamp())
	w.mu.Unlock()
	if sh.receivers == nil {
		sh.receivers = map[*Allocation]struct{}{}
	}
	sh.receivers[att] = struct{}{}
	sh.attached.Add(1)
	if w.t != src.w.t {
		sh.mixed = true
	}
	return att, nil
}
