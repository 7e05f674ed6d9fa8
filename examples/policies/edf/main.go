//go:build wasip1

// Command edf is an earliest-deadline-first scheduling policy for latency
// SLOs, as a WebAssembly policy for gpuos. Every command gets a deadline
// when it is submitted: its submission time plus its tenant's SLO; the ready
// tenant whose oldest waiting command has the earliest deadline goes next.
//
// A tenant's SLO is the value of its map entry slo_ns if positive, else
// follows its class: 2 ms for high, 20 ms for normal, 200 ms for best
// effort. Each dispatch past its deadline counts in the map missed, and the
// lateness in late_ns, so `gpuos policy maps edf.missed` shows who misses
// their SLO.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o edf.wasm .
//	gpuos policy load edf.wasm && gpuos policy use edf
package main

import (
	"time"

	"github.com/gpuos/gpuos/policy/sdk"
)

// SLOs by class.
var classSLO = map[sdk.Class]time.Duration{1: 2 * time.Millisecond, 0: 20 * time.Millisecond, -1: 200 * time.Millisecond}

type edf struct {
	slo, missed, late sdk.Map
	// submitted holds, per tenant and engine, the submission times of its
	// commands not yet dispatched, oldest first.
	submitted [][2][]time.Duration
}

func (p *edf) Init() error {
	p.slo = sdk.MustMap("slo_ns")
	p.missed = sdk.MustMap("missed")
	p.late = sdk.MustMap("late_ns")
	return nil
}

func (p *edf) times(t sdk.Tenant, e sdk.Engine) *[]time.Duration {
	for int(t) >= len(p.submitted) {
		p.submitted = append(p.submitted, [2][]time.Duration{})
	}
	return &p.submitted[t][e]
}

func (p *edf) OnSubmit(ev sdk.SubmitEvent) error {
	ts := p.times(ev.Tenant, ev.Engine)
	*ts = append(*ts, sdk.Now())
	return nil
}

func (p *edf) sloOf(t sdk.Tenant, c sdk.Class) time.Duration {
	if v := p.slo.Get(t); v > 0 {
		return time.Duration(v)
	}
	if d, ok := classSLO[c]; ok {
		return d
	}
	return classSLO[0]
}

// head returns the submission time of t's oldest waiting command: the
// scheduler says how many are waiting (queued), so the older entries were
// dispatched.
func (p *edf) head(t sdk.Tenant, e sdk.Engine, queued int) time.Duration {
	ts := p.times(t, e)
	if q := queued; q < len(*ts) {
		rest := (*ts)[len(*ts)-q:]
		*ts = append((*ts)[:0], rest...)
	}
	if len(*ts) == 0 {
		return sdk.Now()
	}
	return (*ts)[0]
}

func (p *edf) OnDispatch(e sdk.Engine, ready []sdk.Ready) sdk.Decision {
	best := -1
	var bestDeadline time.Duration
	for k, r := range ready {
		d := p.head(r.Tenant(), e, r.Queued()) + p.sloOf(r.Tenant(), r.Class())
		if best < 0 || d < bestDeadline || (d == bestDeadline && r.HeadSeq() < ready[best].HeadSeq()) {
			best, bestDeadline = k, d
		}
	}
	t := ready[best].Tenant()
	if now := sdk.Now(); now > bestDeadline {
		p.missed.Add(t, 1)
		p.late.Add(t, int64(now-bestDeadline))
	}
	return sdk.Run(t)
}

func init() { sdk.Register(&edf{}) }

func main() {}
