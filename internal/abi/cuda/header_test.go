package cuda_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/abi/cuda/internal/abitest"
)

// The project's header, relative to this package.
const headerDir = "../../../include"

func needCompiler(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not found", name)
	}
	return path
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// TestHeaderCompiles builds a file including include/cuda.h as strict C99 and C++17,
// with and without per-thread default stream names.
func TestHeaderCompiles(t *testing.T) {
	src := filepath.Join(t.TempDir(), "inc.c")
	if err := os.WriteFile(src, []byte("#include <cuda.h>\nint gpuos_dummy(void);\nint gpuos_dummy(void) { return CUDA_SUCCESS; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ compiler, std, lang string }{
		{"gcc", "-std=c99", "c"},
		{"gcc", "-std=c11", "c"},
		{"g++", "-std=c++17", "c++"},
	} {
		needCompiler(t, tc.compiler)
		for _, ptds := range []string{"-UCUDA_API_PER_THREAD_DEFAULT_STREAM", "-DCUDA_API_PER_THREAD_DEFAULT_STREAM"} {
			run(t, tc.compiler, tc.std, "-x", tc.lang, "-Wall", "-Wextra", "-Werror", "-pedantic", ptds,
				"-I", headerDir, "-c", src, "-o", os.DevNull)
		}
	}
}

// TestHeaderMatchesMirror compiles and runs a C program that prints every constant and
// every structure size, alignment and member offset of package cuda as include/cuda.h
// defines them, and compares.
func TestHeaderMatchesMirror(t *testing.T) {
	gcc := needCompiler(t, "gcc")
	var src bytes.Buffer
	src.WriteString("#include <cuda.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\nint main(void) {\n")
	want := map[string]int64{}
	for _, c := range cuda.Constants() {
		key := "const " + c.Name
		want[key] = c.Value
		if c.Kind == cuda.KindPointer {
			fmt.Fprintf(&src, "    printf(\"%s %%lld\\n\", (long long)(uintptr_t)(%s));\n", key, c.Name)
		} else {
			fmt.Fprintf(&src, "    printf(\"%s %%lld\\n\", (long long)(%s));\n", key, c.Name)
		}
	}
	for _, e := range cuda.EnumTypes() {
		key := "sizeof " + e.Name
		want[key] = 4
		fmt.Fprintf(&src, "    printf(\"%s %%zu\\n\", sizeof(%s));\n", key, e.Name)
	}
	for _, l := range cuda.Layouts() {
		for key, expr := range map[string]string{
			"sizeof " + l.Name:  "sizeof(" + l.Name + ")",
			"alignof " + l.Name: "_Alignof(" + l.Name + ")",
		} {
			fmt.Fprintf(&src, "    printf(\"%s %%zu\\n\", (size_t)%s);\n", key, expr)
		}
		want["sizeof "+l.Name] = int64(l.Size)
		want["alignof "+l.Name] = int64(l.Align)
		for _, f := range l.Fields {
			key := "offsetof " + l.Name + "." + f.Path
			want[key] = int64(f.Offset)
			fmt.Fprintf(&src, "    printf(\"%s %%zu\\n\", offsetof(%s, %s));\n", key, l.Name, f.Path)
			key = "sizeof " + l.Name + "." + f.Path
			want[key] = int64(f.Size)
			fmt.Fprintf(&src, "    printf(\"%s %%zu\\n\", sizeof(((%s *)0)->%s));\n", key, l.Name, f.Path)
		}
	}
	src.WriteString("    return 0;\n}\n")

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.c"), src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "dump")
	run(t, gcc, "-std=c11", "-Wall", "-Werror", "-I", headerDir, "-o", bin, filepath.Join(dir, "dump.c"))
	out := run(t, bin)

	have := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		i := strings.LastIndexByte(sc.Text(), ' ')
		v, err := strconv.ParseInt(sc.Text()[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("bad output line %q", sc.Text())
		}
		have[sc.Text()[:i]] = v
	}
	if len(have) != len(want) {
		t.Errorf("C printed %d values, want %d", len(have), len(want))
	}
	for key, w := range want {
		if h, ok := have[key]; !ok || h != w {
			t.Errorf("%s: include/cuda.h has %d, package cuda %d", key, h, w)
		}
	}
}

var declRE = regexp.MustCompile(`(?m)^CUresult\s+(cu\w+)\s*\(`)

// TestHeaderDeclaresExportedSymbols preprocesses include/cuda.h in both stream modes and
// checks that every function it declares is exported by the real driver (so programs
// built against it link against the drop-in library too), and that with
// CUDA_API_PER_THREAD_DEFAULT_STREAM every call that has a per-thread variant uses it.
func TestHeaderDeclaresExportedSymbols(t *testing.T) {
	gcc := needCompiler(t, "gcc")
	exported := map[string]cuda.Symbol{}
	for _, s := range cuda.Symbols() {
		exported[s.Name] = s
	}
	for _, ptds := range []bool{false, true} {
		def := "-UCUDA_API_PER_THREAD_DEFAULT_STREAM"
		if ptds {
			def = "-DCUDA_API_PER_THREAD_DEFAULT_STREAM"
		}
		out := run(t, gcc, "-E", "-P", def, "-x", "c", filepath.Join(headerDir, "cuda.h"))
		decls := declRE.FindAllSubmatch(out, -1)
		if len(decls) < 150 {
			t.Fatalf("%s: only %d declarations", def, len(decls))
		}
		for _, d := range decls {
			name := string(d[1])
			if _, ok := exported[name]; !ok {
				t.Errorf("%s: %s is declared but the driver does not export it", def, name)
				continue
			}
			_, hasPTDS := exported[name+"_ptds"]
			_, hasPTSZ := exported[name+"_ptsz"]
			if ptds && (hasPTDS || hasPTSZ) {
				t.Errorf("%s: %s is declared though a per-thread variant exists", def, name)
			}
		}
	}
}

// TestHeaderNamesFollowTable checks each API name macro of include/cuda.h against the
// entry-point table: the symbol it expands to is what cuGetProcAddress hands out for that
// name at CUDA 13.0, except where CUDA 13.0 keeps the old function under the plain name
// and declares the new one by its versioned name.
func TestHeaderNamesFollowTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(headerDir, "cuda.h"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := abitest.ParseHeader(data)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]string{ // API name: the symbol the 13.0 header keeps it at
		"cuCtxGetDevice":     "cuCtxGetDevice",   // cuCtxGetDevice_v2 takes a context
		"cuCtxSynchronize":   "cuCtxSynchronize", // cuCtxSynchronize_v2 takes a context
		"cuStreamGetCtx":     "cuStreamGetCtx",   // cuStreamGetCtx_v2 also returns a green context
		"cuGraphInstantiate": "cuGraphInstantiateWithFlags",
	}
	for _, p := range h.Prototypes {
		m := h.Mappings[p.Name]
		want, ok := kept[p.Name]
		if !ok {
			if want, ok = cuda.Resolve(p.Name, cuda.CUDA_VERSION, 0); !ok {
				want = p.Name // declared by its versioned name, such as cuCtxGetDevice_v2
			}
		}
		if m.Symbol != want {
			t.Errorf("%s expands to %s, want %s", p.Name, m.Symbol, want)
		}
	}
}
