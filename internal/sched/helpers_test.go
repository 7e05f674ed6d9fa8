package sched_test

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/sched"
)

// workPTX is a kernel whose every thread loops n times: three instructions an
// iteration, three more around the loop.
const workPTX = `
.version 8.0
.target sm_80
.address_size 64

.visible .entry work(.param .u32 work_n)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	ld.param.u32 %r1, [work_n];
	mov.u32 %r2, 0;
$L_loop:
	add.u32 %r2, %r2, 1;
	setp.lt.u32 %p1, %r2, %r1;
	@%p1 bra $L_loop;
	ret;
}
`

// simGPU is a software GPU whose clock runs at 1 MHz on one SM, so that a
// thread-instruction costs one virtual microsecond: kernels of a few hundred
// instructions stand for long GPU work while costing little real time.
type simGPU struct {
	dev  *sim.Device
	work backend.Function
}

func newSimGPU(t testing.TB) *simGPU {
	t.Helper()
	return newSimGPUOf(t, 1, false)
}

// newSimGPUOf is newSimGPU with sms SMs, each of which runs one block at a
// time; with concurrent, kernels of different streams run side by side on
// free SMs, as on a GPU (sim.Options.ConcurrentKernels).
func newSimGPUOf(t testing.TB, sms int, concurrent bool) *simGPU {
	t.Helper()
	b := sim.New(sim.Options{SMs: sms, Memory: 64 << 20, Workers: 1, ConcurrentKernels: concurrent,
		Cost: sim.CostModel{ClockMHz: 1, IssuePerSMPerClock: 1, LaunchOverhead: time.Microsecond}})
	d, err := b.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	mod, err := d.LoadModule([]byte(workPTX))
	if err != nil {
		t.Fatal(err)
	}
	fn, err := mod.Function("work")
	if err != nil {
		t.Fatal(err)
	}
	return &simGPU{dev: d.(*sim.Device), work: fn}
}

// function loads work again: a kernel of its own, which a placement trace
// tells apart from g.work.
func (g *simGPU) function(t testing.TB) backend.Function {
	t.Helper()
	mod, err := g.dev.LoadModule([]byte(workPTX))
	if err != nil {
		t.Fatal(err)
	}
	fn, err := mod.Function("work")
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

func (g *simGPU) stream(t testing.TB, prio int) backend.Stream {
	t.Helper()
	st, err := g.dev.NewStream(prio)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Destroy() })
	return st
}

func params(n uint32) []byte {
	return binary.LittleEndian.AppendUint32(nil, n)
}

// launch returns an Issue that launches work(n) with blocks blocks.
func (g *simGPU) launch(st backend.Stream, n, blocks uint32) func() error {
	return g.launchOf(g.work, st, n, blocks)
}

// launchOf is launch of fn, a load of work.
func (g *simGPU) launchOf(fn backend.Function, st backend.Stream, n, blocks uint32) func() error {
	p := params(n)
	return func() error {
		return st.Launch(fn, backend.LaunchConfig{Grid: [3]uint32{blocks, 1, 1}, Block: [3]uint32{1, 1, 1}}, p)
	}
}

// activeService makes tenant "service" of the high class and runs one small
// kernel of it to completion: under priority (with a clock that stands
// still) it then counts as active, and holds the lower classes back.
func (g *simGPU) activeService(t testing.TB, ctx context.Context, s *sched.Scheduler) {
	t.Helper()
	if err := s.SetShare("service", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassHigh, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	svc := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 1})
	st := g.stream(t, 0)
	if err := svc.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: g.launch(st, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// cost measures the virtual time of work(n) on blocks blocks, alone.
func (g *simGPU) cost(t testing.TB, n, blocks uint32) time.Duration {
	t.Helper()
	st := g.stream(t, 0)
	a, _ := g.dev.NewEvent(0)
	b, _ := g.dev.NewEvent(0)
	if err := st.Record(a); err != nil {
		t.Fatal(err)
	}
	if err := g.launch(st, n, blocks)(); err != nil {
		t.Fatal(err)
	}
	st.Record(b)
	if err := b.Synchronize(); err != nil {
		t.Fatal(err)
	}
	d, err := b.Elapsed(a)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitBackgroundAsleep waits until s's background goroutine has gone to
// sleep, and a little more, so that it is parked rather than between its
// last checks.
func waitBackgroundAsleep(t testing.TB, s *sched.Scheduler) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !s.BackgroundAsleep(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the background goroutine did not go to sleep")
		}
	}
	time.Sleep(5 * time.Millisecond)
}

func newSched(t testing.TB, o sched.Options) *sched.Scheduler {
	t.Helper()
	s, err := sched.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func newQueue(t testing.TB, s *sched.Scheduler, p sched.QueueParams) *sched.Queue {
	t.Helper()
	q, err := s.NewQueue(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	return q
}

// tctx is a test's context: it ends shortly before the test binary's own
// deadline (go test -timeout), so that a hang fails the test with an error
// rather than a panic, however slowly a loaded machine runs it.
func tctx(t testing.TB) context.Context {
	deadline := time.Now().Add(time.Hour)
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := tt.Deadline(); ok {
			deadline = d.Add(-10 * time.Second)
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// ---- a fake device whose streams complete work only when told --------------

type fakeDevice struct {
	backend.Device // nil: only NewEvent is used
	events         atomic.Int64
	blocking       atomic.Int64 // events made with EventBlockingSync
	syncs, queries atomic.Int64 // Synchronize and Query calls on its events
}

func (d *fakeDevice) NewEvent(flags backend.EventFlags) (backend.Event, error) {
	d.events.Add(1)
	if flags&backend.EventBlockingSync != 0 {
		d.blocking.Add(1)
	}
	return &fakeEvent{dev: d}, nil
}

// fakeStream counts the operations enqueued on it; they complete in order
// when released (or at once when auto).
type fakeStream struct {
	mu       sync.Mutex
	cond     *sync.Cond
	enqueued int
	done     int
	auto     bool
	failNext error
	records  int   // events recorded on it
	queryErr error // Query's error, if set: the stream's work failed
}

func newFakeStream(auto bool) *fakeStream {
	f := &fakeStream{auto: auto}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// op enqueues one operation.
func (f *fakeStream) op() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failNext; err != nil {
		f.failNext = nil
		return err
	}
	f.enqueued++
	if f.auto {
		f.done = f.enqueued
		f.cond.Broadcast()
	}
	return nil
}

// release completes up to n more operations (all if n < 0).
func (f *fakeStream) release(n int) {
	f.mu.Lock()
	if n < 0 || f.done+n > f.enqueued {
		f.done = f.enqueued
	} else {
		f.done += n
	}
	f.cond.Broadcast()
	f.mu.Unlock()
}

// ops is how many operations were enqueued on the stream.
func (f *fakeStream) ops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.enqueued
}

func (f *fakeStream) pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.enqueued - f.done
}

func (f *fakeStream) Launch(backend.Function, backend.LaunchConfig, []byte) error { return f.op() }
func (f *fakeStream) CopyHtoD(backend.DevicePtr, []byte) error                    { return f.op() }
func (f *fakeStream) CopyDtoH([]byte, backend.DevicePtr) error                    { return f.op() }
func (f *fakeStream) CopyDtoD(_, _ backend.DevicePtr, _ uint64) error             { return f.op() }
func (f *fakeStream) Memset(backend.DevicePtr, uint32, int, uint64) error         { return f.op() }
func (f *fakeStream) WaitEvent(backend.Event) error                               { return nil }
func (f *fakeStream) Callback(func(error)) error                                  { return errors.ErrUnsupported }
func (f *fakeStream) Query() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queryErr != nil {
		return false, f.queryErr
	}
	return f.done == f.enqueued, nil
}
func (f *fakeStream) Destroy() error { return nil }
func (f *fakeStream) Synchronize() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.done < f.enqueued {
		f.cond.Wait()
	}
	return nil
}

func (f *fakeStream) Record(e backend.Event) error {
	f.mu.Lock()
	ev := e.(*fakeEvent)
	ev.mu.Lock()
	ev.st, ev.at = f, f.enqueued
	ev.mu.Unlock()
	f.records++
	f.mu.Unlock()
	return nil
}

// fence marks the stream's work enqueued so far (backend.Fence): reached
// once it is released. A fence of a stream whose work failed is never
// reached.
func (f *fakeStream) fence() backend.Fence {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &fakeFence{st: f, at: f.enqueued}
}

type fakeFence struct {
	st *fakeStream
	at int
}

func (e *fakeFence) Reached() bool {
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	return e.st.queryErr == nil && e.st.done >= e.at
}

type fakeEvent struct {
	mu  sync.Mutex
	st  *fakeStream
	at  int
	dev *fakeDevice // counts calls, if set
}

func (e *fakeEvent) wait() {
	e.mu.Lock()
	st, at := e.st, e.at
	e.mu.Unlock()
	if st == nil {
		return
	}
	st.mu.Lock()
	for st.done < at {
		st.cond.Wait()
	}
	st.mu.Unlock()
}

func (e *fakeEvent) Query() (bool, error) {
	if e.dev != nil {
		e.dev.queries.Add(1)
	}
	e.mu.Lock()
	st, at := e.st, e.at
	e.mu.Unlock()
	if st == nil {
		return true, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.done >= at, nil
}
func (e *fakeEvent) Synchronize() error {
	if e.dev != nil {
		e.dev.syncs.Add(1)
	}
	e.wait()
	return nil
}
func (e *fakeEvent) Elapsed(backend.Event) (time.Duration, error) {
	return 0, errors.ErrUnsupported
}
func (e *fakeEvent) Destroy() error { return nil }
