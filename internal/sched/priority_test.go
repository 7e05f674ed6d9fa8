package sched_test

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/sched"
)

// TestPriorityBoundsHighClassDelay is the acceptance test of the priority
// policy: two best-effort tenants saturate the GPU with long sliceable
// kernels (32 blocks of 154 µs) while a high-class tenant submits a short
// kernel, waits for it, and submits the next. The high-class command must be
// the next one dispatched after its submission (at most one best-effort
// dispatch already decided may slip in), and its delay on the software GPU's
// virtual clock must stay within two best-effort slices.
func TestPriorityBoundsHighClassDelay(t *testing.T) {
	g := newSimGPU(t)
	const (
		beBlocks = 32
		beN      = 50 // 154 µs a block
		hpN      = 5  // 19 µs
		rounds   = 300
	)
	blockCost := g.cost(t, beN, 1)
	hpCost := g.cost(t, hpN, 1)
	s := newSched(t, sched.Options{Device: g.dev, Policy: "priority", SliceTarget: 2 * blockCost, HookDeadline: time.Minute,
		// The scheduler's clock is the device's: the service stays active
		// between its requests however slowly the host runs.
		Clock:   g.dev.HostTime,
		OnEject: func(p string, err error) { t.Errorf("policy %s ejected: %v", p, err) }})
	// The built-in priority policy, noting when the service's commands are
	// enqueued (under the scheduler's lock, as they are).
	var dispatches atomic.Int64
	var atSubmit struct{ dispatches, vt int64 }
	probe := &submitProbe{Policy: sched.NewPriority(), tenant: "service", f: func() {
		atSubmit.dispatches, atSubmit.vt = dispatches.Load(), int64(g.dev.VirtualTime())
	}}
	if err := s.Add(probe, "priority, probed"); err != nil {
		t.Fatal(err)
	}
	if err := s.Use(probe.Name()); err != nil {
		t.Fatal(err)
	}
	zero, _ := g.dev.NewEvent(0)
	g.stream(t, 0).Record(zero)
	zero.Synchronize()
	zeroAt := g.dev.VirtualTime() // event times are relative to zero; VirtualTime is not

	var wg sync.WaitGroup
	stop := make(chan struct{})
	ctx := tctx(t)
	var beBusy [2]atomic.Int64 // virtual ns of best-effort work completed
	for i := range 2 {
		name := []string{"batch-a", "batch-b"}[i]
		if err := s.SetShare(name, sched.Share{Compute: 1, Copy: 1, Class: sched.ClassLow, ClassSet: true}); err != nil {
			t.Fatal(err)
		}
		q := newQueue(t, s, sched.QueueParams{Tenant: name, Session: uint64(10 + i), Depth: 8})
		st := g.stream(t, 0)
		est := &sched.Estimate{}
		p := params(beN)
		launch := func(blocks uint32) error {
			dispatches.Add(1)
			return st.Launch(g.work, backend.LaunchConfig{Grid: [3]uint32{blocks, 1, 1}, Block: [3]uint32{1, 1, 1}}, p)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					q.Wait(ctx)
					return
				default:
				}
				c := &sched.Command{Kind: sched.Compute, Stream: st, Units: beBlocks, Estimate: est,
					Issue:      func() error { return launch(beBlocks) },
					IssueUnits: func(lo, hi uint32) error { return launch(hi - lo) },
					Done: func(err error) {
						if err != nil {
							t.Error(err)
						}
						beBusy[i].Add(int64(blockCost) * beBlocks)
					}}
				if err := q.Submit(ctx, c); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}

	if err := s.SetShare("service", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassHigh, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, s, sched.QueueParams{Tenant: "service", Session: 1, Depth: 8})
	st := g.stream(t, 0)
	launch := g.launch(st, hpN, 1)
	time.Sleep(20 * time.Millisecond) // let the batch tenants fill the device
	var delays []time.Duration
	slipped := int64(0)
	for range rounds {
		ev, _ := g.dev.NewEvent(0)
		var issuedAt int64
		done := make(chan error, 1)
		c := &sched.Command{Kind: sched.Compute, Stream: st, Flags: sched.Sync,
			Issue: func() error {
				issuedAt = dispatches.Add(1)
				if err := launch(); err != nil {
					return err
				}
				return st.Record(ev)
			},
			Done: func(err error) { done <- err }}
		if err := q.Submit(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		before, submitted := atSubmit.dispatches, time.Duration(atSubmit.vt)
		slipped = max(slipped, issuedAt-before-1)
		end, err := ev.Elapsed(zero)
		if err != nil {
			t.Fatal(err)
		}
		delays = append(delays, zeroAt+end-hpCost-submitted)
		time.Sleep(100 * time.Microsecond)
	}
	close(stop)
	wg.Wait()

	// The first command found the batch tenants unrestricted (nothing of a
	// higher class was active): it may wait for what they had in flight.
	// From then on, for at most two slices (of at most two blocks: the
	// probe slice of a kernel not yet measured is 1/16 of it).
	warm := delays[:3]
	steady := slices.Clone(delays[3:])
	slices.Sort(steady)
	p99 := steady[len(steady)*99/100]
	bound := 2 * (2*blockCost + time.Microsecond)
	t.Logf("high-class delay on the virtual clock: first %v, then median %v, P99 %v, max %v (bound %v); best-effort dispatches that slipped in: %d; best-effort work done %v",
		warm, steady[len(steady)/2], p99, steady[len(steady)-1], bound, slipped, time.Duration(beBusy[0].Load()+beBusy[1].Load()))
	if steady[len(steady)-1] > bound {
		t.Errorf("high-class delay reached %v, want <= %v", steady[len(steady)-1], bound)
	}
	if slipped > 1 {
		t.Errorf("%d best-effort dispatches came between a high-class submission and its dispatch, want <= 1", slipped)
	}
	if beBusy[0].Load() == 0 || beBusy[1].Load() == 0 {
		t.Errorf("best-effort tenants starved: %v and %v done", time.Duration(beBusy[0].Load()), time.Duration(beBusy[1].Load()))
	}
}

// submitProbe is a policy that calls f when a command of one tenant enters
// its queue, and otherwise is the policy it wraps.
type submitProbe struct {
	sched.Policy
	tenant string
	f      func()
}

func (p *submitProbe) Name() string { return p.Policy.Name() + "+probe" }

func (p *submitProbe) OnSubmit(h *sched.Host, ev sched.SubmitEvent) error {
	if h.TenantName(ev.Tenant) == p.tenant {
		p.f()
	}
	return p.Policy.OnSubmit(h, ev)
}

// TestPriorityWholeKernels: while the high class is active, priority issues
// the lower classes' long kernels in slices, unless slicing is off
// (SliceTarget negative: it once asked for a negative quantum and was
// ejected) or the high class has SMs of its own (SetHighClassReserved), where
// it issues them whole.
func TestPriorityWholeKernels(t *testing.T) {
	const sms, kernels = 4, 5
	for _, tt := range []struct {
		name      string
		slice     time.Duration
		reserved  bool
		wantWhole bool
	}{
		{"sliced", 0, false, false},
		{"slicing off", -1, false, true},
		{"high class reserved", 0, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newSimGPUOf(t, sms, true)
			s := newSched(t, sched.Options{Device: g.dev, Policy: "priority", SliceTarget: tt.slice, HookDeadline: time.Minute,
				Clock:   func() time.Duration { return time.Millisecond }, // the service stays active
				OnEject: func(p string, err error) { t.Errorf("policy %s ejected: %v", p, err) }})
			s.SetHighClassReserved(tt.reserved)
			ctx := tctx(t)
			g.activeService(t, ctx, s)
			if err := s.SetShare("batch", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassLow, ClassSet: true}); err != nil {
				t.Fatal(err)
			}
			q := newQueue(t, s, sched.QueueParams{Tenant: "batch", Session: 2})
			st := g.stream(t, 0)
			var whole, sliced atomic.Int64
			for range kernels {
				launch := g.launch(st, 4, sms*4)
				c := &sched.Command{Kind: sched.Compute, Stream: st, Units: sms * 4, Wave: sms, Estimate: &sched.Estimate{},
					Issue: func() error { whole.Add(1); return launch() },
					IssueUnits: func(lo, hi uint32) error {
						sliced.Add(1)
						return st.Launch(g.work, backend.LaunchConfig{Grid: [3]uint32{hi - lo, 1, 1}, Block: [3]uint32{1, 1, 1}}, params(4))
					}}
				if err := q.Submit(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			haveWhole := whole.Load() == kernels && sliced.Load() == 0
			haveSliced := whole.Load() == 0 && sliced.Load() > kernels
			if haveWhole != tt.wantWhole || haveWhole == haveSliced {
				t.Errorf("kernels issued whole %d, slices %d; want all %d whole: %v", whole.Load(), sliced.Load(), kernels, tt.wantWhole)
			}
			if active := s.Active(); active != "priority" {
				t.Errorf("active policy %q, want priority", active)
			}
		})
	}
}

// TestQueueClass: a queue's Class, read without the scheduler's lock, is
// its tenant's class as TenantClass gives it, through each change: the
// highest class of the tenant's sessions, then the class its share sets,
// then back to its sessions' when the share no longer sets one, and as
// sessions close.
func TestQueueClass(t *testing.T) {
	s := newSched(t, sched.Options{Device: newSimGPU(t).dev})
	low := newQueue(t, s, sched.QueueParams{Tenant: "a", Session: 1, Class: sched.ClassLow})
	var high *sched.Queue
	for _, step := range []struct {
		name   string
		change func()
		want   sched.Class
	}{
		{"one low session", func() {}, sched.ClassLow},
		{"a high session joins", func() {
			high = newQueue(t, s, sched.QueueParams{Tenant: "a", Session: 2, Class: sched.ClassHigh})
		}, sched.ClassHigh},
		{"the share sets normal", func() {
			if err := s.SetShare("a", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassNormal, ClassSet: true}); err != nil {
				t.Fatal(err)
			}
		}, sched.ClassNormal},
		{"the share sets none", func() {
			if err := s.SetShare("a", sched.Share{Compute: 1, Copy: 1}); err != nil {
				t.Fatal(err)
			}
		}, sched.ClassHigh},
		{"the high session closes", func() { high.Close() }, sched.ClassLow},
	} {
		step.change()
		if got, locked := low.Class(), s.TenantClass("a"); got != step.want || locked != step.want {
			t.Errorf("%s: Queue.Class %v, TenantClass %v; want %v", step.name, got, locked, step.want)
		}
	}
}
