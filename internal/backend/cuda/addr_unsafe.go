package cuda

import "unsafe"

// addrOf is the address of b's first byte, used only to identify host ranges
// (it is never turned back into a pointer). Unlike reflect's Pointer it does
// not make b escape, so the copy path allocates nothing.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
