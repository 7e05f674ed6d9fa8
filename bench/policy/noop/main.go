//go:build wasip1

// Command noop is a Go policy whose hooks do nothing, for measuring what a
// hook call into a Go guest costs: on_submit returns at once, on_dispatch
// picks the first ready tenant.
package main

import "github.com/gpuos/gpuos/policy/sdk"

type noop struct{}

func (noop) OnSubmit(sdk.SubmitEvent) error { return nil }

func (noop) OnDispatch(_ sdk.Engine, ready []sdk.Ready) sdk.Decision {
	return sdk.Run(ready[0].Tenant())
}

func init() { sdk.Register(noop{}) }

func main() {}
