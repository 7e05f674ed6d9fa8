package sched

import (
	"errors"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// Fence-ended points. Each command of a high-class tenant is tracked: the
// scheduler records a completion event after it, with the service's serving
// goroutine between its cuLaunchKernel and its synchronize (a driver call
// and, under the best-effort load, the driver's locks, which the
// dispatcher's launches hold too). A submitter that polls fences already
// enqueues one right behind its launch, on the same stream, to answer the
// synchronize: it sets Command.EndFence, and a point that would take no
// timing from its end — a high-class point without a start event, charged
// at most the tenant's per-command average (highStartEvery) — ends at that
// fence instead of an event of its own. One point in highStartEvery still
// gets both events and keeps the average measured.
//
// Only points their queue owns (SetOwnCompletions) end so: the submitter
// reaps them by reading the fence's word, with no driver call. Handed to a
// waiter (fenceEnd.Synchronize), such a point is polled, the stream's own
// state (its sticky error, or all its work done) settling what the fence
// cannot: a fence of a failed context or a destroyed stream is never seen
// reached.

// errUntimedEnd is a fence end's Elapsed: a fence has no timestamp.
var errUntimedEnd = errors.New("sched: a fence end has no timestamp")

// fenceEnd is a point's end that is its command's fence: a backend.Event to
// the code that completes points, never recorded, pooled, or made a chain's
// latest end.
type fenceEnd struct {
	f  backend.Fence
	st backend.Stream
}

func (e *fenceEnd) Query() (bool, error) { return e.f.Reached(), nil }

// Synchronize polls the fence, then the stream, sleeping between looks from
// fenceEndNapFirst, twice as long each time up to fenceEndNapMax.
func (e *fenceEnd) Synchronize() error {
	for nap := fenceEndNapFirst; ; nap = min(2*nap, fenceEndNapMax) {
		if e.f.Reached() {
			return nil
		}
		done, err := e.st.Query()
		if err != nil || done {
			return err
		}
		sleep(nap)
	}
}

func (e *fenceEnd) Elapsed(backend.Event) (time.Duration, error) { return 0, errUntimedEnd }
func (e *fenceEnd) Destroy() error                               { return nil }

const (
	fenceEndNapFirst = 10 * time.Microsecond
	fenceEndNapMax   = time.Millisecond
)

func isFenceEnd(ev backend.Event) bool {
	_, ok := ev.(*fenceEnd)
	return ok
}
