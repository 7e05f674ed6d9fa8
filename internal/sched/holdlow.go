package sched

import (
	"runtime"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// Holding the low class for a high-class command. The tenants of one
// context share the driver's locks: a service's launch that meets a
// best-effort tenant's driver call in flight waits for it, and on a host
// whose vCPUs stall now and then it can wait for a stalled one. With
// Options.HoldLow, the high class's submitter marks its command from its
// receipt until it is issued (HoldLow, ReleaseLow), and the low class's
// goroutines look before each driver call and wait while one is marked,
// at most Options.HoldLow. A call already in the driver is not stopped;
// the low class loses at most the hold per call.

// HoldLow marks a high-class command on its way to the driver; every
// HoldLow must be followed by one ReleaseLow. Without Options.HoldLow it
// does nothing, and the low class never waits.
func (s *Scheduler) HoldLow() {
	if s.opts.HoldLow > 0 {
		s.urgent.Add(1)
	}
}

// ReleaseLow ends a HoldLow: the command is issued, or will not be.
func (s *Scheduler) ReleaseLow() {
	if s.opts.HoldLow > 0 {
		s.urgent.Add(-1)
	}
}

// HeldLow returns how many times a low-class goroutine waited for a held
// command, and for how long in all.
func (s *Scheduler) HeldLow() (n int64, d time.Duration) {
	return s.heldLow.Load(), time.Duration(s.heldLowNs.Load())
}

// waitHeld is where a low-class goroutine looks before a driver call.
func (s *Scheduler) waitHeld() {
	if s.urgent.Load() <= 0 {
		return
	}
	s.waitHeldSlow()
}

func (s *Scheduler) waitHeldSlow() {
	start := time.Now()
	end := start.Add(s.opts.HoldLow)
	now := start
	for s.urgent.Load() > 0 && now.Before(end) {
		runtime.Gosched()
		now = time.Now()
	}
	s.heldLow.Add(1)
	s.heldLowNs.Add(int64(now.Sub(start)))
}

// PollLow is PollEvent for a low-class wait: before each query it waits
// for a held high-class command (HoldLow). The driver's low-class fence
// waits use it.
func (s *Scheduler) PollLow(ev backend.Event, first, period, maxNap time.Duration) error {
	return pollEvent(ev, first, period, maxNap, s.waitHeld)
}
