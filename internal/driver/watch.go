package driver

import (
	"sync/atomic"

	"github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
)

// Launch watching (api/v1 WatchLaunches): a latency-critical session's
// synchronize with no request at all. With a completion page the client
// still asked the driver for each synchronize's fence words
// (SynchronizeFences), and the driver's serving thread had to read that
// request and answer it: on hosts that slow whole cores for milliseconds
// (bench/RESULTS.md, session 28) that thread's path after the launch —
// reading the next request, answering it, the answer's way back — made
// most of the service's slowest requests. Watching, the driver publishes
// beside each stream's fence word how many of the stream's launches it has
// issued with a fence behind them, and the fence's number, as it enqueues
// the fence; the client, which counts the Launch requests it writes, waits
// on the page alone. Whatever the page cannot tell — an asynchronous
// error, a fault record the client cannot see, a request other than a
// launch — sends the client's synchronize to the driver (the page's count
// of calls, its watching word, the client's own count of other requests).

// ErrWatchUnsupported: the session has no completion page, or its page
// cannot show the faults of its guarded programs.
var ErrWatchUnsupported = v1.Errorf(v1.CodeUnsupported, "no launch watching for this session")

// watchedStream is a stream the client counts launches of: the page word
// its fences write (-1: none could be had), the Launch requests received
// for it since WatchLaunches (each launch's number), the highest number
// issued, and what was last published (under the page's mu).
type watchedStream struct {
	word      int
	received  uint64
	issued    atomic.Uint64
	published uint64
}

// watchLaunches answers WatchLaunches.
func (s *Session) watchLaunches(*v1.WatchLaunches) (v1.Message, error) {
	cp := s.completion.Load()
	if cp == nil || !cp.view.Watchable() || !s.faultsInPage(cp) {
		return nil, ErrWatchUnsupported
	}
	cp.watching.Store(true)
	cp.view.SetWatching(true)
	return &v1.Empty{}, nil
}

// stopWatching sends the client's synchronizes to the driver for good.
func (cp *completionPage) stopWatching() {
	if cp.watching.Swap(false) {
		cp.view.SetWatching(false)
	}
}

// launchWatch is what a launch command publishes once issued: its stream's
// and how many of the stream's launches it covers.
type launchWatch struct {
	ws   *watchedStream // nil: nothing to publish
	upto uint64
}

// watchLaunch counts a Launch request naming stream handle h (st the
// backend stream, nil if h names none) and returns what its command is to
// publish.
func (s *Session) watchLaunch(h uint64, st backend.Stream) launchWatch {
	cp := s.completion.Load()
	if cp == nil || !cp.watching.Load() {
		return launchWatch{}
	}
	if st != nil && s.fencePoll.Load() == 0 {
		// No fences follow its launches any more (its class changed): the
		// client must ask.
		cp.stopWatching()
		return launchWatch{}
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	ws := cp.watched[h]
	if ws == nil {
		ws = &watchedStream{word: -1}
		cp.watched[h] = ws
	}
	ws.received++
	if ws.word < 0 && st != nil {
		if i := cp.wordLocked(st); i >= 0 {
			cp.view.SetStream(i, h)
			ws.word = i
		}
	}
	if ws.word < 0 {
		return launchWatch{}
	}
	return launchWatch{ws: ws, upto: ws.received}
}

// issued notes that w's launches are enqueued on their stream (before any
// fence behind them): a fence enqueued after this covers them.
func (w launchWatch) issued() {
	if w.ws != nil {
		w.ws.issued.Store(w.upto) // commands of a stream issue in order
	}
}

// publish says on the page that w's launches are issued and fence f follows
// them, if f writes their stream's word.
func (s *Session) publish(w launchWatch, f backend.Fence) {
	cp := s.completion.Load()
	if w.ws == nil || cp == nil || !cp.watching.Load() {
		return
	}
	wf, ok := f.(backend.WordFence)
	if !ok {
		return
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	i := w.ws.word
	// Never a smaller count: another goroutine may have published a later
	// fence's meanwhile (prefence beside a command's issue).
	if word, seq := wf.Word(); i >= 0 && word == cp.view.Word(i) && w.upto > w.ws.published {
		w.ws.published = w.upto
		cp.view.Publish(i, w.upto, seq)
	}
}

// issuedOn returns what a fence enqueued on st from now on may publish: the
// launches of st issued so far (for prefence's fences).
func (s *Session) issuedOn(st backend.Stream) launchWatch {
	cp := s.completion.Load()
	if cp == nil || !cp.watching.Load() {
		return launchWatch{}
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	i, ok := cp.words[st]
	if !ok {
		return launchWatch{}
	}
	for _, ws := range cp.watched {
		if ws.word == i {
			return launchWatch{ws: ws, upto: ws.issued.Load()}
		}
	}
	return launchWatch{}
}

// uncountedLaunch is a Launch request refused before its handler counted
// it (its right, its encoding): the client counted it, and the numbers the
// driver publishes for its stream would lag the client's from now on, so
// its synchronizes ask the driver for good.
func (s *Session) uncountedLaunch() {
	if cp := s.completion.Load(); cp != nil {
		cp.stopWatching()
	}
}

// raiseCalls tells a watching client to ask the driver at its next
// synchronize: an asynchronous error waits there.
func (s *Session) raiseCalls() {
	if cp := s.completion.Load(); cp != nil && cp.watching.Load() {
		cp.view.RaiseCalls()
	}
}
