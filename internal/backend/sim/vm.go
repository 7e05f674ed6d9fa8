package sim

import (
	"fmt"
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gpuos/gpuos/internal/backend"
)

// addressSpace is a device's virtual memory: reservations, physical chunks and
// a page table keyed by granule. Kernels reach it through memView, which
// caches translations; every change to the page table bumps gen, which
// invalidates those caches.
type addressSpace struct {
	gran  uint64
	shift uint // log2(gran)
	limit uint64

	gen atomic.Uint64 // page-table generation

	mu           sync.RWMutex
	used         uint64         // bytes of live chunks
	reservations []*reservation // sorted by start, disjoint
	pages        map[uint64]*pte
}

type reservation struct {
	start, size uint64
	mapped      uint64 // granules mapped inside
}

func (r *reservation) end() uint64 { return r.start + r.size }

// pte is one granule's translation. Each pte of a mapping shares the mapping.
type pte struct {
	m          *mapping
	off        uint64 // the granule's offset in m.chunk
	accessible bool
}

type mapping struct {
	start, size uint64
	chunk       *chunk
	offset      uint64
}

// chunk is physical device memory: host bytes.
type chunk struct {
	dev  *Device
	size uint64
	// Guarded by addressSpace.mu.
	data     []byte
	maps     int // live mappings of it
	released bool
}

func newAddressSpace(gran, limit uint64) *addressSpace {
	return &addressSpace{
		gran:  gran,
		shift: uint(bits.TrailingZeros64(gran)),
		limit: limit,
		pages: map[uint64]*pte{},
	}
}

// aligned reports whether v is a multiple of the granularity.
func (as *addressSpace) aligned(v uint64) bool { return v&(as.gran-1) == 0 }

// reserve finds the lowest free, aligned range of size bytes in [lo, hi).
func (as *addressSpace) reserve(size, alignment, lo, hi uint64) (uint64, error) {
	if alignment == 0 {
		alignment = as.gran
	}
	switch {
	case size == 0 || !as.aligned(size):
		return 0, fmt.Errorf("reserve %#x bytes: size is not a non-zero multiple of the granularity %#x: %w", size, as.gran, backend.ErrInvalidArgument)
	case alignment&(alignment-1) != 0 || alignment < as.gran:
		return 0, fmt.Errorf("reserve: alignment %#x is not a power of two of at least the granularity %#x: %w", alignment, as.gran, backend.ErrInvalidArgument)
	case size > hi-lo || alignment > hi:
		return 0, fmt.Errorf("reserve %#x bytes aligned to %#x: larger than the address space: %w", size, alignment, backend.ErrOutOfMemory)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	cand := alignUp(lo, alignment)
	i := sort.Search(len(as.reservations), func(i int) bool { return as.reservations[i].end() > lo })
	for ; i < len(as.reservations) && cand <= hi-size; i++ {
		r := as.reservations[i]
		if r.start >= hi {
			break
		}
		if cand+size <= r.start {
			break
		}
		cand = alignUp(max(cand, r.end()), alignment)
	}
	if cand > hi-size || cand < lo {
		return 0, fmt.Errorf("reserve %#x bytes aligned to %#x: address space exhausted: %w", size, alignment, backend.ErrOutOfMemory)
	}
	r := &reservation{start: cand, size: size}
	j := sort.Search(len(as.reservations), func(j int) bool { return as.reservations[j].start > cand })
	as.reservations = append(as.reservations, nil)
	copy(as.reservations[j+1:], as.reservations[j:])
	as.reservations[j] = r
	return cand, nil
}

func alignUp(v, a uint64) uint64 {
	s := v + a - 1
	if s < v {
		return ^uint64(0) &^ (a - 1)
	}
	return s &^ (a - 1)
}

// release frees a whole reservation that has nothing mapped.
func (as *addressSpace) release(ptr, size uint64) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	i := sort.Search(len(as.reservations), func(i int) bool { return as.reservations[i].start >= ptr })
	if i == len(as.reservations) || as.reservations[i].start != ptr {
		return fmt.Errorf("release %#x: not the start of a reservation: %w", ptr, backend.ErrInvalidArgument)
	}
	r := as.reservations[i]
	if r.size != size {
		return fmt.Errorf("release %#x: size %#x is not the reserved size %#x: %w", ptr, size, r.size, backend.ErrInvalidArgument)
	}
	if r.mapped != 0 {
		return fmt.Errorf("release %#x: %d granules still mapped: %w", ptr, r.mapped, backend.ErrInvalidArgument)
	}
	as.reservations = append(as.reservations[:i], as.reservations[i+1:]...)
	return nil
}

// containing returns the reservation holding [ptr, ptr+size), or nil.
// Callers hold mu.
func (as *addressSpace) containing(ptr, size uint64) *reservation {
	i := sort.Search(len(as.reservations), func(i int) bool { return as.reservations[i].end() > ptr })
	if i == len(as.reservations) {
		return nil
	}
	r := as.reservations[i]
	if ptr < r.start || size > r.end()-ptr {
		return nil
	}
	return r
}

// createChunk allocates size bytes of physical memory against the limit.
func (as *addressSpace) createChunk(d *Device, size uint64) (*chunk, error) {
	if size == 0 || !as.aligned(size) {
		return nil, fmt.Errorf("create chunk of %#x bytes: not a non-zero multiple of the granularity %#x: %w", size, as.gran, backend.ErrInvalidArgument)
	}
	as.mu.Lock()
	if size > as.limit-as.used {
		free := as.limit - as.used
		as.mu.Unlock()
		return nil, fmt.Errorf("create chunk of %#x bytes: %#x of %#x bytes free: %w", size, free, as.limit, backend.ErrOutOfMemory)
	}
	as.used += size
	as.mu.Unlock()
	// Fresh large allocations come zeroed from the OS and are touched only as
	// they are written, so a big device costs little host memory.
	return &chunk{dev: d, size: size, data: make([]byte, size)}, nil
}

func (as *addressSpace) releaseChunk(c *chunk) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	switch {
	case c.released:
		return fmt.Errorf("release chunk: already released: %w", ErrInvalidHandle)
	case c.maps != 0:
		return fmt.Errorf("release chunk: still mapped %d times: %w", c.maps, backend.ErrInvalidArgument)
	}
	c.released = true
	c.data = nil
	as.used -= c.size
	return nil
}

// mapChunk maps [offset, offset+size) of c at ptr, inaccessible.
func (as *addressSpace) mapChunk(ptr, size uint64, c *chunk, offset uint64) error {
	switch {
	case size == 0 || !as.aligned(ptr) || !as.aligned(size) || !as.aligned(offset):
		return fmt.Errorf("map %#x+%#x at chunk offset %#x: not whole granules of %#x: %w", ptr, size, offset, as.gran, backend.ErrInvalidArgument)
	case offset > c.size || size > c.size-offset:
		return fmt.Errorf("map %#x+%#x: chunk offset %#x is past the chunk's %#x bytes: %w", ptr, size, offset, c.size, backend.ErrInvalidArgument)
	case offset != 0 || size != c.size:
		// As the NVIDIA driver does: it answers CUDA_ERROR_NOT_SUPPORTED
		// (driver 580) for an offset, and for a mapping of part of a chunk.
		return fmt.Errorf("map %#x+%#x at chunk offset %#x: only a whole chunk (%#x bytes) can be mapped: %w", ptr, size, offset, c.size, backend.ErrUnsupported)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if c.released {
		return fmt.Errorf("map %#x: chunk was released: %w", ptr, ErrInvalidHandle)
	}
	r := as.containing(ptr, size)
	if r == nil {
		return fmt.Errorf("map %#x+%#x: not inside one reservation: %w", ptr, size, backend.ErrInvalidArgument)
	}
	first, n := ptr>>as.shift, size>>as.shift
	for p := first; p < first+n; p++ {
		if as.pages[p] != nil {
			return fmt.Errorf("map %#x+%#x: %#x is already mapped: %w", ptr, size, p<<as.shift, backend.ErrInvalidArgument)
		}
	}
	m := &mapping{start: ptr, size: size, chunk: c, offset: offset}
	for i := uint64(0); i < n; i++ {
		as.pages[first+i] = &pte{m: m, off: offset + i<<as.shift}
	}
	c.maps++
	r.mapped += n
	as.gen.Add(1)
	return nil
}

// unmap removes whole mappings covering exactly [ptr, ptr+size).
func (as *addressSpace) unmap(ptr, size uint64) error {
	if size == 0 || !as.aligned(ptr) || !as.aligned(size) || ptr+size < ptr {
		return fmt.Errorf("unmap %#x+%#x: not whole granules of %#x: %w", ptr, size, as.gran, backend.ErrInvalidArgument)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	r := as.containing(ptr, size)
	if r == nil {
		return fmt.Errorf("unmap %#x+%#x: not inside one reservation: %w", ptr, size, backend.ErrInvalidArgument)
	}
	first, n := ptr>>as.shift, size>>as.shift
	var ms []*mapping
	for p := first; p < first+n; p++ {
		e := as.pages[p]
		if e == nil {
			return fmt.Errorf("unmap %#x+%#x: %#x is not mapped: %w", ptr, size, p<<as.shift, backend.ErrInvalidArgument)
		}
		if len(ms) == 0 || ms[len(ms)-1] != e.m {
			m := e.m
			if m.start < ptr || m.start+m.size > ptr+size {
				return fmt.Errorf("unmap %#x+%#x: would split the mapping %#x+%#x: %w", ptr, size, m.start, m.size, backend.ErrInvalidArgument)
			}
			ms = append(ms, m)
		}
	}
	for p := first; p < first+n; p++ {
		delete(as.pages, p)
	}
	for _, m := range ms {
		m.chunk.maps--
	}
	r.mapped -= n
	as.gen.Add(1)
	return nil
}

// setAccess makes every granule of [ptr, ptr+size) accessible; all must be mapped.
func (as *addressSpace) setAccess(ptr, size uint64) error {
	if size == 0 || !as.aligned(ptr) || !as.aligned(size) || ptr+size < ptr {
		return fmt.Errorf("set access %#x+%#x: not whole granules of %#x: %w", ptr, size, as.gran, backend.ErrInvalidArgument)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	first, n := ptr>>as.shift, size>>as.shift
	for p := first; p < first+n; p++ {
		if as.pages[p] == nil {
			return fmt.Errorf("set access %#x+%#x: %#x is not mapped: %w", ptr, size, p<<as.shift, backend.ErrInvalidArgument)
		}
	}
	for p := first; p < first+n; p++ {
		as.pages[p].accessible = true
	}
	as.gen.Add(1)
	return nil
}

func (as *addressSpace) memoryInfo() (free, total uint64) {
	as.mu.RLock()
	defer as.mu.RUnlock()
	return as.limit - as.used, as.limit
}

// resolve translates [addr, addr+n) into the chunk bytes that back it, joining
// granules that are contiguous in one chunk. Every granule must be accessible.
func (as *addressSpace) resolve(addr, n uint64) ([][]byte, error) {
	if n == 0 {
		return nil, nil
	}
	if addr+n < addr {
		return nil, fmt.Errorf("%w: %#x+%#x wraps around", ErrIllegalAddress, addr, n)
	}
	as.mu.RLock()
	defer as.mu.RUnlock()
	var (
		segs     [][]byte
		cur      *chunk
		from, to uint64 // cur's bytes [from, to) so far
	)
	for a, end := addr, addr+n; a < end; {
		e := as.pages[a>>as.shift]
		if e == nil || !e.accessible {
			return nil, accessError(a, n, e)
		}
		off := a & (as.gran - 1)
		take := min(as.gran-off, end-a)
		co := e.off + off
		if co+take > uint64(len(e.m.chunk.data)) {
			// Host memory mapped by MapHost ends inside its last granule.
			return nil, fmt.Errorf("%w: %#x (an access of %d bytes) is past the end of mapped host memory", ErrIllegalAddress, a, n)
		}
		if e.m.chunk == cur && co == to {
			to += take
		} else {
			if cur != nil {
				segs = append(segs, cur.data[from:to:to])
			}
			cur, from, to = e.m.chunk, co, co+take
		}
		a += take
	}
	return append(segs, cur.data[from:to:to]), nil
}

func accessError(a, n uint64, e *pte) error {
	if e == nil {
		return fmt.Errorf("%w: %#x (an access of %d bytes) is not mapped", ErrIllegalAddress, a, n)
	}
	return fmt.Errorf("%w: %#x (an access of %d bytes) is mapped but not accessible", ErrIllegalAddress, a, n)
}

// clear drops every reservation, mapping and chunk (the device closed).
func (as *addressSpace) clear() {
	as.mu.Lock()
	as.reservations = nil
	as.pages = map[uint64]*pte{}
	as.used = 0
	as.gen.Add(1)
	as.mu.Unlock()
}
