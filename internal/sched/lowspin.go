package sched

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// The low class's spinner (Options.LowClassSpin). Each stream's waiter
// completes its points on a goroutine of its own, and a low-class waiter
// naps between its looks: under a best-effort load beside a service, the
// naps' ends and the waiters woken from idle when a tenant's turn comes back
// were most of the daemon's goroutine wake-ups (~770 of ~1,150 a second on
// the H100, bench/RESULTS.md, session 35), each a thread started on an idle
// CPU, which on a virtual machine the hypervisor schedules. The native
// baseline wakes no one: its best-effort processes spin in the driver.
//
// With the option on, while a tenant of class high has a session, each
// tracked low-class point gets a fence enqueued behind its end event
// (backend.Fencer) and is completed by one goroutine for all streams, which
// reads the fences' words in host memory without pause: no timer, no driver
// call (a spinning query of the events took the driver's locks beside the
// service's launches, run 37), one CPU busy while such points are in
// flight. A stream keeps its order: its points go to the spinner only while
// its waiter's goroutine has none in hand, and back to that goroutine at the
// first one without a fence. A low-class session's fence waits can be
// watched by it too (Watch): the serving goroutine is then woken once, when
// the fence is reached, instead of at its issue and at the end of each nap.
// While it spins, it also takes the dispatching that batched submissions
// would wake the background goroutine for (dispatchLocked).

// lowSpinCheck is how long the spinner watches a point's fence before it
// also queries the point's end and its stream: a fence behind failed work is
// never reached, and the driver says why.
const lowSpinCheck = 2 * time.Millisecond

// lowSpinner is the goroutine that completes fenced low-class points, and
// the waiters whose points it holds.
type lowSpinner struct {
	cond    *sync.Cond // on the scheduler's lock
	ws      []*waiter
	parked  bool // waiting for a waiter (cond)
	running bool
	changed atomic.Bool // a waiter or a watch was handed to it since it last took the lock
	// dispatch: a batched submission left its dispatching to the spinner
	// (dispatchLocked) instead of waking the background goroutine.
	dispatch atomic.Bool
	seen     []spinLook // the head points it watches, reused
	watches  []*spinWatch
	wseen    []*spinWatch // the watches it spins on, reused
}

// SpinWatch is a completion the spinner watches for a caller
// (Scheduler.Watch): a low-class session's fence wait.
type SpinWatch interface {
	// Reached reports, with no driver call, whether it completed, or failed
	// (err).
	Reached() (bool, error)
	// Check reports the same, with driver calls if need be: the spinner
	// calls it every lowSpinCheck while Reached says no (failed work's
	// fence is never reached).
	Check() (bool, error)
	// Done is the spinner's last call: the watch completed with err (nil:
	// reached). It runs under the scheduler's lock and must not block.
	Done(err error)
}

// spinWatch is a watch the spinner holds; after Watch, only the spinner
// touches it.
type spinWatch struct {
	w     SpinWatch
	since time.Time // its last check, or when it began
	fin   bool
	err   error
}

// spinLook is one head point the spinner watches without the lock.
type spinLook struct {
	w       *waiter
	p       *point
	since   time.Time // its last check, or when watching it began
	reached bool
	done    bool // its end or its stream, queried, said so
	err     error
}

// spinWatchLocked reports whether a tracked point of tenant t issued now
// gets a fence for the spinner: the option is on, t is of the
// low class, and a tenant of class high has a queue (a service whose
// latency the daemon's wake-ups would cost).
func (s *Scheduler) spinWatchLocked(t *tenant) bool {
	return s.opts.LowClassSpin && t.class() == ClassLow && s.spinsLocked() // the option first: issueLocked asks at each tracked issue
}

// spinsLocked reports whether the spinner serves the low class now: the
// option is on and a tenant of class high has a queue.
func (s *Scheduler) spinsLocked() bool {
	if !s.opts.LowClassSpin {
		return false
	}
	for _, u := range s.tenants {
		if len(u.queues) > 0 && u.class() == ClassHigh {
			return true
		}
	}
	return false
}

// handToSpinnerLocked gives w's points to the spinner if its head has a
// fence and w's goroutine has none in hand; it reports whether it did.
func (s *Scheduler) handToSpinnerLocked(w *waiter) bool {
	if w.spun {
		s.spinner.wakeLocked()
		return true
	}
	if w.busy || w.head == len(w.pts) || w.pts[w.head].watch == nil {
		return false
	}
	w.spun = true
	s.spinner.ws = append(s.spinner.ws, w)
	s.startSpinnerLocked()
	return true
}

// startSpinnerLocked tells the spinner it has something new, starting it if
// it is not running.
func (s *Scheduler) startSpinnerLocked() {
	sp := &s.spinner
	sp.changed.Store(true)
	if !sp.running {
		sp.running = true
		go s.spin()
	}
	sp.wakeLocked()
}

// Watch has the low class's spinner watch w, if it serves the low class now
// (Options.LowClassSpin, and a tenant of class high has a session), and
// reports whether it does: the spinner then calls w's Done once it
// completed, and w no more. Else the caller waits its own way.
func (s *Scheduler) Watch(w SpinWatch) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.spinsLocked() {
		return false
	}
	s.spinner.watches = append(s.spinner.watches, &spinWatch{w: w, since: time.Now()})
	s.startSpinnerLocked()
	return true
}

// dispatchLocked takes a batched submission's dispatching, instead of the
// background goroutine's wake-up (under a best-effort load ~110 a second on
// the H100, session 35), if the spinner is spinning: it runs the dispatcher
// at its next look. It reports whether it took it.
func (sp *lowSpinner) dispatchLocked() bool {
	if !sp.running || sp.parked {
		return false
	}
	sp.dispatch.Store(true)
	return true
}

func (sp *lowSpinner) wakeLocked() {
	if sp.parked {
		sp.parked = false
		sp.cond.Signal()
	}
}

// spin is the spinner's goroutine: it looks at each of its waiters' head
// points, completes those reached, and gives a waiter back to its goroutine
// once it is empty or its head has no fence. It parks while it has none.
// It spins without the scheduler's lock, taking it only when a point is
// reached or due for a check, or a waiter was handed to it: taken at each
// look, the lock kept a service's submissions waiting for it (on the H100,
// the service's P99 under load 1.54 times alone against the default's 1.06
// on one host, bench/RESULTS.md, session 35).
func (s *Scheduler) spin() {
	sp := &s.spinner
	var dones []*Command
	s.mu.Lock()
	for {
		for len(sp.ws) == 0 && len(sp.watches) == 0 {
			if sp.dispatch.Swap(false) { // taken while it held nothing more
				if s.opts.EpisodeHold > 0 {
					s.mu.Unlock()
					s.waitEpisode() // what a hold left waits for its end
					s.mu.Lock()
				}
				if !s.bgAwake.Load() {
					s.runLocked(waiterBudget)
				}
				continue
			}
			if s.closed {
				sp.running = false
				s.mu.Unlock()
				return
			}
			sp.parked = true
			sp.cond.Wait()
		}
		now := time.Now()
		sp.seen = sp.seen[:0]
		for _, w := range sp.ws {
			p := w.pts[w.head]
			if p.watchSince.IsZero() {
				p.watchSince = now
			}
			sp.seen = append(sp.seen, spinLook{w: w, p: p, since: p.watchSince})
		}
		sp.wseen = append(sp.wseen[:0], sp.watches...)
		sp.changed.Store(false)
		s.mu.Unlock()
		for i := 0; ; i++ {
			ready := false
			for j := range sp.seen {
				l := &sp.seen[j]
				l.reached = l.p.watch.Reached()
				if !l.reached && i%64 == 63 && time.Since(l.since) >= lowSpinCheck {
					// Failed work's fence is never reached: the end event or
					// the stream reports the failure (or that the work is done).
					l.done, l.err = l.p.end.Query()
					if !l.done && l.err == nil {
						l.done, l.err = l.p.sq.st.Query()
					}
					l.since = time.Now()
				}
				ready = ready || l.reached || l.done || l.err != nil
			}
			for _, sw := range sp.wseen {
				done, err := sw.w.Reached()
				if !done && err == nil && i%64 == 63 && time.Since(sw.since) >= lowSpinCheck {
					done, err = sw.w.Check()
					sw.since = time.Now()
				}
				sw.fin, sw.err = done || err != nil, err
				ready = ready || sw.fin
			}
			if ready || sp.changed.Load() || sp.dispatch.Load() {
				s.waitEpisode() // nothing completed or dispatched in a hold
				break
			}
			s.opts.Yield()
		}
		synced := time.Now()
		s.mu.Lock()
		for i := range sp.seen {
			l := &sp.seen[i]
			if !l.reached && !l.done && l.err == nil {
				l.p.watchSince = l.since
				continue
			}
			w, p := l.w, l.p
			w.pts[w.head] = nil
			w.head++
			if w.head == len(w.pts) {
				w.pts, w.head = w.pts[:0], 0
			}
			p.synced = synced
			p.sq.q.st.SpunEnds++
			dones = s.completeLocked(p, l.err, dones)
		}
		clear(sp.seen) // no point kept past its completion
		s.releaseSpunLocked()
		if len(sp.wseen) > 0 {
			kept := sp.watches[:0]
			for _, sw := range sp.watches {
				if !sw.fin {
					kept = append(kept, sw)
					continue
				}
				sw.w.Done(sw.err)
			}
			clear(sp.watches[len(kept):])
			sp.watches = kept
			clear(sp.wseen)
		}
		owed := sp.dispatch.Swap(false) // one left after this is the next look's
		if len(dones) > 0 {
			s.afterCompletionsLocked(dones) // dispatches too, unless the background goroutine is awake
			dones = dones[:0]
		} else if owed && !s.bgAwake.Load() {
			s.runLocked(waiterBudget)
		}
	}
}

// releaseSpunLocked gives the waiters that are empty, or whose head has no
// fence, back to their goroutines.
func (s *Scheduler) releaseSpunLocked() {
	sp := &s.spinner
	kept := sp.ws[:0]
	for _, w := range sp.ws {
		if w.head < len(w.pts) && w.pts[w.head].watch != nil {
			kept = append(kept, w)
			continue
		}
		w.spun = false
		if w.head < len(w.pts) || w.closed {
			w.cond.Signal()
		}
	}
	clear(sp.ws[len(kept):])
	sp.ws = kept
}

// watchFence enqueues the fence a spun point ends at, behind its end event;
// unlocked. Without one (the stream has no fences, or enqueueing failed) the
// point's waiter polls its end event as usual.
func watchFence(st backend.Stream) backend.Fence {
	fs, ok := st.(backend.Fencer)
	if !ok {
		return nil
	}
	f, err := fs.Fence()
	if err != nil {
		return nil
	}
	return f
}
