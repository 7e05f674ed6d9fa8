package shim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/fatbin"
)

// testEntry is an entry of a fat binary built by fatbinOf.
type testEntry struct {
	kind    fatbin.Kind
	arch    uint32
	payload []byte
}

// fatbinOf builds a fat binary container of uncompressed entries.
func fatbinOf(entries ...testEntry) []byte {
	le := binary.LittleEndian
	out := make([]byte, fatbin.HeaderSize)
	for _, e := range entries {
		padded := (len(e.payload) + 7) &^ 7
		h := make([]byte, 64)
		le.PutUint16(h, uint16(e.kind))
		le.PutUint32(h[4:], 64)
		le.PutUint64(h[8:], uint64(padded))
		le.PutUint16(h[0x18:], 0)
		le.PutUint16(h[0x1a:], 9)
		le.PutUint32(h[0x1c:], e.arch)
		le.PutUint64(h[0x28:], fatbin.Flag64Bit|fatbin.FlagLinux)
		out = append(out, h...)
		out = append(out, e.payload...)
		out = append(out, make([]byte, padded-len(e.payload))...)
	}
	le.PutUint32(out, fatbin.Magic)
	le.PutUint16(out[4:], 1)
	le.PutUint16(out[6:], fatbin.HeaderSize)
	le.PutUint64(out[8:], uint64(len(out)-fatbin.HeaderSize))
	return out
}

func describe(t *testing.T, b []byte) []string {
	t.Helper()
	entries, err := fatbin.Parse(b)
	if err != nil {
		t.Fatalf("the trimmed fat binary does not parse: %v", err)
	}
	var s []string
	for _, e := range entries {
		p, err := e.Payload()
		if err != nil {
			t.Fatalf("payload of %v: %v", &e, err)
		}
		s = append(s, fmt.Sprintf("%v %d %s", e.Kind, e.Arch, bytes.TrimRight(p, "\x00")))
	}
	return s
}

func TestTrimFatbin(t *testing.T) {
	ptx := func(arch uint32) testEntry {
		return testEntry{fatbin.KindPTX, arch, fmt.Appendf(nil, ".version 9.0 // compute_%d", arch)}
	}
	elf := func(arch uint32) testEntry { return testEntry{fatbin.KindELF, arch, fmt.Appendf(nil, "sm_%d", arch)} }
	all := fatbinOf(elf(75), elf(80), ptx(80), elf(86), elf(90), ptx(90), elf(100), elf(120), ptx(120))
	tests := []struct {
		name         string
		major, minor int
		want         []string
	}{
		{"H100: its cubin and its PTX", 9, 0, []string{"elf 90 sm_90", "ptx 90 .version 9.0 // compute_90"}},
		{"A10: the compatible cubins, the PTX of the newest architecture not above it",
			8, 6, []string{"elf 80 sm_80", "ptx 80 .version 9.0 // compute_80", "elf 86 sm_86"}},
		{"sm_89: older minor versions of 8", 8, 9, []string{"elf 80 sm_80", "ptx 80 .version 9.0 // compute_80", "elf 86 sm_86"}},
		{"sm_103: sm_100's cubin, compute_90's PTX", 10, 3, []string{"ptx 90 .version 9.0 // compute_90", "elf 100 sm_100"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := trimFatbin(all, tt.major, tt.minor)
			if err != nil {
				t.Fatal(err)
			}
			if d := describe(t, got); !slices.Equal(d, tt.want) {
				t.Errorf("kept %q, want %q", d, tt.want)
			}
		})
	}
	if _, err := trimFatbin(fatbinOf(elf(90), ptx(90)), 7, 0); !errors.Is(err, errNothingToTrim) {
		t.Errorf("a fat binary with nothing for sm_70: %v, want %v", err, errNothingToTrim)
	}
	if _, err := trimFatbin([]byte("not a fat binary"), 9, 0); err == nil {
		t.Error("trimming something that is not a fat binary succeeded")
	}
}

// A library larger than one LoadProgram (cuRAND's fat binary is 29 MB) is
// sent as the part the device can use, and runs.
func TestDriverLibraryTooLargeToSend(t *testing.T) {
	d, log := newDriver(t)
	const th = Thread(23)
	// vecadd's fat binary, with a cubin for sm_100 too large to send added.
	fat := readTestdata(t, "fatbin/vecadd.fatbin")
	huge := fatbinOf(testEntry{fatbin.KindELF, 100, make([]byte, maxLoadImage(0)+1)})
	fat = append(fat, huge[fatbin.HeaderSize:]...)
	binary.LittleEndian.PutUint64(fat[8:], uint64(len(fat)-fatbin.HeaderSize))
	img := inCmem(t, fat)
	lib, r := d.LibraryLoadData(th, img.addr(0), LibraryOptions{Preserved: true})
	must(t, "LibraryLoadData", r)
	k, r := d.LibraryGetKernel(th, lib, "vecadd")
	must(t, "LibraryGetKernel", r)
	c, r := d.CtxCreate(th, 0, 0)
	must(t, "CtxCreate", r)
	runVecadd(t, d, th, k)
	if !strings.Contains(log.String(), "sending the") {
		t.Errorf("the log does not say the image was cut down:\n%s", log.String())
	}
	must(t, "CtxDestroy", d.CtxDestroy(th, c))
	must(t, "LibraryUnload", d.LibraryUnload(lib))

	// An image that fits is sent as it is, so that its hash is its own.
	fits := make([]byte, maxLoadImage(len("fits")))
	if got, r := d.fitImage(d.devices[0], fits, "fits"); r != cu.CUDA_SUCCESS || &got[0] != &fits[0] {
		t.Errorf("fitImage of an image of the largest size sent whole: %v, or a copy", r)
	}

	// A cubin cannot be cut down: it is refused before anything is sent.
	big := make([]byte, maxLoadImage(0)+64)
	copy(big, readTestdata(t, "fatbin/vecadd.sm_90.cubin"))
	if got, r := d.fitImage(d.devices[0], big, "big.cubin"); r != cu.CUDA_ERROR_NOT_SUPPORTED || got != nil {
		t.Errorf("fitImage of an oversized cubin = %d bytes, %v; want CUDA_ERROR_NOT_SUPPORTED", len(got), r)
	}
}

// FuzzTrimFatbin: any input either fails or gives a fat binary that parses,
// holding no more entries than the input.
func FuzzTrimFatbin(f *testing.F) {
	f.Add(fatbinOf(testEntry{fatbin.KindELF, 80, []byte("sm_80")}, testEntry{fatbin.KindELF, 90, []byte("sm_90")},
		testEntry{fatbin.KindPTX, 90, []byte(".version 9.0")}), 9, 0)
	f.Add(fatbinOf(testEntry{fatbin.KindELF, 86, []byte("sm_86")}), 8, 9)
	f.Add([]byte("\x50\xed\x55\xba\x01\x00\x10\x00"), 9, 0)
	f.Fuzz(func(t *testing.T, data []byte, major, minor int) {
		out, err := trimFatbin(data, major, minor)
		if err != nil {
			return
		}
		in, _ := fatbin.Parse(data)
		kept, err := fatbin.Parse(out)
		if err != nil {
			t.Fatalf("the trimmed fat binary does not parse: %v", err)
		}
		if len(kept) == 0 || len(kept) > len(in) {
			t.Fatalf("kept %d of %d entries", len(kept), len(in))
		}
	})
}
