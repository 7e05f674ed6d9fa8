package sched_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/sched"
)

// issueLog records the order in which commands were issued.
type issueLog struct {
	mu    sync.Mutex
	names []string
}

func (l *issueLog) issue(name string, then func() error) func() error {
	return func() error {
		l.mu.Lock()
		l.names = append(l.names, name)
		l.mu.Unlock()
		if then != nil {
			return then()
		}
		return nil
	}
}

func (l *issueLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.names)
}

// waitFor polls until cond holds (the scheduler's goroutines get there).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestDependencyRule: commands of one stream are issued in submission order;
// a fence wait naming its record as After is issued only after the record,
// even on another stream; work on other streams is not held back by a
// stream that cannot proceed.
func TestDependencyRule(t *testing.T) {
	dev := &fakeDevice{}
	s := newSched(t, sched.Options{Device: dev, TenantInFlight: 1})
	q := newQueue(t, s, sched.QueueParams{Tenant: "t", Session: 1, Depth: 64})
	a, b := newFakeStream(false), newFakeStream(false)
	var log issueLog
	ctx := tctx(t)
	submit := func(c *sched.Command) {
		t.Helper()
		if err := q.Submit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// a0 is issued and stays in flight: the tenant's window (1) is full, so
	// a1 waits, and so does the record behind it on stream a.
	submit(&sched.Command{Kind: sched.Compute, Stream: a, Issue: log.issue("a0", a.op)})
	submit(&sched.Command{Kind: sched.Compute, Stream: a, Issue: log.issue("a1", a.op)})
	rec := &sched.Command{Kind: sched.Marker, Stream: a, Issue: log.issue("record", nil)}
	submit(rec)
	// On stream b: a marker with no dependency goes at once; the wait for
	// the record must not, nor what follows it on b.
	submit(&sched.Command{Kind: sched.Marker, Stream: b, Issue: log.issue("b-free", nil)})
	submit(&sched.Command{Kind: sched.Marker, Stream: b, After: rec, Issue: log.issue("wait", nil)})
	submit(&sched.Command{Kind: sched.Compute, Stream: b, Issue: log.issue("b1", b.op)})

	if got, want := log.get(), []string{"a0", "b-free"}; !slices.Equal(got, want) {
		t.Fatalf("issued before a0 completed: %v, want %v", got, want)
	}
	a.release(-1) // a0 completes: a1 goes, then the record, then the wait
	waitFor(t, "the wait to be issued", func() bool { return len(log.get()) == 5 })
	a.release(-1) // a1 completes: b1 gets the window
	waitFor(t, "b1 to be issued", func() bool { return len(log.get()) == 6 })
	b.release(-1)
	if err := q.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := log.get(), []string{"a0", "b-free", "a1", "record", "wait", "b1"}; !slices.Equal(got, want) {
		t.Errorf("issue order %v, want %v", got, want)
	}
}

// TestBackpressure: a full queue blocks Submit (a cancelled context shows it
// would block) without queuing the command.
func TestBackpressure(t *testing.T) {
	dev := &fakeDevice{}
	s := newSched(t, sched.Options{Device: dev, TenantInFlight: 4})
	q := newQueue(t, s, sched.QueueParams{Tenant: "t", Session: 1, Depth: 16})
	st := newFakeStream(false)
	ctx := tctx(t)
	var done atomic.Int64
	mk := func() *sched.Command {
		return &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op, Done: func(error) { done.Add(1) }}
	}
	for range 4 + 16 {
		if err := q.Submit(ctx, mk()); err != nil {
			t.Fatal(err)
		}
	}
	if st := q.Stats(); st.Queued != 16 || st.InFlight != 4 {
		t.Fatalf("queued %d, in flight %d; want 16 and 4", st.Queued, st.InFlight)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := q.Submit(cancelled, mk()); !errors.Is(err, context.Canceled) {
		t.Fatalf("submit to a full queue with a cancelled context: %v, want context.Canceled", err)
	}
	blocked := make(chan error, 1)
	go func() { blocked <- q.Submit(ctx, mk()) }()
	st.release(-1) // completions make room; the blocked submitter gets in
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	for q.Stats().Queued+q.Stats().InFlight > 0 {
		st.release(-1)
		time.Sleep(50 * time.Microsecond)
	}
	if err := q.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// Wait returns once the work completed; the Done callbacks follow.
	waitFor(t, "21 Done callbacks", func() bool { return done.Load() >= 21 })
	if n := done.Load(); n != 21 {
		t.Errorf("%d commands completed, want 21", n)
	}
}

// streamRecord is what one stream's commands did.
type streamRecord struct {
	mu      sync.Mutex
	issued  []int
	done    []int
	doneErr []error
}

// TestSwitchingPoliciesLosesAndReordersNothing: three tenants, two sessions
// each with two streams, submit commands, markers and cross-stream fence
// waits while the policy is switched every 200 µs through every
// built-in. Every command is issued exactly once, each stream in order, each
// wait after its record, and completes once without error.
func TestSwitchingPoliciesLosesAndReordersNothing(t *testing.T) {
	g := newSimGPU(t)
	s := newSched(t, sched.Options{Device: g.dev, SliceTarget: 50 * time.Microsecond,
		OnEject: func(p string, err error) { t.Errorf("policy %s ejected: %v", p, err) }})
	const perStream = 1500
	ctx := tctx(t)
	var order atomic.Int64 // global issue counter
	var wg sync.WaitGroup
	var recs []*streamRecord
	for ti, share := range []sched.Share{
		{Compute: 1, Copy: 1, Class: sched.ClassLow, ClassSet: true},
		{Compute: 3, Copy: 2},
		{Compute: 2, Copy: 1, Class: sched.ClassHigh, ClassSet: true},
	} {
		name := fmt.Sprintf("tenant%d", ti)
		if err := s.SetShare(name, share); err != nil {
			t.Fatal(err)
		}
		for si := range 2 {
			q := newQueue(t, s, sched.QueueParams{Tenant: name, Session: uint64(10*ti + si), Depth: 32})
			st := [2]backend.Stream{g.stream(t, 0), g.stream(t, 0)}
			r := [2]*streamRecord{{}, {}}
			recs = append(recs, r[0], r[1])
			est := &sched.Estimate{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				var pending *sched.Command // a record the other stream will wait for
				var pendingAt *atomic.Int64
				for i := range perStream {
					for k := range 2 {
						i, k, rec := i, k, r[k]
						var c *sched.Command
						issuedAt := &atomic.Int64{}
						note := func() {
							issuedAt.Store(order.Add(1))
							rec.mu.Lock()
							rec.issued = append(rec.issued, i)
							rec.mu.Unlock()
						}
						switch {
						case k == 0 && i%7 == 3:
							c = &sched.Command{Kind: sched.Marker, Stream: st[0]}
							c.Issue = func() error { note(); return nil }
							pending, pendingAt = c, issuedAt
						case k == 1 && pending != nil:
							after, afterAt := pending, pendingAt
							c = &sched.Command{Kind: sched.Marker, Stream: st[1], After: after}
							c.Issue = func() error {
								note()
								if afterAt.Load() == 0 || afterAt.Load() > issuedAt.Load() {
									t.Errorf("a wait was issued (%d) before its record (%d)", issuedAt.Load(), afterAt.Load())
								}
								return nil
							}
							pending = nil
						case i%5 == 4:
							launch := g.launch(st[k], 1, 1)
							c = &sched.Command{Kind: sched.Copy, Stream: st[k], Bytes: 4096}
							c.Issue = func() error { note(); return launch() }
						default:
							units := uint32(1 + i%4)
							c = &sched.Command{Kind: sched.Compute, Stream: st[k], Units: units, Estimate: est}
							c.Issue = func() error { note(); return g.launch(st[k], 3, units)() }
							c.IssueUnits = func(lo, hi uint32) error {
								if lo == 0 {
									note()
								}
								return g.launch(st[k], 3, hi-lo)()
							}
						}
						c.Done = func(err error) {
							rec.mu.Lock()
							rec.done = append(rec.done, i)
							rec.doneErr = append(rec.doneErr, err)
							rec.mu.Unlock()
						}
						if err := q.Submit(ctx, c); err != nil {
							t.Error(err)
							return
						}
					}
				}
				if err := q.Wait(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	stop := make(chan struct{})
	switched := make(chan int)
	go func() {
		n := 0
		defer func() { switched <- n }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
			if err := s.Use([]string{"fifo", "fair", "band", "priority"}[i%4]); err != nil {
				t.Error(err)
				return
			}
			n++
		}
	}()
	wg.Wait()
	close(stop)
	t.Logf("%d policy switches during the run", <-switched)
	if err := s.CheckIdle(); err != nil {
		t.Errorf("%v\n%s", err, s.Dump())
	}
	for i, r := range recs {
		// Queue.Wait returns once the commands completed; their Done
		// callbacks run just after, on the completion goroutines.
		waitFor(t, fmt.Sprintf("stream %d's Done callbacks", i), func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			return len(r.done) >= perStream
		})
		r.mu.Lock()
		defer r.mu.Unlock()
		want := make([]int, perStream)
		for k := range want {
			want[k] = k
		}
		if !slices.Equal(r.issued, want) {
			t.Errorf("stream %d issued %d commands out of order or not at all: %v", i, len(r.issued), r.issued)
		}
		done := slices.Clone(r.done)
		slices.Sort(done)
		if !slices.Equal(done, want) {
			t.Errorf("stream %d: %d commands completed, want each of %d once", i, len(r.done), perStream)
		}
		for _, err := range r.doneErr {
			if err != nil {
				t.Errorf("stream %d: command failed: %v", i, err)
				break
			}
		}
	}
}

// WaitIssued returns once another goroutine, holding the dispatch token
// while it issues other work, has issued the queue's command, and names its
// stream; whether it sleeps at once or polls first (Options.Spin).
func TestWaitIssuedWhileAnotherIssues(t *testing.T) {
	for _, spin := range []time.Duration{0, time.Millisecond, time.Minute} {
		t.Run(fmt.Sprint("spin=", spin), func(t *testing.T) {
			s := newSched(t, sched.Options{Device: &fakeDevice{}, Policy: "fifo", Spin: spin})
			ctx := tctx(t)
			qa := newQueue(t, s, sched.QueueParams{Tenant: "a", Session: 1})
			qb := newQueue(t, s, sched.QueueParams{Tenant: "b", Session: 2})
			sa, sb := newFakeStream(true), newFakeStream(true)
			inIssue, release := make(chan struct{}), make(chan struct{})
			go func() {
				// a's submitter issues its command itself and stays in the
				// backend, holding the dispatch token, until released.
				qa.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: sa, Issue: func() error {
					close(inIssue)
					<-release
					return sa.op()
				}})
			}()
			<-inIssue
			if err := qb.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: sb, Issue: sb.op}); err != nil {
				t.Fatal(err)
			}
			if sb.ops() != 0 {
				t.Fatalf("b's command issued while a's issue held the dispatch token")
			}
			type result struct {
				streams []backend.Stream
				err     error
			}
			got := make(chan result, 1)
			go func() {
				st, err := qb.WaitIssued(ctx, nil)
				got <- result{st, err}
			}()
			select {
			case r := <-got:
				t.Fatalf("WaitIssued returned %v, %v before b's command was issued", r.streams, r.err)
			case <-time.After(5 * time.Millisecond):
			}
			close(release)
			r := <-got
			if r.err != nil {
				t.Fatal(r.err)
			}
			if len(r.streams) != 1 || r.streams[0] != sb {
				t.Errorf("WaitIssued named %v, want b's stream", r.streams)
			}
			if sb.ops() != 1 {
				t.Errorf("b's stream got %d operations, want 1", sb.ops())
			}
			qa.Wait(ctx)
		})
	}
}
