package shim

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const imageBase = 0x7f0000001000

func readTestdata(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The real images nvcc made: an image's extent is its file's size.
func TestFindImageRealFiles(t *testing.T) {
	tests := []struct {
		file string
		kind imageKind
	}{
		{"fatbin/vecadd.sm_90.cubin", imageCubin},
		{"fatbin/vecadd.fatbin", imageFatbin},
		{"fatbin/vecadd.default.fatbin", imageFatbin},
		{"fatbin/vecadd.compressed.fatbin", imageFatbin},
		{"kernels/vecadd.ptx", imagePTX},
	}
	for _, tt := range tests {
		b := readTestdata(t, tt.file)
		if tt.kind == imagePTX {
			b = append(b, 0)
		}
		// Garbage after the image must not count.
		mem := sliceMem{base: imageBase, b: append(append([]byte(nil), b...), strings.Repeat("\xff", 4096)...)}
		img, err := findImage(mem, imageBase)
		if err != nil {
			t.Errorf("%s: %v", tt.file, err)
			continue
		}
		want := uint64(len(b))
		if tt.kind == imagePTX {
			want-- // without the NUL
		}
		if img.kind != tt.kind || img.addr != imageBase || img.size != want {
			t.Errorf("%s: %v at %#x, %d bytes; want %v, %d bytes", tt.file, img.kind, img.addr, img.size, tt.kind, want)
		}
	}
}

// A fat binary wrapper names the fat binary elsewhere in memory.
func TestFindImageWrapper(t *testing.T) {
	fat := readTestdata(t, "fatbin/vecadd.fatbin")
	mem := make([]byte, 4096+len(fat))
	le := binary.LittleEndian
	le.PutUint32(mem[0:], fatbinWrapperMagic)
	le.PutUint32(mem[4:], 1)
	le.PutUint64(mem[8:], imageBase+4096)
	copy(mem[4096:], fat)
	img, err := findImage(sliceMem{base: imageBase, b: mem}, imageBase)
	if err != nil || img.kind != imageFatbin || img.addr != imageBase+4096 || img.size != uint64(len(fat)) {
		t.Fatalf("wrapper: %+v, %v", img, err)
	}
}

func TestFindImageErrors(t *testing.T) {
	le := binary.LittleEndian
	wrapper := func(version uint32, data uint64) []byte {
		b := make([]byte, 16)
		le.PutUint32(b, fatbinWrapperMagic)
		le.PutUint32(b[4:], version)
		le.PutUint64(b[8:], data)
		return b
	}
	fatHeader := func(hdr uint16, body uint64) []byte {
		b := make([]byte, 16)
		le.PutUint32(b, fatbinMagic)
		le.PutUint16(b[6:], hdr)
		le.PutUint64(b[8:], body)
		return b
	}
	elf32 := append([]byte("\x7fELF\x01\x01"), make([]byte, 58)...)
	elfHuge := append([]byte("\x7fELF\x02\x01"), make([]byte, 58)...)
	le.PutUint64(elfHuge[0x28:], 1<<40) // section headers far away
	le.PutUint16(elfHuge[0x3A:], 64)
	le.PutUint16(elfHuge[0x3C:], 3)
	tests := []struct {
		name string
		mem  []byte
	}{
		{"empty text", []byte{0}},
		{"text without NUL", []byte(".version 8.0")},
		{"truncated ELF", []byte("\x7fELF\x02\x01")},
		{"32-bit ELF", elf32},
		{"ELF beyond 4 GiB", elfHuge},
		{"fat binary header too small", fatHeader(8, 100)},
		{"fat binary of 8 GiB", fatHeader(16, 8<<30)},
		{"wrapper version 9", wrapper(9, imageBase+64)},
		{"wrapper naming nothing", wrapper(1, 0)},
		{"wrapper naming itself", wrapper(1, imageBase)},
		{"wrapper naming text", append(wrapper(1, imageBase+16), "hello\x00"...)},
	}
	for _, tt := range tests {
		_, err := findImage(sliceMem{base: imageBase, b: tt.mem}, imageBase)
		if !errors.Is(err, errBadImage) {
			t.Errorf("%s: %v, want errBadImage", tt.name, err)
		}
	}
	if _, err := findImage(sliceMem{}, 0); !errors.Is(err, errBadImage) {
		t.Errorf("NULL: %v", err)
	}
}

// FuzzFindImage: any bytes at any of the image forms' magic numbers give an
// extent inside bounds or errBadImage, never a panic.
func FuzzFindImage(f *testing.F) {
	for _, file := range []string{"fatbin/vecadd.sm_90.cubin", "fatbin/vecadd.fatbin", "kernels/vecadd.ptx"} {
		b := readTestdata(f, file)
		f.Add(b[:min(len(b), 2048)])
	}
	f.Add([]byte("\x7fELF\x02\x01"))
	f.Add([]byte{0xB1, 0x43, 0x62, 0x46, 1, 0, 0, 0, 0x10, 0x10, 0, 0, 0xf0, 0x7f, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		img, err := findImage(sliceMem{base: imageBase, b: b}, imageBase)
		if err != nil {
			if !errors.Is(err, errBadImage) {
				t.Fatalf("error %v is not errBadImage", err)
			}
			return
		}
		if img.size == 0 || img.size > maxImageSize {
			t.Fatalf("image of %d bytes", img.size)
		}
		if img.kind == imagePTX && (img.addr != imageBase || img.size >= uint64(len(b))) {
			t.Fatalf("PTX of %d bytes in %d", img.size, len(b))
		}
	})
}
