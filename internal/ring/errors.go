package ring

import v1 "github.com/gpuos/gpuos/api/v1"

// Errors returned by ring. Each is a v1 error; compare with errors.Is against
// these or the v1 sentinels.
var (
	// ErrClosed: this end was closed, or shut down and drained.
	ErrClosed = v1.Errorf(v1.CodeDeviceLost, "ring closed")
	// ErrCorrupt: the shared memory holds something no honest peer writes. The
	// end is unusable from now on.
	ErrCorrupt = v1.Errorf(v1.CodeMalformed, "ring corrupt")
	// ErrTooLarge: a message longer than the ring's message limit.
	ErrTooLarge = v1.Errorf(v1.CodeInvalidArgument, "message too large for the ring")
	// ErrInterrupted: a wait was cut short by Interrupt.
	ErrInterrupted = v1.Errorf(v1.CodeTimeout, "ring wait interrupted")
	// ErrLayout: sizes or memory that do not make a ring or staging area.
	ErrLayout = v1.Errorf(v1.CodeInvalidArgument, "bad shared memory layout")
	// ErrUnsupported: shared memory cannot be created here (no memfd).
	ErrUnsupported = v1.Errorf(v1.CodeUnsupported, "shared memory unavailable")
	// ErrNotSealed: shared memory from a peer that could still shrink it.
	ErrNotSealed = v1.Errorf(v1.CodePermissionDenied, "shared memory is not sealed against shrinking")
)
