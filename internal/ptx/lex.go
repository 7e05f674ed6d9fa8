package ptx

import "fmt"

// tokKind is the lexical class of a token.
type tokKind uint8

const (
	tEOF    tokKind = iota
	tIdent          // ld.global.f32, %tid.x, $L__BB0_2, _Z3foo, sm_90a, _
	tDot            // .reg, .b32, .shared::cta, .debug_info
	tInt            // 42, 0x2A, 052, 0b101010, 42U
	tFloat          // 0f3F800000, 0d3FF0000000000000, 1.5, 2e10
	tString         // "text"
	tPunct          // one of , ; : { } [ ] ( ) + - ! | @ < > = ~ * / % & ^ and << >>
)

func (k tokKind) String() string {
	switch k {
	case tEOF:
		return "end of input"
	case tIdent:
		return "identifier"
	case tDot:
		return "directive"
	case tInt:
		return "integer"
	case tFloat:
		return "float"
	case tString:
		return "string"
	}
	return "punctuation"
}

type token struct {
	kind tokKind
	text string // a substring of the source
	line int32
	col  int32
}

// lexer turns PTX text into tokens on demand. Token texts are substrings of
// src, so lexing allocates nothing per token.
type lexer struct {
	src       string
	pos       int
	line      int32
	lineStart int
	err       *SyntaxError
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' || c == '%'
}

func isFollow(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (lx *lexer) fail(line int32, col int32, format string, args ...any) token {
	if lx.err == nil {
		lx.err = &SyntaxError{Line: int(line), Col: int(col), Msg: fmt.Sprintf(format, args...)}
	}
	lx.pos = len(lx.src)
	return token{kind: tEOF, line: line, col: col}
}

// skip moves past whitespace and comments.
func (lx *lexer) skip() {
	s := lx.src
	for lx.pos < len(s) {
		c := s[lx.pos]
		switch {
		case c == '\n':
			lx.pos++
			lx.line++
			lx.lineStart = lx.pos
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			lx.pos++
		case c == '/' && lx.pos+1 < len(s) && s[lx.pos+1] == '/':
			for lx.pos < len(s) && s[lx.pos] != '\n' {
				lx.pos++
			}
		case c == '/' && lx.pos+1 < len(s) && s[lx.pos+1] == '*':
			line, col := lx.line, int32(lx.pos-lx.lineStart+1)
			lx.pos += 2
			for {
				if lx.pos+1 >= len(s) {
					lx.fail(line, col, "unterminated comment")
					return
				}
				if s[lx.pos] == '*' && s[lx.pos+1] == '/' {
					lx.pos += 2
					break
				}
				if s[lx.pos] == '\n' {
					lx.line++
					lx.lineStart = lx.pos + 1
				}
				lx.pos++
			}
		default:
			return
		}
	}
}

// dotted extends a word over ".part" suffixes (".global", ".L2::cache_hint",
// ".2d") that follow it with no space.
func (lx *lexer) dotted() {
	s := lx.src
	for lx.pos+1 < len(s) && s[lx.pos] == '.' && isFollow(s[lx.pos+1]) {
		lx.pos += 2
		lx.modPart()
	}
}

// modPart consumes the rest of one modifier part: follow characters and "::".
func (lx *lexer) modPart() {
	s := lx.src
	for lx.pos < len(s) {
		c := s[lx.pos]
		if isFollow(c) {
			lx.pos++
			continue
		}
		if c == ':' && lx.pos+2 < len(s) && s[lx.pos+1] == ':' && isFollow(s[lx.pos+2]) {
			lx.pos += 2
			continue
		}
		return
	}
}

func (lx *lexer) next() token {
	lx.skip()
	s := lx.src
	if lx.pos >= len(s) {
		return token{kind: tEOF, line: lx.line, col: int32(lx.pos - lx.lineStart + 1)}
	}
	start := lx.pos
	line, col := lx.line, int32(lx.pos-lx.lineStart+1)
	tok := func(k tokKind) token {
		return token{kind: k, text: s[start:lx.pos], line: line, col: col}
	}
	c := s[lx.pos]
	switch {
	case isIdentStart(c):
		lx.pos++
		for lx.pos < len(s) && isFollow(s[lx.pos]) {
			lx.pos++
		}
		if c == '%' && lx.pos == start+1 {
			return tok(tPunct) // the modulo operator
		}
		lx.dotted()
		return tok(tIdent)
	case c == '.':
		if lx.pos+1 < len(s) && isFollow(s[lx.pos+1]) {
			// A directive is one word: ".param.u64" is ".param" ".u64".
			lx.pos++
			lx.modPart()
			return tok(tDot)
		}
		return lx.fail(line, col, "unexpected '.'")
	case isDigit(c):
		return lx.number(start, line, col)
	case c == '"':
		lx.pos++
		for {
			if lx.pos >= len(s) || s[lx.pos] == '\n' {
				return lx.fail(line, col, "unterminated string")
			}
			if s[lx.pos] == '\\' && lx.pos+1 < len(s) && s[lx.pos+1] != '\n' {
				lx.pos += 2
				continue
			}
			if s[lx.pos] == '"' {
				lx.pos++
				return tok(tString)
			}
			lx.pos++
		}
	}
	switch c {
	case '<', '>':
		lx.pos++
		if lx.pos < len(s) && s[lx.pos] == c {
			lx.pos++
		}
		return tok(tPunct)
	case ',', ';', ':', '{', '}', '[', ']', '(', ')', '+', '-', '!', '|', '@', '=', '~', '*', '/', '&', '^':
		lx.pos++
		return tok(tPunct)
	}
	if c < 0x20 || c >= 0x7f {
		return lx.fail(line, col, "unexpected byte 0x%02x", c)
	}
	return lx.fail(line, col, "unexpected %q", c)
}

// number lexes an integer or floating-point literal.
func (lx *lexer) number(start int, line, col int32) token {
	s := lx.src
	tok := func(k tokKind) token {
		if lx.pos < len(s) && (isFollow(s[lx.pos]) || s[lx.pos] == '.') {
			return lx.fail(line, col, "malformed number %q", s[start:lx.pos+1])
		}
		return token{kind: k, text: s[start:lx.pos], line: line, col: col}
	}
	hexRun := func() int {
		n := 0
		for lx.pos < len(s) && isHex(s[lx.pos]) {
			lx.pos++
			n++
		}
		return n
	}
	suffixU := func() {
		if lx.pos < len(s) && s[lx.pos] == 'U' {
			lx.pos++
		}
	}
	if s[start] == '0' && start+1 < len(s) {
		switch s[start+1] {
		case 'f', 'F':
			lx.pos += 2
			if hexRun() != 8 {
				return lx.fail(line, col, "malformed single-precision literal %q", s[start:lx.pos])
			}
			return tok(tFloat)
		case 'd', 'D':
			lx.pos += 2
			if hexRun() != 16 {
				return lx.fail(line, col, "malformed double-precision literal %q", s[start:lx.pos])
			}
			return tok(tFloat)
		case 'x', 'X':
			lx.pos += 2
			if hexRun() == 0 {
				return lx.fail(line, col, "malformed hex literal")
			}
			suffixU()
			return tok(tInt)
		case 'b', 'B':
			lx.pos += 2
			n := 0
			for lx.pos < len(s) && (s[lx.pos] == '0' || s[lx.pos] == '1') {
				lx.pos++
				n++
			}
			if n == 0 {
				return lx.fail(line, col, "malformed binary literal")
			}
			suffixU()
			return tok(tInt)
		}
	}
	for lx.pos < len(s) && isDigit(s[lx.pos]) {
		lx.pos++
	}
	isFloat := false
	if lx.pos < len(s) && s[lx.pos] == '.' && !(lx.pos+1 < len(s) && (isFollow(s[lx.pos+1]) && !isDigit(s[lx.pos+1]))) {
		isFloat = true
		lx.pos++
		for lx.pos < len(s) && isDigit(s[lx.pos]) {
			lx.pos++
		}
	}
	if lx.pos < len(s) && (s[lx.pos] == 'e' || s[lx.pos] == 'E') {
		isFloat = true
		lx.pos++
		if lx.pos < len(s) && (s[lx.pos] == '+' || s[lx.pos] == '-') {
			lx.pos++
		}
		n := 0
		for lx.pos < len(s) && isDigit(s[lx.pos]) {
			lx.pos++
			n++
		}
		if n == 0 {
			return lx.fail(line, col, "malformed exponent in %q", s[start:lx.pos])
		}
	}
	if isFloat {
		return tok(tFloat)
	}
	suffixU()
	return tok(tInt)
}
