package ptx

import (
	"fmt"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Errors returned by the ptx package. Compare with errors.Is; each also
// matches the v1 sentinel of its code.
var (
	// ErrSyntax: the text is not PTX this parser accepts. The error is a
	// *SyntaxError with the position.
	ErrSyntax = v1.Errorf(v1.CodeMalformed, "ptx: syntax error")
	// ErrNotFound: no function or variable of that name.
	ErrNotFound = v1.Errorf(v1.CodeNotFound, "ptx: no such symbol")
	// ErrInvalid: a well-formed tree that cannot be given a meaning, such as
	// a parameter of unknown size.
	ErrInvalid = v1.Errorf(v1.CodeInvalidArgument, "ptx: invalid declaration")
)

// SyntaxError reports where and why PTX text failed to parse.
type SyntaxError struct {
	Line int // 1-based
	Col  int // 1-based, in bytes
	Msg  string
}

// Error returns "ptx: line L:C: message".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("ptx: line %d:%d: %s", e.Line, e.Col, e.Msg)
}

// Unwrap returns the *v1.Error that carries the Malformed code, so that
// errors.Is(err, ErrSyntax), errors.Is(err, v1.ErrMalformed) and v1.CodeOf all
// see it.
func (e *SyntaxError) Unwrap() error {
	return &v1.Error{Code: v1.CodeMalformed, Message: v1.CodeMalformed.String() + ": " + e.Error()}
}
