package cuda

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/fatbin"
)

func readTestdata(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestImageForDriver(t *testing.T) {
	vecadd := readTestdata(t, "kernels/vecadd.ptx")
	cubin := readTestdata(t, "fatbin/vecadd.sm_90.cubin")
	fat := readTestdata(t, "fatbin/vecadd.fatbin")
	// A cubin whose section headers claim more than the file holds.
	lying := bytes.Clone(cubin)
	f, err := elf.NewFile(bytes.NewReader(cubin))
	must(t, err)
	if f.Class != elf.ELFCLASS64 {
		t.Fatalf("the sample cubin is %v", f.Class)
	}
	shoff := binary.LittleEndian.Uint64(cubin[0x28:]) // e_shoff
	for i, s := range f.Sections {
		if s.Type != elf.SHT_NOBITS && s.Type != elf.SHT_NULL {
			// sh_size of section i: offset 0x20 in its 64-byte header.
			binary.LittleEndian.PutUint64(lying[shoff+uint64(i)*64+0x20:], 1<<40)
			break
		}
	}
	tests := []struct {
		name  string
		image []byte
		want  []byte // the bytes for the driver, nil for an error
		err   error
	}{
		{"ptx", vecadd, append(bytes.Clone(vecadd), 0), nil},
		{"ptx ending in NUL", append(bytes.Clone(vecadd), 0), append(bytes.Clone(vecadd), 0), nil},
		{"ptx ending in NULs", append(bytes.Clone(vecadd), 0, 0, 0), append(bytes.Clone(vecadd), 0), nil},
		{"cubin", cubin, cubin, nil},
		{"fatbin", fat, fat, nil},
		{"zstd fatbin", readTestdata(t, "fatbin/vecadd.compressed.fatbin"), readTestdata(t, "fatbin/vecadd.compressed.fatbin"), nil},
		{"empty", nil, nil, ErrInvalidImage},
		{"garbage", []byte("hello world"), nil, ErrInvalidImage},
		{"NUL inside", []byte(".version 9.0\x00.target sm_90"), nil, ErrInvalidImage},
		{"truncated fatbin", fat[:40], nil, v1.ErrMalformed},
		{"wrapper", append(binary.LittleEndian.AppendUint32(nil, fatbin.WrapperMagic), make([]byte, 20)...), nil, ErrInvalidImage},
		{"ELF header only", cubin[:64], nil, ErrInvalidImage},
		{"truncated cubin", cubin[:len(cubin)/2], nil, ErrInvalidImage},
		{"cubin with a section past its end", lying, nil, ErrInvalidImage},
	}
	for _, tt := range tests {
		got, err := imageForDriver(tt.image)
		if tt.err != nil {
			if !errors.Is(err, tt.err) || v1.CodeOf(err) != v1.CodeMalformed {
				t.Errorf("%s: err = %v, want %v", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, tt.want) {
			t.Errorf("%s: %d bytes, %v; want %d bytes", tt.name, len(got), err, len(tt.want))
		}
	}
	if !bytes.Equal(vecadd, readTestdata(t, "kernels/vecadd.ptx")) {
		t.Fatal("imageForDriver wrote to its input")
	}
}

// Whatever the input, imageForDriver does not panic, and what it hands the
// driver is either NUL-terminated PTX without an inner NUL, or an ELF or
// fatbin whose headers lie inside it.
func FuzzImageForDriver(f *testing.F) {
	for _, rel := range []string{"kernels/vecadd.ptx", "fatbin/vecadd.sm_90.cubin", "fatbin/vecadd.fatbin", "fatbin/vecadd.compressed.fatbin"} {
		b := readTestdata(f, rel)
		f.Add(b)
		f.Add(b[:len(b)/3])
	}
	f.Add([]byte(".version 9.0\n.target sm_90\n"))
	f.Fuzz(func(t *testing.T, image []byte) {
		out, err := imageForDriver(image)
		if err != nil {
			// Malformed input, or a fatbin feature the parser does not know
			// (which the driver is then not trusted to read either).
			if c := v1.CodeOf(err); c != v1.CodeMalformed && c != v1.CodeUnsupported {
				t.Fatalf("error %v of code %v", err, c)
			}
			return
		}
		switch {
		case fatbin.IsELF(out):
			if checkELF(out) != nil {
				t.Fatal("accepted an ELF checkELF rejects")
			}
		case fatbin.IsFatbin(out):
			if _, err := fatbin.Parse(out); err != nil {
				t.Fatal("accepted a fatbin that does not parse")
			}
		default:
			if len(out) == 0 || out[len(out)-1] != 0 || bytes.IndexByte(out[:len(out)-1], 0) >= 0 {
				t.Fatalf("PTX for the driver is not one NUL-terminated string: %q", out)
			}
		}
	})
}
