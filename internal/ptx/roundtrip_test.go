package ptx

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// clearLines zeroes source positions so trees from different texts compare.
func clearLines(m *Module) {
	Inspect(m, func(n Node) bool {
		switch n := n.(type) {
		case *Instruction:
			n.Line = 0
		case *Function:
			n.Line = 0
		}
		return true
	})
}

// checkRoundTrip asserts that src parses, that printing and re-parsing gives
// an equal tree, and that printing is idempotent.
func checkRoundTrip(t *testing.T, src []byte) {
	t.Helper()
	m, err := Parse(src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	out := m.Bytes()
	m2, err := Parse(out)
	if err != nil {
		t.Fatalf("re-parse: %v\n%s", err, out)
	}
	clearLines(m)
	clearLines(m2)
	if !reflect.DeepEqual(m, m2) {
		t.Fatalf("trees differ after print/parse:\n%s", diffText(out, m2.Bytes()))
	}
	if out2 := m2.Bytes(); !bytes.Equal(out, out2) {
		t.Fatalf("printing is not idempotent:\n%s", diffText(out, out2))
	}
}

// diffText shows the first differing line of a and b.
func diffText(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return "(texts equal)"
}

func itoa(i int) string { return fmtInt(i) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for i > 0 {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
	}
	return string(b)
}

// ptxFiles lists every .ptx file under the repository's testdata and this
// package's testdata.
func ptxFiles(t testing.TB) []string {
	var files []string
	for _, root := range []string{"../../testdata", "testdata"} {
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".ptx") {
				files = append(files, path)
			}
			return nil
		})
	}
	if len(files) == 0 {
		t.Fatal("no .ptx files found")
	}
	return files
}

func TestRoundTripTestdata(t *testing.T) {
	for _, path := range ptxFiles(t) {
		t.Run(path, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			checkRoundTrip(t, src)
		})
	}
}
