package shim

import (
	"bytes"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The application's memory reaches the shim as addresses (uintptr): C memory
// the Go garbage collector neither owns nor moves. These helpers are the only
// place such an address becomes something Go can read or write.

// hostPtr turns an application address into a pointer without the uintptr
// arithmetic vet warns about: the address is not Go memory.
func hostPtr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// hostBytes is the n bytes of application memory at p.
func hostBytes(p uintptr, n uint64) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(hostPtr(p)), n)
}

// addrOf returns the address of the first byte of b (memory from a
// HostAllocator, which is not Go memory either).
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// readU64 and readU32 read the application's memory at p.
func readU64(p uintptr) uint64 { return *(*uint64)(hostPtr(p)) }
func readU32(p uintptr) uint32 { return *(*uint32)(hostPtr(p)) }

// writeU64, writeU32 write the application's memory at p.
func writeU64(p uintptr, v uint64) { *(*uint64)(hostPtr(p)) = v }
func writeU32(p uintptr, v uint32) { *(*uint32)(hostPtr(p)) = v }

// cString reads a NUL-terminated string of at most max bytes at p; ok is
// false if there is no NUL within max bytes.
func cString(p uintptr, max int) (s string, ok bool) {
	if p == 0 {
		return "", false
	}
	for i := 0; i < max; i++ {
		if *(*byte)(hostPtr(p + uintptr(i))) == 0 {
			return string(hostBytes(p, uint64(i))), true
		}
	}
	return "", false
}

// rawMem reads the application's memory directly. Reads cannot be checked:
// a pointer the application passes is trusted as the real driver trusts it.
type rawMem struct{}

func (rawMem) read(addr, n uint64) ([]byte, bool) {
	if addr == 0 {
		return nil, false
	}
	return hostBytes(uintptr(addr), n), true
}

// strlen scans page by page, so that it never reads past the page holding
// the terminating NUL.
func (rawMem) strlen(addr, max uint64) (uint64, bool) {
	if addr == 0 {
		return 0, false
	}
	const page = 4096
	var n uint64
	for n < max {
		chunk := page - (addr+n)%page
		b := hostBytes(uintptr(addr+n), chunk)
		if i := bytes.IndexByte(b, 0); i >= 0 {
			if n+uint64(i) > max {
				return 0, false
			}
			return n + uint64(i), true
		}
		n += chunk
	}
	return 0, false
}

// reserveHostRange keeps the host address range [base, base+size) free of
// host mappings (an inaccessible, unbacked reservation), so that an address
// in a session's device window can never also be host memory of this
// process. It fails if something is mapped there already.
func reserveHostRange(base, size uint64) error {
	p, err := unix.MmapPtr(-1, 0, hostPtr(uintptr(base)), uintptr(size), unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE|unix.MAP_FIXED_NOREPLACE)
	if err != nil {
		return err
	}
	if uintptr(p) != uintptr(base) { // a kernel that took the address as a hint
		unix.MunmapPtr(p, uintptr(size))
		return unix.EEXIST
	}
	return nil
}
