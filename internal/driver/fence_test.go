package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/sched"
)

// TestHighClassSyncPollsFences: a high-class session's synchronizing calls
// (a synchronize, one naming a stream, a buffer read) poll fences and see
// the work's results, and its serving goroutine completes the work's
// completion events itself; a normal-class session's, and a high-class one's
// with $GPUOS_SYNC_FENCE=0, synchronize the streams instead, and leave the
// events to the scheduler's waiters, as with $GPUOS_SYNC_OWN=0; with
// $GPUOS_SYNC_FENCE_PACED=1 the normal class waits by fences too.
func TestHighClassSyncPollsFences(t *testing.T) {
	td := newTestDriver(t, 256<<20, Options{Sched: sched.Options{Policy: "priority"}})
	d := td.d
	for name, class := range map[string]sched.Class{"hp": sched.ClassHigh, "nm": sched.ClassNormal} {
		if err := d.sched.SetShare(name, sched.Share{Compute: 1, Copy: 1, Class: class, ClassSet: true}); err != nil {
			t.Fatal(err)
		}
	}
	// work runs vecadd in a session with rings, on the session's stream and
	// on one it creates, and returns how many fences its synchronizing calls
	// enqueued meanwhile, and how many completion events its serving
	// goroutine completed itself after answering them (the scheduler's
	// waiters took the others).
	work := func(tenant string) (fences, reaped uint64) {
		t.Helper()
		ts := td.session(tenant, 0)
		ts.useRings()
		before := td.watch.fences.Load()
		k := ts.loadKernel("vecadd.ptx", "vecadd")
		var sc v1.StreamCreated
		ts.must(&v1.CreateStream{}, &sc)
		const n = 1024
		buf := ts.vecaddBuffer(n, func(i int) float32 { return float32(i) }, func(i int) float32 { return float32(2 * i) })
		for round, stream := range []uint64{0, sc.Handle} {
			ts.must(&v1.Memset{Dst: v1.Ref{Buffer: buf.Handle, Offset: 8 * n}, Value: 0, ElemSize: 4, Count: n, Stream: stream}, nil)
			ts.must(vecaddLaunch(k, buf, n, stream), nil)
			ts.must(&v1.Synchronize{Stream: stream}, nil)
			ts.expectVecadd(buf, n, func(i int) float32 { return float32(3 * i) }, fmt.Sprintf("%s, round %d, after the synchronize", tenant, round))
		}
		// The serving goroutine reaps after answering the synchronize,
		// before it serves the BufferRead that followed.
		return uint64(td.watch.fences.Load() - before), ts.s.queue.Stats().Reaped
	}
	if fences, reaped := work("hp"); fences < 2 || reaped < 2 {
		t.Errorf("high class: %d fences enqueued and %d completions reaped, want at least one each for each of the 2 synchronizes", fences, reaped)
	}
	if fences, reaped := work("nm"); fences != 0 || reaped != 0 {
		t.Errorf("normal class: %d fences enqueued, %d completions reaped, want 0", fences, reaped)
	}
	env := pacedFencesOn.Swap(true) // $GPUOS_SYNC_FENCE_PACED=1: the others wait by fences too
	fences, reaped := work("nm")
	pacedFencesOn.Store(env)
	if fences < 2 || reaped != 0 {
		t.Errorf("normal class with %s=1: %d fences enqueued, %d completions reaped, want at least 2 and 0", PacedFenceEnv, fences, reaped)
	}
	t.Setenv(OwnCompletionsEnv, "0")
	if fences, reaped := work("hp"); fences < 2 || reaped != 0 {
		t.Errorf("high class with %s=0: %d fences enqueued, %d completions reaped, want at least 2 and 0", OwnCompletionsEnv, fences, reaped)
	}
	t.Setenv(SyncFenceEnv, "0")
	if fences, reaped := work("hp"); fences != 0 || reaped != 0 {
		t.Errorf("high class with %s=0: %d fences enqueued, %d completions reaped, want 0", SyncFenceEnv, fences, reaped)
	}
}

// fenceStream is a stream whose fences and Query a test controls.
type fenceStream struct {
	backend.Stream
	reached  atomic.Bool  // what its fences report
	queryErr atomic.Value // error: what Query reports, if set
	fenceErr error        // what Fence returns
	latest   bool         // whether LatestFence offers one
	fenced   atomic.Int32 // fences enqueued
	syncs    atomic.Int32
	queries  atomic.Int32
}

type testFence struct{ s *fenceStream }

func (f testFence) Reached() bool { return f.s.reached.Load() }

func (s *fenceStream) Fence() (backend.Fence, error) {
	if s.fenceErr != nil {
		return nil, s.fenceErr
	}
	s.fenced.Add(1)
	return testFence{s}, nil
}

func (s *fenceStream) LatestFence() (backend.Fence, bool) {
	if !s.latest {
		return nil, false
	}
	return testFence{s}, true
}

func (s *fenceStream) Query() (bool, error) {
	s.queries.Add(1)
	if err, ok := s.queryErr.Load().(error); ok {
		return true, err
	}
	return false, nil
}

func (s *fenceStream) Synchronize() error {
	s.syncs.Add(1)
	if err, ok := s.queryErr.Load().(error); ok {
		return err
	}
	return nil
}

// TestPollingFor: the driver's pollers keep their goroutine's P and spin
// before yielding on a device whose work needs no host CPU (a GPU), and
// yield from the start, the P too, on one whose work runs on this process's
// goroutines (the software GPU), where a poller holding on would hold up
// the work it waits for. Through a wrapping backend too.
func TestPollingFor(t *testing.T) {
	dev, err := sim.New(sim.Options{Memory: 64 << 20}).Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	w := &remapWatch{Backend: sim.New(sim.Options{Memory: 64 << 20}), running: map[backend.Stream]int{}}
	wdev, err := w.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer wdev.Close()
	for _, tt := range []struct {
		name   string
		dev    backend.Device
		onHost bool
		spin   time.Duration
	}{
		{"sim", dev, true, 0},
		{"sim, wrapped", wdev, true, 0},
		{"GPU", struct{ backend.Device }{}, false, fenceSpin()}, // no backend.HostExecutor
	} {
		p := pollingFor(tt.dev, &pollerPs{})
		if p.onHost != tt.onHost || p.fenceSpin != tt.spin || p.yield == nil {
			t.Errorf("%s: polling on host %v, fence spin %v (yield set: %v); want %v, %v", tt.name, p.onHost, p.fenceSpin, p.yield != nil, tt.onHost, tt.spin)
		}
	}
}

// awaitStreams: fences reached end the wait with no driver synchronize;
// work that fails is reported by Query while the poller waits; a fence not
// reached within the poll gives way to a synchronize; a stream that cannot
// take a fence is synchronized; a stream whose latest fence still marks its
// work (backend.LatestFencer) gets no other.
func TestAwaitStreams(t *testing.T) {
	errLost := errors.New("context lost")
	tests := []struct {
		name     string
		poll     time.Duration
		paced    bool // $GPUOS_SYNC_FENCE_PACED=1
		setup    func(a, b *fenceStream)
		wantHow  int
		wantErr  error
		wantSync int32 // synchronizes of both streams together
		wantNew  int32 // fences enqueued on both streams together
	}{
		{"reached", time.Second, false, func(a, b *fenceStream) { a.reached.Store(true); b.reached.Store(true) }, waitedFence, nil, 0, 2},
		{"work fails while polling", time.Minute, false, func(a, b *fenceStream) {
			a.reached.Store(true)
			time.AfterFunc(5*time.Millisecond, func() { b.queryErr.Store(errLost) })
		}, waitedFence, errLost, 0, 2},
		{"not reached in the poll", 3 * time.Millisecond, false, func(a, b *fenceStream) { a.reached.Store(true) }, waitedFenceLong, nil, 1, 2},
		{"no fence", time.Second, false, func(a, b *fenceStream) { a.reached.Store(true); b.fenceErr = backend.ErrUnsupported }, waitedSync, nil, 2, 1},
		{"not polling", 0, false, func(a, b *fenceStream) {}, waitedSync, nil, 2, 0},
		{"paced: reached later", 0, true, func(a, b *fenceStream) {
			a.reached.Store(true)
			time.AfterFunc(5*time.Millisecond, func() { b.reached.Store(true) })
		}, waitedFence, nil, 0, 2},
		{"paced: work fails", 0, true, func(a, b *fenceStream) {
			time.AfterFunc(5*time.Millisecond, func() { a.queryErr.Store(errLost) })
		}, waitedFence, errLost, 0, 2},
		{"both enqueued before", time.Second, false, func(a, b *fenceStream) {
			a.latest, b.latest = true, true
			a.reached.Store(true)
			time.AfterFunc(5*time.Millisecond, func() { b.reached.Store(true) })
		}, waitedFenceEarly, nil, 0, 0},
		{"one enqueued before", time.Second, false, func(a, b *fenceStream) {
			a.latest = true
			a.reached.Store(true)
			b.reached.Store(true)
		}, waitedFence, nil, 0, 1},
		{"enqueued before, not reached in the poll", 3 * time.Millisecond, false, func(a, b *fenceStream) {
			a.latest, b.latest = true, true
		}, waitedFenceLong, nil, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := pacedFencesOn.Swap(tt.paced) // $GPUOS_SYNC_FENCE_PACED, read once per process
			defer pacedFencesOn.Store(env)
			s := &Session{d: &Driver{polling: pollingFor(nil, &pollerPs{})}} // a GPU's
			s.fencePoll.Store(int64(tt.poll))
			a, b := &fenceStream{}, &fenceStream{}
			tt.setup(a, b)
			how, err := s.awaitStreams([]backend.Stream{a, b})
			if how != tt.wantHow || !errors.Is(err, tt.wantErr) {
				t.Errorf("awaitStreams = %d, %v; want %d, %v", how, err, tt.wantHow, tt.wantErr)
			}
			if got := a.syncs.Load() + b.syncs.Load(); got != tt.wantSync {
				t.Errorf("%d stream synchronizes, want %d", got, tt.wantSync)
			}
			if got := a.fenced.Load() + b.fenced.Load(); got != tt.wantNew {
				t.Errorf("%d fences enqueued, want %d", got, tt.wantNew)
			}
		})
	}
}

// TestPrefence: once a high-class session's launch is answered, its serving
// goroutine enqueues a fence behind the kernel, and the synchronize that
// follows polls that one instead of enqueueing another (TestAwaitStreams:
// not one that more work overtook). With $GPUOS_SYNC_PREFENCE=0 the
// synchronize enqueues its fence itself.
func TestPrefence(t *testing.T) {
	td := newTestDriver(t, 256<<20, Options{Sched: sched.Options{Policy: "priority"}})
	if err := td.d.sched.SetShare("hp", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassHigh, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	env := prefenceOn.Swap(true) // $GPUOS_SYNC_PREFENCE, read once per process
	defer prefenceOn.Store(env)
	// Prefence alone: the launch's own fence (TestLaunchFence) would be the
	// one found.
	defer launchFenceOn.Store(launchFenceOn.Swap(false))
	ts := td.session("hp", 0)
	ts.useRings()
	k := ts.loadKernel("vecadd.ptx", "vecadd")
	const n = 1024
	index := func(i int) float32 { return float32(i) }
	buf := ts.vecaddBuffer(n, index, index)
	launch := vecaddLaunch(k, buf, n, 0)
	// check reads c = a + a back after the synchronize.
	check := func(what string) {
		t.Helper()
		ts.expectVecadd(buf, n, func(i int) float32 { return float32(2 * i) }, what)
	}
	// waitFences waits (bounded, no timing asserted) for the fence count to
	// reach want, and reports whether it did.
	waitFences := func(want int64) bool {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if td.watch.fences.Load() >= want {
				return true
			}
		}
		return false
	}

	ts.must(&v1.Memset{Dst: v1.Ref{Buffer: buf.Handle, Offset: 8 * n}, Value: 0, ElemSize: 4, Count: n}, nil)
	ts.must(&v1.Synchronize{}, nil)
	before := td.watch.fences.Load()
	ts.must(launch, nil)
	if !waitFences(before + 1) {
		t.Fatalf("no fence enqueued after the launch was answered (%d fences)", td.watch.fences.Load()-before)
	}
	ts.must(&v1.Synchronize{}, nil)
	if got := td.watch.fences.Load() - before; got != 1 {
		t.Errorf("launch, answer, synchronize: %d fences enqueued, want 1 (the synchronize polls the one after the answer)", got)
	}
	check("prefenced")

	prefenceOn.Store(false)
	before = td.watch.fences.Load()
	ts.must(launch, nil)
	ts.must(&v1.Synchronize{}, nil)
	if got := td.watch.fences.Load() - before; got != 1 {
		t.Errorf("with %s=0: %d fences enqueued by a launch and a synchronize, want 1", PrefenceEnv, got)
	}
	check("without prefence")
}

// opLog is a backend whose streams log what is enqueued on them, in order:
// "L" a launch, "F" a fence, "M" a marker (the scheduler's own events), "R"
// another record.
type opLog struct {
	backend.Backend
	mu  sync.Mutex
	ops []string
}

type opLogDevice struct {
	backend.Device
	l *opLog
}

type opLogStream struct {
	backend.Stream
	l *opLog
}

func (l *opLog) Open(ordinal int) (backend.Device, error) {
	dev, err := l.Backend.Open(ordinal)
	if err != nil {
		return nil, err
	}
	return opLogDevice{dev, l}, nil
}

func (d opLogDevice) NewStream(priority int) (backend.Stream, error) {
	st, err := d.Device.NewStream(priority)
	if err != nil {
		return nil, err
	}
	return opLogStream{st, d.l}, nil
}

func (l *opLog) add(op string) {
	l.mu.Lock()
	l.ops = append(l.ops, op)
	l.mu.Unlock()
}

// take returns the log so far and empties it.
func (l *opLog) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.Join(l.ops, "")
	l.ops = nil
	return s
}

// The log's entry goes in under the stream's call, so that the log's order
// is the stream's.
func (st opLogStream) Launch(f backend.Function, cfg backend.LaunchConfig, params []byte) error {
	st.l.mu.Lock()
	defer st.l.mu.Unlock()
	st.l.ops = append(st.l.ops, "L")
	return st.Stream.Launch(f, cfg, params)
}

func (st opLogStream) Record(e backend.Event) error {
	st.l.mu.Lock()
	defer st.l.mu.Unlock()
	st.l.ops = append(st.l.ops, "R")
	return st.Stream.Record(e)
}

func (st opLogStream) RecordMarker(e backend.Event) error {
	st.l.mu.Lock()
	defer st.l.mu.Unlock()
	st.l.ops = append(st.l.ops, "M")
	return st.Stream.(backend.MarkerRecorder).RecordMarker(e)
}

func (st opLogStream) Fence() (backend.Fence, error) {
	st.l.mu.Lock()
	defer st.l.mu.Unlock()
	st.l.ops = append(st.l.ops, "F")
	return st.Stream.(backend.Fencer).Fence()
}

func (st opLogStream) LatestFence() (backend.Fence, bool) {
	return st.Stream.(backend.LatestFencer).LatestFence()
}

// TestLaunchFence: a fence-polling session's launch with a synchronize
// behind it, or nothing yet, is fenced in its issue, right behind the
// kernel and ahead of the scheduler's completion event, and the
// synchronize polls that fence; a launch with more launches behind it is
// not; with $GPUOS_SYNC_LAUNCHFENCE=0 the fence comes behind the event.
func TestLaunchFence(t *testing.T) {
	l := &opLog{Backend: sim.New(sim.Options{Memory: 256 << 20})}
	td := newDriverOn(t, l, Options{Sched: sched.Options{Policy: "priority"}})
	if err := td.d.sched.SetShare("hp", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassHigh, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	f := newScriptFixture(t, td, "hp")
	f.s.fencePoll.Store(int64(HighClassSpin)) // as its rings' opening would
	defer prefenceOn.Store(prefenceOn.Load())
	defer launchFenceOn.Store(launchFenceOn.Load())
	// afterLaunches is what the log holds behind each launch: its fence, or
	// the scheduler's marker, and the number of fences in all.
	afterLaunches := func(log string) (after string, fences int) {
		for i := 0; i < len(log); i++ {
			if log[i] == 'L' && i+1 < len(log) {
				after += log[i+1 : i+2]
			}
		}
		return after, strings.Count(log, "F")
	}
	for _, c := range []struct {
		name      string
		on        bool
		launches  int
		sync      bool
		wantAfter string
		wantF     int
	}{
		{"a launch, then a synchronize", true, 1, true, "F", 1},
		{"three launches, then a synchronize", true, 3, true, "MMF", 1},
		{"a launch, nothing behind it", true, 1, false, "F", 1},
		{"with the launch fence off", false, 1, true, "M", 1},
	} {
		launchFenceOn.Store(c.on)
		// Prefence off: the scripts' requests are not on the session's ring,
		// which prefence looks at (TestLaunchFenceWithPrefence has rings).
		prefenceOn.Store(false)
		f.reset()
		for i := range c.launches {
			f.launch(uint32(i), 1)
		}
		if c.sync {
			f.add(0, &v1.Synchronize{})
		}
		l.take()
		if sc := f.serve(nil); len(sc.errs) != 0 {
			t.Fatalf("%s: errors %v", c.name, sc.errs)
		}
		if !c.sync { // synchronize in a script of its own: nothing behind the launch
			f.reset()
			f.add(0, &v1.Synchronize{})
			if sc := f.serve(nil); len(sc.errs) != 0 {
				t.Fatalf("%s: errors %v", c.name, sc.errs)
			}
		}
		log := l.take()
		if after, fences := afterLaunches(log); after != c.wantAfter || fences != c.wantF {
			t.Errorf("%s: %q enqueued: behind the launches %q, %d fences; want %q, %d", c.name, log, after, fences, c.wantAfter, c.wantF)
		}
	}
}

// TestLaunchFenceWithPrefence: on rings, a launch answered with nothing
// behind it is fenced in its issue, and prefence, after the answer, finds
// that fence and enqueues none; the scheduler takes that fence for the
// launch's end and records no marker ($GPUOS_SCHED_FENCE_END=0: its marker
// comes behind the fence). With the launch fence off, prefence's fence
// comes behind the scheduler's marker. Either way the synchronize polls it.
func TestLaunchFenceWithPrefence(t *testing.T) {
	l := &opLog{Backend: sim.New(sim.Options{Memory: 256 << 20})}
	td := newDriverOn(t, l, Options{Sched: sched.Options{Policy: "priority"}})
	if err := td.d.sched.SetShare("hp", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassHigh, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	defer prefenceOn.Store(prefenceOn.Swap(true))
	defer launchFenceOn.Store(launchFenceOn.Load())
	defer fenceEndOn.Store(fenceEndOn.Load())
	ts := td.session("hp", 0)
	ts.useRings()
	k := ts.emptyKernel()
	launch := &v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}
	for _, c := range []struct {
		on, fenceEnd bool
		want         string // what follows the launch on the stream
	}{{true, true, "F"}, {true, false, "FM"}, {false, true, "MF"}} {
		launchFenceOn.Store(c.on)
		fenceEndOn.Store(c.fenceEnd)
		ts.must(&v1.Synchronize{}, nil)
		l.take()
		ts.must(launch, nil) // answered: nothing is behind it
		ts.must(&v1.Synchronize{}, nil)
		log := l.take()
		i := strings.LastIndex(log, "L")
		if i < 0 || log[i+1:] != c.want || strings.Count(log, "F") != 1 {
			t.Errorf("launch fence %v, fence end %v: %q enqueued; want one fence, and %q behind the launch", c.on, c.fenceEnd, log, c.want)
		}
	}
}

// TestHighClassDefersKicks: a high-class session that polls fences leaves
// the scheduler's background wake-ups its launches owe until its requests
// are answered, and pays them then: nothing stays owed, and the other
// tenant's work all completes. By default its launches owe none here (the
// service's own launch is in flight, and its completion will look at what
// is queued) and spare them, but for a round where another goroutine left
// its dispatching to the service's (the scheduler's missed dispatch, as
// the best effort's submissions and the background goroutine race the
// service's; 4 runs of the package in 80 on two CPUs met one); under
// sched.Options.NoSpareKicks they owe them and defer them; with
// $GPUOS_SCHED_DEFER_KICK=0 as well, they wake the goroutine at once.
func TestHighClassDefersKicks(t *testing.T) {
	for _, tc := range []struct {
		name                string
		noSpare, wakeAtOnce bool
		// mostly: the wake-ups that most rounds leave (none: no round
		// defers or spares one).
		mostly string
	}{
		{"spared", false, false, "spared"},
		{"deferred", true, false, "deferred"},
		{"at once", true, true, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wakeAtOnce {
				t.Setenv(DeferKickEnv, "0")
			}
			st := servedBesideHeldWork(t, sched.Options{Policy: "priority", NoSpareKicks: tc.noSpare})
			var ok bool
			switch d, sp := st.KicksDeferred, st.KicksSpared; tc.mostly {
			case "spared":
				ok = sp > d
			case "deferred":
				ok = d > 0 && sp == 0 // NoSpareKicks spares none
			default:
				ok = d == 0 && sp == 0
			}
			if !ok {
				t.Errorf("%d wake-ups deferred, %d spared; want %s", st.KicksDeferred, st.KicksSpared, tc.mostly)
			}
		})
	}
}

// servedBesideHeldWork runs rounds of a launch and its synchronize in a
// session of a high-class service while a best-effort tenant's launches
// are queued, checks that no wake-up stays owed and that both tenants' work
// completes, and returns the service's queue's counters.
func servedBesideHeldWork(t *testing.T, o sched.Options) sched.QueueStats {
	t.Helper()
	td := newTestDriver(t, 256<<20, Options{Sched: o})
	for name, class := range map[string]sched.Class{"hp": sched.ClassHigh, "be": sched.ClassLow} {
		if err := td.d.sched.SetShare(name, sched.Share{Compute: 1, Copy: 1, Class: class, ClassSet: true}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 1024
	be := td.session("be", 0)
	bk := be.loadKernel("vecadd.ptx", "vecadd")
	bbuf := be.vecaddBuffer(n, func(i int) float32 { return 1 }, func(i int) float32 { return 2 })
	hp, k, buf := newRingVecadd(td, "hp", n)
	// Held, the best effort's queue keeps its launches queued however fast
	// the software GPU runs them (unheld, they could all be done before the
	// service's first launch).
	release, err := be.s.queue.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for range 32 {
		be.must(vecaddLaunch(bk, bbuf, n, 0), nil)
	}
	for range 8 {
		hp.must(vecaddLaunch(k, buf, n, 0), nil)
		hp.must(&v1.Synchronize{}, nil)
	}
	// Paid after the last answer, on the serving goroutine.
	for deadline := time.Now().Add(10 * time.Second); hp.s.queue.KickOwed(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a wake-up of the dispatcher still owed after the service's requests were answered")
		}
	}
	release()
	be.must(&v1.Synchronize{}, nil) // the best effort's work all completes
	hp.expectVecadd(buf, n, func(i int) float32 { return float32(i + 1) }, "the service's result")
	return hp.s.queue.Stats()
}

// TestHighClassFenceEnds: the launches of a high-class session that polls
// fences end, to the scheduler, at the fence enqueued behind them (no
// completion event recorded for those it takes no timing from), and their
// results are right; with $GPUOS_SCHED_FENCE_END=0 each has its event.
func TestHighClassFenceEnds(t *testing.T) {
	td := newTestDriver(t, 256<<20, Options{Sched: sched.Options{Policy: "priority"}})
	if err := td.d.sched.SetShare("hp", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassHigh, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	const n, rounds = 1024, 32
	served := func() uint64 {
		t.Helper()
		hp, k, buf := newRingVecadd(td, "hp", n)
		for range rounds {
			hp.must(vecaddLaunch(k, buf, n, 0), nil)
			hp.must(&v1.Synchronize{}, nil)
		}
		hp.expectVecadd(buf, n, func(i int) float32 { return float32(i + 1) }, "the service's result")
		return hp.s.queue.Stats().FenceEnds
	}
	// One launch in 16 is timed (a start event, and an end event to
	// measure to).
	if ends := served(); ends < rounds/2 || ends > rounds-rounds/16 {
		t.Errorf("%d of %d launches ended at their fence, want most, and none of the %d timed", ends, rounds, rounds/16)
	}
	defer fenceEndOn.Store(fenceEndOn.Swap(false))
	if ends := served(); ends != 0 {
		t.Errorf("with %s=0, %d launches ended at their fence, want 0", FenceEndEnv, ends)
	}
}

// TestWaitFenceTimeout: a WaitFence with a timeout whose fence's record is
// not issued in time (the session's queue held, as the memory manager holds
// it to remap) fails with CodeTimeout, and the fence stays usable: waited
// for without a timeout once the queue runs again, it is reached.
func TestWaitFenceTimeout(t *testing.T) {
	td := newTestDriver(t, 256<<20, Options{})
	f := newScriptFixture(t, td, "low")
	release, err := f.s.queue.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.launch(0, f.sms+1)
	f.add(0, &v1.RecordFence{})
	sc := f.serve(nil)
	fc, ok := sc.replies[len(sc.replies)-1].(*v1.FenceCreated)
	if !ok || len(sc.errs) != 0 {
		t.Fatalf("record fence: replies %v, errors %v", sc.replies, sc.errs)
	}
	f.reset()
	f.add(0, &v1.WaitFence{Fence: fc.Handle, TimeoutNs: uint64(5 * time.Millisecond)})
	sc = f.serve(nil)
	if e, ok := sc.replies[len(sc.replies)-1].(*v1.Error); !ok || v1.CodeOf(e) != v1.CodeTimeout {
		t.Fatalf("wait with a timeout: reply %v, want a CodeTimeout error", sc.replies[len(sc.replies)-1])
	}
	release()
	f.reset()
	f.add(0, &v1.WaitFence{Fence: fc.Handle})
	if sc = f.serve(nil); len(sc.errs) != 0 {
		t.Fatalf("wait once the queue ran: %v", sc.errs)
	}
}

// newRingVecadd opens a session of tenant on rings with vecadd loaded and a
// buffer of n elements for it, a[i] = i and b[i] = 1.
func newRingVecadd(td *testDriver, tenant string, n int) (*testSession, v1.KernelInfo, v1.BufferCreated) {
	td.t.Helper()
	ts := td.session(tenant, 0)
	ts.useRings()
	k := ts.loadKernel("vecadd.ptx", "vecadd")
	return ts, k, ts.vecaddBuffer(n, func(i int) float32 { return float32(i) }, func(i int) float32 { return 1 })
}
