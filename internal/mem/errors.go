package mem

import v1 "github.com/gpuos/gpuos/api/v1"

// Errors returned by the memory manager. Each is a *v1.Error, so errors.Is
// matches it against both these sentinels and the v1.ErrX of the same code, and
// it travels to clients with its code.
var (
	// ErrQuotaExceeded: the allocation would take the tenant past its quota.
	ErrQuotaExceeded = v1.Errorf(v1.CodeQuotaExceeded, "tenant memory quota exceeded")
	// ErrOutOfMemory: the device limit (Options.DeviceMemoryLimit or the
	// device's own memory) is reached, or the window has no address range left
	// that is large enough.
	ErrOutOfMemory = v1.Errorf(v1.CodeOutOfMemory, "out of device memory")
	// ErrInvalidArgument: a zero or oversized size, unknown flags, a nil or
	// foreign tenant, window or allocation.
	ErrInvalidArgument = v1.Errorf(v1.CodeInvalidArgument, "invalid memory argument")
	// ErrNotShareable: Attach was given a sub-allocated buffer. It shares a chunk
	// with its neighbours, so mapping that chunk elsewhere would expose them;
	// allocate it with the Shareable flag instead.
	ErrNotShareable = v1.Errorf(v1.CodeInvalidArgument, "allocation is sub-allocated from a shared chunk and cannot be attached (allocate it with Shareable)")
	// ErrNoAllocation: Resolve's range is not inside one allocation of the window.
	ErrNoAllocation = v1.Errorf(v1.CodeInvalidArgument, "address range is not inside one allocation of the window")
	// ErrReadOnly: a read-only attachment was attached again read-write.
	ErrReadOnly = v1.Errorf(v1.CodePermissionDenied, "attachment is read-only")
	// ErrFreed: Free was already called on the allocation.
	ErrFreed = v1.Errorf(v1.CodeInvalidHandle, "allocation already freed")
	// ErrRevoked: the allocation was taken away: its window closed, or, for an
	// attachment, its owner freed it. Free on it succeeds once, to drop it.
	ErrRevoked = v1.Errorf(v1.CodeRevoked, "allocation revoked")
	// ErrWindowClosed: the window was closed.
	ErrWindowClosed = v1.Errorf(v1.CodeRevoked, "memory window closed")
	// ErrClosed: the manager was closed.
	ErrClosed = v1.Errorf(v1.CodeRevoked, "memory manager closed")
	// ErrBusy: device memory is short and the only chunks that could make
	// room were made resident a moment ago (Options.MinResidency); evicting
	// them would undo that before their session ran. Try again shortly.
	ErrBusy = v1.Errorf(v1.CodeBusy, "device memory is held by sessions just made resident")
)
