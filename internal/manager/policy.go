package manager

import (
	"context"
	"fmt"
	"sort"
	"sync"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/sched"
	"github.com/gpuos/gpuos/internal/wire"
)

// Hook bits of v1.PolicyLoaded.Hooks that say what a policy is for.
const (
	hookDispatch = 1 << 3 // a scheduling policy
	hookPressure = 1 << 8 // a memory policy
)

// builtinMemoryPolicy is the drivers' built-in victim choice.
const builtinMemoryPolicy = "lru"

// policyState is what the manager keeps of loaded WebAssembly policies, so
// that a driver started later gets them too.
type policyState struct {
	mu        sync.Mutex
	modules   map[string]*loadedModule
	memActive string // the memory policy in use; "" for the built-in
}

type loadedModule struct {
	wasm  []byte
	hooks uint32
}

// handlePolicy answers the policy engine's requests, and PolicyUse of a
// memory policy; ok is false for requests it leaves to others.
func (m *Manager) handlePolicy(ctx context.Context, cl *client, msg v1.Message) (reply v1.Message, ok bool, err error) {
	switch r := msg.(type) {
	case *v1.PolicyLoad:
		reply, err = m.policyLoad(ctx, cl, r)
		return reply, true, err
	case *v1.PolicyUnload:
		return nil, true, m.policyUnload(ctx, cl, r)
	case *v1.PolicyMaps:
		reply, err = m.policyMaps(ctx, cl, r)
		return reply, true, err
	case *v1.PolicyUse:
		return m.policyUseMemory(ctx, cl, r)
	}
	return nil, false, nil
}

func (m *Manager) policyLoad(ctx context.Context, cl *client, r *v1.PolicyLoad) (*v1.PolicyLoaded, error) {
	if !m.operator(cl) {
		return nil, ErrNotOperator
	}
	m.configMu.Lock()
	defer m.configMu.Unlock()
	m.pol.mu.Lock()
	_, dup := m.pol.modules[r.Name]
	m.pol.mu.Unlock()
	if dup {
		return nil, v1.Errorf(v1.CodeInvalidArgument, "load policy %q: a policy with this name is loaded (unload it first)", r.Name)
	}
	answer, err := m.eachDriver(ctx, r, func() v1.Message { return &v1.PolicyLoaded{} })
	first, _ := answer.(*v1.PolicyLoaded)
	ev := audit.Event{Kind: audit.KindPolicyLoad, PID: cl.cred.PID, UID: audit.UID(cl.cred.UID),
		Detail: map[string]any{"policy": r.Name, "size": len(r.Module)}}
	if err == nil && (first == nil || first.Name == "") {
		err = v1.Errorf(v1.CodeDeviceLost, "no driver is running")
	}
	if err != nil {
		m.eachDriver(ctx, &v1.PolicyUnload{Name: r.Name}, nil) // where it did load
		m.audit.Log(ev.WithError(err))
		return nil, fmt.Errorf("load policy %q: %w", r.Name, err)
	}
	m.pol.mu.Lock()
	if m.pol.modules == nil {
		m.pol.modules = map[string]*loadedModule{}
	}
	m.pol.modules[r.Name] = &loadedModule{wasm: append([]byte(nil), r.Module...), hooks: first.Hooks}
	m.pol.mu.Unlock()
	ev.Detail["sha256"] = first.SHA256
	ev.Detail["hooks"] = first.Hooks
	m.audit.Log(ev)
	return first, nil
}

func (m *Manager) policyUnload(ctx context.Context, cl *client, r *v1.PolicyUnload) error {
	if !m.operator(cl) {
		return ErrNotOperator
	}
	m.configMu.Lock()
	defer m.configMu.Unlock()
	m.pol.mu.Lock()
	_, known := m.pol.modules[r.Name]
	delete(m.pol.modules, r.Name)
	if m.pol.memActive == r.Name {
		m.pol.memActive = ""
	}
	m.pol.mu.Unlock()
	_, err := m.eachDriver(ctx, r, nil)
	if !known && err != nil {
		return fmt.Errorf("unload policy %q: %w", r.Name, err)
	}
	// The drivers' fallback took over if it was active; so will new drivers.
	m.sched.mu.Lock()
	if m.sched.policy == r.Name {
		m.sched.policy = sched.DefaultPolicy
	}
	m.sched.mu.Unlock()
	m.audit.Log(audit.Event{Kind: audit.KindPolicyUnload, PID: cl.cred.PID, UID: audit.UID(cl.cred.UID),
		Detail: map[string]any{"policy": r.Name}})
	return nil
}

// policyUseMemory switches the memory policy (a loaded policy with
// on_pressure, or the built-in "lru"); other names are left to the
// scheduling requests (handled false).
func (m *Manager) policyUseMemory(ctx context.Context, cl *client, r *v1.PolicyUse) (v1.Message, bool, error) {
	m.pol.mu.Lock()
	mod := m.pol.modules[r.Name]
	m.pol.mu.Unlock()
	if r.Name != builtinMemoryPolicy && (mod == nil || mod.hooks&hookPressure == 0) {
		return nil, false, nil
	}
	if !m.operator(cl) {
		return nil, true, ErrNotOperator
	}
	m.configMu.Lock()
	defer m.configMu.Unlock()
	if _, err := m.eachDriver(ctx, r, nil); err != nil {
		return nil, true, fmt.Errorf("use policy %s: %w", r.Name, err)
	}
	m.pol.mu.Lock()
	m.pol.memActive = r.Name
	if r.Name == builtinMemoryPolicy {
		m.pol.memActive = ""
	}
	m.pol.mu.Unlock()
	if mod != nil && mod.hooks&hookDispatch != 0 {
		m.sched.mu.Lock()
		m.sched.policy = r.Name // it schedules too
		m.sched.mu.Unlock()
	}
	m.audit.Log(audit.Event{Kind: audit.KindPolicyUse, PID: cl.cred.PID, UID: audit.UID(cl.cred.UID),
		Detail: map[string]any{"policy": r.Name, "hook": "memory"}})
	return nil, true, nil
}

// policyMaps gathers the maps of every driver; a client that is not the
// operator sees only its own tenant's values.
func (m *Manager) policyMaps(ctx context.Context, cl *client, r *v1.PolicyMaps) (*v1.PolicyMapValues, error) {
	var all []*v1.PolicyMapValues
	_, err := m.eachDriver(ctx, r, func() v1.Message {
		v := &v1.PolicyMapValues{}
		all = append(all, v)
		return v
	})
	out := &v1.PolicyMapValues{}
	for _, v := range all {
		for _, mi := range v.Maps {
			if !m.operator(cl) {
				var own []v1.MapValue
				for _, x := range mi.Values {
					if x.Tenant == cl.tenant.Name {
						own = append(own, x)
					}
				}
				mi.Values = own
			}
			out.Maps = append(out.Maps, mi)
		}
	}
	if len(out.Maps) == 0 && err != nil {
		return nil, fmt.Errorf("policy maps: %w", err)
	}
	sort.SliceStable(out.Maps, func(i, j int) bool {
		if out.Maps[i].Name != out.Maps[j].Name {
			return out.Maps[i].Name < out.Maps[j].Name
		}
		return out.Maps[i].Device < out.Maps[j].Device
	})
	return out, nil
}

// configurePolicies loads every loaded policy on a driver that just
// started, and makes the memory policy in use active there, before its
// scheduling policy is set.
func (m *Manager) configurePolicies(ctx context.Context, ctl *wire.Client) error {
	m.pol.mu.Lock()
	mods := make(map[string]*loadedModule, len(m.pol.modules))
	for n, mod := range m.pol.modules {
		mods[n] = mod
	}
	memActive := m.pol.memActive
	m.pol.mu.Unlock()
	names := make([]string, 0, len(mods))
	for n := range mods {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := ctl.Call(ctx, &v1.PolicyLoad{Name: n, Module: mods[n].wasm}, &v1.PolicyLoaded{}); err != nil {
			return fmt.Errorf("load policy %s: %w", n, err)
		}
	}
	if memActive != "" {
		if err := ctl.Call(ctx, &v1.PolicyUse{Name: memActive}, nil); err != nil {
			return fmt.Errorf("use policy %s: %w", memActive, err)
		}
	}
	return nil
}
