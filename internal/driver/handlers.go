package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/cap"
	"github.com/gpuos/gpuos/internal/ledger"
	"github.com/gpuos/gpuos/internal/mem"
	"github.com/gpuos/gpuos/internal/sched"
	"github.com/gpuos/gpuos/internal/slice"
	"github.com/gpuos/gpuos/internal/wire"
)

// Errors returned to sessions.
var (
	ErrBadParams   = v1.Errorf(v1.CodeInvalidArgument, "kernel parameter buffer does not match the kernel's parameters")
	ErrBadLaunch   = v1.Errorf(v1.CodeInvalidArgument, "invalid launch configuration")
	ErrOutOfRange  = v1.Errorf(v1.CodeInvalidArgument, "range outside the buffer")
	ErrReadOnly    = v1.Errorf(v1.CodePermissionDenied, "buffer is read-only in this session")
	ErrBadCopy     = v1.Errorf(v1.CodeInvalidArgument, "invalid copy")
	ErrEmptyImage  = v1.Errorf(v1.CodeInvalidArgument, "empty program image")
	ErrFenceNotYet = v1.Errorf(v1.CodeNotReady, "fence not reached yet")
)

// handle answers one admitted request; the wire server has already checked the
// endpoint, the session's rights for the request type, and the frame's form.
func (s *Session) handle(ctx context.Context, req *wire.Request) (v1.Message, []int, error) {
	if err := s.guardRevoked(req); err != nil {
		return nil, nil, err
	}
	reply, err := s.dispatch(ctx, req)
	if err != nil {
		err = s.d.check(err)
		if c := v1.CodeOf(err); c == v1.CodePermissionDenied || c == v1.CodeQuotaExceeded || c == v1.CodeRevoked {
			s.deny(req.Header.Type.String(), err)
		}
	}
	return reply, nil, err
}

func (s *Session) dispatch(ctx context.Context, req *wire.Request) (v1.Message, error) {
	switch m := req.Msg.(type) {
	case *v1.Hello:
		return &v1.HelloReply{Major: v1.Major, Minor: v1.Minor, Server: "gpuos driver", Backend: s.d.Backend()}, nil
	case *v1.CreateBuffer:
		return s.createBuffer(m)
	case *v1.Release:
		return nil, s.table.Release(cap.Handle(m.Handle))
	case *v1.Revoke:
		return nil, s.revoke(cap.Handle(m.Handle))
	case *v1.BufferWrite:
		return nil, s.bufferWrite(ctx, m)
	case *v1.BufferRead:
		return s.bufferRead(ctx, m)
	case *v1.LoadProgram:
		return s.loadProgram(m)
	case *v1.GetKernel:
		return s.getKernel(m)
	case *v1.GetGlobal:
		return s.getGlobal(m)
	case *v1.CreateStream:
		return s.createStream(m)
	case *v1.Launch:
		s.launchReq = req.Header.ID // counted for a watching client (watch.go)
		return nil, s.launch(ctx, m, s.fenceLaunch(req), req.Hedged)
	case *v1.Memcpy:
		return s.memcpy(ctx, m, req.Header.NoReply())
	case *v1.Memset:
		return nil, s.memset(ctx, m)
	case *v1.RecordFence:
		return s.recordFence(ctx, m)
	case *v1.StreamWaitFence:
		return nil, s.streamWaitFence(ctx, m)
	case *v1.PollFence:
		return nil, s.pollFence(m)
	case *v1.WaitFence:
		return nil, s.waitFence(ctx, m)
	case *v1.FenceElapsed:
		return s.fenceElapsed(m)
	case *v1.Synchronize:
		return nil, s.synchronize(ctx, m)
	case *v1.SynchronizeFences:
		return s.synchronizeFences(ctx, m)
	case *v1.WatchLaunches:
		return s.watchLaunches(m)
	case *v1.Restrict:
		r, err := s.table.Restrict(s.self, cap.Rights(m.Rights&v1.AllSessionRights)|cap.AllBufferRights)
		return &v1.RightsReply{Rights: v1.Rights(r) & v1.AllSessionRights}, err
	case *v1.Grant:
		return s.grant(m)
	case *v1.Attach:
		return s.attach(m)
	case *v1.MemInfo:
		free, total := s.tenant.mem.MemoryInfo()
		return &v1.MemInfoReply{Free: free, Total: total}, nil
	case *v1.SessionInfo:
		st := s.Stat()
		return &st, nil
	case *v1.ShmGet:
		return s.shmGet(m)
	case *v1.ShmAttach:
		return s.shmAttach(m)
	case *v1.ShmCtl:
		return s.shmCtl(m)
	}
	return nil, v1.Errorf(v1.CodeUnsupported, "%v is not served by a driver", req.Header.Type)
}

// ---- buffers ----------------------------------------------------------------

func (s *Session) createBuffer(m *v1.CreateBuffer) (v1.Message, error) {
	if m.Flags&^uint32(mem.Shareable) != 0 {
		return nil, v1.Errorf(v1.CodeInvalidArgument, "unknown buffer flags %#x", m.Flags&^uint32(mem.Shareable))
	}
	if err := s.ledger.Charge(ledger.Buffers, 1); err != nil {
		return nil, fmt.Errorf("create buffer: %w", err)
	}
	a, err := s.window.Alloc(m.Size, mem.AllocFlags(m.Flags))
	if err != nil {
		s.ledger.Refund(ledger.Buffers, 1)
		return nil, fmt.Errorf("create buffer of %d bytes: %w", m.Size, err)
	}
	s.ledger.Charge(ledger.DeviceBytes, a.Size())
	b := &bufferObj{alloc: a, addr: uint64(a.Ptr()), size: a.Size(), kind: cap.KindBuffer}
	h, err := s.insert(cap.KindBuffer, b, s.selfRef(), cap.AllBufferRights, func() { s.freeBuffer(b, ledger.DeviceBytes) })
	if err != nil {
		return nil, err
	}
	s.d.audit(audit.Event{Kind: audit.KindAlloc, Tenant: s.tenant.name, Session: s.id, Object: uint64(h),
		Detail: map[string]any{"bytes": b.size, "addr": fmt.Sprintf("%#x", b.addr)}})
	return &v1.BufferCreated{Handle: uint64(h), Addr: b.addr, Size: b.size}, nil
}

// insert adds an object to the session's table, charging a handle; on failure
// it runs cleanup itself so nothing leaks.
func (s *Session) insert(kind cap.Kind, obj any, parent cap.Ref, rights cap.Rights, cleanup func()) (cap.Handle, error) {
	if err := s.ledger.Charge(ledger.Handles, 1); err != nil {
		if cleanup != nil {
			cleanup()
		}
		return 0, err
	}
	h, err := s.table.Insert(kind, obj, parent, rights, func() {
		if cleanup != nil {
			cleanup()
		}
		s.ledger.Refund(ledger.Handles, 1)
	})
	if err != nil {
		s.ledger.Refund(ledger.Handles, 1)
		if cleanup != nil {
			cleanup()
		}
		return 0, err
	}
	if b, ok := obj.(*bufferObj); ok {
		s.mu.Lock()
		s.allocs[b.alloc] = h
		s.mu.Unlock()
	}
	return h, nil
}

func (s *Session) selfRef() cap.Ref {
	r, _ := s.table.Ref(s.self, cap.KindSession, 0)
	return r
}

func (s *Session) freeBuffer(b *bufferObj, res ledger.Resource) {
	s.mu.Lock()
	delete(s.allocs, b.alloc)
	s.mu.Unlock()
	if err := b.alloc.Free(); err != nil && !errors.Is(err, mem.ErrRevoked) && !errors.Is(err, mem.ErrWindowClosed) {
		s.d.log.Warn("free buffer", "session", s.id, "err", err)
	}
	s.ledger.Refund(res, b.size)
	if res == ledger.DeviceBytes {
		s.ledger.Refund(ledger.Buffers, 1)
		s.d.audit(audit.Event{Kind: audit.KindFree, Tenant: s.tenant.name, Session: s.id, Detail: map[string]any{"bytes": b.size}})
	}
}

// buffer finds a buffer or attached mapping by handle, with the given rights.
func (s *Session) buffer(h uint64, need cap.Rights) (*bufferObj, error) {
	obj, err := s.table.Lookup(cap.Handle(h), cap.KindBuffer, need)
	if errors.Is(err, cap.ErrInvalidHandle) {
		obj, err = s.table.Lookup(cap.Handle(h), cap.KindMapping, need)
	}
	if err != nil {
		if errors.Is(err, cap.ErrPermissionDenied) && need&cap.RightBufferWrite != 0 {
			return nil, ErrReadOnly
		}
		return nil, err
	}
	return obj.(*bufferObj), nil
}

// resolve turns a reference into a device address for n bytes, checking the
// buffer's rights: by handle and offset, or (Buffer 0) by address inside the
// session's window.
func (s *Session) resolve(r v1.Ref, n uint64, write bool) (backend.DevicePtr, error) {
	need := cap.RightBufferRead
	if write {
		need = cap.RightBufferWrite
	}
	if r.Buffer == 0 {
		a, _, err := s.window.Resolve(backend.DevicePtr(r.Offset), max(n, 1))
		if err != nil {
			if s.inGlobal(r.Offset, n) {
				return backend.DevicePtr(r.Offset), nil
			}
			return 0, fmt.Errorf("address %#x: %w", r.Offset, err)
		}
		s.mu.Lock()
		h, ok := s.allocs[a]
		s.mu.Unlock()
		if !ok && s.inGlobal(r.Offset, n) { // a module's relocated globals
			return backend.DevicePtr(r.Offset), nil
		}
		if !ok {
			return 0, v1.Errorf(v1.CodeInvalidArgument, "address %#x is not in a buffer of this session", r.Offset)
		}
		if _, err := s.buffer(uint64(h), need); err != nil {
			return 0, err
		}
		return backend.DevicePtr(r.Offset), nil
	}
	b, err := s.buffer(r.Buffer, need)
	if err != nil {
		return 0, err
	}
	if r.Offset > b.size || n > b.size-r.Offset {
		return 0, fmt.Errorf("%w: offset %d + %d bytes in a %d-byte buffer", ErrOutOfRange, r.Offset, n, b.size)
	}
	return backend.DevicePtr(b.addr + r.Offset), nil
}

// inGlobal reports whether [addr, addr+n) lies in a module global the session
// looked up.
func (s *Session) inGlobal(addr, n uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for base, g := range s.globals {
		if addr >= base && addr-base <= g.size && n <= g.size-(addr-base) {
			return true
		}
	}
	return false
}

func (s *Session) revoke(h cap.Handle) error {
	if h == s.self {
		return v1.Errorf(v1.CodeInvalidArgument, "a session cannot revoke itself: close it")
	}
	err := s.table.Revoke(h)
	if err == nil {
		s.d.audit(audit.Event{Kind: audit.KindRevoke, Tenant: s.tenant.name, Session: s.id, Object: uint64(h)})
	}
	return err
}

// ---- streams and submission -------------------------------------------------

func (s *Session) streamOf(h uint64) (*streamObj, error) {
	if h == 0 {
		return s.stream, nil
	}
	obj, err := s.table.Lookup(cap.Handle(h), cap.KindStream, 0)
	if err != nil {
		return nil, err
	}
	return obj.(*streamObj), nil
}

func (s *Session) createStream(m *v1.CreateStream) (v1.Message, error) {
	if m.Flags&^1 != 0 { // CU_STREAM_NON_BLOCKING is the only flag
		return nil, v1.Errorf(v1.CodeInvalidArgument, "unknown stream flags %#x", m.Flags)
	}
	prio := s.d.streamPriority(s.tenant, int(m.Priority)) // clamped into range, as CUDA does; the tenant's class decides the extremes
	if err := s.ledger.Charge(ledger.Streams, 1); err != nil {
		return nil, err
	}
	so, err := s.d.newTenantStream(s.tenant, prio)
	if err != nil {
		s.ledger.Refund(ledger.Streams, 1)
		return nil, fmt.Errorf("create stream: %w", err)
	}
	h, err := s.insert(cap.KindStream, so, s.selfRef(), 0, func() {
		s.destroyStream(so)
		s.ledger.Refund(ledger.Streams, 1)
	})
	if err != nil {
		return nil, err
	}
	return &v1.StreamCreated{Handle: uint64(h)}, nil
}

// destroyStream waits for the stream's issued work, then destroys it. Work of
// this session still queued for it was dropped with the queue or completes first.
func (s *Session) destroyStream(so *streamObj) {
	s.queue.Wait(context.Background())
	err := so.st.Synchronize()
	if err != nil {
		s.d.check(err)
	}
	s.d.sched.Forget(so.st)
	so.st.Destroy()
	if cp := s.completion.Load(); cp != nil {
		cp.forget(so.st, err == nil)
	}
}

// submit queues work for the device, blocking while the session's queue is
// full. Inside a burst of asynchronous requests the work is Batched: the
// dispatcher goroutine issues it while this one takes the next request.
func (s *Session) submit(ctx context.Context, c *sched.Command) error {
	if c.Done == nil {
		c.Done = s.deferDone
	}
	if s.batch {
		c.Flags |= sched.Batched
	}
	if err := s.queue.Submit(ctx, c); err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	s.prefenceDue.Store(true)
	s.afterSubmit()
	return nil
}

// submitWait queues work and returns once it has completed on the device,
// with its own error (a failure to issue it, or on the device).
func (s *Session) submitWait(ctx context.Context, c *sched.Command) error {
	done := make(chan error, 1)
	c.Done = func(err error) { done <- err }
	if err := s.submit(ctx, c); err != nil {
		return err
	}
	err := s.settle(ctx, nil, nil)
	select {
	case derr := <-done: // it failed to issue, or settle waited for its tracking
		return derr
	default:
		return err // complete on the device; its tracking follows
	}
}

// settle returns once the work the session submitted so far has completed
// on the device. It waits for the scheduler only until that work is issued
// (issuing it on this goroutine when the scheduler is idle), then waits for
// the session's own streams that got work, and also, if not nil (a stream
// synchronize names it): no completion event to wait for, no hand-off to
// the completion tracker and back. A high-class session polls fences on
// them, others synchronize them (awaitStreams). The tracking (accounting,
// Done callbacks) follows on its own. Only if a stream reports an error does
// settle wait for the tracking too, so that the error reaches the commands'
// Done, and the deferred error, exactly as it would have. Other tenants'
// streams are never synchronized: they share the context. Called on the
// serving goroutine. With stamps, it notes there when the session's
// commands were all issued and how it waited (the latency log's syncStamps).
func (s *Session) settle(ctx context.Context, stamps *syncStamps, also backend.Stream) error {
	streams, err := s.queue.WaitIssued(ctx, s.syncStreams[:0])
	if cp := s.completion.Load(); cp != nil {
		streams = cp.takeUnsynced(streams) // the client may not have seen them done
	}
	if stamps != nil {
		stamps.issued = time.Now()
	}
	defer func() {
		clear(streams)
		s.syncStreams = streams[:0]
	}()
	if err != nil {
		return fmt.Errorf("wait for device: %w", err)
	}
	named := also != nil && !slices.Contains(streams, also)
	if named {
		streams = append(streams, also)
	}
	how, err := s.awaitStreams(streams)
	if stamps != nil {
		stamps.how = how
	}
	if err != nil {
		s.d.check(err)
		if err := s.queue.Wait(ctx); err != nil {
			return fmt.Errorf("wait for device: %w", err)
		}
		if named {
			return err // perhaps the named stream's own, which no command carries
		}
	}
	return nil
}

// ---- programs ---------------------------------------------------------------

func (s *Session) loadProgram(m *v1.LoadProgram) (v1.Message, error) {
	if len(m.Image) == 0 {
		return nil, ErrEmptyImage
	}
	// The trust tier decides what loads: guarded PTX, allowlisted SASS, or nothing.
	image, gp, kernels, err := s.admitImage(m.Image)
	if err != nil {
		return nil, fmt.Errorf("load program: %w", err)
	}
	image, slicing := s.d.sliceProgram(image) // slicing.go
	if err := s.ledger.Charge(ledger.Programs, 1); err != nil {
		return nil, err
	}
	// The image aliases the request frame; backends copy what they keep.
	mod, err := s.d.dev.LoadModule(image)
	if err != nil {
		s.ledger.Refund(ledger.Programs, 1)
		return nil, fmt.Errorf("load program: %w", err)
	}
	p := &programObj{mod: mod, kernels: kernels, name: m.Name, guard: gp, slicing: slicing}
	if err := s.bindGuard(p); err != nil {
		mod.Unload()
		s.ledger.Refund(ledger.Programs, 1)
		return nil, fmt.Errorf("load program: %w", err)
	}
	h, err := s.insert(cap.KindProgram, p, s.selfRef(), 0, func() {
		s.queue.Wait(context.Background())
		s.forgetGlobals(p)
		s.unbindGuard(p)
		mod.Unload()
		s.ledger.Refund(ledger.Programs, 1)
	})
	if err != nil {
		return nil, err
	}
	s.d.audit(audit.Event{Kind: audit.KindLoad, Tenant: s.tenant.name, Session: s.id, Object: uint64(h),
		Detail: map[string]any{"name": m.Name, "bytes": len(m.Image), "kernels": kernels}})
	return &v1.ProgramLoaded{Handle: uint64(h), Kernels: kernels}, nil
}

// isPTX reports whether an image is PTX text rather than a cubin or fatbin:
// text that names its .version, with no NUL byte but an optional terminating one
// (cuModuleLoadData takes PTX as a C string).
func isPTX(b []byte) bool {
	if !bytes.Contains(b[:min(len(b), 4096)], []byte(".version")) {
		return false
	}
	i := bytes.IndexByte(b, 0)
	return i < 0 || i == len(b)-1
}

func (s *Session) program(h uint64) (cap.Ref, *programObj, error) {
	ref, err := s.table.Ref(cap.Handle(h), cap.KindProgram, 0)
	if err != nil {
		return cap.Ref{}, nil, err
	}
	return ref, ref.Object().(*programObj), nil
}

func (s *Session) getKernel(m *v1.GetKernel) (v1.Message, error) {
	ref, p, err := s.program(m.Program)
	if err != nil {
		return nil, err
	}
	if slice.IsTwin(m.Name) {
		return nil, fmt.Errorf("kernel %q: %w", m.Name, ErrTwin)
	}
	fn, err := p.mod.Function(m.Name)
	if err != nil {
		return nil, fmt.Errorf("kernel %q: %w", m.Name, err)
	}
	k := &kernelObj{fn: fn, name: m.Name, prog: p}
	if k.slicing, err = p.slicing.kernel(p.mod, m.Name); err != nil {
		return nil, err
	}
	info := &v1.KernelInfo{}
	for _, prm := range fn.Params() {
		info.Params = append(info.Params, v1.ParamInfo{Offset: prm.Offset, Size: prm.Size})
		k.paramSize = max(k.paramSize, prm.Offset+prm.Size)
	}
	k.done = s.guardDone(k)
	h, err := s.insert(cap.KindKernel, k, ref, 0, nil)
	if err != nil {
		return nil, err
	}
	a := fn.Attributes()
	info.Handle = uint64(h)
	info.MaxThreadsPerBlock = uint32(a.MaxThreadsPerBlock)
	info.SharedSizeBytes = uint32(a.SharedSizeBytes)
	info.ConstSizeBytes = uint32(a.ConstSizeBytes)
	info.LocalSizeBytes = uint32(a.LocalSizeBytes)
	info.NumRegs = uint32(a.NumRegs)
	info.PTXVersion = uint32(a.PTXVersion)
	info.BinaryVersion = uint32(a.BinaryVersion)
	info.MaxDynamicSharedMem = uint32(a.MaxDynamicSharedMem)
	return info, nil
}

func (s *Session) getGlobal(m *v1.GetGlobal) (v1.Message, error) {
	_, p, err := s.program(m.Program)
	if err != nil {
		return nil, err
	}
	ptr, size, err := p.mod.Global(m.Name)
	if a, n, ok := p.guardGlobal(m.Name); ok { // relocated into the window by the guard
		ptr, size, err = backend.DevicePtr(a), n, nil
	}
	if err != nil {
		return nil, fmt.Errorf("global %q: %w", m.Name, err)
	}
	// Module globals live in the module's memory, outside the session's window.
	// Copies may address them once the session has looked them up; they get no
	// buffer handle, since they live and die with their program.
	s.mu.Lock()
	s.globals[uint64(ptr)] = globalRange{size: size, prog: p}
	s.mu.Unlock()
	return &v1.BufferCreated{Addr: uint64(ptr), Size: size}, nil
}

// ---- launches ---------------------------------------------------------------

// launch submits m; with fence, the command it joins or makes enqueues a
// fence right behind its launches (fenceLaunch). byHelper says the hedge's
// helper is serving it (for the latency log).
func (s *Session) launch(ctx context.Context, m *v1.Launch, fence, byHelper bool) error {
	var recv time.Time
	if s.latency != nil {
		recv = time.Now()
	}
	// Every Launch request counts for a watching client, which counted it
	// when it wrote it: one that fails has its number skipped (the error
	// sends the client's synchronize to the driver).
	so, err := s.streamOf(m.Stream)
	if err != nil {
		s.watchLaunch(m.Stream, nil)
		return fmt.Errorf("launch: %w", err)
	}
	watch := s.watchLaunch(m.Stream, so.st)
	obj, err := s.table.Lookup(cap.Handle(m.Kernel), cap.KindKernel, 0)
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	k := obj.(*kernelObj)
	if uint32(len(m.Params)) != k.paramSize {
		return fmt.Errorf("launch %s: %w: got %d bytes, want %d", k.name, ErrBadParams, len(m.Params), k.paramSize)
	}
	maxThreads := uint64(k.fn.Attributes().MaxThreadsPerBlock)
	threads := uint64(m.Block[0]) * uint64(m.Block[1]) * uint64(m.Block[2])
	if threads == 0 || m.Grid[0] == 0 || m.Grid[1] == 0 || m.Grid[2] == 0 || (maxThreads > 0 && threads > maxThreads) {
		return fmt.Errorf("launch %s: %w: grid %v block %v", k.name, ErrBadLaunch, m.Grid, m.Block)
	}
	if err := s.guardLaunch(k, m.Params); err != nil {
		return fmt.Errorf("launch %s: %w", k.name, err)
	}
	s.launches.Add(1)
	if ok, sup := s.auditingHot(); ok {
		s.auditHot(audit.KindLaunch, sup, map[string]any{"kernel": k.name, "grid": m.Grid, "block": m.Block})
	}
	cfg := backend.LaunchConfig{Grid: m.Grid, Block: m.Block, SharedMem: m.SharedMem}
	small := s.smallLaunch(cfg)
	if small {
		// The request frame is not ours to keep: join copies the parameters.
		if lc := s.joinable; lc != nil && lc.st == so.st && lc.join(k, cfg, m.Params, s.joinLimit(), fence, watch) {
			s.afterSubmit()
			return nil
		}
	}
	lc := &launchCmd{s: s, st: so.st, fence: fence, watch: watch}
	if s.latency != nil {
		lc.stamps = &launchStamps{recv: recv, byHelper: byHelper}
		s.latency.received(recv)
	}
	lc.progs = append(lc.prog1[:0], k.prog)
	if k.done != nil {
		lc.kdones = append(lc.kdone1[:0], k.done)
	}
	lc.first = launchArgs{fn: k.fn, cfg: cfg, params: append(lc.inline[:0:len(lc.inline)], m.Params...)}
	lc.Command = sched.Command{Kind: sched.Compute, Stream: so.st, Issue: lc.issue, Done: s.deferDone}
	if small {
		// Its measured time is mostly ours to issue it: no event of its own
		// for that (see smallLaunch).
		lc.Flags |= sched.Small
	}
	k.slicing.prepare(&lc.Command, so.st, so.sms, cfg, lc.first.params)
	s.joinable = nil
	// Launches after it may join it until it is issued.
	joinable := small && lc.IssueUnits == nil
	lc.open = joinable
	lc.Done = lc.finish(s)
	s.launchDones.Add(1) // teardown waits for the Done (it reads the program's guard state)
	stamps := lc.stamps
	if stamps != nil {
		stamps.submit = time.Now()
		lc.TimeLock = true
	}
	if err := s.submit(ctx, &lc.Command); err != nil {
		s.launchDones.Done() // never queued: no Done
		return err
	}
	if joinable {
		s.joinable = lc
	}
	if watch.ws != nil {
		s.reapDue.Store(true) // no synchronize may come to complete it
	}
	if stamps != nil {
		s.latency.servedAt(stamps.recv, time.Now())
	}
	return nil
}

// Launches a command carries. Joining spares the scheduler's work per
// command (a few µs on the lent H100); issuing a command holds the
// dispatcher, which every tenant's work waits for, so joinTarget bounds
// that. The scheduler charges a burst of small launches about the time it
// takes to issue them, since the GPU waits for the host between them: four
// launches of 5 µs each measure 20 µs, which by the estimate alone would
// earn a command a completion event of its own (recorded, waited for and
// measured, 11-14 µs by runs 7 and 8), slowing the host and raising the
// estimate further, so that a burst settles at an event a command (likely
// run 11a's 1.58x native in the shim's launch benchmark; BenchmarkWallLaunch
// shows it on a device timed by the wall clock). Small launch commands are
// flagged sched.Small instead, and share an event per 16 commands.
const (
	defaultJoin = 4
	maxJoined   = 8 // what $GPUOS_LAUNCH_JOIN may ask for
	joinTarget  = 15 * time.Microsecond
)

// joinEnv ($GPUOS_LAUNCH_JOIN, 1 to maxJoined) fixes how many launches a
// command may carry (1: none joined), for measuring on a GPU.
const joinEnv = "GPUOS_LAUNCH_JOIN"

var fixedJoin = sync.OnceValue(func() int {
	n, err := strconv.Atoi(os.Getenv(joinEnv))
	if err != nil || n < 1 {
		return 0
	}
	return min(n, maxJoined)
})

// joinLimit is how many launches a new command may carry now: defaultJoin,
// fewer if the session's launches take longer to issue (measured by issue)
// than joinTarget allows.
func (s *Session) joinLimit() int {
	if s.joinFixed > 0 {
		return s.joinFixed
	}
	if per := s.issueNs.Load(); per > 0 {
		return int(min(max(int64(joinTarget)/per, 1), defaultJoin))
	}
	return defaultJoin
}

// smallLaunch reports whether a launch may share a scheduled command with
// the launches around it: its grid fits on the device at once (at most one
// block per SM), so it is no more than one wave of device time. A burst of
// such launches is bound by the CPU that issues them, and the scheduler's
// per-command work then weighs as much as the launch itself: joined, they pay
// it once. Larger launches keep a command each, so that the scheduler's
// in-flight bounds and preemption points stay per kernel where kernels are
// long.
func (s *Session) smallLaunch(cfg backend.LaunchConfig) bool {
	blocks := uint64(cfg.Grid[0]) * uint64(cfg.Grid[1]) * uint64(cfg.Grid[2])
	return blocks <= s.joinBlocks
}

// smallGrid is the most blocks a launch that may join others has: the
// device's SMs (at least 1).
func smallGrid(dev *backend.DeviceInfo) uint64 {
	sms := uint64(max(dev.SMCount, 0))
	if sms == 0 {
		sms = deviceAttr(dev, cuda.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
	}
	return max(sms, 1)
}

// launchCmd is one or more launches on one stream as the scheduler sees
// them: one command. While the scheduler has not issued it, later small
// launches of the same session on the same stream join it (the session
// submitted nothing else in between), so a burst of them pays the
// scheduler's work once per command (joinLimit launches). Each launch is validated on
// its own before it joins. Issue launches them all, in order; Done runs the
// Done of each of their programs (the guard's check of its fault record).
// Small parameter buffers are kept inline.
type launchCmd struct {
	sched.Command
	s     *Session
	st    backend.Stream
	first launchArgs
	mu    sync.Mutex
	open  bool          // launches may still join: not issued or dropped
	fence bool          // enqueue a fence behind the launches (fenceLaunch); the last joined says
	more  []launchArgs  // joined launches
	arena []byte        // their parameters
	progs []*programObj // the programs of the launches, each once
	// kdones are their kernels' Done (guard.go's guardDone), one a program,
	// those that have one.
	kdones []func(error)
	// inline holds the first launch's parameters when they fit; prog1 and
	// kdone1 its program and Done (most commands have launches of one).
	inline [128]byte
	prog1  [1]*programObj
	kdone1 [1]func(error)
	// stamps times the command ($GPUOS_LATENCY_LOG, latency.go); nil: off.
	stamps *launchStamps
	// watch is what the command publishes for a watching client once its
	// fence is enqueued (watch.go); the last joined launch's.
	watch launchWatch
}

type launchArgs struct {
	fn     backend.Function
	cfg    backend.LaunchConfig
	params []byte
}

// join adds a launch of k to the command if it has not been issued yet and
// carries fewer than limit, copying its parameters; false means it was, or
// is full: submit a new one.
func (lc *launchCmd) join(k *kernelObj, cfg backend.LaunchConfig, params []byte, limit int, fence bool, watch launchWatch) bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if !lc.open || len(lc.more)+1 >= limit {
		return false
	}
	lc.fence = fence
	if watch.ws != nil {
		lc.watch = watch
	}
	if !slices.Contains(lc.progs, k.prog) {
		lc.progs = append(lc.progs, k.prog)
		if k.done != nil {
			lc.kdones = append(lc.kdones, k.done)
		}
	}
	if lc.more == nil {
		lc.more = make([]launchArgs, 0, limit-1)
		lc.arena = make([]byte, 0, (limit-1)*len(params))
	}
	// A grown arena leaves the earlier launches' parameters where they were.
	off := len(lc.arena)
	lc.arena = append(lc.arena, params...)
	lc.more = append(lc.more, launchArgs{fn: k.fn, cfg: cfg, params: lc.arena[off:len(lc.arena):len(lc.arena)]})
	return true
}

// close ends joining and returns the joined launches.
func (lc *launchCmd) close() []launchArgs {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.open = false
	return lc.more
}

// issue launches the command's launches in order, then the fence if it is
// to have one. A failed launch does not stop the ones after it, as separate
// launches would not be: the first error is the command's.
func (lc *launchCmd) issue() error {
	more := lc.close() // fence is final once it is closed
	if st := lc.stamps; st != nil && st.issue0.IsZero() {
		st.beside = max(lc.s.d.sched.InDriver()-1, -1) // this command is one of them; -1: not counted
	}
	start := time.Now()
	err := lc.st.Launch(lc.first.fn, lc.first.cfg, lc.first.params)
	for i := range more {
		a := &more[i]
		if lerr := lc.st.Launch(a.fn, a.cfg, a.params); lerr != nil && err == nil {
			err = lerr
		}
	}
	if st := lc.stamps; st != nil && st.issue0.IsZero() {
		st.issue0, st.issue1 = start, time.Now()
		lc.s.latency.issued(st)
	}
	if err == nil {
		lc.watch.issued()
	}
	lc.s.noteIssue(time.Since(start), 1+len(more))
	if lc.fence && err == nil {
		if f, ok := lc.st.(backend.Fencer); ok {
			// Ahead of the scheduler's completion event, or instead of it
			// (EndFence): the synchronize finds it (streamFence); a failure
			// is the synchronize's to meet.
			if fe, ferr := f.Fence(); ferr == nil {
				if fenceEndOn.Load() {
					lc.EndFence = fe
				}
				lc.s.publish(lc.watch, fe)
			}
			if st := lc.stamps; st != nil && st.fenced.IsZero() {
				st.fenced = time.Now()
			}
		}
	}
	return err
}

// noteIssue keeps a moving average of the time one launch takes to issue.
// One goroutine at a time issues a session's commands (the scheduler's
// dispatch token, or its express lane); the serving goroutine reads it.
func (s *Session) noteIssue(d time.Duration, launches int) {
	per := max(int64(d)/int64(launches), 1)
	if old := s.issueNs.Load(); old > 0 {
		per = old + (per-old)/8
	}
	s.issueNs.Store(per)
}

// finish is the command's Done: joining ends (a dropped command is never
// issued), then its programs' Done run (each keeps err for the session, as
// deferError does).
func (lc *launchCmd) finish(s *Session) func(error) {
	return func(err error) {
		defer s.launchDones.Done()
		if st := lc.stamps; st != nil {
			st.synced, st.done, st.expressed, st.locked = lc.Command.Synced, time.Now(), lc.Command.Expressed, lc.Command.Locked
			s.latency.add(st)
		}
		lc.close() // nothing joins from here: kdones stay as they are
		if len(lc.kdones) == 0 {
			s.deferError(err)
		}
		for _, done := range lc.kdones {
			done(err)
		}
	}
}

// ---- copies -----------------------------------------------------------------

func (s *Session) countCopy(dir string, n uint64) {
	s.copies.Add(1)
	s.copyBytes.Add(n)
	if ok, sup := s.auditingHot(); ok {
		s.auditHot(audit.KindCopy, sup, map[string]any{"dir": dir, "bytes": n})
	}
}

func (s *Session) bufferWrite(ctx context.Context, m *v1.BufferWrite) error {
	if m.Buffer == 0 {
		return cap.ErrInvalidHandle // buffer requests name a buffer; addresses go through Memcpy
	}
	dst, err := s.resolve(v1.Ref{Buffer: m.Buffer, Offset: m.Offset}, uint64(len(m.Data)), true)
	if err != nil {
		return err
	}
	if err := s.copyIn(ctx, s.stream, dst, m.Data, true); err != nil {
		return err
	}
	return s.takeDeferred()
}

func (s *Session) bufferRead(ctx context.Context, m *v1.BufferRead) (v1.Message, error) {
	if m.Length > v1.MaxPayload-64 {
		return nil, v1.Errorf(v1.CodeInvalidArgument, "read of %d bytes exceeds one frame: read in pieces", m.Length)
	}
	if m.Buffer == 0 {
		return nil, cap.ErrInvalidHandle
	}
	src, err := s.resolve(v1.Ref{Buffer: m.Buffer, Offset: m.Offset}, m.Length, false)
	if err != nil {
		return nil, err
	}
	data, err := s.copyOut(ctx, s.stream, src, m.Length)
	if err != nil {
		return nil, err
	}
	return &v1.Data{Data: data}, s.takeDeferred()
}

// copyIn stages data in page-locked memory and copies it to dst on the stream.
func (s *Session) copyIn(ctx context.Context, so *streamObj, dst backend.DevicePtr, data []byte, wait bool) error {
	s.countCopy("htod", uint64(len(data)))
	if len(data) == 0 {
		return nil
	}
	hm, err := s.d.staging.get(len(data))
	if err != nil {
		return fmt.Errorf("stage copy: %w", err)
	}
	buf := hm.Bytes()[:len(data)]
	copy(buf, data)
	c := &sched.Command{Kind: sched.Copy, Stream: so.st, Bytes: uint64(len(data)),
		Issue: func() error { return so.st.CopyHtoD(dst, buf) }}
	if wait {
		err := s.submitWait(ctx, c)
		s.d.staging.put(hm)
		return err
	}
	c.Done = func(err error) {
		s.d.staging.put(hm)
		s.deferError(err)
	}
	return s.submit(ctx, c)
}

// copyOut copies n bytes at src to host memory and returns them.
func (s *Session) copyOut(ctx context.Context, so *streamObj, src backend.DevicePtr, n uint64) ([]byte, error) {
	s.countCopy("dtoh", n)
	out := make([]byte, n)
	if n == 0 {
		return out, nil
	}
	hm, err := s.d.staging.get(int(n))
	if err != nil {
		return nil, fmt.Errorf("stage copy: %w", err)
	}
	defer s.d.staging.put(hm)
	buf := hm.Bytes()[:n]
	err = s.submitWait(ctx, &sched.Command{Kind: sched.Copy, Stream: so.st, Bytes: n,
		Issue: func() error { return so.st.CopyDtoH(buf, src) }})
	if err != nil {
		return nil, err
	}
	copy(out, buf)
	return out, nil
}

func (s *Session) memcpy(ctx context.Context, m *v1.Memcpy, async bool) (v1.Message, error) {
	so, err := s.streamOf(m.Stream)
	if err != nil {
		return nil, err
	}
	switch m.Dir {
	case v1.DirHtoD:
		if uint64(len(m.Data)) != m.Size {
			return nil, fmt.Errorf("%w: %d data bytes for a %d-byte copy", ErrBadCopy, len(m.Data), m.Size)
		}
		dst, err := s.resolve(m.Dst, m.Size, true)
		if err != nil {
			return nil, err
		}
		return nil, s.copyIn(ctx, so, dst, m.Data, !async)
	case v1.DirDtoH:
		if m.Size > v1.MaxPayload-64 {
			return nil, v1.Errorf(v1.CodeInvalidArgument, "copy of %d bytes exceeds one frame: copy in pieces", m.Size)
		}
		src, err := s.resolve(m.Src, m.Size, false)
		if err != nil {
			return nil, err
		}
		data, err := s.copyOut(ctx, so, src, m.Size)
		if err != nil {
			return nil, err
		}
		return &v1.Data{Data: data}, s.takeDeferred()
	case v1.DirDtoD:
		dst, err := s.resolve(m.Dst, m.Size, true)
		if err != nil {
			return nil, err
		}
		src, err := s.resolve(m.Src, m.Size, false)
		if err != nil {
			return nil, err
		}
		s.countCopy("dtod", m.Size)
		c := &sched.Command{Kind: sched.Compute, Stream: so.st, Bytes: m.Size,
			Issue: func() error { return so.st.CopyDtoD(dst, src, m.Size) }}
		if async {
			return nil, s.submit(ctx, c)
		}
		return nil, s.submitWait(ctx, c)
	}
	return nil, fmt.Errorf("%w: direction %d", ErrBadCopy, m.Dir)
}

func (s *Session) memset(ctx context.Context, m *v1.Memset) error {
	switch m.ElemSize {
	case 1, 2, 4:
	default:
		return fmt.Errorf("%w: memset element size %d", ErrBadCopy, m.ElemSize)
	}
	if m.Count > (1<<62)/uint64(m.ElemSize) {
		return fmt.Errorf("%w: memset of %d elements", ErrBadCopy, m.Count)
	}
	so, err := s.streamOf(m.Stream)
	if err != nil {
		return err
	}
	n := m.Count * uint64(m.ElemSize)
	dst, err := s.resolve(m.Dst, n, true)
	if err != nil {
		return err
	}
	if uint64(dst)%uint64(m.ElemSize) != 0 {
		return fmt.Errorf("%w: memset destination %#x is not %d-byte aligned", ErrBadCopy, uint64(dst), m.ElemSize)
	}
	s.countCopy("memset", n)
	return s.submit(ctx, &sched.Command{Kind: sched.Compute, Stream: so.st, Bytes: n,
		Issue: func() error { return so.st.Memset(dst, m.Value, int(m.ElemSize), m.Count) }})
}

// ---- fences and synchronisation ---------------------------------------------

func (s *Session) fence(h uint64) (*fenceObj, error) {
	obj, err := s.table.Lookup(cap.Handle(h), cap.KindFence, 0)
	if err != nil {
		return nil, err
	}
	return obj.(*fenceObj), nil
}

func (s *Session) recordFence(ctx context.Context, m *v1.RecordFence) (v1.Message, error) {
	so, err := s.streamOf(m.Stream)
	if err != nil {
		return nil, err
	}
	ev, err := s.d.dev.NewEvent(0)
	if err != nil {
		return nil, fmt.Errorf("record fence: %w", err)
	}
	f := &fenceObj{ev: ev, issued: make(chan struct{}), spin: s.spinsLowFences(so.st)}
	h, err := s.insert(cap.KindFence, f, s.selfRef(), 0, func() {
		<-f.issued
		ev.Synchronize()
		f.releaseWatch()
		ev.Destroy()
	})
	if err != nil {
		return nil, err
	}
	f.rec = &sched.Command{Kind: sched.Marker, Stream: so.st,
		Issue: func() error {
			err := so.st.Record(ev)
			if err == nil && f.spin {
				if w, ferr := so.st.(backend.Fencer).Fence(); ferr == nil {
					f.word = w // else the spinner finds the event done (Check)
				}
			}
			f.markIssued(err)
			return err
		},
		Done: func(err error) {
			f.markIssued(err) // dropped before issue: the fence fails rather than hangs
			s.deferError(err)
		}}
	err = s.submit(ctx, f.rec)
	if err != nil {
		f.markIssued(err)
		return nil, err
	}
	return &v1.FenceCreated{Handle: uint64(h)}, nil
}

func (s *Session) streamWaitFence(ctx context.Context, m *v1.StreamWaitFence) error {
	so, err := s.streamOf(m.Stream)
	if err != nil {
		return err
	}
	f, err := s.fence(m.Fence)
	if err != nil {
		return err
	}
	// The record was submitted earlier to the same queue, maybe on another
	// stream: naming it as After issues the wait only once the record is.
	return s.submit(ctx, &sched.Command{Kind: sched.Marker, Stream: so.st, After: f.rec,
		Issue: func() error { return so.st.WaitEvent(f.ev) }})
}

func (s *Session) pollFence(m *v1.PollFence) error {
	f, err := s.fence(m.Fence)
	if err != nil {
		return err
	}
	select {
	case <-f.issued:
	default:
		return ErrFenceNotYet
	}
	if err := f.issueErr(); err != nil {
		return err
	}
	done, err := f.ev.Query()
	if err != nil {
		return err
	}
	if !done {
		return ErrFenceNotYet
	}
	return nil
}

func (s *Session) waitFence(ctx context.Context, m *v1.WaitFence) error {
	f, err := s.fence(m.Fence)
	if err != nil {
		return err
	}
	if m.TimeoutNs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(min(m.TimeoutNs, 1<<62)))
		defer cancel()
	}
	timedOut := func() error {
		if s.ctx.Err() != nil {
			return ctx.Err()
		}
		return v1.Errorf(v1.CodeTimeout, "fence not reached within %v", time.Duration(m.TimeoutNs))
	}
	// ended answers a wait that ended with err: one called off by ctx (its
	// error) timed out.
	ended := func(err error) error {
		switch {
		case err == nil:
			return s.takeDeferred()
		case err == ctx.Err():
			return timedOut()
		}
		return err
	}
	// The scheduler's spinner, where it watches the low class's fences:
	// one wake-up, when the fence is reached.
	if ok, err := s.spinFenceWait(ctx, f); ok {
		return ended(err)
	}
	// On the serving goroutine: a goroutine per wait made two hand-offs of
	// it, each a wake-up (bench/RESULTS.md, session 34).
	select {
	case <-f.issued:
	case <-ctx.Done():
		return timedOut()
	}
	if err := f.issueErr(); err != nil {
		return err
	}
	if s.pollsLowFences() {
		return ended(s.pollLowFence(ctx, f.ev))
	}
	// The event's synchronize cannot be called off: it gets a goroutine, so
	// that a timeout or the session's end still ends the wait.
	wait := make(chan error, 1)
	go func() { wait <- f.ev.Synchronize() }()
	select {
	case err := <-wait:
		return ended(err)
	case <-ctx.Done():
		return timedOut()
	}
}

func (s *Session) fenceElapsed(m *v1.FenceElapsed) (v1.Message, error) {
	start, err := s.fence(m.Start)
	if err != nil {
		return nil, err
	}
	end, err := s.fence(m.End)
	if err != nil {
		return nil, err
	}
	for _, f := range []*fenceObj{start, end} {
		select {
		case <-f.issued:
		default:
			return nil, ErrFenceNotYet
		}
	}
	d, err := end.ev.Elapsed(start.ev)
	if err != nil {
		return nil, err
	}
	return &v1.Duration{Ns: uint64(d)}, nil
}

func (s *Session) synchronize(ctx context.Context, m *v1.Synchronize) error {
	var st syncStamps
	var stamps *syncStamps // where settle notes its stages
	if s.latency != nil {
		st.recv = time.Now()
		stamps = &st
		defer func() {
			st.synced = time.Now()
			s.latency.addSync(st)
		}()
	}
	so, err := s.streamOf(m.Stream)
	if err != nil {
		return err
	}
	var also backend.Stream // the stream named, waited for even without new work
	if m.Stream != 0 {
		also = so.st
	}
	if err := s.settle(ctx, stamps, also); err != nil {
		return fmt.Errorf("synchronize: %w", err)
	}
	return s.takeDeferred()
}

// ---- grants -----------------------------------------------------------------

func (s *Session) grant(m *v1.Grant) (v1.Message, error) {
	ref, err := s.table.Ref(cap.Handle(m.Buffer), cap.KindBuffer, cap.RightBufferGrant)
	if err != nil {
		return nil, fmt.Errorf("grant: %w", err)
	}
	rights := cap.Rights(m.Rights & v1.AllBufferRights)
	if rights == 0 {
		return nil, v1.Errorf(v1.CodeInvalidArgument, "grant with no buffer rights")
	}
	b := ref.Object().(*bufferObj)
	if !b.alloc.Shareable() {
		return nil, fmt.Errorf("grant: %w", mem.ErrNotShareable)
	}
	g := &grantObj{buf: b, token: newToken(), rights: rights}
	h, err := s.insert(cap.KindGrant, g, ref, rights, func() {
		s.d.mu.Lock()
		delete(s.d.grants, g.token)
		s.d.mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	gref, _ := s.table.Ref(h, cap.KindGrant, 0)
	s.d.mu.Lock()
	s.d.grants[g.token] = gref
	s.d.mu.Unlock()
	s.d.audit(audit.Event{Kind: audit.KindGrant, Tenant: s.tenant.name, Session: s.id, Object: uint64(h),
		Detail: map[string]any{"bytes": b.size, "rights": rights.String()}})
	return &v1.Granted{Handle: uint64(h), Token: g.token}, nil
}

func (s *Session) attach(m *v1.Attach) (v1.Message, error) {
	s.d.mu.Lock()
	gref, ok := s.d.grants[m.Token]
	s.d.mu.Unlock()
	if !ok || !gref.Live() {
		return nil, ErrNoSuchGrant
	}
	g := gref.Object().(*grantObj)
	if err := s.ledger.Charge(ledger.MappedBytes, g.buf.size); err != nil {
		return nil, err
	}
	a, err := s.window.Attach(g.buf.alloc, !g.rights.Has(cap.RightBufferWrite))
	if err != nil {
		s.ledger.Refund(ledger.MappedBytes, g.buf.size)
		return nil, fmt.Errorf("attach: %w", err)
	}
	b := &bufferObj{alloc: a, addr: uint64(a.Ptr()), size: a.Size(), kind: cap.KindMapping}
	h, err := s.insert(cap.KindMapping, b, gref, g.rights&^cap.RightBufferGrant, func() { s.freeBuffer(b, ledger.MappedBytes) })
	if err != nil {
		return nil, err
	}
	s.d.audit(audit.Event{Kind: audit.KindAttach, Tenant: s.tenant.name, Session: s.id, Object: uint64(h),
		Detail: map[string]any{"bytes": b.size, "rights": (g.rights &^ cap.RightBufferGrant).String()}})
	return &v1.BufferCreated{Handle: uint64(h), Addr: b.addr, Size: b.size}, nil
}

// forgetGlobals drops the global ranges of a program being unloaded.
func (s *Session) forgetGlobals(p *programObj) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for base, g := range s.globals {
		if g.prog == p {
			delete(s.globals, base)
		}
	}
}
