package guard

import (
	"encoding/binary"
	"math"

	"github.com/gpuos/gpuos/internal/ptx"
)

// Layout is where the module's .global variables go once relocated into the
// session's window: the driver allocates Size bytes aligned to Align in the
// window, writes each variable's initial contents and relocations, and puts
// the base into Params.Globals. Guarded code reaches the variables only
// through that base, so the window's checks and the tenant's quota cover them.
type Layout struct {
	Size  uint64
	Align uint64
	Vars  []GlobalVar
}

// GlobalVar is one relocated variable.
type GlobalVar struct {
	Name   string
	Offset uint64 // from the layout's base
	Size   uint64
	Init   []byte  // Size bytes of initial contents; nil means zeros
	Relocs []Reloc // addresses to store into Init once the base is known
}

// Reloc asks the driver to store the 64-bit address of Symbol plus Addend at
// Offset of a variable. Symbol is a relocated variable of the Layout, or a
// .const variable the module keeps (the driver asks the loaded module).
type Reloc struct {
	Offset uint64
	Symbol string
	Addend int64
}

// ConstPatch asks the driver to store the relocated address of Symbol plus
// Addend at Offset of the module's .const variable Var, after loading (the
// guard replaced that initializer element by 0: the address is not known
// before the driver places the layout).
type ConstPatch struct {
	Var    string
	Offset uint64
	Symbol string
	Addend int64
}

// Var returns the relocated variable named name.
func (l *Layout) Var(name string) (GlobalVar, bool) {
	if l == nil {
		return GlobalVar{}, false
	}
	for _, v := range l.Vars {
		if v.Name == name {
			return v, true
		}
	}
	return GlobalVar{}, false
}

// Bytes returns the layout's initial contents with relocations applied for a
// base address: resolve answers the address of a .const variable (or of a
// symbol the layout does not hold).
func (l *Layout) Bytes(base uint64, resolve func(name string) (uint64, bool)) ([]byte, error) {
	out := make([]byte, l.Size)
	for _, v := range l.Vars {
		copy(out[v.Offset:], v.Init)
	}
	for _, v := range l.Vars {
		for _, r := range v.Relocs {
			addr, ok := uint64(0), false
			if t, in := l.Var(r.Symbol); in {
				addr, ok = base+t.Offset, true
			} else if resolve != nil {
				addr, ok = resolve(r.Symbol)
			}
			if !ok {
				return nil, invalidDecl("", v.Name, "initializer refers to %s, which the module does not define", r.Symbol)
			}
			binary.LittleEndian.PutUint64(out[v.Offset+r.Offset:], addr+uint64(r.Addend))
		}
	}
	return out, nil
}

// maxGlobalBytes bounds the relocated variables of one module (they are
// charged to the tenant's quota anyway; this keeps a hostile module from
// making the guard allocate an absurd initializer).
const maxGlobalBytes = 1 << 34

// layoutGlobals lays the relocatable variables out in source order.
func (g *guarder) layoutGlobals(vars []*ptx.Var) error {
	l := &Layout{Align: 256}
	for _, v := range vars {
		size, align, err := varShape(v)
		if err != nil {
			return err
		}
		if size == 0 {
			return refuseDecl("", v.Name, "a .global variable without a size (an unsized or external array) cannot be relocated")
		}
		l.Align = max(l.Align, align)
		off := (l.Size + align - 1) &^ (align - 1)
		if off+size > maxGlobalBytes {
			return refuseDecl("", v.Name, "module's .global variables exceed %d bytes", uint64(maxGlobalBytes))
		}
		gv := GlobalVar{Name: v.Name, Offset: off, Size: size}
		if v.Init != nil {
			if size > 1<<26 {
				return refuseDecl("", v.Name, "initialized variable larger than 64 MiB")
			}
			ini := &initWriter{g: g, v: v, buf: make([]byte, size), elem: uint64(v.Type.Size())}
			if err := ini.write(v.Init); err != nil {
				return err
			}
			gv.Init, gv.Relocs = ini.buf, ini.relocs
		}
		l.Vars = append(l.Vars, gv)
		l.Size = off + size
	}
	l.Size = (l.Size + 255) &^ 255
	g.layout = l
	return nil
}

// varShape returns a module variable's size and alignment, checked.
func varShape(v *ptx.Var) (size, align uint64, err error) {
	n := uint64(v.Type.Size())
	if n == 0 {
		return 0, 0, refuseDecl("", v.Name, "variable of type %s", v.Type)
	}
	if v.Vector > 0 {
		n *= uint64(v.Vector)
	}
	for _, d := range v.Dims {
		if d == ptx.UnsizedDim {
			return 0, 1, nil
		}
		if d < 0 || d > maxGlobalBytes {
			return 0, 0, invalidDecl("", v.Name, "dimension %d", d)
		}
		n *= uint64(d)
		if n > maxGlobalBytes {
			return 0, 0, refuseDecl("", v.Name, "variable larger than %d bytes", uint64(maxGlobalBytes))
		}
	}
	a := uint64(v.Alignment())
	if a == 0 || a&(a-1) != 0 || a > 1<<16 {
		return 0, 0, invalidDecl("", v.Name, "alignment %d", a)
	}
	return n, a, nil
}

// initWriter evaluates an initializer into bytes and relocations.
type initWriter struct {
	g      *guarder
	v      *ptx.Var
	buf    []byte
	elem   uint64 // element size
	off    uint64
	relocs []Reloc
	// patch, when set, is called for an address of a relocated variable; it
	// returns the operand to leave in the tree (.const initializers).
	patch func(off uint64, s *ptx.Symbol) ptx.Operand
}

func (w *initWriter) write(o ptx.Operand) error {
	_, err := w.walk(o, 0)
	return err
}

// walk writes the leaves of o in order; it returns a replacement for o when
// patch asks for one.
func (w *initWriter) walk(o ptx.Operand, depth int) (ptx.Operand, error) {
	if depth > 32 {
		return nil, invalidDecl("", w.v.Name, "initializer nested too deeply")
	}
	if vec, ok := o.(*ptx.Vector); ok {
		for i, e := range vec.Elems {
			r, err := w.walk(e, depth+1)
			if err != nil {
				return nil, err
			}
			if r != nil {
				vec.Elems[i] = r
			}
		}
		return nil, nil
	}
	if w.off+w.elem > uint64(len(w.buf)) {
		return nil, invalidDecl("", w.v.Name, "initializer has more elements than the variable")
	}
	at := w.buf[w.off : w.off+w.elem]
	defer func() { w.off += w.elem }()
	switch x := o.(type) {
	case *ptx.Symbol:
		if w.elem != 8 {
			return nil, refuseDecl("", w.v.Name, "address of %s in a %d-byte element", x.Name, w.elem)
		}
		if err := w.g.addressable(w.v.Name, x.Name); err != nil {
			return nil, err
		}
		if w.patch != nil {
			return w.patch(w.off, x), nil
		}
		w.relocs = append(w.relocs, Reloc{Offset: w.off, Symbol: x.Name, Addend: x.Offset})
		return nil, nil
	case *ptx.Float:
		f := x.Float64()
		switch w.v.Type {
		case ptx.TypeF32:
			binary.LittleEndian.PutUint32(at, math.Float32bits(float32(f)))
		case ptx.TypeF64:
			binary.LittleEndian.PutUint64(at, math.Float64bits(f))
		default:
			if x.Single && w.elem == 4 || !x.Single && w.elem == 8 {
				putN(at, x.Bits) // hex bit patterns into untyped elements
			} else {
				return nil, refuseDecl("", w.v.Name, "floating-point initializer for type %s", w.v.Type)
			}
		}
		return nil, nil
	}
	n, ok := constInt(o, 0)
	if !ok {
		return nil, refuseDecl("", w.v.Name, "initializer element %s is not a constant the guard can evaluate", o)
	}
	switch w.v.Type {
	case ptx.TypeF32:
		binary.LittleEndian.PutUint32(at, math.Float32bits(float32(n)))
	case ptx.TypeF64:
		binary.LittleEndian.PutUint64(at, math.Float64bits(float64(n)))
	default:
		putN(at, uint64(n))
	}
	return nil, nil
}

func putN(b []byte, v uint64) {
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
}

// constInt evaluates an integer constant expression.
func constInt(o ptx.Operand, depth int) (int64, bool) {
	if depth > 32 {
		return 0, false
	}
	switch x := o.(type) {
	case *ptx.Int:
		return x.Value, true
	case *ptx.Paren:
		if len(x.Elems) == 1 {
			return constInt(x.Elems[0], depth+1)
		}
	case *ptx.Expr:
		a, ok := constInt(x.X, depth+1)
		if !ok {
			return 0, false
		}
		if x.Y == nil {
			switch x.Op {
			case "-":
				return -a, true
			case "~":
				return ^a, true
			case "!":
				if a == 0 {
					return 1, true
				}
				return 0, true
			}
			return 0, false
		}
		b, ok := constInt(x.Y, depth+1)
		if !ok {
			return 0, false
		}
		switch x.Op {
		case "+":
			return a + b, true
		case "-":
			return a - b, true
		case "*":
			return a * b, true
		case "/":
			if b == 0 || (a == math.MinInt64 && b == -1) {
				return 0, false
			}
			return a / b, true
		case "%":
			if b == 0 || (a == math.MinInt64 && b == -1) {
				return 0, false
			}
			return a % b, true
		case "<<":
			return a << (uint64(b) & 63), true
		case ">>":
			return a >> (uint64(b) & 63), true
		case "&":
			return a & b, true
		case "|":
			return a | b, true
		case "^":
			return a ^ b, true
		}
	}
	return 0, false
}
