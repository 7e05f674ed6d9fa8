package policy

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/sched"
)

var updateTrace = flag.Bool("update-trace", false, "record testdata/fair.trace.jsonl again on the software GPU")

// A trace is what a scheduling policy saw and decided, hook by hook: the
// scheduler's state as the Host showed it, the event, the decision, and the
// policy's virtual times after the hook. Replaying it through another policy
// (with an Env that shows the recorded state) tells whether it decides the
// same way.
type traceEvent struct {
	Hook     string         `json:"hook"` // init, submit, dispatch, complete, tick
	State    traceState     `json:"state"`
	Submit   *SubmitEvent   `json:"submit,omitempty"`
	Complete *CompleteEvent `json:"complete,omitempty"`
	Engine   uint32         `json:"engine,omitempty"`
	Ready    []uint32       `json:"ready,omitempty"`
	Choice   *Choice        `json:"choice,omitempty"`
	Now      time.Duration  `json:"now,omitempty"`
	// VT is the policy's virtual time per engine and tenant after the hook.
	VT [2][]int64 `json:"vt"`
}

type traceState struct {
	Now     time.Duration `json:"now"`
	Tenants []traceTenant `json:"tenants"`
}

type traceTenant struct {
	Name         string    `json:"name"`
	Weight       [2]int64  `json:"weight"`
	Queued       [2]int    `json:"queued"`
	InFlight     [2]int    `json:"in_flight"`
	InFlightCost [2]int64  `json:"in_flight_cost"`
	HeadSeq      [2]uint64 `json:"head_seq"`
	HeadCost     [2]int64  `json:"head_cost"`
	Usage        [2]int64  `json:"usage"`
}

func snapshot(h *sched.Host) traceState {
	st := traceState{Now: h.Now()}
	for t := range h.NumTenants() {
		id := sched.TenantID(t)
		tt := traceTenant{Name: h.TenantName(id)}
		for e := sched.Engine(0); e < sched.NumEngines; e++ {
			tt.Weight[e] = h.Weight(id, e)
			tt.Queued[e] = h.Queued(id, e)
			tt.InFlight[e] = h.InFlight(id, e)
			tt.InFlightCost[e] = h.InFlightCost(id, e)
			tt.HeadSeq[e] = h.HeadSeq(id, e)
			tt.HeadCost[e] = h.HeadCost(id, e)
			tt.Usage[e] = h.Usage(id, e)
		}
		st.Tenants = append(st.Tenants, tt)
	}
	return st
}

// recorder runs the built-in fair policy and records what it sees and does.
type recorder struct {
	inner  sched.Policy
	events []traceEvent
}

func (r *recorder) Name() string { return "fair-recorder" }

func (r *recorder) record(h *sched.Host, ev traceEvent) {
	n := h.NumTenants()
	for e := sched.Engine(0); e < sched.NumEngines; e++ {
		m := h.Map("fair.vtime." + e.String())
		ev.VT[e] = make([]int64, n)
		for t := range n {
			ev.VT[e][t] = m.Get(sched.TenantID(t))
		}
	}
	r.events = append(r.events, ev)
}

func (r *recorder) Init(h *sched.Host) error {
	st := snapshot(h)
	err := r.inner.Init(h)
	r.record(h, traceEvent{Hook: "init", State: st})
	return err
}

func (r *recorder) OnSessionOpen(h *sched.Host, s sched.SessionEvent) error {
	return r.inner.OnSessionOpen(h, s)
}

func (r *recorder) OnSubmit(h *sched.Host, e sched.SubmitEvent) error {
	st := snapshot(h)
	err := r.inner.OnSubmit(h, e)
	r.record(h, traceEvent{Hook: "submit", State: st, Submit: &SubmitEvent{Tenant: uint32(e.Tenant), Engine: uint32(e.Engine), Session: e.Session, Cost: e.Cost}})
	return err
}

func (r *recorder) OnDispatch(h *sched.Host, e sched.Engine, ready []sched.TenantID) (sched.Choice, error) {
	st := snapshot(h)
	c, err := r.inner.OnDispatch(h, e, ready)
	ev := traceEvent{Hook: "dispatch", State: st, Engine: uint32(e), Choice: &Choice{Tenant: uint32(c.Tenant), Hold: c.Hold, Quantum: c.Quantum}}
	for _, t := range ready {
		ev.Ready = append(ev.Ready, uint32(t))
	}
	r.record(h, ev)
	return c, err
}

func (r *recorder) OnComplete(h *sched.Host, c sched.CompleteEvent) error {
	st := snapshot(h)
	err := r.inner.OnComplete(h, c)
	r.record(h, traceEvent{Hook: "complete", State: st, Complete: &CompleteEvent{Tenant: uint32(c.Tenant), Engine: uint32(c.Engine),
		Commands: uint32(c.Commands), Charge: c.Charge, Estimate: c.Estimate, Failed: c.Failed}})
	return err
}

func (r *recorder) OnPreempt(h *sched.Host, p sched.PreemptEvent) error {
	return r.inner.OnPreempt(h, p)
}

func (r *recorder) OnTick(h *sched.Host, now time.Duration) error {
	st := snapshot(h)
	err := r.inner.OnTick(h, now)
	r.record(h, traceEvent{Hook: "tick", State: st, Now: now})
	return err
}

// workload runs three tenants weighted 1:2:3 on the software GPU under the
// active policy of s, each submitting compute commands of different lengths
// and some copies on one stream, and waits for all of them. It returns the
// commands submitted and completed, and fails the test if a tenant's
// commands complete out of submission order.
func workload(t testing.TB, s *sched.Scheduler, dev backend.Device, perTenant int) (submitted, completed int) {
	t.Helper()
	type tenantLoad struct {
		name   string
		weight int
		work   time.Duration
	}
	loads := []tenantLoad{{"short", 1, 50 * time.Microsecond}, {"medium", 2, 150 * time.Microsecond}, {"long", 3, 400 * time.Microsecond}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := make(chan error, 2*len(loads))
	for k, l := range loads {
		q, err := s.NewQueue(sched.QueueParams{Tenant: l.name, Session: uint64(k + 1), Share: sched.Share{Compute: l.weight, Copy: l.weight}})
		if err != nil {
			t.Fatalf("NewQueue: %v", err)
		}
		st, err := dev.NewStream(0)
		if err != nil {
			t.Fatalf("NewStream: %v", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer st.Destroy()
			defer q.Close()
			ctx := context.Background()
			next := 0 // the command whose completion comes next, on this stream
			for n := range perTenant {
				kind, bytes := sched.Compute, uint64(0)
				if n%5 == 4 {
					kind, bytes = sched.Copy, uint64(64<<10*(k+1))
				}
				work := l.work
				c := &sched.Command{Kind: kind, Stream: st, Bytes: bytes,
					Issue: func() error { return st.Callback(func(error) { spin(work) }) },
					Done: func(err error) {
						mu.Lock()
						defer mu.Unlock()
						if n != next {
							select {
							case errs <- fmt.Errorf("tenant %s: command %d completed when %d was due", l.name, n, next):
							default:
							}
						}
						next = n + 1
						if err == nil {
							completed++
						}
					}}
				if err := q.Submit(ctx, c); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				submitted++
				mu.Unlock()
			}
			if err := q.Wait(ctx); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("workload: %v", err)
	}
	return submitted, completed
}

// spin stands for device work: it keeps a backend goroutine busy for d.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

func simScheduler(t testing.TB, opts sched.Options) (*sched.Scheduler, backend.Device) {
	t.Helper()
	dev, err := sim.New(sim.Options{Memory: 64 << 20}).Open(0)
	if err != nil {
		t.Fatal(err)
	}
	opts.Device = dev
	s, err := sched.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		dev.Close()
	})
	return s, dev
}

// recordFairTrace runs the workload under the built-in fair policy and
// returns what it saw and decided.
func recordFairTrace(t testing.TB) []traceEvent {
	t.Helper()
	s, dev := simScheduler(t, sched.Options{HookDeadline: time.Minute})
	rec := &recorder{inner: sched.NewFair()}
	if err := s.Add(rec, "records the built-in fair policy"); err != nil {
		t.Fatal(err)
	}
	if err := s.Use(rec.Name()); err != nil {
		t.Fatal(err)
	}
	sub, done := workload(t, s, dev, 80)
	if sub != done {
		t.Fatalf("workload: %d submitted, %d completed", sub, done)
	}
	s.Close() // no hook runs after this: the trace is complete
	return rec.events
}

// replayEnv shows a recorded state.
type replayEnv struct{ st *traceState }

func (e *replayEnv) tenant(t uint32) *traceTenant {
	if int(t) < len(e.st.Tenants) {
		return &e.st.Tenants[t]
	}
	return nil
}

func (e *replayEnv) Now() time.Duration { return e.st.Now }
func (e *replayEnv) NumTenants() int    { return len(e.st.Tenants) }
func (e *replayEnv) TenantName(t uint32) string {
	if x := e.tenant(t); x != nil {
		return x.Name
	}
	return ""
}
func (e *replayEnv) Class(uint32) int          { return 0 }
func (e *replayEnv) MemoryShare(uint32) uint64 { return 0 }
func (e *replayEnv) Sessions(uint32) int       { return 1 }
func (e *replayEnv) EngineInFlight(en uint32) int {
	n := 0
	for _, x := range e.st.Tenants {
		if en < 2 {
			n += x.InFlight[en]
		}
	}
	return n
}
func (e *replayEnv) SliceTarget() time.Duration { return time.Millisecond }
func (e *replayEnv) HighClassReserved() bool    { return false }

func field[T any](e *replayEnv, t, en uint32, f func(*traceTenant) *[2]T) T {
	var zero T
	if x := e.tenant(t); x != nil && en < 2 {
		return f(x)[en]
	}
	return zero
}

func (e *replayEnv) Weight(t, en uint32) int64 {
	return field(e, t, en, func(x *traceTenant) *[2]int64 { return &x.Weight })
}
func (e *replayEnv) Queued(t, en uint32) int {
	return field(e, t, en, func(x *traceTenant) *[2]int { return &x.Queued })
}
func (e *replayEnv) InFlight(t, en uint32) int {
	return field(e, t, en, func(x *traceTenant) *[2]int { return &x.InFlight })
}
func (e *replayEnv) InFlightCost(t, en uint32) int64 {
	return field(e, t, en, func(x *traceTenant) *[2]int64 { return &x.InFlightCost })
}
func (e *replayEnv) HeadSeq(t, en uint32) uint64 {
	return field(e, t, en, func(x *traceTenant) *[2]uint64 { return &x.HeadSeq })
}
func (e *replayEnv) HeadCost(t, en uint32) int64 {
	return field(e, t, en, func(x *traceTenant) *[2]int64 { return &x.HeadCost })
}
func (e *replayEnv) Usage(t, en uint32) int64 {
	return field(e, t, en, func(x *traceTenant) *[2]int64 { return &x.Usage })
}

// replay runs a trace through an instance and reports the first decision or
// virtual time that differs from the recorded one.
func replay(t *testing.T, i *Instance, store *Maps, events []traceEvent) (dispatches int) {
	t.Helper()
	name := i.Module().Name()
	for k, ev := range events {
		env := &replayEnv{st: &ev.State}
		var err error
		switch ev.Hook {
		case "init":
			err = i.Init(env)
		case "submit":
			err = i.OnSubmit(env, *ev.Submit)
		case "complete":
			err = i.OnComplete(env, *ev.Complete)
		case "tick":
			err = i.OnTick(env, ev.Now)
		case "dispatch":
			var c Choice
			c, err = i.OnDispatch(env, ev.Engine, ev.Ready)
			if err == nil && c != *ev.Choice {
				t.Fatalf("event %d: dispatch among %v on engine %d: WASM chose %+v, built-in %+v", k, ev.Ready, ev.Engine, c, *ev.Choice)
			}
			dispatches++
		default:
			t.Fatalf("event %d: unknown hook %q", k, ev.Hook)
		}
		if err != nil {
			t.Fatalf("event %d (%s): %v", k, ev.Hook, err)
		}
		for e, want := range ev.VT {
			got := map[uint32]int64{}
			if snap := store.Snapshot(name + ".vtime." + []string{"compute", "copy"}[e]); len(snap) == 1 {
				got = snap[0].Values
			}
			for tn, v := range want {
				if got[uint32(tn)] != v {
					t.Fatalf("event %d (%s): engine %d tenant %d virtual time: WASM %d, built-in %d", k, ev.Hook, e, tn, got[uint32(tn)], v)
				}
			}
		}
	}
	return dispatches
}

const tracePath = "testdata/fair.trace.jsonl"

func writeTrace(path string, events []traceEvent) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, ev := range events {
		if err := enc.Encode(ev); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readTrace(path string) ([]traceEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []traceEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev traceEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, len(out)+1, err)
		}
		out = append(out, ev)
	}
	return out, sc.Err()
}

// The WASM fair example decides exactly as the built-in fair policy on a
// recorded trace (testdata/fair.trace.jsonl, recorded on the software GPU;
// -update-trace records it again), and keeps the same virtual times.
func TestFairMatchesBuiltinOnRecordedTrace(t *testing.T) {
	if *updateTrace {
		events := recordFairTrace(t)
		if err := writeTrace(tracePath, events); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %d events to %s", len(events), tracePath)
	}
	events, err := readTrace(tracePath)
	if err != nil {
		t.Fatalf("read trace: %v", err)
	}
	store := NewMaps()
	i, err := compile(t, "wfair", exampleWasm(t, "fair"), patient).Instantiate(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close()
	n := replay(t, i, store, events)
	if n < 100 {
		t.Fatalf("trace has only %d dispatches", n)
	}
	t.Logf("%d events, %d dispatch decisions identical", len(events), n)
}

// The same on a trace recorded now, from the current built-in policy.
func TestFairMatchesBuiltinOnFreshTrace(t *testing.T) {
	events := recordFairTrace(t)
	store := NewMaps()
	i, err := compile(t, "wfair", exampleWasm(t, "fair"), patient).Instantiate(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close()
	n := replay(t, i, store, events)
	t.Logf("%d events, %d dispatch decisions identical", len(events), n)
}
