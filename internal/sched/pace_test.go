package sched

import (
	"slices"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

func TestLowPollFirst(t *testing.T) {
	period := 20 * time.Microsecond
	for _, tt := range []struct {
		cost int64
		want time.Duration
	}{
		{0, period},                            // no estimate: every period
		{int64(30 * time.Microsecond), period}, // half is under a period
		{int64(time.Millisecond), 500 * time.Microsecond},
		{int64(4 * time.Millisecond), maxLowPollFirst},
		{int64(time.Hour), maxLowPollFirst}, // a wrong estimate costs little
	} {
		if got := lowPollFirst(tt.cost, period); got != tt.want {
			t.Errorf("lowPollFirst(%v, %v) = %v, want %v", time.Duration(tt.cost), period, got, tt.want)
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
