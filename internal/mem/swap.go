package mem

import (
	"errors"
	"fmt"
	"slices"
	"sync"

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
type swapStore struct {
	dev   backend.Device
	piece uint64
	limit uint64

	mu   sync.Mutex
	free map[uint64][]backend.HostMemory
	held uint64 // bytes of host buffers allocated: in slots and kept
	used uint64 // bytes in slots
}

// swapSlot is where one evicted chunk's data lives: size bytes in pieces, in
// address order.
type swapSlot struct {
	pieces []backend.HostMemory
	size   uint64
}

func newSwapStore(dev backend.Device, piece, limit, gran uint64) *swapStore {
	if piece == 0 {
		piece = defaultSwapPiece
	}
	piece = max(roundUp(piece, gran), gran)
	return &swapStore{dev: dev, piece: piece, limit: limit, free: map[uint64][]backend.HostMemory{}}
}

// pieceSizes splits size into the piece sizes of its slot.
func (s *swapStore) pieceSizes(size uint64) []uint64 {
	var out []uint64
	for size > 0 {
		n := min(size, s.piece)
		out = append(out, n)
		size -= n
	}
	return out
}

// alloc returns a slot for size bytes: kept buffers first, then new ones
// (after dropping kept buffers of other sizes if the limit requires it).
func (s *swapStore) alloc(size uint64) (*swapSlot, error) {
	sizes := s.pieceSizes(size)
	slot := &swapSlot{size: size}
	var fresh []uint64 // sizes to allocate
	var drop []backend.HostMemory
	s.mu.Lock()
	for _, n := range sizes {
		if l := s.free[n]; len(l) > 0 {
			slot.pieces = append(slot.pieces, l[len(l)-1])
			s.free[n] = l[:len(l)-1]
			continue
		}
		fresh = append(fresh, n)
	}
	var need uint64
	for _, n := range fresh {
		need += n
	}
	if s.held+need > s.limit {
		drop = s.trimLocked(s.held + need - s.limit)
	}
	if s.held+need > s.limit || s.held+need < s.held {
		held := s.held
		for _, p := range slot.pieces { // give back what was taken
			s.free[uint64(len(p.Bytes()))] = append(s.free[uint64(len(p.Bytes()))], p)
		}
		s.mu.Unlock()
		freeHost(drop)
		return nil, fmt.Errorf("host swap space: %d bytes more with %d held would pass the limit of %d: %w", need, held, s.limit, ErrOutOfMemory)
	}
	s.held += need // reserved while AllocHost runs
	s.used += size
	s.mu.Unlock()
	freeHost(drop)

	var errs []error
	for _, n := range fresh {
		hm, err := s.dev.AllocHost(int(n))
		if err == nil && uint64(len(hm.Bytes())) < n {
			err = fmt.Errorf("backend returned %d bytes for %d: %w", len(hm.Bytes()), n, ErrInvalidArgument)
			hm.Free()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("allocate %d bytes of pinned host memory: %w", n, err))
			s.mu.Lock()
			s.held -= n
			s.mu.Unlock()
			continue
		}
		slot.pieces = append(slot.pieces, hm)
	}
	if len(errs) > 0 {
		s.mu.Lock()
		s.used -= size
		s.mu.Unlock()
		s.put(slot.pieces)
		return nil, errors.Join(errs...)
	}
	// Pieces from the pool and fresh ones may be out of order; all but the
	// last piece have the full piece size, so order by size, largest first.
	slices.SortStableFunc(slot.pieces, func(a, b backend.HostMemory) int {
		return -cmpLen(a, b)
	})
	return slot, nil
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
	s.mu.Unlock()
	s.put(slot.pieces)
	slot.pieces = nil
}

// put keeps buffers for reuse.
func (s *swapStore) put(ps []backend.HostMemory) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range ps {
		n := uint64(len(p.Bytes()))
		s.free[n] = append(s.free[n], p)
	}
}

// trimLocked takes kept buffers off the books until at least need bytes are
// dropped (or none are kept) and returns them to be freed.
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

// trim frees every kept buffer.
func (s *swapStore) trim() {
	s.mu.Lock()
	out := s.trimLocked(^uint64(0))
	s.mu.Unlock()
	freeHost(out)
}

// usage returns the bytes in slots and the bytes of host buffers held.
func (s *swapStore) usage() (used, held uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used, s.held
}

func freeHost(ps []backend.HostMemory) {
	for _, p := range ps {
		p.Free()
	}
}
