package driver

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/mem"
	"github.com/gpuos/gpuos/internal/policy"
	"github.com/gpuos/gpuos/internal/sched"
)

// Errors returned for policy engine requests.
var (
	ErrPolicyName   = v1.Errorf(v1.CodeInvalidArgument, "bad policy name (1 to 64 of a-z 0-9 . _ -)")
	ErrPolicyExists = v1.Errorf(v1.CodeInvalidArgument, "a policy with this name is loaded or built in")
	ErrNoPolicy     = v1.Errorf(v1.CodeNotFound, "no loaded policy has this name")
)

// BuiltinMemoryPolicy is the name of the built-in victim choice
// (mem.LowestPriorityLRU): `gpuos policy use lru` returns to it.
const BuiltinMemoryPolicy = "lru"

// policies is the driver's policy engine: the WebAssembly policies loaded
// on it, their maps, and the memory switch the memory manager asks for
// eviction victims. Lock order: Driver.mu is never held with policies.mu;
// policies.mu may be held while calling the scheduler.
type policies struct {
	maps  *policy.Maps
	mem   *policy.MemorySwitch
	ids   atomic.Pointer[tenantTable] // the scheduler's tenants, for memory hooks
	audit func(audit.Event)

	mu      sync.Mutex
	loaded  map[string]*loadedPolicy
	ejected map[string]string // policies unloaded for misbehaving, and why
	d       *Driver
}

// loadedPolicy is one loaded module and what runs it.
type loadedPolicy struct {
	mod   *policy.Module
	sched *policy.SchedPolicy // nil unless it implements on_dispatch
	mem   *policy.Instance    // while it is the memory policy in use
}

// newPolicies prepares the policy engine before the driver exists: the
// memory manager needs its switch at start.
func newPolicies(opts Options) *policies {
	p := &policies{maps: policy.NewMaps(), loaded: map[string]*loadedPolicy{}, ejected: map[string]string{}}
	p.audit = func(e audit.Event) {
		if opts.Audit != nil {
			opts.Audit.Log(e)
		}
	}
	p.mem = policy.NewMemorySwitch(policy.MemoryOptions{
		TenantID: p.tenantID,
		Env:      &tenantEnv{p: p},
		OnEject:  func(name string, err error) { p.ejectedPolicy(name, "memory", err) },
	})
	return p
}

// attach connects the engine to its driver: from now on an ejection
// unloads the policy from the scheduler too.
func (p *policies) attach(d *Driver) {
	p.mu.Lock()
	p.d = d
	p.mu.Unlock()
	p.refreshTenants()
}

// schedEjected is told by the scheduler (on its own goroutine) that a
// policy misbehaved and was replaced.
func (p *policies) schedEjected(name string, err error) {
	p.mu.Lock()
	_, ours := p.loaded[name]
	p.mu.Unlock()
	if ours {
		p.ejectedPolicy(name, "scheduling", err)
	}
}

// ejectedPolicy unloads a policy that misbehaved: the built-in policy has
// already taken over; the module is released and the reason kept for
// gpuos policy list. Its maps stay readable.
func (p *policies) ejectedPolicy(name, role string, err error) {
	p.mu.Lock()
	lp, ok := p.loaded[name]
	if ok {
		delete(p.loaded, name)
		p.ejected[name] = err.Error()
	}
	d := p.d
	p.mu.Unlock()
	if !ok {
		return
	}
	p.release(d, name, lp)
	if role == "memory" { // the scheduler audits its own ejections
		p.audit(audit.Event{Kind: audit.KindPolicyEject, Detail: map[string]any{"policy": name, "hook": role}}.WithError(err))
	}
	p.audit(audit.Event{Kind: audit.KindPolicyUnload, Detail: map[string]any{"policy": name, "reason": "ejected", "hook": role}}.WithError(err))
}

// release stops everything a policy runs.
func (p *policies) release(d *Driver, name string, lp *loadedPolicy) {
	if lp.mem != nil {
		if cur := p.mem.Clear(); cur != nil && cur != lp.mem {
			p.mem.Use(cur) // another policy is in use: keep it
		}
		lp.mem.Close()
	}
	if lp.sched != nil && d != nil {
		d.sched.Remove(name) // the fallback takes over if it is active
		lp.sched.Close()
	}
	lp.mod.Close()
}

// close unloads every policy (the driver is closing).
func (p *policies) close() {
	p.mu.Lock()
	loaded := p.loaded
	p.loaded = map[string]*loadedPolicy{}
	d := p.d
	p.mu.Unlock()
	for name, lp := range loaded {
		p.release(d, name, lp)
	}
}

func validPolicyName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func builtinName(name string) bool {
	if name == BuiltinMemoryPolicy {
		return true
	}
	for _, b := range sched.Builtins() {
		if b.Name == name {
			return true
		}
	}
	return false
}

// policyControl answers the manager's policy engine requests, and PolicyList
// and PolicyUse where loaded memory policies are concerned; ok is false for
// requests it leaves to others.
func (d *Driver) policyControl(ctx context.Context, m v1.Message) (reply v1.Message, ok bool, err error) {
	p := d.pol
	switch m := m.(type) {
	case *v1.PolicyLoad:
		r, err := p.load(ctx, d, m)
		return r, true, err
	case *v1.PolicyUnload:
		return nil, true, p.unload(d, m.Name)
	case *v1.PolicyMaps:
		return &v1.PolicyMapValues{Maps: p.mapValues(d, m.Prefix)}, true, nil
	case *v1.PolicyList:
		out := d.policies()
		out.Policies = append(out.Policies, p.memoryInfo()...)
		return out, true, nil
	case *v1.PolicyUse:
		handled, err := p.use(d, m.Name)
		return nil, handled, err
	}
	return nil, false, nil
}

func (p *policies) load(ctx context.Context, d *Driver, m *v1.PolicyLoad) (*v1.PolicyLoaded, error) {
	if !validPolicyName(m.Name) {
		return nil, fmt.Errorf("load policy %q: %w", m.Name, ErrPolicyName)
	}
	if builtinName(m.Name) {
		return nil, fmt.Errorf("load policy %q: %w", m.Name, ErrPolicyExists)
	}
	p.mu.Lock()
	_, dup := p.loaded[m.Name]
	p.mu.Unlock()
	if dup {
		return nil, fmt.Errorf("load policy %q: %w (unload it first)", m.Name, ErrPolicyExists)
	}
	// The guest's own deadline is the scheduler's (0: both default to 20 ms).
	mod, err := policy.Compile(ctx, m.Name, m.Module, policy.Options{Log: d.log,
		Limits: policy.Limits{Deadline: d.opts.Sched.HookDeadline}})
	if err != nil {
		p.audit(audit.Event{Kind: audit.KindPolicyLoad, Detail: map[string]any{"policy": m.Name, "size": len(m.Module)}}.WithError(err))
		return nil, err
	}
	lp := &loadedPolicy{mod: mod}
	if mod.Has(policy.HookDispatch) {
		if lp.sched, err = policy.NewSchedPolicy(ctx, mod, p.maps); err != nil {
			mod.Close()
			return nil, err
		}
		if err := d.sched.Add(lp.sched, lp.sched.Description()); err != nil {
			lp.sched.Close()
			mod.Close()
			return nil, fmt.Errorf("load policy %q: %w", m.Name, err)
		}
	} else if !mod.Has(policy.HookPressure) {
		mod.Close()
		return nil, fmt.Errorf("load policy %q: exports neither on_dispatch nor on_pressure: %w", m.Name, policy.ErrNoHook)
	}
	p.mu.Lock()
	if _, dup := p.loaded[m.Name]; dup { // loaded meanwhile
		p.mu.Unlock()
		p.release(d, m.Name, lp)
		return nil, fmt.Errorf("load policy %q: %w", m.Name, ErrPolicyExists)
	}
	p.loaded[m.Name] = lp
	delete(p.ejected, m.Name)
	p.mu.Unlock()
	info := mod.Info()
	var hooks uint32
	for _, h := range info.Hooks {
		hooks |= 1 << h
	}
	p.audit(audit.Event{Kind: audit.KindPolicyLoad, Detail: map[string]any{"policy": m.Name, "sha256": info.SHA256,
		"size": info.Size, "hooks": fmt.Sprint(info.Hooks), "device": d.opts.Ordinal}})
	return &v1.PolicyLoaded{Name: m.Name, SHA256: info.SHA256, Size: uint32(info.Size), Hooks: hooks, CheckSites: uint32(info.CheckSites)}, nil
}

func (p *policies) unload(d *Driver, name string) error {
	p.mu.Lock()
	lp, ok := p.loaded[name]
	delete(p.loaded, name)
	_, wasEjected := p.ejected[name]
	delete(p.ejected, name)
	p.mu.Unlock()
	if !ok {
		if wasEjected {
			p.maps.Drop(name)
			return nil // already unloaded when it was ejected
		}
		return fmt.Errorf("unload policy %q: %w", name, ErrNoPolicy)
	}
	p.release(d, name, lp)
	p.maps.Drop(name)
	p.audit(audit.Event{Kind: audit.KindPolicyUnload, Detail: map[string]any{"policy": name, "device": d.opts.Ordinal}})
	return nil
}

// use makes a loaded policy with memory hooks the memory policy in use (and,
// if it also schedules, leaves the scheduling part to the scheduler's Use);
// "lru" returns to the built-in victim choice. handled is false for names
// that are only the scheduler's business.
func (p *policies) use(d *Driver, name string) (handled bool, err error) {
	if name == BuiltinMemoryPolicy {
		if i := p.mem.Clear(); i != nil {
			p.mu.Lock()
			for _, lp := range p.loaded {
				if lp.mem == i {
					lp.mem = nil
				}
			}
			p.mu.Unlock()
			i.Close()
		}
		p.audit(audit.Event{Kind: audit.KindPolicyUse, Detail: map[string]any{"policy": name, "device": d.opts.Ordinal}})
		return true, nil
	}
	p.mu.Lock()
	lp, ok := p.loaded[name]
	p.mu.Unlock()
	if !ok || !lp.mod.Has(policy.HookPressure) {
		return false, nil
	}
	if lp.sched != nil {
		if err := d.sched.Use(name); err != nil {
			return true, err
		}
	}
	p.refreshTenants()
	inst, err := lp.mod.Instantiate(context.Background(), p.maps)
	if err != nil {
		return true, err
	}
	if err := p.mem.Use(inst); err != nil {
		inst.Close()
		return true, err
	}
	p.mu.Lock()
	for _, other := range p.loaded {
		if other.mem != nil && other != lp {
			other.mem.Close()
			other.mem = nil
		}
	}
	old := lp.mem
	lp.mem = inst
	p.mu.Unlock()
	if old != nil {
		old.Close()
	}
	p.audit(audit.Event{Kind: audit.KindPolicyUse, Detail: map[string]any{"policy": name, "hook": "memory", "device": d.opts.Ordinal}})
	return true, nil
}

// memoryInfo lists the built-in victim choice and loaded policies that are
// only memory policies (the scheduler lists the others), and policies
// unloaded for misbehaving. Active stays the scheduling policy's mark: the
// memory policy in use says so in its description.
func (p *policies) memoryInfo() []v1.PolicyInfo {
	active, _ := p.mem.Active()
	inUse := func(name string) string {
		if name == active || name == BuiltinMemoryPolicy && active == "" {
			return "memory, in use: "
		}
		return "memory: "
	}
	out := []v1.PolicyInfo{{Name: BuiltinMemoryPolicy, Builtin: true,
		Description: inUse(BuiltinMemoryPolicy) + "evict the lowest priority, least recently used chunks first"}}
	p.mu.Lock()
	defer p.mu.Unlock()
	var names []string
	for name, lp := range p.loaded {
		if lp.sched == nil { // the scheduler lists the others
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, v1.PolicyInfo{Name: name,
			Description: inUse(name) + "WebAssembly policy " + p.loaded[name].mod.Info().SHA256[:12]})
	}
	names = names[:0]
	for name := range p.ejected {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, v1.PolicyInfo{Name: name, Description: "unloaded", Ejected: p.ejected[name]})
	}
	return out
}

// mapValues returns the maps whose name starts with prefix: the
// scheduler's and the loaded policies', tenants by name.
func (p *policies) mapValues(d *Driver, prefix string) []v1.MapInfo {
	dev := uint32(d.opts.Ordinal)
	var out []v1.MapInfo
	for _, ms := range d.sched.Maps() {
		if !hasPrefix(ms.Name, prefix) {
			continue
		}
		kind := v1.MapOfBuiltin
		if ms.Host {
			kind = v1.MapOfHost
		}
		mi := v1.MapInfo{Device: dev, Name: ms.Name, Kind: kind}
		for t, v := range ms.Values {
			mi.Values = append(mi.Values, v1.MapValue{Tenant: t, Value: v})
		}
		sortValues(mi.Values)
		out = append(out, mi)
	}
	names := map[uint32]string{}
	for _, t := range d.sched.Tenants() {
		names[uint32(t.ID)] = t.Name
	}
	for _, mv := range p.maps.Snapshot(prefix) {
		mi := v1.MapInfo{Device: dev, Name: mv.Name, Kind: v1.MapOfLoaded}
		for id, v := range mv.Values {
			name, ok := names[id]
			if !ok {
				name = fmt.Sprintf("#%d", id)
			}
			mi.Values = append(mi.Values, v1.MapValue{Tenant: name, Value: v})
		}
		sortValues(mi.Values)
		out = append(out, mi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

func sortValues(vs []v1.MapValue) {
	sort.Slice(vs, func(i, j int) bool { return vs[i].Tenant < vs[j].Tenant })
}

// tenantTable is a snapshot of the scheduler's tenants for the memory
// hooks, which run outside the scheduler's lock and so cannot ask it.
type tenantTable struct {
	ids   map[string]uint32
	stats []sched.TenantStat // by id
	at    time.Time
}

// refreshTenants takes a new snapshot (it takes the scheduler's lock).
func (p *policies) refreshTenants() {
	p.mu.Lock()
	d := p.d
	p.mu.Unlock()
	if d == nil {
		return
	}
	ts := d.sched.Tenants()
	tt := &tenantTable{ids: map[string]uint32{}, at: time.Now()}
	for _, t := range ts {
		tt.ids[t.Name] = uint32(t.ID)
		for int(t.ID) >= len(tt.stats) {
			tt.stats = append(tt.stats, sched.TenantStat{})
		}
		tt.stats[t.ID] = t
	}
	p.ids.Store(tt)
}

// tenantID maps a memory manager tenant name to the scheduler's id; a name
// the snapshot does not know yet asks for a new one, in the background.
func (p *policies) tenantID(name string) (uint32, bool) {
	tt := p.ids.Load()
	if tt != nil {
		if id, ok := tt.ids[name]; ok {
			return id, true
		}
	}
	if tt == nil || time.Since(tt.at) > 100*time.Millisecond {
		go p.refreshTenants()
	}
	return 0, false
}

// tenantEnv is what memory hooks see: the last snapshot of the tenants.
type tenantEnv struct{ p *policies }

func (e *tenantEnv) stat(t uint32) *sched.TenantStat {
	if tt := e.p.ids.Load(); tt != nil && int(t) < len(tt.stats) {
		return &tt.stats[t]
	}
	return nil
}

func (e *tenantEnv) engine(t, en uint32) *sched.EngineStat {
	if s := e.stat(t); s != nil && en < uint32(sched.NumEngines) {
		return &s.Engines[en]
	}
	return nil
}

func (e *tenantEnv) Now() time.Duration { return 0 }
func (e *tenantEnv) NumTenants() int {
	if tt := e.p.ids.Load(); tt != nil {
		return len(tt.stats)
	}
	return 0
}
func (e *tenantEnv) TenantName(t uint32) string {
	if s := e.stat(t); s != nil {
		return s.Name
	}
	return ""
}
func (e *tenantEnv) Class(t uint32) int {
	if s := e.stat(t); s != nil {
		return int(s.Class)
	}
	return 0
}
func (e *tenantEnv) Weight(t, en uint32) int64 {
	if s := e.stat(t); s != nil {
		if en == uint32(sched.EngineCopy) {
			return int64(s.Share.Copy)
		}
		return int64(s.Share.Compute)
	}
	return 1
}
func (e *tenantEnv) MemoryShare(t uint32) uint64 {
	if s := e.stat(t); s != nil {
		return s.Share.Memory
	}
	return 0
}
func (e *tenantEnv) Sessions(t uint32) int {
	if s := e.stat(t); s != nil {
		return s.Sessions
	}
	return 0
}
func (e *tenantEnv) Queued(t, en uint32) int {
	if s := e.engine(t, en); s != nil {
		return s.Queued
	}
	return 0
}
func (e *tenantEnv) InFlight(t, en uint32) int {
	if s := e.engine(t, en); s != nil {
		return s.InFlight
	}
	return 0
}
func (e *tenantEnv) Usage(t, en uint32) int64 {
	if s := e.engine(t, en); s != nil {
		return s.Usage
	}
	return 0
}
func (e *tenantEnv) InFlightCost(uint32, uint32) int64 { return 0 }
func (e *tenantEnv) HeadCost(uint32, uint32) int64     { return 0 }
func (e *tenantEnv) HeadSeq(uint32, uint32) uint64     { return 0 }
func (e *tenantEnv) EngineInFlight(uint32) int         { return 0 }
func (e *tenantEnv) SliceTarget() time.Duration        { return 0 }
func (e *tenantEnv) HighClassReserved() bool           { return false }

var (
	_ policy.Env        = (*tenantEnv)(nil)
	_ mem.VictimChooser = (*policy.MemorySwitch)(nil)
)
