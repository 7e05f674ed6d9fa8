package cap

import (
	"sync"
	"sync/atomic"
)

// A Space is one driver process's capabilities: its tables and the
// revocation tree that spans them.
type Space struct {
	mu sync.Mutex
	// cleaned is signalled (under mu) whenever a revocation finishes its
	// cleanups, for revocations waiting on descendants claimed by others.
	cleaned *sync.Cond
	// lastClaim numbers revocations so a traversal can tell nodes it claimed
	// from nodes a concurrent revocation claimed. Guarded by mu.
	lastClaim uint64
}

// NewSpace returns an empty space.
func NewSpace() *Space {
	s := &Space{}
	s.cleaned = sync.NewCond(&s.mu)
	return s
}

// NewTable returns an empty table in s that holds at most maxHandles live
// handles (0 means MaxHandles).
func (s *Space) NewTable(maxHandles int) *Table {
	if maxHandles <= 0 || maxHandles > MaxHandles {
		maxHandles = MaxHandles
	}
	t := &Table{space: s, limit: maxHandles}
	newSecret(&t.secret)
	empty := []*page{}
	t.pages.Store(&empty)
	return t
}

const (
	stateLive uint32 = iota
	stateRevoked
)

// node is one object in the revocation tree and the slot that names it.
type node struct {
	// Immutable once published in a slot.
	table  *Table
	idx    uint32
	handle Handle
	kind   Kind
	obj    any

	// Read lock-free by Lookup, written under Space.mu.
	state  atomic.Uint32
	rights atomic.Uint64

	// Guarded by Space.mu.
	parent   *node
	children map[*node]struct{}
	cleanup  func()
	claim    uint64 // the revocation that claimed it; 0 while live
	done     bool   // its cleanup has run
	inTable  bool   // its slot still names it
}

func (n *node) live() bool { return n.state.Load() == stateLive }

// revocation is the work one Revoke, Release or Close found under the lock:
// the nodes it claimed, children first, and nodes claimed by concurrent
// revocations whose cleanups must finish before any of its own run.
type revocation struct {
	id    uint64
	order []*node
	wait  []*node
}

// beginRevocation starts a revocation. s.mu must be held.
func (s *Space) beginRevocation() *revocation {
	s.lastClaim++
	return &revocation{id: s.lastClaim}
}

// claim marks n and its live descendants revoked and records them in post
// order. s.mu must be held.
func (r *revocation) claim(n *node) {
	if n.claim != 0 {
		if n.claim != r.id && !n.done {
			r.wait = append(r.wait, n)
		}
		return
	}
	n.claim = r.id
	n.state.Store(stateRevoked)
	for c := range n.children {
		r.claim(c)
	}
	r.order = append(r.order, n)
}

// finish runs the revocation's cleanups without holding s.mu and then
// detaches the cleaned nodes from the tree. s.mu must not be held.
func (s *Space) finish(r *revocation) {
	if len(r.order) == 0 && len(r.wait) == 0 {
		return
	}
	if len(r.wait) > 0 {
		s.mu.Lock()
		for _, n := range r.wait {
			for !n.done {
				s.cleaned.Wait()
			}
		}
		s.mu.Unlock()
	}
	for _, n := range r.order {
		// n.cleanup is written only by Insert, before n is reachable by any
		// revocation, and r claimed n exclusively, so reading it unlocked is safe.
		if n.cleanup != nil {
			n.cleanup()
		}
	}
	s.mu.Lock()
	for _, n := range r.order {
		n.done = true
		n.cleanup = nil
		n.children = nil
		if p := n.parent; p != nil && p.children != nil {
			delete(p.children, n)
		}
	}
	s.cleaned.Broadcast()
	s.mu.Unlock()
}
