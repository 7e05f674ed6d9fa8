package driver

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/sched"
)

// newScheduler starts the driver's scheduler: per-tenant in-flight windows
// from the session limits, ejections written to the audit log. On a GPU the
// scheduler's poll loops yield as the high-class pollers do (ps): its
// spinner holds a P while it spins.
func newScheduler(dev backend.Device, opts Options, ps *pollerPs) (*sched.Scheduler, error) {
	lim := withDefaults(opts.Limits)
	so := opts.Sched
	so.Device = dev
	if so.TenantInFlight == 0 {
		so.TenantInFlight = lim.InFlight
	}
	if so.Spin == 0 {
		// The dispatcher polls for a burst's next command as long as the
		// rings poll for the next request ($GPUOS_RING_SPIN; none on one CPU).
		so.Spin = ring.DefaultSpin()
	}
	if so.Yield == nil && os.Getenv(GoschedEnv) != "1" {
		so.Yield = pollingFor(dev, ps).yield
	}
	al := opts.Audit
	next := so.OnEject // the policy engine's (policy.go)
	so.OnEject = func(policy string, err error) {
		if next != nil {
			defer next(policy, err)
		}
		if opts.Log != nil {
			opts.Log.Warn("scheduling policy ejected; the fallback took over", "policy", policy, "err", err)
		}
		if al != nil {
			al.Log(audit.Event{Kind: audit.KindPolicyEject, Detail: map[string]any{"policy": policy}}.WithError(err))
		}
	}
	return sched.New(so)
}

// streamPriority is the backend priority of a new stream of tenant t that
// asked for requested: a high-class tenant's streams get the device's
// greatest priority, a low-class tenant's the least, and a normal tenant's
// what it asked for, short of the greatest (kept for the high class).
func (d *Driver) streamPriority(t *tenantState, requested int) int {
	least, greatest := d.dev.StreamPriorityRange()
	switch d.sched.TenantClass(t.name) {
	case sched.ClassHigh:
		return greatest
	case sched.ClassLow:
		return least
	}
	// CUDA priorities: lower numbers are more urgent; greatest <= least.
	p := min(max(requested, greatest), least)
	if p == greatest && greatest < least {
		p = greatest + 1
	}
	return p
}

// newTenantStream creates a stream of tenant t with backend priority prio
// (streamPriority's): in the partition that keeps SMs free for the high
// class, unless t is of that class or nothing is reserved. Like the priority,
// the placement is decided when the stream is created.
func (d *Driver) newTenantStream(t *tenantState, prio int) (*streamObj, error) {
	if d.reserved != nil && d.sched.TenantClass(t.name) != sched.ClassHigh {
		st, err := d.reserved.NewStream(prio)
		if err != nil {
			return nil, err
		}
		return &streamObj{st: st, sms: d.reserved.SMs()}, nil
	}
	st, err := d.dev.NewStream(prio)
	if err != nil {
		return nil, err
	}
	return &streamObj{st: st}, nil
}

// openReserve partitions the device so that at least n SMs are kept for the
// high class (Options.ReserveSMs). A backend that cannot leaves it off: the
// daemon still serves, with stream priorities and slicing alone, and says
// so in its log and in the driver.start audit record (detail, which it fills).
func (d *Driver) openReserve(n int, detail map[string]any) {
	if n <= 0 {
		return
	}
	detail["reserve_sms"] = n
	p, err := func() (backend.Partition, error) {
		pd, ok := d.dev.(backend.Partitioner)
		if !ok {
			return nil, fmt.Errorf("the %s backend cannot partition SMs: %w", d.opts.Backend.Name(), backend.ErrUnsupported)
		}
		return pd.Partition(n)
	}()
	if err != nil {
		d.log.Warn("reserve_sms not in effect", "requested", n, "err", err)
		detail["reserve_error"] = err.Error()
		return
	}
	d.reserved = p
	d.sched.SetHighClassReserved(true)
	d.log.Info("SMs reserved for the high class", "reserved", p.Reserved(), "others", p.SMs())
	detail["sms_reserved"], detail["sms_others"] = p.Reserved(), p.SMs()
}

// HighClassSpin is how long the rings of a high-class session poll before
// they sleep, on both sides: the driver's for the next request, the client's
// for a reply (RingOpened.SpinNs). A latency-critical service that submits
// every millisecond or so then never waits for a sleeping thread to be woken
// (tens to hundreds of µs on a virtual machine's idle CPU, the tail of its
// latency alone: runs 15a and 19b). It costs a CPU on each side while the
// session is active; other classes poll for ring.DefaultSpin. Set
// $GPUOS_RING_SPIN to override it for every session.
const HighClassSpin = 2 * time.Millisecond

// ringSpin is how long the rings of a session of tenant t poll (0: the
// default).
func (d *Driver) ringSpin(t *tenantState) time.Duration {
	if os.Getenv(ring.SpinEnv) == "" && ring.DefaultSpin() > 0 && d.sched.TenantClass(t.name) == sched.ClassHigh {
		return HighClassSpin
	}
	return 0
}

// HedgeEnv, set to "0", turns hedged serving off (hedge); set to "always",
// makes the helper watch whenever requests come instead of on demand
// (hedgeAlways).
const HedgeEnv = "GPUOS_HEDGE"

// hedge is how long a second goroutine watches a session's submission ring
// beside the one serving it (wire.Server.Hedge; 0: none): a high-class
// session whose rings poll gets one for as long as they poll. The lent GPU
// machines are virtual, and the hypervisor takes each CPU away now and then
// for up to milliseconds (bench/RESULTS.md, runs 31-39: 0.04-5% of the
// time); a request that arrives meanwhile waits unless another thread
// stands in. On noisy hosts that cut the tail of the receipt under load
// severalfold (session 15, runs 96 and 99: its p99 95-1369 µs unhedged,
// 24-427 hedged; the helper then watched only after a pause of the
// service's, by a bug fixed in session 25).
//
// The helper watches on demand (wire.Server.HedgeAlways unset): on the
// H100's quiet hosts, 11 rounds of session 25, a helper watching always
// raised the service's P99 alone in every one (85 µs to 101 µs on average;
// its slowest launches' cuLaunchKernel took twice as long beside it, and it
// served almost none of them), left its P99 under load where it was (91 µs
// to 89 µs), and cost a second polling CPU.
func (d *Driver) hedge(t *tenantState) time.Duration {
	if os.Getenv(HedgeEnv) == "0" {
		return 0
	}
	return d.ringSpin(t)
}

// hedgeAlways reports whether $GPUOS_HEDGE asks the helper to watch always.
func hedgeAlways() bool { return os.Getenv(HedgeEnv) == "always" }

// HedgeDelayEnv, set to a duration, is how long a hedged session's request
// waits unread before the hedge's helper serves it (wire.Server.HedgeDelay;
// default wire.DefaultHedgeDelay). A stand-in moves serving to another
// thread, which costs the request more than a few µs of waiting; waiting
// longer leaves the helper only the hypervisor's longer pauses.
const HedgeDelayEnv = "GPUOS_HEDGE_DELAY"

// hedgeDelay is $GPUOS_HEDGE_DELAY's (hedgeDelayOf), read once.
var hedgeDelay = sync.OnceValue(func() time.Duration { return hedgeDelayOf(os.Getenv(HedgeDelayEnv)) })

// hedgeDelayOf returns the delay a value of $GPUOS_HEDGE_DELAY asks for,
// or 0 (the default) if it is empty or not a positive duration.
func hedgeDelayOf(v string) time.Duration {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// HighClassNiceEnv, set to a nice value (-20 to 19), makes the goroutine
// serving a high-class session run on an OS thread of its own with that
// priority: the thread that receives its launches, issues them and waits
// for its kernels is then not preempted by the daemon's other threads or
// other processes of normal priority. A negative value needs CAP_SYS_NICE;
// refused, the session is served as usual and the refusal logged. Unset:
// off.
const HighClassNiceEnv = "GPUOS_HIGH_NICE"

// highClassNice returns the nice value $GPUOS_HIGH_NICE asks for, if any.
func highClassNice() (int, bool) {
	v, err := strconv.Atoi(os.Getenv(HighClassNiceEnv))
	if err != nil || v < -20 || v > 19 {
		return 0, false
	}
	return v, true
}

// HighClassCPUsEnv, set to a list of CPUs ("15", "12-15", "3,7"), makes the
// goroutine serving a high-class session run on an OS thread of its own
// that runs only on those CPUs; the daemon (gpuos serve and its driver
// processes) moves its other threads off them when it starts
// (KeepOffHighClassCPUs), and a list it cannot use stops it there. Keeping
// other processes off them is the operator's part (taskset, cpusets).
// Refused for a session, the session is served as usual and the error
// logged. Unset: off.
const HighClassCPUsEnv = "GPUOS_HIGH_CPUS"

// maxCPU bounds a CPU number in a list (the kernel's default CPU mask).
const maxCPU = 1023

// parseCPUList reads a list of CPUs as Linux writes them: numbers and
// ranges separated by commas ("0-3,8"). An empty list is an error.
func parseCPUList(list string) ([]int, error) {
	var cpus []int
	seen := map[int]bool{}
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		first, err := strconv.Atoi(lo)
		last := first
		if err == nil && isRange {
			last, err = strconv.Atoi(hi)
		}
		if err != nil || first < 0 || last < first || last > maxCPU {
			return nil, fmt.Errorf("CPU list %q: bad entry %q", list, part)
		}
		for c := first; c <= last; c++ {
			if !seen[c] {
				seen[c] = true
				cpus = append(cpus, c)
			}
		}
	}
	return cpus, nil
}

// KeepOffHighClassCPUs moves every thread of the calling process off the
// CPUs $GPUOS_HIGH_CPUS names (keepThreadsOff), so that high-class sessions'
// threads have them to themselves; threads and processes started afterwards
// inherit that. Unset, it does nothing. gpuos serve calls it at its start and
// the driver process in RunProcess; a list it cannot use stops either.
func KeepOffHighClassCPUs() error {
	cpus, err := highClassCPUs()
	if err == nil && len(cpus) > 0 {
		if err = keepThreadsOff(cpus); err != nil {
			err = fmt.Errorf("%s: %w", HighClassCPUsEnv, err)
		}
	}
	return err
}

// highClassCPUs reads $GPUOS_HIGH_CPUS: none if unset.
func highClassCPUs() ([]int, error) {
	v := os.Getenv(HighClassCPUsEnv)
	if v == "" {
		return nil, nil
	}
	cpus, err := parseCPUList(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", HighClassCPUsEnv, err)
	}
	return cpus, nil
}

// highClassThread places the calling goroutine's thread as
// $GPUOS_HIGH_NICE and $GPUOS_HIGH_CPUS ask (placeThread); restore is nil
// if they ask for nothing.
func highClassThread() (restore func(), err error) {
	nice, setNice := highClassNice()
	cpus, err := highClassCPUs()
	if err != nil {
		return nil, err
	}
	if !setNice && len(cpus) == 0 {
		return nil, nil
	}
	return placeThread(nice, setNice, cpus)
}

// queueParams describes a new session's queue.
func (d *Driver) queueParams(s *Session) sched.QueueParams {
	t := s.tenant
	return sched.QueueParams{Tenant: t.name, Session: s.id, PID: s.params.PID, Class: sched.Class(s.params.Priority),
		Depth: d.limits.QueueDepth, Share: sched.Share{Compute: max(t.weight, 1), Copy: max(t.weight, 1)}}
}

// schedControl answers the manager's scheduling requests; ok is false for
// other requests.
func (d *Driver) schedControl(m v1.Message) (reply v1.Message, ok bool, err error) {
	switch m := m.(type) {
	case *v1.PolicyList:
		return d.policies(), true, nil
	case *v1.PolicyUse:
		if err := d.sched.Use(m.Name); err != nil {
			return nil, true, err
		}
		d.audit(audit.Event{Kind: audit.KindPolicyUse, Detail: map[string]any{"policy": m.Name, "device": d.opts.Ordinal}})
		return nil, true, nil
	case *v1.SetShare:
		return nil, true, d.setShare(m)
	case *v1.TenantStats:
		return &v1.Tenants{Tenants: d.tenantStats()}, true, nil
	}
	return nil, false, nil
}

func (d *Driver) policies() *v1.Policies {
	out := &v1.Policies{Active: d.sched.Active(), Fallback: d.opts.Sched.Fallback}
	if out.Fallback == "" {
		out.Fallback = sched.DefaultPolicy
	}
	for _, p := range d.sched.Policies() {
		out.Policies = append(out.Policies, v1.PolicyInfo{Name: p.Name, Description: p.Description,
			Builtin: p.Builtin, Active: p.Active, Ejected: p.Ejected})
	}
	return out
}

// Errors returned by SetShare requests.
var ErrBadShare = v1.Errorf(v1.CodeInvalidArgument, "invalid share")

// maxWeight bounds share weights.
const maxWeight = 1 << 20

// setShare changes a tenant's virtual GPU: the fields named change, the
// others keep their value (a tenant not seen yet starts from weight 1).
func (d *Driver) setShare(m *v1.SetShare) error {
	if m.Tenant == "" {
		return fmt.Errorf("%w: no tenant named", ErrBadShare)
	}
	sh, ok := d.sched.Share(m.Tenant)
	if !ok {
		sh = sched.Share{Compute: 1, Copy: 1}
	}
	if m.Fields&v1.ShareCompute != 0 {
		if m.Compute < 1 || m.Compute > maxWeight {
			return fmt.Errorf("%w: compute weight %d (want 1..%d)", ErrBadShare, m.Compute, maxWeight)
		}
		sh.Compute = int(m.Compute)
	}
	if m.Fields&v1.ShareCopy != 0 {
		if m.Copy < 1 || m.Copy > maxWeight {
			return fmt.Errorf("%w: copy weight %d (want 1..%d)", ErrBadShare, m.Copy, maxWeight)
		}
		sh.Copy = int(m.Copy)
	}
	if m.Fields&v1.ShareClass != 0 {
		if m.Class < int32(sched.ClassLow) || m.Class > int32(sched.ClassHigh) {
			return fmt.Errorf("%w: class %d (want -1 low, 0 normal, 1 high)", ErrBadShare, m.Class)
		}
		sh.Class, sh.ClassSet = sched.Class(m.Class), true
	}
	if m.Fields&v1.ShareMemory != 0 {
		sh.Memory = m.Memory
		d.mu.Lock()
		t := d.tenants[m.Tenant]
		d.mu.Unlock()
		if t != nil {
			t.mem.SetQuota(m.Memory)
		}
	}
	if err := d.sched.SetShare(m.Tenant, sh); err != nil {
		return fmt.Errorf("set share of %s: %w", m.Tenant, err)
	}
	return nil
}

func (d *Driver) tenantStats() []v1.TenantStat {
	ppm := func(f float64) uint32 { return uint32(f*1e6 + 0.5) }
	var out []v1.TenantStat
	for _, t := range d.sched.Tenants() {
		c, p := t.Engines[sched.EngineCompute], t.Engines[sched.EngineCopy]
		out = append(out, v1.TenantStat{Name: t.Name, Device: uint32(d.opts.Ordinal), Class: int32(t.Class),
			ClassSet: t.Share.ClassSet, Compute: uint32(t.Share.Compute), Copy: uint32(t.Share.Copy), Memory: t.Share.Memory,
			Sessions: uint32(t.Sessions), GPUTimeNs: uint64(max(c.Usage, 0)), CopyBytes: uint64(max(p.Usage, 0)),
			ComputeShare: ppm(c.Recent), ComputeTarget: ppm(c.Target), CopyShare: ppm(p.Recent), CopyTarget: ppm(p.Target),
			QueueDelayNs: uint64(c.QueueDelay + p.QueueDelay), Dispatched: c.Dispatched + p.Dispatched,
			InFlight: uint32(c.InFlight + p.InFlight), Queued: uint32(c.Queued + p.Queued)})
	}
	return out
}
