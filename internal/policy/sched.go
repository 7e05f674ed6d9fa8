package policy

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuos/gpuos/internal/sched"
)

// SchedPolicy runs a policy module as a scheduling policy: it implements
// sched.Policy (and sched.Interrupter, so the scheduler's watchdog can stop a
// hook in progress) by calling the module's hooks through an Instance.
//
// The scheduler owns every queued command, so a guest that fails can lose
// nothing: the hook returns the Instance's error, the scheduler ejects the
// policy and its fallback decides again. Init after an ejection starts a
// fresh instance, so `gpuos policy use` of a policy that was ejected runs it
// anew (its maps kept).
type SchedPolicy struct {
	m     *Module
	store *Maps
	desc  string
	inst  atomic.Pointer[Instance]
	env   schedEnv   // rebound to the Host of each hook (the scheduler's lock is held)
	ready []uint32   // scratch for OnDispatch
	mu    sync.Mutex // serializes instance replacement with Close
}

// NewSchedPolicy instantiates m for a scheduler; its maps go to store. The
// module must implement on_dispatch.
func NewSchedPolicy(ctx context.Context, m *Module, store *Maps) (*SchedPolicy, error) {
	if !m.Has(HookDispatch) {
		return nil, fmt.Errorf("policy %q: a scheduling policy must export %s: %w", m.name, hookDefs[HookDispatch].name, ErrNoHook)
	}
	inst, err := m.Instantiate(ctx, store)
	if err != nil {
		return nil, err
	}
	p := &SchedPolicy{m: m, store: store, desc: "WebAssembly policy " + m.info.SHA256[:12]}
	p.inst.Store(inst)
	return p, nil
}

// Description is the policy's line in gpuos policy list.
func (p *SchedPolicy) Description() string { return p.desc }

// Module returns the module the policy runs.
func (p *SchedPolicy) Module() *Module { return p.m }

// Instance returns the instance running now.
func (p *SchedPolicy) Instance() *Instance { return p.inst.Load() }

// Close stops the instance.
func (p *SchedPolicy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := p.inst.Swap(nil); i != nil {
		return i.Close()
	}
	return nil
}

// Name implements sched.Policy.
func (p *SchedPolicy) Name() string { return p.m.name }

// Interrupt implements sched.Interrupter.
func (p *SchedPolicy) Interrupt() {
	if i := p.inst.Load(); i != nil {
		i.Interrupt()
	}
}

func (p *SchedPolicy) instance() (*Instance, error) {
	if i := p.inst.Load(); i != nil {
		return i, nil
	}
	return nil, fmt.Errorf("policy %q: %w", p.m.name, ErrClosed)
}

// Init implements sched.Policy: a fresh instance if the last one was
// stopped, then gpuos_init.
func (p *SchedPolicy) Init(h *sched.Host) error {
	i, err := p.instance()
	if err != nil {
		return err
	}
	if i.Err() != nil {
		p.mu.Lock()
		fresh, err := p.m.Instantiate(context.Background(), p.store)
		if err != nil {
			p.mu.Unlock()
			return err
		}
		if !p.inst.CompareAndSwap(i, fresh) { // closed meanwhile
			p.mu.Unlock()
			fresh.Close()
			return fmt.Errorf("policy %q: %w", p.m.name, ErrClosed)
		}
		p.mu.Unlock()
		i.Close()
		i = fresh
	}
	return i.Init(p.bind(h))
}

func (p *SchedPolicy) bind(h *sched.Host) Env {
	p.env.h = h
	return &p.env
}

// OnSessionOpen implements sched.Policy. A refusal is an error (as the
// interface wants); a guest that fails here admits the session and is
// ejected at its next hook, because an error from OnSessionOpen means
// refusal to the scheduler, not misbehavior.
func (p *SchedPolicy) OnSessionOpen(h *sched.Host, s sched.SessionEvent) error {
	i, err := p.instance()
	if err != nil {
		return nil
	}
	admit, err := i.OnSessionOpen(p.bind(h), SessionEvent{Tenant: uint32(s.Tenant), Session: s.Session, PID: s.PID, Class: int32(s.Class)})
	if err != nil || admit {
		return nil
	}
	return fmt.Errorf("policy %q refused the session", p.m.name)
}

// OnSubmit implements sched.Policy.
func (p *SchedPolicy) OnSubmit(h *sched.Host, e sched.SubmitEvent) error {
	i, err := p.instance()
	if err != nil {
		return err
	}
	return i.OnSubmit(p.bind(h), SubmitEvent{Tenant: uint32(e.Tenant), Engine: uint32(e.Engine), Session: e.Session, Cost: e.Cost})
}

// OnDispatch implements sched.Policy.
func (p *SchedPolicy) OnDispatch(h *sched.Host, e sched.Engine, ready []sched.TenantID) (sched.Choice, error) {
	i, err := p.instance()
	if err != nil {
		return sched.Choice{}, err
	}
	p.ready = p.ready[:0]
	for _, t := range ready {
		p.ready = append(p.ready, uint32(t))
	}
	c, err := i.OnDispatch(p.bind(h), uint32(e), p.ready)
	if err != nil {
		return sched.Choice{}, err
	}
	return sched.Choice{Tenant: sched.TenantID(c.Tenant), Hold: c.Hold, Quantum: c.Quantum}, nil
}

// OnComplete implements sched.Policy.
func (p *SchedPolicy) OnComplete(h *sched.Host, c sched.CompleteEvent) error {
	i, err := p.instance()
	if err != nil {
		return err
	}
	return i.OnComplete(p.bind(h), CompleteEvent{Tenant: uint32(c.Tenant), Engine: uint32(c.Engine),
		Commands: uint32(c.Commands), Charge: c.Charge, Estimate: c.Estimate, Failed: c.Failed})
}

// OnPreempt implements sched.Policy.
func (p *SchedPolicy) OnPreempt(h *sched.Host, e sched.PreemptEvent) error {
	i, err := p.instance()
	if err != nil {
		return err
	}
	return i.OnPreempt(p.bind(h), PreemptEvent{Tenant: uint32(e.Tenant), Engine: uint32(e.Engine), Remaining: e.Remaining, By: uint32(e.By)})
}

// OnTick implements sched.Policy.
func (p *SchedPolicy) OnTick(h *sched.Host, now time.Duration) error {
	i, err := p.instance()
	if err != nil {
		return err
	}
	return i.OnTick(p.bind(h), now)
}

// schedEnv reads the scheduler's Host for a hook in progress.
type schedEnv struct{ h *sched.Host }

func tid(t uint32) sched.TenantID { return sched.TenantID(t) }
func eng(e uint32) sched.Engine   { return sched.Engine(e) }

func (e *schedEnv) Now() time.Duration              { return e.h.Now() }
func (e *schedEnv) NumTenants() int                 { return e.h.NumTenants() }
func (e *schedEnv) TenantName(t uint32) string      { return e.h.TenantName(tid(t)) }
func (e *schedEnv) Class(t uint32) int              { return int(e.h.Class(tid(t))) }
func (e *schedEnv) Weight(t, en uint32) int64       { return e.h.Weight(tid(t), eng(en)) }
func (e *schedEnv) MemoryShare(t uint32) uint64     { return e.h.MemoryShare(tid(t)) }
func (e *schedEnv) Sessions(t uint32) int           { return e.h.Sessions(tid(t)) }
func (e *schedEnv) Queued(t, en uint32) int         { return e.h.Queued(tid(t), eng(en)) }
func (e *schedEnv) InFlight(t, en uint32) int       { return e.h.InFlight(tid(t), eng(en)) }
func (e *schedEnv) Usage(t, en uint32) int64        { return e.h.Usage(tid(t), eng(en)) }
func (e *schedEnv) InFlightCost(t, en uint32) int64 { return e.h.InFlightCost(tid(t), eng(en)) }
func (e *schedEnv) HeadCost(t, en uint32) int64     { return e.h.HeadCost(tid(t), eng(en)) }
func (e *schedEnv) HeadSeq(t, en uint32) uint64     { return e.h.HeadSeq(tid(t), eng(en)) }
func (e *schedEnv) EngineInFlight(en uint32) int    { return e.h.EngineInFlight(eng(en)) }
func (e *schedEnv) SliceTarget() time.Duration      { return e.h.SliceTarget() }
func (e *schedEnv) HighClassReserved() bool         { return e.h.HighClassReserved() }

var (
	_ sched.Policy      = (*SchedPolicy)(nil)
	_ sched.Interrupter = (*SchedPolicy)(nil)
)
