//go:build wasip1

// Command fair is gpuos's built-in weighted fair-share policy rewritten as a
// WebAssembly policy: start-time fair queuing over charged usage. Each
// tenant's virtual time advances by its charges divided by its weight; the
// ready tenant whose virtual time, counting its in-flight work, is smallest
// goes next (ties: the older command). A tenant that was idle re-enters at
// the smallest virtual time of the busy ones, so idling earns no credit.
//
// It makes the same decisions as the built-in "fair" (a test replays a
// recorded trace through both). Build and load it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o fair.wasm .
//	gpuos policy load fair.wasm --name wfair && gpuos policy use wfair
//
// Its virtual times are the maps <name>.vtime.compute and <name>.vtime.copy.
package main

import (
	"time"

	"github.com/gpuos/gpuos/policy/sdk"
)

// scale keeps virtual times integral: charge × scale / weight.
const scale = 1 << 8

type fair struct {
	vt [2]sdk.Map // by engine
}

func (f *fair) Init() error {
	f.vt[sdk.Compute] = sdk.MustMap("vtime.compute")
	f.vt[sdk.Copy] = sdk.MustMap("vtime.copy")
	f.vt[sdk.Compute].Reset()
	f.vt[sdk.Copy].Reset()
	return nil
}

// SubmitIdleOnly: only a tenant going from idle to busy matters to OnSubmit.
func (*fair) SubmitIdleOnly() bool { return true }

// WorkConserving: with one tenant ready there is nothing to choose.
func (*fair) WorkConserving() bool { return true }

func idle(t sdk.Tenant, e sdk.Engine) bool { return sdk.Queued(t, e) == 0 && sdk.InFlight(t, e) == 0 }

func (f *fair) OnSubmit(ev sdk.SubmitEvent) error {
	t, e := ev.Tenant, ev.Engine
	if ev.Queued != 1 || ev.InFlight != 0 {
		return nil // was busy already
	}
	floor, found := int64(0), false
	for u := range sdk.NumTenants() {
		u := sdk.Tenant(u)
		if u == t || idle(u, e) {
			continue
		}
		if v := f.vt[e].Get(u); !found || v < floor {
			floor, found = v, true
		}
	}
	if found && f.vt[e].Get(t) < floor {
		f.vt[e].Set(t, floor)
	}
	return nil
}

// key is a ready tenant's virtual time counting its in-flight work.
func (f *fair) key(r sdk.Ready, e sdk.Engine) int64 {
	return f.vt[e].Get(r.Tenant()) + r.InFlightCost()*scale/r.Weight()
}

func (f *fair) OnDispatch(e sdk.Engine, ready []sdk.Ready) sdk.Decision {
	if len(ready) == 1 {
		return sdk.Run(ready[0].Tenant()) // nothing to choose
	}
	best, bestKey := ready[0], f.key(ready[0], e)
	for _, r := range ready[1:] {
		k := f.key(r, e)
		if k < bestKey || (k == bestKey && r.HeadSeq() < best.HeadSeq()) {
			best, bestKey = r, k
		}
	}
	return sdk.Run(best.Tenant())
}

func (f *fair) OnComplete(c sdk.CompleteEvent) error {
	f.vt[c.Engine].Add(c.Tenant, c.Charge*scale/c.Weight)
	return nil
}

// OnTick keeps virtual times small: what matters is their differences.
func (f *fair) OnTick(time.Duration) error {
	n := sdk.NumTenants()
	if n == 0 {
		return nil
	}
	for e := sdk.Compute; e <= sdk.Copy; e++ {
		low := f.vt[e].Get(0)
		for t := 1; t < n; t++ {
			low = min(low, f.vt[e].Get(sdk.Tenant(t)))
		}
		if low > 1<<40 {
			for t := range n {
				f.vt[e].Add(sdk.Tenant(t), -low)
			}
		}
	}
	return nil
}

func init() { sdk.Register(&fair{}) }

func main() {}
