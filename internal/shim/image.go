package shim

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A module image reaches cuModuleLoadData as a bare pointer: its length must be
// worked out from its contents, as the real driver does. The forms:
//
//   - a cubin: a 64-bit little-endian ELF file, as long as the furthest of its
//     headers, section contents and segment contents;
//   - a fat binary: its header (magic 0xBA55ED50, u16 version, u16 header
//     size, u64 size of what follows the header) and what follows;
//   - a fat binary wrapper (__fatBinC_Wrapper_t, what nvcc embeds and the CUDA
//     runtime registers: magic 0x466243B1, u32 version, the fat binary's
//     address, a pointer we do not need), which names a fat binary elsewhere;
//   - PTX: NUL-terminated text.
//
// The parser reads through a memReader, so that it works on the application's
// memory and, in tests and fuzzing, on a byte slice.

// Magic numbers of the image forms.
const (
	fatbinMagic        = 0xBA55ED50
	fatbinWrapperMagic = 0x466243B1
	elfMagic           = "\x7fELF"
)

// Limits that keep a corrupt header from describing an absurd image.
const (
	maxImageSize = 4 << 30 // no module image is larger than 4 GiB
	maxPTXSize   = 1 << 30
)

// imageKind is the form of a module image.
type imageKind uint8

const (
	imagePTX imageKind = iota + 1
	imageCubin
	imageFatbin
)

func (k imageKind) String() string {
	switch k {
	case imagePTX:
		return "PTX"
	case imageCubin:
		return "cubin"
	case imageFatbin:
		return "fatbin"
	}
	return "unknown"
}

// Errors returned by image parsing.
var (
	errBadImage = errors.New("invalid module image")
)

// memReader reads memory at absolute addresses.
type memReader interface {
	// read returns the n bytes at addr, or false if they are not readable.
	read(addr, n uint64) ([]byte, bool)
	// strlen returns the length of the NUL-terminated string at addr, or
	// false if there is no NUL within max bytes.
	strlen(addr uint64, max uint64) (uint64, bool)
}

// image is where a module image lies.
type image struct {
	addr, size uint64
	kind       imageKind
}

// findImage works out the extent of the module image at addr. A fat binary
// wrapper resolves to the fat binary it names.
func findImage(m memReader, addr uint64) (image, error) {
	if addr == 0 {
		return image{}, fmt.Errorf("%w: NULL image", errBadImage)
	}
	head, ok := m.read(addr, 4)
	if !ok {
		return image{}, fmt.Errorf("%w: unreadable", errBadImage)
	}
	le := binary.LittleEndian
	switch {
	case string(head) == elfMagic:
		n, err := elfSize(m, addr)
		return image{addr: addr, size: n, kind: imageCubin}, err
	case le.Uint32(head) == fatbinMagic:
		n, err := fatbinSize(m, addr)
		return image{addr: addr, size: n, kind: imageFatbin}, err
	case le.Uint32(head) == fatbinWrapperMagic:
		w, ok := m.read(addr, 16)
		if !ok {
			return image{}, fmt.Errorf("%w: truncated fat binary wrapper", errBadImage)
		}
		if v := le.Uint32(w[4:]); v != 1 && v != 2 {
			return image{}, fmt.Errorf("%w: fat binary wrapper version %d", errBadImage, v)
		}
		data := le.Uint64(w[8:])
		if data == 0 || data == addr {
			return image{}, fmt.Errorf("%w: fat binary wrapper names no fat binary", errBadImage)
		}
		h, ok := m.read(data, 4)
		if !ok || le.Uint32(h) != fatbinMagic {
			return image{}, fmt.Errorf("%w: fat binary wrapper does not point at a fat binary", errBadImage)
		}
		n, err := fatbinSize(m, data)
		return image{addr: data, size: n, kind: imageFatbin}, err
	}
	n, ok := m.strlen(addr, maxPTXSize)
	if !ok {
		return image{}, fmt.Errorf("%w: text image without a terminating NUL within %d bytes", errBadImage, maxPTXSize)
	}
	if n == 0 {
		return image{}, fmt.Errorf("%w: empty image", errBadImage)
	}
	return image{addr: addr, size: n, kind: imagePTX}, nil
}

// fatbinSize is the size of the fat binary at addr, header included.
func fatbinSize(m memReader, addr uint64) (uint64, error) {
	h, ok := m.read(addr, 16)
	if !ok {
		return 0, fmt.Errorf("%w: truncated fat binary header", errBadImage)
	}
	le := binary.LittleEndian
	hdr, body := uint64(le.Uint16(h[6:])), le.Uint64(h[8:])
	if hdr < 16 || body > maxImageSize || hdr+body > maxImageSize {
		return 0, fmt.Errorf("%w: fat binary header of %d bytes announcing %d more", errBadImage, hdr, body)
	}
	return hdr + body, nil
}

// ELF64 layout (little-endian).
const (
	elfHeaderSize  = 64
	elfShdrMinSize = 64
	elfPhdrMinSize = 56
	shtNobits      = 8
)

// elfSize is the extent of the 64-bit little-endian ELF file at addr.
func elfSize(m memReader, addr uint64) (uint64, error) {
	h, ok := m.read(addr, elfHeaderSize)
	if !ok {
		return 0, fmt.Errorf("%w: truncated ELF header", errBadImage)
	}
	if h[4] != 2 || h[5] != 1 {
		return 0, fmt.Errorf("%w: not a 64-bit little-endian ELF file", errBadImage)
	}
	le := binary.LittleEndian
	phoff, shoff := le.Uint64(h[0x20:]), le.Uint64(h[0x28:])
	phentsize, phnum := uint64(le.Uint16(h[0x36:])), uint64(le.Uint16(h[0x38:]))
	shentsize, shnum := uint64(le.Uint16(h[0x3A:])), uint64(le.Uint16(h[0x3C:]))
	end := uint64(elfHeaderSize)
	extend := func(off, n uint64) error {
		if off > maxImageSize || n > maxImageSize || off+n > maxImageSize {
			return fmt.Errorf("%w: ELF range %d+%d beyond %d bytes", errBadImage, off, n, maxImageSize)
		}
		end = max(end, off+n)
		return nil
	}
	if shnum > 0 {
		if shentsize < elfShdrMinSize {
			return 0, fmt.Errorf("%w: ELF section header size %d", errBadImage, shentsize)
		}
		if err := extend(shoff, shnum*shentsize); err != nil {
			return 0, err
		}
		for i := uint64(0); i < shnum; i++ {
			sh, ok := m.read(addr+shoff+i*shentsize, elfShdrMinSize)
			if !ok {
				return 0, fmt.Errorf("%w: unreadable ELF section header %d", errBadImage, i)
			}
			if le.Uint32(sh[4:]) == shtNobits {
				continue
			}
			if err := extend(le.Uint64(sh[0x18:]), le.Uint64(sh[0x20:])); err != nil {
				return 0, err
			}
		}
	}
	if phnum > 0 {
		if phentsize < elfPhdrMinSize {
			return 0, fmt.Errorf("%w: ELF program header size %d", errBadImage, phentsize)
		}
		if err := extend(phoff, phnum*phentsize); err != nil {
			return 0, err
		}
		for i := uint64(0); i < phnum; i++ {
			ph, ok := m.read(addr+phoff+i*phentsize, elfPhdrMinSize)
			if !ok {
				return 0, fmt.Errorf("%w: unreadable ELF program header %d", errBadImage, i)
			}
			if err := extend(le.Uint64(ph[8:]), le.Uint64(ph[0x20:])); err != nil {
				return 0, err
			}
		}
	}
	return end, nil
}

// sliceMem is a memReader over a byte slice placed at base, for tests.
type sliceMem struct {
	base uint64
	b    []byte
}

func (s sliceMem) read(addr, n uint64) ([]byte, bool) {
	if addr < s.base || addr-s.base > uint64(len(s.b)) || n > uint64(len(s.b))-(addr-s.base) {
		return nil, false
	}
	off := addr - s.base
	return s.b[off : off+n], true
}

func (s sliceMem) strlen(addr, max uint64) (uint64, bool) {
	if addr < s.base || addr-s.base >= uint64(len(s.b)) {
		return 0, false
	}
	for i, c := range s.b[addr-s.base:] {
		if uint64(i) >= max {
			return 0, false
		}
		if c == 0 {
			return uint64(i), true
		}
	}
	return 0, false
}
