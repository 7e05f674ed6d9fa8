package sched_test

import (
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/sched"
)

// loadSpec is one tenant of a saturation experiment.
type loadSpec struct {
	name   string
	weight int
	class  sched.Class
	n      uint32 // work(n) iterations
	blocks uint32
}

// run is one tenant's measured commands: the virtual end of each kernel.
type run struct {
	spec loadSpec
	cost time.Duration // virtual time of one kernel, alone
	ends []time.Duration
	mu   sync.Mutex
}

// saturate runs the tenants until the device's virtual clock passes until,
// each keeping 128 commands outstanding (a completion submits the next), so
// that every tenant always has work queued however fast the software GPU
// runs. It returns every kernel's virtual end time, measured by the test's
// own events, not by the scheduler.
//
// Every tenant is set up, and the first commands are submitted a tenant at
// a time in turn, before any completion submits more. Otherwise a tenant
// started first could keep the device to itself for as long as the host
// took to start the next: its completions submit more at once, and the
// software GPU's clock runs as fast as they come. On an overloaded host
// (GOMAXPROCS=1 beside six CPU burners), TestShares/band with a spy on its
// dispatches once saw the short tenant dispatched alone 12,931 times, 0.8 s
// of the 2 s measured.
func saturate(t *testing.T, g *simGPU, s *sched.Scheduler, until time.Duration, specs ...loadSpec) []*run {
	t.Helper()
	const outstanding = 128
	zero, _ := g.dev.NewEvent(0)
	if err := g.stream(t, 0).Record(zero); err != nil {
		t.Fatal(err)
	}
	zero.Synchronize()
	runs := make([]*run, len(specs))
	for i, sp := range specs {
		runs[i] = &run{spec: sp, cost: g.cost(t, sp.n, sp.blocks)}
	}
	var (
		wg       sync.WaitGroup
		gate     sync.Mutex
		started  bool
		deferred []func() // submissions completions asked for before the start
	)
	ctx := tctx(t)
	submits := make([]func(), len(specs))
	for i, sp := range specs {
		r := runs[i]
		if err := s.SetShare(sp.name, sched.Share{Compute: sp.weight, Copy: 1, Class: sp.class, ClassSet: true}); err != nil {
			t.Fatal(err)
		}
		q := newQueue(t, s, sched.QueueParams{Tenant: sp.name, Session: uint64(i + 1), Depth: outstanding})
		st := g.stream(t, 0)
		launch := g.launch(st, sp.n, sp.blocks)
		var submit func()
		submit = func() {
			ev, _ := g.dev.NewEvent(0)
			c := &sched.Command{Kind: sched.Compute, Stream: st,
				Issue: func() error {
					if err := launch(); err != nil {
						return err
					}
					return st.Record(ev)
				},
				Done: func(err error) {
					defer wg.Done()
					if err != nil {
						t.Error(err)
						return
					}
					d, err := ev.Elapsed(zero)
					if err != nil {
						t.Error(err)
						return
					}
					r.mu.Lock()
					r.ends = append(r.ends, d)
					r.mu.Unlock()
					if g.dev.VirtualTime() >= until {
						return
					}
					// Not blocking until the start: a Done may run on the
					// goroutine submitting the first commands.
					gate.Lock()
					if !started {
						deferred = append(deferred, submit)
						gate.Unlock()
						return
					}
					gate.Unlock()
					submit()
				}}
			wg.Add(1)
			if err := q.Submit(ctx, c); err != nil {
				wg.Done()
				t.Error(err)
			}
		}
		submits[i] = submit
	}
	for range outstanding {
		for _, submit := range submits {
			submit()
		}
	}
	gate.Lock()
	started = true
	later := deferred
	gate.Unlock()
	for _, submit := range later {
		submit()
	}
	wg.Wait()
	for _, ts := range s.Tenants() {
		e := ts.Engines[sched.EngineCompute]
		t.Logf("scheduler's view: %s charged %v for %d kernels", ts.Name, time.Duration(e.Usage), e.Completed)
	}
	return runs
}

// busyShares returns each run's share of the GPU time its kernels took in
// [from, to): each kernel ran for its cost up to its end.
func busyShares(runs []*run, from, to time.Duration) []float64 {
	busy := make([]float64, len(runs))
	var total float64
	for i, r := range runs {
		for _, end := range r.ends {
			lo, hi := max(end-r.cost, from), min(end, to)
			if hi > lo {
				busy[i] += float64(hi - lo)
			}
		}
		total += busy[i]
	}
	for i := range busy {
		busy[i] /= total
	}
	return busy
}

// window is the span in which every tenant kept the device busy: from the
// latest first start (the last tenant's first kernel) to the earliest last
// completion. It sorts each run's ends.
func window(runs []*run) (from, to time.Duration) {
	to = time.Duration(math.MaxInt64)
	for _, r := range runs {
		if len(r.ends) == 0 {
			return 0, 0
		}
		sort.Slice(r.ends, func(i, j int) bool { return r.ends[i] < r.ends[j] })
		from = max(from, r.ends[0]-r.cost)
		to = min(to, r.ends[len(r.ends)-1])
	}
	return from, to
}

// busyIn is the GPU time of the runs' kernels that ran wholly in [from, to).
func busyIn(runs []*run, from, to time.Duration) time.Duration {
	var busy time.Duration
	for _, r := range runs {
		for _, end := range r.ends {
			if end-r.cost >= from && end <= to {
				busy += r.cost
			}
		}
	}
	return busy
}

// TestShares is the acceptance test of weighted sharing: two tenants weighted
// 1:3, one issuing short kernels (64 µs) and one long ones (604 µs), both
// saturating; measured on the software GPU's virtual clock, each tenant's
// share of GPU time must be within 2 points of its target under fair and band.
func TestShares(t *testing.T) {
	for _, policy := range []string{"fair", "band"} {
		t.Run(policy, func(t *testing.T) {
			g := newSimGPU(t)
			s := newSched(t, sched.Options{Device: g.dev, Policy: policy,
				OnEject: func(p string, err error) { t.Errorf("policy %s ejected: %v", p, err) }})
			runs := saturate(t, g, s, 2*time.Second,
				loadSpec{name: "short", weight: 1, n: 20, blocks: 1},
				loadSpec{name: "long", weight: 3, n: 200, blocks: 1})
			from, to := window(runs)
			if to-from < time.Second {
				t.Fatalf("saturated window only [%v, %v)", from, to)
			}
			shares := busyShares(runs, from, to)
			want := []float64{0.25, 0.75}
			for i, r := range runs {
				t.Logf("%s: %d kernels of %v, share %.4f of [%v, %v) (target %.2f)", r.spec.name, len(r.ends), r.cost, shares[i], from, to, want[i])
				if math.Abs(shares[i]-want[i]) > 0.02 {
					t.Errorf("%s: share %.4f, want %.2f ± 0.02", r.spec.name, shares[i], want[i])
				}
			}
			// Busy the whole time: sharing must not idle the GPU.
			if util := float64(busyIn(runs, from, to)) / float64(to-from); util < 0.97 {
				t.Errorf("GPU busy %.3f of the window, want >= 0.97", util)
			}
		})
	}
}
