package sched

import (
	"context"
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
// no longer), until it completes or fails, or ctx (if not nil) ends. The
// scheduler's low-class waiters look every period; the driver's low-class
// fence waits double.
func PollEvent(ctx context.Context, ev backend.Event, first, period, maxNap time.Duration) error {
	for nap, next := first, period; ; nap, next = next, max(min(2*next, maxNap), period) {
		done, err := ev.Query()
		if err != nil || done {
			return err
		}
		if ctx != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		sleep(nap)
	}
}

// sleep is time.Sleep; tests see the naps PollEvent takes.
var sleep = time.Sleep

// maxLowPollFirst bounds a low-class waiter's first sleep, so that a
// wrong estimate delays a best-effort completion by little.
const maxLowPollFirst = 5 * time.Millisecond

// LowPollFirst is how long a low-class waiter sleeps before its second look
// at a compute point whose charge is estimated at cost ns, when its recent
// waits took expect: half the cost or three quarters of expect, whichever
// is longer (tenants sharing the GPU make a point take longer than its
// charge), within period and maxLowPollFirst. Sleeping longer, to save the
// second wake-up, costs the best effort throughput: while a service is
// active, priority keeps two of the lower classes' commands in flight
// (lowerInFlight), so a completion seen late leaves the device idle. A
// first nap learned to end just past the point's end took the best-effort
// waiters' wake-ups from 1.83 a point to ~0.7 and the best effort from
// 0.98 of its throughput alone to 0.80 on the H100 (bench/RESULTS.md,
// session 34).
func LowPollFirst(cost int64, expect, period time.Duration) time.Duration {
	return min(max(time.Duration(cost/2), expect*3/4, period), maxLowPollFirst)
}
