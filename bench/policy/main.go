// Command policy measures the WebAssembly policy engine on the CPU and prints
// a table (markdown):
//
//   - hook call overhead: a bare wazero call of a no-op function (reference),
//     a hook of a hand-built guest through policy.Instance (the host's own
//     cost: exchange area, deadline bookkeeping, result checks), and hooks of
//     Go guests built with the SDK (a no-op on_submit, and the fair example's
//     on_dispatch over four ready tenants);
//   - dispatch throughput of the scheduler on the software GPU with the
//     WebAssembly fair policy against the built-in fair policy;
//   - time from a runaway guest (an infinite loop in on_dispatch) to the
//     built-in policy taking over, at the default deadline and at 1 ms.
//
// It builds the Go guests with the Go toolchain (GOOS=wasip1 GOARCH=wasm), so
// run it from the module:
//
//	go run ./bench/policy [-runs 5] [-commands 20000]
//
// Per-call figures are the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID),
// not wall time: on a shared, oversubscribed machine wall time mostly
// measures the wait for a CPU (the same loop varied 10x between runs here),
// while the thread's CPU time is stable to a few percent. Throughput is given
// both as wall-clock commands per second and as process CPU time per
// command. Each figure is measured -runs times; the table gives the median
// and the best.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"golang.org/x/sys/unix"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/policy"
	pt "github.com/gpuos/gpuos/internal/policy/policytest"
	"github.com/gpuos/gpuos/internal/sched"
)

var (
	runs     = flag.Int("runs", 5, "measure each figure this many times")
	commands = flag.Int("commands", 20000, "commands per throughput run (all tenants together)")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/policy:", err)
		os.Exit(1)
	}
}

// row is one line of the table.
type row struct {
	what, unit   string
	median, best float64
	note         string
}

func stats(xs []float64, lowerIsBetter bool) (median, best float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	median = s[len(s)/2]
	if lowerIsBetter {
		return median, s[0]
	}
	return median, s[len(s)-1]
}

func run() error {
	dir, err := os.MkdirTemp("", "gpuos-bench-policy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fairWasm, err := build(dir, "./examples/policies/fair")
	if err != nil {
		return err
	}
	noopWasm, err := build(dir, "./bench/policy/noop")
	if err != nil {
		return err
	}
	ctx := context.Background()
	lim := policy.Limits{Deadline: 10 * time.Second, InitDeadline: time.Minute}
	load := func(name string, wasm []byte) (*policy.Module, error) {
		return policy.Compile(ctx, name, wasm, policy.Options{Limits: lim})
	}
	fair, err := load("wfair", fairWasm)
	if err != nil {
		return err
	}
	noop, err := load("noop", noopWasm)
	if err != nil {
		return err
	}
	first, err := load("first", pt.FirstReady())
	if err != nil {
		return err
	}
	var rows []row
	// call measures f's thread CPU time per call, *runs times.
	call := func(what, note string, f func() error) error {
		var xs []float64
		for range *runs {
			per, err := cpuPerCall(f)
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			xs = append(xs, float64(per))
		}
		m, b := stats(xs, true)
		rows = append(rows, row{what, "ns/call (thread CPU)", m, b, note})
		return nil
	}
	inst := func(m *policy.Module) (*policy.Instance, error) { return m.Instantiate(ctx, nil) }
	env := &staticEnv{n: 4}
	ready := []uint32{0, 1, 2, 3}
	bare, err := bareCall(ctx)
	if err != nil {
		return err
	}
	fi, err := inst(first)
	if err != nil {
		return err
	}
	ni, err := inst(noop)
	if err != nil {
		return err
	}
	wi, err := inst(fair)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		what, note string
		f          func() error
	}{
		{"no-op wazero call (reference)", "hand-built module, api.Function.CallWithStack, no host", bare},
		{"hook, hand-built guest: on_tick", "the host's cost per hook", func() error { return fi.OnTick(env, 0) }},
		{"hook, hand-built guest: on_dispatch, 4 ready", "plus 4 × 56-byte ready records", func() error {
			_, err := fi.OnDispatch(env, 0, ready)
			return err
		}},
		{"hook, Go SDK guest: no-op on_submit", "Go's wasmexport entry included", func() error {
			return ni.OnSubmit(env, policy.SubmitEvent{Tenant: 1, Cost: 1000})
		}},
		{"hook, Go fair policy: on_dispatch, 4 ready", "the decision itself: no host call (maps live in guest memory)", func() error {
			_, err := wi.OnDispatch(env, 0, ready)
			return err
		}},
		{"hook, Go fair policy: on_complete", "virtual time update", func() error {
			return wi.OnComplete(env, policy.CompleteEvent{Tenant: 2, Charge: 5000, Commands: 1})
		}},
	} {
		if err := call(c.what, c.note, c.f); err != nil {
			return err
		}
	}
	for _, i := range []*policy.Instance{fi, ni, wi} {
		i.Close()
	}

	// Dispatch throughput on the software GPU, the two policies alternating
	// run by run, with empty commands (the scheduler's own cost is all there
	// is: the harshest case for a policy) and with commands whose issue costs
	// what a CUDA launch does on the H100 (RESEARCH.md: 3.4 µs).
	for _, issue := range []time.Duration{0, 3400 * time.Nanosecond} {
		var builtin, wasm, ratio, builtinCPU, wasmCPU, ratioCPU, guardCPU []float64
		for range *runs {
			b, bc, err := throughput(ctx, nil, issue)
			if err != nil {
				return err
			}
			w, wc, err := throughput(ctx, fair, issue)
			if err != nil {
				return err
			}
			_, gc, err := throughput(ctx, untrusted{}, issue)
			if err != nil {
				return err
			}
			builtin, wasm, ratio = append(builtin, b), append(wasm, w), append(ratio, w/b)
			builtinCPU, wasmCPU, ratioCPU = append(builtinCPU, bc), append(wasmCPU, wc), append(ratioCPU, bc/wc)
			guardCPU = append(guardCPU, gc)
		}
		what := "empty commands"
		if issue > 0 {
			what = fmt.Sprintf("commands issued in %v", issue)
		}
		m, b := stats(builtin, false)
		rows = append(rows, row{"dispatch throughput, built-in fair, " + what, "commands/s (wall)", m, b, fmt.Sprintf("sim, 4 tenants weighted 1-4, %d commands", *commands)})
		m, b = stats(wasm, false)
		rows = append(rows, row{"dispatch throughput, WebAssembly fair, " + what, "commands/s (wall)", m, b, "same workload, alternating runs"})
		m, b = stats(ratio, false)
		rows = append(rows, row{"WebAssembly / built-in, wall, " + what, "ratio", m, b, "goal ≥ 0.8"})
		m, b = stats(builtinCPU, true)
		rows = append(rows, row{"CPU per command, built-in fair, " + what, "ns (process CPU)", m, b, "all goroutines"})
		m, b = stats(guardCPU, true)
		rows = append(rows, row{"CPU per command, built-in fair as an untrusted Go policy, " + what, "ns (process CPU)", m, b,
			"what the scheduler adds for any policy not built in (timed hooks)"})
		m, b = stats(wasmCPU, true)
		rows = append(rows, row{"CPU per command, WebAssembly fair, " + what, "ns (process CPU)", m, b, "all goroutines"})
		m, b = stats(ratioCPU, false)
		rows = append(rows, row{"WebAssembly / built-in, by CPU, " + what, "ratio", m, b, "built-in CPU / WebAssembly CPU"})
	}

	// Runaway guest to built-in takeover.
	for _, d := range []time.Duration{sched.DefaultHookDeadline, time.Millisecond} {
		var xs []float64
		for range *runs {
			took, err := takeover(ctx, d)
			if err != nil {
				return err
			}
			xs = append(xs, float64(took)/1e6)
		}
		m, b := stats(xs, true)
		rows = append(rows, row{fmt.Sprintf("runaway guest → built-in takes over, deadline %v", d), "ms", m, b,
			"from the submission that starts the spinning hook to that command's completion under fair"})
	}

	fmt.Printf("| measurement | median | best | unit | notes |\n|---|---:|---:|---|---|\n")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s | %s |\n", r.what, num(r.median), num(r.best), r.unit, r.note)
	}
	fmt.Printf("\n%s, %d CPUs, GOMAXPROCS %d, %d runs each\n", runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0), *runs)
	return nil
}

func num(x float64) string {
	switch {
	case x >= 1000:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// build compiles a Go policy for wasip1 and returns the module's bytes.
func build(dir, pkg string) ([]byte, error) {
	out := filepath.Join(dir, filepath.Base(pkg)+".wasm")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildmode=c-shared", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build %s: %v\n%s", pkg, err, msg)
	}
	return os.ReadFile(out)
}

// bareCall returns a call of a no-op function of a hand-built module through
// a default wazero runtime (never closed: the program exits).
func bareCall(ctx context.Context) (func() error, error) {
	rt := wazero.NewRuntime(ctx)
	m := pt.Base(1)
	m.Funcs = append(m.Funcs, pt.Notify("noop", pt.I64))
	mod, err := rt.Instantiate(ctx, m.Bytes())
	if err != nil {
		return nil, err
	}
	f := mod.ExportedFunction("noop")
	st := []uint64{0}
	return func() error { return f.CallWithStack(ctx, st) }, nil
}

// staticEnv is n tenants with fixed values.
type staticEnv struct{ n int }

func (e *staticEnv) Now() time.Duration             { return 0 }
func (e *staticEnv) NumTenants() int                { return e.n }
func (e *staticEnv) TenantName(t uint32) string     { return fmt.Sprint("t", t) }
func (e *staticEnv) Class(uint32) int               { return 0 }
func (e *staticEnv) Weight(t, _ uint32) int64       { return int64(t) + 1 }
func (e *staticEnv) MemoryShare(uint32) uint64      { return 0 }
func (e *staticEnv) Sessions(uint32) int            { return 1 }
func (e *staticEnv) Queued(uint32, uint32) int      { return 3 }
func (e *staticEnv) InFlight(uint32, uint32) int    { return 1 }
func (e *staticEnv) Usage(t, _ uint32) int64        { return int64(t) * 1000 }
func (e *staticEnv) InFlightCost(t, _ uint32) int64 { return int64(t) * 100 }
func (e *staticEnv) HeadCost(uint32, uint32) int64  { return 1000 }
func (e *staticEnv) HeadSeq(t, _ uint32) uint64     { return uint64(t) }
func (e *staticEnv) EngineInFlight(uint32) int      { return 4 }
func (e *staticEnv) SliceTarget() time.Duration     { return time.Millisecond }
func (e *staticEnv) HighClassReserved() bool        { return false }

func simScheduler(opts sched.Options) (*sched.Scheduler, backend.Device, error) {
	dev, err := sim.New(sim.Options{Memory: 64 << 20}).Open(0)
	if err != nil {
		return nil, nil, err
	}
	opts.Device = dev
	s, err := sched.New(opts)
	if err != nil {
		dev.Close()
		return nil, nil, err
	}
	return s, dev, nil
}

// throughput runs *commands commands from four tenants (weights 1-4, one
// stream each) through a scheduler under the built-in fair policy (pol nil),
// a *policy.Module, or the built-in fair as an untrusted policy (pol
// untrusted{}), each command's Issue keeping the CPU busy for issue, and returns
// commands per second of wall time and nanoseconds of process CPU time per
// command.
func throughput(ctx context.Context, pol any, issue time.Duration) (perSec, cpuPerCmd float64, err error) {
	s, dev, err := simScheduler(sched.Options{HookDeadline: time.Minute})
	if err != nil {
		return 0, 0, err
	}
	defer dev.Close()
	defer s.Close()
	var p sched.Policy
	switch x := pol.(type) {
	case *policy.Module:
		sp, err := policy.NewSchedPolicy(ctx, x, policy.NewMaps())
		if err != nil {
			return 0, 0, err
		}
		defer sp.Close()
		p = sp
	case untrusted:
		p = untrusted{sched.NewFair()}
	}
	if p != nil {
		if err := s.Add(p, "measured"); err != nil {
			return 0, 0, err
		}
		if err := s.Use(p.Name()); err != nil {
			return 0, 0, err
		}
	}
	const tenants = 4
	per := *commands / tenants
	var wg sync.WaitGroup
	errs := make(chan error, tenants)
	cpu0 := processCPU()
	start := time.Now()
	for k := range tenants {
		q, err := s.NewQueue(sched.QueueParams{Tenant: fmt.Sprint("t", k), Session: uint64(k + 1), Share: sched.Share{Compute: k + 1}})
		if err != nil {
			return 0, 0, err
		}
		st, err := dev.NewStream(0)
		if err != nil {
			return 0, 0, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer st.Destroy()
			defer q.Close()
			for range per {
				c := &sched.Command{Kind: sched.Compute, Stream: st, Issue: func() error {
					for t0 := time.Now(); time.Since(t0) < issue; {
					}
					return nil
				}}
				if err := q.Submit(ctx, c); err != nil {
					errs <- err
					return
				}
			}
			if err := q.Wait(ctx); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	cpu := processCPU() - cpu0
	close(errs)
	for err := range errs {
		return 0, 0, err
	}
	for _, pi := range s.Policies() {
		if pi.Ejected != "" {
			return 0, 0, fmt.Errorf("policy %s ejected during the run: %s", pi.Name, pi.Ejected)
		}
	}
	n := float64(tenants * per)
	return n / took.Seconds(), float64(cpu) / n, nil
}

// untrusted is the built-in fair policy without the built-in mark: the
// scheduler times its hooks as it does any loaded policy's.
type untrusted struct{ sched.Policy }

func (untrusted) Name() string { return "fair-untrusted" }

// cpuPerCall runs f on a locked thread and returns the thread's CPU time
// per call: the best of five rounds of 20000 calls after a warm-up.
func cpuPerCall(f func() error) (time.Duration, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const n = 20000
	for range n / 10 {
		if err := f(); err != nil {
			return 0, err
		}
	}
	best := time.Duration(1 << 62)
	for range 5 {
		t0 := threadCPU()
		for range n {
			if err := f(); err != nil {
				return 0, err
			}
		}
		best = min(best, (threadCPU()-t0)/n)
	}
	return best, nil
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

func processCPU() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

// takeover loads a guest that spins in on_dispatch with the given hook
// deadline (for the scheduler and the guest alike), submits one command and
// returns how long until it completed under the fallback policy.
func takeover(ctx context.Context, deadline time.Duration) (time.Duration, error) {
	s, dev, err := simScheduler(sched.Options{HookDeadline: deadline})
	if err != nil {
		return 0, err
	}
	defer dev.Close()
	defer s.Close()
	m, err := policy.Compile(ctx, "spin", pt.Spin(), policy.Options{Limits: policy.Limits{Deadline: deadline, InitDeadline: time.Minute}})
	if err != nil {
		return 0, err
	}
	defer m.Close()
	p, err := policy.NewSchedPolicy(ctx, m, policy.NewMaps())
	if err != nil {
		return 0, err
	}
	defer p.Close()
	if err := s.Add(p, "spins"); err != nil {
		return 0, err
	}
	if err := s.Use("spin"); err != nil {
		return 0, err
	}
	q, err := s.NewQueue(sched.QueueParams{Tenant: "t", Session: 1})
	if err != nil {
		return 0, err
	}
	defer q.Close()
	st, err := dev.NewStream(0)
	if err != nil {
		return 0, err
	}
	defer st.Destroy()
	done := make(chan error, 1)
	start := time.Now()
	if err := q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: func() error { return nil }, Done: func(err error) { done <- err }}); err != nil {
		return 0, err
	}
	if err := <-done; err != nil {
		return 0, err
	}
	took := time.Since(start)
	if a := s.Active(); a == "spin" {
		return 0, fmt.Errorf("the runaway policy is still active")
	}
	return took, nil
}
