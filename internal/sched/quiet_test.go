package sched_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/sched"
)

// fakeClock is a scheduler clock (Options.Clock) the test moves.
type fakeClock struct{ t atomic.Int64 }

func (c *fakeClock) now() time.Duration  { return time.Duration(c.t.Load()) }
func (c *fakeClock) set(d time.Duration) { c.t.Store(int64(d)) }

// quietLead is the tests' window lead (Options.QuietLead).
const quietLead = 50 * time.Microsecond

// newQuietSched is a scheduler with the spinner and quiet windows on, on a
// fake clock starting at 1 s, with the tenants of newServiceSched.
func newQuietSched(t *testing.T, lead time.Duration) (*sched.Scheduler, *fakeClock) {
	t.Helper()
	clk := &fakeClock{}
	clk.set(time.Second)
	s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, LowClassSpin: true, QuietLead: lead, Clock: clk.now}, "priority")
	return s, clk
}

// serviceAt submits one service command at each of the times given.
func serviceAt(t *testing.T, svc *sched.Queue, clk *fakeClock, times ...time.Duration) {
	t.Helper()
	st := newFakeStream(true)
	for _, at := range times {
		clk.set(at)
		if err := svc.Submit(tctx(t), &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op, Flags: sched.Sync}); err != nil {
			t.Fatal(err)
		}
	}
}

// steady is n times from start, period apart.
func steady(start, period time.Duration, n int) []time.Duration {
	ts := make([]time.Duration, n)
	for i := range ts {
		ts[i] = start + time.Duration(i)*period
	}
	return ts
}

// TestQuietWindowArmed: a window is predicted only for a single service
// whose last 16 compute submissions came at a steady period, long enough
// for the window to cover under half of it.
func TestQuietWindowArmed(t *testing.T) {
	const ms = time.Millisecond
	irregular := steady(time.Second, ms, 16)
	irregular[8] += 400 * time.Microsecond // one gap 1.4 periods, the next 0.6
	for _, tc := range []struct {
		name      string
		lead      time.Duration
		times     []time.Duration
		services  int
		wantArmed uint64
	}{
		{"steady", quietLead, steady(time.Second, ms, 16), 1, 1},
		{"steady, three more", quietLead, steady(time.Second, ms, 19), 1, 4},
		{"fifteen", quietLead, steady(time.Second, ms, 15), 1, 0},
		{"irregular", quietLead, irregular, 1, 0},
		{"two services", quietLead, steady(time.Second, ms, 16), 2, 0},
		{"period too short", quietLead, steady(time.Second, 400*time.Microsecond, 16), 1, 0},
		{"off", 0, steady(time.Second, ms, 16), 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := newQuietSched(t, tc.lead)
			svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 64, Class: sched.ClassHigh})
			if tc.services > 1 {
				if err := s.SetShare("service2", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassHigh, ClassSet: true}); err != nil {
					t.Fatal(err)
				}
				newQueue(t, s, sched.QueueParams{Tenant: "service2", Session: 3, Depth: 8, Class: sched.ClassHigh})
			}
			serviceAt(t, svc, clk, tc.times...)
			if have := s.QuietStats().Armed; have != tc.wantArmed {
				t.Errorf("windows armed: %d, want %d", have, tc.wantArmed)
			}
		})
	}
}

// TestQuietWindowHoldsLowClass: in an open window the spinner completes no
// best-effort command and no best-effort command is issued; the service's
// next submission closes the window and both happen then. A window the
// service does not come to closes quietLate (200 µs) past its prediction.
func TestQuietWindowHoldsLowClass(t *testing.T) {
	const ms = time.Millisecond
	s, clk := newQuietSched(t, quietLead)
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
	start := time.Second
	serviceAt(t, svc, clk, steady(start, ms, 16)...) // next predicted at start+16 ms
	submitBE()                                       // issued before the window: the spinner watches its fence
	waitFor(t, "the spinner running", s.SpinnerRunning)
	if bst.ops() != 1 {
		t.Fatalf("%d best-effort ops issued before the window, want 1", bst.ops())
	}

	clk.set(start + 16*ms - 20*time.Microsecond) // in the window
	bst.release(-1)                              // its fence is reached
	submitBE()                                   // left for the window's end
	time.Sleep(50 * time.Millisecond)
	if d, ops := done.Load(), bst.ops(); d != 0 || ops != 1 {
		t.Fatalf("in the window: %d best-effort commands done, %d issued; want 0 and 1\n%s", d, ops, s.Dump())
	}
	serviceAt(t, svc, clk, start+16*ms) // the service's launch closes it
	waitFor(t, "the first best-effort command done, the second issued", func() bool { return done.Load() == 1 && bst.ops() == 2 })

	// The next window: the service does not come.
	clk.set(start + 17*ms - 10*time.Microsecond)
	bst.release(-1)
	time.Sleep(50 * time.Millisecond)
	if d := done.Load(); d != 1 {
		t.Fatalf("in the second window: %d best-effort commands done, want 1\n%s", d, s.Dump())
	}
	clk.set(start + 17*ms + 200*time.Microsecond) // quietLate past the prediction
	waitFor(t, "the second best-effort command done", func() bool { return done.Load() == 2 })

	q := s.QuietStats()
	if q.Armed != 2 || q.Held != 2 {
		t.Errorf("windows armed %d, held work in %d; want 2 and 2", q.Armed, q.Held)
	}
	// The spinner waited from each window's look to its end: 20 µs, then 210.
	if want := 230 * time.Microsecond; q.Time != want {
		t.Errorf("work held for %v, want %v", q.Time, want)
	}
	if err := be.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckIdle(); err != nil {
		t.Error(err)
	}
}

// TestQuietWindowNeedsSpinner: without the spinner there is no one to carry
// on after a window, so none holds anything: a best-effort command
// submitted in a predicted window is issued at once.
func TestQuietWindowNeedsSpinner(t *testing.T) {
	const ms = time.Millisecond
	clk := &fakeClock{}
	clk.set(time.Second)
	s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, QuietLead: quietLead, Clock: clk.now}, "priority")
	svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 64, Class: sched.ClassHigh})
	be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 64})
	serviceAt(t, svc, clk, steady(time.Second, ms, 16)...)
	if s.QuietStats().Armed != 1 {
		t.Fatal("no window armed")
	}
	clk.set(time.Second + 16*ms - 20*time.Microsecond)
	st := newFakeStream(true)
	if err := be.Submit(tctx(t), &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op, Flags: sched.Sync}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the best-effort command issued", func() bool { return st.ops() == 1 })
	if h := s.QuietStats().Held; h != 0 {
		t.Errorf("windows that held work: %d, want 0", h)
	}
}
