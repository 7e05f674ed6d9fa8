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
// into an idle scheduler is issued by the submitting goroutine itself, and a
// synchronizing caller (WaitIssued) whose work another goroutine is issuing
// polls for it for Options.Spin before it sleeps. A driver call can block
// for milliseconds, so a high-class command whose submitter finds the token
// taken does not wait for it: if the policy picks its tenant with no turn to
// take and no slicing (priority and fifo do), the submitter issues it itself,
// the express lane (express.go), while the holder issues nothing else; one
// that finds the token free issues the high class's commands first and
// leaves the rest to the background goroutine, and its commands are never
// left Batched for another goroutine to issue. A queue may defer the
// background goroutine's wake-up that such a submission owes until its
// submitter has answered its requests (Queue.SetDeferredKicks, Kick:
// kick.go), so that a latency-critical service's launch does not wake
// another goroutine between itself and its synchronize. A synchronizer whose queue
// is settled takes the streams to synchronize without the lock. For each
// engine the policy picks among the tenants that have a ready command and
// room: each tenant may have TenantInFlight commands in flight per engine,
// and the device Lookahead (estimated GPU time, or bytes, in flight) keeps
// decisions late, so newly arrived urgent work waits for little that is
// already queued in hardware. The look-ahead is counted per class: a tenant
// has room while the work in flight of its class and the classes above it is
// under it, so best-effort work never takes the room of a higher class's
// command. A policy may ask for a sliceable kernel to be issued in slices
// (Choice.Quantum, or Choice.Reserve: one wave of the device less a reserve,
// Command.Wave) — see package slice — and for its tenants to take turns on
// the device (Choice.Group, below).
//
// # Turns
//
// A GPU runs kernels of different streams side by side when SMs are free,
// and not in the order they were issued. Tenants whose commands a policy
// issues in the same Group take turns instead: a command of a new holder
// starts on the device only once the previous holder's work completed,
// because its stream waits for events recorded on the previous holder's
// streams (a dependency the GPU resolves itself, with no round trip through
// the daemon; one such switch per change of tenant). Group 0 takes no turns.
// fair and band put every tenant in one group; priority puts each class
// below high in its own group and the high class in none, so its kernels run
// beside whatever runs and wait for nothing but SMs (while held back, a
// lower tenant keeps its class's turn for about a millisecond of slices).
//
// # What a share is
//
// A tenant's share of the compute engine, under fair and band, is its part
// of the time the device spent on the tenants' kernels: the time from when
// its turn's first kernel could start to when its turn's last kernel ended,
// summed over its turns — device time given to it exclusively, whether its
// kernels used every SM or one. It is not a share of SMs: a tenant whose
// kernels leave SMs idle is charged for them, as a process is charged for
// the CPU time it holds, and nothing of another tenant runs on them
// meanwhile. That is the price of accurate shares on a GPU that runs kernels
// concurrently (when kernels of two tenants overlap, no event can say whose
// the time was): the device loses a dependency resolution at each switch of
// tenant, and the concurrency two tenants' small kernels would have had. The
// copy engines are shared by bytes moved, exact however copies overlap.
//
// # Completion and accounting
//
// Issued work is tracked with events: a costly command (by its estimate,
// unless flagged Small), one whose submitter waits, or any command of the
// high class gets its own; small commands of one stream share one (every
// TrackEvery, and at least every FlushDelay). One
// goroutine per stream waits for its events in order and signals completion
// (polling, or with Options.BlockingWait sleeping until the device
// interrupts); the low class's waiters query their events, and sleep
// through most of a kernel's expected time before the second look, since
// each wake-up of a sleeping goroutine is a thread woken on another CPU
// (Options.LowClassPoll, NoLowClassPace); with Options.LowClassSpin (which
// the driver sets on a GPU), while a service has a session, one goroutine
// completes them instead, reading a fence behind each without pause
// (lowspin.go); with Options.EpisodeHold too, once a service's launch calls
// run slow (the host's cores slowed), the low class's work waits until a
// while after the last slow one (episode.go). A queue whose submitter learns
// of its work's completion first (a service polling fences) may own its
// completions (Queue.SetOwnCompletions): its events stay with it, and the
// submitter completes them (Reap) once done, so no waiter is woken per
// request; a queue hands them to the waiters whenever something would wait
// for them, when it holds more than a few, and when its submitter goes idle
// (own.go).
// Compute events are timed, and each turn group has its own accounting chain
// (group 0 one for all its work): a point's charge is the GPU time from the
// later of the latest end accounted in its chain and its own start event
// (recorded when the chain was idle and when a turn began) to its end. Within
// a group, turns make this exact: charges add up to the time each tenant
// held the device. In group 0 it is exact while its work does not overlap
// (one tenant), and otherwise splits the busy time among the tenants in issue
// order. A high-class command gets a start event one time in 16 (its record
// is a driver call on the service's path before its launch); the others are
// charged at most the tenant's per-command average that those measure
// (highStartEvery), and those whose submitter gives the fence behind them
// (Command.EndFence) and whose queue owns its completions end at that fence,
// with no completion event recorded (fenceend.go). Copies are charged in bytes. Charges accrue to the tenant and
// session and are passed to the policy (OnComplete), which keeps its credits
// in Maps.
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
// Scheduler. Issue, IssueUnits, Done and a turn's gate (events recorded on
// another tenant's streams) run without the lock; Forget waits, on a
// condition of Scheduler.mu, until no gate is being recorded, since one may
// be on the stream it forgets. The watchdog takes no lock.
package sched
