package cuda

import (
	"fmt"
	"math/bits"
	"sort"
	"sync"

	"github.com/gpuos/gpuos/internal/backend"
)

// addressSpace records what the backend reserved, mapped and made accessible,
// granule by granule. The driver would accept some misuse silently (releasing
// a chunk still mapped) and lose the whole context on other misuse (a copy
// into mapped but inaccessible memory), so every VMM call and every copy is
// checked here first; the checks mirror the sim backend's, so both backends
// answer the same bad input with the same error.
//
// Mutations (reserve, release, map, unmap, set access) are serialized by the
// device's vmmMu, held across the driver call; mu guards the tables and is
// held only briefly, so copies (which read-lock it) never wait for a driver
// VMM call.
type addressSpace struct {
	gran  uint64
	shift uint

	mu       sync.RWMutex
	resv     []*reservation // sorted by start, disjoint
	leaves   map[uint64]*leaf
	mappings map[*mapping]struct{}
	globals  []globalRange // sorted by start, disjoint: module variables
}

// reservation is a range from Reserve.
type reservation struct {
	start, size uint64
	mapped      uint64 // granules mapped inside it
}

// mapping is one Map: size bytes of chunk from offset, at start.
type mapping struct {
	start, size uint64
	chunk       *chunk
	offset      uint64
	resv        *reservation
}

// page is one granule of the table.
type page struct {
	m      *mapping
	access bool
}

// A leaf covers 512 granules (1 GiB at the H100's 2 MiB): sparse enough for
// a 48-bit address space, dense enough that a range check is an array walk.
const leafBits = 9

type leaf [1 << leafBits]page

// globalRange is a module variable: device memory the driver placed, outside
// every reservation, that copies may reach.
type globalRange struct {
	start, end uint64
	owner      *module
}

func newAddressSpace(gran uint64) *addressSpace {
	return &addressSpace{
		gran:     gran,
		shift:    uint(bits.TrailingZeros64(gran)),
		leaves:   map[uint64]*leaf{},
		mappings: map[*mapping]struct{}{},
	}
}

// page returns the entry of granule g; create adds its leaf if missing.
func (as *addressSpace) page(g uint64, create bool) *page {
	l := as.leaves[g>>leafBits]
	if l == nil {
		if !create {
			return nil
		}
		l = new(leaf)
		as.leaves[g>>leafBits] = l
	}
	return &l[g&(1<<leafBits-1)]
}

// granules returns the first and one-past-last granule of [p, p+size), which
// must be aligned and not wrap (checkRange).
func (as *addressSpace) granules(p, size uint64) (first, end uint64) {
	return p >> as.shift, (p + size) >> as.shift
}

// checkRange validates a granule-aligned, non-empty, non-wrapping range.
func (as *addressSpace) checkRange(what string, p, size uint64) error {
	switch {
	case size == 0:
		return fmt.Errorf("%s %#x: empty range: %w", what, p, backend.ErrInvalidArgument)
	case size%as.gran != 0:
		return fmt.Errorf("%s %#x: size %#x is not a multiple of the granularity %#x: %w", what, p, size, as.gran, backend.ErrInvalidArgument)
	case p%as.gran != 0:
		return fmt.Errorf("%s %#x: address not aligned to the granularity %#x: %w", what, p, as.gran, backend.ErrInvalidArgument)
	case p+size < p:
		return fmt.Errorf("%s %#x+%#x: range wraps around: %w", what, p, size, backend.ErrInvalidArgument)
	}
	return nil
}

// checkReserve validates Reserve's arguments and returns the alignment to
// ask the driver for.
func (as *addressSpace) checkReserve(size, align uint64) (uint64, error) {
	if align == 0 {
		align = as.gran
	}
	switch {
	case size == 0 || size%as.gran != 0:
		return 0, fmt.Errorf("reserve %#x bytes: not a positive multiple of the granularity %#x: %w", size, as.gran, backend.ErrInvalidArgument)
	case align&(align-1) != 0 || align%as.gran != 0:
		return 0, fmt.Errorf("reserve %#x bytes: alignment %#x is not a power of two multiple of the granularity %#x: %w", size, align, as.gran, backend.ErrInvalidArgument)
	}
	return align, nil
}

// addReservation records a range the driver reserved.
func (as *addressSpace) addReservation(start, size uint64) {
	as.mu.Lock()
	defer as.mu.Unlock()
	i := sort.Search(len(as.resv), func(i int) bool { return as.resv[i].start > start })
	as.resv = append(as.resv, nil)
	copy(as.resv[i+1:], as.resv[i:])
	as.resv[i] = &reservation{start: start, size: size}
}

// reservationAt returns the reservation containing p (or nil). mu must be held.
func (as *addressSpace) reservationAt(p uint64) *reservation {
	i := sort.Search(len(as.resv), func(i int) bool { return as.resv[i].start > p }) - 1
	if i < 0 || p-as.resv[i].start >= as.resv[i].size {
		return nil
	}
	return as.resv[i]
}

// checkRelease finds the whole reservation [p, p+size), which must have
// nothing mapped.
func (as *addressSpace) checkRelease(p, size uint64) (*reservation, error) {
	as.mu.RLock()
	defer as.mu.RUnlock()
	r := as.reservationAt(p)
	switch {
	case r == nil || r.start != p:
		return nil, fmt.Errorf("release %#x: not the start of a reservation: %w", p, backend.ErrInvalidArgument)
	case r.size != size:
		return nil, fmt.Errorf("release %#x: size %#x, the reservation has %#x: %w", p, size, r.size, backend.ErrInvalidArgument)
	case r.mapped != 0:
		return nil, fmt.Errorf("release %#x: %d granules still mapped: %w", p, r.mapped, backend.ErrInvalidArgument)
	}
	return r, nil
}

func (as *addressSpace) removeReservation(r *reservation) {
	as.mu.Lock()
	defer as.mu.Unlock()
	for i, x := range as.resv {
		if x == r {
			as.resv = append(as.resv[:i], as.resv[i+1:]...)
			return
		}
	}
}

// checkMap validates Map: whole granules of a live chunk of this device,
// inside one reservation, over granules not mapped yet.
func (as *addressSpace) checkMap(p, size uint64, c *chunk, offset uint64) (*reservation, error) {
	if err := as.checkRange("map", p, size); err != nil {
		return nil, err
	}
	switch {
	case offset%as.gran != 0:
		return nil, fmt.Errorf("map %#x: chunk offset %#x not aligned to the granularity: %w", p, offset, backend.ErrInvalidArgument)
	case offset > c.size || c.size-offset < size:
		return nil, fmt.Errorf("map %#x: [%#x, +%#x) is past the chunk's %#x bytes: %w", p, offset, size, c.size, backend.ErrInvalidArgument)
	}
	as.mu.RLock()
	defer as.mu.RUnlock()
	r := as.reservationAt(p)
	if r == nil || p+size-r.start > r.size {
		return nil, fmt.Errorf("map %#x+%#x: not inside one reservation: %w", p, size, backend.ErrInvalidArgument)
	}
	first, end := as.granules(p, size)
	for g := first; g < end; g++ {
		if pg := as.page(g, false); pg != nil && pg.m != nil {
			return nil, fmt.Errorf("map %#x+%#x: %#x is already mapped: %w", p, size, g<<as.shift, backend.ErrInvalidArgument)
		}
	}
	return r, nil
}

// addMapping records a mapping the driver made; it starts inaccessible.
func (as *addressSpace) addMapping(m *mapping) {
	as.mu.Lock()
	defer as.mu.Unlock()
	first, end := as.granules(m.start, m.size)
	for g := first; g < end; g++ {
		*as.page(g, true) = page{m: m}
	}
	m.resv.mapped += end - first
	m.chunk.maps++
	as.mappings[m] = struct{}{}
}

// checkUnmap returns the mappings that make up [p, p+size) exactly: every
// granule mapped, no mapping cut.
func (as *addressSpace) checkUnmap(p, size uint64) ([]*mapping, error) {
	if err := as.checkRange("unmap", p, size); err != nil {
		return nil, err
	}
	as.mu.RLock()
	defer as.mu.RUnlock()
	var ms []*mapping
	first, end := as.granules(p, size)
	for g := first; g < end; {
		pg := as.page(g, false)
		if pg == nil || pg.m == nil {
			return nil, fmt.Errorf("unmap %#x+%#x: %#x is not mapped: %w", p, size, g<<as.shift, backend.ErrInvalidArgument)
		}
		m := pg.m
		if m.start < p || m.start+m.size > p+size {
			return nil, fmt.Errorf("unmap %#x+%#x: cuts the mapping %#x+%#x: %w", p, size, m.start, m.size, backend.ErrInvalidArgument)
		}
		ms = append(ms, m)
		g = (m.start + m.size) >> as.shift
	}
	return ms, nil
}

// removeMappings forgets mappings (before the driver unmaps them, so that
// no copy is let through to memory about to go).
func (as *addressSpace) removeMappings(ms []*mapping) {
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, m := range ms {
		first, end := as.granules(m.start, m.size)
		for g := first; g < end; g++ {
			*as.page(g, true) = page{}
		}
		m.resv.mapped -= end - first
		m.chunk.maps--
		delete(as.mappings, m)
	}
}

// restoreMappings undoes removeMappings after the driver refused to unmap,
// with the access the granules had.
func (as *addressSpace) restoreMappings(ms []*mapping, access []bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	i := 0
	for _, m := range ms {
		first, end := as.granules(m.start, m.size)
		for g := first; g < end; g++ {
			*as.page(g, true) = page{m: m, access: access[i]}
			i++
		}
		m.resv.mapped += end - first
		m.chunk.maps++
		as.mappings[m] = struct{}{}
	}
}

// accessOf returns the access flag of every granule of ms, in order.
func (as *addressSpace) accessOf(ms []*mapping) []bool {
	as.mu.RLock()
	defer as.mu.RUnlock()
	var out []bool
	for _, m := range ms {
		first, end := as.granules(m.start, m.size)
		for g := first; g < end; g++ {
			out = append(out, as.page(g, false).access)
		}
	}
	return out
}

// checkSetAccess validates SetAccess: whole granules, all mapped.
func (as *addressSpace) checkSetAccess(p, size uint64) error {
	if err := as.checkRange("set access", p, size); err != nil {
		return err
	}
	as.mu.RLock()
	defer as.mu.RUnlock()
	first, end := as.granules(p, size)
	for g := first; g < end; g++ {
		if pg := as.page(g, false); pg == nil || pg.m == nil {
			return fmt.Errorf("set access %#x+%#x: %#x is not mapped: %w", p, size, g<<as.shift, backend.ErrInvalidArgument)
		}
	}
	return nil
}

// setAccess marks [p, p+size) accessible.
func (as *addressSpace) setAccess(p, size uint64) {
	as.mu.Lock()
	defer as.mu.Unlock()
	first, end := as.granules(p, size)
	for g := first; g < end; g++ {
		as.page(g, true).access = true
	}
}

// accessible reports whether copies may touch [p, p+n): every granule mapped
// and accessible, or the whole range inside one module variable.
func (as *addressSpace) accessible(p, n uint64) bool {
	if n == 0 {
		return true
	}
	if p+n < p {
		return false
	}
	as.mu.RLock()
	defer as.mu.RUnlock()
	if as.inGlobal(p, n) {
		return true
	}
	first, last := p>>as.shift, (p+n-1)>>as.shift
	var l *leaf
	for g := first; g <= last; g++ {
		if l == nil || g&(1<<leafBits-1) == 0 {
			if l = as.leaves[g>>leafBits]; l == nil {
				return false
			}
		}
		if pg := &l[g&(1<<leafBits-1)]; pg.m == nil || !pg.access {
			return false
		}
	}
	return true
}

// checkAccessible is accessible as an error for the operation what.
func (as *addressSpace) checkAccessible(what string, p, n uint64) error {
	if !as.accessible(p, n) {
		return fmt.Errorf("%s: [%#x, +%#x) is not mapped and accessible device memory: %w", what, p, n, backend.ErrInvalidArgument)
	}
	return nil
}

// inGlobal reports whether [p, p+n) lies inside one module variable. mu must be held.
func (as *addressSpace) inGlobal(p, n uint64) bool {
	i := sort.Search(len(as.globals), func(i int) bool { return as.globals[i].start > p }) - 1
	return i >= 0 && p+n <= as.globals[i].end
}

// addGlobal records a module variable; one already known is not added twice.
func (as *addressSpace) addGlobal(start, size uint64, owner *module) {
	if size == 0 {
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	i := sort.Search(len(as.globals), func(i int) bool { return as.globals[i].start >= start })
	if i < len(as.globals) && as.globals[i].start == start {
		return
	}
	as.globals = append(as.globals, globalRange{})
	copy(as.globals[i+1:], as.globals[i:])
	as.globals[i] = globalRange{start: start, end: start + size, owner: owner}
}

// removeGlobals forgets the variables of an unloaded module.
func (as *addressSpace) removeGlobals(owner *module) {
	as.mu.Lock()
	defer as.mu.Unlock()
	kept := as.globals[:0]
	for _, g := range as.globals {
		if g.owner != owner {
			kept = append(kept, g)
		}
	}
	clear(as.globals[len(kept):])
	as.globals = kept
}

// all returns every mapping and reservation, for Close.
func (as *addressSpace) all() ([]*mapping, []*reservation) {
	as.mu.RLock()
	defer as.mu.RUnlock()
	ms := make([]*mapping, 0, len(as.mappings))
	for m := range as.mappings {
		ms = append(ms, m)
	}
	return ms, append([]*reservation(nil), as.resv...)
}
