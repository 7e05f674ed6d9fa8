package shim

import (
	"sync"
	"sync/atomic"
)

// kind is the type of object a handle names.
type kind uint8

const (
	kindContext kind = iota + 1
	kindStream
	kindEvent
	kindModule
	kindFunction
	kindLibrary
	kindKernel
)

// A handle is what the application holds for one of the shim's objects (a
// CUcontext, CUstream, ...): an opaque pointer-sized value, never a real
// address. Its layout:
//
//	bits 56..63  0xC7, so that no handle is NULL, CU_STREAM_LEGACY or
//	             CU_STREAM_PER_THREAD, nor an address anyone could dereference
//	bits 48..55  the kind, so a CUkernel passed where a CUfunction is expected
//	             is recognized and a handle of the wrong kind is refused
//	bits 32..47  the slot's generation, so a destroyed object's handle stays
//	             invalid after its slot is reused
//	bits  0..31  the slot
const handleTag = 0xC7

func makeHandle(k kind, gen uint16, slot uint32) uint64 {
	return handleTag<<56 | uint64(k)<<48 | uint64(gen)<<32 | uint64(slot)
}

func handleKind(h uint64) kind {
	if h>>56 != handleTag {
		return 0
	}
	return kind(h >> 48)
}

// table maps handles of one kind to objects. Lookups, which every launch and
// copy makes, take no lock: the slots live in fixed chunks whose entries are
// swapped atomically, and the list of chunks is replaced, never changed,
// when it grows. Adds and removes take mu.
type table[T any] struct {
	kind   kind
	chunks atomic.Pointer[[]*tableChunk[T]]

	mu   sync.Mutex // serializes add, remove and growth
	used uint32     // slots ever handed out
	free []uint32
}

const (
	chunkBits = 9
	chunkSize = 1 << chunkBits
)

type tableChunk[T any] [chunkSize]atomic.Pointer[tableEntry[T]]

// tableEntry is one slot's state, replaced whole: an object (nil when the
// slot is free) and the generation handles to it carry.
type tableEntry[T any] struct {
	gen uint16
	v   *T
}

func newTable[T any](k kind) *table[T] { return &table[T]{kind: k} }

func (t *table[T]) slot(i uint32) *atomic.Pointer[tableEntry[T]] {
	cs := t.chunks.Load()
	if cs == nil || int(i>>chunkBits) >= len(*cs) {
		return nil
	}
	return &(*cs)[i>>chunkBits][i&(chunkSize-1)]
}

// add stores v and returns its new handle.
func (t *table[T]) add(v *T) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var i uint32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		i = t.used
		t.used++
		if cs := t.chunks.Load(); cs == nil || int(i>>chunkBits) >= len(*cs) {
			var grown []*tableChunk[T]
			if cs != nil {
				grown = append(grown, *cs...)
			}
			grown = append(grown, new(tableChunk[T]))
			t.chunks.Store(&grown)
		}
	}
	sl := t.slot(i)
	var gen uint16
	if e := sl.Load(); e != nil {
		gen = e.gen
	}
	sl.Store(&tableEntry[T]{gen: gen, v: v})
	return makeHandle(t.kind, gen, i)
}

// get returns the object h names, or nil if h is not a live handle of this
// table.
func (t *table[T]) get(h uint64) *T {
	if handleKind(h) != t.kind {
		return nil
	}
	sl := t.slot(uint32(h))
	if sl == nil {
		return nil
	}
	if e := sl.Load(); e != nil && e.gen == uint16(h>>32) {
		return e.v
	}
	return nil
}

// remove forgets h and returns what it named (nil if it was not live).
func (t *table[T]) remove(h uint64) *T {
	if handleKind(h) != t.kind {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	i := uint32(h)
	sl := t.slot(i)
	if sl == nil {
		return nil
	}
	e := sl.Load()
	if e == nil || e.gen != uint16(h>>32) || e.v == nil {
		return nil
	}
	sl.Store(&tableEntry[T]{gen: e.gen + 1})
	t.free = append(t.free, i)
	return e.v
}

// each returns every live object.
func (t *table[T]) each() []*T {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*T
	for i := uint32(0); i < t.used; i++ {
		if e := t.slot(i).Load(); e != nil && e.v != nil {
			out = append(out, e.v)
		}
	}
	return out
}
