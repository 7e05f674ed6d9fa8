// Package sched releases device work to backend streams on behalf of tenants:
// per-tenant queues for the compute and copy engines, a dispatcher that issues
// under a replaceable policy, completion tracking and accounting timed with
// events, and virtual GPUs (shares).
//
// # Queues and order
//
// A session has a Queue; a Command goes to the FIFO of its backend stream in
// that queue. The dependency rule is explicit: commands of one stream are
// issued in submission order, and a command naming another as After (a fence
// wait naming the fence's record) is issued only after it. Nothing else
// orders commands — different streams run concurrently in CUDA too. A
// tenant's queue of an engine is, for the policy, the set of its stream heads
// of that engine: the dispatcher issues the oldest ready one. Markers (fence
// records and waits) cost no device time and are issued as soon as they
// reach their stream's head.
//
// Submit blocks while a queue holds its Depth of commands, so a flooding
// client is slowed by backpressure instead of growing the daemon's memory.
// Hold (for the memory manager) stops a queue's issuing and waits until
// nothing of it is in flight.
//
// # Dispatching
//
// There is no dispatcher goroutine on the hot path: whoever makes progress
// possible (a submitter, a completion, the background goroutine) takes the
// dispatch token and issues, calling the backend without the lock; a launch
// into an idle scheduler is issued by the submitting goroutine itself. For
// each engine the policy picks among the tenants that have a ready command
// and room: each tenant may have TenantInFlight commands in flight per
// engine, and the device Lookahead (estimated GPU time, or bytes, in flight)
// keeps decisions late, so newly arrived urgent work waits for little that is
// already queued in hardware. A policy may ask for a sliceable kernel to be
// issued in slices (Choice.Quantum); see package slice.
//
// # Completion and accounting
//
// Issued work is tracked with events: a costly command, or one whose
// submitter waits, gets its own; small commands of one stream share one
// (every TrackEvery, and at least every FlushDelay). One goroutine per stream
// waits for its events in order and signals completion. Compute events are
// timed: a point's charge is the GPU time from the later of the previous
// compute point's end (in issue order, any tenant) and its own start event
// (recorded only when the engine was idle) to its end — exact on the
// software GPU, whose engine runs commands in issue order, and the engine's
// busy time split among its users on a real one. Copies are charged in bytes.
// Charges accrue to the tenant and session and are passed to the policy
// (OnComplete), which keeps its credits in Maps.
//
// # Policies and safety
//
// Policy is the hook interface (on_session_open, on_submit, on_dispatch,
// on_complete, on_preempt, on_tick); the built-ins are fifo, fair, band and
// priority (Builtins). Policies own no commands, so switching (Use) or
// replacing one loses and reorders nothing. A hook that panics, errors, runs
// past HookDeadline (policies not built in), returns an invalid Choice, or a
// policy that leaves an engine idle with work ready for StallTimeout, is
// ejected: the Fallback built-in takes over at once and the decision is made
// again; OnEject is told.
//
// # Lock order
//
// Scheduler.mu, then the backend (a leaf: event Elapsed during accounting).
// Policy hooks run under Scheduler.mu and must not call back into the
// Scheduler. Issue, IssueUnits and Done run without the lock. The watchdog
// takes no lock.
package sched
