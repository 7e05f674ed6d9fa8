package interp

import (
	"errors"
	"fmt"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Errors returned by the interpreter. Compare with errors.Is; each also matches
// the v1 sentinel of its code.
var (
	// ErrUnsupported: the module uses an instruction, modifier, type, state
	// space or directive the interpreter does not implement. Returned by
	// Compile, naming the construct and its line.
	ErrUnsupported = v1.Errorf(v1.CodeUnsupported, "interp: unsupported PTX")
	// ErrInvalid: the module is PTX the interpreter cannot give a meaning to
	// (an undeclared register, a branch to a missing label, a bad operand).
	ErrInvalid = v1.Errorf(v1.CodeInvalidArgument, "interp: invalid PTX")
	// ErrNotFound: no kernel or global of that name.
	ErrNotFound = v1.Errorf(v1.CodeNotFound, "interp: no such symbol")
	// ErrUnbound: Run was called before Bind placed the module's globals.
	ErrUnbound = v1.Errorf(v1.CodeInvalidArgument, "interp: globals not bound")
	// ErrLaunchFailed is what every *Fault matches.
	ErrLaunchFailed = v1.ErrLaunchFailed
)

func unsupported(line int, format string, args ...any) error {
	return v1.Errorf(v1.CodeUnsupported, "interp: line %d: %s", line, fmt.Sprintf(format, args...))
}

func invalid(line int, format string, args ...any) error {
	return v1.Errorf(v1.CodeInvalidArgument, "interp: line %d: %s", line, fmt.Sprintf(format, args...))
}

// FaultKind classifies why a kernel stopped.
type FaultKind uint8

// Fault kinds.
const (
	// FaultIllegalAddress: a load, store or atomic touched memory that is not
	// mapped (global), outside the block's shared memory, or outside the
	// thread's local memory.
	FaultIllegalAddress FaultKind = iota + 1
	// FaultMisaligned: an access whose address is not a multiple of its size.
	FaultMisaligned
	// FaultTrap: the kernel executed trap or brkpt.
	FaultTrap
	// FaultWatchdog: the grid executed more than Launch.MaxInstructions.
	FaultWatchdog
	// FaultInvalidLaunch: the launch configuration is out of range (zero or
	// too large dimensions, too much shared memory, a short parameter buffer).
	FaultInvalidLaunch
	// FaultDeadlock: threads wait at a barrier or warp collective that can
	// never complete (the threads it waits for exited or wait elsewhere).
	FaultDeadlock
	// FaultStackOverflow: device-function calls nested deeper than the
	// interpreter's call stack allows.
	FaultStackOverflow
	// FaultCanceled: the launch's context was canceled; Unwrap returns the
	// context's error.
	FaultCanceled
)

var faultNames = [...]string{
	FaultIllegalAddress: "illegal address",
	FaultMisaligned:     "misaligned address",
	FaultTrap:           "trap",
	FaultWatchdog:       "watchdog",
	FaultInvalidLaunch:  "invalid launch",
	FaultDeadlock:       "deadlock",
	FaultStackOverflow:  "stack overflow",
	FaultCanceled:       "canceled",
}

func (k FaultKind) String() string {
	if int(k) < len(faultNames) && faultNames[k] != "" {
		return faultNames[k]
	}
	return fmt.Sprintf("fault(%d)", uint8(k))
}

// Fault is a kernel that stopped on the device. It matches v1.ErrLaunchFailed
// (and ErrLaunchFailed) under errors.Is.
type Fault struct {
	Kind   FaultKind
	Kernel string
	Addr   uint64    // the faulting address (IllegalAddress, Misaligned)
	Block  [3]uint32 // %ctaid of the faulting thread
	Thread [3]uint32 // %tid of the faulting thread
	Line   int       // PTX source line of the faulting instruction; 0 if none
	Detail string    // what happened, in words
	Err    error     // the cause, if any (a Memory error, the context's error)
}

// Error describes the fault.
func (f *Fault) Error() string {
	s := fmt.Sprintf("%s: kernel %s: %s", v1.CodeLaunchFailed, f.Kernel, f.Kind)
	if f.Kind == FaultIllegalAddress || f.Kind == FaultMisaligned {
		s += fmt.Sprintf(" at %#x", f.Addr)
	}
	if f.Kind != FaultInvalidLaunch && f.Kind != FaultWatchdog && f.Kind != FaultCanceled {
		s += fmt.Sprintf(" in block (%d,%d,%d) thread (%d,%d,%d)", f.Block[0], f.Block[1], f.Block[2], f.Thread[0], f.Thread[1], f.Thread[2])
	}
	if f.Line > 0 {
		s += fmt.Sprintf(", line %d", f.Line)
	}
	if f.Detail != "" {
		s += ": " + f.Detail
	}
	if f.Err != nil {
		s += ": " + f.Err.Error()
	}
	return s
}

// Is reports whether target is ErrLaunchFailed (any *v1.Error with the launch
// failed code).
func (f *Fault) Is(target error) bool {
	var e *v1.Error
	return errors.As(target, &e) && e.Code == v1.CodeLaunchFailed
}

// Unwrap returns the cause.
func (f *Fault) Unwrap() error { return f.Err }
