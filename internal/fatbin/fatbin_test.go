package fatbin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
)

func readTestdata(t testing.TB, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"..", "..", "testdata"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	lineComment = regexp.MustCompile(`//.*`)
	spaces      = regexp.MustCompile(`[ \t]+`)
)

// normalizePTX drops what nvcc leaves out of the PTX it embeds in a fatbin:
// comments, indentation and blank lines; runs of blanks become one space.
func normalizePTX(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		line = lineComment.ReplaceAllString(line, "")
		line = strings.TrimSpace(spaces.ReplaceAllString(line, " "))
		if line != "" {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func TestSamples(t *testing.T) {
	cubin := readTestdata(t, "fatbin", "vecadd.sm_90.cubin")
	ptx80 := normalizePTX(string(readTestdata(t, "kernels", "vecadd.ptx")))
	ptx90 := normalizePTX(string(readTestdata(t, "kernels", "vecadd.sm_90.ptx")))

	type want struct {
		kind        Kind
		arch        uint32
		major       uint16
		compression Compression
		payload     string // normalized PTX, or "cubin"
	}
	ptx := func(arch uint32, text string) want { return want{KindPTX, arch, 9, CompressionZstd, text} }
	elf := want{KindELF, 90, 1, CompressionNone, "cubin"}
	tests := []struct {
		file string
		want []want
	}{
		{"vecadd.fatbin", []want{ptx(90, ptx90), elf}},
		{"vecadd.default.fatbin", []want{elf, ptx(90, ptx90)}},
		{"vecadd.compressed.fatbin", []want{ptx(80, ptx80)}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := readTestdata(t, "fatbin", tt.file)
			if !IsFatbin(data) || IsELF(data) || IsPTX(data) {
				t.Errorf("sniffing: fatbin %v elf %v ptx %v", IsFatbin(data), IsELF(data), IsPTX(data))
			}
			if size, err := ContainerSize(data); err != nil || size != uint64(len(data)) {
				t.Errorf("ContainerSize = %d, %v; want %d", size, err, len(data))
			}
			entries, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != len(tt.want) {
				t.Fatalf("%d entries; want %d: %v", len(entries), len(tt.want), entries)
			}
			for i, w := range tt.want {
				e := &entries[i]
				if e.Kind != w.kind || e.Arch != w.arch || e.Major != w.major || e.Compression != w.compression {
					t.Errorf("entry %d: %v; want %v arch %d v%d %v", i, e, w.kind, w.arch, w.major, w.compression)
				}
				if e.Flags&Flag64Bit == 0 || e.Flags&FlagLinux == 0 {
					t.Errorf("entry %d flags %#x: want 64-bit Linux", i, e.Flags)
				}
				p, err := e.Payload()
				if err != nil {
					t.Fatalf("entry %d: %v", i, err)
				}
				if uint64(len(p)) > e.Size {
					t.Errorf("entry %d: payload %d bytes > Size %d", i, len(p), e.Size)
				}
				switch w.payload {
				case "cubin":
					if !bytes.Equal(p, cubin) || !IsELF(p) {
						t.Errorf("entry %d: ELF payload differs from vecadd.sm_90.cubin", i)
					}
				default:
					if !IsPTX(p) || bytes.IndexByte(p, 0) >= 0 {
						t.Errorf("entry %d: payload is not clean PTX text", i)
					}
					if got := normalizePTX(string(p)); got != w.payload {
						t.Errorf("entry %d: PTX differs from nvcc -ptx output:\n%s\n---- want ----\n%s", i, got, w.payload)
					}
				}
			}
		})
	}
}

func TestConcatenatedContainers(t *testing.T) {
	a := readTestdata(t, "fatbin", "vecadd.default.fatbin")
	b := readTestdata(t, "fatbin", "vecadd.compressed.fatbin")
	data := append(append(append([]byte{}, a...), make([]byte, 8)...), b...)
	entries, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.String())
	}
	want := []string{
		"elf sm_90 v1.8 none 3848 bytes",
		"ptx compute_90 v9.0 zstd 885 bytes",
		"ptx compute_80 v9.0 zstd 885 bytes",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("entries %q; want %q", got, want)
	}
	if entries[2].Offset != len(a)+8+HeaderSize {
		t.Errorf("third entry at %#x; want %#x", entries[2].Offset, len(a)+8+HeaderSize)
	}
}

// put writes v little-endian at b[off:].
func put(b []byte, off int, v any) {
	switch v := v.(type) {
	case uint16:
		binary.LittleEndian.PutUint16(b[off:], v)
	case uint32:
		binary.LittleEndian.PutUint32(b[off:], v)
	case uint64:
		binary.LittleEndian.PutUint64(b[off:], v)
	}
}

// testEntry describes an entry for build.
type testEntry struct {
	kind       Kind
	arch       uint32
	major      uint16
	minor      uint16
	flags      uint64
	stored     []byte // payload as stored
	size       uint64 // uncompressed size (compressed entries)
	name, opts string
}

// build makes a fatbin container. Names and options go in an extended
// header after the 72 fixed bytes.
func build(entries ...testEntry) []byte {
	var body []byte
	for _, e := range entries {
		hs := 0x48
		extra := e.name + "\x00" + e.opts + "\x00"
		hs += (len(extra) + 7) &^ 7
		padded := (len(e.stored) + 7) &^ 7
		h := make([]byte, hs+padded)
		put(h, 0, uint16(e.kind))
		put(h, 2, uint16(0x0101))
		put(h, 4, uint32(hs))
		put(h, 8, uint64(padded))
		if e.flags&(FlagCompressedLZ4|FlagCompressedZstd) != 0 {
			put(h, 0x10, uint32(len(e.stored)))
			put(h, 0x38, e.size)
		}
		put(h, 0x18, e.minor)
		put(h, 0x1a, e.major)
		put(h, 0x1c, e.arch)
		if e.name != "" {
			put(h, 0x20, uint32(0x48))
			put(h, 0x24, uint32(len(e.name)+1))
		}
		if e.opts != "" {
			put(h, 0x40, uint32(0x48+len(e.name)+1))
			put(h, 0x44, uint32(len(e.opts)))
		}
		put(h, 0x28, e.flags|Flag64Bit|FlagLinux)
		copy(h[0x48:], extra)
		copy(h[hs:], e.stored)
		body = append(body, h...)
	}
	hdr := make([]byte, HeaderSize)
	put(hdr, 0, uint32(Magic))
	put(hdr, 4, uint16(1))
	put(hdr, 6, uint16(HeaderSize))
	put(hdr, 8, uint64(len(body)))
	return append(hdr, body...)
}

func TestBuiltEntries(t *testing.T) {
	text := readTestdata(t, "kernels", "vecadd.ptx")
	data := build(
		testEntry{kind: KindPTX, arch: 75, major: 8, minor: 5, stored: text, name: "vecadd.cu", opts: "-O3 -lineinfo"},
		testEntry{kind: KindPTX, arch: 86, major: 9, flags: FlagCompressedLZ4, stored: lz4Compress(text), size: uint64(len(text))},
		testEntry{kind: Kind(0x40), arch: 90, stored: []byte("opaque")},
	)
	entries, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d entries", len(entries))
	}
	if e := entries[0]; e.Name != "vecadd.cu" || e.Options != "-O3 -lineinfo" || e.Major != 8 || e.Minor != 5 {
		t.Errorf("entry 0: name %q options %q v%d.%d", e.Name, e.Options, e.Major, e.Minor)
	}
	for i := range 2 {
		p, err := entries[i].Payload()
		if err != nil || !bytes.Equal(p, text) {
			t.Errorf("entry %d (%v): payload equal %v, %v", i, entries[i].Compression, bytes.Equal(p, text), err)
		}
	}
	if got := entries[2].Kind.String(); got != "kind(0x40)" {
		t.Errorf("unknown kind prints %q", got)
	}
	if p, err := entries[2].Payload(); err != nil || !bytes.HasPrefix(p, []byte("opaque")) {
		t.Errorf("unknown-kind payload %q, %v", p, err)
	}
}

// mutate returns a copy of the vecadd.fatbin sample with f applied.
func mutate(t *testing.T, f func(b []byte) []byte) []byte {
	b := readTestdata(t, "fatbin", "vecadd.fatbin")
	return f(append([]byte(nil), b...))
}

func TestMalformed(t *testing.T) {
	const e0 = HeaderSize // first entry (zstd PTX, header 0x50, payload 0x180)
	const e1 = e0 + 0x50 + 0x180
	tests := []struct {
		name string
		data func(b []byte) []byte
		want error
	}{
		{"empty", func(b []byte) []byte { return nil }, ErrMalformed},
		{"zeros only", func(b []byte) []byte { return make([]byte, 64) }, ErrMalformed},
		{"short header", func(b []byte) []byte { return b[:10] }, ErrMalformed},
		{"bad magic", func(b []byte) []byte { b[0] ^= 1; return b }, ErrMalformed},
		{"old magic", func(b []byte) []byte { put(b, 0, uint32(oldMagic)); return b }, ErrUnsupported},
		{"version 2", func(b []byte) []byte { put(b, 4, uint16(2)); return b }, ErrUnsupported},
		{"header size 8", func(b []byte) []byte { put(b, 6, uint16(8)); return b }, ErrMalformed},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, ErrMalformed},
		{"size huge", func(b []byte) []byte { put(b, 8, ^uint64(0)); return b }, ErrMalformed},
		{"size cuts an entry header", func(b []byte) []byte { put(b, 8, uint64(e1-HeaderSize+10)); return b[:e1+10] }, ErrMalformed},
		{"trailing garbage", func(b []byte) []byte { return append(b, 1, 2, 3) }, ErrMalformed},
		{"entry header size 0", func(b []byte) []byte { put(b, e0+4, uint32(0)); return b }, ErrMalformed},
		{"entry header size huge", func(b []byte) []byte { put(b, e0+4, ^uint32(0)); return b }, ErrMalformed},
		{"entry payload huge", func(b []byte) []byte { put(b, e0+8, ^uint64(0)); return b }, ErrMalformed},
		{"entry payload past container", func(b []byte) []byte { put(b, e1+8, uint64(0x1000)); return b }, ErrMalformed},
		{"compressed size 0", func(b []byte) []byte { put(b, e0+0x10, uint32(0)); return b }, ErrMalformed},
		{"compressed size past payload", func(b []byte) []byte { put(b, e0+0x10, uint32(0x181)); return b }, ErrMalformed},
		{"uncompressed size 0", func(b []byte) []byte { put(b, e0+0x38, uint64(0)); return b }, ErrMalformed},
		{"uncompressed size over cap", func(b []byte) []byte { put(b, e0+0x38, uint64(MaxPayload+1)); return b }, ErrMalformed},
		{"implausible ratio", func(b []byte) []byte { put(b, e0+0x38, uint64(100<<20)); return b }, ErrMalformed},
		{"two compressions", func(b []byte) []byte { put(b, e0+0x28, uint64(FlagCompressedZstd|FlagCompressedLZ4)); return b }, ErrMalformed},
		{"name past entry", func(b []byte) []byte { put(b, e0+0x20, uint32(0x1000)); put(b, e0+0x24, uint32(4)); return b }, ErrMalformed},
		{"name offset wraps", func(b []byte) []byte { put(b, e0+0x20, ^uint32(0)); put(b, e0+0x24, uint32(2)); return b }, ErrMalformed},
		{"options past entry", func(b []byte) []byte { put(b, e0+0x40, uint32(0x10)); put(b, e0+0x44, uint32(0x1000)); return b }, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries, err := Parse(mutate(t, tt.data))
			if !errors.Is(err, tt.want) || v1.CodeOf(err) != v1.CodeOf(tt.want) {
				t.Errorf("Parse error %v; want %v", err, tt.want)
			}
			if entries != nil {
				t.Errorf("entries returned with an error")
			}
		})
	}
}

func TestBadPayloads(t *testing.T) {
	const e0 = HeaderSize
	text := []byte(strings.Repeat(".version 9.0\n.target sm_90\n", 20))
	tests := []struct {
		name string
		data []byte
	}{
		{"zstd garbage", mutate(t, func(b []byte) []byte { copy(b[e0+0x50+8:], "garbage!garbage!"); return b })},
		{"zstd not zstd", mutate(t, func(b []byte) []byte { copy(b[e0+0x50:], "\x00\x00\x00\x00"); return b })},
		{"zstd frame size disagrees", mutate(t, func(b []byte) []byte { put(b, e0+0x38, uint64(884)); return b })},
		{"zstd frame cut short", mutate(t, func(b []byte) []byte { put(b, e0+0x10, uint32(100)); return b })},
		{"lz4 offset zero", build(testEntry{kind: KindPTX, flags: FlagCompressedLZ4, stored: []byte{0x10, 'a', 0, 0}, size: 5})},
		{"lz4 offset before start", build(testEntry{kind: KindPTX, flags: FlagCompressedLZ4, stored: []byte{0x10, 'a', 2, 0}, size: 5})},
		{"lz4 literals past input", build(testEntry{kind: KindPTX, flags: FlagCompressedLZ4, stored: []byte{0x50, 'a'}, size: 5})},
		{"lz4 output too long", build(testEntry{kind: KindPTX, flags: FlagCompressedLZ4, stored: lz4Compress(text), size: uint64(len(text) - 1)})},
		{"lz4 output too short", build(testEntry{kind: KindPTX, flags: FlagCompressedLZ4, stored: lz4Compress(text), size: uint64(len(text) + 1)})},
		{"lz4 endless length", build(testEntry{kind: KindPTX, flags: FlagCompressedLZ4, stored: []byte{0xf0, 255, 255, 255}, size: 5000})},
		{"lz4 offset cut", build(testEntry{kind: KindPTX, flags: FlagCompressedLZ4, stored: []byte{0x10, 'a', 1}, size: 5})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries, err := Parse(tt.data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			p, err := entries[0].Payload()
			if !errors.Is(err, ErrMalformed) || !errors.Is(err, v1.ErrMalformed) {
				t.Errorf("Payload = %d bytes, %v; want malformed", len(p), err)
			}
		})
	}
}

func TestLZ4Vectors(t *testing.T) {
	tests := []struct {
		name   string
		stored []byte
		want   string
	}{
		{"literals only", []byte{0x50, 'h', 'e', 'l', 'l', 'o'}, "hello"},
		{"overlapping match", []byte{0x11, 'a', 1, 0, 0x10, 'b'}, "aaaaaab"},
		{"copy back", []byte{0x30, 'a', 'b', 'c', 3, 0, 0x10, '!'}, "abc" + "abca" + "!"},
		{"long literal", append([]byte{0xf0, 1}, []byte(strings.Repeat("x", 16))...), strings.Repeat("x", 16)},
		{"long match", []byte{0x1f, 'z', 1, 0, 255, 0, 0x10, '.'}, strings.Repeat("z", 1+15+4+255) + "."},
	}
	for _, tt := range tests {
		got, err := decodeLZ4(tt.stored, uint64(len(tt.want)))
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	for _, s := range []string{"", "a", strings.Repeat("abcd", 1000), string(readTestdata(t, "kernels", "matmul.ptx"))} {
		if s == "" {
			continue
		}
		got, err := decodeLZ4(lz4Compress([]byte(s)), uint64(len(s)))
		if err != nil || string(got) != s {
			t.Errorf("round trip of %d bytes: %v", len(s), err)
		}
	}
}

func TestWrapper(t *testing.T) {
	mk := func(magic, version uint32, data, extra uint64) []byte {
		b := make([]byte, WrapperSize)
		put(b, 0, magic)
		put(b, 4, version)
		put(b, 8, data)
		put(b, 16, extra)
		return b
	}
	tests := []struct {
		name string
		b    []byte
		want Wrapper
		err  error
	}{
		{"v1", mk(WrapperMagic, 1, 0x7f0000001000, 0), Wrapper{1, 0x7f0000001000, 0}, nil},
		{"v2", mk(WrapperMagic, 2, 0x4000, 0x5000), Wrapper{2, 0x4000, 0x5000}, nil},
		{"short", mk(WrapperMagic, 1, 1, 0)[:20], Wrapper{}, ErrMalformed},
		{"magic", mk(Magic, 1, 1, 0), Wrapper{}, ErrMalformed},
		{"version 3", mk(WrapperMagic, 3, 1, 0), Wrapper{}, ErrUnsupported},
		{"null data", mk(WrapperMagic, 1, 0, 0), Wrapper{}, ErrMalformed},
	}
	for _, tt := range tests {
		got, err := ParseWrapper(tt.b)
		if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
			t.Errorf("%s: %+v, %v; want %+v, %v", tt.name, got, err, tt.want, tt.err)
		}
		if IsWrapper(tt.b) != (tt.name != "magic" && tt.name != "short") {
			t.Errorf("%s: IsWrapper = %v", tt.name, IsWrapper(tt.b))
		}
	}
}

func TestSelect(t *testing.T) {
	entries := []Entry{
		{Kind: KindELF, Arch: 80},
		{Kind: KindPTX, Arch: 52, Major: 9},
		{Kind: KindPTX, Arch: 80, Major: 8, Minor: 0},
		{Kind: KindPTX, Arch: 80, Major: 8, Minor: 5},
		{Kind: KindELF, Arch: 90},
		{Kind: KindPTX, Arch: 100, Major: 9},
		{Kind: KindELF, Arch: 90, Name: "second"},
	}
	tests := []struct {
		major, minor     int
		wantPTX, wantELF int // indexes, -1 for none
	}{
		{9, 0, 3, 4},
		{8, 6, 3, -1},
		{8, 0, 3, 0},
		{7, 5, 1, -1},
		{5, 0, -1, -1},
		{10, 0, 5, -1},
		{12, 0, 5, -1},
		{9, 10, -1, -1}, // not a compute capability
		{-1, 0, -1, -1},
	}
	index := func(e *Entry) int {
		for i := range entries {
			if e == &entries[i] {
				return i
			}
		}
		return -1
	}
	for _, tt := range tests {
		ptx, elf := Select(entries, tt.major, tt.minor)
		if index(ptx) != tt.wantPTX || index(elf) != tt.wantELF {
			t.Errorf("Select(sm_%d%d) = ptx %d, elf %d; want %d, %d", tt.major, tt.minor, index(ptx), index(elf), tt.wantPTX, tt.wantELF)
		}
	}
}

func TestIsPTX(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{".version 9.0\n.target sm_90", true},
		{"//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 9.0", true},
		{"  /* block\n comment */\t.version\t8.5", true},
		{".versionx 9.0", false},
		{".version", false},
		{".target sm_90\n.version 9.0", false},
		{"// unterminated comment", false},
		{"/* unterminated", false},
		{"\x7fELF", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsPTX([]byte(tt.text)); got != tt.want {
			t.Errorf("IsPTX(%q) = %v; want %v", tt.text, got, tt.want)
		}
	}
	for _, f := range []string{"vecadd.ptx", "matmul.sm_90.ptx", "libm.ptx"} {
		if !IsPTX(readTestdata(t, "kernels", f)) {
			t.Errorf("IsPTX(%s) = false", f)
		}
	}
}

// lz4Compress is a plain greedy LZ4 block compressor, here only to make test
// inputs for the decoder.
func lz4Compress(src []byte) []byte {
	var out []byte
	writeLen := func(n int) {
		for ; n >= 255; n -= 255 {
			out = append(out, 255)
		}
		out = append(out, byte(n))
	}
	table := map[uint32]int{}
	lit := 0 // start of pending literals
	i := 0
	for i+4 <= len(src) {
		key := binary.LittleEndian.Uint32(src[i:])
		cand, ok := table[key]
		table[key] = i
		if !ok || i-cand > 65535 {
			i++
			continue
		}
		n := 4
		for i+n < len(src) && src[cand+n] == src[i+n] {
			n++
		}
		nl, ml := i-lit, n-4
		token := byte(min(nl, 15)<<4 | min(ml, 15))
		out = append(out, token)
		if nl >= 15 {
			writeLen(nl - 15)
		}
		out = append(out, src[lit:i]...)
		out = append(out, byte(i-cand), byte((i-cand)>>8))
		if ml >= 15 {
			writeLen(ml - 15)
		}
		i += n
		lit = i
	}
	nl := len(src) - lit
	out = append(out, byte(min(nl, 15)<<4))
	if nl >= 15 {
		writeLen(nl - 15)
	}
	return append(out, src[lit:]...)
}

func ExampleSelect() {
	data, _ := os.ReadFile("../../testdata/fatbin/vecadd.fatbin")
	entries, err := Parse(data)
	if err != nil {
		panic(err)
	}
	ptx, elf := Select(entries, 9, 0) // an H100
	fmt.Println(ptx)
	fmt.Println(elf)
	text, _ := ptx.Payload()
	fmt.Println(IsPTX(text))
	// Output:
	// ptx compute_90 v9.0 zstd 885 bytes
	// elf sm_90 v1.8 none 3848 bytes
	// true
}
