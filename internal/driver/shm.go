package driver

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/cap"
	"github.com/gpuos/gpuos/internal/ledger"
	"github.com/gpuos/gpuos/internal/mem"
)

// Errors returned by the shared memory segment requests.
var (
	ErrNoSegment     = v1.Errorf(v1.CodeNotFound, "no shared memory segment of that name")
	ErrSegmentExists = v1.Errorf(v1.CodeInvalidArgument, "shared memory segment exists")
	ErrNotOwner      = v1.Errorf(v1.CodePermissionDenied, "only the segment's owner tenant may do this")
)

// shmRegistry holds a driver's shared memory segments: named device memory
// owned by a tenant, that sessions of the owner and of tenants it allows
// attach into their windows (ShmGet, ShmAttach, ShmCtl: the shm-like API).
//
// A segment's memory lives in a window of its owner tenant that belongs to
// no session (so it outlives the session that created it), is charged to the
// owner's quota, and is attached — the same physical chunks — into each
// session that maps it. A session reaches a segment through a segment handle
// (KindSegment); its mappings are children of that handle, so closing the
// handle, or revoking it, unmaps them.
//
// Lifetime, as with System V shared memory: a segment lives until it is
// removed (ShmRemove) and its last handle is gone. Unlike it, a segment also
// goes when its owner tenant has no session left on the device: nothing a
// crashed client made outlives the tenant's presence. Its memory is freed
// then, and every session that still held it loses its handle and mappings.
//
// mu is taken after the session's locks and before the memory manager's; it
// is never held while revoking capabilities (whose cleanups take it).
type shmRegistry struct {
	mu      sync.Mutex
	byName  map[shmKey]*segment   // segments not removed, by name
	live    map[*segment]struct{} // segments whose memory is not freed, removed or not
	windows map[string]*shmWindow // by owner tenant
}

type shmKey struct{ owner, name string }

// shmWindow is a tenant's window for its segments.
type shmWindow struct {
	w    *mem.Window
	segs int
}

type segment struct {
	key      shmKey
	size     uint64
	alloc    *mem.Allocation
	win      *shmWindow
	acl      map[string]cap.Rights // tenants other than the owner
	removed  bool                  // its name is gone: it goes with its last handle
	gone     bool                  // its memory was freed
	handles  map[*segHandle]struct{}
	mappings int
}

// segHandle is a session's handle to a segment.
type segHandle struct {
	seg *segment
	s   *Session
	h   cap.Handle
}

// rightsFor returns the buffer rights tenant has on seg. Caller holds mu.
func (seg *segment) rightsFor(tenant string) cap.Rights {
	if tenant == seg.key.owner {
		return cap.AllBufferRights
	}
	return seg.acl[tenant]
}

func checkShmName(name string) error {
	if name == "" || len(name) > v1.MaxShmName {
		return v1.Errorf(v1.CodeInvalidArgument, "segment name of %d bytes (want 1..%d)", len(name), v1.MaxShmName)
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] == 0x7f {
			return v1.Errorf(v1.CodeInvalidArgument, "segment name %q has a control character", name)
		}
	}
	return nil
}

func (s *Session) shmGet(m *v1.ShmGet) (v1.Message, error) {
	owner := m.Owner
	if owner == "" {
		owner = s.tenant.name
	}
	if err := checkShmName(m.Name); err != nil {
		return nil, err
	}
	create := m.Flags&v1.ShmCreate != 0
	if create {
		switch {
		case owner != s.tenant.name:
			return nil, fmt.Errorf("create segment %q of tenant %q: segments are created in the session's own tenant: %w", m.Name, owner, v1.ErrPermissionDenied)
		case s.rights()&v1.RightAlloc == 0:
			return nil, fmt.Errorf("create segment %q: the session lacks the alloc right: %w", m.Name, v1.ErrPermissionDenied)
		case m.Size == 0:
			return nil, v1.Errorf(v1.CodeInvalidArgument, "create segment %q of zero size", m.Name)
		}
	}
	reg := &s.d.shm
	key := shmKey{owner, m.Name}
	reg.mu.Lock()
	seg := reg.byName[key]
	created := false
	switch {
	case seg != nil && create && m.Flags&v1.ShmExclusive != 0:
		reg.mu.Unlock()
		return nil, fmt.Errorf("segment %q: %w", m.Name, ErrSegmentExists)
	case seg == nil && !create:
		reg.mu.Unlock()
		return nil, fmt.Errorf("segment %q of tenant %q: %w", m.Name, owner, ErrNoSegment)
	case seg == nil:
		var err error
		if seg, err = reg.createLocked(s, key, m.Size); err != nil {
			reg.mu.Unlock()
			return nil, err
		}
		created = true
	case m.Size > seg.size:
		reg.mu.Unlock()
		return nil, v1.Errorf(v1.CodeInvalidArgument, "segment %q has %d bytes, %d asked for", m.Name, seg.size, m.Size)
	}
	rights := seg.rightsFor(s.tenant.name)
	if rights == 0 {
		reg.mu.Unlock()
		return nil, fmt.Errorf("segment %q of tenant %q is not shared with tenant %q: %w", m.Name, owner, s.tenant.name, v1.ErrPermissionDenied)
	}
	hd := &segHandle{seg: seg, s: s}
	seg.handles[hd] = struct{}{} // keeps the segment while the handle is made
	size := seg.size
	reg.mu.Unlock()

	h, err := s.insert(cap.KindSegment, hd, s.selfRef(), rights, func() { reg.dropHandle(hd) })
	if err != nil {
		return nil, err
	}
	reg.mu.Lock()
	hd.h = h
	reg.mu.Unlock()
	if created {
		s.d.audit(audit.Event{Kind: audit.KindAlloc, Tenant: s.tenant.name, Session: s.id, Object: uint64(h),
			Detail: map[string]any{"bytes": size, "segment": m.Name}})
	}
	return &v1.ShmSegment{Handle: uint64(h), Owner: owner, Name: m.Name, Size: size, Rights: v1.Rights(rights), Created: created}, nil
}

// createLocked makes a segment of s's tenant in the tenant's segment window.
// Caller holds mu (the memory manager does not call back into the driver
// while allocating).
func (reg *shmRegistry) createLocked(s *Session, key shmKey, size uint64) (*segment, error) {
	if reg.byName == nil {
		reg.byName, reg.live, reg.windows = map[shmKey]*segment{}, map[*segment]struct{}{}, map[string]*shmWindow{}
	}
	sw := reg.windows[key.owner]
	if sw == nil {
		w, err := s.d.mem.OpenWindow(s.tenant.mem)
		if err != nil {
			return nil, fmt.Errorf("create segment %q: open the tenant's segment window: %w", key.name, err)
		}
		sw = &shmWindow{w: w}
		reg.windows[key.owner] = sw
	}
	a, err := sw.w.Alloc(size, mem.Shareable)
	if err != nil {
		if sw.segs == 0 {
			delete(reg.windows, key.owner)
			sw.w.Close()
		}
		return nil, fmt.Errorf("create segment %q of %d bytes: %w", key.name, size, err)
	}
	sw.segs++
	seg := &segment{key: key, size: a.Size(), alloc: a, win: sw, acl: map[string]cap.Rights{}, handles: map[*segHandle]struct{}{}}
	reg.byName[key] = seg
	reg.live[seg] = struct{}{}
	return seg, nil
}

// dropHandle forgets a segment handle (its cleanup) and frees the segment if
// it was removed and this was its last handle.
func (reg *shmRegistry) dropHandle(hd *segHandle) {
	reg.mu.Lock()
	seg := hd.seg
	delete(seg.handles, hd)
	free := reg.releasableLocked(seg)
	reg.mu.Unlock()
	reg.free(free)
}

// releasableLocked marks seg gone if it was removed and has no handle, and
// returns it for free, else nil. Caller holds mu.
func (reg *shmRegistry) releasableLocked(seg *segment) *segment {
	if !seg.removed || len(seg.handles) > 0 || seg.gone {
		return nil
	}
	seg.gone = true
	delete(reg.live, seg)
	return seg
}

// free frees a segment's memory, and its tenant's segment window once empty.
func (reg *shmRegistry) free(seg *segment) {
	if seg == nil {
		return
	}
	seg.alloc.Free()
	reg.mu.Lock()
	sw := seg.win
	sw.segs--
	var closeW *mem.Window
	if sw.segs == 0 && reg.windows[seg.key.owner] == sw {
		delete(reg.windows, seg.key.owner)
		closeW = sw.w
	}
	reg.mu.Unlock()
	if closeW != nil {
		closeW.Close()
	}
}

// segHandleOf looks up a segment handle of s with the given rights.
func (s *Session) segHandleOf(h uint64, need cap.Rights) (cap.Ref, *segHandle, error) {
	ref, err := s.table.Ref(cap.Handle(h), cap.KindSegment, need)
	if err != nil {
		if errors.Is(err, cap.ErrPermissionDenied) && need&cap.RightBufferWrite != 0 {
			return cap.Ref{}, nil, fmt.Errorf("attach segment read-write: %w", ErrReadOnly)
		}
		return cap.Ref{}, nil, err
	}
	return ref, ref.Object().(*segHandle), nil
}

func (s *Session) shmAttach(m *v1.ShmAttach) (v1.Message, error) {
	need := cap.RightBufferRead
	if !m.ReadOnly {
		need |= cap.RightBufferWrite
	}
	ref, hd, err := s.segHandleOf(m.Segment, need)
	if err != nil {
		return nil, err
	}
	seg := hd.seg
	reg := &s.d.shm
	reg.mu.Lock()
	if seg.gone {
		reg.mu.Unlock()
		return nil, fmt.Errorf("attach segment %q: %w", seg.key.name, v1.ErrRevoked)
	}
	seg.mappings++
	reg.mu.Unlock()
	unmapped := func() {
		reg.mu.Lock()
		seg.mappings--
		reg.mu.Unlock()
	}
	if err := s.ledger.Charge(ledger.MappedBytes, seg.size); err != nil {
		unmapped()
		return nil, err
	}
	a, err := s.window.Attach(seg.alloc, m.ReadOnly)
	if err != nil {
		s.ledger.Refund(ledger.MappedBytes, seg.size)
		unmapped()
		return nil, fmt.Errorf("attach segment %q: %w", seg.key.name, err)
	}
	b := &bufferObj{alloc: a, addr: uint64(a.Ptr()), size: a.Size(), kind: cap.KindMapping}
	h, err := s.insert(cap.KindMapping, b, ref, need, func() {
		s.freeBuffer(b, ledger.MappedBytes)
		unmapped()
	})
	if err != nil {
		return nil, err
	}
	s.d.audit(audit.Event{Kind: audit.KindAttach, Tenant: s.tenant.name, Session: s.id, Object: uint64(h),
		Detail: map[string]any{"bytes": b.size, "segment": seg.key.name, "owner": seg.key.owner, "rights": need.String()}})
	return &v1.BufferCreated{Handle: uint64(h), Addr: b.addr, Size: b.size}, nil
}

func (s *Session) shmCtl(m *v1.ShmCtl) (v1.Message, error) {
	_, hd, err := s.segHandleOf(m.Segment, 0)
	if err != nil {
		return nil, err
	}
	seg := hd.seg
	reg := &s.d.shm
	own := seg.key.owner == s.tenant.name
	switch m.Op {
	case v1.ShmStatOp:
	case v1.ShmRemove:
		if !own {
			return nil, fmt.Errorf("remove segment %q: %w", seg.key.name, ErrNotOwner)
		}
		reg.mu.Lock()
		if !seg.removed {
			seg.removed = true
			if reg.byName[seg.key] == seg {
				delete(reg.byName, seg.key)
			}
		}
		free := reg.releasableLocked(seg)
		reg.mu.Unlock()
		reg.free(free)
		s.d.audit(audit.Event{Kind: audit.KindRevoke, Tenant: s.tenant.name, Session: s.id,
			Detail: map[string]any{"segment": seg.key.name, "op": "remove"}})
	case v1.ShmAllow:
		if !own {
			return nil, fmt.Errorf("share segment %q: %w", seg.key.name, ErrNotOwner)
		}
		if m.Tenant == "" || m.Tenant == seg.key.owner {
			return nil, v1.Errorf(v1.CodeInvalidArgument, "share segment %q with tenant %q: name another tenant", seg.key.name, m.Tenant)
		}
		rights := cap.Rights(m.Rights & v1.AllBufferRights)
		reg.mu.Lock()
		old := seg.acl[m.Tenant]
		if rights == 0 {
			delete(seg.acl, m.Tenant)
		} else {
			seg.acl[m.Tenant] = rights
		}
		var narrow []*segHandle
		if old&^rights != 0 {
			for x := range seg.handles {
				if x.s.tenant.name == m.Tenant && x.h != 0 {
					narrow = append(narrow, x)
				}
			}
		}
		reg.mu.Unlock()
		// Handles already given narrow with the grant; no rights left
		// revokes them and unmaps their mappings.
		for _, x := range narrow {
			if rights == 0 {
				x.s.table.Revoke(x.h)
			} else {
				x.s.table.Restrict(x.h, rights)
			}
		}
		s.d.audit(audit.Event{Kind: audit.KindGrant, Tenant: s.tenant.name, Session: s.id,
			Detail: map[string]any{"segment": seg.key.name, "to_tenant": m.Tenant, "rights": rights.String()}})
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	st := &v1.ShmStat{Owner: seg.key.owner, Name: seg.key.name, Size: seg.size, Handles: uint32(len(seg.handles)),
		Mappings: uint32(seg.mappings), Removed: seg.removed}
	for t, r := range seg.acl {
		st.Allowed = append(st.Allowed, v1.ShmAccess{Tenant: t, Rights: v1.Rights(r)})
	}
	sort.Slice(st.Allowed, func(i, j int) bool { return st.Allowed[i].Tenant < st.Allowed[j].Tenant })
	return st, nil
}

// shmTenantLeft removes every segment of a tenant that has no session left
// on the driver: other tenants' handles to them are revoked (unmapping their
// mappings) and the memory freed. It runs when a session has ended, outside
// every capability cleanup.
func (d *Driver) shmTenantLeft(tenant string) {
	d.mu.Lock()
	for _, s := range d.sessions {
		if s.tenant.name == tenant {
			d.mu.Unlock()
			return
		}
	}
	d.mu.Unlock()
	reg := &d.shm
	reg.mu.Lock()
	var revoke []*segHandle
	var free []*segment
	for seg := range reg.live {
		if seg.key.owner != tenant {
			continue
		}
		seg.removed = true
		if reg.byName[seg.key] == seg {
			delete(reg.byName, seg.key)
		}
		for x := range seg.handles {
			if x.h != 0 {
				revoke = append(revoke, x)
			}
		}
		if f := reg.releasableLocked(seg); f != nil {
			free = append(free, f)
		}
	}
	reg.mu.Unlock()
	for _, f := range free {
		reg.free(f)
	}
	// Revoking the last handle of a removed segment frees it (dropHandle).
	for _, x := range revoke {
		x.s.table.Revoke(x.h)
	}
}
