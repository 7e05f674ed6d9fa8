package client

import (
	"context"
	"fmt"
	"os"
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

// ClientCompletionEnv, set to "1", has a high-class session wait for its
// work on a completion page. It is off by default: on the H100
// (bench/sched/completion.sh, bench/RESULTS.md session 17) it lowered the
// service's P50 by 1-5 µs in every round, but its P99 under load in only 2
// of 4.
const ClientCompletionEnv = "GPUOS_SYNC_CLIENT"

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
}

// openCompletion asks for the session's completion page. Unsupported (the
// session is not of the high class, or the device cannot share the page)
// leaves synchronizes to the driver.
func (s *Session) openCompletion(ctx context.Context) (*completion, error) {
	if os.Getenv(ClientCompletionEnv) != "1" {
		return nil, v1.Errorf(v1.CodeUnsupported, "$%s is not 1", ClientCompletionEnv)
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
	return c, nil
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
		waited := time.Since(start)
		if waited >= c.poll {
			return false
		}
		if waited >= completionSpin {
			select {
			case <-done:
				return false // the connection ended: the driver says why
			default:
			}
			ring.Yield()
		}
	}
	return !c.view.Faulted()
}

// synchronize waits for the session's work (on stream, 0: all of it) on the
// completion page if the session has one, else, or if the page cannot tell,
// in the driver.
func (s *Session) synchronize(ctx context.Context, stream uint64) error {
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

// ClientCompletion reports whether the session's synchronizes wait for its
// work on a completion page, watched by this process, rather than in the
// driver: true for a high-class session on rings, with
// $GPUOS_SYNC_CLIENT=1, whose device can share one.
func (s *Session) ClientCompletion() bool { return s.completionPage() != nil }
