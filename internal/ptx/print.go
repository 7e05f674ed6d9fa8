package ptx

import (
	"io"
	"math"
	"strconv"
	"strings"
)

// Print writes m as PTX text in nvcc's layout: a header, then each item, with
// instructions indented by a tab and a tab between an opcode and its operands.
// Parsing the output gives a tree equal to m (up to source line numbers) when
// m came from Parse.
func Print(w io.Writer, m *Module) error {
	_, err := w.Write(m.Bytes())
	return err
}

// Bytes returns m printed as PTX text (see Print).
func (m *Module) Bytes() []byte {
	var p printer
	p.module(m)
	return p.buf
}

// String returns m printed as PTX text (see Print).
func (m *Module) String() string { return string(m.Bytes()) }

// String returns the instruction as one line of PTX, without indentation:
// "@%p1 bra $L__BB0_2;".
func (in *Instruction) String() string {
	var p printer
	p.instruction(in)
	return string(p.buf)
}

// String returns the declaration as PTX: ".reg .b32 %r<6>;".
func (v *Var) String() string {
	var p printer
	p.varDecl(v)
	p.buf = append(p.buf, ';')
	return string(p.buf)
}

type printer struct {
	buf []byte
}

func (p *printer) str(s string) { p.buf = append(p.buf, s...) }

func (p *printer) tabs(n int) {
	for range n {
		p.buf = append(p.buf, '\t')
	}
}

func (p *printer) module(m *Module) {
	if m.Version != "" {
		p.str(".version ")
		p.str(m.Version)
		p.str("\n")
	}
	if len(m.Target) > 0 {
		p.str(".target ")
		p.str(strings.Join(m.Target, ", "))
		p.str("\n")
	}
	if m.AddressSize != 0 {
		p.str(".address_size ")
		p.str(strconv.Itoa(m.AddressSize))
		p.str("\n")
	}
	prevFunc := true
	for _, it := range m.Items {
		switch it := it.(type) {
		case *Function:
			p.str("\n")
			p.function(it)
			prevFunc = true
		case *Var:
			if prevFunc {
				p.str("\n")
			}
			p.inlineDecl(it)
			p.str(";\n")
			prevFunc = false
		case *Directive:
			if prevFunc {
				p.str("\n")
			}
			p.directive(it)
			p.str("\n")
			prevFunc = false
		case *Section:
			p.str("\n")
			p.section(it)
			prevFunc = true
		}
	}
}

func (p *printer) attrs(as []Attribute) {
	if len(as) == 0 {
		return
	}
	p.str(".attribute(")
	for i, a := range as {
		if i > 0 {
			p.str(", ")
		}
		p.str(a.Name)
		if a.Args != nil {
			p.str("(")
			p.operandList(a.Args)
			p.str(")")
		}
	}
	p.str(") ")
}

func (p *printer) function(f *Function) {
	if f.Linkage != LinkNone {
		p.str(f.Linkage.String())
		p.str(" ")
	}
	if f.Entry {
		p.str(".entry ")
	} else {
		p.str(".func ")
	}
	p.attrs(f.Attrs)
	if f.Returns != nil {
		p.str("(")
		for i, v := range f.Returns {
			if i > 0 {
				p.str(", ")
			}
			p.inlineDecl(v)
		}
		p.str(") ")
	}
	p.str(f.Name)
	p.params(f.Params)
	p.str("\n")
	for _, d := range f.Directives {
		p.directive(d)
		p.str("\n")
	}
	if f.Body == nil {
		p.str(";\n")
		return
	}
	p.str("{\n")
	p.stmts(f.Body.Stmts, 1)
	p.str("}\n")
}

// blankBefore reports whether a blank line should precede ss[i] at the top of
// a function body, as nvcc lays it out: after the declarations and before a
// label.
func blankBefore(ss []Stmt, i int) bool {
	if i == 0 {
		return false
	}
	if _, ok := ss[i].(*Label); ok {
		return true
	}
	_, prevVar := ss[i-1].(*Var)
	_, curVar := ss[i].(*Var)
	return prevVar && !curVar
}

func (p *printer) params(vs []*Var) {
	if len(vs) == 0 {
		p.str("()")
		return
	}
	p.str("(\n")
	for i, v := range vs {
		p.str("\t")
		p.inlineDecl(v)
		if i < len(vs)-1 {
			p.str(",")
		}
		p.str("\n")
	}
	p.str(")")
}

// varDecl prints a declaration without its ';', with a tab before the name
// as nvcc lays out statements.
func (p *printer) varDecl(v *Var) { p.decl(v, " \t") }

// inlineDecl prints a declaration inside a parameter list or prototype.
func (p *printer) inlineDecl(v *Var) { p.decl(v, " ") }

func (p *printer) decl(v *Var, sep string) {
	if v.Linkage != LinkNone {
		p.str(v.Linkage.String())
		p.str(" ")
	}
	p.str(v.Space.String())
	p.str(" ")
	p.attrs(v.Attrs)
	if v.Align != 0 {
		p.str(".align ")
		p.str(strconv.Itoa(v.Align))
		p.str(" ")
	}
	if v.Vector != 0 {
		p.str(".v")
		p.str(strconv.Itoa(v.Vector))
		p.str(" ")
	}
	p.str(v.Type.String())
	if v.Ptr != nil {
		p.str(" .ptr")
		if v.Ptr.Space != SpaceNone {
			p.str(" ")
			p.str(v.Ptr.Space.String())
		}
		if v.Ptr.Align != 0 {
			p.str(" .align ")
			p.str(strconv.Itoa(v.Ptr.Align))
		}
	}
	p.str(sep)
	p.str(v.Name)
	if v.Count != 0 {
		p.str("<")
		p.str(strconv.Itoa(v.Count))
		p.str(">")
	}
	for _, d := range v.Dims {
		if d == UnsizedDim {
			p.str("[]")
			continue
		}
		p.str("[")
		p.str(strconv.Itoa(d))
		p.str("]")
	}
	if v.Init != nil {
		p.str(" = ")
		p.operand(v.Init)
	}
}

func (p *printer) directive(d *Directive) {
	if d.Label != "" {
		p.str(d.Label)
		p.str(": ")
	}
	p.str(d.Name)
	for i, g := range d.Args {
		if i > 0 {
			p.str(",")
		}
		for _, o := range g {
			p.str(" ")
			p.operand(o)
		}
	}
	if d.Semicolon || semicolonDirective[d.Name] {
		p.str(";")
	}
}

func (p *printer) section(s *Section) {
	p.str(".section ")
	p.str(s.Name)
	p.str("\n{\n")
	for _, st := range s.Body {
		switch st := st.(type) {
		case *Label:
			p.str(st.Name)
			p.str(":\n")
		case *Data:
			p.str("\t")
			p.str(st.Type.String())
			p.str(" ")
			p.operandList(st.Values)
			p.str("\n")
		}
	}
	p.str("}\n")
}

func (p *printer) stmts(ss []Stmt, depth int) {
	for i, s := range ss {
		if depth == 1 && blankBefore(ss, i) {
			p.str("\n")
		}
		switch s := s.(type) {
		case *Label:
			p.tabs(depth - 1)
			p.str(s.Name)
			p.str(":\n")
		case *Instruction:
			p.tabs(depth)
			p.instruction(s)
			p.str("\n")
		case *Var:
			p.tabs(depth)
			p.varDecl(s)
			p.str(";\n")
		case *Directive:
			p.tabs(depth)
			p.directive(s)
			p.str("\n")
		case *Block:
			p.tabs(depth)
			p.str("{\n")
			p.stmts(s.Stmts, depth+1)
			p.tabs(depth)
			p.str("}\n")
		case *Prototype:
			p.tabs(depth)
			p.prototype(s)
			p.str("\n")
		case *Data:
			p.tabs(depth)
			p.str(s.Type.String())
			p.str(" ")
			p.operandList(s.Values)
			p.str("\n")
		}
	}
}

func (p *printer) prototype(pr *Prototype) {
	p.str(pr.Name)
	p.str(": .callprototype ")
	if pr.Returns != nil {
		p.declList(pr.Returns)
		p.str(" ")
	}
	p.str("_ ")
	p.declList(pr.Params)
	for _, d := range pr.Directives {
		p.str(" ")
		p.directive(d)
	}
	p.str(";")
}

func (p *printer) declList(vs []*Var) {
	p.str("(")
	for i, v := range vs {
		if i > 0 {
			p.str(", ")
		}
		p.inlineDecl(v)
	}
	p.str(")")
}

func (p *printer) instruction(in *Instruction) {
	if in.Guard != nil {
		p.str("@")
		if in.Guard.Negated {
			p.str("!")
		}
		if in.Guard.Reg != nil {
			p.str(in.Guard.Reg.Name)
		}
		p.str(" ")
	}
	p.str(in.Opcode)
	for _, m := range in.Mods {
		p.str(m)
	}
	if len(in.Operands) > 0 {
		p.str(" \t")
		p.operandList(in.Operands)
	}
	p.str(";")
}

func (p *printer) operandList(os []Operand) {
	for i, o := range os {
		if i > 0 {
			p.str(", ")
		}
		p.operand(o)
	}
}

func (p *printer) operand(o Operand) {
	switch o := o.(type) {
	case nil:
		p.str("_")
	case *Reg:
		p.str(o.Name)
	case *Sink:
		p.str("_")
	case *Int:
		p.int(o)
	case *Float:
		p.float(o)
	case *String:
		p.str(`"`)
		p.str(o.Value)
		p.str(`"`)
	case *Symbol:
		if o.Generic {
			p.str("generic(")
			p.str(o.Name)
			p.str(")")
		} else {
			p.str(o.Name)
		}
		p.offset(o.Offset)
	case *Address:
		p.str("[")
		if o.Base != nil {
			p.operand(o.Base)
			p.offset(o.Offset)
		} else {
			p.str(strconv.FormatInt(o.Offset, 10))
		}
		p.str("]")
	case *Vector:
		p.str("{")
		p.operandList(o.Elems)
		p.str("}")
	case *Bracket:
		p.str("[")
		p.operandList(o.Elems)
		p.str("]")
	case *Paren:
		p.str("(")
		p.operandList(o.Elems)
		p.str(")")
	case *Pair:
		p.operand(o.First)
		p.str("|")
		p.operand(o.Second)
	case *Not:
		p.str("!")
		p.operand(o.X)
	case *Expr:
		if o.Y == nil {
			p.str(o.Op)
			p.operand(o.X)
			return
		}
		// Spaces keep "%r1 % 3" from printing as "%r1%3", a register.
		p.operand(o.X)
		p.str(" ")
		p.str(o.Op)
		p.str(" ")
		p.operand(o.Y)
	}
}

// offset prints "+n", or "+-n" for a negative n as nvcc does; nothing for 0.
func (p *printer) offset(n int64) {
	if n == 0 {
		return
	}
	p.str("+")
	p.str(strconv.FormatInt(n, 10))
}

func (p *printer) int(n *Int) {
	switch {
	case n.Hex && n.Unsigned:
		p.str("0x")
		p.str(strings.ToUpper(strconv.FormatUint(uint64(n.Value), 16)))
	case n.Hex && n.Value < 0:
		p.str("-0x")
		p.str(strings.ToUpper(strconv.FormatUint(uint64(-n.Value), 16)))
	case n.Hex:
		p.str("0x")
		p.str(strings.ToUpper(strconv.FormatUint(uint64(n.Value), 16)))
	case n.Unsigned:
		p.str(strconv.FormatUint(uint64(n.Value), 10))
	default:
		p.str(strconv.FormatInt(n.Value, 10))
	}
	if n.Unsigned {
		p.str("U")
	}
}

func (p *printer) float(f *Float) {
	if f.Decimal && !f.Single {
		v := math.Float64frombits(f.Bits)
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			s := strconv.FormatFloat(v, 'g', -1, 64)
			p.str(s)
			if !strings.ContainsAny(s, ".e") {
				p.str(".0")
			}
			return
		}
	}
	if f.Single {
		const hex = "0123456789ABCDEF"
		p.str("0f")
		for i := 28; i >= 0; i -= 4 {
			p.buf = append(p.buf, hex[(f.Bits>>uint(i))&0xF])
		}
		return
	}
	const hex = "0123456789ABCDEF"
	p.str("0d")
	for i := 60; i >= 0; i -= 4 {
		p.buf = append(p.buf, hex[(f.Bits>>uint(i))&0xF])
	}
}

func (r *Reg) String() string { return r.Name }
func (*Sink) String() string  { return "_" }
func (n *Int) String() string { return operandString(n) }
func (f *Float) String() string {
	return operandString(f)
}
func (s *String) String() string  { return `"` + s.Value + `"` }
func (s *Symbol) String() string  { return operandString(s) }
func (a *Address) String() string { return operandString(a) }
func (v *Vector) String() string  { return operandString(v) }
func (b *Bracket) String() string { return operandString(b) }
func (l *Paren) String() string   { return operandString(l) }
func (x *Pair) String() string    { return operandString(x) }
func (x *Not) String() string     { return operandString(x) }
func (x *Expr) String() string    { return operandString(x) }

func operandString(o Operand) string {
	var p printer
	p.operand(o)
	return string(p.buf)
}
