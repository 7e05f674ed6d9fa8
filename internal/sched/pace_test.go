package sched

import (
	"context"
	"errors"
	"math/rand/v2"
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

// TestPaceWait: a Pace's wait looks at once, then after its first nap
// (initial until it has learned one; held within period and the limit),
// then after naps from period doubling up to maxNap. A wait whose second
// look finds the event done shortens the nap it learned by a 64th; one
// that takes more looks lengthens it by an eighth (to at least the wait,
// which the fake sleeps make ~0 here). A wait done at the first look, one
// whose nap the limit shortened, a failed one and one called off teach it
// nothing.
func TestPaceWait(t *testing.T) {
	const us = time.Microsecond
	var naps []time.Duration
	sleep = func(d time.Duration) { naps = append(naps, d) }
	t.Cleanup(func() { sleep = time.Sleep })
	failed := errors.New("the work failed")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name           string
		learned        time.Duration // the pace's nap before the wait
		n              int           // the look that finds the event done (or failed)
		err            error
		ctx            context.Context
		initial, limit time.Duration
		wantNaps       []time.Duration
		wantErr        error
		wantLearned    time.Duration
	}{
		{"done at once", 0, 1, nil, nil, 500 * us, time.Hour, nil, nil, 0},
		{"a hit, first wait", 0, 2, nil, nil, 500 * us, time.Hour, []time.Duration{500 * us}, nil, 500*us - 500*us/64},
		{"a hit", 640 * us, 2, nil, nil, 500 * us, time.Hour, []time.Duration{640 * us}, nil, 630 * us},
		{"a miss", 640 * us, 4, nil, nil, 500 * us, time.Hour, []time.Duration{640 * us, 20 * us, 40 * us}, nil, 720 * us},
		{"initial under a period", 0, 2, nil, nil, 5 * us, time.Hour, []time.Duration{20 * us}, nil, 20*us - 20*us/64},
		{"the limit shortens the nap", 640 * us, 2, nil, nil, 500 * us, 300 * us, []time.Duration{300 * us}, nil, 640 * us},
		{"a miss at the cap", maxLowPollFirst, 3, nil, nil, 500 * us, time.Hour, []time.Duration{maxLowPollFirst, 20 * us}, nil, maxLowPollFirst},
		{"failed", 640 * us, 3, failed, nil, 500 * us, time.Hour, []time.Duration{640 * us, 20 * us}, failed, 640 * us},
		{"called off", 640 * us, 3, nil, cancelled, 500 * us, time.Hour, nil, context.Canceled, 640 * us},
	} {
		t.Run(tt.name, func(t *testing.T) {
			naps = nil
			var p Pace
			p.first.Store(int64(tt.learned))
			ev := &doneAfter{n: tt.n, err: tt.err}
			if err := p.Wait(tt.ctx, ev, tt.initial, tt.limit, 20*us, 100*us); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Wait = %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(naps, tt.wantNaps) || p.First() != tt.wantLearned {
				t.Errorf("naps %v, learned %v; want naps %v, learned %v", naps, p.First(), tt.wantNaps, tt.wantLearned)
			}
		})
	}
}

// TestPaceSettles: waits of a steady length (simulated time, with or
// without jitter) teach a pace a nap just past it: it then takes 1.16
// wake-ups a wait (steady) or 1.32 (jitter of 5%), and ends a wait late by
// 5.5% or 7.3% of its length. (Three quarters of the recent waits, the rule
// before, took 1.83 on the H100, bench/RESULTS.md session 34.)
func TestPaceSettles(t *testing.T) {
	const wait = 2 * time.Millisecond
	var clock time.Duration // simulated time since the wait began
	base := time.Now()
	sleep = func(d time.Duration) { clock += d }
	now = func() time.Time { return base.Add(clock) }
	t.Cleanup(func() { sleep, now = time.Sleep, time.Now })
	for _, tt := range []struct {
		name         string
		jitter       time.Duration // waits spread evenly over wait ± jitter
		maxWakes     float64
		maxLateShare float64
	}{
		{"steady", 0, 1.3, 0.08},
		{"5% jitter", wait / 20, 1.4, 0.1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var p Pace
			const waits = 2000
			var wakes int
			var late time.Duration
			for i := range waits {
				clock = 0
				at := wait
				if tt.jitter > 0 {
					at += time.Duration(rng.Int64N(int64(2*tt.jitter))) - tt.jitter
				}
				ev := &doneAt{clock: &clock, at: at}
				if err := p.Wait(nil, ev, 500*time.Microsecond, time.Hour, 20*time.Microsecond, 20*time.Microsecond); err != nil {
					t.Fatal(err)
				}
				if i >= waits/2 { // settled
					wakes += ev.queries - 1
					late += clock - at
				}
			}
			perWait := float64(wakes) / (waits / 2)
			lateShare := float64(late) / (waits / 2) / float64(wait)
			t.Logf("%.2f wake-ups a wait, %.1f%% of it late", perWait, 100*lateShare)
			if perWait > tt.maxWakes || lateShare > tt.maxLateShare {
				t.Errorf("settled at %.2f wake-ups a wait, %.1f%% of it late; want at most %.2f and %.0f%%", perWait, 100*lateShare, tt.maxWakes, 100*tt.maxLateShare)
			}
		})
	}
}

// doneAt is an event done once the simulated clock reaches at.
type doneAt struct {
	clock   *time.Duration
	at      time.Duration
	queries int
}

func (e *doneAt) Query() (bool, error)                         { e.queries++; return *e.clock >= e.at, nil }
func (e *doneAt) Synchronize() error                           { return nil }
func (e *doneAt) Elapsed(backend.Event) (time.Duration, error) { return 0, nil }
func (e *doneAt) Destroy() error                               { return nil }

func TestLowPaceLimit(t *testing.T) {
	for _, tt := range []struct {
		cost int64
		want time.Duration
	}{
		{0, maxLowPollFirst}, // no estimate: no bound of its own
		{int64(100 * time.Microsecond), 800 * time.Microsecond},
		{int64(time.Hour), 8 * maxLowPollFirst},
	} {
		if got := lowPaceLimit(tt.cost); got != tt.want {
			t.Errorf("lowPaceLimit(%v) = %v, want %v", time.Duration(tt.cost), got, tt.want)
		}
	}
}
