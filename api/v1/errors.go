package v1

import (
	"errors"
	"fmt"
)

// Code is the machine-readable class of an error, as carried on the wire.
// Codes are stable: a code's number never changes meaning.
type Code uint16

// Error codes. The zero value means success and never appears in an Error.
const (
	CodeOK               Code = 0
	CodeInvalidHandle    Code = 1  // forged, stale, foreign or wrong-kind handle
	CodeRevoked          Code = 2  // the object was revoked (directly or through a parent)
	CodePermissionDenied Code = 3  // unknown client, or a right the session lacks
	CodeQuotaExceeded    Code = 4  // a ledger limit would be passed
	CodeMalformed        Code = 5  // a frame or request that does not decode
	CodeUnsupported      Code = 6  // a feature or instruction gpuos does not implement
	CodeDeviceLost       Code = 7  // the driver process or its device context died
	CodeTimeout          Code = 8  // a wait passed its deadline
	CodeGuardViolation   Code = 9  // a guarded kernel tried to access memory outside its window
	CodeNotFound         Code = 10 // a named kernel, global, tenant or device does not exist
	CodeInvalidArgument  Code = 11 // a well-formed request with values out of range
	CodeOutOfMemory      Code = 12 // the device (not the quota) has no memory left
	CodeNotReady         Code = 13 // asynchronous work has not completed yet (Poll)
	CodeVersionMismatch  Code = 14 // the peer speaks an incompatible protocol version
	CodeInternal         Code = 15 // a bug in gpuos: reported, never silently ignored
	CodeBusy             Code = 16 // a resource is temporarily unavailable (backpressure)
	CodeLaunchFailed     Code = 17 // a kernel failed on the device for a reason other than a guard violation
	codeMax              Code = 18
)

var codeNames = [...]string{
	CodeOK:               "ok",
	CodeInvalidHandle:    "invalid handle",
	CodeRevoked:          "revoked",
	CodePermissionDenied: "permission denied",
	CodeQuotaExceeded:    "quota exceeded",
	CodeMalformed:        "malformed request",
	CodeUnsupported:      "unsupported",
	CodeDeviceLost:       "device lost",
	CodeTimeout:          "timeout",
	CodeGuardViolation:   "guard violation",
	CodeNotFound:         "not found",
	CodeInvalidArgument:  "invalid argument",
	CodeOutOfMemory:      "out of memory",
	CodeNotReady:         "not ready",
	CodeVersionMismatch:  "version mismatch",
	CodeInternal:         "internal error",
	CodeBusy:             "busy",
	CodeLaunchFailed:     "launch failed",
}

// String returns the code's short name.
func (c Code) String() string {
	if c < codeMax {
		return codeNames[c]
	}
	return fmt.Sprintf("code(%d)", uint16(c))
}

// Valid reports whether c is a code this version knows.
func (c Code) Valid() bool { return c > CodeOK && c < codeMax }

// Error is a typed gpuos error: a code, a human-readable message and, where the
// error came from the NVIDIA driver, the CUresult it returned (0 otherwise).
//
// Two *Error values match under errors.Is when their codes are equal, so callers
// test against the sentinels below: errors.Is(err, v1.ErrRevoked).
type Error struct {
	Code    Code
	Message string
	Result  int32 // CUresult from the NVIDIA driver, if any
}

// Error returns the message, which names the code, or the code's name alone.
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code.String()
	}
	return e.Message
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Errorf returns an *Error with the given code and the message "<code>: <text>".
// Arguments wrapped with %w are flattened into the message only: the code decides
// what the error is.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: code.String() + ": " + fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of the first *Error in err's chain, CodeOK for nil and
// CodeInternal for an error gpuos did not classify.
func CodeOf(err error) Code {
	if err == nil {
		return CodeOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ResultOf returns the CUresult carried by the first *Error in err's chain, or 0.
func ResultOf(err error) int32 {
	var e *Error
	if errors.As(err, &e) {
		return e.Result
	}
	return 0
}

// Errors returned by gpuos, one per code. Compare with errors.Is.
var (
	ErrInvalidHandle    = &Error{Code: CodeInvalidHandle}
	ErrRevoked          = &Error{Code: CodeRevoked}
	ErrPermissionDenied = &Error{Code: CodePermissionDenied}
	ErrQuotaExceeded    = &Error{Code: CodeQuotaExceeded}
	ErrMalformed        = &Error{Code: CodeMalformed}
	ErrUnsupported      = &Error{Code: CodeUnsupported}
	ErrDeviceLost       = &Error{Code: CodeDeviceLost}
	ErrTimeout          = &Error{Code: CodeTimeout}
	ErrGuardViolation   = &Error{Code: CodeGuardViolation}
	ErrNotFound         = &Error{Code: CodeNotFound}
	ErrInvalidArgument  = &Error{Code: CodeInvalidArgument}
	ErrOutOfMemory      = &Error{Code: CodeOutOfMemory}
	ErrNotReady         = &Error{Code: CodeNotReady}
	ErrVersionMismatch  = &Error{Code: CodeVersionMismatch}
	ErrInternal         = &Error{Code: CodeInternal}
	ErrBusy             = &Error{Code: CodeBusy}
	ErrLaunchFailed     = &Error{Code: CodeLaunchFailed}
)

// Wire converts any error into the *Error that travels on the wire: an *Error in
// the chain keeps its code and result, and the message is the whole chain's text
// (which names the code, since every *Error's text does).
func Wire(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return &Error{Code: e.Code, Message: err.Error(), Result: e.Result}
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}
