package abitest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// NotFound is the SYMBOL of a lookup that hands out no function.
const NotFound = "NOT_FOUND"

// Errors returned by the readers.
var (
	ErrSyntax   = v1.Errorf(v1.CodeMalformed, "abitest: syntax error")
	ErrNoModule = v1.Errorf(v1.CodeNotFound, "abitest: no go.mod above the working directory")
)

// Case is one cuGetProcAddress lookup and its answer.
type Case struct {
	Name        string
	CUDAVersion int
	Flags       uint64
	Symbol      string // the exported function handed out, or NotFound
	Traced      bool   // observed through the real driver (false: derived from the rule)
	Line        int
}

// ParseCases reads a procaddress.txt table: lines "NAME VERSION FLAGS SYMBOL", NAME ""
// for the empty name, a line "rules" before the cases that were not traced, # comments.
func ParseCases(data []byte) ([]Case, error) {
	var out []Case
	traced := true
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if text == "rules" {
			if !traced {
				return nil, fmt.Errorf("%w: line %d: second rules line", ErrSyntax, line)
			}
			traced = false
			continue
		}
		f := strings.Fields(text)
		if len(f) != 4 {
			return nil, fmt.Errorf("%w: line %d: want NAME VERSION FLAGS SYMBOL", ErrSyntax, line)
		}
		c := Case{Name: f[0], Symbol: f[3], Traced: traced, Line: line}
		if c.Name == `""` {
			c.Name = ""
		} else if !isIdent(c.Name) {
			return nil, fmt.Errorf("%w: line %d: bad name %q", ErrSyntax, line, f[0])
		}
		v, err := strconv.Atoi(f[1])
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%w: line %d: bad version %q", ErrSyntax, line, f[1])
		}
		c.CUDAVersion = v
		if c.Flags, err = strconv.ParseUint(f[2], 0, 64); err != nil {
			return nil, fmt.Errorf("%w: line %d: bad flags %q", ErrSyntax, line, f[2])
		}
		if c.Symbol != NotFound && !isIdent(c.Symbol) {
			return nil, fmt.Errorf("%w: line %d: bad symbol %q", ErrSyntax, line, f[3])
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	return out, nil
}

// Prototype is one function declaration of the header.
type Prototype struct {
	Name   string // the API name as declared (cuMemAlloc)
	Params string // the parameter list between the parentheses
}

// Mapping is what an API name of the header expands to.
type Mapping struct {
	Name      string // the API name (cuMemcpyHtoD)
	Symbol    string // the symbol without per-thread default stream (cuMemcpyHtoD_v2)
	PerThread string // the symbol with CUDA_API_PER_THREAD_DEFAULT_STREAM (cuMemcpyHtoD_v2_ptds)
}

// Header is what the checks need of include/cuda.h.
type Header struct {
	Prototypes []Prototype
	Mappings   map[string]Mapping // by API name; names without a #define map to themselves
}

var (
	protoRE = regexp.MustCompile(`^CUresult CUDAAPI (\w+)\((.*)\);$`)
	defRE   = regexp.MustCompile(`^#define (cu\w+)\s+(?:CU_API_(PTDS|PTSZ)_\((\w+)\)|(\w+))\s*$`)
)

// ParseHeader reads the prototypes and API-name macros of the project's cuda.h, which
// writes each declaration on one line as "CUresult CUDAAPI name(params);" and each name
// macro as "#define name symbol" or "#define name CU_API_PTDS_(symbol)".
func ParseHeader(data []byte) (Header, error) {
	h := Header{Mappings: map[string]Mapping{}}
	seen := map[string]bool{}
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimRight(l, " \t\r")
		if m := protoRE.FindStringSubmatch(l); m != nil {
			if seen[m[1]] {
				return Header{}, fmt.Errorf("%w: line %d: %s declared twice", ErrSyntax, i+1, m[1])
			}
			seen[m[1]] = true
			h.Prototypes = append(h.Prototypes, Prototype{Name: m[1], Params: m[2]})
			continue
		}
		if m := defRE.FindStringSubmatch(l); m != nil {
			if _, dup := h.Mappings[m[1]]; dup {
				return Header{}, fmt.Errorf("%w: line %d: %s defined twice", ErrSyntax, i+1, m[1])
			}
			mp := Mapping{Name: m[1], Symbol: m[4], PerThread: m[4]}
			if m[2] != "" {
				mp.Symbol, mp.PerThread = m[3], m[3]+"_"+strings.ToLower(m[2])
			}
			h.Mappings[m[1]] = mp
		}
	}
	if len(h.Prototypes) == 0 {
		return Header{}, fmt.Errorf("%w: no prototypes", ErrSyntax)
	}
	for _, p := range h.Prototypes {
		if _, ok := h.Mappings[p.Name]; !ok {
			h.Mappings[p.Name] = Mapping{Name: p.Name, Symbol: p.Name, PerThread: p.Name}
		}
	}
	for name := range h.Mappings {
		if !seen[name] {
			return Header{}, fmt.Errorf("%w: %s is #defined but never declared", ErrSyntax, name)
		}
	}
	return h, nil
}

// ModuleRoot returns the directory of the go.mod at or above the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoModule
		}
		dir = parent
	}
}

func isIdent(s string) bool {
	if s == "" {
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
