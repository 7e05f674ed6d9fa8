package sdk_test

import (
	"fmt"

	"github.com/gpuos/gpuos/policy/sdk"
)

// lowestUsage dispatches the ready tenant that has been charged least.
type lowestUsage struct{}

func (lowestUsage) OnDispatch(_ sdk.Engine, ready []sdk.Ready) sdk.Decision {
	best := ready[0]
	for _, r := range ready[1:] {
		if r.Usage() < best.Usage() {
			best = r
		}
	}
	return sdk.Run(best.Tenant())
}

// A policy's logic can be tested with go test on the build machine: build
// the records a hook would get and call the method.
func Example() {
	p := lowestUsage{}
	ready := []sdk.Ready{
		sdk.NewReady(0, 3, 1, 0, 1, 0, 1000, 7, 5_000_000),
		sdk.NewReady(2, 1, 0, 0, 1, 0, 1000, 9, 1_000_000),
	}
	d := p.OnDispatch(sdk.Compute, ready)
	fmt.Println("dispatch tenant", d.Tenant)
	// In the policy's main package: func init() { sdk.Register(lowestUsage{}) }
	// Output: dispatch tenant 2
}
