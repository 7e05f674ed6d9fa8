package policy

import (
	"fmt"
	"time"

	"github.com/tetratelabs/wazero/api"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// ErrNoHook: the instance does not implement a hook that has no default (a
// scheduling policy must implement on_dispatch, a memory policy on_pressure).
var ErrNoHook = v1.Errorf(v1.CodeUnsupported, "policy does not implement this hook")

// Engines, as the ABI numbers them.
const (
	EngineCompute = 0
	EngineCopy    = 1
)

// SessionEvent describes a session opening (on_session_open).
type SessionEvent struct {
	Tenant  uint32
	Session uint64
	PID     int32
	Class   int32
}

// SubmitEvent describes a command entering a tenant's queue (on_submit).
type SubmitEvent struct {
	Tenant  uint32
	Engine  uint32
	Session uint64
	Cost    int64 // estimated charge: ns (compute) or bytes (copy)
}

// CompleteEvent describes completed work (on_complete).
type CompleteEvent struct {
	Tenant   uint32
	Engine   uint32
	Commands uint32
	Charge   int64
	Estimate int64
	Failed   bool
}

// PreemptEvent describes a sliced command yielding between slices (on_preempt).
type PreemptEvent struct {
	Tenant    uint32
	Engine    uint32
	Remaining uint32
	By        uint32
}

// AllocEvent describes an allocation about to be made (on_alloc).
type AllocEvent struct {
	Tenant uint32
	Bytes  uint64 // the allocation's size
	Used   uint64 // the tenant's bytes in use before it
	Quota  uint64 // the tenant's quota (0: none)
}

// FaultEvent describes a fault (on_fault).
type FaultEvent struct {
	Tenant  uint32
	Session uint64
	Kind    uint32 // FaultGuard, FaultDevice, FaultLaunch
}

// Choice is on_dispatch's decision.
type Choice struct {
	// Tenant is one of the ready tenants, or NoTenant.
	Tenant uint32
	// Hold, with NoTenant, asks to be asked again after this long.
	Hold time.Duration
	// Quantum, with a tenant, bounds the device time of what is issued.
	Quantum time.Duration
}

// Pressure describes a shortage of device memory (on_pressure).
type Pressure struct {
	Need   uint64 // bytes to free
	Tenant uint32 // whose request needs the memory (NoTenant: none)
	Window uint64 // the requester's window (0: none)
	SwapIn bool   // the request makes Window resident
}

// Candidate is a chunk that on_pressure may pick for eviction.
type Candidate struct {
	Tenant   uint32
	Priority int32
	Flags    uint32 // CandidateShared, CandidateSlab
	Bytes    uint64
	LastUse  uint64 // memory manager clock: larger is more recent
	Window   uint64 // the owner window's id
}

// Init runs gpuos_init again with an Env (Instantiate ran it without one),
// for a policy that becomes active. A module without it does nothing.
func (i *Instance) Init(env Env) error {
	return i.notify(HookInit, env, 0)
}

// OnSessionOpen asks whether to admit a session.
func (i *Instance) OnSessionOpen(env Env, e SessionEvent) (admit bool, err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	f := i.fns[HookSessionOpen]
	if f == nil {
		return true, i.dead
	}
	st := i.stack[:4]
	st[0], st[1], st[2], st[3] = uint64(e.Tenant), e.Session, uint64(uint32(e.PID)), uint64(uint32(e.Class))
	if err := i.invoke("on_session_open", f, env, i.hookDeadline(), st); err != nil {
		return false, err
	}
	switch r := uint32(st[0]); r {
	case Admit:
		return true, nil
	case Refuse:
		return false, nil
	default:
		return false, i.fail("on_session_open", fmt.Errorf("returned %d, want %d (admit) or %d (refuse): %w", int32(r), Admit, Refuse, ErrInvalidDecision))
	}
}

// OnSubmit reports a command entering a tenant's queue. The guest also gets
// the tenant's queued and in-flight counts on that engine after it, from env.
// A guest that set FlagSubmitIdleOnly is called only when they are 1 and 0.
func (i *Instance) OnSubmit(env Env, e SubmitEvent) error {
	var queued, inFlight uint32
	if env != nil {
		queued, inFlight = uint32(env.Queued(e.Tenant, e.Engine)), uint32(env.InFlight(e.Tenant, e.Engine))
	}
	// flags are set before the instance is shared, so read without mu.
	if i.flags&FlagSubmitIdleOnly != 0 && (queued != 1 || inFlight != 0) {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	f := i.fns[HookSubmit]
	if f == nil {
		return i.dead
	}
	st := i.stack[:6]
	st[0], st[1], st[2], st[3] = uint64(e.Tenant), uint64(e.Engine), e.Session, uint64(e.Cost)
	st[4], st[5] = uint64(queued), uint64(inFlight)
	return i.result("on_submit", f, env, st)
}

// OnDispatch asks which of the ready tenants (in increasing id order) to
// dispatch from next on an engine (a guest that set FlagWorkConserving is
// not asked when only one is ready: that one is dispatched). The guest sees one record per ready
// tenant with what it most often needs (readyRecord), read from env. The
// decision is checked: a tenant that is not ready stops the instance with
// ErrInvalidDecision.
func (i *Instance) OnDispatch(env Env, engine uint32, ready []uint32) (Choice, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	f := i.fns[HookDispatch]
	if f == nil {
		if i.dead != nil {
			return Choice{}, i.dead
		}
		return Choice{}, ErrNoHook
	}
	if i.dead != nil {
		return Choice{}, i.dead
	}
	if len(ready) == 1 && i.flags&FlagWorkConserving != 0 {
		return Choice{Tenant: ready[0]}, nil
	}
	// More ready tenants than the largest exchange area holds: offer the first ones.
	n := uint32(min(len(ready), maxExchange/readyRecordSize))
	ready = ready[:n]
	ptr, buf, err := i.exchange(readyRecordSize * n)
	if err != nil {
		return Choice{}, err
	}
	for k, t := range ready {
		r := buf[k*readyRecordSize : (k+1)*readyRecordSize]
		le.PutUint32(r[0:], t)
		if env == nil {
			clear(r[4:])
			continue
		}
		le.PutUint32(r[4:], uint32(env.Queued(t, engine)))
		le.PutUint32(r[8:], uint32(env.InFlight(t, engine)))
		le.PutUint32(r[12:], uint32(int32(env.Class(t))))
		le.PutUint64(r[16:], uint64(env.Weight(t, engine)))
		le.PutUint64(r[24:], uint64(env.InFlightCost(t, engine)))
		le.PutUint64(r[32:], uint64(env.HeadCost(t, engine)))
		le.PutUint64(r[40:], env.HeadSeq(t, engine))
		le.PutUint64(r[48:], uint64(env.Usage(t, engine)))
	}
	st := i.stack[:3]
	st[0], st[1], st[2] = uint64(engine), uint64(ptr), uint64(n)
	if err := i.invoke("on_dispatch", f, env, i.hookDeadline(), st); err != nil {
		return Choice{}, err
	}
	t, d := uint32(st[0]), time.Duration(st[0]>>32)
	if t == NoTenant {
		return Choice{Tenant: NoTenant, Hold: d}, nil
	}
	for _, r := range ready {
		if r == t {
			return Choice{Tenant: t, Quantum: d}, nil
		}
	}
	return Choice{}, i.fail("on_dispatch", fmt.Errorf("chose tenant %d, which is not among the %d ready: %w", t, len(ready), ErrInvalidDecision))
}

// OnComplete reports completed work and its charge. The guest also gets the
// tenant's weight on that engine, from env (1 without one).
func (i *Instance) OnComplete(env Env, e CompleteEvent) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	f := i.fns[HookComplete]
	if f == nil {
		return i.dead
	}
	st := i.stack[:7]
	st[0], st[1], st[2], st[3], st[4] = uint64(e.Tenant), uint64(e.Engine), uint64(e.Commands), uint64(e.Charge), uint64(e.Estimate)
	st[5], st[6] = 0, 1
	if e.Failed {
		st[5] = 1
	}
	if env != nil {
		st[6] = uint64(env.Weight(e.Tenant, e.Engine))
	}
	return i.result("on_complete", f, env, st)
}

// OnPreempt reports a sliced command yielding to another tenant.
func (i *Instance) OnPreempt(env Env, e PreemptEvent) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	f := i.fns[HookPreempt]
	if f == nil {
		return i.dead
	}
	st := i.stack[:4]
	st[0], st[1], st[2], st[3] = uint64(e.Tenant), uint64(e.Engine), uint64(e.Remaining), uint64(e.By)
	return i.result("on_preempt", f, env, st)
}

// OnTick runs the periodic hook.
func (i *Instance) OnTick(env Env, now time.Duration) error {
	return i.notify(HookTick, env, uint64(now))
}

// OnAlloc asks whether to let a tenant allocate.
func (i *Instance) OnAlloc(env Env, e AllocEvent) (allow bool, err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	f := i.fns[HookAlloc]
	if f == nil {
		return true, i.dead
	}
	st := i.stack[:4]
	st[0], st[1], st[2], st[3] = uint64(e.Tenant), e.Bytes, e.Used, e.Quota
	if err := i.invoke("on_alloc", f, env, i.hookDeadline(), st); err != nil {
		return false, err
	}
	switch r := uint32(st[0]); r {
	case Admit:
		return true, nil
	case Refuse:
		return false, nil
	default:
		return false, i.fail("on_alloc", fmt.Errorf("returned %d, want %d (allow) or %d (refuse): %w", int32(r), Admit, Refuse, ErrInvalidDecision))
	}
}

// OnPressure asks which chunks to evict to free p.Need bytes. cands are
// listed least recently used first; the answer is indices into cands, best
// victim first, each at most once. If there are more candidates than the
// largest exchange area holds, the guest sees the first ones.
func (i *Instance) OnPressure(env Env, p Pressure, cands []Candidate) ([]int, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	f := i.fns[HookPressure]
	if f == nil {
		if i.dead != nil {
			return nil, i.dead
		}
		return nil, ErrNoHook
	}
	if i.dead != nil {
		return nil, i.dead
	}
	const per = candidateSize + 4 // a record and its slot in the answer
	n := uint32(min(len(cands), maxExchange/per))
	ptr, buf, err := i.exchange(n * per)
	if err != nil {
		return nil, err
	}
	cands = cands[:n]
	for k, c := range cands {
		r := buf[k*candidateSize:]
		le.PutUint32(r[0:], c.Tenant)
		le.PutUint32(r[4:], uint32(c.Priority))
		le.PutUint32(r[8:], c.Flags)
		le.PutUint32(r[12:], 0)
		le.PutUint64(r[16:], c.Bytes)
		le.PutUint64(r[24:], c.LastUse)
		le.PutUint64(r[32:], c.Window)
	}
	out := ptr + n*candidateSize
	var flags uint64
	if p.SwapIn {
		flags |= PressureSwapIn
	}
	st := i.stack[:7]
	st[0], st[1], st[2], st[3] = p.Need, uint64(p.Tenant), p.Window, flags
	st[4], st[5], st[6] = uint64(ptr), uint64(n), uint64(out)
	if err := i.invoke("on_pressure", f, env, i.hookDeadline(), st); err != nil {
		return nil, err
	}
	k := uint32(st[0])
	if k > n {
		return nil, i.fail("on_pressure", fmt.Errorf("returned %d victims of %d candidates: %w", int32(k), n, ErrInvalidDecision))
	}
	ans, ok := i.mod.Memory().Read(out, 4*k)
	if !ok {
		return nil, i.fail("on_pressure", fmt.Errorf("answer outside memory: %w", ErrABI))
	}
	victims := make([]int, k)
	seen := make([]bool, n)
	for j := range victims {
		v := le.Uint32(ans[4*j:])
		if v >= n || seen[v] {
			return nil, i.fail("on_pressure", fmt.Errorf("victim %d is candidate %d: not one of %d, or named twice: %w", j, v, n, ErrInvalidDecision))
		}
		seen[v] = true
		victims[j] = int(v)
	}
	return victims, nil
}

// OnFault reports a fault of a tenant's session.
func (i *Instance) OnFault(env Env, e FaultEvent) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	f := i.fns[HookFault]
	if f == nil {
		return i.dead
	}
	st := i.stack[:3]
	st[0], st[1], st[2] = uint64(e.Tenant), e.Session, uint64(e.Kind)
	return i.result("on_fault", f, env, st)
}

// notify calls a hook with zero or one i64 argument and checks ResultOK.
func (i *Instance) notify(h Hook, env Env, arg uint64) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	f := i.fns[h]
	if f == nil {
		return i.dead
	}
	st := i.stack[:1]
	st[0] = arg
	return i.result(h.String(), f, env, st)
}

// result invokes f and checks that it returned ResultOK: any other value is
// the policy reporting its own failure, which stops it.
func (i *Instance) result(what string, f api.Function, env Env, st []uint64) error {
	if err := i.invoke(what, f, env, i.hookDeadline(), st); err != nil {
		return err
	}
	if r := uint32(st[0]); r != ResultOK {
		return i.fail(what, fmt.Errorf("returned %d: %w", int32(r), ErrTrap))
	}
	return nil
}

func (i *Instance) hookDeadline() time.Duration { return i.m.limits.Deadline }
