package sched_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/sched"
)

// TestExpressLane: while the dispatching goroutine is stuck in a slow
// backend call for a best-effort tenant (a driver call that blocks for
// milliseconds, as cuEventRecord did on the H100 in run 22), a high-class
// command is issued at once by its submitter under the policies that let it
// run beside other work (priority, fifo); a best-effort command submitted
// meanwhile waits for the stuck call. Under the share policies every
// kernel takes its turn, which only the token holder can give, so the
// service's command waits too and is issued once the call returns, as it
// does with the lane turned off (Options.NoExpress).
func TestExpressLane(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		off          bool // Options.NoExpress
		express      bool
	}{
		{"priority", "priority", false, true},
		{"fifo", "fifo", false, true},
		{"fair", "fair", false, false},
		{"band", "band", false, false},
		{"priority/off", "priority", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, NoExpress: tc.off}, tc.policy)
			be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 8})
			be2 := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 2, Depth: 8})
			svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 3, Depth: 8})
			ctx := tctx(t)
			g := newGate(t)
			beSt, svcSt := newFakeStream(true), newFakeStream(true)
			// Tracked (as a best-effort kernel of 20 µs or more is): an open
			// batch of another stream's untracked commands keeps the
			// express lane out, as its end event would time the service too.
			slow := &sched.Command{Kind: sched.Compute, Stream: beSt, Flags: sched.Sync, Issue: g.then(beSt.op)}
			go be.Submit(ctx, slow) // its submitter dispatches, and blocks in Issue
			<-g.stuck

			issued := make(chan struct{})
			c := &sched.Command{Kind: sched.Compute, Stream: svcSt, Issue: func() error { close(issued); return svcSt.op() }}
			if err := svc.Submit(ctx, c); err != nil {
				t.Fatal(err)
			}
			other := make(chan struct{})
			if err := be2.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: beSt, Issue: func() error { close(other); return beSt.op() }}); err != nil {
				t.Fatal(err)
			}
			wait := 10 * time.Second
			if !tc.express {
				wait = 50 * time.Millisecond
			}
			select {
			case <-issued:
				if !tc.express {
					t.Fatal("the service's command was issued while the token holder was stuck")
				}
			case <-time.After(wait):
				if tc.express {
					t.Fatalf("the service's command waited for the stuck dispatch\n%s", s.Dump())
				}
			}
			select {
			case <-other:
				t.Error("a best-effort command went ahead of the stuck dispatch")
			case <-time.After(50 * time.Millisecond):
			}
			g.open()
			for _, ch := range []chan struct{}{issued, other} {
				select {
				case <-ch:
				case <-time.After(10 * time.Second):
					t.Fatalf("a command was not issued once the stuck call returned\n%s", s.Dump())
				}
			}
			if got := s.Expressed(); (got > 0) != tc.express {
				t.Errorf("express lane issued %d commands; want some: %v", got, tc.express)
			}
			if c.Expressed != tc.express || slow.Expressed {
				t.Errorf("Command.Expressed: the service's %v, the stuck one's %v; want %v, false", c.Expressed, slow.Expressed, tc.express)
			}
		})
	}
}

// TestHighFirst: a high-class submitter that finds the dispatch token free
// issues its command and returns, leaving a best-effort marker whose driver
// call blocks (as cuEventRecord did for milliseconds on the H100) to the
// background goroutine; with Options.NoHighFirst it dispatches in the usual
// order, the marker first, and its Submit waits for that call.
func TestHighFirst(t *testing.T) {
	for _, tc := range []struct {
		name      string
		off       bool // Options.NoHighFirst
		wantFirst bool
	}{
		{"on", false, true},
		{"off", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, NoHighFirst: tc.off}, "priority")
			be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 8})
			svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 8})
			ctx := tctx(t)
			waitBackgroundAsleep(t, s)
			g := newGate(t)
			beSt, svcSt := newFakeStream(true), newFakeStream(true)
			// Batched and alone: left queued for a dispatcher to come by.
			marker := &sched.Command{Kind: sched.Marker, Stream: beSt, Flags: sched.Batched, Issue: g.then(func() error { return nil })}
			if err := be.Submit(ctx, marker); err != nil {
				t.Fatal(err)
			}
			select {
			case <-g.stuck:
				t.Skip("the background goroutine took the marker before the service came (a race this test cannot rule out)")
			case <-time.After(20 * time.Millisecond):
			}
			issued := make(chan struct{})
			submitted := make(chan error, 1)
			go func() {
				submitted <- svc.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: svcSt, Issue: func() error { close(issued); return svcSt.op() }})
			}()
			returned := false
			select {
			case err := <-submitted:
				returned = true
				if err != nil {
					t.Fatal(err)
				}
				if !tc.wantFirst {
					t.Fatal("the service's Submit returned before the marker ahead of it in dispatch order was issued")
				}
				select {
				case <-issued:
				default:
					t.Fatal("the service's Submit returned without issuing its command")
				}
				// The marker is the background goroutine's now.
				select {
				case <-g.stuck:
				case <-time.After(10 * time.Second):
					t.Fatalf("the marker was left undispatched\n%s", s.Dump())
				}
			case <-time.After(200 * time.Millisecond):
				if tc.wantFirst {
					t.Fatalf("the service's Submit waited for another tenant's marker\n%s", s.Dump())
				}
				<-g.stuck // its own goroutine is in the marker's call
			}
			g.open()
			if !returned {
				if err := <-submitted; err != nil {
					t.Fatal(err)
				}
			}
			if err := svc.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if err := be.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestYieldOption: a synchronizer polling for another goroutine to issue
// its queue's command calls Options.Yield between looks (the driver passes
// ring.Yield, which keeps the goroutine on its thread).
func TestYieldOption(t *testing.T) {
	var yields atomic.Int64
	s := newSched(t, sched.Options{Device: &fakeDevice{}, Spin: time.Second, Yield: func() { yields.Add(1) }})
	q := newQueue(t, s, sched.QueueParams{Tenant: "a", Session: 1, Depth: 8})
	ctx := tctx(t)
	st := newFakeStream(true)
	g := newGate(t)
	go q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: g.then(st.op)})
	<-g.stuck
	waited := make(chan error, 1)
	go func() {
		_, err := q.WaitIssued(ctx, nil)
		waited <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); yields.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("WaitIssued did not call Options.Yield while it polled")
		}
	}
	g.open()
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
}

// TestHighClassNotBatched: a high-class tenant's Batched command is issued
// by its submitter before Submit returns, not left to the dispatcher
// goroutine (whose issue a synchronize behind it would wait for).
func TestHighClassNotBatched(t *testing.T) {
	s := newServiceSched(t, sched.Options{Device: &fakeDevice{}}, "priority")
	ctx := tctx(t)
	svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 1, Depth: 8})
	for i := range 20 {
		issued := false
		st := newFakeStream(true)
		if err := svc.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Flags: sched.Batched, Issue: func() error { issued = true; return st.op() }}); err != nil {
			t.Fatal(err)
		}
		if !issued { // written before Submit returned, on this goroutine
			t.Fatalf("submission %d: the service's Batched command was not issued by its submitter\n%s", i, s.Dump())
		}
		if err := svc.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFlushSettled: Flush and WaitIssued on a queue with nothing queued or
// being issued return without the scheduler's lock (a service's serving
// goroutine calls them at every request), WaitIssued with the streams
// issued to since it last looked, once.
func TestFlushSettled(t *testing.T) {
	s := newSched(t, sched.Options{Device: &fakeDevice{}})
	q := newQueue(t, s, sched.QueueParams{Tenant: "a", Session: 1, Depth: 8})
	ctx := tctx(t)
	st := newFakeStream(true)
	if err := q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.WaitIssued(ctx, nil); err != nil {
		t.Fatal(err)
	}
	unlock := s.Lock()
	flushed := make(chan struct{})
	go func() { q.Flush(); close(flushed) }()
	select {
	case <-flushed:
	case <-time.After(10 * time.Second):
		unlock()
		t.Fatal("Flush of a settled queue waited for the scheduler's lock")
	}
	unlock()

	st2 := newFakeStream(true)
	if err := q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st2, Issue: st2.op}); err != nil {
		t.Fatal(err) // issued by this goroutine before Submit returns: settled
	}
	unlock = s.Lock()
	got := make(chan []backend.Stream, 1)
	go func() {
		streams, err := q.WaitIssued(ctx, nil)
		if err != nil {
			t.Error(err)
		}
		got <- streams
	}()
	select {
	case streams := <-got:
		if len(streams) != 1 || streams[0] != backend.Stream(st2) {
			t.Errorf("WaitIssued returned %v, want the one stream issued to", streams)
		}
	case <-time.After(10 * time.Second):
		unlock()
		t.Fatal("WaitIssued of a settled queue waited for the scheduler's lock")
	}
	unlock()
	if streams, err := q.WaitIssued(ctx, nil); err != nil || len(streams) != 0 {
		t.Errorf("WaitIssued again = %v, %v; want no streams", streams, err)
	}
}

// newServiceSched is a scheduler under policy with two tenants, "be" of the
// low class and "service" of the high one.
func newServiceSched(t *testing.T, o sched.Options, policy string) *sched.Scheduler {
	t.Helper()
	s := newSched(t, o)
	if err := s.Use(policy); err != nil {
		t.Fatal(err)
	}
	for name, class := range map[string]sched.Class{"be": sched.ClassLow, "service": sched.ClassHigh} {
		if err := s.SetShare(name, sched.Share{Compute: 1, Copy: 1, Class: class, ClassSet: true}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// gate stands for a driver call that blocks: an Issue made by then closes
// stuck when it is entered and returns once open is called (at the latest
// when the test ends).
type gate struct {
	stuck, release chan struct{}
	once           sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{stuck: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// then is an Issue that blocks at the gate, then calls op.
func (g *gate) then(op func() error) func() error {
	return func() error {
		close(g.stuck)
		<-g.release
		return op()
	}
}

// TestIssuedStreams: IssuedStreams offers the streams issued to since the
// last WaitIssued, without forgetting them, once all the queue was given is
// issued; while a command is still being issued it offers none.
func TestIssuedStreams(t *testing.T) {
	s := newSched(t, sched.Options{Device: &fakeDevice{}})
	q := newQueue(t, s, sched.QueueParams{Tenant: "a", Session: 1, Depth: 8})
	ctx := tctx(t)
	st := newFakeStream(true)
	release, issuing := make(chan struct{}), make(chan struct{})
	submitted := make(chan error, 1)
	go func() {
		submitted <- q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: func() error {
			close(issuing)
			<-release
			return st.op()
		}})
	}()
	<-issuing
	if streams, ok := q.IssuedStreams(nil); ok || len(streams) != 0 {
		t.Errorf("while a command is being issued: IssuedStreams = %v, %t; want none, false", streams, ok)
	}
	close(release)
	if err := <-submitted; err != nil {
		t.Fatal(err)
	}
	if _, err := q.WaitIssued(ctx, nil); err != nil { // settled now, whichever goroutine issued
		t.Fatal(err)
	}
	if err := q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // not forgotten
		if streams, ok := q.IssuedStreams(nil); !ok || len(streams) != 1 || streams[0] != backend.Stream(st) {
			t.Fatalf("after an issue: IssuedStreams = %v, %t; want the stream, true", streams, ok)
		}
	}
	if streams, err := q.WaitIssued(ctx, nil); err != nil || len(streams) != 1 {
		t.Fatalf("WaitIssued = %v, %v; want the stream", streams, err)
	}
	if streams, ok := q.IssuedStreams(nil); !ok || len(streams) != 0 {
		t.Errorf("after WaitIssued: IssuedStreams = %v, %t; want none, true", streams, ok)
	}
}

// TestHighClassStart: of a high-class tenant's commands, each waited for
// (so each finds its accounting chain idle), one in 16 gets a start event
// besides its end event; with Options.NoHighClassStart none does.
func TestHighClassStart(t *testing.T) {
	const n = 48
	for _, tc := range []struct {
		off         bool
		wantRecords int
	}{{false, n + n/16}, {true, n}} {
		s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, NoHighClassStart: tc.off}, "priority")
		svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 1, Depth: 8})
		st := newFakeStream(true)
		for range n {
			if err := svc.Submit(tctx(t), &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op}); err != nil {
				t.Fatal(err)
			}
			if err := svc.Wait(tctx(t)); err != nil {
				t.Fatal(err)
			}
		}
		st.mu.Lock()
		got := st.records
		st.mu.Unlock()
		if got != tc.wantRecords {
			t.Errorf("NoHighClassStart %v: %d events recorded for %d commands, want %d", tc.off, got, n, tc.wantRecords)
		}
	}
}

// TestDeferredKicks: a high-class submitter whose queue defers kicks issues
// its command and leaves another tenant's queued marker for the background
// goroutine without waking it: the wake-up is owed until Kick (or Close)
// pays it. Without deferral the submitter wakes it at once. (The policy's
// tick is an hour away and the service owns its completions, so nothing
// else wakes the goroutine or dispatches.)
func TestDeferredKicks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deferred bool
		pay      func(svc *sched.Queue)
	}{
		{"off", false, nil},
		{"Kick", true, (*sched.Queue).Kick},
		{"Close", true, (*sched.Queue).Close},
		{"SetDeferredKicks(false)", true, func(q *sched.Queue) { q.SetDeferredKicks(false) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, TickInterval: time.Hour}, "priority")
			be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 8})
			svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 8, Class: sched.ClassHigh})
			svc.SetDeferredKicks(tc.deferred)
			svc.SetOwnCompletions(true) // as the driver's service: no waiter completes (and dispatches) for it
			ctx := tctx(t)
			waitBackgroundAsleep(t, s)
			beSt, svcSt := newFakeStream(true), newFakeStream(true)
			taken := make(chan struct{})
			marker := &sched.Command{Kind: sched.Marker, Stream: beSt, Flags: sched.Batched, Issue: func() error { close(taken); return nil }}
			if err := be.Submit(ctx, marker); err != nil {
				t.Fatal(err)
			}
			select {
			case <-taken:
				t.Skip("the background goroutine took the marker before the service came (a race this test cannot rule out)")
			case <-time.After(20 * time.Millisecond):
			}
			if err := svc.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: svcSt, Issue: svcSt.op}); err != nil {
				t.Fatal(err)
			}
			var want uint64
			if tc.deferred {
				want = 1
			}
			if have := svc.Stats().KicksDeferred; have != want {
				t.Errorf("Stats().KicksDeferred = %d, want %d", have, want)
			}
			if !tc.deferred {
				if svc.KickOwed() {
					t.Error("a kick owed without deferral")
				}
				select {
				case <-taken:
				case <-time.After(10 * time.Second):
					t.Fatalf("the marker was left undispatched\n%s", s.Dump())
				}
				return
			}
			if !svc.KickOwed() {
				t.Fatalf("no kick owed after the service's Submit left a marker queued\n%s", s.Dump())
			}
			select {
			case <-taken:
				t.Fatal("the background goroutine was woken although the kick was deferred")
			case <-time.After(50 * time.Millisecond):
			}
			tc.pay(svc)
			if svc.KickOwed() {
				t.Error("the kick still owed after it was paid")
			}
			select {
			case <-taken:
			case <-time.After(10 * time.Second):
				t.Fatalf("the marker was left undispatched after the kick was paid\n%s", s.Dump())
			}
		})
	}
}

// A command with TimeLock notes when Submit took the scheduler's lock for
// it: after whoever held it let go. One without it notes nothing.
func TestTimeLock(t *testing.T) {
	s := newSched(t, sched.Options{Device: &fakeDevice{}})
	q := newQueue(t, s, sched.QueueParams{Tenant: "a", Session: 1, Depth: 8})
	ctx := tctx(t)
	st := newFakeStream(true)
	timed := &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op, TimeLock: true}
	unlock := s.Lock()
	submitted := make(chan error, 1)
	go func() { submitted <- q.Submit(ctx, timed) }()
	time.Sleep(10 * time.Millisecond) // let it wait for the lock (if it is slower, it still must not stamp before the release)
	released := time.Now()
	unlock()
	if err := <-submitted; err != nil {
		t.Fatal(err)
	}
	if timed.Locked.Before(released) {
		t.Errorf("Locked %v, before the lock was released at %v", timed.Locked, released)
	}
	plain := &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op}
	if err := q.Submit(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if !plain.Locked.IsZero() {
		t.Errorf("Locked %v without TimeLock, want zero", plain.Locked)
	}
}

// InDriver counts the goroutines issuing commands, with CountIssuing: a
// command's Issue sees itself, a service's command issued by the express
// lane while a best-effort one is stuck in its Issue sees both, and none
// are left once both returned. Without CountIssuing it says so (-1).
func TestInDriver(t *testing.T) {
	off := newServiceSched(t, sched.Options{Device: &fakeDevice{}}, "priority")
	offQ := newQueue(t, off, sched.QueueParams{Tenant: "service", Session: 1, Depth: 8})
	offSt := newFakeStream(true)
	uncounted := 0
	if err := offQ.Submit(tctx(t), &sched.Command{Kind: sched.Compute, Stream: offSt, Issue: func() error { uncounted = off.InDriver(); return offSt.op() }}); err != nil {
		t.Fatal(err)
	}
	if uncounted != -1 {
		t.Errorf("without CountIssuing, InDriver = %d, want -1", uncounted)
	}

	s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, CountIssuing: true}, "priority")
	be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 8})
	svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 8})
	ctx := tctx(t)
	st := newFakeStream(true)
	var alone int
	if err := svc.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: func() error { alone = s.InDriver(); return st.op() }}); err != nil {
		t.Fatal(err)
	}
	if alone != 1 {
		t.Errorf("a command issued alone saw %d issuing, want 1 (itself)", alone)
	}
	g := newGate(t)
	beSt, svcSt := newFakeStream(true), newFakeStream(true)
	go be.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: beSt, Flags: sched.Sync, Issue: g.then(beSt.op)})
	<-g.stuck
	beside := make(chan int, 1)
	if err := svc.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: svcSt, Issue: func() error { beside <- s.InDriver(); return svcSt.op() }}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-beside:
		if n != 2 {
			t.Errorf("the service's command, issued beside a stuck one, saw %d issuing, want 2", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the service's command was not issued beside the stuck one\n%s", s.Dump())
	}
	g.open()
	if err := be.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if n := s.InDriver(); n != 0 {
		t.Errorf("%d issuing after both returned, want 0", n)
	}
}

// TestSparedKicks: a high-class submitter that issued its own commands
// leaves the background goroutine asleep when the other work queued has a
// completion coming (the best effort's command in flight, the service's
// own): no wake-up owed, one spared, and that work is issued as the
// completions come. It owes one where none would come to the work: an
// engine with work queued and nothing in flight, or a dispatch another
// goroutine left to it (a marker at a stream's head: TestDeferredKicks);
// and always under Options.NoSpareKicks.
func TestSparedKicks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noSpare bool
		missed  bool       // a goroutine left its dispatching to the service's
		kind    sched.Kind // of the best effort's work
		held    bool       // the best effort's queue held: nothing of it in flight
		owed    bool
	}{
		{"completions will come", false, false, sched.Compute, false, false},
		{"work on an idle engine", false, false, sched.Copy, true, true},
		{"a dispatch left to it", false, true, sched.Compute, false, true},
		{"NoSpareKicks", true, false, sched.Compute, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServiceSched(t, sched.Options{Device: &fakeDevice{}, TickInterval: time.Hour, TenantInFlight: 1, NoSpareKicks: tc.noSpare}, "priority")
			be := newQueue(t, s, sched.QueueParams{Tenant: "be", Session: 1, Depth: 8})
			svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 2, Depth: 8, Class: sched.ClassHigh})
			svc.SetDeferredKicks(true)
			svc.SetOwnCompletions(true) // as the driver's service: it reaps its own
			ctx := tctx(t)
			beSt, svcSt := newFakeStream(false), newFakeStream(true)
			release := func() {}
			if tc.held {
				var err error
				if release, err = be.Hold(ctx); err != nil {
					t.Fatal(err)
				}
			}
			const n = 4
			var done atomic.Int32
			for range n {
				c := &sched.Command{Kind: tc.kind, Stream: beSt, Issue: beSt.op, Bytes: 1 << 20, Done: func(error) { done.Add(1) }}
				if err := be.Submit(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			waitBackgroundAsleep(t, s)
			if tc.missed {
				s.SetMissed()
			}
			if err := svc.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: svcSt, Issue: svcSt.op}); err != nil {
				t.Fatal(err)
			}
			st := svc.Stats()
			if st.KicksDeferred+st.KicksSpared != 1 || svc.KickOwed() != tc.owed || (st.KicksDeferred == 1) != tc.owed {
				t.Fatalf("kicks deferred %d, spared %d, owed %v; want one, owed %v\n%s", st.KicksDeferred, st.KicksSpared, svc.KickOwed(), tc.owed, s.Dump())
			}
			svc.Reap() // the service's answered request, in the driver
			svc.Kick() // pays one owed
			release()
			for deadline := time.Now().Add(10 * time.Second); done.Load() < n; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d of the best effort's %d commands done\n%s", done.Load(), n, s.Dump())
				}
				beSt.release(-1)
			}
		})
	}
}
