package ptx

import (
	"bytes"
	"os"
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// survives a print/parse round trip unchanged, with idempotent printing.
// Seeds: every .ptx file in the repository plus testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, path := range ptxFiles(f) {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := Parse(src)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("error %T is not a *SyntaxError: %v", err, err)
			}
			return
		}
		out := m.Bytes()
		m2, err := Parse(out)
		if err != nil {
			t.Fatalf("printed module does not parse: %v\n%s", err, out)
		}
		clearLines(m)
		clearLines(m2)
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the tree:\n%s", diffText(out, m2.Bytes()))
		}
		if out2 := m2.Bytes(); !bytes.Equal(out, out2) {
			t.Fatalf("printing is not idempotent:\n%s", diffText(out, out2))
		}
	})
}
