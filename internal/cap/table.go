package cap

import (
	"fmt"
	"sync/atomic"

	v1 "github.com/gpuos/gpuos/api/v1"
)

const pageSize = 256

// page is a fixed block of slots; pages never move once published, so a
// lookup holding an old page list still reads current slots.
type page [pageSize]atomic.Pointer[node]

// A Table maps one connection's handles to objects. Its methods are safe for
// concurrent use.
type Table struct {
	space  *Space
	secret [32]byte
	limit  int

	// pages is replaced (copy and append) under Space.mu when the table grows.
	pages atomic.Pointer[[]*page]

	// Guarded by Space.mu.
	gens   []uint64 // generation of each slot index ever used
	free   []uint32 // released slot indexes
	live   int      // slots in use, revoked ones included
	closed bool
}

// Ref is a reference to an object that can serve as a parent in any table of
// the same space, e.g. a grant that another session attaches. The zero Ref
// means no parent.
type Ref struct{ n *node }

// Live reports whether the referenced object exists and is not revoked.
func (r Ref) Live() bool { return r.n != nil && r.n.live() }

// Kind returns the kind of the referenced object.
func (r Ref) Kind() Kind {
	if r.n == nil {
		return KindInvalid
	}
	return r.n.kind
}

// Object returns the referenced object, or nil for the zero Ref.
func (r Ref) Object() any {
	if r.n == nil {
		return nil
	}
	return r.n.obj
}

// slot returns the node h names in t, or nil. It takes no lock.
func (t *Table) slot(h Handle) *node {
	idx := h.index()
	pages := *t.pages.Load()
	pi := idx / pageSize
	if idx == 0 || pi >= uint32(len(pages)) {
		return nil
	}
	n := pages[pi][idx%pageSize].Load()
	if n == nil || n.handle != h {
		return nil
	}
	return n
}

// Lookup returns the object h names if it has the given kind, is not revoked
// and carries every right in need. It takes no lock.
func (t *Table) Lookup(h Handle, kind Kind, need Rights) (any, error) {
	n, err := t.check(h, kind, need)
	if err != nil {
		return nil, err
	}
	return n.obj, nil
}

// Ref is Lookup returning a reference usable as a parent in any table of the
// space.
func (t *Table) Ref(h Handle, kind Kind, need Rights) (Ref, error) {
	n, err := t.check(h, kind, need)
	if err != nil {
		return Ref{}, err
	}
	return Ref{n}, nil
}

func (t *Table) check(h Handle, kind Kind, need Rights) (*node, error) {
	n := t.slot(h)
	if n == nil || n.kind != kind {
		return nil, fmt.Errorf("%s handle %#x: %w", kind, uint64(h), ErrInvalidHandle)
	}
	if !n.live() {
		return nil, fmt.Errorf("%s handle %#x: %w", kind, uint64(h), ErrRevoked)
	}
	if have := Rights(n.rights.Load()); !have.Has(need) {
		return nil, fmt.Errorf("%s handle %#x lacks %v: %w", kind, uint64(h), need&^have, ErrPermissionDenied)
	}
	return n, nil
}

// Get is Lookup that also asserts the object's Go type. A type mismatch is
// a bug in the caller (one kind must always hold one type) and is reported as
// v1.CodeInternal.
func Get[T any](t *Table, h Handle, kind Kind, need Rights) (T, error) {
	var zero T
	obj, err := t.Lookup(h, kind, need)
	if err != nil {
		return zero, err
	}
	v, ok := obj.(T)
	if !ok {
		return zero, v1.Errorf(v1.CodeInternal, "%s handle %#x holds %T, not %T", kind, uint64(h), obj, zero)
	}
	return v, nil
}

// Rights returns the rights h carries now, whatever its kind.
func (t *Table) Rights(h Handle) (Rights, error) {
	n := t.slot(h)
	if n == nil {
		return 0, fmt.Errorf("handle %#x: %w", uint64(h), ErrInvalidHandle)
	}
	if !n.live() {
		return 0, fmt.Errorf("handle %#x: %w", uint64(h), ErrRevoked)
	}
	return Rights(n.rights.Load()), nil
}

// Len returns the number of handles in t, revoked ones included.
func (t *Table) Len() int {
	t.space.mu.Lock()
	defer t.space.mu.Unlock()
	return t.live
}

// Insert adds obj of the given kind as a child of parent (the zero Ref for
// none) and returns its handle. The object's rights must be a subset of the
// parent's. cleanup, if not nil, runs exactly once when the object is revoked,
// released or its table closed, after the cleanups of its descendants and
// never under the space's lock.
func (t *Table) Insert(kind Kind, obj any, parent Ref, rights Rights, cleanup func()) (Handle, error) {
	if !kind.Valid() {
		return 0, fmt.Errorf("insert %v: %w", kind, ErrInvalidArgument)
	}
	s := t.space
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.closed {
		return 0, fmt.Errorf("insert %v: %w", kind, ErrClosed)
	}
	p := parent.n
	if p != nil {
		if p.table.space != s {
			return 0, fmt.Errorf("insert %v: parent from another space: %w", kind, ErrInvalidArgument)
		}
		if p.claim != 0 {
			return 0, fmt.Errorf("insert %v under revoked %v: %w", kind, p.kind, ErrRevoked)
		}
		if have := Rights(p.rights.Load()); !have.Has(rights) {
			return 0, fmt.Errorf("insert %v: parent %v lacks %v: %w", kind, p.kind, rights&^have, ErrPermissionDenied)
		}
	}
	if t.live >= t.limit {
		return 0, fmt.Errorf("insert %v: %d handles: %w", kind, t.live, ErrQuotaExceeded)
	}
	idx := t.allocSlot()
	t.gens[idx]++
	n := &node{
		table:   t,
		idx:     idx,
		handle:  makeHandle(&t.secret, idx, t.gens[idx], kind),
		kind:    kind,
		obj:     obj,
		parent:  p,
		cleanup: cleanup,
		inTable: true,
	}
	n.rights.Store(uint64(rights))
	if p != nil {
		if p.children == nil {
			p.children = make(map[*node]struct{})
		}
		p.children[n] = struct{}{}
	}
	t.live++
	pages := *t.pages.Load()
	pages[idx/pageSize][idx%pageSize].Store(n)
	return n.handle, nil
}

// allocSlot returns a free slot index, growing the table if needed.
// Space.mu must be held.
func (t *Table) allocSlot() uint32 {
	if k := len(t.free); k > 0 {
		idx := t.free[k-1]
		t.free = t.free[:k-1]
		return idx
	}
	if len(t.gens) == 0 {
		t.gens = append(t.gens, 0) // index 0 is never used: no handle is 0
	}
	idx := uint32(len(t.gens))
	t.gens = append(t.gens, 0)
	pages := *t.pages.Load()
	if idx/pageSize >= uint32(len(pages)) {
		grown := make([]*page, len(pages)+1)
		copy(grown, pages)
		grown[len(pages)] = new(page)
		t.pages.Store(&grown)
	}
	return idx
}

// removeSlot frees n's slot. Space.mu must be held.
func (t *Table) removeSlot(n *node) {
	pages := *t.pages.Load()
	pages[n.idx/pageSize][n.idx%pageSize].Store(nil)
	n.inTable = false
	t.free = append(t.free, n.idx)
	t.live--
}

// lockedSlot is slot for callers holding Space.mu; it returns any kind.
func (t *Table) lockedSlot(h Handle) (*node, error) {
	n := t.slot(h)
	if n == nil || !n.inTable {
		return nil, fmt.Errorf("handle %#x: %w", uint64(h), ErrInvalidHandle)
	}
	return n, nil
}

// Revoke revokes the object h names, of any kind, and all its descendants in
// every table. Their handles stay and answer ErrRevoked until released. It
// returns once every cleanup of the subtree has run. Revoking a revoked
// handle does nothing and succeeds.
func (t *Table) Revoke(h Handle) error {
	s := t.space
	s.mu.Lock()
	n, err := t.lockedSlot(h)
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("revoke: %w", err)
	}
	r := s.beginRevocation()
	r.claim(n)
	s.mu.Unlock()
	s.finish(r)
	return nil
}

// Release removes h, of any kind, from its table and revokes the object and
// all its descendants. The descendants' handles stay in their tables
// answering ErrRevoked until released.
func (t *Table) Release(h Handle) error {
	s := t.space
	s.mu.Lock()
	n, err := t.lockedSlot(h)
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("release: %w", err)
	}
	t.removeSlot(n)
	r := s.beginRevocation()
	r.claim(n)
	s.mu.Unlock()
	s.finish(r)
	return nil
}

// Restrict narrows the rights of h and of all its descendants to those also
// in mask and returns h's new rights. It never widens.
func (t *Table) Restrict(h Handle, mask Rights) (Rights, error) {
	s := t.space
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := t.lockedSlot(h)
	if err != nil {
		return 0, fmt.Errorf("restrict: %w", err)
	}
	if n.claim != 0 {
		return 0, fmt.Errorf("restrict %v handle %#x: %w", n.kind, uint64(h), ErrRevoked)
	}
	restrict(n, mask)
	return Rights(n.rights.Load()), nil
}

func restrict(n *node, mask Rights) {
	n.rights.Store(n.rights.Load() & uint64(mask))
	for c := range n.children {
		if c.claim == 0 {
			restrict(c, mask)
		}
	}
}

// Close releases every handle in t, revoking their descendants in every
// table, and runs all those cleanups before returning. Later Inserts fail
// with ErrClosed and every handle of t is invalid. Closing twice does nothing.
func (t *Table) Close() {
	s := t.space
	s.mu.Lock()
	if t.closed {
		s.mu.Unlock()
		return
	}
	t.closed = true
	r := s.beginRevocation()
	for _, pg := range *t.pages.Load() {
		for i := range pg {
			if n := pg[i].Load(); n != nil {
				t.removeSlot(n)
				r.claim(n)
			}
		}
	}
	s.mu.Unlock()
	s.finish(r)
}
