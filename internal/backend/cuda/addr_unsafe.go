package cuda

import (
	"sync/atomic"
	"unsafe"
)

// addrOf is the address of b's first byte, used only to identify host ranges
// (it is never turned back into a pointer). Unlike reflect's Pointer it does
// not make b escape, so the copy path allocates nothing.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// word32 is the 32-bit word at off in b, which must be 4-byte aligned and
// not Go memory (mapped host memory the device writes).
func word32(b []byte, off int) *atomic.Uint32 {
	_ = b[off+3]
	return (*atomic.Uint32)(unsafe.Pointer(&b[off]))
}
