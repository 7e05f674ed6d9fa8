package sched

import (
	"fmt"
	"strings"
)

// Expressed is how many commands the express lane issued.
func (s *Scheduler) Expressed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.expressed
}

// Dump describes the scheduler's state, for failing tests.
func (s *Scheduler) Dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "active=%s dispatching=%v tails=%d closed=%v bgNext=%d now=%d\n", s.active.name(), s.dispatching, len(s.tails), s.closed, s.bgNext, s.now())
	for e := range s.eng {
		eng := &s.eng[e]
		fmt.Fprintf(&b, "eng %d: inflight=%d cost=%d held=%v until=%d readySince=%d unaccounted=%v\n", e, eng.inflight, eng.inflightCost, eng.held, eng.holdUntil, eng.readySince, eng.unaccounted())
	}
	for _, t := range s.tenants {
		fmt.Fprintf(&b, "tenant %s class=%v: ", t.name, t.class())
		for e := range t.eng {
			fmt.Fprintf(&b, "[e%d q=%d if=%d] ", e, t.eng[e].queued, t.eng[e].inflight)
		}
		b.WriteString("\n")
		for _, sq := range t.active {
			c := sq.front()
			after := "-"
			if c.After != nil {
				after = fmt.Sprint(c.After.state)
			}
			fmt.Fprintf(&b, "   stream len=%d head kind=%v state=%v after=%s tail=%v\n", sq.len(), c.Kind, c.state, after, sq.tail != nil)
		}
		for _, q := range t.queues {
			fmt.Fprintf(&b, "   queue %d queued=%d inflight=%d waiting=%d\n", q.session, q.queued, q.inflight, q.waiting)
		}
	}
	for st, w := range s.waiters {
		if len(w.pts) > w.head {
			fmt.Fprintf(&b, "waiter %p: %d points\n", st, len(w.pts)-w.head)
		}
	}
	return b.String()
}

// CheckIdle reports counters that are not back to zero once every queue is
// idle: a leak in the accounting.
func (s *Scheduler) CheckIdle() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := range s.eng {
		if eng := &s.eng[e]; eng.inflight != 0 || eng.inflightCost != 0 || eng.unaccounted() {
			return fmt.Errorf("engine %d not idle: inflight %d, cost %d, unaccounted %v", e, eng.inflight, eng.inflightCost, eng.unaccounted())
		}
	}
	for _, t := range s.tenants {
		for e := range t.eng {
			if te := &t.eng[e]; te.queued != 0 || te.inflight != 0 || te.inflightCost != 0 {
				return fmt.Errorf("tenant %s engine %d not idle: queued %d, inflight %d, cost %d", t.name, e, te.queued, te.inflight, te.inflightCost)
			}
		}
		if len(t.active) != 0 {
			return fmt.Errorf("tenant %s has %d active streams", t.name, len(t.active))
		}
	}
	if len(s.tails) != 0 {
		return fmt.Errorf("%d untracked tails", len(s.tails))
	}
	return nil
}

// unaccounted reports whether timed points of the engine await accounting.
func (eng *engineState) unaccounted() bool {
	for _, ch := range eng.chains {
		if ch != nil && ch.head != nil {
			return true
		}
	}
	return false
}

// BackgroundAsleep reports whether the background goroutine is waiting to
// be woken.
func (s *Scheduler) BackgroundAsleep() bool { return !s.bgAwake.Load() }

// SetMissed notes that a goroutine left its dispatching to the token's
// holder, as runLocked does when it finds the token taken.
func (s *Scheduler) SetMissed() {
	s.mu.Lock()
	s.missed = true
	s.mu.Unlock()
}

// Lock takes the scheduler's lock until the returned function is called.
func (s *Scheduler) Lock() (unlock func()) {
	s.mu.Lock()
	return s.mu.Unlock
}

// SpinnerRunning reports whether the low class's spinner goroutine runs.
func (s *Scheduler) SpinnerRunning() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spinner.running
}
