package shim

import (
	"fmt"
	"sort"
	"sync"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"golang.org/x/sys/unix"
)

// HostAllocator provides the page-locked host memory of cuMemHostAlloc and
// cuMemAllocHost. Today it is anonymous memory the shim maps itself; the
// daemon's shared pinned staging area will implement it too, so that copies
// from such memory need no extra copy.
type HostAllocator interface {
	// Alloc returns size bytes of zeroed, page-aligned memory.
	Alloc(size uint64) ([]byte, error)
	// Free returns memory Alloc gave.
	Free(mem []byte) error
}

// mmapHost allocates host memory with anonymous private mappings.
type mmapHost struct{}

func (mmapHost) Alloc(size uint64) ([]byte, error) {
	if size > 1<<46 {
		return nil, fmt.Errorf("host allocation of %d bytes: %w", size, unix.ENOMEM)
	}
	return unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
}

func (mmapHost) Free(mem []byte) error { return unix.Munmap(mem) }

// hostRegion is host memory the driver knows: allocated by it (mem set) or
// registered by the application (cuMemHostRegister).
type hostRegion struct {
	base, size uint64
	flags      uint32
	mem        []byte // the allocation, nil for registered memory
	id         uint64
	ctx        *ctxObj
}

// hostMap is the host regions, sorted by base.
type hostMap struct {
	mu      sync.RWMutex
	regions []*hostRegion
}

func (m *hostMap) find(addr, n uint64) *hostRegion {
	m.mu.RLock()
	defer m.mu.RUnlock()
	i := sort.Search(len(m.regions), func(i int) bool { return m.regions[i].base > addr }) - 1
	if i < 0 {
		return nil
	}
	r := m.regions[i]
	if off := addr - r.base; off >= r.size || n > r.size-off {
		return nil
	}
	return r
}

// insert adds r unless it overlaps a region already there.
func (m *hostMap) insert(r *hostRegion) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.regions), func(i int) bool { return m.regions[i].base >= r.base })
	if i > 0 && m.regions[i-1].base+m.regions[i-1].size > r.base {
		return false
	}
	if i < len(m.regions) && r.base+r.size > m.regions[i].base {
		return false
	}
	m.regions = append(m.regions, nil)
	copy(m.regions[i+1:], m.regions[i:])
	m.regions[i] = r
	return true
}

// removeAt removes the region starting at base whose kind (allocated or
// registered) matches.
func (m *hostMap) removeAt(base uint64, allocated bool) *hostRegion {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.regions), func(i int) bool { return m.regions[i].base >= base })
	if i == len(m.regions) || m.regions[i].base != base || (m.regions[i].mem != nil) != allocated {
		return nil
	}
	r := m.regions[i]
	m.regions = append(m.regions[:i], m.regions[i+1:]...)
	return r
}

// Host allocation flags the shim accepts. DEVICEMAP asks that kernels may
// read the memory in place, which a device in another process cannot: the
// allocation is made (copies from and to it work) and that is reported once;
// asking for its device address (cuMemHostGetDevicePointer) is refused.
const hostAllocFlags = cu.CU_MEMHOSTALLOC_PORTABLE | cu.CU_MEMHOSTALLOC_DEVICEMAP | cu.CU_MEMHOSTALLOC_WRITECOMBINED

// MemHostAlloc is cuMemHostAlloc (and, with flags 0, cuMemAllocHost).
func (d *Driver) MemHostAlloc(t Thread, size uint64, flags uint32) (uintptr, Result) {
	c, r := d.current(t)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if flags&^hostAllocFlags != 0 || size == 0 {
		return 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	if flags&cu.CU_MEMHOSTALLOC_DEVICEMAP != 0 {
		d.log.Once("hostalloc-devicemap", "cuMemHostAlloc: CU_MEMHOSTALLOC_DEVICEMAP: gpuos kernels cannot read host memory in place; the memory serves copies only")
	}
	mem, err := d.cfg.Host.Alloc(size)
	if err != nil {
		return 0, cu.CUDA_ERROR_OUT_OF_MEMORY
	}
	reg := &hostRegion{base: uint64(addrOf(mem)), size: size, flags: flags, mem: mem, id: d.newID(), ctx: c}
	if !d.host.insert(reg) {
		d.cfg.Host.Free(mem)
		return 0, cu.CUDA_ERROR_UNKNOWN // the kernel gave an address already registered
	}
	return uintptr(reg.base), cu.CUDA_SUCCESS
}

// MemFreeHost is cuMemFreeHost.
func (d *Driver) MemFreeHost(p uintptr) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	reg := d.host.removeAt(uint64(p), true)
	if reg == nil {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	if err := d.cfg.Host.Free(reg.mem); err != nil {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	return cu.CUDA_SUCCESS
}

// Registration flags the shim accepts (DEVICEMAP as for cuMemHostAlloc). I/O
// memory is another device's memory, which gpuos cannot reach.
const hostRegisterFlags = cu.CU_MEMHOSTREGISTER_PORTABLE | cu.CU_MEMHOSTREGISTER_DEVICEMAP | cu.CU_MEMHOSTREGISTER_READ_ONLY

// MemHostRegister is cuMemHostRegister: the range is recorded as the
// application's pinned memory. Copies from it work as from any host memory.
func (d *Driver) MemHostRegister(t Thread, p uintptr, size uint64, flags uint32) Result {
	c, r := d.current(t)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if flags&cu.CU_MEMHOSTREGISTER_IOMEMORY != 0 {
		return d.Refuse("cuMemHostRegister: CU_MEMHOSTREGISTER_IOMEMORY")
	}
	if flags&^hostRegisterFlags != 0 || p == 0 || size == 0 || uint64(p)+size < uint64(p) {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	if flags&cu.CU_MEMHOSTREGISTER_DEVICEMAP != 0 {
		d.log.Once("hostregister-devicemap", "cuMemHostRegister: CU_MEMHOSTREGISTER_DEVICEMAP: gpuos kernels cannot read host memory in place; the memory serves copies only")
	}
	if !d.host.insert(&hostRegion{base: uint64(p), size: size, flags: flags, id: d.newID(), ctx: c}) {
		return cu.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
	}
	return cu.CUDA_SUCCESS
}

// MemHostUnregister is cuMemHostUnregister.
func (d *Driver) MemHostUnregister(p uintptr) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	if d.host.removeAt(uint64(p), false) == nil {
		return cu.CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
	}
	return cu.CUDA_SUCCESS
}

// MemHostGetFlags is cuMemHostGetFlags.
func (d *Driver) MemHostGetFlags(p uintptr) (uint32, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	reg := d.host.find(uint64(p), 1)
	if reg == nil || reg.mem == nil {
		return 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	return reg.flags, cu.CUDA_SUCCESS
}
