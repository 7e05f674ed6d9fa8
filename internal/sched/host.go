package sched

import (
	"sort"
	"time"
)

// Host is what a policy sees of the scheduler during a hook: the tenants,
// their shares and queues, and the typed maps. Its methods may only be called
// from inside a hook (the scheduler's lock is held then).
type Host struct {
	s *Scheduler
}

// Now is the scheduler's clock: wall time since the scheduler started.
func (h *Host) Now() time.Duration { return time.Duration(h.s.now()) }

// Tenants returns every tenant, by id.
func (h *Host) Tenants() []TenantID {
	ids := make([]TenantID, len(h.s.tenants))
	for i := range ids {
		ids[i] = TenantID(i)
	}
	return ids
}

// NumTenants is how many tenants exist; their ids are 0..NumTenants-1.
func (h *Host) NumTenants() int { return len(h.s.tenants) }

func (h *Host) tenant(t TenantID) *tenant {
	if int(t) < len(h.s.tenants) {
		return h.s.tenants[t]
	}
	return nil
}

// TenantName returns a tenant's name ("" for an unknown id).
func (h *Host) TenantName(t TenantID) string {
	if x := h.tenant(t); x != nil {
		return x.name
	}
	return ""
}

// Class returns a tenant's effective class: its configured class, else the
// highest class of its open sessions.
func (h *Host) Class(t TenantID) Class {
	if x := h.tenant(t); x != nil {
		return x.class()
	}
	return ClassNormal
}

// Weight returns a tenant's share weight for an engine (>= 1).
func (h *Host) Weight(t TenantID, e Engine) int64 {
	if x := h.tenant(t); x != nil {
		return int64(x.weight(e))
	}
	return 1
}

// MemoryShare returns a tenant's memory share in bytes (0: none set).
func (h *Host) MemoryShare(t TenantID) uint64 {
	if x := h.tenant(t); x != nil {
		return x.share.Memory
	}
	return 0
}

// Sessions returns how many sessions a tenant has open.
func (h *Host) Sessions(t TenantID) int {
	if x := h.tenant(t); x != nil {
		return len(x.queues)
	}
	return 0
}

// Queued returns how many commands of an engine a tenant has waiting.
func (h *Host) Queued(t TenantID, e Engine) int {
	if x := h.tenant(t); x != nil && e < NumEngines {
		return x.eng[e].queued
	}
	return 0
}

// InFlight returns how many commands of an engine a tenant has issued that
// have not completed.
func (h *Host) InFlight(t TenantID, e Engine) int {
	if x := h.tenant(t); x != nil && e < NumEngines {
		return x.eng[e].inflight
	}
	return 0
}

// Usage returns what a tenant has been charged on an engine since it first
// appeared: ns of GPU time, or bytes copied.
func (h *Host) Usage(t TenantID, e Engine) int64 {
	if x := h.tenant(t); x != nil && e < NumEngines {
		return x.eng[e].usage
	}
	return 0
}

// InFlightCost returns the estimated charge of a tenant's work on an engine
// that was issued and is not charged yet (ns or bytes): what it will be
// charged soon. Usage plus InFlightCost moves only when work is issued.
func (h *Host) InFlightCost(t TenantID, e Engine) int64 {
	if x := h.tenant(t); x != nil && e < NumEngines {
		return x.eng[e].inflightCost
	}
	return 0
}

// HeadCost returns the estimated charge of the command OnDispatch would issue
// for a ready tenant (0 if the tenant has none ready).
func (h *Host) HeadCost(t TenantID, e Engine) int64 {
	if x := h.tenant(t); x != nil && e < NumEngines {
		if sq := x.head[e]; sq != nil {
			return h.s.cost(sq.front(), e, 0)
		}
	}
	return 0
}

// HeadSeq returns the submission number (device-wide, increasing) of the
// command OnDispatch would issue for a ready tenant, for first-come order.
func (h *Host) HeadSeq(t TenantID, e Engine) uint64 {
	if x := h.tenant(t); x != nil && e < NumEngines {
		if sq := x.head[e]; sq != nil {
			return sq.front().seq
		}
	}
	return 0
}

// EngineInFlight returns how many commands of an engine are in flight, all
// tenants together.
func (h *Host) EngineInFlight(e Engine) int {
	if e < NumEngines {
		return h.s.eng[e].inflight
	}
	return 0
}

// SliceTarget is the scheduler's preferred slice length for Choice.Quantum;
// not positive when slicing is off.
func (h *Host) SliceTarget() time.Duration { return h.s.opts.SliceTarget }

// HighClassReserved reports whether the high class has SMs no other class's
// stream runs on (Scheduler.SetHighClassReserved).
func (h *Host) HighClassReserved() bool { return h.s.highReserved.Load() }

// Map returns the policy map with this name, creating it (all zero) if it
// does not exist. Maps outlive policies: a policy switched away from and back
// finds its maps as it left them, and they are readable from outside
// (Scheduler.Maps, gpuos policy maps).
func (h *Host) Map(name string) *Map {
	s := h.s
	if m, ok := s.maps[name]; ok {
		return m
	}
	m := &Map{name: name}
	s.maps[name] = m
	return m
}

// Map is a typed map shared between a policy and the host: one int64 per
// tenant. Its methods follow the Host's rule: only from inside a hook (or
// with the scheduler's lock held).
type Map struct {
	name string
	vals []int64
}

// Name returns the map's name.
func (m *Map) Name() string { return m.name }

// Get returns the value for t (0 if never set).
func (m *Map) Get(t TenantID) int64 {
	if int(t) < len(m.vals) {
		return m.vals[t]
	}
	return 0
}

// Set sets the value for t.
func (m *Map) Set(t TenantID, v int64) {
	if t == NoTenant {
		return
	}
	for int(t) >= len(m.vals) {
		m.vals = append(m.vals, 0)
	}
	m.vals[t] = v
}

// Add adds d to t's value and returns the sum.
func (m *Map) Add(t TenantID, d int64) int64 {
	v := m.Get(t) + d
	m.Set(t, v)
	return v
}

// Reset zeroes every value.
func (m *Map) Reset() { clear(m.vals) }

// MapSnapshot is a map's values by tenant name, for the CLI and metrics.
type MapSnapshot struct {
	Name   string
	Values map[string]int64
	// Host maps are kept by the scheduler (read-only to policies); the others
	// belong to policies.
	Host bool
}

// Maps returns a snapshot of every map: the host's (weights, classes, usage,
// queue lengths) and the policies'.
func (s *Scheduler) Maps() []MapSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []MapSnapshot
	host := func(name string, f func(t *tenant) int64) {
		ms := MapSnapshot{Name: name, Values: map[string]int64{}, Host: true}
		for _, t := range s.tenants {
			ms.Values[t.name] = f(t)
		}
		out = append(out, ms)
	}
	for e := Engine(0); e < NumEngines; e++ {
		host("weight."+e.String(), func(t *tenant) int64 { return int64(t.weight(e)) })
		host("usage."+e.String(), func(t *tenant) int64 { return t.eng[e].usage })
		host("queued."+e.String(), func(t *tenant) int64 { return int64(t.eng[e].queued) })
		host("inflight."+e.String(), func(t *tenant) int64 { return int64(t.eng[e].inflight) })
	}
	host("class", func(t *tenant) int64 { return int64(t.class()) })
	host("memory", func(t *tenant) int64 { return int64(t.share.Memory) })
	names := make([]string, 0, len(s.maps))
	for n := range s.maps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		m := s.maps[n]
		ms := MapSnapshot{Name: n, Values: map[string]int64{}}
		for _, t := range s.tenants {
			ms.Values[t.name] = m.Get(t.id)
		}
		out = append(out, ms)
	}
	return out
}
