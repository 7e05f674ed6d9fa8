package fatbin

import (
	"encoding/binary"
	"fmt"
	"math"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Magic numbers.
const (
	Magic        = 0xBA55ED50 // fatbin container header
	WrapperMagic = 0x466243B1 // __fatBinC_Wrapper_t
	// oldMagic is the old-style fat binary format, which gpuos does not read.
	oldMagic = 0x1EE55A01
)

// Sizes of fixed structures.
const (
	HeaderSize      = 16 // container header
	entryHeaderSize = 64 // smallest entry header
	WrapperSize     = 24 // __fatBinC_Wrapper_t on a 64-bit host
)

// MaxPayload caps the uncompressed size of one entry (256 MiB): an entry that
// claims more is malformed. The largest cubins in NVIDIA's own libraries are
// a few MiB each.
const MaxPayload = 256 << 20

// MaxRatio bounds how much a compressed entry may claim to expand beyond its
// first MiB: at most MaxRatio bytes per stored byte. A zstd decoder sizes its
// window from the claim before producing anything, so without this bound a
// few hundred bytes could make it allocate MaxPayload. (LZ4 cannot exceed
// about 255:1; real nvcc output is near 3:1.)
const MaxRatio = 1024

// Errors returned by fatbin. Compare with errors.Is; they match v1.ErrMalformed
// and v1.ErrUnsupported too.
var (
	ErrMalformed   = v1.Errorf(v1.CodeMalformed, "bad fatbin")
	ErrUnsupported = v1.Errorf(v1.CodeUnsupported, "fatbin feature not supported")
)

// Kind is what an entry holds.
type Kind uint16

// Entry kinds.
const (
	KindPTX Kind = 1
	KindELF Kind = 2
)

func (k Kind) String() string {
	switch k {
	case KindPTX:
		return "ptx"
	case KindELF:
		return "elf"
	}
	return fmt.Sprintf("kind(%#x)", uint16(k))
}

// Entry flags.
const (
	Flag64Bit          = 0x1
	FlagDebug          = 0x2
	FlagLinux          = 0x10
	FlagCompressedLZ4  = 0x2000
	FlagCompressedZstd = 0x8000
)

// Compression is how an entry's payload is stored.
type Compression uint8

// Compressions.
const (
	CompressionNone Compression = iota
	CompressionLZ4              // LZ4 block format, flag 0x2000 (toolkits before CUDA 13)
	CompressionZstd             // one zstd frame, flag 0x8000 (CUDA 13)
)

func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// Entry is one PTX text or ELF image in a fatbin.
type Entry struct {
	Kind Kind
	// Arch is the SM architecture as major*10+minor: 90 for sm_90 or
	// compute_90, 100 for sm_100.
	Arch uint32
	// Major and Minor are the PTX ISA version for PTX (9.0) and the cubin
	// format version for ELF.
	Major, Minor uint16
	Flags        uint64
	Name         string // the entry's identifier, if it carries one
	Options      string // options for ptxas, if any
	Compression  Compression
	// Size is the payload's size once decompressed (for an uncompressed PTX,
	// trailing NUL padding included).
	Size uint64
	// Offset is where the entry header starts in the data given to Parse.
	Offset int

	raw []byte // the payload as stored
}

func (e *Entry) String() string {
	prefix := "sm"
	if e.Kind == KindPTX {
		prefix = "compute"
	}
	return fmt.Sprintf("%v %s_%d v%d.%d %s %d bytes", e.Kind, prefix, e.Arch, e.Major, e.Minor, e.Compression, e.Size)
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrMalformed)
}

// Parse reads every container in data, which may hold several concatenated
// (zero padding between them is skipped), and returns their entries in
// order. It reads headers only: see Entry.Payload.
func Parse(data []byte) ([]Entry, error) {
	var entries []Entry
	containers := 0
	for off := 0; off < len(data); {
		if data[off] == 0 && containers > 0 {
			off++ // alignment padding between containers
			continue
		}
		n, err := parseContainer(data, off, &entries)
		if err != nil {
			return nil, fmt.Errorf("parse fatbin: container at %#x: %w", off, err)
		}
		off += n
		containers++
	}
	if containers == 0 {
		return nil, fmt.Errorf("parse fatbin: %w", malformed("empty input"))
	}
	return entries, nil
}

// ContainerSize returns the total size in bytes (header included) of the
// fatbin container whose header starts hdr, which must hold at least
// HeaderSize bytes. It is how a caller holding only a pointer learns how
// much memory to read.
func ContainerSize(hdr []byte) (uint64, error) {
	if len(hdr) < HeaderSize {
		return 0, malformed("fatbin header: %d bytes, need %d", len(hdr), HeaderSize)
	}
	magic := binary.LittleEndian.Uint32(hdr)
	switch magic {
	case Magic:
	case oldMagic:
		return 0, fmt.Errorf("old-style fat binary (magic %#x): %w", magic, ErrUnsupported)
	default:
		return 0, malformed("magic %#x, want %#x", magic, uint32(Magic))
	}
	if v := binary.LittleEndian.Uint16(hdr[4:]); v != 1 {
		return 0, fmt.Errorf("fatbin version %d: %w", v, ErrUnsupported)
	}
	hs := uint64(binary.LittleEndian.Uint16(hdr[6:]))
	if hs < HeaderSize {
		return 0, malformed("header size %d", hs)
	}
	size := binary.LittleEndian.Uint64(hdr[8:])
	if size > math.MaxInt64-hs {
		return 0, malformed("size %d", size)
	}
	return hs + size, nil
}

// parseContainer appends the entries of the container at data[off:] and
// returns its length.
func parseContainer(data []byte, off int, entries *[]Entry) (int, error) {
	total, err := ContainerSize(data[off:])
	if err != nil {
		return 0, err
	}
	if total > uint64(len(data)-off) {
		return 0, malformed("container of %d bytes, only %d left", total, len(data)-off)
	}
	end := off + int(total)
	pos := off + int(binary.LittleEndian.Uint16(data[off+6:]))
	for pos < end {
		next, e, err := parseEntry(data[:end], pos)
		if err != nil {
			return 0, fmt.Errorf("entry at %#x: %w", pos, err)
		}
		*entries = append(*entries, e)
		pos = next
	}
	return int(total), nil
}

// parseEntry reads the entry header at data[pos:] and returns the offset
// after its payload. data ends where the container ends.
func parseEntry(data []byte, pos int) (int, Entry, error) {
	left := uint64(len(data) - pos)
	if left < entryHeaderSize {
		return 0, Entry{}, malformed("%d bytes left, an entry header needs %d", left, entryHeaderSize)
	}
	h := data[pos:]
	le := binary.LittleEndian
	hs := uint64(le.Uint32(h[4:]))
	padded := le.Uint64(h[8:])
	if hs < entryHeaderSize || hs > left {
		return 0, Entry{}, malformed("header size %d with %d bytes left", hs, left)
	}
	if padded > left-hs {
		return 0, Entry{}, malformed("payload of %d bytes with %d left", padded, left-hs)
	}
	span := hs + padded // both bounded by left, so no overflow
	e := Entry{
		Kind:   Kind(le.Uint16(h)),
		Minor:  le.Uint16(h[0x18:]),
		Major:  le.Uint16(h[0x1a:]),
		Arch:   le.Uint32(h[0x1c:]),
		Flags:  le.Uint64(h[0x28:]),
		Offset: pos,
	}
	var err error
	if e.Name, err = headerString(h[:span], le.Uint32(h[0x20:]), le.Uint32(h[0x24:])); err != nil {
		return 0, Entry{}, fmt.Errorf("name: %w", err)
	}
	if hs >= 0x48 {
		if e.Options, err = headerString(h[:span], le.Uint32(h[0x40:]), le.Uint32(h[0x44:])); err != nil {
			return 0, Entry{}, fmt.Errorf("options: %w", err)
		}
	}
	payload := h[hs:span]
	stored := uint64(le.Uint32(h[0x10:]))
	declared := le.Uint64(h[0x38:])
	switch e.Flags & (FlagCompressedLZ4 | FlagCompressedZstd) {
	case 0:
		e.Compression = CompressionNone
		e.raw = payload
		e.Size = padded
	case FlagCompressedLZ4, FlagCompressedZstd:
		e.Compression = CompressionLZ4
		if e.Flags&FlagCompressedZstd != 0 {
			e.Compression = CompressionZstd
		}
		if stored == 0 || stored > padded {
			return 0, Entry{}, malformed("compressed size %d in a payload of %d", stored, padded)
		}
		if declared == 0 || declared > MaxPayload {
			return 0, Entry{}, malformed("uncompressed size %d (at most %d)", declared, MaxPayload)
		}
		if declared > 1<<20+stored*MaxRatio {
			return 0, Entry{}, malformed("%d bytes claim to expand to %d", stored, declared)
		}
		e.raw = payload[:stored]
		e.Size = declared
	default:
		return 0, Entry{}, malformed("flags %#x ask for two compressions", e.Flags)
	}
	return pos + int(span), e, nil
}

// headerString returns the NUL-trimmed string at [off, off+n) of the entry
// (header and payload), or "" when n is 0.
func headerString(entry []byte, off, n uint32) (string, error) {
	if n == 0 {
		return "", nil
	}
	if uint64(off)+uint64(n) > uint64(len(entry)) {
		return "", malformed("string at %d+%d beyond the entry's %d bytes", off, n, len(entry))
	}
	s := entry[off : off+n]
	for len(s) > 0 && s[len(s)-1] == 0 {
		s = s[:len(s)-1]
	}
	return string(s), nil
}

// Payload returns the entry's content, decompressed. PTX comes without the
// NUL padding that follows the text. Each call returns a new slice.
func (e *Entry) Payload() ([]byte, error) {
	var out []byte
	var err error
	switch e.Compression {
	case CompressionNone:
		out = append([]byte(nil), e.raw...)
	case CompressionZstd:
		out, err = decodeZstd(e.raw, e.Size)
	case CompressionLZ4:
		out, err = decodeLZ4(e.raw, e.Size)
	default:
		err = fmt.Errorf("%v: %w", e.Compression, ErrUnsupported)
	}
	if err != nil {
		return nil, fmt.Errorf("payload of %v at %#x: %w", e.Kind, e.Offset, err)
	}
	if e.Kind == KindPTX {
		for len(out) > 0 && out[len(out)-1] == 0 {
			out = out[:len(out)-1]
		}
	}
	return out, nil
}

// Wrapper is cudart's __fatBinC_Wrapper_t, the structure a program passes
// to __cudaRegisterFatBinary.
type Wrapper struct {
	Version uint32
	// Data is the address of the fatbin container (its header).
	Data uint64
	// Extra is, for version 1, the address of an offline file name (usually
	// 0) and, for version 2, of a NULL-terminated array of prelinked fatbins.
	Extra uint64
}

// ParseWrapper validates the WrapperSize bytes of a fatbin wrapper and
// returns its fields. The caller reads the memory Data points to.
func ParseWrapper(b []byte) (Wrapper, error) {
	if len(b) < WrapperSize {
		return Wrapper{}, malformed("fatbin wrapper: %d bytes, need %d", len(b), WrapperSize)
	}
	le := binary.LittleEndian
	if m := le.Uint32(b); m != WrapperMagic {
		return Wrapper{}, malformed("fatbin wrapper magic %#x, want %#x", m, uint32(WrapperMagic))
	}
	w := Wrapper{Version: le.Uint32(b[4:]), Data: le.Uint64(b[8:]), Extra: le.Uint64(b[16:])}
	if w.Version != 1 && w.Version != 2 {
		return Wrapper{}, fmt.Errorf("fatbin wrapper version %d: %w", w.Version, ErrUnsupported)
	}
	if w.Data == 0 {
		return Wrapper{}, malformed("fatbin wrapper with a null data pointer")
	}
	return w, nil
}
