package driver

import (
	"context"
	"os"
	"sync/atomic"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/sched"
)

// LowFenceWaitEnv, set to "sync", makes a low-class session's fence waits
// (WaitFence) block in the backend's event synchronize, which on CUDA polls
// inside the driver. By default they query the fence's event with naps in
// between (pollLowFence), as the scheduler's own low-class waiters do: on
// the H100 that took the daemon's CPU under the standard best-effort load
// from 1.58-1.69 to 1.17-1.32, and under 5-ms kernels from 2.64 to 1.25, for
// 0.45% of the best-effort throughput and no change in the service's P99
// beyond the noise (bench/RESULTS.md session 24).
const LowFenceWaitEnv = "GPUOS_LOW_FENCE_WAIT"

// lowFencePollOn is LowFenceWaitEnv, read once; tests set it.
var lowFencePollOn = func() *atomic.Bool {
	var on atomic.Bool
	on.Store(lowFencesPoll(os.Getenv(LowFenceWaitEnv)))
	return &on
}()

// lowFencesPoll reports whether LowFenceWaitEnv's value v leaves the
// low-class fence waits polling: any value but "sync".
func lowFencesPoll(v string) bool { return v != "sync" }

// pollsLowFences reports whether the session's fence waits poll: paced
// waits are on, its tenant is of the low class, and that class's waiters
// poll (sched.Options.LowClassPoll). Every fence wait asks, a service's
// too, so it reads the class without the scheduler's lock (Queue.Class).
func (s *Session) pollsLowFences() bool {
	return lowFencePollOn.Load() && s.d.sched.LowClassPoll() > 0 && s.queue.Class() == sched.ClassLow
}

// pollLowFence waits for a fence's event by querying it (sched.PollEvent):
// at once, then after three quarters of the session's recent fence waits
// (sched.LowPollFirst: at least the low class's poll period, at most 5 ms),
// then after naps that start at the poll period and double up to an eighth
// of those waits, until it completes or fails, or ctx ends. A wait thus
// costs a few wake-ups and ends at most about an eighth of its length late,
// which a client with its next batch queued does not notice.
func (s *Session) pollLowFence(ctx context.Context, ev backend.Event) error {
	period := s.d.sched.LowClassPoll()
	expect := time.Duration(s.fenceExpect.Load())
	began := time.Now()
	err := sched.PollEvent(ctx, ev, sched.LowPollFirst(0, expect, period), period, max(expect/8, period))
	// A moving average; two waits ending at once may lose one's update.
	s.fenceExpect.Store(int64(expect + (time.Since(began)-expect)/4))
	return err
}

// spinsLowFences reports whether the session's fences get a fence word
// behind their event for the scheduler's spinner to watch
// (sched.Options.LowClassSpin): its fence waits poll, and the stream has
// fences.
func (s *Session) spinsLowFences(st backend.Stream) bool {
	if !s.d.opts.Sched.LowClassSpin || !s.pollsLowFences() {
		return false
	}
	_, ok := st.(backend.Fencer)
	return ok
}

// fenceSpinWatch is a watch of a low-class fence by the scheduler's
// spinner (sched.Scheduler.Watch): the fence's word once its record was
// issued, and its event every few milliseconds (failed work's word is never
// written). A fence has at most one (fenceObj.spinWatch).
type fenceSpinWatch struct {
	f    *fenceObj
	done chan struct{} // closed by Done
	err  error         // written before done is closed
}

func (w *fenceSpinWatch) Reached() (bool, error) {
	if issued, err := w.issued(); !issued || err != nil {
		return issued, err
	}
	return w.f.word != nil && w.f.word.Reached(), nil
}

func (w *fenceSpinWatch) Check() (bool, error) {
	if issued, err := w.issued(); !issued || err != nil {
		return issued, err
	}
	return w.f.ev.Query()
}

// issued reports whether the fence's record was issued, and its error if
// that failed (the watch is then done).
func (w *fenceSpinWatch) issued() (bool, error) {
	select {
	case <-w.f.issued:
		return true, w.f.issueErr()
	default:
		return false, nil
	}
}

func (w *fenceSpinWatch) Done(err error) {
	w.err = err
	close(w.done)
}

// spinFenceWait waits for f on the scheduler's spinner, if it watches the
// low class's fences now; ok is false if not.
func (s *Session) spinFenceWait(ctx context.Context, f *fenceObj) (ok bool, err error) {
	if !f.spin {
		return false, nil
	}
	w, ok := f.spinWatch(s.d.sched)
	if !ok {
		return false, nil
	}
	select {
	case <-w.done:
		return true, w.err
	case <-ctx.Done():
		return true, ctx.Err()
	}
}
