package main

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Group kinds of enums.txt.
const (
	kindEnum    = "enum"
	kindMacro   = "macro"
	kindPointer = "pointer"
)

// group is one block of enums.txt: a C enum, a set of integer #defines or a set of
// pointer-valued #defines.
type group struct {
	Kind       string // kindEnum, kindMacro or kindPointer
	Type       string // Go and C type name; "-" for untyped macros, "void" for void pointers
	Tag        string // C enum tag (enums only)
	Underlying string // Go underlying type (enums only): uint32 or int32
	Values     []value
	Line       int
}

// value is one named constant.
type value struct {
	Name  string
	Value int64
	Doc   string
	Alias bool // an earlier enumerator of the same enum has the same value
	Line  int
}

// entry is one line of entrypoints.txt.
type entry struct {
	Symbol  string
	API     string // "" when cuGetProcAddress never hands the symbol out
	Since   int
	Stream  string // "", "ptds" or "ptsz"
	Returns string // "" when unknown
	Line    int
}

// parseEnums reads enums.txt.
func parseEnums(data []byte) ([]group, error) {
	var (
		groups []group
		cur    *group
		names  = map[string]int{}
		types  = map[string]int{}
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields, err := splitFields(text)
		if err != nil {
			return nil, fmt.Errorf("enums.txt:%d: %w", line, err)
		}
		switch {
		case fields[0] == "end":
			if cur == nil || len(fields) != 1 {
				return nil, fmt.Errorf("enums.txt:%d: stray end", line)
			}
			if len(cur.Values) == 0 {
				return nil, fmt.Errorf("enums.txt:%d: empty group %s", line, cur.Type)
			}
			groups = append(groups, *cur)
			cur = nil
		case fields[0] == kindEnum || fields[0] == kindMacro || fields[0] == kindPointer:
			if cur != nil {
				return nil, fmt.Errorf("enums.txt:%d: group %s not ended", line, cur.Type)
			}
			g := group{Kind: fields[0], Line: line}
			switch {
			case g.Kind == kindEnum && len(fields) == 4:
				g.Type, g.Tag, g.Underlying = fields[1], fields[2], fields[3]
				if g.Underlying != "uint32" && g.Underlying != "int32" {
					return nil, fmt.Errorf("enums.txt:%d: underlying type %q is not uint32 or int32", line, g.Underlying)
				}
				if !isIdent(g.Tag) {
					return nil, fmt.Errorf("enums.txt:%d: bad tag %q", line, g.Tag)
				}
			case g.Kind != kindEnum && len(fields) == 2:
				g.Type = fields[1]
			default:
				return nil, fmt.Errorf("enums.txt:%d: malformed group header", line)
			}
			if g.Type != "-" && !isIdent(g.Type) {
				return nil, fmt.Errorf("enums.txt:%d: bad type %q", line, g.Type)
			}
			if g.Kind == kindEnum {
				if prev, ok := types[g.Type]; ok {
					return nil, fmt.Errorf("enums.txt:%d: enum %s already defined at line %d", line, g.Type, prev)
				}
				types[g.Type] = line
			}
			cur = &g
		default:
			if cur == nil {
				return nil, fmt.Errorf("enums.txt:%d: constant outside a group", line)
			}
			if len(fields) < 2 || len(fields) > 3 {
				return nil, fmt.Errorf("enums.txt:%d: want NAME VALUE [\"text\"]", line)
			}
			v := value{Name: fields[0], Line: line}
			if !isIdent(v.Name) {
				return nil, fmt.Errorf("enums.txt:%d: bad name %q", line, v.Name)
			}
			n, err := strconv.ParseInt(fields[1], 0, 64)
			if err != nil {
				return nil, fmt.Errorf("enums.txt:%d: value of %s: %w", line, v.Name, err)
			}
			if err := checkRange(*cur, n); err != nil {
				return nil, fmt.Errorf("enums.txt:%d: %s: %w", line, v.Name, err)
			}
			v.Value = n
			if len(fields) == 3 {
				v.Doc = fields[2]
			}
			if prev, ok := names[v.Name]; ok {
				return nil, fmt.Errorf("enums.txt:%d: %s already defined at line %d", line, v.Name, prev)
			}
			names[v.Name] = line
			for _, o := range cur.Values {
				if cur.Kind == kindEnum && o.Value == n {
					v.Alias = true
					break
				}
			}
			cur.Values = append(cur.Values, v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("enums.txt: %w", err)
	}
	if cur != nil {
		return nil, fmt.Errorf("enums.txt: group %s not ended", cur.Type)
	}
	return groups, nil
}

// checkRange rejects a value its group's type cannot hold.
func checkRange(g group, n int64) error {
	lo, hi := int64(-1<<31), int64(1<<32-1)
	switch {
	case g.Kind == kindEnum && g.Underlying == "uint32":
		lo = 0
	case g.Kind == kindEnum && g.Underlying == "int32":
		hi = 1<<31 - 1
	case g.Kind == kindPointer:
		lo, hi = 0, 1<<31-1
	}
	if n < lo || n > hi {
		return fmt.Errorf("value %d out of range [%d, %d]", n, lo, hi)
	}
	return nil
}

// splitFields splits a line into space-separated fields, the last of which may be a
// Go-quoted string.
func splitFields(s string) ([]string, error) {
	var out []string
	for s != "" {
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, fmt.Errorf("bad quoted text: %w", err)
			}
			u, err := strconv.Unquote(q)
			if err != nil {
				return nil, fmt.Errorf("bad quoted text: %w", err)
			}
			if strings.TrimSpace(s[len(q):]) != "" {
				return nil, fmt.Errorf("text after quoted string")
			}
			return append(out, u), nil
		}
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i])
		s = strings.TrimLeft(s[i:], " \t")
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty line")
	}
	return out, nil
}

// parseEntryPoints reads entrypoints.txt.
func parseEntryPoints(data []byte) ([]entry, error) {
	var out []entry
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 5 {
			return nil, fmt.Errorf("entrypoints.txt:%d: want SYMBOL API SINCE STREAM RETURNS", line)
		}
		e := entry{Symbol: f[0], Line: line}
		if !isIdent(e.Symbol) {
			return nil, fmt.Errorf("entrypoints.txt:%d: bad symbol %q", line, e.Symbol)
		}
		if prev, ok := seen[e.Symbol]; ok {
			return nil, fmt.Errorf("entrypoints.txt:%d: %s already listed at line %d", line, e.Symbol, prev)
		}
		seen[e.Symbol] = line
		switch {
		case f[1] == "-" && f[2] == "-" && f[3] == "-":
		case f[1] != "-" && f[2] != "-":
			if !isIdent(f[1]) {
				return nil, fmt.Errorf("entrypoints.txt:%d: bad API name %q", line, f[1])
			}
			v, err := strconv.Atoi(f[2])
			if err != nil || v < 1000 || v > 99990 || v%10 != 0 {
				return nil, fmt.Errorf("entrypoints.txt:%d: bad CUDA version %q", line, f[2])
			}
			e.API, e.Since = f[1], v
			switch f[3] {
			case "-":
			case "ptds", "ptsz":
				e.Stream = f[3]
				if !strings.HasSuffix(e.Symbol, "_"+f[3]) {
					return nil, fmt.Errorf("entrypoints.txt:%d: %s variant %s lacks the _%s suffix", line, f[3], e.Symbol, f[3])
				}
			default:
				return nil, fmt.Errorf("entrypoints.txt:%d: bad stream variant %q", line, f[3])
			}
		default:
			return nil, fmt.Errorf("entrypoints.txt:%d: API and SINCE must both be given or both be -", line)
		}
		switch f[4] {
		case "-":
		case "CUresult":
			e.Returns = f[4]
		default:
			return nil, fmt.Errorf("entrypoints.txt:%d: unknown return type %q", line, f[4])
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("entrypoints.txt: %w", err)
	}
	return out, nil
}

// parseNames reads a plain list of symbol names, one a line.
func parseNames(file string, data []byte) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !isIdent(l) {
			return nil, fmt.Errorf("%s:%d: bad symbol name %q", file, i+1, l)
		}
		if seen[l] {
			return nil, fmt.Errorf("%s:%d: %s listed twice", file, i+1, l)
		}
		seen[l] = true
		out = append(out, l)
	}
	return out, nil
}

// isIdent reports whether s is a C identifier.
func isIdent(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
