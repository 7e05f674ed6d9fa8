package sched_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/sched"
)

// A device whose events each measure slowEventTime: on a GPU that a host
// cannot keep busy, every command measures the host's interval between
// commands, and a tenant's estimate ends above the tracking threshold.
const slowEventTime = 100 * time.Microsecond

type slowDevice struct{ fakeDevice }

func (d *slowDevice) NewEvent(backend.EventFlags) (backend.Event, error) {
	return &slowEvent{&fakeEvent{}}, nil
}

type slowEvent struct{ *fakeEvent }

func (e *slowEvent) Elapsed(backend.Event) (time.Duration, error) { return slowEventTime, nil }

// recordingStream counts the events recorded on it.
type recordingStream struct {
	*fakeStream
	records atomic.Int64
}

func (r *recordingStream) Record(e backend.Event) error {
	r.records.Add(1)
	return r.fakeStream.Record(e.(*slowEvent).fakeEvent)
}

// TestSmallCommandsShareAnEvent: once a tenant's commands measure above the
// tracking threshold, each gets a completion event of its own, unless it is
// flagged Small: those share one, as cheap commands do.
func TestSmallCommandsShareAnEvent(t *testing.T) {
	const n = 8 // fewer than TrackEvery
	for _, c := range []struct {
		name  string
		flags sched.Flags
		want  int64 // events recorded while the n commands are in flight
	}{
		{"costly", 0, 1 + n},          // a start event (the chain was idle), then an end each
		{"small", sched.Small, 1 + 0}, // the start event; the end comes at the flush
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSched(t, sched.Options{Device: &slowDevice{}, FlushDelay: time.Hour})
			q := newQueue(t, s, sched.QueueParams{Tenant: "t", Session: 1, Depth: 64})
			st := &recordingStream{fakeStream: newFakeStream(false)}
			ctx := tctx(t)
			// A command the submitter waits for measures slowEventTime: the
			// tenant's estimate goes above the threshold.
			if err := q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op, Flags: sched.Sync}); err != nil {
				t.Fatal(err)
			}
			st.release(-1)
			if err := q.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			before := st.records.Load()
			for range n {
				if err := q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op, Flags: c.flags}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := q.WaitIssued(ctx, nil); err != nil { // their events recorded too
				t.Fatal(err)
			}
			if have := st.records.Load() - before; have != c.want {
				t.Errorf("%d events recorded for %d commands, want %d\n%s", have, n, c.want, s.Dump())
			}
			st.release(-1)
			if err := q.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSyncedIsStamped: a command completed by its waiter carries the time
// the waiter saw its event, after the device finished it and no later than
// its Done.
func TestSyncedIsStamped(t *testing.T) {
	s := newSched(t, sched.Options{Device: &fakeDevice{}})
	q := newQueue(t, s, sched.QueueParams{Tenant: "t", Session: 1, Depth: 4})
	st := newFakeStream(false)
	ctx := tctx(t)
	var doneAt time.Time
	c := &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op, Flags: sched.Sync}
	c.Done = func(error) { doneAt = time.Now() }
	if err := q.Submit(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := q.WaitIssued(ctx, nil); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	st.release(-1)
	if err := q.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Synced.IsZero() || c.Synced.Before(released) || doneAt.Before(c.Synced) {
		t.Errorf("released %v, synced %v, done %v: want released <= synced <= done", released, c.Synced, doneAt)
	}
}

// TestWaiterEvents: the events the completion waiters wait for are polled
// ones, or with Options.BlockingWait blocking-sync ones (the waiter sleeps
// until the device interrupts).
func TestWaiterEvents(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		t.Run(fmt.Sprintf("BlockingWait=%v", blocking), func(t *testing.T) {
			dev := &fakeDevice{}
			s := newSched(t, sched.Options{Device: dev, BlockingWait: blocking})
			q := newQueue(t, s, sched.QueueParams{Tenant: "t", Session: 1, Depth: 4})
			st := newFakeStream(true)
			ctx := tctx(t)
			for range 3 {
				if err := q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op, Flags: sched.Sync}); err != nil {
					t.Fatal(err)
				}
				if err := q.Wait(ctx); err != nil {
					t.Fatal(err)
				}
			}
			made, sleeping := dev.events.Load(), dev.blocking.Load()
			if made == 0 {
				t.Fatal("no events made")
			}
			if want := map[bool]int64{false: 0, true: made}[blocking]; sleeping != want {
				t.Errorf("%d of %d events blocking-sync, want %d", sleeping, made, want)
			}
		})
	}
}

// TestLowClassPoll: the waiters of the low class query their events
// (sleeping Options.LowClassPoll between), and the other classes' wait in
// the backend; with LowClassPoll negative all wait in the backend.
func TestLowClassPoll(t *testing.T) {
	for _, tt := range []struct {
		class       sched.Class
		wantQueries bool
		poll        time.Duration
	}{{sched.ClassLow, true, 0}, {sched.ClassLow, true, 50 * time.Microsecond}, {sched.ClassNormal, false, 0}, {sched.ClassHigh, false, 0}, {sched.ClassLow, false, -1}} {
		t.Run(fmt.Sprintf("%v,poll=%v", tt.class, tt.poll), func(t *testing.T) {
			dev := &fakeDevice{}
			s := newSched(t, sched.Options{Device: dev, LowClassPoll: tt.poll})
			if err := s.SetShare("t", sched.Share{Compute: 1, Copy: 1, Class: tt.class, ClassSet: true}); err != nil {
				t.Fatal(err)
			}
			q := newQueue(t, s, sched.QueueParams{Tenant: "t", Session: 1, Depth: 4})
			st := newFakeStream(false)
			ctx := tctx(t)
			for range 3 {
				if err := q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op, Flags: sched.Sync}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Millisecond) // the waiter is waiting
				st.release(-1)
				if err := q.Wait(ctx); err != nil {
					t.Fatal(err)
				}
			}
			syncs, queries := dev.syncs.Load(), dev.queries.Load()
			if tt.wantQueries && (queries == 0 || syncs != 0) || !tt.wantQueries && (queries != 0 || syncs == 0) {
				t.Errorf("%d Synchronize, %d Query calls; want the waiter to query: %v", syncs, queries, tt.wantQueries)
			}
		})
	}
}
