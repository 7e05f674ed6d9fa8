//go:build !wasip1

package sdk

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// reset undoes Register, for tests.
func reset() {
	registered, hooks = nil, 0
	onInit, onSessionOpen, onSubmit, onDispatch, onComplete = nil, nil, nil, nil, nil
	onPreempt, onTick, onAlloc, onPressure, onFault = nil, nil, nil, nil, nil
	exch = nil
}

func TestDecisionEncode(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Decision
		want uint64
	}{
		{"run", Run(7), 7},
		{"sliced", RunSliced(3, 2*time.Millisecond), 2_000_000<<32 | 3},
		{"wait", Wait(0), math.MaxUint32},
		{"hold", Wait(500 * time.Microsecond), 500_000<<32 | math.MaxUint32},
		{"saturated", RunSliced(1, time.Hour), math.MaxUint32<<32 | 1},
		{"negative", RunSliced(1, -time.Second), 1},
	} {
		if have := tc.d.encode(); have != tc.want {
			t.Errorf("%s: encode = %#x, want %#x", tc.name, have, tc.want)
		}
	}
}

type dispatchOnly struct{ seen []Tenant }

func (p *dispatchOnly) OnDispatch(_ Engine, ready []Ready) Decision {
	p.seen = p.seen[:0]
	best := ready[0]
	for _, r := range ready {
		p.seen = append(p.seen, r.Tenant())
		if r.Weight() > best.Weight() {
			best = r
		}
	}
	return Run(best.Tenant())
}

func (*dispatchOnly) WorkConserving() bool { return true }

func TestRegisterAndDispatch(t *testing.T) {
	defer reset()
	p := &dispatchOnly{}
	if err := Register(p); err != nil {
		t.Fatal(err)
	}
	if err := Register(p); err != ErrRegistered {
		t.Errorf("second Register = %v, want ErrRegistered", err)
	}
	if want := uint64(hookDispatch | flagWorkConserving); hooks != want {
		t.Errorf("hooks = %#x, want %#x", hooks, want)
	}
	exchangeArea(4 * readySize)
	for k, w := range []int64{1, 5, 2} {
		r := NewReady(Tenant(10+k), 1, 0, 0, w, 0, 0, uint64(k), 0)
		copy(exch[k*readySize:], r.b)
	}
	if got := dispatch(Compute, 3); got != Run(11).encode() {
		t.Errorf("dispatch = %#x, want tenant 11", got)
	}
	if len(p.seen) != 3 || p.seen[0] != 10 || p.seen[2] != 12 {
		t.Errorf("ready seen %v, want [10 11 12]", p.seen)
	}
	// A count the exchange area cannot hold is not decoded.
	if got := dispatch(Compute, 1000); got != Wait(0).encode() {
		t.Errorf("dispatch of 1000 = %#x, want Wait", got)
	}
}

func TestReadyFields(t *testing.T) {
	r := NewReady(4, 5, 6, -1, 7, 8, 9, 10, 11)
	if r.Tenant() != 4 || r.Queued() != 5 || r.InFlight() != 6 || r.Class() != -1 || r.Weight() != 7 ||
		r.InFlightCost() != 8 || r.HeadCost() != 9 || r.HeadSeq() != 10 || r.Usage() != 11 {
		t.Errorf("fields do not round-trip: %+v", r)
	}
}

type lastTwo struct{}

func (lastTwo) OnPressure(p Pressure, cands []Candidate) []int {
	n := len(cands)
	return []int{n - 1, n - 2, n - 3} // one more than the host offers room for when n == 2
}

func TestPressure(t *testing.T) {
	defer reset()
	Register(lastTwo{})
	exchangeArea(2 * (candidateSize + 4))
	le := binary.LittleEndian
	for k := range 2 {
		r := exch[k*candidateSize:]
		le.PutUint32(r[0:], uint32(k))
		le.PutUint32(r[8:], 1) // shared
		le.PutUint64(r[16:], 2<<20)
	}
	n := pressure(Pressure{Need: 1}, 2)
	out := exch[2*candidateSize:]
	if n != 2 || le.Uint32(out[0:]) != 1 || le.Uint32(out[4:]) != 0 {
		t.Errorf("pressure = %d, answer %v", n, out[:8])
	}
	if len(candBuf) != 2 || !candBuf[0].Shared || candBuf[1].Bytes != 2<<20 {
		t.Errorf("candidates decoded as %+v", candBuf)
	}
}

// mapHost is a Host whose maps hold the values the tests give them.
type mapHost struct {
	zeroHost
	stored map[string][]int64
	opens  []int
}

func (h *mapHost) MapOpen(name string, vals []int64) int32 {
	h.opens = append(h.opens, len(vals))
	if len(h.stored[name]) > len(vals) {
		return -int32(len(h.stored[name]))
	}
	copy(vals, h.stored[name])
	return 0
}

func TestMapGrowsAndKeepsValues(t *testing.T) {
	h := &mapHost{stored: map[string][]int64{"credits": make([]int64, 100)}}
	h.stored["credits"][99] = 42
	SetHost(h)
	defer SetHost(nil)
	m, err := OpenMap("credits")
	if err != nil {
		t.Fatal(err)
	}
	if m.Get(99) != 42 {
		t.Errorf("Get(99) = %d, want the stored 42", m.Get(99))
	}
	if len(h.opens) != 2 || h.opens[1] != 100 {
		t.Errorf("opens with %v values, want 64 then 100", h.opens)
	}
	m.Set(1000, 7)
	if m.Get(1000) != 7 || m.Get(99) != 42 || m.Add(1000, 3) != 10 {
		t.Errorf("after growth: Get(1000) = %d, Get(99) = %d", m.Get(1000), m.Get(99))
	}
	if h.opens[len(h.opens)-1] < 1001 {
		t.Errorf("grown array of %d values registered", h.opens[len(h.opens)-1])
	}
	m.Set(maxTenants, 1) // beyond what any host keeps: ignored
	if m.Get(maxTenants) != 0 {
		t.Errorf("value beyond maxTenants kept")
	}
	m.Reset()
	if m.Get(1000) != 0 || m.Get(99) != 0 {
		t.Errorf("Reset left values")
	}
}

func TestOpenMapRefused(t *testing.T) {
	SetHost(nil) // zeroHost accepts every name; a refusing host:
	SetHost(refuser{})
	defer SetHost(nil)
	if _, err := OpenMap("x"); err != ErrMapName {
		t.Errorf("OpenMap = %v, want ErrMapName", err)
	}
}

type refuser struct{ zeroHost }

func (refuser) MapOpen(string, []int64) int32 { return -1 }
