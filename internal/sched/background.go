package sched

import (
	"fmt"
	"time"
)

// background carries on dispatching a submitter handed over, asks the policy
// again when a hold expires, tracks commands left untracked, ticks the
// policy while there is work, and ejects a policy that stalls an engine.
func (s *Scheduler) background() {
	defer close(s.bgDone)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		now := s.now()
		s.flushOlder = now - int64(s.opts.FlushDelay)
		for e := range s.eng {
			eng := &s.eng[e]
			if eng.held && eng.holdUntil != 0 && now >= eng.holdUntil {
				eng.held = false
			}
			if eng.readySince != 0 && eng.inflight == 0 && now-eng.readySince > int64(s.opts.StallTimeout) {
				pe := s.active
				s.ejectLocked(pe, fmt.Errorf("%w: %s left the %v engine idle with work ready for %v",
					ErrPolicy, pe.name(), Engine(e), time.Duration(now-eng.readySince).Round(time.Millisecond)))
				eng.readySince = 0
			}
		}
		busy := s.busyLocked()
		if busy && now >= s.nextTick {
			s.nextTick = now + int64(s.opts.TickInterval)
			s.hookLocked(func(p Policy) error { return p.OnTick(&s.host, time.Duration(now)) })
		}
		s.runLocked(0)

		next := int64(-1)
		at := func(t int64) {
			if next < 0 || t < next {
				next = t
			}
		}
		for _, sq := range s.tails {
			at(sq.tail.opened + int64(s.opts.FlushDelay))
		}
		for e := range s.eng {
			eng := &s.eng[e]
			if eng.held && eng.holdUntil != 0 {
				at(eng.holdUntil)
			}
			if eng.readySince != 0 {
				at(eng.readySince + int64(s.opts.StallTimeout) + 1)
			}
		}
		if busy {
			at(s.nextTick)
		}
		s.bgNext = next
		s.mu.Unlock()
		if next < 0 {
			<-s.bgWake
			continue
		}
		d := time.Duration(next - now)
		if s.opts.Clock != nil {
			d = min(d, time.Millisecond) // a test clock need not follow the wall clock
		}
		timer.Reset(max(d, 10*time.Microsecond))
		select {
		case <-s.bgWake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

func (s *Scheduler) busyLocked() bool {
	for e := range s.eng {
		if s.eng[e].inflight > 0 {
			return true
		}
	}
	for _, t := range s.tenants {
		if len(t.active) > 0 {
			return true
		}
	}
	return false
}
