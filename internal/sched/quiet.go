package sched

import (
	"sync/atomic"
	"time"
)

// Quiet windows ahead of a periodic service's launches (Options.QuietLead).
//
// On hosts whose cores slow for milliseconds at a time (the lent H100's
// "episodes", bench/RESULTS.md sessions 18-37), the service's P99 is set by
// its requests in those episodes, and under a best-effort load each takes
// longer than alone: the daemon's work for the other tenants (their driver
// calls, completions, wake-ups) runs beside the service's path, and the
// episode multiplies it. Holding that work from the service's request's
// receipt (session 30) came too late: most of the calls it met had begun
// before the request arrived.
//
// A service that sends at a fixed rate says when its next request will come.
// So, while a single tenant of class high has a session and its last
// quietHistory compute submissions came at a steady period, the scheduler
// predicts the next one and, from QuietLead before it until that submission
// has been issued (at most quietLate past the prediction), the low class's
// work waits: the spinner (lowspin.go) completes nothing and dispatches
// nothing, and no other goroutine issues a low-class command or marker. The
// spinner, which spins anyway while such work is in flight, carries on once
// the window closes, so the hold costs no wake-up. It applies only while the
// spinner runs: without it no one would be there to carry on.
//
// A window's GPU cost is small when the best effort keeps work queued on the
// device: a completion seen up to a window's length late delays no kernel.

// quietHistory is how many of the service's submissions the prediction looks
// at: the period is their mean gap, and each gap must be within a quarter of
// it (a service that skips or bunches requests gets no window).
const quietHistory = 16

// quietRecent is how many of the last submissions project the next one: the
// earliest projection counts, since a request's wake-up is late more often
// than early (a sleeping client's timer slack).
const quietRecent = 4

// quietLate is how long past its prediction a window stays open for a late
// request.
const quietLate = 200 * time.Microsecond

// quietWindow is the scheduler's prediction of the service's next request.
type quietWindow struct {
	// Under the scheduler's lock.
	who      *tenant
	arrivals [quietHistory]int64 // the service's last submissions (scheduler clock, ns), a ring
	n        int                 // submissions in arrivals (at most quietHistory)
	last     int                 // the newest one's index

	// window packs the open window: its opening in µs of the scheduler
	// clock (high 48 bits) and its length in µs (low 16); 0: none. One word,
	// so that the spinner, which reads it without the lock, never sees one
	// window's start with another's end.
	window atomic.Uint64

	armed   atomic.Uint64 // windows predicted
	held    atomic.Uint64 // windows in which low-class work waited
	heldWin atomic.Uint64 // the last window counted in held
	heldT   atomic.Int64  // ns the spinner held completed work, in all
}

// QuietStats counts the quiet windows (Options.QuietLead).
type QuietStats struct {
	Armed uint64        // windows predicted
	Held  uint64        // windows in which low-class work waited
	Time  time.Duration // how long completed low-class work waited for windows to close, in all
}

// QuietStats reports the quiet windows' counts.
func (s *Scheduler) QuietStats() QuietStats {
	q := &s.quiet
	return QuietStats{Armed: q.armed.Load(), Held: q.held.Load(), Time: time.Duration(q.heldT.Load())}
}

// quietArrivedLocked notes that tenant t, of class high, submitted a compute
// command at arrived (scheduler clock) and has had it issued, and predicts
// the next window. It closes the current one.
func (s *Scheduler) quietArrivedLocked(t *tenant, arrived int64) {
	q := &s.quiet
	q.window.Store(0)
	if !s.singleServiceLocked(t) {
		q.who, q.n = nil, 0
		return
	}
	if q.who != t {
		q.who, q.n = t, 0
	}
	q.last = (q.last + 1) % quietHistory
	q.arrivals[q.last] = arrived
	q.n = min(q.n+1, quietHistory)
	if q.n < quietHistory {
		return
	}
	oldest := q.arrivals[(q.last+1)%quietHistory]
	period := (arrived - oldest) / (quietHistory - 1)
	lead := int64(s.opts.QuietLead)
	if period <= 2*(lead+int64(quietLate)) {
		return // a window would cover most of the time
	}
	prev := oldest
	for i := 1; i < quietHistory; i++ {
		a := q.arrivals[(q.last+1+i)%quietHistory]
		if gap := a - prev; gap < period*3/4 || gap > period*5/4 {
			return
		}
		prev = a
	}
	next := arrived + period
	for i := 1; i < quietRecent; i++ {
		a := q.arrivals[(q.last+quietHistory-i)%quietHistory]
		next = min(next, a+int64(i+1)*period)
	}
	open := (next - lead) / 1e3
	length := (lead + int64(quietLate)) / 1e3
	if open <= 0 || length >= 1<<16 {
		return
	}
	q.window.Store(uint64(open)<<16 | uint64(length))
	q.armed.Add(1)
}

// singleServiceLocked reports whether t is the only tenant of class high
// with a session: a window serves one service's period.
func (s *Scheduler) singleServiceLocked(t *tenant) bool {
	for _, u := range s.tenants {
		if u != t && len(u.queues) > 0 && u.class() == ClassHigh {
			return false
		}
	}
	return true
}

// quietAt reports whether now (scheduler clock, ns) is in the open window.
func (q *quietWindow) quietAt(now int64) bool {
	w := q.window.Load()
	if w == 0 {
		return false
	}
	open := int64(w>>16) * 1e3
	return now >= open && now < open+int64(w&0xffff)*1e3
}

// holdsLowLocked reports whether the low class's work waits now: a window is
// open and the spinner runs, to carry on once it closes. The caller that
// leaves work for it sets the spinner's dispatch (quietLeftLocked).
func (s *Scheduler) holdsLowLocked() bool {
	return s.opts.QuietLead > 0 && s.spinner.running && !s.spinner.parked && s.quiet.quietAt(s.now())
}

// quietLeftLocked notes that a dispatcher left low-class work for the window
// to close: the spinner dispatches it then.
func (s *Scheduler) quietLeftLocked() {
	s.quiet.noteHeld()
	s.spinner.dispatch.Store(true)
}

// noteHeld counts the open window as one that held work, once.
func (q *quietWindow) noteHeld() {
	w := q.window.Load()
	if w != 0 && q.heldWin.Swap(w) != w {
		q.held.Add(1)
	}
}

// waitQuiet spins, without the scheduler's lock, until the window open now
// closes, and counts the time as held; it returns at once if none is open.
// The spinner calls it before it completes or dispatches anything.
func (s *Scheduler) waitQuiet() {
	if s.opts.QuietLead <= 0 {
		return
	}
	q := &s.quiet
	start := s.now()
	if !q.quietAt(start) {
		return
	}
	q.noteHeld()
	now := start
	for q.quietAt(now) {
		s.opts.Yield()
		now = s.now()
	}
	q.heldT.Add(now - start)
}
