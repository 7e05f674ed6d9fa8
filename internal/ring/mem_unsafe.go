package ring

import (
	"sync/atomic"
	"unsafe"
)

// word32 returns the 32-bit word at off in mem. off must be 4-byte aligned in
// a mapping (mappings are page aligned) and mem must hold off+4 bytes.
func word32(mem []byte, off int) *atomic.Uint32 {
	_ = mem[off+3]
	return (*atomic.Uint32)(unsafe.Pointer(&mem[off]))
}

// word64 returns the 64-bit word at off in mem, 8-byte aligned.
func word64(mem []byte, off int) *atomic.Uint64 {
	_ = mem[off+7]
	return (*atomic.Uint64)(unsafe.Pointer(&mem[off]))
}
