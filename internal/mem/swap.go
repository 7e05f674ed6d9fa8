package mem

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// defaultSwapPiece is the largest host buffer of the swap store. Pinning host
// memory is slow (the driver page-locks it), so buffers are kept and reused;
// a chunk larger than this is held in several.
const defaultSwapPiece = 64 << 20

// swapStore is the pinned host memory that holds evicted chunks. Buffers are
// allocated with the device's AllocHost (page-locked, so copies to and from
// them are asynchronous DMA) in pieces of at most piece bytes and kept, by
// size, for the next eviction: a steady state of swapping pins nothing new.
// Everything it holds, in use or kept, counts against limit.
//
// Pinning costs far more than the copy it serves (cuMemHostAlloc pins about
// 2 GB/s on an H100 host; the copy runs at about 55 GB/s), so the store pins
// ahead, on a goroutine of its own: reserve bytes from the start, and once
// evictions have begun, enough full pieces that ahead bytes are kept free.
// An eviction that finds no free buffer still pins its own (and reports how
// long that took).
type swapStore struct {
	dev     backend.Device
	piece   uint64
	limit   uint64
	reserve uint64 // pin ahead until this much is held
	ahead   uint64 // under pressure, keep this much free in full pieces

	mu   sync.Mutex
	cond sync.Cond // broadcast when a background pin ends
	free map[uint64][]backend.HostMemory
	held uint64 // bytes of host buffers allocated: in slots, kept, being pinned
	used uint64 // bytes in slots

	pressure bool   // evictions happened since the last trim: pin ahead
	pinning  bool   // the pinner goroutine runs
	inflight uint64 // bytes it is pinning now (counted in held)
	stopped  bool   // a trim or close is under way: no pinning
	closed   bool
	// pinnedAhead is the bytes the pinner pinned, in total; pinErr its last error.
	pinnedAhead uint64
	pinErr      error
	limitWaits  int // allocs that waited for a piece pinned ahead (for tests)
}

// swapSlot is where one evicted chunk's data lives: size bytes in pieces, in
// address order.
type swapSlot struct {
	pieces []backend.HostMemory
	size   uint64
}

func newSwapStore(dev backend.Device, piece, limit, reserve, ahead, gran uint64) *swapStore {
	if piece == 0 {
		piece = defaultSwapPiece
	}
	piece = max(roundUp(piece, gran), gran)
	s := &swapStore{dev: dev, piece: piece, limit: limit, free: map[uint64][]backend.HostMemory{},
		reserve: min(reserve, limit), ahead: min(ahead, limit)}
	s.cond.L = &s.mu
	s.mu.Lock()
	s.kickLocked()
	s.mu.Unlock()
	return s
}

// pieceSizes splits size into the piece sizes of its slot: full pieces, then
// the remainder.
func (s *swapStore) pieceSizes(size uint64) []uint64 {
	var out []uint64
	for size > 0 {
		n := min(size, s.piece)
		out = append(out, n)
		size -= n
	}
	return out
}

// ready reports whether kept buffers hold size bytes, so alloc would pin
// nothing (a remainder may use a full piece).
func (s *swapStore) ready(size uint64) bool {
	full, rest := size/s.piece, size%s.piece
	s.mu.Lock()
	defer s.mu.Unlock()
	if rest > 0 && len(s.free[rest]) == 0 {
		full++
	}
	return uint64(len(s.free[s.piece])) >= full
}

// alloc returns a slot for size bytes: kept buffers first (a remainder takes
// a kept buffer of its size, else a full piece), then new ones (after
// dropping kept buffers of other sizes if the limit requires it). It reports
// the bytes it had to pin and how long that took.
func (s *swapStore) alloc(size uint64) (slot *swapSlot, pinned uint64, pinTime time.Duration, err error) {
	sizes := s.pieceSizes(size)
	slot = &swapSlot{size: size}
	var fresh []uint64 // sizes to allocate
	var drop []backend.HostMemory
	s.mu.Lock()
	for {
		if s.closed {
			s.mu.Unlock()
			return nil, 0, 0, ErrClosed
		}
		fresh = fresh[:0]
		for _, n := range sizes {
			if l := s.free[n]; len(l) > 0 {
				slot.pieces = append(slot.pieces, l[len(l)-1])
				s.free[n] = l[:len(l)-1]
				continue
			}
			if l := s.free[s.piece]; n < s.piece && len(l) > 0 {
				slot.pieces = append(slot.pieces, l[len(l)-1])
				s.free[s.piece] = l[:len(l)-1]
				continue
			}
			fresh = append(fresh, n)
		}
		var need uint64
		for _, n := range fresh {
			need += n
		}
		if s.held+need > s.limit {
			drop = append(drop, s.trimLocked(s.held+need-s.limit)...)
		}
		if s.held+need <= s.limit && s.held+need >= s.held {
			pinned = need
			break
		}
		s.putLocked(slot.pieces) // give back what was taken
		slot.pieces = nil
		if s.inflight > 0 {
			// A piece being pinned ahead counts against the limit: wait for
			// it, then it is a kept buffer.
			s.limitWaits++
			s.cond.Wait()
			continue
		}
		held := s.held
		s.mu.Unlock()
		freeHost(drop)
		return nil, 0, 0, fmt.Errorf("host swap space: %d bytes more with %d held would pass the limit of %d: %w", need, held, s.limit, ErrOutOfMemory)
	}
	s.held += pinned // reserved while AllocHost runs
	s.used += size
	s.mu.Unlock()
	freeHost(drop)

	start := time.Now()
	var errs []error
	for _, n := range fresh {
		hm, err := s.pin(n)
		if err != nil {
			errs = append(errs, err)
			s.mu.Lock()
			s.held -= n
			s.mu.Unlock()
			continue
		}
		slot.pieces = append(slot.pieces, hm)
	}
	if len(fresh) > 0 {
		pinTime = time.Since(start)
	}
	if len(errs) > 0 {
		s.mu.Lock()
		s.used -= size
		s.putLocked(slot.pieces)
		s.mu.Unlock()
		return nil, 0, 0, errors.Join(errs...)
	}
	// The pieces must be in copy order: every piece but the last covers a full
	// piece of the chunk, so order by size, largest first.
	slices.SortStableFunc(slot.pieces, func(a, b backend.HostMemory) int {
		return -cmpLen(a, b)
	})
	return slot, pinned, pinTime, nil
}

// pin allocates n bytes of pinned host memory.
func (s *swapStore) pin(n uint64) (backend.HostMemory, error) {
	hm, err := s.dev.AllocHost(int(n))
	if err == nil && uint64(len(hm.Bytes())) < n {
		err = fmt.Errorf("backend returned %d bytes for %d: %w", len(hm.Bytes()), n, ErrInvalidArgument)
		hm.Free()
	}
	if err != nil {
		return nil, fmt.Errorf("allocate %d bytes of pinned host memory: %w", n, err)
	}
	return hm, nil
}

// evicting records that the device is short (an eviction needs host memory),
// so the store pins ahead from now on, and starts the pinner if it is needed.
func (s *swapStore) evicting() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pressure = true
	s.kickLocked()
}

// wantLocked reports whether the pinner should pin another piece. Caller
// holds s.mu.
func (s *swapStore) wantLocked() bool {
	if s.closed || s.stopped || s.held+s.piece > s.limit || s.held+s.piece < s.held {
		return false
	}
	if s.held < s.reserve {
		return true
	}
	return s.pressure && uint64(len(s.free[s.piece]))*s.piece+s.inflight < s.ahead
}

// kickLocked starts the pinner unless it runs or has nothing to do. Caller
// holds s.mu.
func (s *swapStore) kickLocked() {
	if s.pinning || !s.wantLocked() {
		return
	}
	s.pinning = true
	go s.pinAhead()
}

// pinAhead pins full pieces while the store wants them. On an error it stops
// pinning ahead until the next eviction, rather than trying again and again.
func (s *swapStore) pinAhead() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.wantLocked() {
		n := s.piece
		s.held += n
		s.inflight += n
		s.mu.Unlock()
		hm, err := s.pin(n)
		s.mu.Lock()
		s.inflight -= n
		if err != nil {
			s.held -= n
			s.pinErr = err
			s.pressure = false
			break
		}
		s.free[n] = append(s.free[n], hm)
		s.pinnedAhead += n
		s.cond.Broadcast()
	}
	s.pinning = false
	s.cond.Broadcast()
}

// stopPinningLocked stops the pinner and waits for it to end. Caller holds
// s.mu; it is let go of while waiting.
func (s *swapStore) stopPinningLocked() {
	s.stopped = true
	for s.pinning {
		s.cond.Wait()
	}
}

func cmpLen(a, b backend.HostMemory) int {
	la, lb := len(a.Bytes()), len(b.Bytes())
	switch {
	case la < lb:
		return -1
	case la > lb:
		return 1
	}
	return 0
}

// release gives a slot's buffers back for reuse.
func (s *swapStore) release(slot *swapSlot) {
	s.mu.Lock()
	s.used -= slot.size
	s.putLocked(slot.pieces)
	s.mu.Unlock()
	slot.pieces = nil
}

// putLocked keeps buffers for reuse. Caller holds s.mu.
func (s *swapStore) putLocked(ps []backend.HostMemory) {
	for _, p := range ps {
		n := uint64(len(p.Bytes()))
		s.free[n] = append(s.free[n], p)
	}
}

// trimLocked takes kept buffers off the books until at least need bytes are
// dropped (or none are kept) and returns them to be freed. Caller holds s.mu.
func (s *swapStore) trimLocked(need uint64) []backend.HostMemory {
	var out []backend.HostMemory
	var dropped uint64
	for n, l := range s.free {
		for len(l) > 0 && dropped < need {
			out = append(out, l[len(l)-1])
			l = l[:len(l)-1]
			s.held -= n
			dropped += n
		}
		s.free[n] = l
	}
	return out
}

// trim frees every kept buffer. Pinning ahead stops until the next eviction.
func (s *swapStore) trim() {
	s.mu.Lock()
	s.stopPinningLocked()
	out := s.trimLocked(^uint64(0))
	s.pressure = false
	s.stopped = s.closed
	s.mu.Unlock()
	freeHost(out)
}

// close stops pinning for good and frees every kept buffer.
func (s *swapStore) close() {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast() // allocs waiting for a pin fail now
	s.mu.Unlock()
	s.trim()
}

// swapUsage is the store's accounting.
type swapUsage struct {
	used, held  uint64
	pinnedAhead uint64
	pinErr      error
}

func (s *swapStore) usage() swapUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return swapUsage{used: s.used, held: s.held, pinnedAhead: s.pinnedAhead, pinErr: s.pinErr}
}

func freeHost(ps []backend.HostMemory) {
	for _, p := range ps {
		p.Free()
	}
}
