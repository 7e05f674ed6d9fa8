// Package sdk is the guest side of gpuos policies: write a scheduling or
// memory policy in Go, build it to WebAssembly with the standard toolchain,
// and load it into a running gpuos.
//
// A policy is a value whose methods are the hooks it implements (see the
// Initializer, SessionOpener, Submitter, Dispatcher, Completer, Preempter,
// Ticker, AllocChecker, VictimChooser and FaultHandler interfaces). Register
// it from an init function of package main:
//
//	//go:build wasip1
//
//	package main
//
//	import "github.com/gpuos/gpuos/policy/sdk"
//
//	type lowestID struct{}
//
//	func (lowestID) OnDispatch(e sdk.Engine, ready []sdk.Ready) sdk.Decision {
//		return sdk.Run(ready[0].Tenant())
//	}
//
//	func init() { sdk.Register(lowestID{}) }
//
//	func main() {}
//
// and build it as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o lowest.wasm .
//	gpuos policy load lowest.wasm && gpuos policy use lowest
//
// The package exports the ABI's functions (gpuos_abi_version, gpuos_hooks,
// gpuos_exchange and every gpuos_on_* hook) and calls the registered
// policy's methods; gpuos_hooks tells the host which hooks the policy
// implements, so the others cost nothing. During a hook, the functions of
// this package (Now, NumTenants, Weight, Queued, OpenMap, ...) read the
// scheduler's state through the ABI's host functions.
//
// A hook runs under a deadline (20 ms by default) and the policy's memory is
// limited (64 MiB by default): a policy that overruns, panics, exits, runs
// out of memory or returns a decision the ABI forbids (a tenant that is not
// ready, a candidate named twice) is ejected and the built-in policy takes
// over; nothing is lost. Inside the guest time.Now is a virtual clock (use
// Now for the scheduler's), math/rand is deterministic, and there is no
// file system or network.
//
// Built for any other platform, the package has no exports and its host
// functions call the Host set with SetHost, so a policy's logic can be unit
// tested with go test on the build machine.
//
// docs/policies.md describes the ABI for other languages (C with clang
// --target=wasm32).
package sdk
