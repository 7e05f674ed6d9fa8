package policy

import (
	"time"
)

// fakeEnv is an Env with fixed tenants and in-memory maps.
type fakeEnv struct {
	names    []string
	weights  []int64
	queued   []int
	usage    []int64
	now      time.Duration
	classes  []int
	reserved bool // HighClassReserved
}

func newFakeEnv(names ...string) *fakeEnv {
	e := &fakeEnv{names: names}
	e.weights = make([]int64, len(names))
	e.queued = make([]int, len(names))
	e.usage = make([]int64, len(names))
	for i := range e.weights {
		e.weights[i] = 1
	}
	return e
}

func (e *fakeEnv) ok(t uint32) bool { return int(t) < len(e.names) }

func (e *fakeEnv) Now() time.Duration { return e.now }
func (e *fakeEnv) NumTenants() int    { return len(e.names) }
func (e *fakeEnv) TenantName(t uint32) string {
	if e.ok(t) {
		return e.names[t]
	}
	return ""
}
func (e *fakeEnv) Class(t uint32) int {
	if int(t) < len(e.classes) {
		return e.classes[t]
	}
	return 0
}
func (e *fakeEnv) Weight(t, _ uint32) int64 {
	if e.ok(t) {
		return e.weights[t]
	}
	return 1
}
func (e *fakeEnv) MemoryShare(uint32) uint64 { return 0 }
func (e *fakeEnv) Sessions(uint32) int       { return 1 }
func (e *fakeEnv) Queued(t, _ uint32) int {
	if e.ok(t) {
		return e.queued[t]
	}
	return 0
}
func (e *fakeEnv) InFlight(uint32, uint32) int { return 0 }
func (e *fakeEnv) Usage(t, _ uint32) int64 {
	if e.ok(t) {
		return e.usage[t]
	}
	return 0
}
func (e *fakeEnv) HeadCost(uint32, uint32) int64     { return 1000 }
func (e *fakeEnv) InFlightCost(uint32, uint32) int64 { return 0 }
func (e *fakeEnv) HeadSeq(uint32, uint32) uint64     { return 0 }
func (e *fakeEnv) EngineInFlight(uint32) int         { return 0 }
func (e *fakeEnv) SliceTarget() time.Duration        { return time.Millisecond }
func (e *fakeEnv) HighClassReserved() bool           { return e.reserved }
