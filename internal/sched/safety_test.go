package sched_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/sched"
)

// faulty is the fair policy until it has dispatched `after` times; then it
// misbehaves in one way.
type faulty struct {
	sched.Policy
	mode  string
	after int64
	calls atomic.Int64
	stop  atomic.Bool
}

func (p *faulty) Name() string { return "faulty-" + p.mode }

func (p *faulty) bad() bool { return p.calls.Load() > p.after }

func (p *faulty) Interrupt() { p.stop.Store(true) }

func (p *faulty) OnSubmit(h *sched.Host, ev sched.SubmitEvent) error {
	if p.mode == "panic-submit" && p.bad() {
		panic("submit hook crashed")
	}
	return p.Policy.OnSubmit(h, ev)
}

func (p *faulty) OnComplete(h *sched.Host, c sched.CompleteEvent) error {
	if p.mode == "panic-complete" && p.bad() {
		var m map[string]int
		m["nil map"]++
	}
	return p.Policy.OnComplete(h, c)
}

func (p *faulty) OnDispatch(h *sched.Host, e sched.Engine, ready []sched.TenantID) (sched.Choice, error) {
	p.calls.Add(1)
	if !p.bad() {
		return p.Policy.OnDispatch(h, e, ready)
	}
	switch p.mode {
	case "panic-dispatch":
		panic(fmt.Sprintf("dispatch hook crashed after %d calls", p.calls.Load()))
	case "error":
		return sched.Choice{}, errors.New("the policy gives up")
	case "unknown-tenant":
		return sched.Choice{Tenant: 12345}, nil
	case "tenant-not-ready":
		for t := range h.NumTenants() {
			if !slices.Contains(ready, sched.TenantID(t)) {
				return sched.Choice{Tenant: sched.TenantID(t)}, nil
			}
		}
		return sched.Choice{Tenant: 12345}, nil
	case "hold-too-long":
		return sched.Choice{Tenant: sched.NoTenant, Hold: time.Hour}, nil
	case "negative-quantum":
		return sched.Choice{Tenant: ready[0], Quantum: -time.Second}, nil
	case "overrun":
		time.Sleep(30 * time.Millisecond)
		return p.Policy.OnDispatch(h, e, ready)
	case "hang":
		for !p.stop.Load() {
			runtime.Gosched()
		}
		return sched.Choice{}, errors.New("interrupted")
	case "stall":
		return sched.Choice{Tenant: sched.NoTenant}, nil
	}
	return p.Policy.OnDispatch(h, e, ready)
}

// TestMisbehavingPolicyIsReplaced: whatever way a policy misbehaves — a
// panic in any hook, an error, a choice naming a tenant that does not exist
// or has nothing ready, an invalid hold or quantum, a hook that overruns its
// deadline or never returns until interrupted, an engine left idle with work
// ready — the built-in fair policy takes over at once and every command is
// still issued once, in order, and completes.
func TestMisbehavingPolicyIsReplaced(t *testing.T) {
	for _, mode := range []string{"panic-dispatch", "panic-submit", "panic-complete", "error", "unknown-tenant",
		"tenant-not-ready", "hold-too-long", "negative-quantum", "overrun", "hang", "stall"} {
		t.Run(mode, func(t *testing.T) {
			g := newSimGPU(t)
			ejected := make(chan string, 4)
			s := newSched(t, sched.Options{Device: g.dev, HookDeadline: 10 * time.Millisecond,
				StallTimeout: 200 * time.Millisecond, MaxHold: 10 * time.Millisecond,
				OnEject: func(p string, err error) {
					if !errors.Is(err, sched.ErrPolicy) {
						t.Errorf("ejection error %v does not match ErrPolicy", err)
					}
					ejected <- p
				}})
			bad := &faulty{Policy: sched.NewFair(), mode: mode, after: 50}
			if err := s.Add(bad, "misbehaves"); err != nil {
				t.Fatal(err)
			}
			if err := s.Use(bad.Name()); err != nil {
				t.Fatal(err)
			}
			// A third tenant with nothing to do, for "tenant-not-ready".
			newQueue(t, s, sched.QueueParams{Tenant: "idle", Session: 99})
			const n = 300
			ctx := tctx(t)
			var wg, dones sync.WaitGroup
			logs := make([]issueLog, 2)
			var done [2]atomic.Int64
			for i := range 2 {
				q := newQueue(t, s, sched.QueueParams{Tenant: fmt.Sprint("t", i), Session: uint64(i + 1), Depth: 32})
				st := g.stream(t, 0)
				launch := g.launch(st, 1, 1)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range n {
						c := &sched.Command{Kind: sched.Compute, Stream: st, Issue: logs[i].issue(fmt.Sprint(k), launch),
							Done: func(err error) {
								if err != nil {
									t.Error(err)
								}
								done[i].Add(1)
								dones.Done()
							}}
						dones.Add(1)
						if err := q.Submit(ctx, c); err != nil {
							dones.Done()
							t.Error(err)
							return
						}
					}
					if err := q.Wait(ctx); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			dones.Wait() // Wait returns once the work completed, maybe before its Done ran
			for i := range 2 {
				got := logs[i].get()
				want := make([]string, n)
				for k := range want {
					want[k] = fmt.Sprint(k)
				}
				if !slices.Equal(got, want) {
					t.Errorf("tenant %d: issued %d commands, out of order or not once each", i, len(got))
				}
				if d := done[i].Load(); d != n {
					t.Errorf("tenant %d: %d of %d commands completed", i, d, n)
				}
			}
			select {
			case p := <-ejected:
				if p != bad.Name() {
					t.Errorf("ejected %q, want %q", p, bad.Name())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the misbehaving policy was never ejected")
			}
			if a := s.Active(); a != "fair" {
				t.Errorf("active policy %q after the ejection, want fair", a)
			}
			for _, pi := range s.Policies() {
				if pi.Name == bad.Name() && !strings.Contains(pi.Ejected, "misbehaved") {
					t.Errorf("policy list says %q was ejected for %q", pi.Name, pi.Ejected)
				}
			}
			if err := s.CheckIdle(); err != nil {
				t.Error(err)
			}
		})
	}
}

// refuser refuses sessions of one tenant.
type refuser struct {
	sched.Policy
}

func (refuser) Name() string { return "refuser" }

func (refuser) OnSessionOpen(h *sched.Host, s sched.SessionEvent) error {
	if h.TenantName(s.Tenant) == "banned" {
		return errors.New("not today")
	}
	return nil
}

// TestAdmission: OnSessionOpen can refuse a session; that is a decision,
// not misbehaviour.
func TestAdmission(t *testing.T) {
	s := newSched(t, sched.Options{Device: &fakeDevice{}})
	if err := s.Add(refuser{sched.NewFIFO()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Use("refuser"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NewQueue(sched.QueueParams{Tenant: "banned", Session: 1}); !errors.Is(err, sched.ErrRefused) {
		t.Errorf("banned tenant's session: %v, want ErrRefused", err)
	}
	newQueue(t, s, sched.QueueParams{Tenant: "welcome", Session: 2})
	if a := s.Active(); a != "refuser" {
		t.Errorf("active policy %q, want refuser", a)
	}
}

// TestUseUnknownPolicy: naming a policy that does not exist changes nothing.
func TestUseUnknownPolicy(t *testing.T) {
	s := newSched(t, sched.Options{Device: &fakeDevice{}, Policy: "band"})
	if err := s.Use("nonesuch"); !errors.Is(err, sched.ErrNoPolicy) {
		t.Errorf("Use(nonesuch): %v, want ErrNoPolicy", err)
	}
	if a := s.Active(); a != "band" {
		t.Errorf("active %q, want band", a)
	}
	if _, err := sched.New(sched.Options{Device: &fakeDevice{}, Policy: "nonesuch"}); !errors.Is(err, sched.ErrNoPolicy) {
		t.Errorf("New with an unknown policy: %v, want ErrNoPolicy", err)
	}
	var names []string
	for _, p := range s.Policies() {
		names = append(names, p.Name)
	}
	if want := []string{"fifo", "fair", "band", "priority"}; !slices.Equal(names, want) {
		t.Errorf("policies %v, want %v", names, want)
	}
}
