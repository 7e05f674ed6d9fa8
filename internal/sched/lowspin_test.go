package sched_test

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/sched"
)

// fencingStream is a fakeStream with fences (backend.Fencer), counted.
type fencingStream struct {
	*fakeStream
	fences atomic.Int64
}

func (f *fencingStream) Fence() (backend.Fence, error) {
	f.fences.Add(1)
	return f.fakeStream.fence(), nil
}

// waitDone waits until n commands are done, releasing st's work.
func waitDone(t *testing.T, s *sched.Scheduler, done *atomic.Int32, n int32, st *fakeStream) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); done.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d commands done\n%s", done.Load(), n, s.Dump())
		}
		st.release(-1)
	}
}

// TestLowClassSpin: with Options.LowClassSpin, a best-effort tenant's
// tracked commands get a fence each and are completed by the spinner while a
// high-class session is open; without the option, without a service, or on
// a stream with no fences, its waiter polls their events as before.
func TestLowClassSpin(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spin     bool
		service  bool // a high-class queue is open
		fencing  bool // the best effort's stream has fences
		batched  bool // its commands are small, tracked in batches (flushLocked)
		wantSpun bool
	}{
		{"spun", true, true, true, false, true},
		{"spun, batches", true, true, true, true, true},
		{"option off", false, true, true, false, false},
		{"no service", true, false, true, false, false},
		{"stream without fences", true, true, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, LowClassSpin: tc.spin}, "priority")
			be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 64})
			if tc.service {
				newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 8, Class: sched.ClassHigh})
			}
			ctx := tctx(t)
			fs := &fencingStream{fakeStream: newFakeStream(false)}
			var st backend.Stream = fs
			if !tc.fencing {
				st = fs.fakeStream
			}
			n := 16 // TrackEvery: a batch of small commands is tracked at its 16th
			if tc.batched {
				n = 5 // flushed after FlushDelay (flushLocked)
			}
			var done atomic.Int32
			var mu sync.Mutex
			var order []int
			flags := sched.Sync
			if tc.batched {
				flags = sched.Small
			}
			for i := range n {
				c := &sched.Command{Kind: sched.Compute, Stream: st, Issue: fs.op, Flags: flags, Done: func(err error) {
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					done.Add(1)
				}}
				if err := be.Submit(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			waitDone(t, s, &done, int32(n), fs.fakeStream)
			if !slices.IsSorted(order) {
				t.Errorf("completed in the order %v, want issue order", order)
			}
			spun, fences := be.Stats().SpunEnds, fs.fences.Load()
			if have := spun > 0; have != tc.wantSpun {
				t.Errorf("%d points spun, want any: %v", spun, tc.wantSpun)
			}
			if tc.batched && spun >= uint64(n) {
				t.Errorf("%d points spun for %d small commands: want batches", spun, n)
			}
			if spun != uint64(fences) && tc.fencing {
				t.Errorf("%d points spun, %d fences enqueued: want one each", spun, fences)
			}
			if err := be.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.CheckIdle(); err != nil {
				t.Error(err)
			}
			if have := s.SpinnerRunning(); have != tc.wantSpun {
				t.Errorf("spinner running: %v, want %v", have, tc.wantSpun)
			}
			s.Close() // the spinner parked with no waiter ends
			waitSpinnerEnded(t, s)
		})
	}
}

// TestLowClassSpinFailedWork: a fence behind failed work is never reached;
// the spinner learns of the failure from the stream and completes the
// command with its error, and the next command on another stream still
// completes.
func TestLowClassSpinFailedWork(t *testing.T) {
	s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, LowClassSpin: true}, "priority")
	be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 8})
	newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 8, Class: sched.ClassHigh})
	ctx := tctx(t)
	bad := &fencingStream{fakeStream: newFakeStream(false)}
	fault := errors.New("an illegal address")
	bad.queryErr = fault
	errc := make(chan error, 1)
	if err := be.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: bad, Issue: bad.op, Flags: sched.Sync,
		Done: func(err error) { errc <- err }}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, fault) {
			t.Errorf("the failed command completed with %v, want %v", err, fault)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the failed command never completed\n%s", s.Dump())
	}
	good := &fencingStream{fakeStream: newFakeStream(false)}
	var done atomic.Int32
	if err := be.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: good, Issue: good.op, Flags: sched.Sync,
		Done: func(error) { done.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, s, &done, 1, good.fakeStream)
	if spun := be.Stats().SpunEnds; spun != 2 {
		t.Errorf("%d points spun, want 2", spun)
	}
}

// TestLowClassSpinKeepsStreamOrder: a point issued before the service's
// session opened has no fence and stays with its stream's waiter; the fenced
// points behind it go to the spinner only after it completed, so the stream's
// commands complete in issue order.
func TestLowClassSpinKeepsStreamOrder(t *testing.T) {
	dev := &fakeDevice{}
	s := newSched(t, sched.Options{Device: dev, LowClassSpin: true})
	if err := s.Use("priority"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetShare("be", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassLow, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 8})
	ctx := tctx(t)
	st := &fencingStream{fakeStream: newFakeStream(false)}
	var mu sync.Mutex
	var order []int
	var done atomic.Int32
	submit := func(i int) {
		t.Helper()
		if err := be.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op, Flags: sched.Sync, Done: func(error) {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			done.Add(1)
		}}); err != nil {
			t.Fatal(err)
		}
	}
	submit(0)
	for deadline := time.Now().Add(10 * time.Second); dev.queries.Load() == 0; time.Sleep(10 * time.Microsecond) {
		if time.Now().After(deadline) { // its waiter has it in hand once it queried its event
			t.Fatalf("the first point's event was never queried\n%s", s.Dump())
		}
	}
	if err := s.SetShare("service", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassHigh, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 8, Class: sched.ClassHigh})
	for i := 1; i < 4; i++ {
		submit(i)
	}
	waitDone(t, s, &done, 4, st.fakeStream)
	if !slices.Equal(order, []int{0, 1, 2, 3}) {
		t.Errorf("completed in the order %v, want 0 1 2 3", order)
	}
	if spun, fences := be.Stats().SpunEnds, st.fences.Load(); spun != 3 || fences != 3 {
		t.Errorf("%d points spun, %d fences; want 3 and 3 (the first issued before the service)", spun, fences)
	}
}

// testWatch is a SpinWatch: reached once set, failed (at a check) once fail
// is set; Done's calls are counted.
type testWatch struct {
	reached atomic.Bool
	fail    atomic.Pointer[error]
	checks  atomic.Int32
	dones   atomic.Int32
	err     chan error
}

func newTestWatch() *testWatch { return &testWatch{err: make(chan error, 2)} }

func (w *testWatch) Reached() (bool, error) { return w.reached.Load(), nil }
func (w *testWatch) Check() (bool, error) {
	w.checks.Add(1)
	if p := w.fail.Load(); p != nil {
		return false, *p
	}
	return w.reached.Load(), nil
}
func (w *testWatch) Done(err error) {
	w.dones.Add(1)
	w.err <- err
}

// TestSpinWatch: Scheduler.Watch takes a watch only while the spinner
// serves the low class (the option on, a service's queue open); the
// spinner then calls Done once, with nil when the watch is reached, or
// with the error its Check found (failed work's fence is never reached),
// and takes none after Close.
func TestSpinWatch(t *testing.T) {
	for _, tc := range []struct {
		name          string
		spin, service bool
	}{
		{"option off", false, true},
		{"no service", true, false},
		{"spinning", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, LowClassSpin: tc.spin}, "priority")
			if tc.service {
				newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 8, Class: sched.ClassHigh})
			}
			want := tc.spin && tc.service
			reached, failing := newTestWatch(), newTestWatch()
			if have := s.Watch(reached); have != want {
				t.Fatalf("Watch took it: %v, want %v", have, want)
			}
			if !want {
				return
			}
			if !s.Watch(failing) {
				t.Fatal("Watch refused a second watch")
			}
			reached.reached.Store(true)
			fault := errors.New("an illegal address")
			failing.fail.Store(&fault)
			for _, c := range []struct {
				w    *testWatch
				want error
			}{{reached, nil}, {failing, fault}} {
				select {
				case err := <-c.w.err:
					if !errors.Is(err, c.want) && err != c.want {
						t.Errorf("Done(%v), want Done(%v)", err, c.want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("Done never called\n%s", s.Dump())
				}
			}
			if failing.checks.Load() == 0 {
				t.Error("the failing watch was never checked")
			}
			time.Sleep(5 * time.Millisecond) // no second Done
			if reached.dones.Load() != 1 || failing.dones.Load() != 1 {
				t.Errorf("Done called %d and %d times, want once each", reached.dones.Load(), failing.dones.Load())
			}
			s.Close()
			if s.Watch(newTestWatch()) {
				t.Error("Watch took a watch after Close")
			}
			waitSpinnerEnded(t, s)
		})
	}
}

// TestLowClassSpinTakesBatchedDispatch: while the spinner spins, a
// best-effort queue's batched submissions leave their dispatching to it
// instead of waking the background goroutine (whose tick is an hour here,
// so only the spinner can issue them), and they are issued before the work
// in flight completes.
func TestLowClassSpinTakesBatchedDispatch(t *testing.T) {
	s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, LowClassSpin: true, TickInterval: time.Hour}, "priority")
	be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 64})
	newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 8, Class: sched.ClassHigh})
	ctx := tctx(t)
	fs := &fencingStream{fakeStream: newFakeStream(false)}
	var done atomic.Int32
	submit := func(flags sched.Flags) {
		t.Helper()
		if err := be.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: fs, Issue: fs.op, Flags: flags,
			Done: func(error) { done.Add(1) }}); err != nil {
			t.Fatal(err)
		}
	}
	submit(sched.Sync) // in flight, unreleased: the spinner spins on it
	for deadline := time.Now().Add(10 * time.Second); !s.SpinnerRunning() || be.Stats().InFlight == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the spinner never took the first command\n%s", s.Dump())
		}
	}
	waitBackgroundAsleep(t, s)
	for range 3 {
		submit(sched.Batched)
	}
	for deadline := time.Now().Add(10 * time.Second); fs.ops() < 4; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 4 commands issued, %d kicks left to the spinner\n%s", fs.ops(), be.Stats().KicksToSpinner, s.Dump())
		}
	}
	if k := be.Stats().KicksToSpinner; k == 0 {
		t.Error("no batched submission left its dispatching to the spinner")
	}
	waitDone(t, s, &done, 4, fs.fakeStream)
}

// waitSpinnerEnded waits for the spinner's goroutine to end after Close.
func waitSpinnerEnded(t testing.TB, s *sched.Scheduler) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.SpinnerRunning(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the spinner still runs after Close")
		}
	}
}
