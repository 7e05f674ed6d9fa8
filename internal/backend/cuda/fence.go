package cuda

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gpuos/gpuos/internal/backend"
)

// A stream's fences are writes of its next sequence number
// (cuStreamWriteValue32, with the memory barrier) into a word of mapped host
// memory that only it uses; a fence is reached once the word holds its
// number or a later one. The host polls the word: no driver call, so no
// driver lock, between the enqueue and the observation.

// fenceStride keeps each stream's word on a cache line of its own: a host
// thread polls it while the device writes the others.
const fenceStride = 64

// fenceWord is one stream's word: where the host reads it and where the
// device writes it.
type fenceWord struct {
	host   *atomic.Uint32
	dptr   uint64
	shared bool // the caller's (SetFenceWord), not the pool's
}

// fencePool hands out fence words from pages of mapped host memory; the
// pages are the device's host allocations, freed by Close.
type fencePool struct {
	mu   sync.Mutex
	free []fenceWord
}

func (d *Device) takeFenceWord() (fenceWord, error) {
	d.fences.mu.Lock()
	defer d.fences.mu.Unlock()
	if len(d.fences.free) == 0 {
		hm, dptr, err := d.AllocMappedHost(fencePage)
		if err != nil {
			return fenceWord{}, err
		}
		b := hm.Bytes()
		for off := len(b) - fenceStride; off >= 0; off -= fenceStride {
			d.fences.free = append(d.fences.free, fenceWord{host: word32(b, off), dptr: uint64(dptr) + uint64(off)})
		}
	}
	w := d.fences.free[len(d.fences.free)-1]
	d.fences.free = d.fences.free[:len(d.fences.free)-1]
	return w, nil
}

const fencePage = 4096

func (d *Device) putFenceWord(w fenceWord) {
	d.fences.mu.Lock()
	d.fences.free = append(d.fences.free, w)
	d.fences.mu.Unlock()
}

// streamFences is a stream's fence state.
type streamFences struct {
	mu   sync.Mutex
	word fenceWord // host nil until the first fence
	seq  uint32    // the last number enqueued
	// latest is the last fence and the stream's enqueues count around it,
	// if that did not change while it was enqueued (latestOK).
	latest   fence
	latestAt uint64
	latestOK bool
}

var (
	_ backend.Fencer          = (*stream)(nil)
	_ backend.LatestFencer    = (*stream)(nil)
	_ backend.FenceWordSetter = (*stream)(nil)
	_ backend.WordFence       = fence{}
)

// Fence enqueues a write of the stream's next sequence number into its
// fence word (backend.Fencer). Without cuStreamWriteValue32_v2 in the
// driver it fails with an Unsupported error naming it.
func (s *stream) Fence() (backend.Fence, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.live.exit()
	f := &s.fences
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.word.host == nil {
		w, err := s.dev.takeFenceWord()
		if err != nil {
			return nil, err
		}
		// A recycled word goes on from where its last stream left it.
		f.word, f.seq = w, w.host.Load()
	}
	seq := f.seq + 1
	at := s.enqueues.Load()
	f.latestOK = false
	if r := s.dev.c.streamWriteValue32(s.h, f.word.dptr, seq); r != 0 {
		return nil, s.dev.fail("enqueue fence", r)
	}
	f.seq = seq
	fe := fence{s: s, word: f.word.host, seq: seq}
	f.latest, f.latestAt, f.latestOK = fe, at, s.enqueues.Load() == at
	return fe, nil
}

// LatestFence returns the stream's last fence if no call enqueued work on
// the stream while it was enqueued or since (backend.LatestFencer).
func (s *stream) LatestFence() (backend.Fence, bool) {
	f := &s.fences
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.latestOK || s.enqueues.Load() != f.latestAt {
		return nil, false
	}
	return f.latest, true
}

// SetFenceWord makes the stream's later fences write word, at device
// address dptr (backend.FenceWordSetter); its numbering goes on from the
// value the word holds. The word the stream used before goes back to the
// device's pool as releaseFence would give it back.
func (s *stream) SetFenceWord(word *atomic.Uint32, dptr backend.DevicePtr) error {
	if word == nil || dptr == 0 {
		return fmt.Errorf("set fence word: %w", backend.ErrInvalidArgument)
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.live.exit()
	f := &s.fences
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.word.host != nil && !f.word.shared && reached(f.word.host, f.seq) {
		s.dev.putFenceWord(f.word)
	}
	f.word = fenceWord{host: word, dptr: uint64(dptr), shared: true}
	f.seq = word.Load()
	f.latest, f.latestOK = fence{}, false
	return nil
}

// releaseFence gives the stream's word back once no write of it can still
// be pending: one whose last fence was not reached is never reused.
func (s *stream) releaseFence() {
	f := &s.fences
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.word.host != nil && !f.word.shared && reached(f.word.host, f.seq) {
		s.dev.putFenceWord(f.word)
	}
	f.word = fenceWord{}
	f.latest, f.latestOK = fence{}, false
}

type fence struct {
	s    *stream
	word *atomic.Uint32
	seq  uint32
}

// Reached reports whether the word holds the fence's number or a later
// one. Once the stream is destroyed (or the device closed, which frees the
// word's memory) it reports false: the poller's Query then says why.
func (f fence) Reached() bool {
	if !f.s.live.enter() {
		return false
	}
	defer f.s.live.exit()
	return reached(f.word, f.seq)
}

// Word returns the fence's word and number (backend.WordFence).
func (f fence) Word() (*atomic.Uint32, uint32) { return f.word, f.seq }

// reached compares in sequence arithmetic: the numbers wrap.
func reached(word *atomic.Uint32, seq uint32) bool { return int32(word.Load()-seq) >= 0 }
