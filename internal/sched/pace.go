package sched

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// Paced polls. The low class's completion waiters and its sessions' fence
// waits query their events rather than block in the backend (on CUDA, a
// thread per stream spinning in the driver), and sleep between looks. The
// end of each sleep is a goroutine wake-up, and in a process whose threads
// are idle a thread the Go runtime starts on an idle CPU: on a virtual
// machine, an interrupt to that CPU for the hypervisor to deliver. Polling
// every period, the best-effort load's two waiters were woken ~5,000 times a
// second, most of the daemon's goroutine wake-ups under load
// (bench/RESULTS.md, session 12). So a wait first sleeps through most of
// what it is expected to take, then looks every period.

// PollEvent waits for ev by querying it: at once, then after first, then
// after naps from period doubling up to maxNap (every period if maxNap is
// no longer), until it completes or fails. It serves unpaced waits, and
// the paced ones of Options.LowPaceAverage.
func PollEvent(ev backend.Event, first, period, maxNap time.Duration) error {
	for nap, next := first, period; ; nap, next = next, max(min(2*next, maxNap), period) {
		done, err := ev.Query()
		if err != nil || done {
			return err
		}
		sleep(nap)
	}
}

// sleep and now are time.Sleep and time.Now: tests see the naps a wait
// takes, and may run it on a simulated clock.
var (
	sleep = time.Sleep
	now   = time.Now
)

// maxLowPollFirst bounds a low-class waiter's first sleep, so that a
// wrong estimate delays a best-effort completion by little.
const maxLowPollFirst = 5 * time.Millisecond

// LowPollFirst is the first sleep of Options.LowPaceAverage, for a compute
// point whose charge is estimated at cost ns when its waiter's recent waits
// took expect: half the cost or three quarters of expect, whichever is
// longer (tenants sharing the GPU make a point take longer than its charge),
// within period and maxLowPollFirst.
func LowPollFirst(cost int64, expect, period time.Duration) time.Duration {
	return min(max(time.Duration(cost/2), expect*3/4, period), maxLowPollFirst)
}

// Pace learns one waiter's first nap (a stream's completion waiter, a
// session's fence waits): how long to sleep after the first look at an
// event so that the second finds it done. Three quarters of the recent
// waits (LowPollFirst) never got there: on the H100 the best-effort load's
// waiters were woken 1.83 times a wait (bench/RESULTS.md, session 34). A
// wait whose second look finds its event done (a hit) shortens the nap by a
// 64th; one that takes more looks (a miss) lengthens it by an eighth, and
// to at least the whole wait. On waits of a steady length it settles at
// 1.16 wake-ups a wait, ending them 5.5% of their length late; with 5%
// jitter, 1.32 and 7.3% (TestPaceSettles). Safe for concurrent use.
type Pace struct{ first atomic.Int64 }

// First is the nap learned so far; 0 before the first wait it learned from.
func (p *Pace) First() time.Duration { return time.Duration(p.first.Load()) }

// Wait waits for ev by querying it: at once; then after the learned first
// nap (initial, before one is learned), held within period and
// min(limit, maxLowPollFirst); then after naps from period doubling up to
// maxNap; until ev completes or fails, or ctx (if not nil) ends. A wait
// whose nap the limit shortened teaches the pace nothing.
func (p *Pace) Wait(ctx context.Context, ev backend.Event, initial, limit, period, maxNap time.Duration) error {
	done, err := ev.Query()
	if err != nil || done {
		return err
	}
	began := now()
	learned := p.First()
	first := learned
	if first == 0 {
		first = initial
	}
	bound := min(limit, maxLowPollFirst)
	clamped := learned > bound
	first = max(min(first, bound), period)
	looks := 0 // after the first nap's
	for nap, next := first, period; ; nap, next = next, max(min(2*next, maxNap), period) {
		if ctx != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		sleep(nap)
		if done, err = ev.Query(); err != nil || done {
			break
		}
		looks++
	}
	if err == nil && !clamped {
		p.learn(first, looks == 0, now().Sub(began))
	}
	return err
}

func (p *Pace) learn(first time.Duration, hit bool, waited time.Duration) {
	next := first - first/64
	if !hit {
		next = max(first+first/8, waited)
	}
	p.first.Store(int64(min(next, maxLowPollFirst)))
}

// lowPaceLimit bounds the first nap of a wait for a point whose charge is
// estimated at cost ns: eight times that, so that a short kernel in a
// stream of long ones is not seen long after it ended (no bound without an
// estimate).
func lowPaceLimit(cost int64) time.Duration {
	if cost <= 0 {
		return maxLowPollFirst
	}
	return time.Duration(min(cost, int64(maxLowPollFirst)) * 8)
}
