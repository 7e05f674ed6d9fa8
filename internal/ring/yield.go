//go:build linux

package ring

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// YieldEnv, set to "0", makes the poll loops of this process spin without
// giving up the CPU (osYield does nothing): for comparing the two on a GPU
// host, where a sched_yield to another runnable thread on the poller's CPU
// can keep the poller off it for that thread's whole time slice.
const YieldEnv = "GPUOS_RING_YIELD"

var yieldOff = os.Getenv(YieldEnv) == "0"

// osYield gives up the CPU to any other runnable thread (sched_yield); it
// returns at once when there is none. It does not block, so it needs no
// entersyscall bookkeeping. Yields that keep the poller away long turn
// yielding off for a while (yieldGate).
func osYield() {
	if !yieldOff {
		processYields.yield()
	}
}

// Yield is osYield for other packages' poll loops: unlike runtime.Gosched,
// which lets any other runnable goroutine have the goroutine's P first, it
// keeps the goroutine where it is and lets the kernel run another thread on
// this CPU if one is waiting.
func Yield() { osYield() }

// LongYields is how many of this process's yields kept their poller off
// its CPU longer than LongYield; each turned yielding off for a while.
func LongYields() uint64 { return processYields.long.Load() }

// Yield back-off. A poller that yields beside a CPU hog of low weight (a
// nice 19 or SCHED_IDLE batch job on its CPU) hands it a whole time slice
// each time: the kernel's fair scheduler runs the hog until its slice ends,
// 3-7 ms, where a poller that keeps spinning loses the CPU only for the
// hog's small share (measured on a 6.18 kernel: beside such a hog a
// sched_yield loop got almost none of its CPU, 250 yields a second each
// gone over 250 µs; a plain spin lost one 4 ms slice a second; on the
// H100's host, SCHED_IDLE spinners on every CPU put the service's P90 at
// 3.1 ms, bench/RESULTS.md session 22). So a yield that kept its poller
// away longer than LongYield makes every poll loop of the process spin
// without yielding for yieldBackoff, doubled while long yields come back
// within a back-off of yielding resuming, up to maxYieldBackoff.
const (
	yieldBackoff    = time.Second
	maxYieldBackoff = 32 * time.Second
)

var processYields = yieldGate{now: monotonic, sysYield: schedYield}

var epoch = time.Now()

func monotonic() time.Duration { return time.Since(epoch) }

func schedYield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// yieldGate yields unless a recent yield took too long.
type yieldGate struct {
	now      func() time.Duration
	sysYield func()
	// until is when yielding resumes, on now's clock (ns).
	until atomic.Int64
	long  atomic.Uint64
	mu    sync.Mutex
	// backoff is the latest back-off (guarded by mu).
	backoff time.Duration
}

func (g *yieldGate) yield() {
	t := g.now()
	if int64(t) < g.until.Load() {
		return
	}
	g.sysYield()
	if back := g.now(); back-t > LongYield {
		g.tookLong(back)
	}
}

// tookLong backs off from a yield that ended at t. Pollers that come back
// from long yields together back off once.
func (g *yieldGate) tookLong(t time.Duration) {
	g.long.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	resumed := time.Duration(g.until.Load())
	switch {
	case t < resumed: // another poller has backed off meanwhile
		return
	case g.backoff > 0 && t-resumed < g.backoff: // the hog is still there
		g.backoff = min(2*g.backoff, maxYieldBackoff)
	default:
		g.backoff = yieldBackoff
	}
	g.until.Store(int64(t + g.backoff))
}
