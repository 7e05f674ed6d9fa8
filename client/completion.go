package client

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ring"
)

// Completion on the client's side (api/v1 OpenCompletion): a latency-critical
// session's synchronize waits for its work by watching words the device
// writes into a page it shares, read-only, with the driver; the driver only
// says which words, once the work is issued. A violation the guard
// recorded, or words not reached in the time the driver advises, send the
// synchronize to the driver instead, which waits and reports what failed.

// ClientCompletionEnv chooses how a high-class session on rings waits for
// its work. Unset or "watch" (the default), on a completion page: it
// counts its launches and, where it can, waits for them with no request at
// all (api/v1 WatchLaunches), else asks the driver. "1": on the page too,
// but asking the driver for the words to watch at each synchronize
// (SynchronizeFences), as before session 29. "0": in the driver. On the
// H100 watching took 6-14 µs off the service's P99 alone and loaded on a
// quiet host, and 20-39 µs off its requests' median in a noisy host's slow
// episodes; asking moved its P99 either way (bench/RESULTS.md, sessions
// 17, 27, 28 and 29).
const ClientCompletionEnv = "GPUOS_SYNC_CLIENT"

// Values of ClientCompletionEnv.
const (
	completionAsk   = "1"
	completionWatch = "watch"
)

// completionPoll is the default of how long a synchronize watches its words
// before it asks the driver to wait, if the driver advises none.
const completionPoll = 2 * time.Millisecond

// completionSpin is how long a synchronize polls its words without yielding
// the CPU, as the driver's fence poller does (internal/driver
// DefaultFenceSpin).
const completionSpin = 100 * time.Microsecond

// completion is a session's completion page.
type completion struct {
	view *ring.Completion
	poll time.Duration
	// ledger counts the session's requests for launch watching; nil: the
	// driver does not publish its launches.
	ledger *launchLedger
	// watched and asked count a watching session's synchronizes: on the
	// page alone, and in the driver.
	watched, asked atomic.Uint64
}

// launchLedger counts the requests a watching session writes on its
// submission ring, in the ring's order (wire.Client.OnRingWrite): its
// Launch requests per stream since it sent WatchLaunches, which the driver
// counts alike, and every other request.
type launchLedger struct {
	mu       sync.Mutex
	counting bool              // WatchLaunches is written: the driver counts from there
	launches map[uint64]uint64 // Launch requests per stream handle
	others   uint64            // other requests
	// What the session's last synchronize in the driver left: the count of
	// other requests with it included, and the page's count of calls
	// before it. A synchronize may wait on the page alone only while both
	// still hold: nothing but launches since, no error to hear of.
	synced uint64
	calls  uint32
}

// written counts m, a request just written on the ring.
func (l *launchLedger) written(m v1.Message) {
	l.mu.Lock()
	switch m := m.(type) {
	case *v1.Launch:
		if l.counting {
			l.launches[m.Stream]++
			break
		}
		l.others++ // sent before the driver counted: only the driver can wait for it
	case *v1.WatchLaunches:
		l.counting = true
		l.others++
	default:
		l.others++
	}
	l.mu.Unlock()
}

// watchedLaunch is a stream's launch count a synchronize waits for.
type watchedLaunch struct {
	stream, launches uint64
}

// openCompletion asks for the session's completion page. Unsupported (the
// session is not of the high class, or the device cannot share the page)
// leaves synchronizes to the driver.
func (s *Session) openCompletion(ctx context.Context) (*completion, error) {
	mode := os.Getenv(ClientCompletionEnv)
	switch mode {
	case "":
		mode = completionWatch
	case completionAsk, completionWatch:
	default:
		return nil, v1.Errorf(v1.CodeUnsupported, "$%s=%s", ClientCompletionEnv, mode)
	}
	var co v1.CompletionOpened
	fds, err := s.rpc.CallFDs(ctx, &v1.OpenCompletion{}, &co, nil)
	if err != nil {
		return nil, fmt.Errorf("open completion: %w", err)
	}
	fd, err := oneFD(fds, "open completion")
	if err != nil {
		return nil, err
	}
	if co.Bytes == 0 || co.Bytes > 1<<20 {
		closeFD(fd)
		return nil, v1.Errorf(v1.CodeMalformed, "open completion: a page of %d bytes", co.Bytes)
	}
	shm, err := ring.OpenReadOnly(fd, int(co.Bytes))
	if err != nil {
		return nil, fmt.Errorf("open completion: %w", err)
	}
	view, err := ring.NewCompletion(shm.Bytes(), int(co.Words), int(co.WordStride), int(co.FaultsOffset), int(co.FaultsBytes))
	if err != nil {
		shm.Close()
		return nil, v1.Errorf(v1.CodeMalformed, "open completion: %v", err)
	}
	poll := completionPoll
	if co.SpinNs > 0 && co.SpinNs <= uint64(time.Second) {
		poll = time.Duration(co.SpinNs)
	}
	c := &completion{view: view, poll: poll}
	go func() { // the page stays mapped until the connection ends
		<-s.rpc.Done()
		shm.Close()
	}()
	if mode == completionWatch && view.Watchable() {
		c.ledger = s.watchLaunches(ctx)
	}
	return c, nil
}

// watchLaunches asks the driver to publish the session's launches and
// returns the ledger that counts them, or nil if it will not (the session
// then asks for its fence words at each synchronize).
func (s *Session) watchLaunches(ctx context.Context) *launchLedger {
	// Nothing the driver did before counts: the first synchronize is the
	// driver's (synced cannot match).
	l := &launchLedger{launches: map[uint64]uint64{}, synced: ^uint64(0)}
	if !s.rpc.OnRingWrite(l.written) {
		return nil
	}
	if err := s.call(ctx, &v1.WatchLaunches{}, nil); err != nil {
		s.rpc.OnRingWrite(nil)
		return nil
	}
	return l
}

// wait watches the targets' words for up to c.poll and reports whether all
// were reached with the fault area still clear. A target naming a word the
// page does not have is never reached.
func (c *completion) wait(targets []v1.FenceTarget, done <-chan struct{}) bool {
	start := time.Now()
	for i := 0; i < len(targets); {
		if c.view.Reached(int(targets[i].Word), targets[i].Seq) {
			i++
			continue
		}
		if !c.keepWatching(start, done) {
			return false
		}
	}
	return !c.view.Faulted()
}

// keepWatching is a page wait's step between looks: false once it has
// watched for the driver's time (since start) or the connection ended (the
// driver says why); else it spins for a while, then yields the CPU.
func (c *completion) keepWatching(start time.Time, done <-chan struct{}) bool {
	waited := time.Since(start)
	if waited >= c.poll {
		return false
	}
	if waited >= completionSpin {
		select {
		case <-done:
			return false
		default:
		}
		ring.Yield()
	}
	return true
}

// watchWait waits on the page alone for every launch the session wrote, if
// nothing else was written since the last synchronize in the driver and the
// page has nothing to report, and reports whether it did.
func (c *completion) watchWait(done <-chan struct{}) bool {
	l := c.ledger
	var buf [4]watchedLaunch
	wait := buf[:0]
	l.mu.Lock()
	ok := l.others == l.synced
	calls := l.calls
	for st, n := range l.launches {
		wait = append(wait, watchedLaunch{stream: st, launches: n})
	}
	l.mu.Unlock()
	if !ok || !c.view.Watching() || c.view.Calls() != calls {
		return false
	}
	start := time.Now()
	for _, w := range wait {
		i := c.view.StreamWord(w.stream)
		if i < 0 {
			return false
		}
		for {
			if n, seq := c.view.Published(i); n >= w.launches && c.view.Reached(i, seq) {
				break
			}
			if c.view.Calls() != calls || !c.view.Watching() {
				return false // an error to hear of: the driver says it
			}
			if !c.keepWatching(start, done) {
				return false
			}
		}
	}
	return !c.view.Faulted() && c.view.Calls() == calls
}

// driverSynchronize is a watching session's Synchronize in the driver; once
// it succeeds, the page may be enough again.
func (s *Session) driverSynchronize(ctx context.Context, c *completion, stream uint64) error {
	l := c.ledger
	l.mu.Lock()
	before := l.others
	l.mu.Unlock()
	calls := c.view.Calls()
	if err := s.call(ctx, &v1.Synchronize{Stream: stream}, nil); err != nil {
		return err
	}
	l.mu.Lock()
	l.synced, l.calls = before+1, calls // if anything else was written meanwhile, the next one asks too
	l.mu.Unlock()
	return nil
}

// synchronize waits for the session's work (on stream, 0: all of it) on the
// completion page if the session has one, else, or if the page cannot tell,
// in the driver.
func (s *Session) synchronize(ctx context.Context, stream uint64) error {
	if c := s.completionPage(); c != nil && c.ledger != nil {
		if c.watchWait(s.rpc.Done()) {
			c.watched.Add(1)
			return nil
		}
		c.asked.Add(1)
		return s.driverSynchronize(ctx, c, stream)
	}
	if c := s.completionPage(); c != nil {
		var ft v1.FenceTargets
		if err := s.call(ctx, &v1.SynchronizeFences{Stream: stream}, &ft); err != nil {
			return err
		}
		if len(ft.Targets) == 0 || c.wait(ft.Targets, s.rpc.Done()) {
			return nil
		}
	}
	return s.call(ctx, &v1.Synchronize{Stream: stream}, nil)
}

// completionPage returns the session's completion page, or nil.
func (s *Session) completionPage() *completion {
	if s.hot == nil {
		return nil
	}
	return s.hot.completion
}

// WatchesLaunches reports whether the session's synchronizes wait for its
// launches on its completion page with no request, where they can: true
// for a session with ClientCompletion and $GPUOS_SYNC_CLIENT unset or
// watch, whose driver publishes its launches.
func (s *Session) WatchesLaunches() bool {
	c := s.completionPage()
	return c != nil && c.ledger != nil
}

// WatchCounts returns how many of a watching session's synchronizes waited
// on its completion page alone, and how many asked the driver (after other
// requests, an error to report, or words not reached in the page's time).
func (s *Session) WatchCounts() (watched, asked uint64) {
	c := s.completionPage()
	if c == nil {
		return 0, 0
	}
	return c.watched.Load(), c.asked.Load()
}

// ClientCompletion reports whether the session's synchronizes wait for its
// work on a completion page, watched by this process, rather than in the
// driver: true for a high-class session on rings whose device can share
// one, unless $GPUOS_SYNC_CLIENT=0.
func (s *Session) ClientCompletion() bool { return s.completionPage() != nil }
