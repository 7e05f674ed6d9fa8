package sched

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

func TestLowPollFirst(t *testing.T) {
	period := 20 * time.Microsecond
	ms := int64(time.Millisecond)
	for _, tt := range []struct {
		cost   int64
		expect time.Duration
		want   time.Duration
	}{
		{0, 0, period}, // no estimate: every period
		{int64(30 * time.Microsecond), 0, period}, // half is under a period
		{ms, 0, 500 * time.Microsecond},
		{ms, 4 * time.Millisecond, 3 * time.Millisecond}, // waits take longer than the charge
		{4 * ms, time.Millisecond, 2 * time.Millisecond},
		{int64(time.Hour), 0, maxLowPollFirst}, // a wrong estimate costs little
		{0, time.Hour, maxLowPollFirst},
	} {
		if got := LowPollFirst(tt.cost, tt.expect, period); got != tt.want {
			t.Errorf("LowPollFirst(%v, %v, %v) = %v, want %v", time.Duration(tt.cost), tt.expect, period, got, tt.want)
		}
	}
}

// doneAfter is an event that completes on its n-th query, or fails there
// with err.
type doneAfter struct {
	n, queries int
	err        error
}

func (e *doneAfter) Query() (bool, error) {
	e.queries++
	if e.queries < e.n {
		return false, nil
	}
	return e.err == nil, e.err
}
func (e *doneAfter) Synchronize() error                           { return nil }
func (e *doneAfter) Elapsed(backend.Event) (time.Duration, error) { return 0, nil }
func (e *doneAfter) Destroy() error                               { return nil }

// TestPollEventPaces: PollEvent looks at once, then after first, then after
// naps from period doubling up to maxNap (every period when maxNap is not
// longer, as the scheduler's waiters ask), and stops at the look that finds
// the event complete or failed, or once its context ends.
func TestPollEventPaces(t *testing.T) {
	const us = time.Microsecond
	var naps []time.Duration
	sleep = func(d time.Duration) { naps = append(naps, d) }
	t.Cleanup(func() { sleep = time.Sleep })
	failed := errors.New("the work failed")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name                  string
		n                     int
		err                   error
		ctx                   context.Context
		first, period, maxNap time.Duration
		want                  []time.Duration
		wantErr               error
	}{
		{"complete at once", 1, nil, nil, 500 * us, 20 * us, 20 * us, nil, nil},
		{"at the second look", 2, nil, nil, 500 * us, 20 * us, 20 * us, []time.Duration{500 * us}, nil},
		{"every period", 4, nil, nil, 500 * us, 20 * us, 20 * us, []time.Duration{500 * us, 20 * us, 20 * us}, nil},
		{"doubling to the cap", 7, nil, nil, 300 * us, 20 * us, 100 * us, []time.Duration{300 * us, 20 * us, 40 * us, 80 * us, 100 * us, 100 * us}, nil},
		{"a first nap of one period doubles too", 4, nil, nil, 20 * us, 20 * us, 1000 * us, []time.Duration{20 * us, 20 * us, 40 * us}, nil},
		{"failed", 3, failed, nil, 300 * us, 20 * us, 100 * us, []time.Duration{300 * us, 20 * us}, failed},
		{"called off", 3, nil, cancelled, 300 * us, 20 * us, 100 * us, nil, context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			naps = nil
			ev := &doneAfter{n: tt.n, err: tt.err}
			if err := PollEvent(tt.ctx, ev, tt.first, tt.period, tt.maxNap); !errors.Is(err, tt.wantErr) {
				t.Fatalf("PollEvent = %v, want %v", err, tt.wantErr)
			}
			if tt.ctx != nil {
				if ev.queries != 1 || len(naps) != 0 {
					t.Errorf("called off: %d looks, naps %v; want one look and no nap", ev.queries, naps)
				}
				return
			}
			if ev.queries != tt.n || !slices.Equal(naps, tt.want) {
				t.Errorf("%d looks, naps %v; want %d looks, naps %v", ev.queries, naps, tt.n, tt.want)
			}
		})
	}
}
