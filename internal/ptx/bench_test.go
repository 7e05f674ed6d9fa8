package ptx

import (
	"bytes"
	"os"
	"testing"
)

// bigModule returns a multi-megabyte module: the items of every .ptx file in
// testdata repeated, under one header, as a stand-in for PyTorch- or
// cuBLAS-sized PTX. The parser does not resolve names, so repeats are fine.
func bigModule(b *testing.B) []byte {
	var body bytes.Buffer
	for _, path := range ptxFiles(b) {
		src, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		m, err := Parse(src)
		if err != nil {
			b.Fatal(err)
		}
		m.Version, m.Target, m.AddressSize = "", nil, 0
		body.Write(m.Bytes())
	}
	var out bytes.Buffer
	out.WriteString(".version 9.0\n.target sm_90a\n.address_size 64\n")
	for out.Len() < 8<<20 {
		out.Write(body.Bytes())
	}
	return out.Bytes()
}

func BenchmarkParse(b *testing.B) {
	src := bigModule(b)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPrint(b *testing.B) {
	m, err := Parse(bigModule(b))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(m.Bytes())))
	b.ReportAllocs()
	for b.Loop() {
		_ = m.Bytes()
	}
}
