package driver

import (
	"context"
	"fmt"
	"math/bits"
	"sync"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/sched"
	"github.com/gpuos/gpuos/internal/wire"
)

// The hot path: a session's requests on shared-memory rings instead of its
// socket (OpenRing), bulk copies through a shared staging area the driver
// page-locks (OpenStaging, StagedCopy), and host memory shared with the
// client and page-locked, copied from and to directly (MapHost, HostCopy).
// See api/v1's hotpath.go for the protocol and internal/ring for the memory.
//
// The driver creates every piece of shared memory and seals it against
// shrinking before the client sees it, and trusts nothing in it: a ring is
// read by ring.Consumer's checks, and a staged copy's range is checked against
// the staging area's geometry, which the driver keeps privately. The staging
// area stays mapped and registered until teardown, after the session's
// streams are synchronized, so no device copy outlives it.

// Sizes the driver grants. A client asks; the driver rounds up to a power of
// two and clamps.
const (
	defaultSubmitRing   = 512 << 10
	defaultCompleteRing = 256 << 10
	minRing             = 16 << 10
	maxRing             = 16 << 20

	defaultStaging     = 64 << 20
	defaultStagingSlot = 2 << 20 // chosen on the sim (1-2 MiB best there); tune on the GPU
	minStagingSlot     = 64 << 10
	maxStagingSlot     = 64 << 20
	// maxStaging bounds the page-locked memory one session's staging takes.
	maxStaging = 256 << 20

	// maxHostMap and maxHostMapped bound host memory shared with a session
	// (MapHost): one mapping, and all of the session's together. Page-locked
	// host memory is real memory taken from the machine; until the ledger
	// counts it per tenant, a session may lock this much.
	maxHostMap    = 2 << 30
	maxHostMapped = 4 << 30
	hostHandleBit = 1 << 62 // marks host memory handles, apart from the table's
)

// Errors returned to sessions by the hot path.
var (
	ErrStagingInUse = v1.Errorf(v1.CodeInvalidArgument, "the session already has a staging area")
	ErrNoStaging    = v1.Errorf(v1.CodeInvalidArgument, "no staging area: send OpenStaging first")
	ErrNotPinnable  = v1.Errorf(v1.CodeUnsupported, "staging memory cannot be page-locked")
	ErrNoSuchHost   = v1.Errorf(v1.CodeInvalidHandle, "no such host memory")
	ErrHostMapped   = v1.Errorf(v1.CodeQuotaExceeded, "the session maps too much host memory")
)

// hotPath is a session's shared-memory state.
type hotPath struct {
	conn *wire.HotConn // set by serve; the session's transport
	// pollerPs is how many Ps its pollers may hold, counted in
	// Driver.pollers from openRing to closeHot.
	pollerPs int

	mu        sync.Mutex
	staging   *stagingArea
	hosts     map[uint64]*hostMem // MapHost memory by handle
	nextHost  uint64
	hostBytes uint64
}

// hostMem is host memory shared with the client (MapHost), registered with
// the device.
type hostMem struct {
	shm *ring.Shm
	mem []byte
}

// stagingArea is a session's staging memory, registered with the device.
type stagingArea struct {
	shm *ring.Shm
	st  *ring.Staging
}

// handleHot answers the hot path's requests and hands the rest to handle.
func (s *Session) handleHot(ctx context.Context, req *wire.Request) (v1.Message, []int, error) {
	// In a burst of asynchronous requests (more wait on the ring behind this
	// one), submissions leave the issuing to the scheduler's dispatcher, so
	// that it runs beside this goroutine. Any other request first issues
	// what the burst left queued: a reply, or a wait, never waits on a
	// dispatcher still asleep.
	s.batch = req.More && req.Header.NoReply()
	if !s.batch {
		s.queue.Flush()
	}
	if _, ok := req.Msg.(*v1.Launch); !ok {
		// Whatever this request submits comes after the launches before it.
		s.joinable = nil
	}
	var reply v1.Message
	var fds []int
	var err error
	switch req.Msg.(type) {
	case *v1.OpenRing, *v1.OpenStaging, *v1.StagedCopy, *v1.MapHost, *v1.UnmapHost, *v1.HostCopy, *v1.OpenCompletion:
		if err := s.guardRevoked(req); err != nil {
			return nil, nil, err
		}
	}
	switch m := req.Msg.(type) {
	case *v1.OpenRing:
		reply, fds, err = s.openRing(m)
	case *v1.OpenStaging:
		reply, fds, err = s.openStaging(m)
	case *v1.OpenCompletion:
		reply, fds, err = s.openCompletion(m)
	case *v1.StagedCopy:
		err = s.stagedCopy(ctx, m)
	case *v1.MapHost:
		reply, fds, err = s.mapHost(m)
	case *v1.UnmapHost:
		err = s.unmapHost(ctx, m)
	case *v1.HostCopy:
		err = s.hostCopy(ctx, m, req.Header.NoReply())
	default:
		return s.handle(ctx, req)
	}
	if err != nil {
		err = s.d.check(err)
		if c := v1.CodeOf(err); c == v1.CodePermissionDenied || c == v1.CodeRevoked {
			s.deny(req.Header.Type.String(), err)
		}
	}
	return reply, fds, err
}

// pow2Clamp rounds n up to a power of two in [lo, hi]; 0 takes def.
func pow2Clamp(n, def, lo, hi uint64) int {
	if n == 0 {
		n = def
	}
	n = min(max(n, lo), hi)
	if bits.OnesCount64(n) != 1 {
		n = 1 << bits.Len64(n)
	}
	return int(min(n, hi))
}

func (s *Session) openRing(m *v1.OpenRing) (v1.Message, []int, error) {
	sq := pow2Clamp(uint64(m.SubmitBytes), defaultSubmitRing, minRing, maxRing)
	cq := pow2Clamp(uint64(m.CompleteBytes), defaultCompleteRing, minRing, maxRing)
	shm, err := ring.Create(fmt.Sprintf("gpuos-rings-%d", s.id), wire.RingBytes(sq, cq), true)
	if err != nil {
		return nil, nil, fmt.Errorf("open rings: %w", err)
	}
	if err := wire.InitRings(shm.Bytes(), sq, cq); err != nil {
		shm.Close()
		return nil, nil, fmt.Errorf("open rings: %w", err)
	}
	spin := s.d.ringSpin(s.tenant)
	poll := s.d.fencePoll(s.tenant)
	s.fencePoll.Store(int64(poll))
	opts := ring.Options{Spin: spin, Yield: s.d.polling.yield}
	own, deferred := poll > 0 && ownCompletions(), poll > 0 && deferKicks()
	if own || deferred {
		opts.OnEmpty = s.ringIdle
	}
	if err := s.hot.conn.UseRings(shm.Bytes(), sq, cq, opts, func() { shm.Close() }); err != nil {
		shm.Close()
		return nil, nil, fmt.Errorf("open rings: %w", err)
	}
	// Counted once per session, whatever became of rings offered before.
	n := highClassPollerPs(spin, s.d.hedge(s.tenant))
	s.d.pollers.add(n - s.hot.pollerPs)
	s.hot.pollerPs = n
	if own {
		s.queue.SetOwnCompletions(true)
	}
	if deferred {
		s.queue.SetDeferredKicks(true)
	}
	return &v1.RingOpened{SubmitBytes: uint32(sq), CompleteBytes: uint32(cq), SpinNs: uint64(max(spin, 0))}, []int{shm.TakeFD()}, nil
}

// ringIdle runs when the serving goroutine stops polling its ring:
// completions it owns go to the waiters, and a wake-up of the scheduler's
// dispatcher it owes is paid (each a no-op without any).
func (s *Session) ringIdle() {
	s.queue.HandOff()
	s.queue.Kick()
}

func (s *Session) openStaging(m *v1.OpenStaging) (v1.Message, []int, error) {
	s.hot.mu.Lock()
	defer s.hot.mu.Unlock()
	if s.hot.staging != nil {
		return nil, nil, ErrStagingInUse
	}
	slot := pow2Clamp(m.SlotBytes, defaultStagingSlot, minStagingSlot, maxStagingSlot)
	total := m.Bytes
	if total == 0 {
		total = defaultStaging
	}
	total = min(max(total, uint64(slot)), maxStaging)
	slots := min(int(total/uint64(slot)), ring.MaxSlots)
	shm, err := ring.Create(fmt.Sprintf("gpuos-staging-%d", s.id), ring.StagingBytes(slots, slot), false)
	if err != nil {
		return nil, nil, fmt.Errorf("open staging: %w", err)
	}
	if err := ring.InitStaging(shm.Bytes(), slots, slot); err != nil {
		shm.Close()
		return nil, nil, fmt.Errorf("open staging: %w", err)
	}
	st, err := ring.NewStaging(shm.Bytes(), slots, slot, ring.Options{})
	if err != nil {
		shm.Close()
		return nil, nil, fmt.Errorf("open staging: %w", err)
	}
	// Page-locked, so device copies from and to it run asynchronously. Without
	// that they would block the dispatcher: refuse, and the client copies
	// inline.
	if err := s.d.dev.RegisterHost(st.Data()); err != nil {
		st.Close()
		shm.Close()
		return nil, nil, fmt.Errorf("open staging: %w: %v", ErrNotPinnable, s.d.check(err))
	}
	s.hot.staging = &stagingArea{shm: shm, st: st}
	return &v1.StagingOpened{Slots: uint32(slots), SlotBytes: uint64(slot)}, []int{shm.TakeFD()}, nil
}

// stagedCopy queues a device copy from or to a staging slot. Whatever becomes
// of a queued copy, the slot's completion word gets its generation.
func (s *Session) stagedCopy(ctx context.Context, m *v1.StagedCopy) error {
	s.hot.mu.Lock()
	sa := s.hot.staging
	s.hot.mu.Unlock()
	if sa == nil {
		return ErrNoStaging
	}
	slot, err := sa.st.Locate(m.Offset, m.Size)
	if err != nil {
		return fmt.Errorf("staged copy: %w", v1.Errorf(v1.CodeInvalidArgument, "%v", err))
	}
	so, err := s.streamOf(m.Stream)
	if err != nil {
		return err
	}
	host := sa.st.Data()[m.Offset : m.Offset+m.Size : m.Offset+m.Size]
	c := &sched.Command{Kind: sched.Copy, Stream: so.st, Bytes: m.Size}
	switch m.Dir {
	case v1.DirHtoD:
		dst, err := s.resolve(m.Dev, m.Size, true)
		if err != nil {
			return err
		}
		s.countCopy("htod", m.Size)
		c.Issue = func() error { return so.st.CopyHtoD(dst, host) }
	case v1.DirDtoH:
		src, err := s.resolve(m.Dev, m.Size, false)
		if err != nil {
			return err
		}
		s.countCopy("dtoh", m.Size)
		c.Issue = func() error { return so.st.CopyDtoH(host, src) }
	default: // the codec admits no other
		return fmt.Errorf("%w: staged copy direction %v", ErrBadCopy, m.Dir)
	}
	if !m.Wait {
		c.Done = func(err error) {
			sa.st.Complete(slot, m.Gen, err != nil)
			s.deferError(err)
		}
		return s.submit(ctx, c)
	}
	done := make(chan error, 1)
	c.Done = func(err error) {
		sa.st.Complete(slot, m.Gen, err != nil)
		done <- err
	}
	if err := s.submit(ctx, c); err != nil {
		return err
	}
	err = s.settle(ctx, nil, nil)
	select {
	case derr := <-done: // it failed to issue, or settle waited for its tracking
		if derr != nil {
			return derr
		}
	default:
		if err != nil {
			return err
		}
		// Done on the device: the client may have the slot back now, not
		// when the tracking gets to it (its report then changes nothing).
		sa.st.Complete(slot, m.Gen, false)
	}
	return s.takeDeferred()
}

// mapHost shares page-locked host memory with the client.
func (s *Session) mapHost(m *v1.MapHost) (v1.Message, []int, error) {
	const page = 4096
	if m.Bytes == 0 || m.Bytes > maxHostMap {
		return nil, nil, v1.Errorf(v1.CodeInvalidArgument, "map %d bytes of host memory: want 1 to %d", m.Bytes, uint64(maxHostMap))
	}
	size := (m.Bytes + page - 1) &^ (page - 1)
	s.hot.mu.Lock()
	defer s.hot.mu.Unlock()
	if s.hot.hostBytes+size > maxHostMapped {
		return nil, nil, fmt.Errorf("map %d bytes of host memory: %w (%d mapped)", size, ErrHostMapped, s.hot.hostBytes)
	}
	shm, err := ring.Create(fmt.Sprintf("gpuos-host-%d", s.id), int(size), false)
	if err != nil {
		return nil, nil, fmt.Errorf("map host memory: %w", err)
	}
	if err := s.d.dev.RegisterHost(shm.Bytes()); err != nil {
		shm.Close()
		return nil, nil, fmt.Errorf("map host memory: %w: %v", ErrNotPinnable, s.d.check(err))
	}
	if s.hot.hosts == nil {
		s.hot.hosts = map[uint64]*hostMem{}
	}
	s.hot.nextHost++
	h := hostHandleBit | s.hot.nextHost
	s.hot.hosts[h] = &hostMem{shm: shm, mem: shm.Bytes()}
	s.hot.hostBytes += size
	return &v1.HostMapped{Handle: h, Bytes: size}, []int{shm.TakeFD()}, nil
}

// unmapHost releases host memory once the work queued before it is done, so
// that no device copy still uses it.
func (s *Session) unmapHost(ctx context.Context, m *v1.UnmapHost) error {
	s.hot.mu.Lock()
	hm := s.hot.hosts[m.Handle]
	delete(s.hot.hosts, m.Handle)
	s.hot.mu.Unlock()
	if hm == nil {
		return ErrNoSuchHost
	}
	if err := s.queue.Wait(ctx); err != nil {
		// Copies may still use it: keep it until teardown.
		s.hot.mu.Lock()
		s.hot.hosts[m.Handle] = hm
		s.hot.mu.Unlock()
		return fmt.Errorf("unmap host memory: %w", err)
	}
	s.releaseHost(hm)
	return nil
}

func (s *Session) releaseHost(hm *hostMem) {
	if err := s.d.dev.UnregisterHost(hm.mem); err != nil && !isLost(err) {
		s.d.log.Warn("unregister host memory", "session", s.id, "err", err)
	}
	s.hot.mu.Lock()
	s.hot.hostBytes -= uint64(len(hm.mem))
	s.hot.mu.Unlock()
	hm.shm.Close()
}

// hostCopy copies between device memory and shared host memory directly.
func (s *Session) hostCopy(ctx context.Context, m *v1.HostCopy, async bool) error {
	s.hot.mu.Lock()
	hm := s.hot.hosts[m.Host]
	s.hot.mu.Unlock()
	if hm == nil {
		return ErrNoSuchHost
	}
	if n := uint64(len(hm.mem)); m.Offset > n || m.Size > n-m.Offset {
		return fmt.Errorf("%w: host range %d+%d in %d bytes", ErrOutOfRange, m.Offset, m.Size, n)
	}
	so, err := s.streamOf(m.Stream)
	if err != nil {
		return err
	}
	if m.Size == 0 {
		return nil
	}
	host := hm.mem[m.Offset : m.Offset+m.Size : m.Offset+m.Size]
	c := &sched.Command{Kind: sched.Copy, Stream: so.st, Bytes: m.Size}
	switch m.Dir {
	case v1.DirHtoD:
		dst, err := s.resolve(m.Dev, m.Size, true)
		if err != nil {
			return err
		}
		s.countCopy("htod", m.Size)
		c.Issue = func() error { return so.st.CopyHtoD(dst, host) }
	case v1.DirDtoH:
		src, err := s.resolve(m.Dev, m.Size, false)
		if err != nil {
			return err
		}
		s.countCopy("dtoh", m.Size)
		c.Issue = func() error { return so.st.CopyDtoH(host, src) }
	default:
		return fmt.Errorf("%w: host copy direction %v", ErrBadCopy, m.Dir)
	}
	if async {
		return s.submit(ctx, c)
	}
	if err := s.submitWait(ctx, c); err != nil {
		return err
	}
	return s.takeDeferred()
}

// closeHot releases the staging area and host memory. teardown calls it once
// the session's streams are synchronized and destroyed, so no device copy
// still uses them. (The rings belong to the session's HotConn, released when
// it closes.)
func (s *Session) closeHot() {
	if s.hot.conn != nil {
		s.hot.conn.Close()
	}
	s.d.pollers.add(-s.hot.pollerPs)
	s.hot.pollerPs = 0
	s.hot.mu.Lock()
	sa := s.hot.staging
	s.hot.staging = nil
	hosts := s.hot.hosts
	s.hot.hosts = nil
	s.hot.mu.Unlock()
	for _, hm := range hosts {
		s.releaseHost(hm)
	}
	if sa == nil {
		return
	}
	sa.st.Close() // completions still arriving do nothing from now on
	if err := s.d.dev.UnregisterHost(sa.st.Data()); err != nil && !isLost(err) {
		s.d.log.Warn("unregister staging memory", "session", s.id, "err", err)
	}
	sa.shm.Close()
}

func isLost(err error) bool { return v1.CodeOf(err) == v1.CodeDeviceLost }
