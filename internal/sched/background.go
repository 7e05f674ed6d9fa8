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
	s.bgAwake.Store(true)
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
		issued := s.runLocked(0)

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
		seen := s.gen.Load() // under s.mu: what runLocked saw
		s.mu.Unlock()
		if issued > 0 && s.opts.Spin > 0 && s.poll(seen, next) {
			continue
		}
		s.bgAwake.Store(false)
		if s.gen.Load() != seen {
			s.bgAwake.Store(true)
			continue
		}
		if next < 0 {
			<-s.bgWake
			s.bgAwake.Store(true)
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
		s.bgAwake.Store(true)
		timer.Stop()
	}
}

// poll waits up to Options.Spin for work left to this goroutine (gen moves
// past seen) or for its next timer (next, scheduler clock; -1: none), and
// reports whether either came. A burst of Batched submissions thus keeps the
// dispatcher on its thread instead of waking it per command.
func (s *Scheduler) poll(seen uint64, next int64) bool {
	start := time.Now()
	for i := 1; ; i++ {
		if s.gen.Load() != seen {
			return true
		}
		if i%16 == 0 {
			if time.Since(start) >= s.opts.Spin {
				return false
			}
			if next >= 0 && s.now() >= next {
				return true
			}
		}
		s.opts.Yield()
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
