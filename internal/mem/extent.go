package mem

import (
	"slices"
	"sort"
)

// extent is the half-open range [start, start+n) of some unit: granules of a
// window, or alignment units of a slab.
type extent struct{ start, n uint64 }

func (e extent) end() uint64 { return e.start + e.n }

// freeList is a sorted list of disjoint, coalesced free extents.
type freeList []extent

// firstFit returns the index of the lowest extent of at least n units, or -1.
// Lowest-first keeps a window's allocation frontier, and so its guard range, small.
func (l freeList) firstFit(n uint64) int {
	for i, e := range l {
		if e.n >= n {
			return i
		}
	}
	return -1
}

// bestFit returns the index of the smallest extent of at least n units (the
// lowest of equals), or -1.
func (l freeList) bestFit(n uint64) int {
	best := -1
	for i, e := range l {
		if e.n >= n && (best < 0 || e.n < l[best].n) {
			best = i
			if e.n == n {
				break
			}
		}
	}
	return best
}

// takeFront removes n units from the front of extent i and returns their start.
func (l *freeList) takeFront(i int, n uint64) uint64 {
	e := &(*l)[i]
	s := e.start
	e.start += n
	e.n -= n
	if e.n == 0 {
		*l = slices.Delete(*l, i, i+1)
	}
	return s
}

// put returns [s, s+n) to the list, merging it with its neighbours. It reports
// false, changing nothing, if the range overlaps a free extent (a double free).
func (l *freeList) put(s, n uint64) bool {
	if n == 0 || s+n < s {
		return false
	}
	x := *l
	i := sort.Search(len(x), func(k int) bool { return x[k].start >= s })
	if i > 0 && x[i-1].end() > s || i < len(x) && s+n > x[i].start {
		return false
	}
	mergePrev := i > 0 && x[i-1].end() == s
	mergeNext := i < len(x) && x[i].start == s+n
	switch {
	case mergePrev && mergeNext:
		x[i-1].n += n + x[i].n
		*l = slices.Delete(x, i, i+1)
	case mergePrev:
		x[i-1].n += n
	case mergeNext:
		x[i].start = s
		x[i].n += n
	default:
		*l = slices.Insert(x, i, extent{s, n})
	}
	return true
}

// largest returns the size of the largest extent.
func (l freeList) largest() uint64 {
	var m uint64
	for _, e := range l {
		m = max(m, e.n)
	}
	return m
}

// total returns the number of free units.
func (l freeList) total() uint64 {
	var t uint64
	for _, e := range l {
		t += e.n
	}
	return t
}
