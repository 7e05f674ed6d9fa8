package policy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/policy/policytest"
	"github.com/gpuos/gpuos/internal/sched"
)

// ejections collects the scheduler's OnEject reports.
type ejections struct {
	mu   sync.Mutex
	errs map[string]error
	n    atomic.Int32
}

func (e *ejections) record(policy string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.errs == nil {
		e.errs = map[string]error{}
	}
	e.errs[policy] = err
	e.n.Add(1)
}

func (e *ejections) get(policy string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.errs[policy]
}

// useWasm loads wasm as a scheduling policy of s and makes it active.
func useWasm(t *testing.T, s *sched.Scheduler, name string, wasm []byte, lim Limits) *SchedPolicy {
	t.Helper()
	m := compile(t, name, wasm, lim)
	p, err := NewSchedPolicy(context.Background(), m, NewMaps())
	if err != nil {
		t.Fatalf("NewSchedPolicy: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	if err := s.Add(p, p.Description()); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if err := s.Use(name); err != nil {
		t.Fatalf("Use: %v", err)
	}
	return p
}

func policyInfo(s *sched.Scheduler, name string) sched.PolicyInfo {
	for _, pi := range s.Policies() {
		if pi.Name == name {
			return pi
		}
	}
	return sched.PolicyInfo{}
}

// A misbehaving guest is ejected at its first dispatch, the built-in fair
// policy takes over at once, and every command submitted completes.
func TestMisbehavingGuestEjectedNothingLost(t *testing.T) {
	short := Limits{Deadline: 5 * time.Millisecond, InitDeadline: 30 * time.Second}
	mem := patient
	mem.Memory = 8 << 20
	for _, tc := range []struct {
		name string
		wasm []byte
		lim  Limits
		want error
	}{
		{"spin", policytest.Spin(), short, ErrDeadline},
		{"recursion", policytest.SpinRecursive(), short, ErrDeadline},
		{"grow", policytest.Grow(), mem, ErrMemoryLimit},
		{"trap", policytest.Trap(), patient, ErrTrap},
		{"unknown-tenant", policytest.Choose(99, 0), patient, ErrInvalidDecision},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ej ejections
			// The scheduler's own deadline is long: the guest's limits must
			// be what stops it.
			s, dev := simScheduler(t, sched.Options{HookDeadline: time.Minute, OnEject: ej.record})
			useWasm(t, s, tc.name, tc.wasm, tc.lim)
			sub, done := workload(t, s, dev, 20)
			if sub != done || sub != 60 {
				t.Fatalf("%d commands submitted, %d completed; want 60 and 60", sub, done)
			}
			if a := s.Active(); a != sched.DefaultPolicy {
				t.Errorf("active policy %q, want the fallback %q", a, sched.DefaultPolicy)
			}
			pi := policyInfo(s, tc.name)
			if pi.Ejected == "" {
				t.Errorf("policy %s not marked ejected: %+v", tc.name, pi)
			}
			for deadline := time.Now().Add(10 * time.Second); ej.n.Load() == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if err := ej.get(tc.name); !errors.Is(err, tc.want) {
				t.Errorf("ejected with %v, want %v", err, tc.want)
			}
		})
	}
}

// The scheduler's watchdog interrupts a guest through sched.Interrupter even
// when the guest's own deadline is long.
func TestSchedulerWatchdogInterruptsGuest(t *testing.T) {
	var ej ejections
	s, dev := simScheduler(t, sched.Options{HookDeadline: 5 * time.Millisecond, OnEject: ej.record})
	useWasm(t, s, "spin", policytest.Spin(), patient)
	if sub, done := workload(t, s, dev, 10); sub != done {
		t.Fatalf("%d submitted, %d completed", sub, done)
	}
	for deadline := time.Now().Add(10 * time.Second); ej.n.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if err := ej.get("spin"); !errors.Is(err, ErrDeadline) {
		t.Errorf("ejected with %v, want ErrDeadline", err)
	}
}

// Switching between WebAssembly and built-in policies while three tenants
// submit loses no command and keeps each stream's order (workload checks
// the order).
func TestLiveSwapUnderLoad(t *testing.T) {
	s, dev := simScheduler(t, sched.Options{HookDeadline: time.Minute})
	first := compile(t, "first", policytest.FirstReady(), patient)
	wfair := compile(t, "wfair", exampleWasm(t, "fair"), patient)
	for _, m := range []*Module{first, wfair} {
		p, err := NewSchedPolicy(context.Background(), m, NewMaps())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		if err := s.Add(p, p.Description()); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var swaps atomic.Int64
	var swapErr atomic.Value
	go func() {
		names := []string{"first", "fair", "wfair", "fifo", "band", "wfair", "priority"}
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Use(names[k%len(names)]); err != nil {
				swapErr.Store(err)
				return
			}
			swaps.Add(1)
			time.Sleep(200 * time.Microsecond)
		}
	}()
	sub, done := workload(t, s, dev, 150)
	close(stop)
	if err, _ := swapErr.Load().(error); err != nil {
		t.Fatalf("Use: %v", err)
	}
	if sub != done {
		t.Fatalf("%d submitted, %d completed", sub, done)
	}
	for _, pi := range s.Policies() {
		if pi.Ejected != "" {
			t.Errorf("policy %s ejected: %s", pi.Name, pi.Ejected)
		}
	}
	t.Logf("%d commands, %d swaps", done, swaps.Load())
}
