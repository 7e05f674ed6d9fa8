package ledger

import (
	"fmt"
	"sync"
	"sync/atomic"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Resource is a kind of thing a ledger counts.
type Resource uint8

// Resources.
const (
	DeviceBytes Resource = iota // device memory allocated, in bytes
	Buffers                     // live buffers
	Handles                     // live handles in the session's table
	Programs                    // loaded programs (modules)
	Streams                     // streams
	InFlight                    // submissions released to the device and not yet complete
	QueueDepth                  // submissions queued and not yet released
	MappedBytes                 // bytes of other sessions' buffers mapped into this one
	NumResources
)

var resourceNames = [NumResources]string{
	DeviceBytes: "device-bytes",
	Buffers:     "buffers",
	Handles:     "handles",
	Programs:    "programs",
	Streams:     "streams",
	InFlight:    "in-flight",
	QueueDepth:  "queue-depth",
	MappedBytes: "mapped-bytes",
}

func (r Resource) String() string {
	if r < NumResources {
		return resourceNames[r]
	}
	return fmt.Sprintf("resource(%d)", uint8(r))
}

// ParseResource returns the resource with the given name.
func ParseResource(name string) (Resource, error) {
	for r, n := range resourceNames {
		if n == name {
			return Resource(r), nil
		}
	}
	return 0, v1.Errorf(v1.CodeInvalidArgument, "unknown resource %q", name)
}

// Limits holds a limit per resource; 0 means unlimited.
type Limits [NumResources]uint64

// Errors returned by ledger. Compare with errors.Is; a *QuotaError also
// matches ErrQuotaExceeded and v1.ErrQuotaExceeded.
var (
	ErrQuotaExceeded = v1.Errorf(v1.CodeQuotaExceeded, "ledger limit reached")
	// ErrClosed: the ledger was closed; it accepts no more charges.
	ErrClosed = v1.Errorf(v1.CodeRevoked, "ledger closed")
	// ErrInvalidArgument: an unknown resource, or a refund of more than is charged.
	ErrInvalidArgument = v1.Errorf(v1.CodeInvalidArgument, "bad ledger argument")
)

// QuotaError says which ledger refused a charge and why.
type QuotaError struct {
	Ledger   string   // name of the ledger whose limit would be passed
	Resource Resource //
	Limit    uint64   // its limit
	Used     uint64   // what it held when the charge was refused
	Asked    uint64   // the amount of the refused charge
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("quota exceeded: %s limit %d on ledger %q (using %d, asked for %d more)",
		e.Resource, e.Limit, e.Ledger, e.Used, e.Asked)
}

// Unwrap returns ErrQuotaExceeded so that v1.CodeOf and errors.Is see the code.
func (e *QuotaError) Unwrap() error { return ErrQuotaExceeded }

// A Ledger counts one session's or tenant's resources. Its methods are safe
// for concurrent use.
type Ledger struct {
	name   string
	parent *Ledger
	used   [NumResources]atomic.Uint64
	limits [NumResources]atomic.Uint64

	closeMu sync.RWMutex
	closed  bool // guarded by closeMu

	childMu  sync.Mutex
	children map[*Ledger]struct{} // guarded by childMu
}

// New returns a ledger named name (used in errors and snapshots) under parent
// (nil for a root) with the given limits. It fails with ErrClosed if parent
// is closed.
func New(name string, parent *Ledger, limits Limits) (*Ledger, error) {
	l := &Ledger{name: name, parent: parent}
	for r, n := range limits {
		l.limits[r].Store(n)
	}
	if parent != nil {
		parent.closeMu.RLock()
		defer parent.closeMu.RUnlock()
		if parent.closed {
			return nil, fmt.Errorf("open ledger %q under %q: %w", name, parent.name, ErrClosed)
		}
		parent.childMu.Lock()
		if parent.children == nil {
			parent.children = make(map[*Ledger]struct{})
		}
		parent.children[l] = struct{}{}
		parent.childMu.Unlock()
	}
	return l, nil
}

// Name returns the ledger's name.
func (l *Ledger) Name() string { return l.name }

// Parent returns the parent ledger, or nil.
func (l *Ledger) Parent() *Ledger { return l.parent }

// SetLimit changes one limit (0 = unlimited). Lowering a limit below what is
// charged refuses further charges until refunds bring usage under it.
func (l *Ledger) SetLimit(r Resource, limit uint64) error {
	if r >= NumResources {
		return fmt.Errorf("set limit of %v: %w", r, ErrInvalidArgument)
	}
	l.limits[r].Store(limit)
	return nil
}

// Limit returns one limit (0 = unlimited).
func (l *Ledger) Limit(r Resource) uint64 {
	if r >= NumResources {
		return 0
	}
	return l.limits[r].Load()
}

// Used returns what is charged to one resource, descendants included.
func (l *Ledger) Used(r Resource) uint64 {
	if r >= NumResources {
		return 0
	}
	return l.used[r].Load()
}

// add charges n to l alone if its limit allows.
func (l *Ledger) add(r Resource, n uint64) *QuotaError {
	for {
		used := l.used[r].Load()
		limit := l.limits[r].Load()
		sum := used + n
		if sum < used || (limit != 0 && sum > limit) {
			return &QuotaError{Ledger: l.name, Resource: r, Limit: limit, Used: used, Asked: n}
		}
		if l.used[r].CompareAndSwap(used, sum) {
			return nil
		}
	}
}

// sub refunds up to n from l alone and reports whether all of n was charged.
func (l *Ledger) sub(r Resource, n uint64) bool {
	for {
		used := l.used[r].Load()
		take := min(used, n)
		if l.used[r].CompareAndSwap(used, used-take) {
			return take == n
		}
	}
}

// Charge adds n of resource r to l and every ancestor, or to none of them.
// Passing a limit fails with a *QuotaError naming the ledger that refused.
func (l *Ledger) Charge(r Resource, n uint64) error {
	if r >= NumResources {
		return fmt.Errorf("charge %v: %w", r, ErrInvalidArgument)
	}
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed {
		return fmt.Errorf("charge %d %v to %q: %w", n, r, l.name, ErrClosed)
	}
	if n == 0 {
		return nil
	}
	for at := l; at != nil; at = at.parent {
		if qe := at.add(r, n); qe != nil {
			for undo := l; undo != at; undo = undo.parent {
				undo.sub(r, n)
			}
			return qe
		}
	}
	return nil
}

// Refund subtracts n of resource r from l and every ancestor. Refunding more
// than l holds refunds what it holds and fails with ErrInvalidArgument: it is
// a bookkeeping bug in the caller. Refunds to a closed ledger are ignored
// (Close already refunded everything).
func (l *Ledger) Refund(r Resource, n uint64) error {
	if r >= NumResources {
		return fmt.Errorf("refund %v: %w", r, ErrInvalidArgument)
	}
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed || n == 0 {
		return nil
	}
	used := l.used[r].Load()
	for {
		take := min(used, n)
		if l.used[r].CompareAndSwap(used, used-take) {
			for at := l.parent; at != nil; at = at.parent {
				at.sub(r, take)
			}
			if take != n {
				return fmt.Errorf("refund %d %v to %q holding %d: %w", n, r, l.name, used, ErrInvalidArgument)
			}
			return nil
		}
		used = l.used[r].Load()
	}
}

// Close refuses further charges to l, closes l's children and refunds to
// l's ancestors everything still charged to l, so they are back where they
// were before l was opened. Closing twice does nothing.
func (l *Ledger) Close() {
	l.closeMu.Lock()
	if l.closed {
		l.closeMu.Unlock()
		return
	}
	l.closed = true // no charge to l, and no new child, from here on
	l.closeMu.Unlock()

	l.childMu.Lock()
	kids := make([]*Ledger, 0, len(l.children))
	for c := range l.children {
		kids = append(kids, c)
	}
	l.childMu.Unlock()
	for _, c := range kids {
		c.Close() // refunds the child's usage from l and its ancestors
	}
	for r := range NumResources {
		n := l.used[r].Swap(0)
		for at := l.parent; at != nil; at = at.parent {
			at.sub(r, n)
		}
	}
	if p := l.parent; p != nil {
		p.childMu.Lock()
		delete(p.children, l)
		p.childMu.Unlock()
	}
}

// Closed reports whether l was closed.
func (l *Ledger) Closed() bool {
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	return l.closed
}

// Snapshot is a ledger's usage and limits at one moment (each counter is
// read atomically; the set is not one atomic cut).
type Snapshot struct {
	Name   string
	Used   [NumResources]uint64
	Limits Limits
	Closed bool
}

// Snapshot returns l's current usage and limits.
func (l *Ledger) Snapshot() Snapshot {
	s := Snapshot{Name: l.name, Closed: l.Closed()}
	for r := range NumResources {
		s.Used[r] = l.used[r].Load()
		s.Limits[r] = l.limits[r].Load()
	}
	return s
}

// Free returns how much of r can still be charged to l before some ledger
// on its path to the root reaches its limit, or ^uint64(0) if none limits it.
// It is what a tenant is told by MemInfo.
func (l *Ledger) Free(r Resource) uint64 {
	free := ^uint64(0)
	if r >= NumResources {
		return 0
	}
	for at := l; at != nil; at = at.parent {
		limit := at.limits[r].Load()
		if limit == 0 {
			continue
		}
		used := at.used[r].Load()
		if used >= limit {
			return 0
		}
		free = min(free, limit-used)
	}
	return free
}
