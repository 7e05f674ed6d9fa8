package sched_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/sched"
)

// ownFixture is a high-class queue that owns its completions, on a fake device that
// counts its events' Synchronize and Query calls, with a clock the test
// moves.
type ownFixture struct {
	dev       *fakeDevice
	s         *sched.Scheduler
	q         *sched.Queue
	st        *fakeStream
	clock     atomic.Int64
	done      chan *sched.Command // Done calls
	submitted []*sched.Command    // by submit, in order
}

func newOwnFixture(t *testing.T, o sched.Options, p sched.QueueParams) *ownFixture {
	f := &ownFixture{dev: &fakeDevice{}, st: newFakeStream(false), done: make(chan *sched.Command, 64)}
	o.Device = f.dev
	o.Clock = func() time.Duration { return time.Duration(f.clock.Load()) }
	f.s = newServiceSched(t, o, "priority") // tenant "service" is of the high class
	p.Tenant, p.Session = "service", 1
	if p.Depth == 0 {
		p.Depth = 64
	}
	f.q = newQueue(t, f.s, p)
	f.q.SetOwnCompletions(true)
	return f
}

// submit submits a tracked command on the fixture's stream and waits until
// it is issued.
func (f *ownFixture) submit(t *testing.T, ctx context.Context) *sched.Command {
	t.Helper()
	c := &sched.Command{Kind: sched.Compute, Stream: f.st, Issue: f.st.op, Flags: sched.Sync}
	c.Done = func(error) { f.done <- c }
	if err := f.q.Submit(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.WaitIssued(ctx, nil); err != nil {
		t.Fatal(err)
	}
	f.submitted = append(f.submitted, c)
	return c
}

// completed waits for n Done calls, made by whichever goroutine; those of
// the commands submit made must come in their order (one stream).
func (f *ownFixture) completed(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	next := 0
	for i := range n {
		select {
		case c := <-f.done:
			if next < len(f.submitted) && c != f.submitted[next] && slices.Contains(f.submitted, c) {
				t.Errorf("completion %d is submission %d's, want %d's", i, slices.Index(f.submitted, c), next)
			}
			if slices.Contains(f.submitted, c) {
				next++
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d commands completed\n%s", i, n, f.s.Dump())
		}
	}
}

// notCompleted checks that no Done call came in a while (a waiter would
// have made one within microseconds).
func (f *ownFixture) notCompleted(t *testing.T) {
	t.Helper()
	select {
	case c := <-f.done:
		t.Fatalf("command %p completed without Reap", c)
	case <-time.After(20 * time.Millisecond):
	}
}

// TestOwnCompletionsReap: a queue that owns its completions leaves its
// finished commands for Reap, which completes them on the calling goroutine
// (Done has run when it returns), querying their events; no waiter waits
// for them in the backend.
func TestOwnCompletionsReap(t *testing.T) {
	ctx := tctx(t)
	f := newOwnFixture(t, sched.Options{}, sched.QueueParams{})
	f.submit(t, ctx)
	if n := f.q.Reap(); n != 0 {
		t.Fatalf("Reap completed %d commands before the device did", n)
	}
	f.st.release(-1)
	f.notCompleted(t)
	if n := f.q.Reap(); n != 1 {
		t.Fatalf("Reap completed %d commands, want 1\n%s", n, f.s.Dump())
	}
	select {
	case <-f.done:
	default:
		t.Fatal("Reap returned before the command's Done ran")
	}
	if st := f.q.Stats(); st.InFlight != 0 || st.Reaped != 1 {
		t.Errorf("%d in flight and %d reaped after Reap, want 0 and 1", st.InFlight, st.Reaped)
	}
	if n := f.q.Reap(); n != 0 {
		t.Errorf("a second Reap completed %d commands", n)
	}
	if syncs, queries := f.dev.syncs.Load(), f.dev.queries.Load(); syncs != 0 || queries == 0 {
		t.Errorf("%d event Synchronize calls, %d Query calls: want none and some", syncs, queries)
	}
}

// TestOwnCompletionsHandOff: owned commands are never stranded. Whatever
// would wait for them, or stops looking after them, hands them to the
// waiters first, which complete them without Reap.
func TestOwnCompletionsHandOff(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    sched.Options
		p    sched.QueueParams
		n    int // commands submitted and released before act
		act  func(t *testing.T, ctx context.Context, f *ownFixture)
	}{
		{"HandOff", sched.Options{}, sched.QueueParams{}, 1, func(t *testing.T, ctx context.Context, f *ownFixture) { f.q.HandOff() }},
		{"SetOwnCompletions(false)", sched.Options{}, sched.QueueParams{}, 1, func(t *testing.T, ctx context.Context, f *ownFixture) {
			f.q.SetOwnCompletions(false)
		}},
		{"Wait", sched.Options{}, sched.QueueParams{}, 1, func(t *testing.T, ctx context.Context, f *ownFixture) {
			if err := f.q.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}},
		{"Hold", sched.Options{}, sched.QueueParams{}, 1, func(t *testing.T, ctx context.Context, f *ownFixture) {
			release, err := f.q.Hold(ctx)
			if err != nil {
				t.Fatal(err)
			}
			release()
		}},
		{"Close", sched.Options{}, sched.QueueParams{}, 1, func(t *testing.T, ctx context.Context, f *ownFixture) { f.q.Close() }},
		{"Reap of an old unfinished one", sched.Options{}, sched.QueueParams{}, 0, func(t *testing.T, ctx context.Context, f *ownFixture) {
			f.submit(t, ctx) // not released
			f.clock.Add(int64(3 * time.Millisecond))
			if n := f.q.Reap(); n != 0 {
				t.Fatalf("Reap completed %d commands the device did not", n)
			}
			f.st.release(-1)
		}},
		{"more than a few owned", sched.Options{}, sched.QueueParams{}, 12, func(t *testing.T, ctx context.Context, f *ownFixture) {}},
		{"Submit at depth", sched.Options{TenantInFlight: 1}, sched.QueueParams{Depth: 1}, 0, func(t *testing.T, ctx context.Context, f *ownFixture) {
			// One command in flight (owned, done) fills the tenant's
			// window: the next waits in the queue, and the one after
			// blocks Submit at the queue's depth.
			c := &sched.Command{Kind: sched.Compute, Stream: f.st, Issue: f.st.op, Flags: sched.Sync}
			c.Done = func(error) { f.done <- c }
			if err := f.q.Submit(ctx, c); err != nil {
				t.Fatal(err)
			}
			f.st.release(-1)
			for range 2 {
				c := &sched.Command{Kind: sched.Compute, Stream: f.st, Issue: func() error { err := f.st.op(); f.st.release(-1); return err }, Flags: sched.Sync}
				c.Done = func(error) { f.done <- c }
				if err := f.q.Submit(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.q.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tctx(t)
			f := newOwnFixture(t, tt.o, tt.p)
			for range tt.n {
				f.submit(t, ctx)
			}
			f.st.release(-1)
			if tt.n > 0 && tt.n <= 8 {
				f.notCompleted(t) // owned, not yet handed off
			}
			tt.act(t, ctx, f)
			want := tt.n
			switch tt.name {
			case "Reap of an old unfinished one":
				want = 1
			case "Submit at depth":
				want = 3
			}
			f.completed(t, ctx, want)
			if n := f.q.Reap(); n != 0 {
				t.Errorf("Reap completed %d commands after the hand-off", n)
			}
		})
	}
}
