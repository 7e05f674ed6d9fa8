// Package policy runs operators' scheduling and memory policies: WebAssembly
// modules, sandboxed by wazero (pure Go), checked before they run, swapped
// live, and replaced by the built-in policy the moment they misbehave.
//
// It owns the hook ABI (version ABIVersion, described in docs/policies.md
// and abi.go: the guest's exports, the host functions of module "gpuos",
// the records written into the guest's exchange area) and everything that
// makes an untrusted module safe to call from the scheduler's hot path:
//
//   - Compile validates a module: an instrumentation pass (instrument.go)
//     decodes every instruction, refuses features outside the enabled set
//     (SIMD, threads, tail calls) and indices that only its own additions
//     would make valid, and adds fuel checks at every function entry and
//     loop header plus a metered memory.grow; wazero then validates the
//     result. The import allowlist admits the ABI's host functions and a
//     harmless WASI subset (wasi.go) with their exact signatures, and
//     nothing else; the exports must have the ABI's signatures; a trial
//     instance checks the ABI version and runs the guest's initialization.
//   - Every instance has a memory limit (wazero's page limit, and the
//     metered memory.grow stops the guest at it) and a per-call deadline
//     enforced without a goroutine or timer per call: a watchdog
//     (watchdog.go) or the scheduler calls Interrupt, which zeroes the fuel
//     so that the guest reaches the meter at its next check site and stops.
//   - Every decision is checked (OnDispatch names a ready tenant, OnPressure
//     names each candidate at most once). A guest that traps, exits,
//     overruns, reaches its memory limit, misuses a host function or
//     decides what the ABI forbids is stopped for good; its hooks return the
//     reason, which the caller (the scheduler, MemorySwitch) turns into an
//     ejection: the built-in policy takes over and no command is lost,
//     because policies own no command.
//
// SchedPolicy adapts an Instance to sched.Policy; MemorySwitch runs memory
// hooks for mem.Manager (mem.VictimChooser). Maps holds the typed maps:
// arrays of int64 per tenant that live in the guest's memory and that the
// host reads between hooks.
//
// Lock order: Instance.mu, then Maps.mu; MemorySwitch.mu, then
// Instance.mu; the watchdog's lock is a leaf (Interrupt, which it calls
// without it, takes only Instance.gmu, a leaf). Hooks of one Instance are
// serialized by Instance.mu; Interrupt never takes it.
package policy
