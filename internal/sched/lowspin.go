package sched

import (
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// Spinning low-class waiters (Options.LowClassSpin), an experiment. Under a
// best-effort load the daemon's threads sleep and wake thousands of times
// a second, most of it the low class's completion waiters sleeping between
// looks at their events (each expiry of a Go sleep starts a thread on an
// idle CPU) — against tens a second natively, where CUDA's synchronize
// spins. On a virtual machine each such wake-up is the hypervisor's to
// schedule, and the hosts with the most steal gave the latency-critical
// service its worst tails (bench/RESULTS.md, sessions 11, 18 and 20).
// Spinning in the driver instead (cuEventQuery without pause) cost the
// service a few µs at P50-P99 (run 37): the driver's locks, which the
// service's launches take too. A fence is a word in host memory: watching
// it takes no driver call and no lock.

// lowSpinCheck is how often a spinning waiter asks the backend about its
// event: a failed context or a destroyed stream never reaches the fence.
const lowSpinCheck = time.Millisecond

// spinsLow reports whether p's waiter spins on a fence behind it: a
// low-class compute point, with Options.LowClassSpin.
func (s *Scheduler) spinsLow(p *point) bool {
	return p.timed && s.opts.LowClassSpin && p.t.class() == ClassLow
}

// enqueueLowFence enqueues a fence on st behind what was just recorded
// there, or returns nil if st has none to give (the waiter then polls).
func enqueueLowFence(st backend.Stream) backend.Fence {
	fr, ok := st.(backend.Fencer)
	if !ok {
		return nil
	}
	f, err := fr.Fence()
	if err != nil {
		return nil
	}
	return f
}

// spinFence waits for ev, recorded before f, by watching f, calling yield
// between looks; every lowSpinCheck it queries ev, for an error.
func spinFence(ev backend.Event, f backend.Fence, yield func()) error {
	check := time.Now().Add(lowSpinCheck)
	for !f.Reached() {
		if now := time.Now(); now.After(check) {
			if done, err := ev.Query(); err != nil || done {
				return err
			}
			check = now.Add(lowSpinCheck)
		}
		yield()
	}
	// The event was recorded before the fence: done, unless it failed.
	if _, err := ev.Query(); err != nil {
		return err
	}
	return nil
}
