package shim

import (
	"sort"
	"sync"

	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// alloc is one device allocation (cuMemAlloc, cuMemAllocPitch) or one module
// global (cuModuleGetGlobal), by address range.
type alloc struct {
	base, size uint64
	id         uint64 // CU_POINTER_ATTRIBUTE_BUFFER_ID
	ctx        *ctxObj
	sess       *session
	buf        *client.Buffer // nil for a module global
	mod        *module        // the module of a global
}

// memMap is every device address range the process knows, sorted by base.
type memMap struct {
	mu     sync.RWMutex
	allocs []*alloc // sorted by base, non-overlapping
}

// find returns the range that holds [addr, addr+n), n >= 1.
func (m *memMap) find(addr, n uint64) *alloc {
	m.mu.RLock()
	defer m.mu.RUnlock()
	i := sort.Search(len(m.allocs), func(i int) bool { return m.allocs[i].base > addr }) - 1
	if i < 0 {
		return nil
	}
	a := m.allocs[i]
	if off := addr - a.base; off >= a.size || n > a.size-off {
		return nil
	}
	return a
}

// exact returns the allocation that starts at addr (globals excluded).
func (m *memMap) exact(addr uint64) *alloc {
	m.mu.RLock()
	defer m.mu.RUnlock()
	i := sort.Search(len(m.allocs), func(i int) bool { return m.allocs[i].base >= addr })
	if i < len(m.allocs) && m.allocs[i].base == addr && m.allocs[i].buf != nil {
		return m.allocs[i]
	}
	return nil
}

func (m *memMap) insert(a *alloc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.allocs), func(i int) bool { return m.allocs[i].base >= a.base })
	if i < len(m.allocs) && m.allocs[i].base == a.base {
		m.allocs[i] = a // a global looked up again
		return
	}
	m.allocs = append(m.allocs, nil)
	copy(m.allocs[i+1:], m.allocs[i:])
	m.allocs[i] = a
}

func (m *memMap) remove(a *alloc) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.allocs), func(i int) bool { return m.allocs[i].base >= a.base })
	if i == len(m.allocs) || m.allocs[i] != a {
		return false
	}
	m.allocs = append(m.allocs[:i], m.allocs[i+1:]...)
	return true
}

// owned returns the allocations of context c.
func (m *memMap) owned(c *ctxObj) []*alloc {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*alloc
	for _, a := range m.allocs {
		if a.ctx == c && a.buf != nil {
			out = append(out, a)
		}
	}
	return out
}

// forgetModule drops the globals of a module being unloaded.
func (m *memMap) forgetModule(mod *module) {
	m.mu.Lock()
	defer m.mu.Unlock()
	keep := m.allocs[:0]
	for _, a := range m.allocs {
		if a.mod != mod {
			keep = append(keep, a)
		}
	}
	clear(m.allocs[len(keep):])
	m.allocs = keep
}

// MemAlloc is cuMemAlloc.
func (d *Driver) MemAlloc(t Thread, size uint64) (uint64, Result) {
	c, s, r := d.currentSession(t)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if size == 0 {
		return 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	b, err := s.s.CreateBuffer(bg, size)
	if err != nil {
		return 0, d.fail(err)
	}
	a := &alloc{base: b.Addr(), size: size, id: d.newID(), ctx: c, sess: s, buf: b}
	d.mem.insert(a)
	return a.base, cu.CUDA_SUCCESS
}

// pitchAlignment is the row alignment of cuMemAllocPitch.
const pitchAlignment = 512

// MemAllocPitch is cuMemAllocPitch: rows of width bytes padded to a multiple
// of 512.
func (d *Driver) MemAllocPitch(t Thread, width, height uint64, elemSize uint32) (ptr, pitch uint64, r Result) {
	if elemSize != 4 && elemSize != 8 && elemSize != 16 {
		return 0, 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	if width == 0 || height == 0 || width > 1<<40 || height > 1<<40 {
		return 0, 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	pitch = (width + pitchAlignment - 1) &^ (pitchAlignment - 1)
	ptr, r = d.MemAlloc(t, pitch*height)
	if r != cu.CUDA_SUCCESS {
		return 0, 0, r
	}
	return ptr, pitch, cu.CUDA_SUCCESS
}

// MemFree is cuMemFree: the pointer must be the start of an allocation of this
// process (CUDA_ERROR_INVALID_VALUE otherwise). The device finishes the work
// already submitted first, as the real cuMemFree does.
func (d *Driver) MemFree(t Thread, ptr uint64) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	if ptr == 0 {
		return cu.CUDA_SUCCESS
	}
	a := d.mem.exact(ptr)
	if a == nil {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	if r := d.syncSession(a.sess); r != cu.CUDA_SUCCESS {
		// The error belongs to earlier asynchronous work; it is reported
		// here, as the real driver's sticky errors are, and the memory is
		// still freed.
		d.freeAlloc(a)
		return r
	}
	return d.freeAlloc(a)
}

func (d *Driver) freeAlloc(a *alloc) Result {
	if !d.mem.remove(a) {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	return d.fail(a.buf.Close())
}

// MemGetInfo is cuMemGetInfo: the tenant's view, its quota when it has one.
func (d *Driver) MemGetInfo(t Thread) (free, total uint64, r Result) {
	_, s, r := d.currentSession(t)
	if r != cu.CUDA_SUCCESS {
		return 0, 0, r
	}
	free, total, err := s.s.MemInfo(bg)
	return free, total, d.fail(err)
}

// MemGetAddressRange is cuMemGetAddressRange: the allocation holding ptr.
func (d *Driver) MemGetAddressRange(t Thread, ptr uint64) (base, size uint64, r Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return 0, 0, r
	}
	a := d.mem.find(ptr, 1)
	if a == nil {
		return 0, 0, cu.CUDA_ERROR_NOT_FOUND
	}
	return a.base, a.size, cu.CUDA_SUCCESS
}

// deviceRange returns the known device range holding [addr, addr+n).
func (d *Driver) deviceRange(addr, n uint64) (*alloc, Result) {
	a := d.mem.find(addr, max(n, 1))
	if a == nil {
		return nil, cu.CUDA_ERROR_INVALID_VALUE
	}
	return a, cu.CUDA_SUCCESS
}
