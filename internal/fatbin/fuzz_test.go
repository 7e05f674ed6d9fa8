package fatbin

import (
	"errors"
	"testing"
)

// FuzzParse: Parse and Payload never panic, fail only with typed malformed
// or unsupported errors, and never return more than an entry's Size.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"vecadd.fatbin", "vecadd.compressed.fatbin"} {
		f.Add(readTestdata(f, "fatbin", name))
	}
	f.Add(build(testEntry{kind: KindPTX, arch: 80, major: 9, flags: FlagCompressedLZ4,
		stored: lz4Compress([]byte(".version 9.0\n.target sm_80\n.target sm_80\n")), size: 41, name: "x.cu", opts: "-O3"}))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Parse error %v is neither malformed nor unsupported", err)
			}
			return
		}
		for i := range entries {
			e := &entries[i]
			p, err := e.Payload()
			if err != nil {
				if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) {
					t.Fatalf("Payload error %v is neither malformed nor unsupported", err)
				}
				continue
			}
			if uint64(len(p)) > e.Size {
				t.Fatalf("entry %d: payload of %d bytes, Size %d", i, len(p), e.Size)
			}
		}
		_, _ = Select(entries, 9, 0)
	})
}
