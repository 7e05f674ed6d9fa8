package mem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// SwapKind says which way a SwapEvent moved a chunk.
type SwapKind uint8

const (
	// SwapOut: the chunk was copied to host memory and unmapped (evicted).
	SwapOut SwapKind = iota + 1
	// SwapIn: the chunk was mapped back at the same addresses and its data
	// copied back.
	SwapIn
	// Resident: a window was made resident (Window.MakeResident): one event
	// per pass, after the SwapIn events of its chunks. Bytes is what came
	// back, Evicted what was evicted to make room, Duration the whole pass.
	Resident
	// SwapReserved: the swap store has pinned its reserve
	// (Options.SwapReserve): Bytes of host memory, Duration after the
	// manager was created. Told once, not under the eviction lock.
	SwapReserved
)

func (k SwapKind) String() string {
	switch k {
	case SwapOut:
		return "evict"
	case SwapIn:
		return "swap-in"
	case Resident:
		return "resident"
	case SwapReserved:
		return "reserved"
	}
	return fmt.Sprintf("swap(%d)", uint8(k))
}

// SwapEvent reports one chunk moved out of or back into device memory
// (Options.OnSwap), for the audit log and per-tenant counters.
type SwapEvent struct {
	Kind   SwapKind
	Tenant string            // the chunk's owner
	Window uint64            // its owner window
	Ptr    backend.DevicePtr // its address in the owner window
	Bytes  uint64
	// Windows lists every window the chunk is mapped in (the owner's first).
	// After a SwapOut each of them is non-resident: the driver must keep its
	// session's work from the device until Window.MakeResident.
	Windows []*Window
	// Duration is how long the move took (for a SwapIn, until its copy was
	// enqueued: swap-ins of one MakeResident share one wait at the end; for
	// a SwapOut, the time spent beginning and finishing it, not the work
	// done between while its copy ran).
	Duration time.Duration
	// Copy is, for a SwapOut, how long its copy to host memory took: device
	// time, measured with events on the eviction stream (host time from the
	// first copy enqueued to the synchronization where the backend has no
	// events). It excludes Pin.
	Copy time.Duration
	// Pin is, for a SwapOut, how long it spent pinning Pinned bytes of host
	// memory that the swap store did not have ready (0 when it had).
	Pin    time.Duration
	Pinned uint64
	// Quiesce is, for a SwapOut, how long it waited for the work of the
	// sessions whose windows map the chunk to stop (Options.Quiesce).
	Quiesce time.Duration
	// Remap is, for a SwapOut, how long replacing the chunk's mappings by
	// the sink took (unmap, map, set access: backend calls on the host).
	Remap time.Duration
	// Evicted is, for a Resident pass, the bytes evicted to make room.
	Evicted uint64
	// CopyIn is, for a Resident pass, the device time of its copies back
	// (timed with events on the swap-in stream).
	CopyIn time.Duration
	// Why is the pressure that caused an eviction.
	Why Pressure
}

// errGone: a candidate changed (freed, evicted, its window closing) between
// being listed and being evicted; the caller moves on to the next.
var errGone = errors.New("eviction candidate is gone")

// errDropped: the candidate was an empty slab, released rather than evicted
// (it held nothing worth a copy); memory was freed all the same.
var errDropped = errors.New("empty slab dropped")

// pressure is a request for device memory that may evict.
type pressure struct {
	p Pressure
	// locked: the caller holds m.evictMu (a swap-in); it cannot wait for
	// protections to expire, since it would have to let go of what it holds.
	locked bool
	// pin is the window whose chunks must not be evicted (the one being
	// made resident), or nil.
	pin *Window
	// ahead is the bytes a MakeResident pass will need after the chunk it
	// asks for now: evictions for them are begun early (evictAhead).
	ahead uint64
}

// swapStreams returns the streams evictions and swap-ins copy on, creating
// them on first use. Caller holds m.evictMu.
func (m *Manager) swapStreams() (out, in backend.Stream, err error) {
	if m.outStream == nil {
		if m.outStream, err = m.dev.NewStream(0); err != nil {
			return nil, nil, fmt.Errorf("create eviction stream: %w", err)
		}
	}
	if m.inStream == nil {
		if m.inStream, err = m.dev.NewStream(0); err != nil {
			return nil, nil, fmt.Errorf("create swap-in stream: %w", err)
		}
	}
	return m.outStream, m.inStream, nil
}

// makeRoom evicts chunks until size bytes fit under the device limit, and
// returns a pooled chunk of that size or reserves the bytes (reserved true).
// Caller holds m.evictMu unless pr.locked is false, in which case makeRoom
// takes it (and lets go of it while it waits for protections to expire).
//
// Evictions are pipelined: makeRoom begins as many as the need calls for
// (their copies queue on the eviction stream back to back) and finishes them
// oldest first until the chunk fits. With pr.locked (a MakeResident pass),
// evictions begun for what the pass needs next (pr.ahead) may remain under
// way when it returns, so their copies run while the caller maps and copies
// back its chunk; the pass finishes them (drainEvictions) before it lets go
// of m.evictMu.
func (m *Manager) makeRoom(size uint64, pr *pressure) (c *chunk, err error) {
	if !pr.locked {
		m.evictMu.Lock()
		defer func() {
			// Every eviction begun ends before evictMu is let go of. One
			// that fails was undone; the memory got is good all the same.
			if derr := m.drainEvictions(); derr != nil && err == nil && c == nil {
				m.evictFailures.Add(1)
			}
			m.evictMu.Unlock()
		}()
	}
	var waited time.Duration
	for {
		c, reserved, err := m.takeOrReserve(size)
		if err != nil || c != nil || reserved {
			if err == nil && pr.locked && pr.ahead > 0 {
				m.evictAhead(size, pr)
			}
			return c, err
		}
		if len(m.outgoing) > 0 {
			// Evictions under way free memory first.
			if err := m.finishEviction(); err != nil && !errors.Is(err, errGone) {
				return nil, fmt.Errorf("evict for %d bytes: %w", size, err)
			}
			continue
		}
		m.mu.Lock()
		need := m.physical + size - m.limit
		m.mu.Unlock()
		cands, wait, listed := m.victimCandidates(pr.pin)
		if len(cands) == 0 {
			if wait <= 0 {
				// Memory no window lists is in transit (chunks being created
				// or released by allocations, frees and closes that run now):
				// it comes back shortly. Anything else cannot be evicted.
				m.mu.Lock()
				transit := m.physical - min(m.physical, m.pooled+m.gran*m.sinkGran+listed)
				// Memory freed since takeOrReserve looked (a chunk released
				// while the candidates were listed) is no longer in transit
				// and no longer listed: take it.
				back := m.physical+size <= m.limit || m.pooled > 0
				m.mu.Unlock()
				if back {
					continue
				}
				if transit == 0 || !pr.locked && waited >= maxTransitWait {
					return nil, fmt.Errorf("%d bytes more would pass the device limit of %d and nothing can be evicted: %w", size, m.limit, ErrOutOfMemory)
				}
				wait = time.Millisecond
				waited += wait
			}
			if pr.locked {
				return nil, fmt.Errorf("need %d bytes: %w", size, ErrBusy)
			}
			m.evictMu.Unlock()
			time.Sleep(wait)
			m.evictMu.Lock()
			continue
		}
		p := pr.p
		p.Need = need
		var begun uint64
		for _, i := range m.choose(p, cands) {
			if begun >= need {
				break
			}
			err := m.beginEviction(cands[i], p)
			switch {
			case errors.Is(err, errGone):
				continue
			case errors.Is(err, errDropped):
			case err != nil:
				return nil, fmt.Errorf("evict for %d bytes: %w", size, err)
			}
			begun += cands[i].Bytes
		}
		if begun > 0 && pr.locked && pr.ahead > 0 {
			// The next victims' copies queue behind these while the first
			// is finished and remapped.
			m.evictAhead(size, pr)
		}
		// Nothing begun: every chosen candidate vanished meanwhile; list again.
	}
}

// evictAhead begins evictions for what a MakeResident pass needs next (at
// most twice the chunk it just got), so their copies to host memory run
// while the pass remaps and copies back that chunk, and the eviction stream
// never waits for the host. Only into host memory the swap store has
// pinned; a failure is left for the next need to meet. Caller holds
// m.evictMu.
func (m *Manager) evictAhead(size uint64, pr *pressure) {
	want := min(pr.ahead, 2*size)
	var have uint64
	for _, o := range m.outgoing {
		have += o.ch.size
	}
	m.mu.Lock()
	have += m.limit - min(m.limit, m.physical) + m.pooled
	m.mu.Unlock()
	if have >= want {
		return
	}
	cands, _, _ := m.victimCandidates(pr.pin)
	if len(cands) == 0 {
		return
	}
	p := pr.p
	p.Need = want - have
	for _, i := range m.choose(p, cands) {
		if have >= want || !m.swap.ready(cands[i].Bytes) {
			// Ahead only into host memory already pinned: pinning costs
			// more than waiting for the copy would save.
			return
		}
		switch err := m.beginEviction(cands[i], p); {
		case err == nil, errors.Is(err, errDropped):
			have += cands[i].Bytes
		case errors.Is(err, errGone):
		default:
			return
		}
	}
}

// evictBytes evicts at least size bytes of chunks whatever the accounting
// says (the device itself is short), and reports whether it evicted any.
// It takes m.evictMu unless pr.locked.
func (m *Manager) evictBytes(size uint64, pr *pressure) bool {
	if !pr.locked {
		m.evictMu.Lock()
		defer m.evictMu.Unlock()
	}
	cands, _, _ := m.victimCandidates(pr.pin)
	if len(cands) == 0 {
		return false
	}
	p := pr.p
	p.Need = size
	var freed uint64
	for _, i := range m.choose(p, cands) {
		if freed >= size {
			break
		}
		switch err := m.evictChunk(cands[i], p); {
		case err == nil, errors.Is(err, errDropped):
			freed += cands[i].Bytes
		case errors.Is(err, errGone):
		default:
			return freed > 0
		}
	}
	return freed > 0
}

// takeOrReserve takes a pooled chunk of exactly size bytes, or reserves size
// bytes of the device limit (trimming the pool if needed).
func (m *Manager) takeOrReserve(size uint64) (c *chunk, reserved bool, err error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, false, ErrClosed
	}
	if l := m.pool[size]; len(l) > 0 {
		c = l[len(l)-1]
		m.pool[size] = l[:len(l)-1]
		m.pooled -= size
		m.mu.Unlock()
		return c, false, nil
	}
	trimmed := m.trimLocked(size)
	if m.physical+size <= m.limit && m.physical+size >= m.physical {
		m.physical += size
		reserved = true
	}
	m.mu.Unlock()
	m.release(trimmed)
	return nil, reserved, nil
}

// choose asks the chooser for victims, falling back to the built-in choice
// when it fails or answers nonsense.
func (m *Manager) choose(p Pressure, cands []Candidate) []int {
	pub := make([]Candidate, len(cands))
	for i, c := range cands {
		c.w, c.r = nil, nil // the chooser sees only the public fields
		pub[i] = c
	}
	idx, err := m.chooser.ChooseVictims(p, pub)
	if err == nil {
		err = validVictims(idx, len(cands))
	}
	if err != nil {
		m.chooserFallbacks.Add(1)
		idx, _ = LowestPriorityLRU{}.ChooseVictims(p, pub)
	}
	return idx
}

// maxTransitWait bounds how long an allocation waits for memory in transit
// (see makeRoom) before it is out of memory.
const maxTransitWait = time.Second

// victimCandidates lists the chunks that may be evicted now: those backing
// allocations and slabs of open windows, resident, not mapped in pin, and not
// protected (made resident less than MinResidency ago). If protected chunks
// were left out, wait is how long until the first protection ends. listed
// is the bytes of every resident chunk the open windows hold, candidates or not.
func (m *Manager) victimCandidates(pin *Window) (out []Candidate, wait time.Duration, listed uint64) {
	pinned := map[*chunk]bool{}
	if pin != nil {
		pin.mu.RLock()
		for _, r := range pin.regions {
			pinned[r.ch] = true
		}
		pin.mu.RUnlock()
	}
	now := time.Now().UnixNano()
	var earliest int64
	for _, w := range m.openWindows() {
		w.mu.RLock()
		if w.closed || w.closing || w.broken != nil {
			w.mu.RUnlock()
			continue
		}
		wl := w.lastUse.Load()
		for _, r := range w.regions {
			if r.evicted || r.alloc != nil && r.alloc.src != nil {
				continue
			}
			listed += r.ch.size
			if pinned[r.ch] || r.ch.evicting.Load() {
				continue
			}
			if until := r.ch.protectUntil.Load(); until > now {
				if earliest == 0 || until < earliest {
					earliest = until
				}
				continue
			}
			out = append(out, w.candidate(r, wl))
		}
		w.mu.RUnlock()
	}
	sortCandidates(out)
	if earliest != 0 {
		wait = time.Duration(earliest - now)
	}
	return out, wait, listed
}

// evictChunk evicts the chunk behind cd and waits until it is done (with
// every eviction begun before it). Caller holds m.evictMu.
func (m *Manager) evictChunk(cd Candidate, why Pressure) error {
	if cd.r.alloc == nil {
		return m.beginEviction(cd, why)
	}
	if err := m.beginEviction(cd, why); err != nil {
		return err
	}
	return m.drainEvictions()
}

// beginEviction starts evicting the chunk behind cd: for an allocation's
// chunk it quiesces every window that maps it and enqueues the copy to host
// memory on the eviction stream, and finishEviction does the rest; a slab's
// chunk is evicted whole at once (its window's lock is held throughout, and
// a pass must not hold two windows' locks). Caller holds m.evictMu.
func (m *Manager) beginEviction(cd Candidate, why Pressure) error {
	start := time.Now()
	if cd.r.alloc == nil {
		ev, copied, err := m.evictSlab(cd.w, cd.r)
		if err != nil {
			return err
		}
		ev.Why, ev.Duration = why, time.Since(start)
		ev.Copy, ev.Pin, ev.Pinned = copied.dur, copied.pin, copied.pinned
		m.reportEviction(ev)
		return nil
	}
	src := cd.r.alloc
	sh := src.sh
	sh.mu.Lock()
	if src.state != stateLive || src.region == nil || src.region.ch.slot.Load() != nil || src.region.ch.evicting.Load() {
		sh.mu.Unlock()
		return errGone
	}
	o := &outgoing{src: src, ch: src.region.ch, why: why}
	o.maps = src.mappingsLocked()
	o.resumes = make([]func(), len(o.maps))
	for i, mp := range o.maps {
		mp.w.mu.Lock()
		var err error
		if mp.w.closing || mp.w.broken != nil || mp.r.evicted {
			err = errGone
		} else {
			qstart := time.Now()
			o.resumes[i], err = mp.w.quiesce()
			o.quiesced += time.Since(qstart)
		}
		mp.w.mu.Unlock()
		if err != nil {
			o.resumeAll()
			sh.mu.Unlock()
			return err
		}
	}
	owner := o.maps[0]
	var err error
	if o.copy, err = m.startCopyOut(owner.w.ptr(owner.r.start), o.ch.size); err != nil {
		o.resumeAll()
		sh.mu.Unlock()
		return err
	}
	o.ch.evicting.Store(true)
	o.active = time.Since(start)
	m.outgoing = append(m.outgoing, o)
	m.outgoingPeak = max(m.outgoingPeak, len(m.outgoing))
	return nil
}

// outgoing is an eviction under way (beginEviction): the windows that map
// its chunk are quiesced and its copy to host memory is enqueued; the
// allocation's share lock is held until finishEviction.
type outgoing struct {
	src      *Allocation
	ch       *chunk
	maps     []mapping
	resumes  []func()
	copy     outCopy
	why      Pressure
	active   time.Duration // host time spent on it, not counting other work between
	quiesced time.Duration
}

func (o *outgoing) resumeAll() {
	for i, r := range o.resumes {
		if r != nil {
			r()
			o.resumes[i] = nil
		}
	}
}

// drainEvictions finishes every eviction under way. Caller holds m.evictMu.
func (m *Manager) drainEvictions() error {
	var errs []error
	for len(m.outgoing) > 0 {
		if err := m.finishEviction(); err != nil && !errors.Is(err, errGone) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// finishEviction finishes the oldest eviction under way: it waits for its
// copy, replaces the chunk's mappings by the sink in every window (which
// stay quiesced until they are resident again) and gives the chunk to the
// pool. On failure the chunk stays where it was and its windows are resumed.
// Caller holds m.evictMu.
func (m *Manager) finishEviction() error {
	o := m.outgoing[0]
	m.outgoing[0] = nil
	m.outgoing = m.outgoing[1:]
	if len(m.outgoing) == 0 {
		m.outgoing = nil
	}
	start := time.Now()
	sh, ch := o.src.sh, o.ch
	defer sh.mu.Unlock()
	ch.evicting.Store(false)
	copyDur, err := m.waitCopyOut(&o.copy)
	if err != nil {
		o.resumeAll()
		return err
	}
	slot := o.copy.slot
	rstart := time.Now()
	for i, mp := range o.maps {
		mp.w.mu.Lock()
		err := mp.w.sinkBack(mp.r.start, mp.r.n, ch)
		if err == nil {
			mp.w.markEvicted(mp.r, o.resumes[i])
			o.resumes[i] = nil
		}
		mp.w.mu.Unlock()
		if err == nil {
			continue
		}
		// Put the chunk back where it was already taken away.
		errs := []error{err}
		for _, done := range o.maps[:i] {
			done.w.mu.Lock()
			if berr := done.w.backRegion(done.r.start, done.r.n, ch); berr != nil {
				errs = append(errs, berr)
			} else if rel := done.w.markResident(done.r); rel != nil {
				rel()
			}
			done.w.mu.Unlock()
		}
		o.resumeAll()
		m.swap.release(slot)
		return errors.Join(errs...)
	}
	remapped := time.Since(rstart)
	old := ch.c
	ch.c = nil
	ch.slot.Store(slot)
	m.dropPhysical(old, ch)
	owner := o.maps[0]
	ev := SwapEvent{Kind: SwapOut, Tenant: owner.w.t.name, Window: owner.w.id, Ptr: owner.w.ptr(owner.r.start), Bytes: ch.size,
		Quiesce: o.quiesced, Remap: remapped, Copy: copyDur, Pin: o.copy.pin, Pinned: o.copy.pinned, Why: o.why,
		Duration: o.active + time.Since(start)}
	for _, mp := range o.maps {
		ev.Windows = append(ev.Windows, mp.w)
	}
	m.reportEviction(ev)
	return nil
}

// reportEviction counts a finished eviction and tells OnSwap.
func (m *Manager) reportEviction(ev SwapEvent) {
	ev.Kind = SwapOut
	m.passEvicted += ev.Bytes
	m.evictions.Add(1)
	m.evictedBytes.Add(ev.Bytes)
	m.evictNs.Add(uint64(ev.Duration))
	m.evictCopyNs.Add(uint64(ev.Copy))
	m.evictPinNs.Add(uint64(ev.Pin))
	m.evictPinned.Add(ev.Pinned)
	if t := ev.Windows[0].t; t != nil {
		t.evictions.Add(1)
		t.swapped.Add(ev.Bytes)
	}
	if m.onSwap != nil {
		m.onSwap(ev)
	}
}

// evictSlab evicts a slab's chunk, holding its window's lock throughout
// (sub-allocations come and go under it), and reports its copy.
func (m *Manager) evictSlab(w *Window, r *region) (_ SwapEvent, copied copyReport, _ error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.closing || w.broken != nil || r.evicted || w.regionAt(r.start) != r {
		return SwapEvent{}, copied, errGone
	}
	if len(r.slab.allocs) == 0 {
		// The empty slab a window keeps: give it up instead.
		if err := w.unplace(r); err != nil {
			return SwapEvent{}, copied, err
		}
		k := slices.Index(w.slabs, r.slab)
		w.slabs = slices.Delete(w.slabs, k, k+1)
		w.empty--
		if err := m.putChunk(r.ch); err != nil {
			return SwapEvent{}, copied, err
		}
		return SwapEvent{}, copied, errDropped
	}
	qstart := time.Now()
	resume, err := w.quiesce()
	if err != nil {
		return SwapEvent{}, copied, err
	}
	quiesced := time.Since(qstart)
	slot, copied, err := m.copyOut(w.ptr(r.start), r.ch.size)
	if err != nil {
		resume()
		return SwapEvent{}, copied, err
	}
	rstart := time.Now()
	if err := w.sinkBack(r.start, r.n, r.ch); err != nil {
		resume()
		m.swap.release(slot)
		return SwapEvent{}, copied, err
	}
	remapped := time.Since(rstart)
	w.markEvicted(r, resume)
	old := r.ch.c
	r.ch.c = nil
	r.ch.slot.Store(slot)
	m.dropPhysical(old, r.ch)
	return SwapEvent{Tenant: w.t.name, Window: w.id, Ptr: w.ptr(r.start), Bytes: r.ch.size, Windows: []*Window{w},
		Quiesce: quiesced, Remap: remapped}, copied, nil
}

// mapping is one place a chunk is mapped.
type mapping struct {
	w *Window
	r *region
}

// mappingsLocked lists where src's chunk is mapped: its own window first,
// then its attachments. Caller holds src.sh.mu.
func (src *Allocation) mappingsLocked() []mapping {
	out := []mapping{{src.w, src.region}}
	for att := range src.sh.receivers {
		out = append(out, mapping{att.w, att.region})
	}
	return out
}

// outCopy is a copy of a chunk to host memory enqueued on the eviction
// stream: its slot, the events around it (none where the backend has no
// events) and the pinning it needed first.
type outCopy struct {
	slot   *swapSlot
	timing [2]backend.Event
	enq    time.Time // when it was enqueued, to time it on the host without events
	pin    time.Duration
	pinned uint64
}

// copyReport is what an eviction's copy took: its device time, and the
// pinning of host memory it needed first.
type copyReport struct {
	dur    time.Duration
	pin    time.Duration
	pinned uint64
}

// copyOut copies size bytes at ptr to a new swap slot and waits for it.
// Caller holds m.evictMu.
func (m *Manager) copyOut(ptr backend.DevicePtr, size uint64) (*swapSlot, copyReport, error) {
	oc, err := m.startCopyOut(ptr, size)
	if err != nil {
		return nil, copyReport{}, err
	}
	d, err := m.waitCopyOut(&oc)
	if err != nil {
		return nil, copyReport{}, err
	}
	return oc.slot, copyReport{dur: d, pin: oc.pin, pinned: oc.pinned}, nil
}

// startCopyOut enqueues the copy of size bytes at ptr to a new swap slot on
// the eviction stream, run after run of the slot's blocks, between two
// events. Caller holds m.evictMu.
func (m *Manager) startCopyOut(ptr backend.DevicePtr, size uint64) (outCopy, error) {
	var oc outCopy
	m.reclaimLanded()
	m.swap.evicting() // pin ahead for this one (if it must) and the next ones
	if !m.swap.ready(size) {
		// Swap-in copies in flight hold buffers that come back in far less
		// time than pinning new ones would take (a copy runs ~25 times faster
		// than cuMemHostAlloc pins): wait for the oldest and reuse theirs.
		if err := m.reclaimSwapIns(size); err != nil {
			return oc, err
		}
	}
	slot, pinned, pinTime, err := m.swap.alloc(size)
	if err != nil && len(m.pendingIns) > 0 {
		// Slots of swap-ins in flight are about to come back.
		if ferr := m.finishSwapIns(); ferr != nil {
			return oc, ferr
		}
		slot, pinned, pinTime, err = m.swap.alloc(size)
	}
	if err != nil {
		return oc, err
	}
	oc = outCopy{slot: slot, pin: pinTime, pinned: pinned}
	out, _, err := m.swapStreams()
	if err == nil {
		oc.timing = m.eventPair()
		if oc.timing[0] != nil && out.Record(oc.timing[0]) != nil {
			m.putEvents(oc.timing)
			oc.timing = [2]backend.Event{}
		}
		oc.enq = time.Now()
		var off uint64
		for _, b := range slot.buffers() {
			if err = out.CopyDtoH(b, ptr+backend.DevicePtr(off)); err != nil {
				break
			}
			off += uint64(len(b))
		}
	}
	if err == nil && oc.timing[1] != nil && out.Record(oc.timing[1]) != nil {
		// The copy cannot be told apart: wait for the whole stream.
		m.putEvents(oc.timing)
		oc.timing = [2]backend.Event{}
	}
	if err != nil {
		if out != nil {
			out.Synchronize() // copies enqueued may still write the slot
		}
		m.putEvents(oc.timing)
		m.swap.release(slot)
		return outCopy{}, fmt.Errorf("copy %d bytes at %#x to host: %w", size, uint64(ptr), err)
	}
	return oc, nil
}

// waitCopyOut waits for a copy startCopyOut enqueued and returns its device
// time (host time where the backend has no events). On failure the slot is
// released. Caller holds m.evictMu.
func (m *Manager) waitCopyOut(oc *outCopy) (time.Duration, error) {
	var err error
	if oc.timing[1] != nil {
		err = oc.timing[1].Synchronize()
	} else {
		err = m.outStream.Synchronize()
	}
	d := time.Since(oc.enq)
	if err == nil && oc.timing[0] != nil {
		if dd, derr := oc.timing[1].Elapsed(oc.timing[0]); derr == nil {
			d = dd
		}
	}
	m.putEvents(oc.timing)
	oc.timing = [2]backend.Event{}
	if err != nil {
		// A failed copy is a failed context; its stream has nothing left to
		// write into the slot.
		m.outStream.Synchronize()
		m.swap.release(oc.slot)
		return 0, fmt.Errorf("copy %d bytes to host: %w", oc.slot.size, err)
	}
	return d, nil
}

// eventPair returns two events from the manager's free list (created when
// it is empty), or none if the backend has no events. Caller holds m.evictMu.
func (m *Manager) eventPair() [2]backend.Event {
	var evs [2]backend.Event
	if m.noEvents {
		return evs
	}
	for i := range evs {
		if n := len(m.events); n > 0 {
			evs[i] = m.events[n-1]
			m.events = m.events[:n-1]
			continue
		}
		ev, err := m.dev.NewEvent(0)
		if err != nil {
			m.noEvents = true // the host times copies instead
			m.putEvents(evs)
			return [2]backend.Event{}
		}
		evs[i] = ev
	}
	return evs
}

// putEvents gives events back to the free list; their recorded work must be
// complete or abandoned. Caller holds m.evictMu.
func (m *Manager) putEvents(evs [2]backend.Event) {
	for _, ev := range evs {
		if ev != nil {
			m.events = append(m.events, ev)
		}
	}
}

// pendingIn is a swap-in whose copy may be in flight: its slot, freed once
// the copy has landed, and the events recorded around the copy on the
// swap-in stream (none where the backend has no events).
type pendingIn struct {
	slot   *swapSlot
	timing [2]backend.Event
}

// reclaimLanded frees the slots of swap-ins whose copies have landed,
// without waiting: the store then sees how much it really has free (and
// pins nothing ahead for memory that is only waiting to be reused). Caller
// holds m.evictMu.
func (m *Manager) reclaimLanded() {
	for i := range m.pendingIns {
		p := &m.pendingIns[i]
		if p.slot == nil || p.timing[1] == nil {
			continue
		}
		if done, err := p.timing[1].Query(); err != nil || !done {
			// Later copies on the stream land later.
			return
		}
		m.swap.release(p.slot)
		p.slot = nil
	}
}

// reclaimSwapIns frees the slots of swap-ins whose copies have landed,
// waiting for them oldest first, until the store has size bytes free or no
// swap-in is left in flight. The windows they made resident stay quiesced
// until finishSwapIns. Caller holds m.evictMu.
func (m *Manager) reclaimSwapIns(size uint64) error {
	for i := range m.pendingIns {
		p := &m.pendingIns[i]
		if p.slot == nil {
			continue
		}
		if m.swap.ready(size) {
			return nil
		}
		if p.timing[1] == nil {
			// No event to wait for: wait for the whole stream.
			if err := m.inStream.Synchronize(); err != nil {
				return fmt.Errorf("wait for swap-in copies: %w", err)
			}
			for j := i; j < len(m.pendingIns); j++ {
				if q := &m.pendingIns[j]; q.slot != nil {
					m.swap.release(q.slot)
					q.slot = nil
				}
			}
			return nil
		}
		if err := p.timing[1].Synchronize(); err != nil {
			return fmt.Errorf("wait for a swap-in copy: %w", err)
		}
		m.swap.release(p.slot)
		p.slot = nil
	}
	return nil
}

// dropPhysical gives the backend chunk an evicted chunk had back to the pool
// (or the device): it holds the data of ch's tenant.
func (m *Manager) dropPhysical(old backend.Chunk, ch *chunk) {
	if err := m.putChunk(&chunk{c: old, size: ch.size, tenant: ch.tenant}); err != nil {
		m.releaseErrors.Add(1)
	}
}

// swapInRegion brings back the evicted chunk behind region r of window w: a
// chunk is mapped at the same addresses in every window that maps it and the
// data copy is enqueued on the swap-in stream. The copy is waited for, and
// the windows that became resident are resumed, by finishSwapIns. Caller
// holds m.evictMu.
func (m *Manager) swapInRegion(w *Window, r *region, pr *pressure) error {
	start := time.Now()
	ch := r.ch
	if ch.slot.Load() == nil {
		return errGone
	}
	owner := ch.owner
	nc, err := m.getChunk(ch.size, owner.t, pr)
	if err != nil {
		return err
	}
	// The new chunk is written whole from the slot: no scrub is needed.
	var maps []mapping
	var unlock func()
	if r.alloc == nil {
		w.mu.Lock()
		unlock = w.mu.Unlock
		if !r.evicted || w.regionAt(r.start) != r || w.closing {
			unlock()
			m.putChunk(nc)
			return errGone
		}
		maps = []mapping{{w, r}}
	} else {
		src := r.alloc
		if src.src != nil {
			src = src.src
		}
		src.sh.mu.Lock()
		unlock = src.sh.mu.Unlock
		if src.state != stateLive || ch.slot.Load() == nil {
			unlock()
			m.putChunk(nc)
			return errGone
		}
		maps = src.mappingsLocked()
	}
	defer unlock()
	slot := ch.slot.Load()
	ch.c = nc.c
	lock := func(x *Window) {
		if r.alloc != nil {
			x.mu.Lock()
		}
	}
	unlockW := func(x *Window) {
		if r.alloc != nil {
			x.mu.Unlock()
		}
	}
	var done []mapping
	var timing [2]backend.Event // of the copy in, once enqueued
	fail := func(err error) error {
		errs := []error{err}
		for _, d := range done {
			lock(d.w)
			if serr := d.w.sinkBack(d.r.start, d.r.n, ch); serr != nil {
				errs = append(errs, serr)
				d.w.broken = serr
			}
			unlockW(d.w)
		}
		ch.c = nil
		if m.inStream != nil {
			// A copy into nc may be in flight; it must land before nc is
			// reused (and before the slot, which keeps the data, is).
			if serr := m.inStream.Synchronize(); serr != nil {
				errs = append(errs, serr)
			}
		}
		m.putEvents(timing)
		m.putChunk(nc)
		return errors.Join(errs...)
	}
	for i, mp := range maps {
		lock(mp.w)
		if !mp.r.evicted {
			unlockW(mp.w)
			return fail(fmt.Errorf("window %d maps an evicted chunk as resident: %w", mp.w.id, ErrInvalidArgument))
		}
		err := mp.w.backRegion(mp.r.start, mp.r.n, ch)
		if err == nil {
			done = append(done, mp)
		}
		unlockW(mp.w)
		if err != nil {
			return fail(err)
		}
		if i == 0 {
			if timing, err = m.copyIn(slot, mp.w.ptr(mp.r.start)); err != nil {
				return fail(err)
			}
		}
	}
	for _, mp := range maps {
		lock(mp.w)
		if rel := mp.w.markResident(mp.r); rel != nil {
			m.pendingResume = append(m.pendingResume, rel)
		}
		unlockW(mp.w)
	}
	ch.slot.Store(nil)
	m.pendingIns = append(m.pendingIns, pendingIn{slot: slot, timing: timing})
	ch.lastUse.Store(m.stamp())
	if m.minResidency > 0 {
		ch.protectUntil.Store(time.Now().Add(m.minResidency).UnixNano())
	}
	ev := SwapEvent{Kind: SwapIn, Tenant: owner.t.name, Window: owner.id, Ptr: maps[0].w.ptr(maps[0].r.start),
		Bytes: ch.size, Duration: time.Since(start), Why: pr.p}
	for _, mp := range maps {
		ev.Windows = append(ev.Windows, mp.w)
	}
	m.swapIns.Add(1)
	m.swappedInBytes.Add(ch.size)
	owner.t.swapped.Add(-ch.size)
	owner.t.swapIns.Add(1)
	m.pendingEvents = append(m.pendingEvents, ev)
	return nil
}

// copyIn enqueues the copy of a slot to ptr on the swap-in stream, between
// two events that time it and tell when it has landed (none where the
// backend has no events), and returns them.
func (m *Manager) copyIn(slot *swapSlot, ptr backend.DevicePtr) ([2]backend.Event, error) {
	var timing [2]backend.Event
	_, in, err := m.swapStreams()
	if err != nil {
		return timing, err
	}
	// Events around the copy time it on the device (the copies of one pass
	// are waited for together, so the host cannot time them), and the second
	// says when its slot may be reused.
	timing = m.eventPair()
	if timing[0] != nil && in.Record(timing[0]) != nil {
		m.putEvents(timing)
		timing = [2]backend.Event{}
	}
	var off uint64
	for _, b := range slot.buffers() {
		if err := in.CopyHtoD(ptr+backend.DevicePtr(off), b); err != nil {
			m.putEvents(timing)
			return [2]backend.Event{}, fmt.Errorf("copy %d bytes back to %#x: %w", slot.size, uint64(ptr), err)
		}
		off += uint64(len(b))
	}
	if timing[1] != nil && in.Record(timing[1]) != nil {
		m.putEvents(timing)
		timing = [2]backend.Event{}
	}
	return timing, nil
}

// finishSwapIns waits for the swap-in copies enqueued so far, frees their
// slots and resumes the windows they made resident. Caller holds m.evictMu.
func (m *Manager) finishSwapIns() error {
	if len(m.pendingIns) == 0 && len(m.pendingResume) == 0 {
		return nil
	}
	start := time.Now()
	var err error
	if m.inStream != nil {
		if err = m.inStream.Synchronize(); err != nil {
			err = fmt.Errorf("wait for swap-in copies: %w", err)
		}
	}
	m.swapInNs.Add(uint64(time.Since(start)))
	for _, p := range m.pendingIns {
		if t := p.timing; t[0] != nil {
			if err == nil {
				if d, derr := t[1].Elapsed(t[0]); derr == nil {
					m.swapInCopyNs.Add(uint64(d))
					m.passCopyIn += d
				}
			}
			m.putEvents(t)
		}
		if p.slot != nil {
			m.swap.release(p.slot)
		}
	}
	clear(m.pendingIns)
	m.pendingIns = m.pendingIns[:0]
	for _, rel := range m.pendingResume {
		rel()
	}
	evs := m.pendingEvents
	m.pendingResume, m.pendingEvents = nil, nil
	for _, ev := range evs {
		m.swapInNs.Add(uint64(ev.Duration))
		if m.onSwap != nil {
			m.onSwap(ev)
		}
	}
	return err
}

// Resident reports whether every chunk the window maps is in device memory,
// so its session's work may be dispatched. It takes no lock.
func (w *Window) Resident() bool { return !w.nonResident.Load() }

// MakeResident maps every evicted chunk the window reaches (its own, its
// slabs', those it has attached) back at the same addresses, evicting other
// chunks if device memory is short, and returns once their data is back and
// the window is resumed (the quiesce taken when it was evicted is released).
// Chunks made resident are protected from eviction for Options.MinResidency,
// so the session gets to run before it can be evicted again; while only
// protected chunks could make room, MakeResident waits for their protection
// to end (or ctx).
func (w *Window) MakeResident(ctx context.Context) error {
	m := w.m
	for w.nonResident.Load() {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("make window %d resident: %w", w.id, err)
		}
		err := m.makeResidentOnce(w)
		if err == nil || !errors.Is(err, ErrBusy) {
			return err
		}
		wait := m.minResidency / 4
		if wait <= 0 {
			wait = time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("make window %d resident: %w", w.id, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

func (m *Manager) makeResidentOnce(w *Window) (err error) {
	m.evictMu.Lock()
	defer m.evictMu.Unlock()
	start := time.Now()
	m.passEvicted, m.passCopyIn = 0, 0
	in0 := m.swappedInBytes.Load()
	defer func() {
		// Evictions begun ahead for chunks the pass did not get to end
		// first: their chunks go to the pool.
		if derr := m.drainEvictions(); derr != nil {
			m.evictFailures.Add(1)
		}
		if ferr := m.finishSwapIns(); err == nil {
			err = ferr
		}
		if in := m.swappedInBytes.Load() - in0; in > 0 && m.onSwap != nil {
			m.onSwap(SwapEvent{Kind: Resident, Tenant: w.t.name, Window: w.id, Ptr: w.base, Bytes: in,
				Evicted: m.passEvicted, CopyIn: m.passCopyIn, Windows: []*Window{w}, Duration: time.Since(start)})
		}
	}()
	pr := &pressure{p: Pressure{Tenant: w.t.name, Window: w.id, SwapIn: true}, locked: true, pin: w}
	for {
		w.mu.RLock()
		if w.closed {
			w.mu.RUnlock()
			return fmt.Errorf("make window %d resident: %w", w.id, ErrWindowClosed)
		}
		var next *region
		var left uint64 // bytes to bring back after next
		for _, r := range w.regions {
			if !r.evicted {
				continue
			}
			if next == nil {
				next = r
			} else {
				left += r.ch.size
			}
		}
		w.mu.RUnlock()
		if next == nil {
			return nil
		}
		pr.ahead = left
		if err := m.swapInRegion(w, next, pr); err != nil && !errors.Is(err, errGone) {
			return fmt.Errorf("make window %d resident: %w", w.id, err)
		}
	}
}

// bringBack makes the evicted chunk of src resident (for Attach into w),
// waiting while only protected chunks could make room.
func (m *Manager) bringBack(src *Allocation, w *Window) error {
	for {
		err := m.bringBackOnce(src, w)
		if !errors.Is(err, ErrBusy) {
			return err
		}
		time.Sleep(max(m.minResidency/4, time.Millisecond))
	}
}

func (m *Manager) bringBackOnce(src *Allocation, w *Window) error {
	m.evictMu.Lock()
	defer m.evictMu.Unlock()
	err := m.swapInRegion(src.w, src.region, &pressure{p: Pressure{Tenant: w.t.name, Window: w.id}, locked: true})
	if errors.Is(err, errGone) {
		err = nil
	}
	return errors.Join(err, m.drainEvictions(), m.finishSwapIns())
}

// markEvicted records that region r's chunk was evicted. The window keeps
// resume (the quiesce taken for the eviction) until it is resident again.
// Caller holds w.mu.
func (w *Window) markEvicted(r *region, resume func()) {
	r.evicted = true
	w.evicted++
	w.nonResident.Store(true)
	if w.swapHold == nil {
		w.swapHold = resume
	} else if resume != nil {
		resume()
	}
}

// markResident records that region r is mapped to a chunk again, or gone.
// When the window has no evicted region left it returns the kept quiesce's
// resume, for the caller to call once the data is in place. Caller holds w.mu.
func (w *Window) markResident(r *region) func() {
	if !r.evicted {
		return nil
	}
	r.evicted = false
	w.evicted--
	if w.evicted > 0 {
		return nil
	}
	w.nonResident.Store(false)
	rel := w.swapHold
	w.swapHold = nil
	return rel
}
