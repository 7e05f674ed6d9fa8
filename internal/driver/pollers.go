package driver

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuos/gpuos/internal/ring"
)

// freePs is how many of the Go runtime's Ps (GOMAXPROCS) the daemon keeps
// for its other goroutines (the other tenants' serving, the scheduler's
// dispatcher and completion waiters) beside the pollers of its high-class
// sessions. On a GPU a poller yields the CPU between looks but keeps its P
// (ring.Yield), and a high-class session's serving goroutine polls its ring
// for HighClassSpin after each request (without pause for a service that
// submits every millisecond), its hedge's helper beside it. On the H100,
// with the daemon at GOMAXPROCS=2, the best-effort tenants then got 0.11 of
// their throughput alone; at GOMAXPROCS=4, two Ps left, 1.04
// (bench/RESULTS.md, session 33).
const freePs = 2

// pollerPs counts the Ps that the daemon's high-class pollers may hold (and
// the scheduler's spinner, sched.Options.LowClassSpin) and says when they
// are too many: the pollers then hand their P to the other
// goroutines at each yield (runtime.Gosched), as they do on a device whose
// work runs on the host's CPUs. That costs the service some of its tail
// (bench/RESULTS.md, session 9), so it is done only then. With it, at
// GOMAXPROCS=2 on the H100, the best effort got 1.02 of its throughput
// alone, and the service's P99 alone was 200 µs against 137 at the
// default's GOMAXPROCS (session 34).
type pollerPs struct {
	share atomic.Bool // read at every yield

	mu   sync.Mutex
	held int
	// procs returns GOMAXPROCS (nil: runtime.GOMAXPROCS), read when the
	// count changes: it takes the Go scheduler's lock, too dear for every
	// yield, and changes rarely.
	procs func() int
}

// add counts n more Ps held (n < 0: fewer) and decides again whether the
// pollers share theirs.
func (p *pollerPs) add(n int) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held += n
	procs := 0
	if p.procs != nil {
		procs = p.procs()
	} else {
		procs = runtime.GOMAXPROCS(0)
	}
	p.share.Store(pollersShare(p.held, procs))
}

// pollersShare reports whether pollers holding held of procs Ps must hand
// them over at each yield: when fewer than freePs would be left.
func pollersShare(held, procs int) bool { return held > 0 && procs-held < freePs }

// yield is what the driver's pollers on a GPU call between looks (rings,
// fences): ring.Yield, after runtime.Gosched while the Ps are short.
func (p *pollerPs) yield() {
	if p.share.Load() {
		runtime.Gosched()
	}
	ring.Yield()
}

// highClassPollerPs is how many Ps a session may hold while it is active
// whose rings poll for spin (Driver.ringSpin: more than 0 for a high-class
// session only; the others poll for ring.DefaultSpin, microseconds) and whose
// hedge watches for hedge: its serving goroutine, and its hedge's helper.
func highClassPollerPs(spin, hedge time.Duration) int {
	if spin <= 0 {
		return 0
	}
	if hedge > 0 {
		return 2
	}
	return 1
}
