package interp

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuos/gpuos/internal/ptx"
)

// Every nvcc-generated test kernel compiles.
func TestCompileTestdata(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "kernels", "*.ptx"))
	if len(files) == 0 {
		t.Fatal("no testdata kernels")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ptx.Parse(src)
		if err != nil {
			t.Fatalf("%s: parse: %v", f, err)
		}
		p, err := Compile(m)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		if len(p.Kernels()) == 0 {
			t.Errorf("%s: no kernels", filepath.Base(f))
		}
	}
}
