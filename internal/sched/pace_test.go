package sched

import (
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
// the event complete or failed.
func TestPollEventPaces(t *testing.T) {
	const us = time.Microsecond
	var naps []time.Duration
	sleep = func(d time.Duration) { naps = append(naps, d) }
	t.Cleanup(func() { sleep = time.Sleep })
	failed := errors.New("the work failed")
	for _, tt := range []struct {
		name                  string
		n                     int
		err                   error
		first, period, maxNap time.Duration
		want                  []time.Duration
	}{
		{"complete at once", 1, nil, 500 * us, 20 * us, 20 * us, nil},
		{"at the second look", 2, nil, 500 * us, 20 * us, 20 * us, []time.Duration{500 * us}},
		{"every period", 4, nil, 500 * us, 20 * us, 20 * us, []time.Duration{500 * us, 20 * us, 20 * us}},
		{"doubling to the cap", 7, nil, 300 * us, 20 * us, 100 * us, []time.Duration{300 * us, 20 * us, 40 * us, 80 * us, 100 * us, 100 * us}},
		{"a first nap of one period doubles too", 4, nil, 20 * us, 20 * us, 1000 * us, []time.Duration{20 * us, 20 * us, 40 * us}},
		{"failed", 3, failed, 300 * us, 20 * us, 100 * us, []time.Duration{300 * us, 20 * us}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			naps = nil
			ev := &doneAfter{n: tt.n, err: tt.err}
			if err := PollEvent(ev, tt.first, tt.period, tt.maxNap); !errors.Is(err, tt.err) {
				t.Fatalf("PollEvent = %v, want %v", err, tt.err)
			}
			if ev.queries != tt.n || !slices.Equal(naps, tt.want) {
				t.Errorf("%d looks, naps %v; want %d looks, naps %v", ev.queries, naps, tt.n, tt.want)
			}
		})
	}
}
