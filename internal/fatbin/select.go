package fatbin

import (
	"bytes"
	"encoding/binary"
)

// IsFatbin reports whether b starts with a fatbin container header.
func IsFatbin(b []byte) bool {
	return len(b) >= HeaderSize && binary.LittleEndian.Uint32(b) == Magic
}

// IsWrapper reports whether b starts with a fatbin wrapper's magic.
func IsWrapper(b []byte) bool {
	return len(b) >= WrapperSize && binary.LittleEndian.Uint32(b) == WrapperMagic
}

// IsELF reports whether b starts with the ELF magic (a cubin).
func IsELF(b []byte) bool { return bytes.HasPrefix(b, []byte("\x7fELF")) }

// sniffLimit bounds how far IsPTX looks for the .version directive.
const sniffLimit = 64 << 10

// IsPTX reports whether b looks like PTX text: after white space and
// comments, the first thing in it is the .version directive every PTX module
// starts with.
func IsPTX(b []byte) bool {
	if len(b) > sniffLimit {
		b = b[:sniffLimit]
	}
	for len(b) > 0 {
		switch {
		case b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r':
			b = b[1:]
		case bytes.HasPrefix(b, []byte("//")):
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				return false
			}
			b = b[i+1:]
		case bytes.HasPrefix(b, []byte("/*")):
			i := bytes.Index(b[2:], []byte("*/"))
			if i < 0 {
				return false
			}
			b = b[2+i+2:]
		default:
			rest, ok := bytes.CutPrefix(b, []byte(".version"))
			return ok && len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t')
		}
	}
	return false
}

// Select picks, for a device of compute capability smMajor.smMinor, the
// best PTX (the highest architecture not above the device's, then the
// highest PTX ISA version) and the best ELF (an exact architecture match;
// the first one if several). Either is nil when there is none.
func Select(entries []Entry, smMajor, smMinor int) (ptx, elf *Entry) {
	if smMajor < 0 || smMinor < 0 || smMinor > 9 {
		return nil, nil
	}
	sm := uint64(smMajor)*10 + uint64(smMinor)
	for i := range entries {
		e := &entries[i]
		switch e.Kind {
		case KindELF:
			if elf == nil && uint64(e.Arch) == sm {
				elf = e
			}
		case KindPTX:
			if uint64(e.Arch) > sm {
				continue
			}
			if ptx == nil || e.Arch > ptx.Arch ||
				(e.Arch == ptx.Arch && (e.Major > ptx.Major || (e.Major == ptx.Major && e.Minor > ptx.Minor))) {
				ptx = e
			}
		}
	}
	return ptx, elf
}
