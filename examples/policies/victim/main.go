//go:build wasip1

// Command victim is a memory policy for gpuos, as WebAssembly: when device
// memory runs short it picks which chunks to swap out to host memory.
//
// It evicts first from the tenant that holds the most resident memory
// relative to its memory share (its bytes among the candidates divided by
// its share; bytes alone for tenants without one), so a tenant over its
// share pays for the pressure it causes. Within a tenant it prefers chunks
// that are not shared with other sessions (evicting a shared chunk stalls
// every session it is mapped in), then the least recently used. It never
// offers the requester's own window unless nothing else frees enough, and
// stops as soon as the chosen chunks cover the need. Evicted bytes are
// counted per tenant in the map evicted_bytes.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o victim.wasm .
//	gpuos policy load victim.wasm && gpuos policy use victim
package main

import (
	"slices"

	"github.com/gpuos/gpuos/policy/sdk"
)

type victim struct {
	evicted sdk.Map
	order   []int
	held    map[sdk.Tenant]uint64
}

func (v *victim) OnPressure(p sdk.Pressure, cands []sdk.Candidate) []int {
	if v.held == nil {
		v.evicted = sdk.MustMap("evicted_bytes")
		v.held = map[sdk.Tenant]uint64{}
	}
	clear(v.held)
	for _, c := range cands {
		v.held[c.Tenant] += c.Bytes
	}
	// pressure of a tenant: its bytes relative to its share, in 1/1024ths.
	pressure := func(t sdk.Tenant) uint64 {
		if share := sdk.MemoryShare(t); share > 0 {
			return v.held[t] * 1024 / share
		}
		return v.held[t]
	}
	own := func(c sdk.Candidate) bool { return p.Window != 0 && c.Window == p.Window }
	v.order = v.order[:0]
	for i := range cands {
		v.order = append(v.order, i)
	}
	slices.SortStableFunc(v.order, func(i, j int) int {
		a, b := cands[i], cands[j]
		switch {
		case own(a) != own(b):
			if own(a) {
				return 1
			}
			return -1
		case a.Tenant != b.Tenant && pressure(a.Tenant) != pressure(b.Tenant):
			if pressure(a.Tenant) > pressure(b.Tenant) {
				return -1
			}
			return 1
		case a.Shared != b.Shared:
			if a.Shared {
				return 1
			}
			return -1
		}
		return 0 // the input is least recently used first: keep that order
	})
	var freed uint64
	for k, i := range v.order {
		if freed >= p.Need {
			return v.order[:k]
		}
		freed += cands[i].Bytes
		v.evicted.Add(cands[i].Tenant, int64(cands[i].Bytes))
	}
	return v.order
}

func init() { sdk.Register(&victim{}) }

func main() {}
