package mem

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// defaultSwapPiece is the largest host buffer of the swap store. Pinning host
// memory is slow (the driver page-locks it), so buffers are kept and reused;
// a chunk larger than this is held in several.
const defaultSwapPiece = 64 << 20

// defaultSwapPinners is how many pieces the store pins at once. Memory it
// registers (Options.SwapPinRegister) is faulted in and zeroed on the
// pinning thread, so several threads pin it faster; cuMemHostAlloc does not
// go faster on several (run 8: 2.45 GB/s on one, 2.48 on four), nor slower.
const defaultSwapPinners = 4

// swapStore is the pinned host memory that holds evicted chunks. Buffers
// ("pieces") are allocated with the device's AllocHost (page-locked, so
// copies to and from them are asynchronous DMA), at most piece bytes each,
// and carved into blocks of unit bytes (the device granularity, which every
// chunk is a multiple of): a slot is a list of runs of free blocks, first
// fit, so a chunk of any size uses kept memory and a large chunk copies in
// few runs. Pieces are kept for the next eviction: a steady state of
// swapping pins nothing new. Everything it holds counts against limit.
//
// Pinning costs far more than the copy it serves (cuMemHostAlloc pins about
// 2 GB/s on an H100 host; the copy runs at about 55 GB/s), so the store pins
// ahead, on goroutines of its own (pinners of them, a piece each): reserve
// bytes from the start, and once evictions have begun, enough pieces that
// ahead bytes are kept free. An eviction that finds too little free waits
// for pieces being pinned ahead, and pins what it still lacks itself (and
// reports how long that took).
type swapStore struct {
	dev        backend.Device
	piece      uint64
	unit       uint64
	limit      uint64
	reserve    uint64 // pin ahead until this much is held
	ahead      uint64 // under pressure, keep this much free
	maxPinners int
	// register: pin by mapping memory and registering it (RegisterHost)
	// rather than with AllocHost; cleared if the backend cannot.
	register atomic.Bool
	// onReserve, if set, is told once when the reserve is pinned: how much,
	// and how long after the store was created.
	onReserve func(bytes uint64, took time.Duration)
	created   time.Time

	mu     sync.Mutex
	cond   sync.Cond // broadcast when a background pin ends
	pieces []*hostPiece
	held   uint64 // bytes of pieces: allocated or being pinned
	free   uint64 // bytes of free blocks
	used   uint64 // bytes in slots (their chunks' sizes)

	pressure bool   // evictions happened since the last trim: pin ahead
	pinners  int    // pinner goroutines running
	inflight uint64 // bytes they are pinning now (counted in held)
	stopped  bool   // a trim or close is under way: no pinning
	closed   bool
	reserved bool // the reserve was pinned (onReserve was told)
	// pinnedAhead is the bytes the pinners pinned, in total; pinErr their last error.
	pinnedAhead uint64
	pinErr      error
	limitWaits  int // allocs that waited for a piece pinned ahead (for tests)
}

// hostPiece is one pinned host buffer and which of its blocks are taken.
type hostPiece struct {
	hm    backend.HostMemory
	taken []bool // per block
	nfree int
}

// swapRun is blocks [first, first+n) of a piece.
type swapRun struct {
	p     *hostPiece
	first int
	n     int
}

// swapSlot is where one evicted chunk's data lives: size bytes in runs of
// blocks, in address order.
type swapSlot struct {
	runs []swapRun
	size uint64
	unit uint64
}

// buffers returns the host memory of the slot's runs, in order, cut to size
// bytes in all.
func (sl *swapSlot) buffers() [][]byte {
	out := make([][]byte, 0, len(sl.runs))
	left := sl.size
	for _, r := range sl.runs {
		b := r.p.hm.Bytes()[uint64(r.first)*sl.unit : uint64(r.first+r.n)*sl.unit]
		n := min(uint64(len(b)), left)
		out = append(out, b[:n])
		left -= n
	}
	return out
}

// swapStoreConfig configures a swap store; zero fields take defaults.
type swapStoreConfig struct {
	piece, limit, reserve, ahead, gran uint64
	pinners                            int
	register                           bool
	onReserve                          func(bytes uint64, took time.Duration)
}

func newSwapStore(dev backend.Device, c swapStoreConfig) *swapStore {
	piece := c.piece
	if piece == 0 {
		piece = defaultSwapPiece
	}
	piece = max(roundUp(piece, c.gran), c.gran)
	pinners := c.pinners
	if pinners <= 0 {
		pinners = defaultSwapPinners
	}
	s := &swapStore{dev: dev, piece: piece, unit: c.gran, limit: c.limit, reserve: min(c.reserve, c.limit),
		ahead: min(c.ahead, c.limit), maxPinners: pinners, onReserve: c.onReserve, created: time.Now()}
	s.register.Store(c.register)
	s.cond.L = &s.mu
	s.mu.Lock()
	s.kickLocked()
	s.mu.Unlock()
	return s
}

// blocks is the number of blocks that hold n bytes.
func (s *swapStore) blocks(n uint64) uint64 { return (n + s.unit - 1) / s.unit }

// ready reports whether free blocks hold size bytes, so alloc would pin nothing.
func (s *swapStore) ready(size uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.free >= s.blocks(size)*s.unit
}

// alloc returns a slot for size bytes: free blocks first, then pieces being
// pinned ahead (it waits for them: they arrive sooner than pieces it would
// start pinning itself), then new pieces for the rest, pinned several at a
// time. It reports the bytes it had to pin (or lacked when it began waiting
// for pieces pinned ahead) and how long pinning and waiting took.
func (s *swapStore) alloc(size uint64) (slot *swapSlot, pinned uint64, pinTime time.Duration, err error) {
	need := s.blocks(size) * s.unit
	slot = &swapSlot{size: size, unit: s.unit}
	var waitStart time.Time // when it began waiting for pieces pinned ahead
	var waitedFor uint64    // the bytes it lacked then
	s.mu.Lock()
	for {
		if s.closed {
			s.mu.Unlock()
			return nil, 0, 0, ErrClosed
		}
		// Every free block serves, so dropping free pieces to make room
		// would never help.
		lack := need - min(need, s.free)
		if lack > 0 && s.inflight > 0 {
			// Pieces being pinned ahead become free blocks shortly (and
			// count against the limit meanwhile): wait for them rather
			// than pin beside them.
			s.limitWaits++
			if waitStart.IsZero() {
				waitStart, waitedFor = time.Now(), lack
			}
			s.cond.Wait()
			continue
		}
		if s.held+lack <= s.limit && s.held+lack >= s.held {
			pinned = lack
			break
		}
		held := s.held
		s.mu.Unlock()
		return nil, 0, 0, fmt.Errorf("host swap space: %d bytes more with %d held would pass the limit of %d: %w", lack, held, s.limit, ErrOutOfMemory)
	}
	s.held += pinned // reserved while AllocHost runs
	s.takeLocked(slot, need-pinned)
	s.used += size
	s.mu.Unlock()
	// Waiting for pieces pinned ahead is pinning too: it counts as pinning
	// what was lacking then.
	var waited time.Duration
	if !waitStart.IsZero() {
		waited = time.Since(waitStart)
	}
	if pinned == 0 {
		return slot, waitedFor, waited, nil
	}

	start := time.Now()
	fresh, failed, errs := s.pinPieces(pinned)
	pinTime = time.Since(start)
	s.mu.Lock()
	s.held -= failed
	for _, p := range fresh {
		s.addLocked(p)
	}
	if len(errs) > 0 {
		s.used -= size
		s.releaseLocked(slot)
		s.mu.Unlock()
		return nil, 0, 0, errors.Join(errs...)
	}
	s.takeLocked(slot, pinned)
	s.mu.Unlock()
	return slot, max(pinned, waitedFor), pinTime + waited, nil
}

// takeLocked appends runs of free blocks holding n bytes to slot, first fit
// over the pieces in order; the free blocks must be there. Caller holds s.mu.
func (s *swapStore) takeLocked(slot *swapSlot, n uint64) {
	want := int(s.blocks(n))
	for _, p := range s.pieces {
		for i := 0; want > 0 && p.nfree > 0 && i < len(p.taken); {
			if p.taken[i] {
				i++
				continue
			}
			j := i
			for j < len(p.taken) && !p.taken[j] && j-i < want {
				p.taken[j] = true
				j++
			}
			k := j - i
			p.nfree -= k
			want -= k
			s.free -= uint64(k) * s.unit
			if l := len(slot.runs); l > 0 && slot.runs[l-1].p == p && slot.runs[l-1].first+slot.runs[l-1].n == i {
				slot.runs[l-1].n += k
			} else {
				slot.runs = append(slot.runs, swapRun{p: p, first: i, n: k})
			}
			i = j
		}
		if want == 0 {
			return
		}
	}
}

// addLocked adds a pinned piece, all of it free. Caller holds s.mu.
func (s *swapStore) addLocked(p *hostPiece) {
	s.pieces = append(s.pieces, p)
	s.free += uint64(len(p.taken)) * s.unit
}

// releaseLocked frees a slot's blocks. Caller holds s.mu.
func (s *swapStore) releaseLocked(slot *swapSlot) {
	for _, r := range slot.runs {
		for i := r.first; i < r.first+r.n; i++ {
			r.p.taken[i] = false
		}
		r.p.nfree += r.n
		s.free += uint64(r.n) * s.unit
	}
	slot.runs = nil
}

// pinPieces pins n bytes in pieces, up to maxPinners at once, and returns
// those it got, the bytes of those it did not, and why.
func (s *swapStore) pinPieces(n uint64) (fresh []*hostPiece, failed uint64, errs []error) {
	var sizes []uint64
	for left := n; left > 0; left -= min(left, s.piece) {
		sizes = append(sizes, min(left, s.piece))
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := 0
	for range min(s.maxPinners, len(sizes)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next == len(sizes) {
					mu.Unlock()
					return
				}
				sz := sizes[next]
				next++
				mu.Unlock()
				p, err := s.pin(sz)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
					failed += sz
				} else {
					fresh = append(fresh, p)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return fresh, failed, errs
}

// pin allocates a piece of n bytes (a multiple of the unit) of pinned host memory.
func (s *swapStore) pin(n uint64) (*hostPiece, error) {
	var hm backend.HostMemory
	var err error
	if s.register.Load() {
		if hm, err = registerHost(s.dev, n); err != nil {
			// The backend cannot (or the host refuses: limits on locked
			// memory): AllocHost from now on.
			s.register.Store(false)
			hm = nil
		}
	}
	if hm == nil {
		hm, err = s.dev.AllocHost(int(n))
	}
	if err == nil && uint64(len(hm.Bytes())) < n {
		err = fmt.Errorf("backend returned %d bytes for %d: %w", len(hm.Bytes()), n, ErrInvalidArgument)
		hm.Free()
	}
	if err != nil {
		return nil, fmt.Errorf("allocate %d bytes of pinned host memory: %w", n, err)
	}
	blocks := int(n / s.unit)
	return &hostPiece{hm: hm, taken: make([]bool, blocks), nfree: blocks}, nil
}

// evicting records that the device is short (an eviction needs host memory),
// so the store pins ahead from now on, and starts the pinner if it is needed.
func (s *swapStore) evicting() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pressure = true
	s.kickLocked()
}

// aheadPieceLocked returns the size of the next piece to pin ahead, or 0 if
// the store wants none now. Caller holds s.mu.
func (s *swapStore) aheadPieceLocked() uint64 {
	if s.closed || s.stopped || s.held >= s.limit {
		return 0
	}
	var want uint64
	if s.held < s.reserve {
		want = s.reserve - s.held
	}
	if s.pressure && s.free+s.inflight < s.ahead {
		want = max(want, s.ahead-s.free-s.inflight)
	}
	if want == 0 {
		return 0
	}
	// Whole pieces, as far as the limit allows.
	n := min(s.piece, s.limit-s.held)
	return n / s.unit * s.unit
}

// kickLocked starts a pinner if the store wants a piece and fewer than
// maxPinners run; each pinner kicks again once it has taken its piece, so up
// to maxPinners pin at once. Caller holds s.mu.
func (s *swapStore) kickLocked() {
	if s.pinners < s.maxPinners && s.aheadPieceLocked() > 0 {
		s.pinners++
		go s.pinAhead()
	}
}

// pinAhead pins pieces while the store wants them. On an error it stops
// pinning ahead until the next eviction, rather than trying again and again.
func (s *swapStore) pinAhead() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		n := s.aheadPieceLocked()
		if n == 0 {
			break
		}
		s.held += n
		s.inflight += n
		s.kickLocked() // another pinner for the next piece, if one is wanted
		s.mu.Unlock()
		p, err := s.pin(n)
		s.mu.Lock()
		s.inflight -= n
		if err != nil {
			s.held -= n
			s.pinErr = err
			s.pressure = false
			break
		}
		s.addLocked(p)
		s.pinnedAhead += n
		s.cond.Broadcast()
		if !s.reserved && s.reserve > 0 && s.held-s.inflight >= s.reserve {
			s.reserved = true
			if fn := s.onReserve; fn != nil {
				held, took := s.held-s.inflight, time.Since(s.created)
				s.mu.Unlock()
				fn(held, took)
				s.mu.Lock()
			}
		}
	}
	s.pinners--
	s.cond.Broadcast()
}

// stopPinningLocked stops the pinners and waits for them to end. Caller
// holds s.mu; it is let go of while waiting.
func (s *swapStore) stopPinningLocked() {
	s.stopped = true
	for s.pinners > 0 {
		s.cond.Wait()
	}
}

// release gives a slot's blocks back for reuse.
func (s *swapStore) release(slot *swapSlot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used -= slot.size
	s.releaseLocked(slot)
}

// dropFreePiecesLocked takes wholly free pieces off the books until at least
// need bytes are dropped (or none is left) and returns their memory to be
// freed. Caller holds s.mu.
func (s *swapStore) dropFreePiecesLocked(need uint64) []backend.HostMemory {
	var out []backend.HostMemory
	var dropped uint64
	keep := s.pieces[:0]
	for _, p := range s.pieces {
		if dropped < need && p.nfree == len(p.taken) {
			n := uint64(len(p.taken)) * s.unit
			out = append(out, p.hm)
			s.held -= n
			s.free -= n
			dropped += n
			continue
		}
		keep = append(keep, p)
	}
	clear(s.pieces[len(keep):])
	s.pieces = keep
	return out
}

// trim frees every wholly free piece. Pinning ahead stops until the next eviction.
func (s *swapStore) trim() {
	s.mu.Lock()
	s.stopPinningLocked()
	out := s.dropFreePiecesLocked(^uint64(0))
	s.pressure = false
	s.stopped = s.closed
	s.mu.Unlock()
	freeHost(out)
}

// close stops pinning for good and frees every wholly free piece.
func (s *swapStore) close() {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast() // allocs waiting for a pin fail now
	s.mu.Unlock()
	s.trim()
}

// swapUsage is the store's accounting.
type swapUsage struct {
	used, held, free uint64
	pinnedAhead      uint64
	pinErr           error
}

func (s *swapStore) usage() swapUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return swapUsage{used: s.used, held: s.held, free: s.free, pinnedAhead: s.pinnedAhead, pinErr: s.pinErr}
}

func freeHost(ps []backend.HostMemory) {
	for _, p := range ps {
		p.Free()
	}
}
