package sched

import (
	"fmt"
	"strconv"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
)

// Errors returned by this package.
var (
	ErrClosed = v1.Errorf(v1.CodeRevoked, "queue closed")
	// ErrNoPolicy: Use named a policy the scheduler does not have.
	ErrNoPolicy = v1.Errorf(v1.CodeNotFound, "no such scheduling policy")
	// ErrPolicy: a policy misbehaved (panicked, returned an error or an
	// invalid decision, overran its deadline) and was replaced.
	ErrPolicy = v1.Errorf(v1.CodeInternal, "scheduling policy misbehaved")
	// ErrInvalidShare: a share with a weight out of range.
	ErrInvalidShare = v1.Errorf(v1.CodeInvalidArgument, "invalid share")
	// ErrRefused: the policy refused a session (admission).
	ErrRefused = v1.Errorf(v1.CodePermissionDenied, "session refused by the scheduling policy")
)

// Kind classifies a command: the GPU's compute and copy engines are separate
// resources, scheduled and accounted separately.
type Kind uint8

// Command kinds.
const (
	Compute Kind = iota // kernels, memsets, device-to-device copies: charged GPU time
	Copy                // host-device copies: charged bytes
	Marker              // fence records and waits: no device time, issued as soon as they reach their stream's head
)

func (k Kind) String() string {
	switch k {
	case Compute:
		return "compute"
	case Copy:
		return "copy"
	case Marker:
		return "marker"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Engine is a schedulable device resource. Each tenant has one queue per
// engine (its commands of that kind, across its sessions and streams), and the
// policy picks the next queue per engine.
type Engine uint8

// Engines.
const (
	EngineCompute Engine = iota // charged in nanoseconds of GPU time
	EngineCopy                  // charged in bytes moved
	NumEngines
)

func (e Engine) String() string {
	switch e {
	case EngineCompute:
		return "compute"
	case EngineCopy:
		return "copy"
	}
	return "engine(" + strconv.Itoa(int(e)) + ")"
}

func (k Kind) engine() Engine {
	if k == Copy {
		return EngineCopy
	}
	return EngineCompute
}

// Flags modify how a command is tracked.
type Flags uint8

const (
	// Sync: the submitter waits for Done, so the command's completion is
	// tracked at once rather than batched with later commands.
	Sync Flags = 1 << iota
	// Batched: the submitter has more to submit at once (a burst of
	// asynchronous requests). Submit then leaves the issuing to the
	// dispatcher goroutine, so that submitting the next command and issuing
	// this one run on two threads; a submitter whose burst ends calls
	// Queue.Flush, or a synchronizing call (WaitIssued, Wait) issues what is
	// left itself. A high-class tenant's submitter issues its command
	// itself all the same (see Options.NoHighFirst).
	Batched
	// Small: the command is launches of at most a wave of the device each
	// (the driver's joined small launches), whose measured time on a stream
	// the host cannot keep busy is mostly the host's time to issue them.
	// Its estimate alone does not earn it a completion event of its own:
	// on a GPU the events it would add slow the host further, which raises
	// the estimate again, and a burst settles at an event every command.
	// It shares its stream's event as cheap commands do (TrackEvery,
	// FlushDelay); a waiting submitter, the high class, and the in-flight
	// and lookahead bounds still track it at once.
	Small
)

// Command is one unit of work for a backend stream.
//
// Dependency rule: commands on the same Stream are issued in submission order;
// a command with After set is issued only once After has been issued (or
// dropped). Nothing else orders commands of one queue: commands on different
// streams may be issued in any order, as CUDA runs different streams
// concurrently. A fence recorded on one stream and waited for on another
// (StreamWaitFence) therefore names the record as After, so that the wait
// never reaches the device before the record it waits for.
type Command struct {
	Kind   Kind
	Stream backend.Stream
	Bytes  uint64 // bytes moved: a copy's charge
	Flags  Flags
	// Issue enqueues the work on Stream. It runs on a dispatching goroutine
	// (possibly the submitter's) and must not block.
	Issue func() error
	// Done, if set, runs once the work has completed on the device, or failed to
	// issue, or was dropped, with the error. It runs without scheduler locks
	// and must not block.
	Done func(error)
	// After, if set, is a command submitted earlier to the same queue that
	// must be issued before this one.
	After *Command

	// Units and IssueUnits make a kernel sliceable: its grid is Units slices
	// along one dimension, and IssueUnits(lo, hi) enqueues the slices [lo, hi)
	// (the kernel sees its full grid; see package slice). A sliceable command
	// may be issued in parts so that other work runs between them; Done runs
	// once every part completed. Units < 2 or a nil IssueUnits: not sliceable.
	Units      uint32
	IssueUnits func(lo, hi uint32) error
	// Wave is how many units the device holds at once (its SMs times the
	// blocks of this launch one SM holds, in units), 0 if unknown: slices
	// issued with Choice.Reserve stay below it.
	Wave uint32
	// Estimate, if set, is the cost history of the kernel this command
	// launches, shared by its launches; the scheduler keeps it.
	Estimate *Estimate
	// Synced is when a completion waiter saw the event that completed the
	// command (its last part's), zero if none did (a dropped or failed
	// command, or the scheduler's close): set before Done runs, for latency
	// diagnostics (the time from it to Done is the scheduler's own).
	Synced time.Time
	// Expressed says the express lane issued the command (express.go): its
	// submitter found the dispatch token held and issued it itself. Set
	// before Issue is called, for latency diagnostics.
	Expressed bool
	// EndFence, if Issue sets it, is a fence Issue enqueued on Stream right
	// behind the command's work: a point that takes no timing from its end
	// may end at it rather than at an event the scheduler records
	// (fenceend.go). The scheduler clears it before Issue and once read.
	EndFence backend.Fence
	// TimeLock has Submit note in Locked when it took the scheduler's lock
	// for the command: the time from the call to it is what the submitter
	// waited for other goroutines (latency diagnostics).
	TimeLock bool
	Locked   time.Time

	// Owned by the scheduler.
	seq     uint64
	queued  int64 // when submitted, scheduler clock
	state   cmdState
	next    uint32 // slicing: first unit not yet issued
	pending int    // parts issued and not yet complete
	err     error  // first error of its parts
	q       *Queue
}

type cmdState uint8

const (
	cmdNew cmdState = iota
	cmdQueued
	cmdIssuing // at least one part issued, more to come (sliced)
	cmdIssued  // every part issued
	cmdDropped // never (completely) issued: queue closed
)

// issuedOrGone reports whether a command waiting for c may be issued: c was
// issued, dropped, or never submitted (its submission failed).
func (c *Command) issuedOrGone() bool { return c.state >= cmdIssued || c.state == cmdNew }

// Estimate is the measured cost of one kernel: nanoseconds of GPU time per
// unit (slice) of its grid. A driver keeps one per kernel and names it in
// every launch; the scheduler updates it from completions and uses it to
// decide how finely to slice. Its fields are guarded by the scheduler's lock.
type Estimate struct {
	perUnit int64 // ns per unit; 0 = unknown
}

func (e *Estimate) String() string { return fmt.Sprintf("%dns/unit", e.perUnit) }
