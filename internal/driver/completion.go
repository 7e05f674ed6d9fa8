package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/guard"
	"github.com/gpuos/gpuos/internal/ring"
)

// Completion on the client's side (api/v1 OpenCompletion, SynchronizeFences).
//
// A high-class session's synchronize costs, after its kernel ends, the
// driver's serving thread seeing the fence and the client's thread seeing
// the answer: two threads that must both be running when the kernel ends.
// On a host whose hypervisor takes CPUs away, those hops made the service's
// slowest requests (bench/RESULTS.md, session 15). With a completion page
// the driver answers a synchronize once its work is issued, with the fence
// words and numbers to wait for, and the client watches the words itself.
//
// The page is shared memory the driver creates, maps for the device
// (backend.HostMapper) and seals against writes before the client sees
// it: the client maps it read-only, and nothing it holds lets it change a
// word the driver reads. Each of the session's streams writes its fences
// into a word of its own (backend.FenceWordSetter), taken when a
// SynchronizeFences first needs one; the session's guarded programs get
// their fault records in the page's fault area, so that the client sees a
// guarded kernel's suppressed access as soon as its fence is reached and
// asks the driver (Synchronize), which reports the violation as before.
// Whatever the page cannot cover (a stream without a word, a program whose
// record lies elsewhere, a backend without word fences) the driver waits
// for itself and answers with no targets.

// ErrCompletionOpen: the session already has a completion page.
var ErrCompletionOpen = v1.Errorf(v1.CodeInvalidArgument, "the session already has a completion page")

// ErrCompletionUnsupported: the session's synchronizing calls do not poll
// fences (it is not of the high class, or has no rings), or the device
// cannot write host memory shared with the client.
var ErrCompletionUnsupported = v1.Errorf(v1.CodeUnsupported, "no completion page for this session")

// ClientCompletionEnv, set to "0", refuses completion pages: every
// synchronize waits in the driver, as before (for measuring).
const ClientCompletionEnv = "GPUOS_SYNC_CLIENT"

// completionPage is a session's completion page.
type completionPage struct {
	shm  *ring.Shm
	view *ring.Completion
	dptr backend.DevicePtr
	// faults is the fault area as the guard's fault-record page.
	faults *faultPage

	mu    sync.Mutex
	words map[backend.Stream]int // streams' words
	// unsynced are the streams of SynchronizeFences answers since the last
	// synchronize that waited in the driver: the scheduler hands a stream
	// to one synchronizing call only (sched.Queue.WaitIssued), and the
	// client's Synchronize after one it could not finish must wait for
	// them too.
	unsynced   []backend.Stream
	freeWords  []int
	freeFaults []int // offsets in the fault area

	// watching says the driver publishes the session's launches on the
	// page (WatchLaunches, watch.go); watched are the streams it counts
	// them for, by the handle the client names each by.
	watching atomic.Bool
	watched  map[uint64]*watchedStream
}

// hostBytes is memory the driver owns elsewhere, as backend.HostMemory.
type hostBytes []byte

func (b hostBytes) Bytes() []byte { return b }
func (hostBytes) Free() error     { return nil }

func (s *Session) openCompletion(*v1.OpenCompletion) (v1.Message, []int, error) {
	s.hot.mu.Lock()
	defer s.hot.mu.Unlock()
	if s.completion.Load() != nil {
		return nil, nil, ErrCompletionOpen
	}
	hm, ok := s.d.dev.(backend.HostMapper)
	if os.Getenv(ClientCompletionEnv) == "0" || !ok || s.fencePoll.Load() == 0 {
		return nil, nil, ErrCompletionUnsupported
	}
	if _, ok := s.stream.st.(backend.FenceWordSetter); !ok {
		return nil, nil, ErrCompletionUnsupported
	}
	shm, err := ring.CreateReadOnlyShared(fmt.Sprintf("gpuos-completion-%d", s.id), ring.CompletionBytes)
	if err != nil {
		if errors.Is(err, ring.ErrUnsupported) {
			return nil, nil, fmt.Errorf("open completion: %w: %v", ErrCompletionUnsupported, err)
		}
		return nil, nil, fmt.Errorf("open completion: %w", err)
	}
	view, err := ring.NewCompletion(shm.Bytes(), ring.CompletionWords, ring.CompletionWordStride,
		ring.CompletionFaultsOffset, ring.CompletionFaultsBytes)
	if err != nil {
		shm.Close()
		return nil, nil, fmt.Errorf("open completion: %w", err)
	}
	dptr, err := hm.MapHost(shm.Bytes())
	if err != nil {
		shm.Close()
		return nil, nil, fmt.Errorf("open completion: %w", s.d.check(err))
	}
	cp := &completionPage{shm: shm, view: view, dptr: dptr, words: map[backend.Stream]int{}, watched: map[uint64]*watchedStream{}}
	cp.faults = &faultPage{host: hostBytes(view.Faults()), dptr: uint64(dptr) + ring.CompletionFaultsOffset,
		size: uint64(len(view.Faults())), session: cp}
	for i := view.Words() - 1; i >= 0; i-- {
		cp.freeWords = append(cp.freeWords, i)
	}
	for off := len(view.Faults()) - guard.RecordSize; off >= 0; off -= guard.RecordSize {
		cp.freeFaults = append(cp.freeFaults, off)
	}
	s.completion.Store(cp)
	return &v1.CompletionOpened{Bytes: ring.CompletionBytes, Words: uint32(view.Words()), WordStride: ring.CompletionWordStride,
		FaultsOffset: ring.CompletionFaultsOffset, FaultsBytes: ring.CompletionFaultsBytes,
		SpinNs: uint64(s.fencePoll.Load())}, []int{shm.TakeFD()}, nil
}

// faultSlot returns a fault record for a guarded program of the session: in
// its completion page while that has room, else from the driver's pages.
func (s *Session) faultSlot() (faultSlot, error) {
	if cp := s.completion.Load(); cp != nil {
		cp.mu.Lock()
		if n := len(cp.freeFaults); n > 0 {
			off := cp.freeFaults[n-1]
			cp.freeFaults = cp.freeFaults[:n-1]
			cp.mu.Unlock()
			return faultSlot{page: cp.faults, off: off}, nil
		}
		cp.mu.Unlock()
		// The client cannot see this program's faults: its synchronizes
		// must ask the driver from now on.
		cp.stopWatching()
	}
	return s.d.guard.slot(s.d.dev)
}

// putFault gives a cleared fault record back to the page.
func (cp *completionPage) putFault(off int) {
	cp.mu.Lock()
	cp.freeFaults = append(cp.freeFaults, off)
	cp.mu.Unlock()
}

// word returns the index of st's word in the page, giving it one if it has
// none; -1 if none is left.
func (cp *completionPage) word(st backend.Stream) int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.wordLocked(st)
}

// wordLocked is word, with cp.mu held.
func (cp *completionPage) wordLocked(st backend.Stream) int {
	if i, ok := cp.words[st]; ok {
		return i
	}
	ws, ok := st.(backend.FenceWordSetter)
	n := len(cp.freeWords)
	if !ok || n == 0 {
		return -1
	}
	i := cp.freeWords[n-1]
	if err := ws.SetFenceWord(cp.view.Word(i), cp.dptr+backend.DevicePtr(cp.view.Offset(i))); err != nil {
		return -1
	}
	cp.freeWords = cp.freeWords[:n-1]
	cp.words[st] = i
	return i
}

// takeUnsynced appends to streams those of SynchronizeFences answers since
// the last call, and forgets them.
func (cp *completionPage) takeUnsynced(streams []backend.Stream) []backend.Stream {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	for _, st := range cp.unsynced {
		if !slices.Contains(streams, st) {
			streams = append(streams, st)
		}
	}
	clear(cp.unsynced)
	cp.unsynced = cp.unsynced[:0]
	return streams
}

// forget gives st's word back once st is destroyed; idle says no fence of
// it can still be written (it was synchronized without error), else the
// word is never used again.
func (cp *completionPage) forget(st backend.Stream, idle bool) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if j := slices.Index(cp.unsynced, st); j >= 0 {
		cp.unsynced = slices.Delete(cp.unsynced, j, j+1)
	}
	i, ok := cp.words[st]
	if !ok {
		return
	}
	delete(cp.words, st)
	cp.view.ClearStream(i)
	for h, ws := range cp.watched {
		if ws.word == i {
			delete(cp.watched, h)
		}
	}
	if idle {
		cp.freeWords = append(cp.freeWords, i)
	}
}

// faultsInPage reports whether every guarded program of the session keeps its
// fault record in the page, where the client sees it.
func (s *Session) faultsInPage(cp *completionPage) bool {
	s.guard.mu.Lock()
	defer s.guard.mu.Unlock()
	for p := range s.guard.programs {
		if gp := p.guard; gp != nil && !gp.trusted && gp.slot.page != cp.faults {
			return false
		}
	}
	return true
}

// synchronizeFences answers SynchronizeFences: once the session's work is
// issued, the words and numbers its fences will write; or, if the page does
// not cover all of it, no targets after waiting as Synchronize does.
func (s *Session) synchronizeFences(ctx context.Context, m *v1.SynchronizeFences) (v1.Message, error) {
	cp := s.completion.Load()
	if cp == nil || !s.faultsInPage(cp) {
		return s.synchronizeHere(ctx, m)
	}
	var st syncStamps
	answered := false
	if s.latency != nil {
		st.recv = time.Now()
		st.how = waitedClient
		defer func() {
			if answered {
				st.synced = time.Now() // answered: the client waits from here
				s.latency.addSync(st)
			}
		}()
	}
	so, err := s.streamOf(m.Stream)
	if err != nil {
		return nil, err
	}
	streams, err := s.queue.WaitIssued(ctx, s.syncStreams[:0])
	st.issued = time.Now()
	defer func() {
		clear(streams)
		s.syncStreams = streams[:0]
	}()
	if err != nil {
		return nil, fmt.Errorf("synchronize: wait for device: %w", err)
	}
	if m.Stream != 0 && !slices.Contains(streams, so.st) {
		streams = append(streams, so.st)
	}
	// Kept for the next synchronize in the driver, this call's own
	// included if the page cannot cover them.
	cp.mu.Lock()
	for _, bs := range streams {
		if !slices.Contains(cp.unsynced, bs) {
			cp.unsynced = append(cp.unsynced, bs)
		}
	}
	cp.mu.Unlock()
	targets := make([]v1.FenceTarget, 0, len(streams))
	for _, bs := range streams {
		t, ok := cp.target(bs)
		if !ok {
			return s.synchronizeHere(ctx, m)
		}
		targets = append(targets, t)
	}
	// What failed so far is reported now, as Synchronize would.
	if err := s.takeDeferred(); err != nil {
		return nil, err
	}
	answered = true
	return &v1.FenceTargets{Targets: targets}, nil
}

// target returns the word and number of a fence behind st's work.
func (cp *completionPage) target(st backend.Stream) (v1.FenceTarget, bool) {
	i := cp.word(st)
	if i < 0 {
		return v1.FenceTarget{}, false
	}
	want := cp.view.Word(i)
	f, _, err := streamFence(st)
	for try := 0; err == nil && try < 2; try++ {
		if wf, ok := f.(backend.WordFence); ok {
			if w, seq := wf.Word(); w == want {
				return v1.FenceTarget{Word: uint32(i), Seq: seq}, true
			}
		}
		// The latest fence was written elsewhere (before the stream had
		// its word): a new one is.
		fr, ok := st.(backend.Fencer)
		if !ok {
			break
		}
		f, err = fr.Fence()
	}
	return v1.FenceTarget{}, false
}

// synchronizeHere waits as Synchronize does and answers with no targets.
func (s *Session) synchronizeHere(ctx context.Context, m *v1.SynchronizeFences) (v1.Message, error) {
	if err := s.synchronize(ctx, &v1.Synchronize{Stream: m.Stream}); err != nil {
		return nil, err
	}
	return &v1.FenceTargets{}, nil
}

// closeCompletion unmaps the page once no stream of the session can write it.
func (s *Session) closeCompletion() {
	cp := s.completion.Swap(nil)
	if cp == nil {
		return
	}
	if hm, ok := s.d.dev.(backend.HostMapper); ok {
		if err := hm.UnmapHost(cp.shm.Bytes()); err != nil && !isLost(err) {
			s.d.log.Warn("unmap completion page", "session", s.id, "err", err)
		}
	}
	cp.shm.Close()
}
