package shim

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"golang.org/x/sys/unix"
)

// dstream is one daemon stream and the host functions queued on it. Work
// submitted to it after a host function must not start before the function
// returns: submitters wait at the gate (wait) while host functions are
// pending, which costs one atomic load when none is.
type dstream struct {
	d    *Driver
	sess *session
	cs   *client.Stream

	pending atomic.Int32 // host functions queued or running
	runner  atomic.Int64 // OS thread id of the worker while it runs one

	// submitted counts asynchronous submissions; done is the count known to
	// have completed (after a synchronization or a reached fence), so that a
	// query of a stream with nothing new needs no round trip.
	submitted atomic.Uint64
	done      atomic.Uint64

	mu      sync.Mutex // guards queue and running; cond waits on it
	cond    sync.Cond
	queue   []hostCall
	running bool
}

// hostCall is a host function waiting for the work before it.
type hostCall struct {
	fence *client.Fence
	fn    func(status Result)
}

func newDstream(d *Driver, s *session, cs *client.Stream) *dstream {
	ds := &dstream{d: d, sess: s, cs: cs}
	ds.cond.L = &ds.mu
	return ds
}

// wait returns once no host function is pending on the stream. A host
// function that submits work to its own stream would wait for itself: that is
// refused, as CUDA forbids driver calls in host functions.
func (ds *dstream) wait() Result {
	if ds.pending.Load() == 0 {
		return cu.CUDA_SUCCESS
	}
	if int64(unix.Gettid()) == ds.runner.Load() {
		return cu.CUDA_ERROR_NOT_PERMITTED
	}
	ds.mu.Lock()
	for ds.pending.Load() > 0 {
		ds.cond.Wait()
	}
	ds.mu.Unlock()
	return cu.CUDA_SUCCESS
}

// addHost queues fn to run once the work submitted so far has completed.
func (ds *dstream) addHost(fn func(status Result)) Result {
	if r := ds.wait(); r != cu.CUDA_SUCCESS {
		return r // host functions in order: the previous one first
	}
	f, err := ds.sess.s.Record(bg, ds.cs)
	if err != nil {
		return ds.d.fail(err)
	}
	ds.submit()
	ds.mu.Lock()
	ds.pending.Add(1)
	ds.queue = append(ds.queue, hostCall{fence: f, fn: fn})
	start := !ds.running
	ds.running = true
	ds.mu.Unlock()
	if start {
		go ds.work()
	}
	return cu.CUDA_SUCCESS
}

// work runs the queued host functions in order, each after its fence.
func (ds *dstream) work() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		ds.mu.Lock()
		if len(ds.queue) == 0 {
			ds.running = false
			ds.mu.Unlock()
			return
		}
		c := ds.queue[0]
		ds.queue = ds.queue[1:]
		ds.mu.Unlock()

		status := ds.d.fail(c.fence.Wait(bg, 0))
		go c.fence.Close()
		ds.runner.Store(int64(unix.Gettid()))
		c.fn(status)
		ds.runner.Store(0)

		ds.mu.Lock()
		ds.pending.Add(-1)
		ds.cond.Broadcast()
		ds.mu.Unlock()
	}
}

// idle reports whether no host function is pending.
func (ds *dstream) idle() bool { return ds.pending.Load() == 0 }

// submit counts an asynchronous submission.
func (ds *dstream) submit() { ds.submitted.Add(1) }

// completed records that the first n submissions have completed.
func (ds *dstream) completed(n uint64) {
	for {
		d := ds.done.Load()
		if d >= n || ds.done.CompareAndSwap(d, n) {
			return
		}
	}
}

// completes returns the result of a call that completed in stream order, so
// that the n submissions before it (counted before the call) completed too.
func (ds *dstream) completes(n uint64, err error) Result {
	if err == nil {
		ds.completed(n)
	}
	return ds.d.fail(err)
}

// sync waits for the stream's work and records that it completed.
func (ds *dstream) sync() error {
	n := ds.submitted.Load()
	err := ds.cs.Synchronize(bg)
	if err == nil {
		ds.completed(n)
	}
	return err
}

// stream is a CUDA stream. Blocking streams share their session's blocking
// daemon stream; a non-blocking stream owns one.
type stream struct {
	h        uint64
	id       uint64
	ctx      *ctxObj
	flags    uint32
	priority int32
	ds       *dstream
	own      bool
}

// isDefaultStream reports whether h names a default stream: NULL,
// CU_STREAM_LEGACY or CU_STREAM_PER_THREAD.
func isDefaultStream(h uint64) bool {
	return h == 0 || h == uint64(cu.CU_STREAM_LEGACY) || h == uint64(cu.CU_STREAM_PER_THREAD)
}

// streamIn returns the daemon stream of stream h for work on session s: a
// default stream is s's blocking stream.
func (d *Driver) streamIn(h uint64, s *session) (*dstream, Result) {
	if isDefaultStream(h) {
		return s.blocking, cu.CUDA_SUCCESS
	}
	st := d.streams.get(h)
	if st == nil {
		return nil, cu.CUDA_ERROR_INVALID_HANDLE
	}
	if st.ds.sess != s {
		return nil, cu.CUDA_ERROR_INVALID_VALUE // a stream of another device
	}
	return st.ds, cu.CUDA_SUCCESS
}

// streamOf returns the daemon stream of stream h, a default stream meaning the
// current context's.
func (d *Driver) streamOf(t Thread, h uint64) (*dstream, Result) {
	if isDefaultStream(h) {
		_, s, r := d.currentSession(t)
		if r != cu.CUDA_SUCCESS {
			return nil, r
		}
		return s.blocking, cu.CUDA_SUCCESS
	}
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return nil, r
	}
	st := d.streams.get(h)
	if st == nil {
		return nil, cu.CUDA_ERROR_INVALID_HANDLE
	}
	return st.ds, cu.CUDA_SUCCESS
}

// StreamCreate is cuStreamCreateWithPriority (cuStreamCreate with priority 0).
func (d *Driver) StreamCreate(t Thread, flags uint32, priority int32) (uint64, Result) {
	c, s, r := d.currentSession(t)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if flags&^uint32(cu.CU_STREAM_NON_BLOCKING) != 0 {
		return 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	priority = min(max(priority, greatestStreamPriority), leastStreamPriority)
	st := &stream{id: d.newID(), ctx: c, flags: flags, priority: priority, ds: s.blocking}
	if flags&uint32(cu.CU_STREAM_NON_BLOCKING) != 0 {
		cs, err := s.s.CreateStream(bg, int(priority))
		if err != nil {
			return 0, d.fail(err)
		}
		st.ds, st.own = newDstream(d, s, cs), true
	}
	st.h = d.streams.add(st)
	return st.h, cu.CUDA_SUCCESS
}

// StreamDestroy is cuStreamDestroy.
func (d *Driver) StreamDestroy(h uint64) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	st := d.streams.get(h)
	if st == nil {
		return cu.CUDA_ERROR_INVALID_HANDLE
	}
	return d.destroyStream(st)
}

func (d *Driver) destroyStream(st *stream) Result {
	if d.streams.remove(st.h) == nil {
		return cu.CUDA_ERROR_INVALID_HANDLE
	}
	if !st.own {
		return cu.CUDA_SUCCESS
	}
	st.ds.wait()
	return d.fail(st.ds.cs.Close())
}

// stream returns the stream object of a created stream (not a default one).
func (d *Driver) stream(t Thread, h uint64) (*stream, Result) {
	if isDefaultStream(h) {
		return nil, cu.CUDA_SUCCESS
	}
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return nil, r
	}
	st := d.streams.get(h)
	if st == nil {
		return nil, cu.CUDA_ERROR_INVALID_HANDLE
	}
	return st, cu.CUDA_SUCCESS
}

// StreamGetPriority is cuStreamGetPriority.
func (d *Driver) StreamGetPriority(t Thread, h uint64) (int32, Result) {
	st, r := d.stream(t, h)
	if r != cu.CUDA_SUCCESS || st == nil {
		return 0, r
	}
	return st.priority, cu.CUDA_SUCCESS
}

// StreamGetFlags is cuStreamGetFlags.
func (d *Driver) StreamGetFlags(t Thread, h uint64) (uint32, Result) {
	st, r := d.stream(t, h)
	if r != cu.CUDA_SUCCESS || st == nil {
		return 0, r
	}
	return st.flags, cu.CUDA_SUCCESS
}

// StreamGetID is cuStreamGetId. The legacy default stream is 0, the
// per-thread one 1 (the values the real driver uses for them).
func (d *Driver) StreamGetID(t Thread, h uint64) (uint64, Result) {
	switch h {
	case 0, uint64(cu.CU_STREAM_LEGACY):
		return 0, d.ready()
	case uint64(cu.CU_STREAM_PER_THREAD):
		return 1, d.ready()
	}
	st, r := d.stream(t, h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return 1 + st.id, cu.CUDA_SUCCESS
}

// StreamOfContext is slot 51 of the unknown_21318c60 export table, which
// cuBLASLt calls before its first launch: (CUcontext, CUstream, void **out,
// int perThread). A public reading (a CUDA-forwarding project that serves the
// slot) has it turn a stream as the application names it into the driver's
// own stream object, NULL meaning the legacy default stream or, with
// perThread, the per-thread one; cuBLASLt hands the object back to the
// driver and keys its state by the stream's id (slot 39). The shim's stream
// handles are its objects, so a created stream is its own handle, and NULL
// becomes CU_STREAM_LEGACY or CU_STREAM_PER_THREAD, which every stream
// argument of the shim accepts. The stream must belong to the context
// (0: the current one), as every stream argument must.
func (d *Driver) StreamOfContext(t Thread, ctx, h uint64, perThread bool) (uint64, Result) {
	c, r := d.context(t, ctx)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	switch h {
	case 0:
		if perThread {
			return uint64(cu.CU_STREAM_PER_THREAD), cu.CUDA_SUCCESS
		}
		return uint64(cu.CU_STREAM_LEGACY), cu.CUDA_SUCCESS
	case uint64(cu.CU_STREAM_LEGACY), uint64(cu.CU_STREAM_PER_THREAD):
		return h, cu.CUDA_SUCCESS
	}
	st, r := d.stream(t, h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if st.ctx != c {
		return 0, cu.CUDA_ERROR_INVALID_CONTEXT
	}
	return h, cu.CUDA_SUCCESS
}

// StreamIDOfContext is slot 39 of the unknown_21318c60 table: (CUcontext,
// stream object, unsigned long long *id), the id of a stream object slot 51
// returned, as cuStreamGetId gives it (same public reading;
// testdata/cudart/slot51.c compares the two on the real driver).
func (d *Driver) StreamIDOfContext(t Thread, ctx, h uint64) (uint64, Result) {
	if _, r := d.context(t, ctx); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return d.StreamGetID(t, h)
}

// StreamGetCtx is cuStreamGetCtx.
func (d *Driver) StreamGetCtx(t Thread, h uint64) (uint64, Result) {
	st, r := d.stream(t, h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if st == nil {
		c, r := d.current(t)
		if r != cu.CUDA_SUCCESS {
			return 0, r
		}
		return c.h, cu.CUDA_SUCCESS
	}
	return st.ctx.h, cu.CUDA_SUCCESS
}

// StreamGetDevice is cuStreamGetDevice.
func (d *Driver) StreamGetDevice(t Thread, h uint64) (int32, Result) {
	ch, r := d.StreamGetCtx(t, h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return d.CtxGetDevice(t, ch)
}

// StreamSynchronize is cuStreamSynchronize: the stream's work and host
// functions, and the first error of asynchronous work.
func (d *Driver) StreamSynchronize(t Thread, h uint64) Result {
	ds, r := d.streamOf(t, h)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if r := ds.wait(); r != cu.CUDA_SUCCESS {
		return r
	}
	return d.fail(ds.sync())
}

// StreamQuery is cuStreamQuery: CUDA_SUCCESS when all the stream's work is
// done, CUDA_ERROR_NOT_READY otherwise.
func (d *Driver) StreamQuery(t Thread, h uint64) Result {
	ds, r := d.streamOf(t, h)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if !ds.idle() {
		return cu.CUDA_ERROR_NOT_READY
	}
	n := ds.submitted.Load()
	if ds.done.Load() >= n {
		return cu.CUDA_SUCCESS
	}
	f, err := ds.sess.s.Record(bg, ds.cs)
	if err != nil {
		return d.fail(err)
	}
	done, err := f.Poll(bg)
	go f.Close()
	if err != nil {
		return d.fail(err)
	}
	if !done {
		return cu.CUDA_ERROR_NOT_READY
	}
	ds.completed(n)
	return cu.CUDA_SUCCESS
}

// StreamWaitEvent is cuStreamWaitEvent: later work on the stream waits for the
// event's last record (none: no wait).
func (d *Driver) StreamWaitEvent(t Thread, h, ev uint64, flags uint32) Result {
	if flags != 0 {
		if flags == 1 { // CU_EVENT_WAIT_EXTERNAL: for graphs
			return cu.CUDA_ERROR_NOT_SUPPORTED
		}
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	e := d.events.get(ev)
	if e == nil {
		if r := d.ready(); r != cu.CUDA_SUCCESS {
			return r
		}
		return cu.CUDA_ERROR_INVALID_HANDLE
	}
	ds, r := d.streamOf(t, h)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if r := ds.wait(); r != cu.CUDA_SUCCESS {
		return r
	}
	f := e.acquire()
	if f == nil {
		return cu.CUDA_SUCCESS
	}
	defer f.release()
	if f.sess != ds.sess {
		d.log.Once("cross-device-wait", "cuStreamWaitEvent: waiting on an event of another device is not supported by gpuos")
		return cu.CUDA_ERROR_NOT_SUPPORTED
	}
	ds.submit()
	return d.fail(ds.cs.WaitFence(f.f))
}

// LaunchHostFunc is cuLaunchHostFunc (and cuStreamAddCallback, whose callback
// also gets the stream's status): fn runs after the work submitted to the
// stream so far, and later work on the stream waits for it.
func (d *Driver) LaunchHostFunc(t Thread, h uint64, fn func(status Result)) Result {
	ds, r := d.streamOf(t, h)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	return ds.addHost(fn)
}

// dstreams returns the daemon streams of session s.
func (d *Driver) dstreams(s *session) []*dstream {
	out := []*dstream{s.blocking}
	for _, st := range d.streams.each() {
		if st.own && st.ds.sess == s {
			out = append(out, st.ds)
		}
	}
	return out
}

// syncSession waits for all of session s's work (host functions included) and
// returns the first error of its asynchronous work.
func (d *Driver) syncSession(s *session) Result {
	if r := d.waitHostFuncs(s); r != cu.CUDA_SUCCESS {
		return r
	}
	streams := d.dstreams(s)
	counts := make([]uint64, len(streams))
	for i, ds := range streams {
		counts[i] = ds.submitted.Load()
	}
	if err := s.s.Synchronize(bg); err != nil {
		return d.fail(err)
	}
	for i, ds := range streams {
		ds.completed(counts[i])
	}
	return cu.CUDA_SUCCESS
}

// waitHostFuncs waits for the host functions of every daemon stream of s.
func (d *Driver) waitHostFuncs(s *session) Result {
	if r := s.blocking.wait(); r != cu.CUDA_SUCCESS {
		return r
	}
	for _, st := range d.streams.each() {
		if st.own && st.ds.sess == s {
			if r := st.ds.wait(); r != cu.CUDA_SUCCESS {
				return r
			}
		}
	}
	return cu.CUDA_SUCCESS
}
