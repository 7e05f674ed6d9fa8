package ptx

import (
	"fmt"
	"strconv"
	"strings"
)

// Function returns the function named name: its definition if the module has
// one, else its declaration; nil if there is neither.
func (m *Module) Function(name string) *Function {
	var decl *Function
	for _, it := range m.Items {
		if f, ok := it.(*Function); ok && f.Name == name {
			if f.Body != nil {
				return f
			}
			if decl == nil {
				decl = f
			}
		}
	}
	return decl
}

// Functions returns the module's functions (kernels, definitions and
// declarations) in source order.
func (m *Module) Functions() []*Function {
	var fs []*Function
	for _, it := range m.Items {
		if f, ok := it.(*Function); ok {
			fs = append(fs, f)
		}
	}
	return fs
}

// Global returns the module-scope variable named name, or nil.
func (m *Module) Global(name string) *Var {
	for _, it := range m.Items {
		if v, ok := it.(*Var); ok && v.Name == name {
			return v
		}
	}
	return nil
}

// DeclareGlobal adds a module-scope variable before the first function, so that
// every function can refer to it. It fails with ErrInvalid if a module-scope
// variable or function of that name exists.
func (m *Module) DeclareGlobal(v *Var) error {
	if m.Global(v.Name) != nil || m.Function(v.Name) != nil {
		return fmt.Errorf("declare global %s: name in use: %w", v.Name, ErrInvalid)
	}
	at := len(m.Items)
	for i, it := range m.Items {
		if _, ok := it.(*Function); ok {
			at = i
			break
		}
	}
	m.Items = append(m.Items, nil)
	copy(m.Items[at+1:], m.Items[at:])
	m.Items[at] = v
	return nil
}

// NewReg declares a fresh register of type t in f's body and returns it. Its
// name is "%" + prefix + a number, chosen so that it collides with no register
// the function declares (parameterized families included). The declaration is
// placed after the declarations at the top of the body. It fails with
// ErrInvalid for a function without a body.
func (f *Function) NewReg(prefix string, t Type) (*Reg, error) {
	if f.Body == nil {
		return nil, fmt.Errorf("declare register in %s: function has no body: %w", f.Name, ErrInvalid)
	}
	base := "%" + prefix
	next := 0
	Inspect(f.Body, func(n Node) bool {
		v, ok := n.(*Var)
		if !ok || !strings.HasPrefix(v.Name, base) {
			return true
		}
		if v.Count > 0 && v.Name == base {
			next = max(next, v.Count)
			return true
		}
		if k, err := strconv.Atoi(v.Name[len(base):]); err == nil && k >= next {
			next = k + 1
		}
		return true
	})
	// A family "%p<N>" with a longer prefix (e.g. "%pg" vs "%p") cannot
	// collide: its members' names continue with letters.
	name := base + strconv.Itoa(next)
	at := 0
	for at < len(f.Body.Stmts) {
		if _, ok := f.Body.Stmts[at].(*Var); !ok {
			break
		}
		at++
	}
	decl := &Var{Space: SpaceReg, Type: t, Name: name}
	f.Body.Stmts = append(f.Body.Stmts, nil)
	copy(f.Body.Stmts[at+1:], f.Body.Stmts[at:])
	f.Body.Stmts[at] = decl
	return &Reg{Name: name}, nil
}
