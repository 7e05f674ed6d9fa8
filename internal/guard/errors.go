package guard

import (
	"fmt"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ptx"
)

// Errors returned by the guard. Compare with errors.Is; each also matches the
// v1 sentinel of its code.
var (
	// ErrUnsupported: the module uses a form the guard cannot make safe (a
	// 32-bit address size, multimem, tensor maps, texture or surface
	// instructions, calls out of the module, ...). The error is a *FormError
	// naming the instruction and its line.
	ErrUnsupported = v1.Errorf(v1.CodeUnsupported, "guard: unsupported PTX")
	// ErrInvalid: the module is not PTX the guard can give a meaning to (an
	// initializer that does not fit its variable, a name the guard reserves).
	ErrInvalid = v1.Errorf(v1.CodeInvalidArgument, "guard: invalid PTX")
)

// FormError is a construct the guard refuses, with where it is.
type FormError struct {
	Code     v1.Code // CodeUnsupported or CodeInvalidArgument
	Function string  // the function it is in; "" at module scope
	Line     int     // PTX source line; 0 if unknown
	Form     string  // the instruction or declaration, as written
	Why      string  // why it cannot be guarded, and what to do instead
}

// Error returns "guard: line L: function F: FORM: why".
func (e *FormError) Error() string {
	s := "guard:"
	if e.Line > 0 {
		s += fmt.Sprintf(" line %d:", e.Line)
	}
	if e.Function != "" {
		s += " function " + e.Function + ":"
	}
	if e.Form != "" {
		s += " " + e.Form + ":"
	}
	return s + " " + e.Why
}

// Unwrap returns the *v1.Error of the code, so errors.Is(err, ErrUnsupported),
// errors.Is(err, v1.ErrUnsupported) and v1.CodeOf all see it.
func (e *FormError) Unwrap() error {
	return &v1.Error{Code: e.Code, Message: e.Code.String() + ": " + e.Error()}
}

func refuse(fn string, in *ptx.Instruction, why string, args ...any) error {
	e := &FormError{Code: v1.CodeUnsupported, Function: fn, Why: fmt.Sprintf(why, args...)}
	if in != nil {
		e.Line = in.Line
		e.Form = in.Name()
	}
	return e
}

func refuseDecl(fn, form string, why string, args ...any) error {
	return &FormError{Code: v1.CodeUnsupported, Function: fn, Form: form, Why: fmt.Sprintf(why, args...)}
}

func invalidDecl(fn, form string, why string, args ...any) error {
	return &FormError{Code: v1.CodeInvalidArgument, Function: fn, Form: form, Why: fmt.Sprintf(why, args...)}
}
