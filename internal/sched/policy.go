package sched

import (
	"strconv"
	"time"
)

// TenantID names a tenant to policies: a small integer, stable for as long as
// the scheduler lives (tenants are never forgotten, so an id is never reused).
type TenantID uint32

// NoTenant is the Choice of "dispatch nothing now".
const NoTenant TenantID = ^TenantID(0)

func (t TenantID) String() string {
	if t == NoTenant {
		return "none"
	}
	return "tenant#" + strconv.Itoa(int(t))
}

// Class is a tenant's scheduling class: higher classes run first under the
// priority policy, and their streams get the device's greatest priority.
type Class int8

// Classes.
const (
	ClassLow    Class = -1 // best effort
	ClassNormal Class = 0
	ClassHigh   Class = 1
)

// numClasses is how many classes there are; classIndex maps one to
// 0..numClasses-1 (an out-of-range value to the nearest class).
const numClasses = int(ClassHigh-ClassLow) + 1

func classIndex(c Class) int { return int(min(max(c, ClassLow), ClassHigh) - ClassLow) }

func (c Class) String() string {
	switch c {
	case ClassLow:
		return "low"
	case ClassNormal:
		return "normal"
	case ClassHigh:
		return "high"
	}
	return strconv.Itoa(int(c))
}

// ClassFromNice maps a process's CPU nice value to a class, for tenants whose
// configuration names none: a negative nice (more urgent than default) is
// high, a positive one low.
func ClassFromNice(nice int) Class {
	switch {
	case nice < 0:
		return ClassHigh
	case nice > 0:
		return ClassLow
	}
	return ClassNormal
}

// Policy decides what runs next. The dispatcher owns the queues and calls the
// policy at its hook points; the policy owns no command, so replacing it — by
// Use, or because it misbehaved — can neither lose nor reorder work.
//
// Every hook runs with the scheduler's lock held, on whatever goroutine is
// dispatching: it must be quick and must not call back into the Scheduler,
// only into the Host it is given. A hook that panics, returns an error, takes
// longer than the scheduler's hook deadline (policies other than the built-in
// ones) or returns an invalid Choice gets the policy ejected: the fallback
// built-in policy takes over at once and the decision is made again by it.
//
// This interface is the contract of WebAssembly policies (internal/policy):
// every argument is a number or a slice of TenantIDs, and everything else a
// policy may know it reads through the Host, or keeps in Maps.
type Policy interface {
	// Name is how the policy is listed and selected.
	Name() string
	// Init runs when the policy becomes active, with the tenants that exist
	// and their queues as they are: it initializes the policy's maps.
	Init(h *Host) error
	// OnSessionOpen runs when a session opens (admission): an error refuses it.
	OnSessionOpen(h *Host, s SessionEvent) error
	// OnSubmit runs when a command enters a tenant's queue of an engine.
	OnSubmit(h *Host, e SubmitEvent) error
	// OnDispatch picks the next queue of engine e among ready: the tenants
	// that have a command of that engine ready to issue (dependencies met) and
	// room in their in-flight window, ordered by id. It returns one of them,
	// or NoTenant to dispatch nothing until the next submission or completion
	// (or until Hold passes).
	OnDispatch(h *Host, e Engine, ready []TenantID) (Choice, error)
	// OnComplete runs when work of a tenant completed and was charged.
	OnComplete(h *Host, c CompleteEvent) error
	// OnPreempt runs when a partly issued (sliced) command of a tenant yields
	// its engine to another tenant's command between two slices.
	OnPreempt(h *Host, p PreemptEvent) error
	// OnTick runs periodically while any tenant has work.
	OnTick(h *Host, now time.Duration) error
}

// Interrupter is implemented by policies that can abort a hook in progress
// (a WebAssembly guest can be stopped from another goroutine). The scheduler's
// watchdog calls Interrupt when a hook has run past the deadline; the hook
// should then return an error promptly.
type Interrupter interface {
	Interrupt()
}

// Choice is OnDispatch's answer.
type Choice struct {
	// Tenant is the queue to dispatch from: one of ready, or NoTenant.
	Tenant TenantID
	// Hold, with NoTenant, asks to be asked again after this long even if
	// nothing happens (at most the scheduler's MaxHold). Zero: at the next
	// submission or completion.
	Hold time.Duration
	// Quantum, if positive, bounds how much estimated device time the issued
	// command may take: a longer sliceable kernel is issued in slices of
	// about Quantum, so other work can be dispatched between them.
	Quantum time.Duration
	// Group, if not 0, issues the command in turns with the other tenants'
	// commands of that group on the compute engine: it starts on the device
	// only once the work the group's previous holder issued has completed
	// (its stream waits for events recorded on the holder's, so no round
	// trip through the daemon is added), and the group's next holder waits
	// for it in turn. Within a group tenants' kernels never overlap, so the
	// GPU time charged to each is time the device gave it (see the package
	// doc, "What a share is"). Work of group 0 and of different groups runs
	// side by side, as CUDA streams do. Copies ignore it (they are charged
	// in bytes, exact however they overlap).
	Group uint8
	// Reserve leaves part of the device free for higher classes: a
	// sliceable kernel whose wave is known (Command.Wave) is issued in
	// slices of at most one wave less the scheduler's Reserve, so that a
	// kernel of a higher class issued meanwhile finds SMs free at once
	// instead of waiting for a block to end. It needs a Group, or slices of
	// two tenants would run side by side and fill the device together.
	Reserve bool
}

// SessionEvent describes a session opening.
type SessionEvent struct {
	Tenant  TenantID
	Session uint64
	PID     int32
	Class   Class // the session's own class (from its process's nice value)
}

// SubmitEvent describes a command entering a tenant's queue.
type SubmitEvent struct {
	Tenant  TenantID
	Engine  Engine
	Session uint64
	Cost    int64 // estimated charge: ns for compute, bytes for copy
}

// CompleteEvent describes completed work and what it was charged.
type CompleteEvent struct {
	Tenant   TenantID
	Engine   Engine
	Commands int   // commands (or slices) whose completion this reports
	Charge   int64 // ns of GPU time (compute) or bytes (copy)
	Estimate int64 // what the dispatcher had estimated for them
	Failed   bool
}

// PreemptEvent describes a sliced command yielding between slices.
type PreemptEvent struct {
	Tenant    TenantID // the tenant whose sliced command yields
	Engine    Engine
	Remaining uint32 // units not yet issued
	By        TenantID
}

// Base implements every hook as a no-op; embed it to implement only some.
type Base struct{}

func (Base) Init(*Host) error                        { return nil }
func (Base) OnSessionOpen(*Host, SessionEvent) error { return nil }
func (Base) OnSubmit(*Host, SubmitEvent) error       { return nil }
func (Base) OnComplete(*Host, CompleteEvent) error   { return nil }
func (Base) OnPreempt(*Host, PreemptEvent) error     { return nil }
func (Base) OnTick(*Host, time.Duration) error       { return nil }

// builtin marks the policies compiled into gpuos: trusted not to hang, so
// their hooks are not timed (a GC pause must not eject them).
type builtin struct{}

func (builtin) trusted() {}

type trustedPolicy interface{ trusted() }

// PolicyInfo describes a policy the scheduler can run.
type PolicyInfo struct {
	Name        string
	Description string
	Builtin     bool
	Active      bool
	// Ejected is why the policy was last replaced for misbehaving, if it was.
	Ejected string
}
