package sched_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/sched"
)

// TestHoldLow: while a high-class command is held (HoldLow), a low-class
// command is not issued, a high-class one is; ReleaseLow lets the low one
// go, and HeldLow counts the wait. Held and never released, the low class
// waits at most Options.HoldLow. Without the option HoldLow does nothing.
func TestHoldLow(t *testing.T) {
	ctx := tctx(t)
	submitLow := func(s *sched.Scheduler) (issued chan struct{}) {
		t.Helper()
		be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 8})
		st := newFakeStream(true)
		issued = make(chan struct{})
		go func() {
			_ = be.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: func() error { close(issued); return st.op() }})
		}()
		return issued
	}

	t.Run("held until released", func(t *testing.T) {
		s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, HoldLow: time.Hour}, "priority")
		s.HoldLow()
		issued := submitLow(s)
		svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 8})
		svcSt := newFakeStream(true)
		high := false
		if err := svc.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: svcSt, Issue: func() error { high = true; return svcSt.op() }}); err != nil {
			t.Fatal(err)
		}
		if !high {
			t.Error("a high-class command was not issued while the low class was held")
		}
		select {
		case <-issued:
			t.Fatal("a low-class command was issued while a high-class one was held")
		case <-time.After(50 * time.Millisecond):
		}
		if n, _ := s.HeldLow(); n != 0 {
			t.Errorf("HeldLow counts %d waits before any ended, want 0", n)
		}
		s.ReleaseLow()
		select {
		case <-issued:
		case <-time.After(10 * time.Second):
			t.Fatalf("the low-class command was not issued after ReleaseLow\n%s", s.Dump())
		}
		waitHeldCount(t, s, 1)
	})

	t.Run("at most HoldLow", func(t *testing.T) {
		s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, HoldLow: 2 * time.Millisecond}, "priority")
		s.HoldLow() // never released
		issued := submitLow(s)
		select {
		case <-issued:
		case <-time.After(10 * time.Second):
			t.Fatalf("a low-class command held past Options.HoldLow\n%s", s.Dump())
		}
		waitHeldCount(t, s, 1)
		if _, d := s.HeldLow(); d < 2*time.Millisecond {
			t.Errorf("HeldLow says %v in all, want at least the 2ms it waited", d)
		}
	})

	t.Run("off", func(t *testing.T) {
		s := newServiceSched(t, sched.Options{Device: &fakeDevice{}}, "priority")
		s.HoldLow()
		issued := submitLow(s)
		select {
		case <-issued:
		case <-time.After(10 * time.Second):
			t.Fatal("without Options.HoldLow, HoldLow held the low class")
		}
		if n, _ := s.HeldLow(); n != 0 {
			t.Errorf("without Options.HoldLow, HeldLow counts %d waits", n)
		}
	})

	t.Run("PollLow", func(t *testing.T) {
		s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, HoldLow: time.Hour}, "priority")
		ev := &queryCounter{doneAt: 3}
		s.HoldLow()
		polled := make(chan error, 1)
		go func() { polled <- s.PollLow(ev, time.Microsecond, time.Microsecond, time.Microsecond) }()
		time.Sleep(20 * time.Millisecond)
		if n := ev.n.Load(); n != 0 {
			t.Errorf("PollLow queried %d times while held, want 0", n)
		}
		s.ReleaseLow()
		select {
		case err := <-polled:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("PollLow did not return after ReleaseLow")
		}
		if n := ev.n.Load(); n != 3 {
			t.Errorf("PollLow queried %d times, want 3 (done at the third)", n)
		}
	})
}

// waitHeldCount checks that HeldLow counts want waits, waiting a while
// for a count to reach it.
func waitHeldCount(t *testing.T, s *sched.Scheduler, want int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		n, _ := s.HeldLow()
		if n == want {
			return
		}
		if n > want || time.Now().After(deadline) {
			t.Fatalf("HeldLow counts %d waits, want %d", n, want)
		}
	}
}

// queryCounter is an event done at its doneAt-th query.
type queryCounter struct {
	n      atomic.Int32
	doneAt int32
}

func (e *queryCounter) Query() (bool, error) { return e.n.Add(1) >= e.doneAt, nil }
func (e *queryCounter) Synchronize() error   { e.n.Store(e.doneAt); return nil }
func (e *queryCounter) Destroy() error       { return nil }
func (e *queryCounter) Elapsed(backend.Event) (time.Duration, error) {
	return 0, backend.ErrUnsupported
}
