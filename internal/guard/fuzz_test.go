package guard_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/guard"
	"github.com/gpuos/gpuos/internal/interp"
	"github.com/gpuos/gpuos/internal/ptx"
)

// testdataPTX lists every .ptx file under testdata/.
func testdataPTX(t testing.TB) []string {
	t.Helper()
	var fs []string
	err := filepath.WalkDir(filepath.Join("..", "..", "testdata"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".ptx" {
			fs = append(fs, p)
		}
		return err
	})
	if err != nil || len(fs) == 0 {
		t.Fatalf("no testdata PTX: %v", err)
	}
	return fs
}

// checkGuarded is the property every guarded module has: the printed output
// parses; printing that again gives the same text; guarding it again is
// refused (the guard's names are taken), never a panic; and if the
// interpreter compiles the input it compiles the output, so the sim can run
// whatever the guard emits.
func checkGuarded(t *testing.T, src []byte) {
	m, err := ptx.Parse(src)
	if err != nil {
		return
	}
	_, compileErr := interp.Compile(m)
	m, _ = ptx.Parse(src) // Compile does not modify, but start from a fresh tree anyway
	res, err := guard.Guard(m, guard.Options{})
	if err != nil {
		var fe *guard.FormError
		if !errors.As(err, &fe) {
			t.Fatalf("Guard error is not a *FormError: %v", err)
		}
		if c := v1.CodeOf(err); c != v1.CodeUnsupported && c != v1.CodeInvalidArgument {
			t.Fatalf("Guard error code %v: %v", c, err)
		}
		return
	}
	out := m.Bytes()
	m2, err := ptx.Parse(out)
	if err != nil {
		t.Fatalf("guarded output does not parse: %v\n%s", err, out)
	}
	if again := m2.Bytes(); !bytes.Equal(again, out) {
		t.Fatalf("printing the parsed guarded output changes it")
	}
	if _, err := guard.Guard(m2, guard.Options{}); !errors.Is(err, guard.ErrInvalid) {
		t.Fatalf("guarding a guarded module = %v, want ErrInvalid (reserved names)", err)
	}
	if len(res.Functions) < len(res.Kernels) {
		t.Fatalf("result lists %d functions and %d kernels", len(res.Functions), len(res.Kernels))
	}
	if compileErr == nil {
		m3, _ := ptx.Parse(out)
		if _, err := interp.Compile(m3); err != nil {
			t.Fatalf("the interpreter compiles the input but not its guarded form: %v\n%s", err, out)
		}
	}
}

// TestRoundTripTestdata: every PTX file in testdata goes through guard →
// print → parse.
func TestRoundTripTestdata(t *testing.T) {
	for _, f := range testdataPTX(t) {
		t.Run(f, func(t *testing.T) {
			src := readPTX(t, f)
			m := parse(t, src)
			if _, err := guard.Guard(m, guard.Options{}); err != nil {
				t.Fatalf("guard: %v", err)
			}
			checkGuarded(t, src)
		})
	}
}

func FuzzGuard(f *testing.F) {
	for _, p := range testdataPTX(f) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, body := range []string{
		"st.global.u32 [%rd1+8], %r1;",
		"@!%p1 ld.u32 %r2, [%rd1];",
		"atom.global.cas.b128 %rd2, [%rd1], %rd3, %rd4;",
		"cp.async.bulk.prefetch.L2.global [%rd1], %r1;",
		"trap;",
	} {
		f.Add([]byte(kernelWith(".shared .align 16 .b8 s[256];\n.const .align 4 .b8 c[8] = {1,2,3,4,5,6,7,8};", body)))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 {
			return
		}
		checkGuarded(t, src)
	})
}
