package shim

import "sync"

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

// table maps handles of one kind to objects. Lookups take a read lock only.
type table[T any] struct {
	kind  kind
	mu    sync.RWMutex
	slots []tableSlot[T]
	free  []uint32
}

type tableSlot[T any] struct {
	gen uint16
	v   *T
}

func newTable[T any](k kind) *table[T] { return &table[T]{kind: k} }

// add stores v and returns its new handle.
func (t *table[T]) add(v *T) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var i uint32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		i = uint32(len(t.slots))
		t.slots = append(t.slots, tableSlot[T]{})
	}
	t.slots[i].v = v
	return makeHandle(t.kind, t.slots[i].gen, i)
}

// get returns the object h names, or nil if h is not a live handle of this
// table.
func (t *table[T]) get(h uint64) *T {
	if handleKind(h) != t.kind {
		return nil
	}
	i, gen := uint32(h), uint16(h>>32)
	t.mu.RLock()
	defer t.mu.RUnlock()
	if int(i) >= len(t.slots) || t.slots[i].gen != gen {
		return nil
	}
	return t.slots[i].v
}

// remove forgets h and returns what it named (nil if it was not live).
func (t *table[T]) remove(h uint64) *T {
	if handleKind(h) != t.kind {
		return nil
	}
	i, gen := uint32(h), uint16(h>>32)
	t.mu.Lock()
	defer t.mu.Unlock()
	if int(i) >= len(t.slots) || t.slots[i].gen != gen || t.slots[i].v == nil {
		return nil
	}
	v := t.slots[i].v
	t.slots[i].v = nil
	t.slots[i].gen++
	t.free = append(t.free, i)
	return v
}

// each returns every live object.
func (t *table[T]) each() []*T {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []*T
	for _, s := range t.slots {
		if s.v != nil {
			out = append(out, s.v)
		}
	}
	return out
}
