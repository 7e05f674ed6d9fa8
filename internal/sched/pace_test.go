package sched

import (
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
		if got := lowPollFirst(tt.cost, tt.expect, period); got != tt.want {
			t.Errorf("lowPollFirst(%v, %v, %v) = %v, want %v", time.Duration(tt.cost), tt.expect, period, got, tt.want)
		}
	}
}

// doneAfter is an event that completes on its n-th query.
type doneAfter struct{ n, queries int }

func (e *doneAfter) Query() (bool, error) {
	e.queries++
	return e.queries >= e.n, nil
}
func (e *doneAfter) Synchronize() error                           { return nil }
func (e *doneAfter) Elapsed(backend.Event) (time.Duration, error) { return 0, nil }
func (e *doneAfter) Destroy() error                               { return nil }

// TestPollEventPaces: pollEvent looks at once, then after first, then
// every period, and stops at the look that finds the event complete.
func TestPollEventPaces(t *testing.T) {
	var naps []time.Duration
	sleep = func(d time.Duration) { naps = append(naps, d) }
	t.Cleanup(func() { sleep = time.Sleep })
	first, period := 500*time.Microsecond, 20*time.Microsecond
	for _, tt := range []struct {
		n    int
		want []time.Duration
	}{
		{1, nil},
		{2, []time.Duration{first}},
		{4, []time.Duration{first, period, period}},
	} {
		naps = nil
		ev := &doneAfter{n: tt.n}
		if err := pollEvent(ev, first, period); err != nil {
			t.Fatal(err)
		}
		if ev.queries != tt.n || !slices.Equal(naps, tt.want) {
			t.Errorf("complete at look %d: %d looks, naps %v; want %d looks, naps %v", tt.n, ev.queries, naps, tt.n, tt.want)
		}
	}
}
