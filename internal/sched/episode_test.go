package sched_test

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/sched"
)

// fakeClock is a scheduler clock (Options.Clock) the test moves.
type fakeClock struct{ t atomic.Int64 }

func (c *fakeClock) now() time.Duration  { return time.Duration(c.t.Load()) }
func (c *fakeClock) set(d time.Duration) { c.t.Store(int64(d)) }
func (c *fakeClock) add(d time.Duration) { c.t.Add(int64(d)) }

// episodeHold is the tests' hold (Options.EpisodeHold).
const episodeHold = 20 * time.Millisecond

// newEpisodeSched is a scheduler with the holds on (and the spinner, if
// spin), on a fake clock starting at 1 s, with the tenants of
// newServiceSched.
func newEpisodeSched(t *testing.T, hold time.Duration, spin bool) (*sched.Scheduler, *fakeClock) {
	t.Helper()
	clk := &fakeClock{}
	clk.set(time.Second)
	s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, LowClassSpin: spin, EpisodeHold: hold, Clock: clk.now}, "priority")
	return s, clk
}

// launches submits one service launch per entry of took, each an Issue that
// takes that long on the fake clock, a millisecond apart, and waits for each
// to complete (whichever goroutine issued it has timed it by then).
func launches(t *testing.T, svc *sched.Queue, clk *fakeClock, took ...time.Duration) {
	t.Helper()
	st := newFakeStream(true)
	ctx := tctx(t)
	for _, d := range took {
		issue := func() error {
			clk.add(d)
			return st.op()
		}
		if err := svc.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: issue, Flags: sched.Sync}); err != nil {
			t.Fatal(err)
		}
		if err := svc.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		clk.add(time.Millisecond - d)
	}
}

// times is n copies of d.
func times(n int, d time.Duration) []time.Duration { return slices.Repeat([]time.Duration{d}, n) }

// TestEpisodeHoldStarts: a hold begins once two of the service's launches in
// a row took over 2.5 times the median of the earlier ones, after 64 have
// been timed for a first median, and not without the option.
func TestEpisodeHoldStarts(t *testing.T) {
	const us = time.Microsecond
	warm := times(64, 4*us)
	for _, tc := range []struct {
		name      string
		hold      time.Duration
		took      []time.Duration
		wantSlow  uint64
		wantHolds uint64
	}{
		{"two slow", episodeHold, append(warm, 20*us, 20*us), 2, 1},
		{"one slow", episodeHold, append(warm, 20*us, 4*us, 20*us), 2, 0},
		{"under 2.5 times", episodeHold, append(warm, 9*us, 9*us, 9*us), 0, 0},
		{"not yet warm", episodeHold, append(times(60, 4*us), 20*us, 20*us), 0, 0},
		{"one spell, one hold", episodeHold, append(warm, times(10, 20*us)...), 10, 1},
		{"two spells", episodeHold, append(append(append(warm, 20*us, 20*us), times(30, 4*us)...), 20*us, 20*us), 4, 2},
		{"off", 0, append(warm, 20*us, 20*us), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := newEpisodeSched(t, tc.hold, true)
			svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 64, Class: sched.ClassHigh})
			launches(t, svc, clk, tc.took...)
			e := s.EpisodeStats()
			if e.Slow != tc.wantSlow || e.Holds != tc.wantHolds {
				t.Errorf("slow launches %d, holds %d; want %d and %d", e.Slow, e.Holds, tc.wantSlow, tc.wantHolds)
			}
		})
	}
}

// TestEpisodeMedian: the launches are counted by their time over the median,
// and a slowness that lasts becomes the norm within a few hundred launches.
func TestEpisodeMedian(t *testing.T) {
	const us = time.Microsecond
	s, clk := newEpisodeSched(t, episodeHold, true)
	svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 64, Class: sched.ClassHigh})
	launches(t, svc, clk, append(times(64, 4*us), 3*us, 5*us, 7*us, 9*us, 11*us, 14*us, 20*us, 30*us)...)
	if have, want := s.EpisodeStats().Ratios, [8]uint64{1, 1, 1, 1, 1, 1, 1, 1}; have != want {
		t.Errorf("launches by time over the median: %v, want %v", have, want)
	}
	launches(t, svc, clk, times(400, 20*us)...) // the median passes 8 µs after ~180
	before := s.EpisodeStats().Slow
	launches(t, svc, clk, 20*us, 20*us)
	if e := s.EpisodeStats(); e.Slow != before || before < 150 || before > 250 {
		t.Errorf("slow launches: %d in 400 of 20 µs after 4 µs ones, then %d more; want 150-250, then none", before, e.Slow-before)
	}
}

// TestEpisodeHoldBudget: however long the service runs slow, holds take at
// most a quarter of the time, with 250 ms saved up at the start.
func TestEpisodeHoldBudget(t *testing.T) {
	const us = time.Microsecond
	s, clk := newEpisodeSched(t, episodeHold, true)
	svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 64, Class: sched.ClassHigh})
	launches(t, svc, clk, times(64, 4*us)...)
	start := clk.now()
	// Two seconds of launches, slow spells of 10 ms 10 ms apart (the median
	// stays the fast ones').
	for range 100 {
		launches(t, svc, clk, append(times(10, 40*us), times(10, 4*us)...)...)
	}
	elapsed := clk.now() - start
	e := s.EpisodeStats()
	if limit := 250*time.Millisecond + elapsed/4; e.Granted > limit || e.Granted < limit-2*episodeHold {
		t.Errorf("holds granted %v over %v of slow launches, want a little under %v", e.Granted, elapsed, limit)
	}
	// Once the saved credit is spent, holds start whole, each after a
	// quarter's credit for it has come in: at most one in 80 ms.
	if e.Holds < 2 || e.Holds > 1+uint64(elapsed/(4*episodeHold)) {
		t.Errorf("%d holds begun over %v, want 2 to %d", e.Holds, elapsed, 1+elapsed/(4*episodeHold))
	}
}

// TestEpisodeHoldHoldsLowClass: in a hold the spinner completes no
// best-effort command and no best-effort command is issued; both happen
// once the hold ends, episodeHold after the last slow launch.
func TestEpisodeHoldHoldsLowClass(t *testing.T) {
	const us = time.Microsecond
	s, clk := newEpisodeSched(t, episodeHold, true)
	svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 64, Class: sched.ClassHigh})
	be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 64})
	ctx := tctx(t)
	bst := &fencingStream{fakeStream: newFakeStream(false)}
	var done atomic.Int32
	submitBE := func() {
		t.Helper()
		if err := be.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: bst, Issue: bst.op, Flags: sched.Sync,
			Done: func(err error) {
				if err != nil {
					t.Error(err)
				}
				done.Add(1)
			}}); err != nil {
			t.Fatal(err)
		}
	}
	launches(t, svc, clk, times(64, 4*us)...)
	submitBE() // issued before the hold: the spinner watches its fence
	waitFor(t, "the spinner running", s.SpinnerRunning)
	if bst.ops() != 1 {
		t.Fatalf("%d best-effort ops issued before the hold, want 1", bst.ops())
	}
	launches(t, svc, clk, 20*us, 20*us)
	end := clk.now() - time.Millisecond + 20*us + episodeHold // from the second slow launch's end
	clk.set(end - time.Millisecond)                           // in the hold
	bst.release(-1)                                           // its fence is reached
	submitBE()                                                // left for the hold's end
	time.Sleep(50 * time.Millisecond)
	if d, ops := done.Load(), bst.ops(); d != 0 || ops != 1 {
		t.Fatalf("in the hold: %d best-effort commands done, %d issued; want 0 and 1\n%s", d, ops, s.Dump())
	}
	clk.set(end)
	waitFor(t, "the first best-effort command done, the second issued", func() bool { return done.Load() == 1 && bst.ops() == 2 })
	bst.release(-1)
	waitFor(t, "the second best-effort command done", func() bool { return done.Load() == 2 })

	e := s.EpisodeStats()
	if e.Holds != 1 || e.Granted != episodeHold {
		t.Errorf("holds %d, granted %v; want 1 and %v", e.Holds, e.Granted, episodeHold)
	}
	// The spinner waited from its look, a millisecond before the end.
	if e.Held != time.Millisecond {
		t.Errorf("work held for %v, want 1ms", e.Held)
	}
	if err := be.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckIdle(); err != nil {
		t.Error(err)
	}
}

// TestEpisodeHoldNeedsSpinner: without the spinner no one would carry on
// after a hold, so none holds anything: a best-effort command submitted in
// a hold is issued at once.
func TestEpisodeHoldNeedsSpinner(t *testing.T) {
	const us = time.Microsecond
	s, clk := newEpisodeSched(t, episodeHold, false)
	svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 64, Class: sched.ClassHigh})
	be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 64})
	launches(t, svc, clk, append(times(64, 4*us), 20*us, 20*us)...)
	if s.EpisodeStats().Holds != 1 {
		t.Fatal("no hold begun")
	}
	clk.add(-time.Millisecond) // back into the hold
	st := newFakeStream(true)
	if err := be.Submit(tctx(t), &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op, Flags: sched.Sync}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the best-effort command issued", func() bool { return st.ops() == 1 })
	if h := s.EpisodeStats().Held; h != 0 {
		t.Errorf("work held for %v, want 0", h)
	}
}
