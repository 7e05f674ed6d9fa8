package driver

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/sched"
	"github.com/gpuos/gpuos/internal/wire"
)

// SyncFenceEnv, set to "0", makes a high-class session's synchronizing calls
// block in the driver's stream synchronize, as every other session's do,
// instead of polling fences: kept for comparing the two on a GPU.
const SyncFenceEnv = "GPUOS_SYNC_FENCE"

// fencePoll is how long a session of tenant t polls the fences of its
// synchronizing calls before it blocks in the driver instead (0: it does not
// poll). A high-class session polls as long as its rings do: its serving
// thread is polling anyway. Under other tenants' load, cuStreamSynchronize
// on the service's stream returned late (bench/RESULTS.md, run 41: issued ->
// synchronized p99 34 µs alone, 47.5 µs loaded, with the GPU's own part
// unchanged, run 22); a fence is read from host memory, with no driver call
// and no driver lock.
func (d *Driver) fencePoll(t *tenantState) time.Duration {
	if os.Getenv(SyncFenceEnv) == "0" || d.sched.TenantClass(t.name) != sched.ClassHigh {
		return 0
	}
	return HighClassSpin
}

// PacedFenceEnv, set to "1", makes the synchronizing calls of sessions that
// do not poll fences (every class but the high) wait by fences too, sleeping
// between looks (pollFencesPaced) instead of blocking in the driver's stream
// synchronize. An experiment, off: it was to spare the Go runtime's monitor
// thread the wake-ups a long driver call causes, but on the H100 (session
// 12, run 70) the wake-ups and interrupts under the best-effort load stayed
// as they were (the driver's own threads parking and waking make most of
// them), and the service's tail moved within the noise.
const PacedFenceEnv = "GPUOS_SYNC_FENCE_PACED"

// pacedFencesOn is PacedFenceEnv, read once; tests set it while sessions
// run, hence atomic.
var pacedFencesOn = func() *atomic.Bool {
	var on atomic.Bool
	on.Store(os.Getenv(PacedFenceEnv) == "1")
	return &on
}()

func pacedFences() bool { return pacedFencesOn.Load() }

// Paced fence polling: the first look after pacedFirst, then twice as long
// each time up to pacedMax; after pacedLimit the stream synchronize.
const (
	pacedFirst = 50 * time.Microsecond
	pacedMax   = time.Millisecond
	pacedLimit = time.Second
)

// OwnCompletionsEnv, set to "0", leaves a fence-polling session's completions
// to the scheduler's waiters, as every other session's are (for comparing the
// two on a GPU).
const OwnCompletionsEnv = "GPUOS_SYNC_OWN"

// ownCompletions reports whether a session that polls fences completes its
// own tracked commands (sched.Queue.SetOwnCompletions): having seen its
// fences reached, its serving goroutine completes them after the answer
// (reap), instead of a waiter goroutine woken per request and blocked in the
// driver while the kernel runs.
func ownCompletions() bool { return os.Getenv(OwnCompletionsEnv) != "0" }

// DeferKickEnv, set to "0", makes a fence-polling session's submissions wake
// the scheduler's background goroutine at once, as other sessions' do,
// instead of leaving the wake-up owed until the session's requests are
// answered (sched.Queue.SetDeferredKicks; for comparing the two on a GPU).
const DeferKickEnv = "GPUOS_SCHED_DEFER_KICK"

// deferKicks reports whether a session that polls fences defers the
// background goroutine's wake-ups its submissions owe (payKick).
func deferKicks() bool { return os.Getenv(DeferKickEnv) != "0" }

// payKick wakes the scheduler's background goroutine if a submission of the
// session left it owed, once no request of the session waits to be served:
// after the service's synchronize is answered, not between its launch and
// its synchronize.
func (s *Session) payKick() {
	if !s.queue.KickOwed() {
		return
	}
	if c := s.hot.conn; c != nil && c.Pending() {
		return
	}
	s.queue.Kick()
}

// FenceEndEnv, set to "0", makes the scheduler record a completion event
// after each of a fence-polling session's launches, as after every other
// session's, instead of ending those it takes no timing from at the fence
// enqueued behind the launch (sched.Command.EndFence; for comparing the two
// on a GPU).
const FenceEndEnv = "GPUOS_SCHED_FENCE_END"

var fenceEndOn = func() *atomic.Bool {
	var on atomic.Bool
	on.Store(os.Getenv(FenceEndEnv) != "0")
	return &on
}()

// PrefenceEnv, set to "0", leaves a fence-polling session's fences to its
// synchronizing calls (for comparing the two on a GPU).
const PrefenceEnv = "GPUOS_SYNC_PREFENCE"

var prefenceOn = func() *atomic.Bool {
	var on atomic.Bool
	on.Store(os.Getenv(PrefenceEnv) != "0")
	return &on
}()

// LaunchFenceEnv, set to "0", leaves the fence of a fence-polling session's
// launch to after the answer (prefence) or to its synchronize, behind the
// scheduler's completion event (for comparing the two on a GPU).
const LaunchFenceEnv = "GPUOS_SYNC_LAUNCHFENCE"

var launchFenceOn = func() *atomic.Bool {
	var on atomic.Bool
	on.Store(os.Getenv(LaunchFenceEnv) != "0")
	return &on
}()

// fenceLaunch reports whether the launch req carries gets a fence enqueued
// right behind it, in its issue, ahead of the scheduler's completion event
// (a marker: backend.MarkerRecorder): the session polls fences, and the
// request behind it is a synchronize, or none waits yet. The synchronize
// then polls that fence, which the GPU writes as soon as the kernel ends
// instead of after the event's timestamp (bench/RESULTS.md, session 13:
// 1.5-2.3 µs alone, 3.4-3.8 µs under load). A launch with more work queued
// behind it gets none: that work would overtake it.
func (s *Session) fenceLaunch(req *wire.Request) bool {
	if s.fencePoll.Load() == 0 || !launchFenceOn.Load() {
		return false
	}
	if !req.More {
		return true
	}
	next, ok := req.NextType()
	return ok && (next == v1.TypeSynchronize || next == v1.TypeSynchronizeFences)
}

// answered runs after each request of the session has been answered
// (wire.Server.Answered), off the client's path.
func (s *Session) answered() {
	s.reap()
	s.prefence()
	s.payKick()
}

// prefence enqueues a fence on each stream a fence-polling session issued
// work to since its last synchronizing call, once its latest request that
// submitted work has been answered and all the session's work is issued:
// the synchronize that usually follows a service's launch then finds the
// fence enqueued (awaitStreams, backend.LatestFencer) instead of enqueueing
// one itself, with the driver call and the GPU's processing of the write on
// its path, which matter when the synchronize comes after the kernel ended.
// Not while another request waits to be served. A fence that more work on
// the stream has overtaken is not used; the synchronize enqueues its own.
// Failures are left for the synchronize to meet and report.
func (s *Session) prefence() {
	if !s.prefenceDue.Load() || s.fencePoll.Load() == 0 || !prefenceOn.Load() {
		return
	}
	if c := s.hot.conn; c != nil && c.Pending() {
		// The next request is there: serve it first. If it is the
		// synchronize, it fences at once; if more work, the fence would be
		// overtaken.
		return
	}
	s.prefenceDue.Store(false)
	streams, ok := s.queue.IssuedStreams(s.prefenceStreams[:0])
	defer func() {
		clear(streams)
		s.prefenceStreams = streams[:0]
	}()
	if !ok {
		return // the synchronize waits for its issue, then fences
	}
	for _, st := range streams {
		if _, ok := st.(backend.LatestFencer); ok {
			// A watching client's launches left without a fence of their
			// own (a launch on another stream came right behind) get this
			// one: the launches issued before it is enqueued.
			w := s.issuedOn(st)
			if f, _, err := streamFence(st); err == nil { // only such a fence can be found later
				s.publish(w, f)
			}
		}
	}
}

// streamFence returns a fence behind the work enqueued on st: its latest if
// that still marks all of it (early), else a new one.
func streamFence(st backend.Stream) (f backend.Fence, early bool, err error) {
	if lf, ok := st.(backend.LatestFencer); ok {
		if f, ok := lf.LatestFence(); ok {
			return f, true, nil
		}
	}
	fr, ok := st.(backend.Fencer)
	if !ok {
		return nil, false, backend.ErrUnsupported
	}
	f, err = fr.Fence()
	return f, false, err
}

// reap completes what the session's latest synchronizing call saw complete
// (after the answer, off the client's path).
func (s *Session) reap() {
	if s.reapDue.Load() {
		s.reapDue.Store(false)
		s.queue.Reap()
	}
}

// How a synchronizing call waited for its streams (the latency log's
// sync rows say it).
const (
	waitedSync       = iota // the driver's stream synchronize
	waitedFence             // fences polled
	waitedFenceLong         // fences polled, then the synchronize: longer than fencePoll
	waitedFenceEarly        // fences polled, each enqueued before the synchronize came (prefence)
	waitedClient            // the client polls them (SynchronizeFences answered with targets)
)

// FenceSpinEnv sets how long a fence poller spins before it yields the CPU
// between polls (a duration; default DefaultFenceSpin).
const FenceSpinEnv = "GPUOS_SYNC_FENCE_SPIN"

// DefaultFenceSpin is how long a fence poller polls without yielding the
// CPU: a service's kernel of tens of µs is then seen as soon as it ends. A
// poller that yields from the start gives the CPU to any thread runnable on
// it for as long as the OS scheduler lets that one run. With the spin, the
// service's issued -> synchronized p99 under load was 25.6-27.1 µs against
// 28.5-30.2 without (bench/RESULTS.md, run 57).
const DefaultFenceSpin = 100 * time.Microsecond

var fenceSpin = sync.OnceValue(func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(FenceSpinEnv)); err == nil && d >= 0 {
		return d
	}
	return DefaultFenceSpin
})

// fenceQuery is how often a fence poller asks the stream whether its work
// failed (then the fence is never reached).
const fenceQuery = 100 * time.Microsecond

// awaitStreams returns once the work issued on streams has completed, or
// with the first error a stream reports. A session that polls fences
// (fencePoll) enqueues one on each stream and polls them for up to that
// long, then synchronizes what is left; otherwise, or if a stream cannot
// take a fence, it synchronizes each stream.
func (s *Session) awaitStreams(streams []backend.Stream) (how int, err error) {
	poll := time.Duration(s.fencePoll.Load())
	paced := poll == 0 && pacedFences()
	if (poll > 0 || paced) && len(streams) > 0 {
		fences := s.fences[:0]
		defer func() {
			clear(fences)
			s.fences = fences[:0]
		}()
		early := 0
		for _, st := range streams {
			f, e, err := streamFence(st)
			if err != nil {
				break // synchronize instead, which reports a lost context
			}
			fences = append(fences, f)
			if e {
				early++
			}
		}
		if len(fences) == len(streams) && paced {
			return pollFencesPaced(streams, fences)
		}
		if len(fences) == len(streams) {
			how, err := s.pollFences(streams, fences, poll)
			if err == nil {
				s.reapDue.Store(true)
			}
			if how == waitedFence && early == len(streams) {
				how = waitedFenceEarly
			}
			return how, err
		}
	}
	return waitedSync, synchronize(streams)
}

// synchronize blocks in the driver until each stream's work completed, and
// returns the first error one reports.
func synchronize(streams []backend.Stream) error {
	for _, st := range streams {
		if err := st.Synchronize(); err != nil {
			return err
		}
	}
	return nil
}

func (s *Session) pollFences(streams []backend.Stream, fences []backend.Fence, poll time.Duration) (int, error) {
	start := time.Now()
	query := fenceQuery
	for i := 0; i < len(fences); {
		if fences[i].Reached() {
			i++
			continue
		}
		waited := time.Since(start)
		if waited >= poll {
			return waitedFenceLong, synchronize(streams[i:])
		}
		if waited >= query {
			// Failed work: the fence is never reached, and Query says why.
			query += fenceQuery
			if _, err := streams[i].Query(); err != nil {
				return waitedFence, err
			}
		}
		if waited >= s.d.polling.fenceSpin {
			s.d.polling.yield()
		}
	}
	return waitedFence, nil
}

// polling is how the driver's pollers (of fences, of rings, the
// scheduler's) wait between looks.
type polling struct {
	fenceSpin time.Duration // how long a fence poller looks before it yields
	yield     func()        // what a poller calls between looks
	// onHost: the device's work runs on this process's goroutines
	// (backend.HostExecutor), and yield lets them have the poller's P.
	onHost bool
}

// pollingFor is how the driver's pollers (and the scheduler's poll loops)
// wait for dev: on a GPU, a fence poller spins for fenceSpin, and pollers
// yield the CPU but keep their goroutine's P (ring.Yield: measured better
// for the service on the H100, bench/RESULTS.md, session 9) unless ps says
// the Ps are short (pollerPs.yield). On a device whose work runs on the
// host's CPUs they yield from the start, the P too: a poller that keeps it
// keeps the very work it waits for from running (bench/RESULTS.md, session
// 17).
func pollingFor(dev backend.Device, ps *pollerPs) polling {
	if backend.ExecutesOnHost(dev) {
		return polling{yield: yieldProcess, onHost: true}
	}
	return polling{fenceSpin: fenceSpin(), yield: ps.yield}
}

// yieldProcess lets this process's other goroutines, then other threads,
// have the CPU.
func yieldProcess() {
	runtime.Gosched()
	ring.Yield()
}

// pollFencesPaced waits for fences by looking at them less and less often
// (PacedFenceEnv), asking each stream whether its work failed at each look.
func pollFencesPaced(streams []backend.Stream, fences []backend.Fence) (int, error) {
	start := time.Now()
	nap := pacedFirst
	for i := 0; i < len(fences); {
		if fences[i].Reached() {
			i++
			continue
		}
		if _, err := streams[i].Query(); err != nil {
			return waitedFence, err // failed work: the fence is never reached
		}
		if time.Since(start) >= pacedLimit {
			return waitedFenceLong, synchronize(streams[i:])
		}
		time.Sleep(nap)
		nap = min(2*nap, pacedMax)
	}
	return waitedFence, nil
}
