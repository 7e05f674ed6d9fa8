package mangle

import (
	v1 "github.com/gpuos/gpuos/api/v1"
)

// Errors returned by Parse.
var (
	// ErrNotMangled: the name does not start with _Z (an extern "C" name).
	ErrNotMangled = v1.Errorf(v1.CodeInvalidArgument, "not an Itanium-mangled name")
	// ErrUncertain: the name starts with _Z but this package cannot say with
	// certainty what its parameters are.
	ErrUncertain = v1.Errorf(v1.CodeUnsupported, "mangled name not understood with certainty")
)

// Kind is what a parameter's type says about the value it holds.
type Kind uint8

const (
	// Unknown: a type the grammar allows but whose nature this package does
	// not judge (a vendor-extended type or qualifier).
	Unknown Kind = iota
	// Address: a pointer, reference, pointer to member, function or array
	// type (the last two decay to pointers as parameters).
	Address
	// Compound: a class, struct, union or enum by value, a template
	// parameter, a substitution, a vector or complex type: it may be or
	// contain a pointer.
	Compound
	// Integer: a builtin integer type (bool, the char types, short … __int128),
	// CV-qualified or not. Code can still carry an address in one (intptr_t).
	Integer
	// Floating: a builtin floating-point type (float, double, long double,
	// __float128, half, decimal and _FloatN types).
	Floating
	// Null: std::nullptr_t, which holds only the null pointer.
	Null
)

var kindNames = [...]string{"unknown", "address", "compound", "integer", "floating", "null"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(?)"
}

// Param is one parameter of a mangled function.
type Param struct {
	Kind Kind
	// Pack: a pack expansion (Dp), which stands for zero or more parameters
	// of the kind; its Kind is that of the pattern.
	Pack bool
}

// Signature is what a mangled name says about its function's parameters.
type Signature struct {
	Params []Param // in order; empty for f(void)
}

// Parse reads a mangled function name. It returns ErrNotMangled for a name
// that does not start with _Z and ErrUncertain for one it cannot parse with
// certainty, including a name of something that is no function (a variable).
func Parse(name string) (Signature, error) {
	if len(name) < 2 || name[0] != '_' || name[1] != 'Z' {
		return Signature{}, ErrNotMangled
	}
	p := parser{s: name, i: 2}
	params, ok := p.encoding()
	if !ok || p.i != len(p.s) {
		return Signature{}, ErrUncertain
	}
	return Signature{Params: params}, nil
}

// Layout returns a kind per parameter for a function the driver sees with n
// parameters: the signature's own when it has n, with a single pack
// expansion standing for as many as make up n. ok is false when the two
// cannot be lined up with certainty (counts that disagree, two packs).
func (s Signature) Layout(n int) (kinds []Kind, ok bool) {
	pack := -1
	for i, p := range s.Params {
		if p.Pack {
			if pack >= 0 {
				return nil, false
			}
			pack = i
		}
	}
	fixed := len(s.Params)
	if pack >= 0 {
		fixed--
	}
	if n < fixed || (pack < 0 && n != fixed) {
		return nil, false
	}
	kinds = make([]Kind, 0, n)
	for i, p := range s.Params {
		if i != pack {
			kinds = append(kinds, p.Kind)
			continue
		}
		for range n - fixed {
			kinds = append(kinds, p.Kind)
		}
	}
	return kinds, true
}

// maxDepth bounds the parser's recursion: no real kernel name nests deeper.
const maxDepth = 64

// parser is a recursive-descent reader of the mangling grammar; every method
// returns false, without advancing in a way the caller relies on, where the
// text is not what it can read with certainty.
type parser struct {
	s     string
	i     int
	depth int
}

func (p *parser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *parser) peek2() byte {
	if p.i+1 < len(p.s) {
		return p.s[p.i+1]
	}
	return 0
}

func (p *parser) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) enter() bool {
	p.depth++
	return p.depth <= maxDepth
}

func (p *parser) leave() { p.depth-- }

// kindVoid is void: a parameter list of its own (f(void)), a return type, or
// inside a pointer or template argument; never a parameter.
const kindVoid Kind = 255

// encoding: <name> <bare-function-type>. A template function's first type
// is its return type. The parameters run to the end of the text or to an E
// (an encoding inside a template argument's literal).
func (p *parser) encoding() ([]Param, bool) {
	if !p.enter() {
		return nil, false
	}
	defer p.leave()
	template, ok := p.name()
	if !ok {
		return nil, false
	}
	if template {
		if _, ok := p.typ(); !ok {
			return nil, false
		}
	}
	var params []Param
	void := false
	for p.i < len(p.s) && p.peek() != 'E' {
		pack := p.peek() == 'D' && p.peek2() == 'p'
		if pack {
			p.i += 2
		}
		k, ok := p.typ()
		if !ok {
			return nil, false
		}
		if pack && k != Address && k != Compound && k != Unknown {
			return nil, false // a pack's pattern names a template parameter: never a builtin
		}
		if k == kindVoid {
			if pack || void || len(params) > 0 {
				return nil, false
			}
			void = true
			continue
		}
		if void {
			return nil, false
		}
		params = append(params, Param{Kind: k, Pack: pack})
	}
	if !void && len(params) == 0 {
		return nil, false // a variable's name, or a truncated one
	}
	return params, true
}

// name reads a function's name; template says it ends in template arguments.
func (p *parser) name() (template bool, ok bool) {
	switch c := p.peek(); {
	case c == 'N':
		return p.nested()
	case c == 'L' || isDigit(c):
		p.eat('L') // internal linkage (GCC)
		if !p.sourceName() {
			return false, false
		}
	case c == 'S':
		std, ok := p.substitution()
		if !ok {
			return false, false
		}
		if std {
			if !p.sourceName() {
				return false, false
			}
		} else if p.peek() != 'I' {
			return false, false // a substitution is a function's name only as a template's
		}
	default:
		return false, false // local names (Z), operators, ctors and the rest
	}
	if p.peek() == 'I' {
		return true, p.templateArgs()
	}
	return false, true
}

// nested: N [CV-qualifiers] [ref-qualifier] <prefix components> E.
func (p *parser) nested() (template bool, ok bool) {
	p.i++ // N
	for p.peek() == 'r' || p.peek() == 'V' || p.peek() == 'K' {
		p.i++
	}
	if p.peek() == 'R' || p.peek() == 'O' {
		p.i++
	}
	n := 0
	for !p.eat('E') {
		template = false
		switch c := p.peek(); {
		case isDigit(c) || c == 'L':
			p.eat('L')
			if !p.sourceName() {
				return false, false
			}
		case c == 'S':
			if _, ok := p.substitution(); !ok {
				return false, false
			}
		case c == 'T':
			if !p.templateParam() {
				return false, false
			}
		case c == 'I':
			if n == 0 || !p.templateArgs() {
				return false, false
			}
			template = true
		case c == 'U':
			if !p.unnamed() {
				return false, false
			}
		default:
			return false, false // end of text, ctors, dtors, operators, decltype, local names
		}
		n++
	}
	return template, n > 0
}

// sourceName: <length> <identifier>, and any ABI tags (B <source-name>).
func (p *parser) sourceName() bool {
	n, ok := p.number()
	if !ok || n == 0 || n > len(p.s)-p.i {
		return false
	}
	for _, c := range []byte(p.s[p.i : p.i+n]) {
		if !isDigit(c) && !isUpper(c) && !isLower(c) && c != '_' && c != '$' && c != '.' {
			return false
		}
	}
	p.i += n
	for p.peek() == 'B' {
		p.i++
		if !isDigit(p.peek()) || !p.sourceName() {
			return false
		}
	}
	return true
}

// number reads a decimal length without a leading zero.
func (p *parser) number() (int, bool) {
	start := p.i
	n := 0
	for isDigit(p.peek()) {
		if n > len(p.s) {
			return 0, false
		}
		n = n*10 + int(p.peek()-'0')
		p.i++
	}
	if p.i == start || (p.s[start] == '0' && p.i-start > 1) {
		return 0, false
	}
	return n, true
}

// substitution: S_, S <seq-id> _, or one of the std abbreviations; std
// reports St, which a name must follow.
func (p *parser) substitution() (std bool, ok bool) {
	p.i++ // S
	switch c := p.peek(); {
	case c == 't':
		p.i++
		return true, true
	case c == 'a' || c == 'b' || c == 's' || c == 'i' || c == 'o' || c == 'd':
		p.i++
		return false, true
	case c == '_':
		p.i++
		return false, true
	case isDigit(c) || isUpper(c):
		for isDigit(p.peek()) || isUpper(p.peek()) {
			p.i++
		}
		return false, p.eat('_')
	}
	return false, false
}

// templateParam: T_ or T <number> _.
func (p *parser) templateParam() bool {
	p.i++ // T
	for isDigit(p.peek()) {
		p.i++
	}
	return p.eat('_')
}

// unnamed: an unnamed type (Ut [n] _) or a closure type (Ul <params> E [n] _).
func (p *parser) unnamed() bool {
	p.i++ // U
	switch {
	case p.eat('t'):
	case p.eat('l'):
		if !p.enter() {
			return false
		}
		defer p.leave()
		n := 0
		for !p.eat('E') {
			if p.i >= len(p.s) {
				return false
			}
			if _, ok := p.typ(); !ok {
				return false
			}
			n++
		}
		if n == 0 {
			return false
		}
	default:
		return false
	}
	for isDigit(p.peek()) {
		p.i++
	}
	return p.eat('_')
}

// templateArgs: I <template-arg>+ E.
func (p *parser) templateArgs() bool {
	if !p.enter() {
		return false
	}
	defer p.leave()
	p.i++ // I
	n := 0
	for !p.eat('E') {
		if p.i >= len(p.s) || !p.templateArg() {
			return false
		}
		n++
	}
	return n > 0
}

func (p *parser) templateArg() bool {
	switch p.peek() {
	case 'L':
		return p.literal()
	case 'J': // an argument pack
		if !p.enter() {
			return false
		}
		defer p.leave()
		p.i++
		for !p.eat('E') {
			if p.i >= len(p.s) || !p.templateArg() {
				return false
			}
		}
		return true
	case 'X':
		return false // an expression: not read
	}
	_, ok := p.typ()
	return ok
}

// literal: L <type> <value> E, or L _Z <encoding> E.
func (p *parser) literal() bool {
	p.i++ // L
	if p.peek() == '_' && p.peek2() == 'Z' {
		p.i += 2
		if _, ok := p.encoding(); !ok {
			return false
		}
		return p.eat('E')
	}
	if _, ok := p.typ(); !ok {
		return false
	}
	p.eat('n')
	for isDigit(p.peek()) || (p.peek() >= 'a' && p.peek() <= 'f') {
		p.i++
	}
	return p.eat('E')
}

// builtin maps a one-letter builtin type to its kind.
var builtin = [256]Kind{
	'b': Integer, 'c': Integer, 'a': Integer, 'h': Integer, 's': Integer, 't': Integer,
	'i': Integer, 'j': Integer, 'l': Integer, 'm': Integer, 'x': Integer, 'y': Integer,
	'n': Integer, 'o': Integer, 'w': Integer,
	'f': Floating, 'd': Floating, 'e': Floating, 'g': Floating,
	'v': kindVoid,
}

// typ reads one type and returns its kind.
func (p *parser) typ() (Kind, bool) {
	if !p.enter() {
		return 0, false
	}
	defer p.leave()
	c := p.peek()
	if k := builtin[c]; k != Unknown {
		p.i++
		return k, true
	}
	switch c {
	case 'r', 'V', 'K': // CV-qualifiers: the kind of what they qualify
		p.i++
		k, ok := p.typ()
		return k, ok && k != kindVoid
	case 'P', 'R', 'O':
		p.i++
		_, ok := p.typ()
		return Address, ok
	case 'M':
		p.i++
		if _, ok := p.typ(); !ok {
			return 0, false
		}
		_, ok := p.typ()
		return Address, ok
	case 'F':
		return Address, p.function()
	case 'A':
		return Address, p.array()
	case 'C', 'G': // complex, imaginary
		p.i++
		k, ok := p.typ()
		return Compound, ok && k != kindVoid
	case 'D':
		return p.dtype()
	case 'T':
		if n := p.peek2(); n != '_' && !isDigit(n) {
			return 0, false // Ts/Tu/Te elaborated names and C++20 template parameter declarations: not read
		}
		if !p.templateParam() {
			return 0, false
		}
		if p.peek() == 'I' && !p.templateArgs() {
			return 0, false
		}
		return Compound, true
	case 'S':
		std, ok := p.substitution()
		if !ok || (std && !p.sourceName()) {
			return 0, false
		}
		if p.peek() == 'I' && !p.templateArgs() {
			return 0, false
		}
		return Compound, true
	case 'N':
		_, ok := p.nested()
		return Compound, ok
	case 'u': // a vendor-extended type
		p.i++
		if !p.sourceName() || (p.peek() == 'I' && !p.templateArgs()) {
			return 0, false
		}
		return Unknown, true
	case 'U': // a vendor qualifier (an address space): what it qualifies is not judged
		p.i++
		if !p.sourceName() || (p.peek() == 'I' && !p.templateArgs()) {
			return 0, false
		}
		k, ok := p.typ()
		return Unknown, ok && k != kindVoid
	}
	if isDigit(c) {
		if !p.sourceName() || (p.peek() == 'I' && !p.templateArgs()) {
			return 0, false
		}
		return Compound, true
	}
	return 0, false // z (varargs), Z (local names) and the rest
}

// dtype reads the builtin and other types that start with D.
func (p *parser) dtype() (Kind, bool) {
	p.i++ // D
	c := p.peek()
	p.i++
	switch c {
	case 'd', 'e', 'f', 'h':
		return Floating, true
	case 's', 'i', 'u':
		return Integer, true
	case 'n':
		return Null, true
	case 'F': // _FloatN (DF16_), std::bfloat16_t (DF16b), _FloatNx (DF32x)
		if _, ok := p.number(); !ok {
			return 0, false
		}
		if p.eat('_') || p.eat('b') || p.eat('x') {
			return Floating, true
		}
		return 0, false
	case 'B', 'U': // _BitInt(N), unsigned _BitInt(N)
		if _, ok := p.number(); !ok {
			return 0, false
		}
		return Integer, p.eat('_')
	case 'v': // a vector of a number of elements
		if _, ok := p.number(); !ok || !p.eat('_') {
			return 0, false
		}
		k, ok := p.typ()
		return Compound, ok && k != kindVoid
	}
	return 0, false // auto, decltype, exception specifications, packs outside a parameter list
}

// function: F [Y] <return type> <parameter types> [ref-qualifier] E.
func (p *parser) function() bool {
	p.i++ // F
	p.eat('Y')
	if _, ok := p.typ(); !ok { // the return type
		return false
	}
	n := 0
	for !p.eat('E') {
		if (p.peek() == 'R' || p.peek() == 'O') && p.peek2() == 'E' {
			p.i++
			continue
		}
		if p.i >= len(p.s) {
			return false
		}
		if p.peek() == 'D' && p.peek2() == 'p' {
			p.i += 2
		}
		if _, ok := p.typ(); !ok {
			return false
		}
		n++
	}
	return n > 0
}

// array: A <number> _ <type>, or A _ <type>; a bound given by an expression
// is not read.
func (p *parser) array() bool {
	p.i++ // A
	if !p.eat('_') {
		if _, ok := p.number(); !ok || !p.eat('_') {
			return false
		}
	}
	k, ok := p.typ()
	return ok && k != kindVoid
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
