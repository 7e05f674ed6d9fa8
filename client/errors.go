package client

import v1 "github.com/gpuos/gpuos/api/v1"

// Errors returned by gpuos. Each matches, under errors.Is, every error of the
// same kind however it reached the client.
var (
	ErrInvalidHandle    = v1.ErrInvalidHandle
	ErrRevoked          = v1.ErrRevoked
	ErrPermissionDenied = v1.ErrPermissionDenied
	ErrQuotaExceeded    = v1.ErrQuotaExceeded
	ErrMalformed        = v1.ErrMalformed
	ErrUnsupported      = v1.ErrUnsupported
	ErrDeviceLost       = v1.ErrDeviceLost
	ErrTimeout          = v1.ErrTimeout
	ErrGuardViolation   = v1.ErrGuardViolation
	ErrNotFound         = v1.ErrNotFound
	ErrInvalidArgument  = v1.ErrInvalidArgument
	ErrOutOfMemory      = v1.ErrOutOfMemory
	ErrNotReady         = v1.ErrNotReady
	ErrVersionMismatch  = v1.ErrVersionMismatch
	ErrLaunchFailed     = v1.ErrLaunchFailed
)

// Rights is a set of session or buffer rights.
type Rights = v1.Rights

// Session and buffer rights.
const (
	RightAlloc       = v1.RightAlloc
	RightLoad        = v1.RightLoad
	RightLaunch      = v1.RightLaunch
	RightCopy        = v1.RightCopy
	RightGrant       = v1.RightGrant
	RightStream      = v1.RightStream
	AllSessionRights = v1.AllSessionRights
	BufferRead       = v1.RightBufferRead
	BufferWrite      = v1.RightBufferWrite
	BufferGrant      = v1.RightBufferGrant
)
