package ptx

import "fmt"

// ParamSlot is where one kernel parameter lies in the packed parameter buffer
// that cuLaunchKernel fills.
type ParamSlot struct {
	Name   string
	Size   int // bytes
	Align  int // bytes
	Offset int // from the start of the buffer; a multiple of Align
}

// Size returns the variable's size in bytes: the element size times the vector
// width times every array dimension. It is 0 for .pred, for an unsized array
// and for a parameterized register family.
func (v *Var) Size() int {
	n := v.Type.Size()
	if v.Vector > 0 {
		n *= v.Vector
	}
	for _, d := range v.Dims {
		if d < 0 {
			return 0
		}
		n *= d
	}
	return n
}

// Alignment returns the variable's alignment in bytes: its .align if given,
// else the natural alignment of its element (the whole vector for .v2/.v4).
func (v *Var) Alignment() int {
	if v.Align > 0 {
		return v.Align
	}
	n := v.Type.Size()
	if v.Vector > 0 {
		n *= v.Vector
	}
	if n == 0 {
		return 1
	}
	return n
}

// ParamLayout returns the layout of f's parameters in the launch parameter
// buffer, by CUDA's rule: in declaration order, each parameter at the next
// offset that is a multiple of its alignment (see Var.Alignment). The buffer's
// size is the last slot's Offset+Size (0 for none).
//
// It fails with ErrInvalid for a parameter that has no size (an unsized array
// or a .pred) or an alignment that is not a power of two.
func (f *Function) ParamLayout() ([]ParamSlot, error) {
	slots := make([]ParamSlot, 0, len(f.Params))
	off := 0
	for _, p := range f.Params {
		size, align := p.Size(), p.Alignment()
		if size <= 0 {
			return nil, fmt.Errorf("lay out %s parameter %s: %w", f.Name, p.Name, ErrInvalid)
		}
		if align&(align-1) != 0 {
			return nil, fmt.Errorf("lay out %s parameter %s: alignment %d: %w", f.Name, p.Name, align, ErrInvalid)
		}
		off = (off + align - 1) &^ (align - 1)
		slots = append(slots, ParamSlot{Name: p.Name, Size: size, Align: align, Offset: off})
		off += size
	}
	return slots, nil
}
