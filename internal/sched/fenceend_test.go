package sched_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/sched"
)

// fencedOp is an Issue that enqueues one operation on st and, with fence,
// a fence behind it, which it gives the scheduler (Command.EndFence).
func fencedOp(c *sched.Command, st *fakeStream, fence bool) func() error {
	return func() error {
		if err := st.op(); err != nil {
			return err
		}
		if fence {
			c.EndFence = st.fence()
		}
		return nil
	}
}

// TestFenceEnds: a high-class queue that owns its completions, whose
// commands come with a fence behind them, records no completion event for
// the commands it gives no start event (15 in 16): they end at their fence,
// and Reap completes them by it. The sampled ones keep both events. Without
// a fence, or with the completions left to the waiters, every command has
// its end event as before.
func TestFenceEnds(t *testing.T) {
	const n = 48
	for _, tc := range []struct {
		name        string
		fence, own  bool
		wantRecords int
		wantFenced  uint64
	}{
		{"owned, with fences", true, true, 2 * n / 16, n - n/16},
		{"owned, no fences", false, true, n + n/16, 0},
		{"not owned, with fences", true, false, n + n/16, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tctx(t)
			s := newServiceSched(t, sched.Options{Device: &fakeDevice{}}, "priority")
			q := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 1, Depth: 8})
			q.SetOwnCompletions(tc.own)
			st := newFakeStream(false)
			done := make(chan error, 1)
			for i := range n {
				c := &sched.Command{Kind: sched.Compute, Stream: st}
				c.Issue = fencedOp(c, st, tc.fence)
				c.Done = func(err error) { done <- err }
				if err := q.Submit(ctx, c); err != nil {
					t.Fatal(err)
				}
				if c.EndFence != nil {
					t.Fatalf("command %d: EndFence left set after its issue", i)
				}
				st.release(-1)
				if tc.own {
					if r := q.Reap(); r != 1 {
						t.Fatalf("command %d: Reap completed %d, want 1\n%s", i, r, s.Dump())
					}
				}
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("command %d: %v", i, err)
					}
				case <-ctx.Done():
					t.Fatalf("command %d never completed\n%s", i, s.Dump())
				}
			}
			st.mu.Lock()
			records := st.records
			st.mu.Unlock()
			if records != tc.wantRecords {
				t.Errorf("%d events recorded for %d commands, want %d", records, n, tc.wantRecords)
			}
			if got := q.Stats().FenceEnds; got != tc.wantFenced {
				t.Errorf("Stats().FenceEnds = %d, want %d", got, tc.wantFenced)
			}
			if err := s.CheckIdle(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestFenceEndHandOff: a fence-ended point handed to a waiter (its
// submitter stopped looking) completes once its fence is reached, and with
// the stream's error if its work failed, its fence then never reached.
func TestFenceEndHandOff(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		settle  func(st *fakeStream)
		wantErr error
	}{
		{"reached", func(st *fakeStream) { st.release(-1) }, nil},
		{"stream failed", func(st *fakeStream) {
			st.mu.Lock()
			st.queryErr = boom
			st.mu.Unlock()
		}, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tctx(t)
			s := newServiceSched(t, sched.Options{Device: &fakeDevice{}}, "priority")
			q := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 1, Depth: 8})
			q.SetOwnCompletions(true)
			st := newFakeStream(false)
			done := make(chan error, 1)
			c := &sched.Command{Kind: sched.Compute, Stream: st}
			c.Issue = fencedOp(c, st, true)
			c.Done = func(err error) { done <- err }
			if err := q.Submit(ctx, c); err != nil {
				t.Fatal(err)
			}
			if got := q.Stats().FenceEnds; got != 1 {
				t.Fatalf("Stats().FenceEnds = %d, want 1", got)
			}
			q.HandOff()
			select {
			case err := <-done:
				t.Fatalf("completed (%v) before its fence was reached", err)
			case <-time.After(20 * time.Millisecond):
			}
			tc.settle(st)
			select {
			case err := <-done:
				if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
					t.Errorf("Done(%v), want %v", err, tc.wantErr)
				}
			case <-ctx.Done():
				t.Fatalf("never completed\n%s", s.Dump())
			}
			if n := q.Reap(); n != 0 {
				t.Errorf("Reap completed %d after the hand-off", n)
			}
		})
	}
}

// TestFenceEndCharges: on the software GPU, a service's kernels charged
// with fence ends (no timing at their end) cost the tenant what they cost
// with end events: the points left without a start event were charged the
// tenant's measured average either way. Best-effort work between them
// still accounts (nothing is left in an accounting chain).
func TestFenceEndCharges(t *testing.T) {
	const n = 64
	charge := func(t *testing.T, fence bool) (time.Duration, uint64) {
		ctx := tctx(t)
		g := newSimGPU(t)
		s := newServiceSched(t, sched.Options{Device: g.dev}, "priority")
		be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 2})
		bst := g.stream(t, 0)
		q := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 1})
		q.SetOwnCompletions(true)
		st := g.stream(t, 0)
		for i := range n {
			if i%8 == 0 {
				if err := be.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: bst, Issue: g.launch(bst, 400, 1)}); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			c := &sched.Command{Kind: sched.Compute, Stream: st, Done: func(err error) { done <- err }}
			launch := g.launch(st, 100, 1)
			c.Issue = func() error {
				if err := launch(); err != nil {
					return err
				}
				if fence {
					f, err := st.(backend.Fencer).Fence()
					if err != nil {
						return err
					}
					c.EndFence = f
				}
				return nil
			}
			if err := q.Submit(ctx, c); err != nil {
				t.Fatal(err)
			}
			waitReaped(t, ctx, q, done)
		}
		if err := be.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.CheckIdle(); err != nil {
			t.Error(err)
		}
		st2 := q.Stats()
		return st2.GPUTime, st2.FenceEnds
	}
	withEvents, none := charge(t, false)
	withFences, fenced := charge(t, true)
	t.Logf("charged %v with end events, %v with fence ends", withEvents, withFences)
	if none != 0 || fenced != n-n/16 {
		t.Fatalf("fence ends %d without fences, %d with; want 0 and %d", none, fenced, n-n/16)
	}
	if withEvents <= 0 || withFences < withEvents*95/100 || withFences > withEvents*105/100 {
		t.Errorf("service charged %v with fence ends, %v with end events: want within 5%%", withFences, withEvents)
	}
}

// waitReaped reaps q until done has the command's result.
func waitReaped(t *testing.T, ctx context.Context, q *sched.Queue, done chan error) {
	t.Helper()
	for {
		q.Reap()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-ctx.Done():
			t.Fatal("a command never completed")
		case <-time.After(50 * time.Microsecond):
		}
	}
}

// TestBatchedIssuedWithoutFlush: a low-class queue's batched submissions
// wake the background goroutine once two are queued, and it issues them
// without the submitter's Flush.
func TestBatchedIssuedWithoutFlush(t *testing.T) {
	s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, TickInterval: time.Hour}, "priority")
	be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 8})
	ctx := tctx(t)
	waitBackgroundAsleep(t, s)
	st := newFakeStream(true)
	var issued atomic.Int64
	for range 3 {
		c := &sched.Command{Kind: sched.Marker, Stream: st, Flags: sched.Batched, Issue: func() error { issued.Add(1); return nil }}
		if err := be.Submit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); issued.Load() < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 batched commands issued without Flush\n%s", issued.Load(), s.Dump())
		}
	}
}
