package ptx

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parse parses a PTX module. A failure is a *SyntaxError (matching ErrSyntax)
// with the line and column of the offending token.
func Parse(src []byte) (*Module, error) {
	p := &parser{lx: lexer{src: string(src), line: 1}}
	m, err := p.module()
	if err != nil {
		return nil, err
	}
	return m, nil
}

// maxNesting bounds block and operand nesting so that hostile input cannot
// exhaust the stack.
const maxNesting = 256

type parser struct {
	lx      lexer
	tok     token
	peeked  bool
	peekTok token
	prev    token // the last token consumed
	depth   int
	// scopes holds, innermost last, the register names declared without a
	// "%" in each open block, so that their uses parse as *Reg.
	scopes []map[string]int
}

// bailout carries the first syntax error up to Parse, which recovers it: the
// parser stops at the first error.
type bailout struct{ err *SyntaxError }

func (p *parser) advance() {
	p.prev = p.tok
	if p.peeked {
		p.tok = p.peekTok
		p.peeked = false
	} else {
		p.tok = p.lx.next()
	}
	if p.lx.err != nil && p.tok.kind == tEOF {
		panic(bailout{p.lx.err})
	}
}

func (p *parser) peek() token {
	if !p.peeked {
		p.peekTok = p.lx.next()
		p.peeked = true
	}
	return p.peekTok
}

func (p *parser) failAt(t token, format string, args ...any) {
	if p.lx.err != nil && t.kind == tEOF {
		panic(bailout{p.lx.err})
	}
	panic(bailout{&SyntaxError{Line: int(t.line), Col: int(t.col), Msg: fmt.Sprintf(format, args...)}})
}

func (p *parser) fail(format string, args ...any) { p.failAt(p.tok, format, args...) }

func describe(t token) string {
	if t.kind == tEOF {
		return "end of input"
	}
	return strconv.Quote(t.text)
}

func (p *parser) isPunct(s string) bool { return p.tok.kind == tPunct && p.tok.text == s }

func (p *parser) accept(s string) bool {
	if p.isPunct(s) {
		p.advance()
		return true
	}
	return false
}

func (p *parser) expect(s string) {
	if !p.accept(s) {
		p.fail("expected %q, found %s", s, describe(p.tok))
	}
}

func (p *parser) expectIdent(what string) string {
	if p.tok.kind != tIdent {
		p.fail("expected %s, found %s", what, describe(p.tok))
	}
	s := p.tok.text
	p.advance()
	return s
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxNesting {
		p.fail("nesting deeper than %d", maxNesting)
	}
}

func (p *parser) leave() { p.depth-- }

func (p *parser) module() (m *Module, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			m, err = nil, b.err
		}
	}()
	p.advance()
	m = &Module{}
	seen := map[string]bool{}
	for p.tok.kind != tEOF {
		t := p.tok
		if t.kind != tDot {
			p.fail("expected a directive, found %s", describe(t))
		}
		switch t.text {
		case ".version", ".target", ".address_size":
			if seen[t.text] {
				p.fail("duplicate %s", t.text)
			}
			seen[t.text] = true
			p.advance()
			switch t.text {
			case ".version":
				if p.tok.kind != tFloat && p.tok.kind != tInt || !isVersion(p.tok.text) {
					p.fail("expected a version number, found %s", describe(p.tok))
				}
				m.Version = p.tok.text
				p.advance()
			case ".target":
				for {
					m.Target = append(m.Target, p.expectIdent("a target"))
					if !p.accept(",") {
						break
					}
				}
			case ".address_size":
				n := p.intLit()
				if n != 32 && n != 64 {
					p.failAt(p.prev, "address size must be 32 or 64, not %d", n)
				}
				m.AddressSize = int(n)
			}
		case ".section":
			m.Items = append(m.Items, p.section())
		default:
			m.Items = append(m.Items, p.topLevel()...)
		}
	}
	return m, nil
}

// isVersion reports whether s is "major.minor".
func isVersion(s string) bool {
	i := strings.IndexByte(s, '.')
	if i <= 0 || i == len(s)-1 {
		return false
	}
	for j := 0; j < len(s); j++ {
		if j != i && !isDigit(s[j]) {
			return false
		}
	}
	return true
}

// topLevel parses a function, a module-scope variable or a directive.
func (p *parser) topLevel() []Item {
	link, hasLink := parseLinkage(p.tok.text)
	if hasLink {
		p.advance()
		if p.tok.kind != tDot {
			p.fail("expected a declaration after %s, found %s", link, describe(p.tok))
		}
	}
	switch p.tok.text {
	case ".entry", ".func":
		return []Item{p.function(link)}
	}
	if _, ok := ParseStateSpace(p.tok.text); ok {
		vars := p.varDecl(link, false)
		items := make([]Item, len(vars))
		for i, v := range vars {
			items[i] = v
		}
		return items
	}
	if hasLink {
		p.fail("expected .entry, .func or a variable after %s, found %s", link, describe(p.tok))
	}
	return []Item{p.directive(false)}
}

// function parses ".entry name(params) directives { body }" and ".func".
func (p *parser) function(link Linkage) *Function {
	f := &Function{Linkage: link, Entry: p.tok.text == ".entry", Line: int(p.tok.line)}
	p.advance()
	for p.tok.kind == tDot && p.tok.text == ".attribute" {
		f.Attrs = append(f.Attrs, p.attributes()...)
	}
	if !f.Entry && p.isPunct("(") {
		f.Returns = p.paramList()
	}
	f.Name = p.expectIdent("a function name")
	if p.isPunct("(") {
		f.Params = p.paramList()
	}
	for p.tok.kind == tDot {
		f.Directives = append(f.Directives, p.directive(true))
	}
	if p.accept(";") {
		return f
	}
	if !p.isPunct("{") {
		p.fail("expected a function body or ';', found %s", describe(p.tok))
	}
	p.pushScope()
	for _, v := range f.Params {
		p.declare(v)
	}
	for _, v := range f.Returns {
		p.declare(v)
	}
	f.Body = p.block()
	p.popScope()
	return f
}

// paramList parses "( decl, decl, ... )".
func (p *parser) paramList() []*Var {
	p.expect("(")
	var vs []*Var
	if p.accept(")") {
		return vs
	}
	for {
		if p.tok.kind != tDot {
			p.fail("expected a parameter declaration, found %s", describe(p.tok))
		}
		vs = append(vs, p.varDecl(LinkNone, true)...)
		if p.accept(")") {
			return vs
		}
		p.expect(",")
	}
}

// attributes parses ".attribute(.managed, .unified(1, 2))".
func (p *parser) attributes() []Attribute {
	p.advance()
	p.expect("(")
	var as []Attribute
	for {
		if p.tok.kind != tDot {
			p.fail("expected an attribute, found %s", describe(p.tok))
		}
		a := Attribute{Name: p.tok.text}
		p.advance()
		if p.accept("(") {
			if !p.isPunct(")") {
				for {
					a.Args = append(a.Args, p.operand())
					if !p.accept(",") {
						break
					}
				}
			}
			p.expect(")")
		}
		as = append(as, a)
		if p.accept(")") {
			return as
		}
		p.expect(",")
	}
}

// varDecl parses a variable declaration starting at its state space. A
// parameter (param) has exactly one declarator and no ';'.
func (p *parser) varDecl(link Linkage, param bool) []*Var {
	space, _ := ParseStateSpace(p.tok.text)
	if space == SpaceNone {
		p.fail("expected a state space, found %s", describe(p.tok))
	}
	p.advance()
	tmpl := Var{Linkage: link, Space: space}
	for p.tok.kind == tDot {
		t := p.tok
		switch {
		case t.text == ".align":
			p.advance()
			n := p.intLit()
			if n <= 0 || n > 1<<20 || n&(n-1) != 0 {
				p.failAt(p.prev, "alignment must be a power of two, not %d", n)
			}
			if tmpl.Ptr != nil {
				tmpl.Ptr.Align = int(n)
			} else {
				if tmpl.Align != 0 {
					p.failAt(t, "duplicate .align")
				}
				tmpl.Align = int(n)
			}
			continue
		case t.text == ".v2" || t.text == ".v4" || t.text == ".v8":
			if tmpl.Vector != 0 {
				p.fail("duplicate vector width")
			}
			tmpl.Vector = int(t.text[2] - '0')
		case t.text == ".attribute":
			tmpl.Attrs = append(tmpl.Attrs, p.attributes()...)
			continue
		case t.text == ".ptr":
			if tmpl.Ptr != nil {
				p.fail("duplicate .ptr")
			}
			tmpl.Ptr = &PtrAttr{}
		default:
			if ty, ok := ParseType(t.text); ok {
				if tmpl.Type != TypeNone {
					p.fail("duplicate type %s", t.text)
				}
				tmpl.Type = ty
				break
			}
			if sp, ok := ParseStateSpace(t.text); ok && tmpl.Ptr != nil && tmpl.Ptr.Space == SpaceNone {
				tmpl.Ptr.Space = sp
				break
			}
			p.fail("unexpected %s in a declaration", t.text)
		}
		p.advance()
	}
	if tmpl.Type == TypeNone {
		p.fail("expected a type in the declaration, found %s", describe(p.tok))
	}
	var vs []*Var
	for {
		v := tmpl
		if tmpl.Attrs != nil {
			v.Attrs = append([]Attribute(nil), tmpl.Attrs...)
		}
		if tmpl.Ptr != nil {
			pa := *tmpl.Ptr
			v.Ptr = &pa
		}
		v.Name = p.expectIdent("a variable name")
		if p.accept("<") {
			n := p.intLit()
			if n <= 0 || n > 1<<24 {
				p.failAt(p.prev, "register count out of range: %d", n)
			}
			v.Count = int(n)
			p.expect(">")
		}
		for p.accept("[") {
			if p.accept("]") {
				v.Dims = append(v.Dims, UnsizedDim)
				continue
			}
			n := p.intLit()
			if n < 0 || n > 1<<40 {
				p.failAt(p.prev, "array dimension out of range: %d", n)
			}
			v.Dims = append(v.Dims, int(n))
			p.expect("]")
		}
		if p.accept("=") {
			v.Init = p.initializer()
		}
		vs = append(vs, &v)
		p.declare(&v)
		if param {
			return vs
		}
		if p.accept(";") {
			return vs
		}
		p.expect(",")
	}
}

// initializer parses "{...}" lists (nested) or a constant operand.
func (p *parser) initializer() Operand {
	if p.isPunct("{") {
		p.enter()
		defer p.leave()
		p.advance()
		vec := &Vector{}
		if p.accept("}") {
			return vec
		}
		for {
			e := p.initializer()
			if p.accept("=") {
				// A sampler or texture field: "{ filter_mode = linear }".
				e = &Expr{Op: "=", X: e, Y: p.initializer()}
			}
			vec.Elems = append(vec.Elems, e)
			if p.accept("}") {
				return vec
			}
			p.expect(",")
		}
	}
	return p.operand()
}

// intLit parses an optionally negative integer literal.
func (p *parser) intLit() int64 {
	neg := p.accept("-")
	if p.tok.kind != tInt {
		p.fail("expected an integer, found %s", describe(p.tok))
	}
	n := p.intValue(p.tok)
	p.advance()
	if neg {
		return -n.Value
	}
	return n.Value
}

func (p *parser) intValue(t token) *Int {
	s := t.text
	n := &Int{}
	if strings.HasSuffix(s, "U") {
		n.Unsigned = true
		s = s[:len(s)-1]
	}
	base := 10
	switch {
	case len(s) > 1 && (s[1] == 'x' || s[1] == 'X'):
		base, s, n.Hex = 16, s[2:], true
	case len(s) > 1 && (s[1] == 'b' || s[1] == 'B'):
		base, s = 2, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	u, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			p.failAt(t, "integer %s does not fit in 64 bits", t.text)
		}
		p.failAt(t, "malformed integer %s", t.text)
	}
	n.Value = int64(u)
	return n
}

func (p *parser) floatValue(t token) *Float {
	s := t.text
	if len(s) > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D') {
		u, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			p.failAt(t, "malformed float %s", s)
		}
		return &Float{Bits: u, Single: s[1] == 'f' || s[1] == 'F'}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		p.failAt(t, "malformed float %s", s)
	}
	// A decimal literal too large for a double is infinity, which has no
	// decimal spelling: keep it as hex bits.
	return &Float{Bits: math.Float64bits(v), Decimal: !math.IsInf(v, 0)}
}

// directive parses a directive generically. In a function header (header),
// only .pragma consumes a ';': the one after other directives ends the
// declaration.
func (p *parser) directive(header bool) *Directive {
	d := &Directive{Name: p.tok.text}
	dt := p.tok
	p.advance()
	if d.Name == ".entry" || d.Name == ".func" || d.Name == ".callprototype" || d.Name == ".section" {
		p.failAt(dt, "misplaced %s", d.Name)
	}
	if _, ok := ParseStateSpace(d.Name); ok {
		p.failAt(dt, "misplaced %s", d.Name)
	}
	if _, ok := ParseType(d.Name); ok {
		p.failAt(dt, "misplaced %s", d.Name)
	}
	d.Args = p.directiveArgs(dt)
	if (!header || d.Name == ".pragma") && p.accept(";") {
		d.Semicolon = true
	}
	// The printer ends these with ';' whether or not the source did.
	d.Semicolon = d.Semicolon || semicolonDirective[d.Name]
	return d
}

// semicolonDirective lists directives that PTX ends with ';'.
var semicolonDirective = map[string]bool{
	".pragma": true, ".alias": true, ".branchtargets": true, ".calltargets": true,
}

// directiveArgs parses comma-separated groups of space-separated operands up to
// a ';' (not consumed) or the end of the line.
func (p *parser) directiveArgs(dt token) [][]Operand {
	var groups [][]Operand
	var cur []Operand
	line := dt.line
	afterComma := false
	for {
		t := p.tok
		if t.kind == tEOF || t.kind == tDot || p.isPunct(";") || p.isPunct("{") || p.isPunct("}") {
			break
		}
		if t.line != line && !afterComma {
			break
		}
		if t.kind == tIdent && p.peek().kind == tPunct && p.peek().text == ":" {
			break // a label on the next statement
		}
		if p.isPunct(",") {
			if len(cur) == 0 {
				p.fail("unexpected ','")
			}
			groups = append(groups, cur)
			cur = nil
			afterComma = true
			p.advance()
			continue
		}
		afterComma = false
		switch t.kind {
		case tInt, tFloat, tString, tIdent:
		default:
			if !p.isPunct("-") && !p.isPunct("(") {
				p.fail("unexpected %s in %s", describe(t), dt.text)
			}
		}
		cur = append(cur, p.operand())
		line = p.prev.line
	}
	if afterComma {
		p.fail("expected an operand after ','")
	}
	if cur != nil {
		groups = append(groups, cur)
	}
	return groups
}

// section parses ".section .debug_xxx { labels and data }".
func (p *parser) section() *Section {
	p.advance()
	if p.tok.kind != tDot && p.tok.kind != tIdent {
		p.fail("expected a section name, found %s", describe(p.tok))
	}
	s := &Section{Name: p.tok.text}
	p.advance()
	p.expect("{")
	for !p.accept("}") {
		switch {
		case p.tok.kind == tIdent:
			name := p.tok.text
			p.advance()
			p.expect(":")
			s.Body = append(s.Body, &Label{Name: name})
		case p.tok.kind == tDot:
			ty, ok := ParseType(p.tok.text)
			if !ok {
				p.fail("expected a data directive in section %s, found %s", s.Name, describe(p.tok))
			}
			p.advance()
			d := &Data{Type: ty}
			for {
				d.Values = append(d.Values, p.dataValue())
				if !p.accept(",") {
					break
				}
			}
			s.Body = append(s.Body, d)
		default:
			p.fail("expected a label or data in section %s, found %s", s.Name, describe(p.tok))
		}
	}
	return s
}

// dataValue parses a section data value; a dotted name (".debug_abbrev")
// refers to a section.
func (p *parser) dataValue() Operand {
	if p.tok.kind == tDot {
		s := &Symbol{Name: p.tok.text}
		p.advance()
		return p.symOffset(s)
	}
	return p.operand()
}

func (p *parser) pushScope() { p.scopes = append(p.scopes, nil) }
func (p *parser) popScope()  { p.scopes = p.scopes[:len(p.scopes)-1] }

// declare records a register declared without "%" so its uses become *Reg.
func (p *parser) declare(v *Var) {
	if v.Space != SpaceReg || len(p.scopes) == 0 || strings.HasPrefix(v.Name, "%") {
		return
	}
	top := &p.scopes[len(p.scopes)-1]
	if *top == nil {
		*top = map[string]int{}
	}
	(*top)[v.Name] = v.Count
}

// isReg reports whether a bare name is a register declared in an open scope
// (a family "r<4>" declares r0 … r3).
func (p *parser) isReg(name string) bool {
	for i := len(p.scopes) - 1; i >= 0; i-- {
		sc := p.scopes[i]
		if sc == nil {
			continue
		}
		if n, ok := sc[name]; ok && n == 0 {
			return true
		}
		j := len(name)
		for j > 0 && isDigit(name[j-1]) {
			j--
		}
		if j < len(name) && j > 0 {
			if n, ok := sc[name[:j]]; ok && n > 0 {
				if k, err := strconv.Atoi(name[j:]); err == nil && k < n && strconv.Itoa(k) == name[j:] {
					return true
				}
			}
		}
	}
	return false
}

// block parses "{ statements }".
func (p *parser) block() *Block {
	p.enter()
	defer p.leave()
	p.expect("{")
	b := &Block{}
	for !p.accept("}") {
		if p.tok.kind == tEOF {
			p.fail("unexpected end of input in a block")
		}
		b.Stmts = p.statement(b.Stmts)
	}
	return b
}

// statement parses one statement and appends it (or them) to ss.
func (p *parser) statement(ss []Stmt) []Stmt {
	t := p.tok
	switch t.kind {
	case tPunct:
		switch t.text {
		case "{":
			p.pushScope()
			b := p.block()
			p.popScope()
			return append(ss, b)
		case "@":
			return append(ss, p.instruction())
		}
		p.fail("unexpected %s", describe(t))
	case tDot:
		if _, ok := ParseStateSpace(t.text); ok {
			for _, v := range p.varDecl(LinkNone, false) {
				ss = append(ss, v)
			}
			return ss
		}
		return append(ss, p.directive(false))
	case tIdent:
		if nt := p.peek(); nt.kind == tPunct && nt.text == ":" {
			p.advance()
			p.advance()
			if p.tok.kind == tDot {
				switch p.tok.text {
				case ".callprototype":
					return append(ss, p.prototype(t.text))
				case ".branchtargets", ".calltargets":
					d := p.directive(false)
					d.Label = t.text
					return append(ss, d)
				}
			}
			return append(ss, &Label{Name: t.text})
		}
		return append(ss, p.instruction())
	}
	p.fail("expected a statement, found %s", describe(t))
	return nil
}

// prototype parses the rest of "name: .callprototype (rets) _ (params) ;".
func (p *parser) prototype(name string) *Prototype {
	p.advance()
	pr := &Prototype{Name: name}
	if p.isPunct("(") {
		pr.Returns = p.paramList()
	}
	if p.tok.kind != tIdent || p.tok.text != "_" {
		p.fail("expected '_' in .callprototype, found %s", describe(p.tok))
	}
	p.advance()
	if p.isPunct("(") {
		pr.Params = p.paramList()
	}
	for p.tok.kind == tDot {
		pr.Directives = append(pr.Directives, p.directive(true))
	}
	p.expect(";")
	return pr
}

// instruction parses "[@[!]p] opcode.mods operands;".
func (p *parser) instruction() *Instruction {
	in := &Instruction{Line: int(p.tok.line)}
	if p.accept("@") {
		g := &Guard{Negated: p.accept("!")}
		if p.tok.kind != tIdent || p.tok.text == "_" {
			p.fail("expected a predicate register, found %s", describe(p.tok))
		}
		g.Reg = &Reg{Name: p.tok.text}
		p.advance()
		in.Guard = g
	}
	if p.tok.kind != tIdent || !(p.tok.text[0] >= 'a' && p.tok.text[0] <= 'z' || p.tok.text[0] >= 'A' && p.tok.text[0] <= 'Z') {
		p.fail("expected an instruction, found %s", describe(p.tok))
	}
	in.Opcode, in.Mods = splitName(p.tok.text)
	if !knownOpcodes[in.Opcode] {
		p.fail("unknown instruction %q", in.Opcode)
	}
	p.advance()
	if p.accept(";") {
		return in
	}
	in.Operands = make([]Operand, 0, 4)
	for {
		in.Operands = append(in.Operands, p.operand())
		if p.accept(";") {
			return in
		}
		if !p.isPunct(",") {
			p.fail("expected ',' or ';' after an operand, found %s", describe(p.tok))
		}
		p.advance()
	}
}

// operand parses an operand: an expression, optionally "|" a second one.
func (p *parser) operand() Operand {
	x := p.expr(0)
	if p.accept("|") {
		return &Pair{First: x, Second: p.expr(0)}
	}
	return x
}

// Binary operator precedence, as in C; "|" is a pair separator outside
// parentheses, so it only binds inside them (allowOr).
var binPrec = map[string]int{
	"*": 10, "/": 10, "%": 10,
	"+": 9, "-": 9,
	"<<": 8, ">>": 8,
	"&": 5, "^": 4, "|": 3,
}

func (p *parser) expr(minPrec int) Operand {
	return p.exprOr(minPrec, false)
}

func (p *parser) exprOr(minPrec int, allowOr bool) Operand {
	p.enter()
	defer p.leave()
	x := p.unary(allowOr)
	for p.tok.kind == tPunct {
		op := p.tok.text
		prec, ok := binPrec[op]
		if !ok || prec < minPrec || op == "|" && !allowOr {
			break
		}
		p.advance()
		y := p.exprOr(prec+1, allowOr)
		if s, ok := x.(*Symbol); ok && (op == "+" || op == "-") {
			if n, ok := y.(*Int); ok {
				if op == "+" {
					s.Offset += n.Value
				} else {
					s.Offset -= n.Value
				}
				continue
			}
		}
		x = &Expr{Op: op, X: x, Y: y}
	}
	return x
}

func (p *parser) unary(allowOr bool) Operand {
	p.enter()
	defer p.leave()
	t := p.tok
	switch t.kind {
	case tInt:
		p.advance()
		return p.intValue(t)
	case tFloat:
		p.advance()
		return p.floatValue(t)
	case tString:
		p.advance()
		return &String{Value: t.text[1 : len(t.text)-1]}
	case tIdent:
		p.advance()
		if t.text == "_" {
			return &Sink{}
		}
		if t.text[0] == '%' || p.isReg(t.text) {
			return &Reg{Name: t.text}
		}
		if t.text == "generic" && p.isPunct("(") {
			p.advance()
			name := p.expectIdent("a variable name")
			p.expect(")")
			return &Symbol{Name: name, Generic: true}
		}
		return &Symbol{Name: t.text}
	case tPunct:
		switch t.text {
		case "-":
			p.advance()
			x := p.unary(allowOr)
			switch x := x.(type) {
			case *Int:
				x.Value = -x.Value
				return x
			case *Float:
				if x.Single {
					x.Bits ^= 1 << 31
				} else {
					x.Bits ^= 1 << 63
				}
				return x
			}
			return &Expr{Op: "-", X: x}
		case "~":
			p.advance()
			return &Expr{Op: "~", X: p.unary(allowOr)}
		case "!":
			p.advance()
			return &Not{X: p.unary(allowOr)}
		case "[":
			return p.address()
		case "{":
			p.advance()
			v := &Vector{}
			if p.accept("}") {
				return v
			}
			for {
				v.Elems = append(v.Elems, p.operand())
				if p.accept("}") {
					return v
				}
				p.expect(",")
			}
		case "(":
			p.advance()
			l := &Paren{}
			if p.accept(")") {
				return l
			}
			for {
				l.Elems = append(l.Elems, p.exprOr(0, true))
				if p.accept(")") {
					return l
				}
				p.expect(",")
			}
		}
	}
	p.fail("expected an operand, found %s", describe(t))
	return nil
}

// address parses "[base+off]" or a bracketed list "[a, b, {c, d}]".
func (p *parser) address() Operand {
	p.expect("[")
	first := p.operand()
	if p.isPunct(",") {
		br := &Bracket{Elems: []Operand{first}}
		for p.accept(",") {
			br.Elems = append(br.Elems, p.operand())
		}
		p.expect("]")
		return br
	}
	p.expect("]")
	a := &Address{}
	switch x := first.(type) {
	case *Reg:
		a.Base = x
	case *Symbol:
		if x.Generic {
			a.Base = x
			break
		}
		a.Base, a.Offset = &Symbol{Name: x.Name}, x.Offset
	case *Int:
		a.Offset = x.Value
	case *Expr:
		// [%rd1+8], [%rd1+-8], [%rd1-8]: the expression parser sees a
		// register plus a constant.
		if r, ok := x.X.(*Reg); ok && (x.Op == "+" || x.Op == "-") {
			if n, ok := x.Y.(*Int); ok {
				a.Base, a.Offset = r, n.Value
				if x.Op == "-" {
					a.Offset = -n.Value
				}
				break
			}
		}
		return &Bracket{Elems: []Operand{first}}
	default:
		return &Bracket{Elems: []Operand{first}}
	}
	return a
}

// symOffset folds "+n" / "-n" after a symbol into its offset.
func (p *parser) symOffset(s *Symbol) Operand {
	for p.isPunct("+") || p.isPunct("-") {
		neg := p.tok.text == "-"
		p.advance()
		n := p.intLit()
		if neg {
			n = -n
		}
		s.Offset += n
	}
	return s
}

// knownOpcodes lists the first dotted component of every PTX instruction of
// ISA 9.0 (and the sm_100 families), so that garbage such as a misspelt
// directive is not taken for an instruction. Their modifiers are not checked.
var knownOpcodes = func() map[string]bool {
	m := map[string]bool{}
	for _, op := range strings.Fields(`
		abs activemask add addc alloca and applypriority atom bar barrier bfe bfi
		bfind bmsk bra brev brkpt brx call clusterlaunchcontrol clz cnot copysign
		cos cp createpolicy cvt cvta discard div dp2a dp4a elect ex2 exit fence
		fma fns getctarank griddepcontrol isspacep istypep ld ldmatrix ldu lg2
		lop3 mad mad24 madc mapa match max mbarrier membar min mma mov movmatrix
		mul mul24 multimem nanosleep neg not or pmevent popc prefetch prefetchu
		prmt rcp red redux rem ret rsqrt sad selp set setmaxnreg setp shf shfl
		shl shr sin slct sqrt st stackrestore stacksave stmatrix sub subc suld
		suq sured sust szext tanh tcgen05 tensormap testp tex tld4 trap txq
		vabsdiff vabsdiff2 vabsdiff4 vadd vadd2 vadd4 vavrg2 vavrg4 vmad vmax
		vmax2 vmax4 vmin vmin2 vmin4 vote vset vset2 vset4 vshl vshr vsub vsub2
		vsub4 wgmma wmma xor`) {
		m[op] = true
	}
	return m
}()
