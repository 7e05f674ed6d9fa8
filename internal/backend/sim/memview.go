package sim

import (
	"fmt"
	"sync/atomic"
)

// tlbEntries is the size of memView's translation cache (a power of two).
const tlbEntries = 64

// memView is global device memory as kernels see it: the interpreter calls
// Slice for every global access, from many goroutines at once. A small
// direct-mapped cache of granule translations makes the common case two
// atomic loads and a bounds check; an entry is valid only for the page-table
// generation it was filled in.
type memView struct {
	as  *addressSpace
	tlb [tlbEntries]atomic.Pointer[tlbEntry]
}

type tlbEntry struct {
	page, gen uint64
	data      []byte // the granule's bytes, capacity-limited
}

func newMemView(as *addressSpace) *memView { return &memView{as: as} }

// Slice returns the n bytes at device address addr, which the caller may read
// (and, if write, modify) in place. An unmapped or inaccessible address is an
// error matching ErrIllegalAddress. An access that straddles two granules
// works if they are contiguous in one chunk (an aligned access of up to 32
// bytes never straddles).
func (v *memView) Slice(addr uint64, n int, write bool) ([]byte, error) {
	if n <= 0 {
		if n == 0 {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: access of %d bytes at %#x", ErrIllegalAddress, n, addr)
	}
	as := v.as
	page := addr >> as.shift
	gen := as.gen.Load()
	e := v.tlb[page&(tlbEntries-1)].Load()
	if e == nil || e.page != page || e.gen != gen {
		var err error
		if e, err = v.fill(addr, uint64(n), page, gen); err != nil {
			return nil, err
		}
	}
	off := addr & (as.gran - 1)
	if end := off + uint64(n); end <= uint64(len(e.data)) {
		return e.data[off:end:end], nil
	}
	return v.straddle(addr, uint64(n))
}

func (v *memView) fill(addr, n, page, gen uint64) (*tlbEntry, error) {
	as := v.as
	as.mu.RLock()
	p := as.pages[page]
	if p == nil || !p.accessible {
		as.mu.RUnlock()
		return nil, accessError(addr, n, p)
	}
	// MapHost's host memory may end inside its last granule: past its end
	// an access fails in straddle (resolve).
	end := min(p.off+as.gran, uint64(len(p.m.chunk.data)))
	data := p.m.chunk.data[min(p.off, end):end:end]
	as.mu.RUnlock()
	e := &tlbEntry{page: page, gen: gen, data: data}
	v.tlb[page&(tlbEntries-1)].Store(e)
	return e, nil
}

func (v *memView) straddle(addr, n uint64) ([]byte, error) {
	segs, err := v.as.resolve(addr, n)
	if err != nil {
		return nil, err
	}
	if len(segs) != 1 {
		return nil, fmt.Errorf("%w: the %d-byte access at %#x straddles granules of different chunks", ErrIllegalAddress, n, addr)
	}
	return segs[0], nil
}

// flush empties the cache, so that it keeps no released chunk alive.
func (v *memView) flush() {
	for i := range v.tlb {
		v.tlb[i].Store(nil)
	}
}
