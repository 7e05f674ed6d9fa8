package client

import (
	"context"
	"fmt"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Shared device memory segments: the shm-like API (shmget, shmat, shmdt,
// shmctl). A segment is named device memory owned by a tenant, charged to
// that tenant's quota, that sessions of the tenant — and of tenants it
// allows — map into their windows: the same physical memory, each at its own
// address.
//
// A segment lives until it is removed and no session holds it any more, or
// until its owner tenant has no session left on the device (then every
// session loses it). Where Grant hands one buffer to whoever holds a token,
// a segment is found by name and shared by tenant.

// ShmFlags modify ShmGet.
type ShmFlags = v1.ShmFlags

// ShmGet flags.
const (
	// ShmCreate creates the segment if its owner has none of that name; only
	// in the session's own tenant, and only with RightAlloc.
	ShmCreate = v1.ShmCreate
	// ShmExclusive, with ShmCreate, fails (ErrInvalidArgument) if the
	// segment exists.
	ShmExclusive = v1.ShmExclusive
)

// ShmKey names a segment: its owner tenant ("" for the session's own) and
// its name (1 to 255 bytes, no control characters).
type ShmKey struct {
	Owner string
	Name  string
}

// Shm is the key of the session's own tenant's segment called name.
func Shm(name string) ShmKey { return ShmKey{Name: name} }

// ShmAccess is a tenant's rights on a segment.
type ShmAccess = v1.ShmAccess

// ShmStat describes a segment.
type ShmStat = v1.ShmStat

// Segment is a session's handle to a shared memory segment.
type Segment struct {
	s       *Session
	handle  uint64
	owner   string
	name    string
	size    uint64
	rights  Rights
	created bool
}

// ShmGet finds the segment named by key, or creates it with ShmCreate
// (size bytes). When finding, size is 0 or at most the segment's size. The
// session needs RightGrant; a tenant that is not the owner needs the
// owner's Allow. Errors: ErrNotFound (no such segment), ErrPermissionDenied,
// ErrInvalidArgument (exists with ShmExclusive, size, name),
// ErrQuotaExceeded (creating past the tenant's quota).
func (s *Session) ShmGet(ctx context.Context, key ShmKey, size uint64, flags ShmFlags) (*Segment, error) {
	var r v1.ShmSegment
	if err := s.call(ctx, &v1.ShmGet{Owner: key.Owner, Name: key.Name, Size: size, Flags: flags}, &r); err != nil {
		return nil, fmt.Errorf("shm get %q: %w", key.Name, err)
	}
	return &Segment{s: s, handle: r.Handle, owner: r.Owner, name: r.Name, size: r.Size, rights: r.Rights, created: r.Created}, nil
}

// Name returns the segment's name.
func (g *Segment) Name() string { return g.name }

// Owner returns the segment's owner tenant.
func (g *Segment) Owner() string { return g.owner }

// Size returns the segment's size in bytes.
func (g *Segment) Size() uint64 { return g.size }

// Rights returns the buffer rights this session has on the segment.
func (g *Segment) Rights() Rights { return g.rights }

// Created reports whether ShmGet created the segment.
func (g *Segment) Created() bool { return g.created }

// Handle returns the segment's raw handle on its session.
func (g *Segment) Handle() uint64 { return g.handle }

// Attach maps the segment into the session's window and returns it as a
// buffer: its address is the session's own, its contents the segment's.
// Read-write needs BufferWrite on the segment. Closing the buffer (Detach)
// unmaps it. Copies through a read-only mapping that write are refused
// (ErrPermissionDenied); kernels are not stopped from writing through it.
func (g *Segment) Attach(ctx context.Context, readOnly bool) (*Buffer, error) {
	var r v1.BufferCreated
	if err := g.s.call(ctx, &v1.ShmAttach{Segment: g.handle, ReadOnly: readOnly}, &r); err != nil {
		return nil, fmt.Errorf("shm attach %q: %w", g.name, err)
	}
	return &Buffer{s: g.s, handle: r.Handle, addr: r.Addr, size: r.Size}, nil
}

// Detach unmaps a buffer Attach returned; it is b.Close.
func (g *Segment) Detach(b *Buffer) error { return b.Close() }

// Stat describes the segment (shmctl IPC_STAT).
func (g *Segment) Stat(ctx context.Context) (ShmStat, error) {
	return g.ctl(ctx, &v1.ShmCtl{Segment: g.handle, Op: v1.ShmStatOp})
}

// Remove removes the segment's name (shmctl IPC_RMID): ShmGet no longer
// finds it, and its memory goes once no session holds it. Owner tenant only.
func (g *Segment) Remove(ctx context.Context) error {
	_, err := g.ctl(ctx, &v1.ShmCtl{Segment: g.handle, Op: v1.ShmRemove})
	return err
}

// Allow gives tenant the buffer rights (BufferRead, BufferWrite) on the
// segment (shmctl IPC_SET); owner tenant only. Narrowing the rights narrows
// the handles and mappings the tenant's sessions hold; 0 revokes them.
func (g *Segment) Allow(ctx context.Context, tenant string, rights Rights) error {
	_, err := g.ctl(ctx, &v1.ShmCtl{Segment: g.handle, Op: v1.ShmAllow, Tenant: tenant, Rights: rights})
	return err
}

func (g *Segment) ctl(ctx context.Context, m *v1.ShmCtl) (ShmStat, error) {
	var r v1.ShmStat
	if err := g.s.call(ctx, m, &r); err != nil {
		return r, fmt.Errorf("shm ctl %q: %w", g.name, err)
	}
	return r, nil
}

// Close releases the session's handle to the segment, unmapping what it
// attached through it. The segment itself stays until removed.
func (g *Segment) Close() error { return g.s.release(g.handle) }
