package fatbin_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuos/gpuos/internal/fatbin"
)

// A cubin whose e_version holds a CUDA version (as cuBLAS 13's do) opens,
// with the same sections as the original.
func TestNewELFFileCUDAVersion(t *testing.T) {
	cubins, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "fatbin", "*.cubin"))
	if len(cubins) == 0 {
		t.Skip("no cubin in testdata/fatbin")
	}
	orig, err := os.ReadFile(cubins[0])
	if err != nil {
		t.Fatal(err)
	}
	want, err := fatbin.NewELFFile(orig)
	if err != nil {
		t.Fatalf("%s: %v", cubins[0], err)
	}
	patched := append([]byte(nil), orig...)
	binary.LittleEndian.PutUint32(patched[20:], 123)
	got, err := fatbin.NewELFFile(patched)
	if err != nil {
		t.Fatalf("e_version 123: %v", err)
	}
	if len(got.Sections) != len(want.Sections) || len(got.Sections) == 0 {
		t.Fatalf("%d sections, want %d", len(got.Sections), len(want.Sections))
	}
	for i := range got.Sections {
		if got.Sections[i].Name != want.Sections[i].Name || got.Sections[i].Offset != want.Sections[i].Offset {
			t.Errorf("section %d: %s at %#x, want %s at %#x", i, got.Sections[i].Name, got.Sections[i].Offset,
				want.Sections[i].Name, want.Sections[i].Offset)
		}
	}
	if binary.LittleEndian.Uint32(patched[20:]) != 123 {
		t.Error("the image itself was changed")
	}
}
