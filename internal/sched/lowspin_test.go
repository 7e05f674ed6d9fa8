package sched

import (
	"errors"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// flagFence is reached once set.
type flagFence struct{ reached bool }

func (f *flagFence) Reached() bool { return f.reached }

// queryEvent answers Query with done and err, counting the calls.
type queryEvent struct {
	done    bool
	err     error
	queries int
}

func (e *queryEvent) Query() (bool, error) {
	e.queries++
	return e.done, e.err
}
func (e *queryEvent) Synchronize() error                           { return e.err }
func (e *queryEvent) Elapsed(backend.Event) (time.Duration, error) { return 0, nil }
func (e *queryEvent) Destroy() error                               { return nil }

// TestSpinFence: a spinning waiter yields until its fence is reached, then
// asks the backend once, for an error; a fence never reached (the work
// failed) is settled by the backend's answer within lowSpinCheck. It never
// sleeps.
func TestSpinFence(t *testing.T) {
	t.Cleanup(func() { sleep = time.Sleep })
	sleep = func(d time.Duration) { t.Errorf("slept %v", d) }
	boom := errors.New("boom")
	for _, tt := range []struct {
		name        string
		reachAfter  int // yields before the fence is reached (-1: never)
		ev          queryEvent
		wantErr     error
		wantQueries int // at most
	}{
		{"reached", 5, queryEvent{done: true}, nil, 1},
		{"reached, the work failed", 5, queryEvent{err: boom}, boom, 1},
		{"never reached, the work failed", -1, queryEvent{err: boom}, boom, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &flagFence{}
			yields := 0
			yield := func() {
				yields++
				if yields == tt.reachAfter {
					f.reached = true
				}
			}
			began := time.Now()
			err := spinFence(&tt.ev, f, yield)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("spinFence = %v, want %v", err, tt.wantErr)
			}
			if tt.ev.queries < 1 || tt.ev.queries > tt.wantQueries {
				t.Errorf("%d queries, want 1 to %d", tt.ev.queries, tt.wantQueries)
			}
			if tt.reachAfter > 0 && yields != tt.reachAfter {
				t.Errorf("%d yields, want %d (until the fence was reached)", yields, tt.reachAfter)
			}
			if tt.reachAfter < 0 && time.Since(began) < lowSpinCheck {
				t.Errorf("asked the backend after %v, want after %v of spinning", time.Since(began), lowSpinCheck)
			}
		})
	}
}
