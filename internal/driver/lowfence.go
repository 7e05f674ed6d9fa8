package driver

import (
	"os"
	"sync/atomic"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/sched"
)

// LowFenceWaitEnv, set to "poll", makes a low-class session's fence waits
// (WaitFence) query the fence's event with naps in between (pollLowFence)
// instead of a goroutine blocked in the backend's event synchronize, which
// on CUDA spins a CPU inside the driver for as long as the wait lasts: a
// best-effort client waiting on its long kernels keeps one of the daemon's
// CPUs busy throughout (bench/RESULTS.md, session 23: 0.3 CPU of the 0.6
// the standard best-effort load adds, 1.6 CPUs with 5-ms kernels), as the
// scheduler's own low-class waiters did before they were paced. Off until
// measured on a GPU: it trades that CPU for wake-ups.
const LowFenceWaitEnv = "GPUOS_LOW_FENCE_WAIT"

// lowFencePollOn is LowFenceWaitEnv, read once; tests set it.
var lowFencePollOn = func() *atomic.Bool {
	var on atomic.Bool
	on.Store(os.Getenv(LowFenceWaitEnv) == "poll")
	return &on
}()

// pollsLowFences reports whether the session's fence waits poll: paced
// waits are on, its tenant is of the low class, and that class's waiters
// poll (sched.Options.LowClassPoll).
func (s *Session) pollsLowFences() bool {
	return lowFencePollOn.Load() && s.d.sched.LowClassPoll() > 0 && s.d.sched.TenantClass(s.tenant.name) == sched.ClassLow
}

// pollLowFence waits for a fence's event by querying it: at once, then
// after three quarters of the session's recent fence waits (at least the
// low class's poll period, at most maxLowFenceFirst), then after naps that
// start at the poll period and double up to an eighth of those waits. A
// wait thus costs a few wake-ups and ends at most about an eighth of its
// length late, which a client with its next batch queued does not notice.
func (s *Session) pollLowFence(ev backend.Event) error {
	period := s.d.sched.LowClassPoll()
	expect := time.Duration(s.fenceExpect.Load())
	began := time.Now()
	err := pollPaced(ev, min(max(expect*3/4, period), maxLowFenceFirst), period, max(expect/8, period))
	// A moving average; two waits ending at once may lose one's update.
	s.fenceExpect.Store(int64(expect + (time.Since(began)-expect)/4))
	return err
}

// maxLowFenceFirst bounds the first nap, so a wrong estimate costs little.
const maxLowFenceFirst = 5 * time.Millisecond

// pollPaced queries ev at once, then after first, then after naps from
// period doubling up to maxNap, until it completes or fails.
func pollPaced(ev backend.Event, first, period, maxNap time.Duration) error {
	for nap := time.Duration(0); ; {
		done, err := ev.Query()
		if err != nil || done {
			return err
		}
		switch {
		case nap == 0:
			pacedSleep(first)
			nap = period
		default:
			pacedSleep(nap)
			nap = min(2*nap, maxNap)
		}
	}
}

// pacedSleep is time.Sleep; tests see the naps pollPaced takes.
var pacedSleep = time.Sleep
