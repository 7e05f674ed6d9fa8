package cap

import v1 "github.com/gpuos/gpuos/api/v1"

// Errors returned by cap. Each is a *v1.Error, so errors.Is matches it against
// both these sentinels and the v1.ErrX of the same code.
var (
	// ErrInvalidHandle: the handle names no live slot of this table with that
	// kind (forged, stale, from another connection, or the wrong kind).
	ErrInvalidHandle = v1.Errorf(v1.CodeInvalidHandle, "no such handle")
	// ErrRevoked: the object or one of its ancestors was revoked.
	ErrRevoked = v1.Errorf(v1.CodeRevoked, "capability revoked")
	// ErrPermissionDenied: the handle lacks a right the operation needs, or a
	// child was asked for rights its parent lacks.
	ErrPermissionDenied = v1.Errorf(v1.CodePermissionDenied, "missing rights")
	// ErrQuotaExceeded: the table holds its maximum number of handles.
	ErrQuotaExceeded = v1.Errorf(v1.CodeQuotaExceeded, "handle table full")
	// ErrClosed: the table was closed (its connection is gone).
	ErrClosed = v1.Errorf(v1.CodeRevoked, "handle table closed")
	// ErrInvalidArgument: a kind or parent that cannot be used.
	ErrInvalidArgument = v1.Errorf(v1.CodeInvalidArgument, "bad capability argument")
)
