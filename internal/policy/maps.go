package policy

import (
	"sort"
	"strings"
	"sync"
)

// Maps holds the typed maps of the WebAssembly policies of one driver: one
// int64 per tenant id, by name. A guest opens a map by a short name; the
// store keeps it as "<policy>.<name>", so a policy reaches only its own maps.
// Maps outlive instances: a policy switched away from and back, or ejected,
// finds (and the command line shows) its maps as it left them, until Drop.
// All methods are safe for concurrent use.
type Maps struct {
	mu sync.Mutex
	m  map[string]*tenantMap
}

// NewMaps returns an empty store.
func NewMaps() *Maps { return &Maps{m: map[string]*tenantMap{}} }

// tenantMap is one map; its values are guarded by the store's mutex.
type tenantMap struct {
	s    *Maps
	vals []int64
}

// maxMapTenants bounds a map's length: a guest setting the value of tenant
// 4 billion must not make the host allocate 32 GiB.
const maxMapTenants = 1 << 16

func (s *Maps) open(name string) *tenantMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.m[name]; ok {
		return m
	}
	m := &tenantMap{s: s}
	s.m[name] = m
	return m
}

func (m *tenantMap) Get(t uint32) int64 {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	if int(t) < len(m.vals) {
		return m.vals[t]
	}
	return 0
}

// Set sets t's value; a tenant id beyond maxMapTenants is ignored (no tenant
// has it).
func (m *tenantMap) Set(t uint32, v int64) {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	m.setLocked(t, v)
}

func (m *tenantMap) setLocked(t uint32, v int64) {
	if t >= maxMapTenants {
		return
	}
	if int(t) >= len(m.vals) {
		m.vals = append(m.vals, make([]int64, int(t)+1-len(m.vals))...)
	}
	m.vals[t] = v
}

func (m *tenantMap) Add(t uint32, d int64) int64 {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	var v int64
	if int(t) < len(m.vals) {
		v = m.vals[t]
	}
	v += d
	m.setLocked(t, v)
	return v
}

func (m *tenantMap) Reset() {
	m.s.mu.Lock()
	clear(m.vals)
	m.s.mu.Unlock()
}

// MapValues is a snapshot of one map: its full name and its values by
// tenant id (ids never set are absent).
type MapValues struct {
	Name   string
	Values map[uint32]int64
}

// Snapshot returns the maps whose full name starts with prefix ("" for all),
// sorted by name.
func (s *Maps) Snapshot(prefix string) []MapValues {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []MapValues
	for name, m := range s.m {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		mv := MapValues{Name: name, Values: map[uint32]int64{}}
		for t, v := range m.vals {
			if v != 0 {
				mv.Values[uint32(t)] = v
			}
		}
		out = append(out, mv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Drop deletes the maps of a policy (on unload).
func (s *Maps) Drop(policy string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.m {
		if strings.HasPrefix(name, policy+".") {
			delete(s.m, name)
		}
	}
}
