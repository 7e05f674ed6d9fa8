package cuda

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
)

// stream is a CUstream created non-blocking (it never synchronizes with the
// legacy default stream): a backend.Stream.
type stream struct {
	dev      *Device
	h        hStream
	priority int
	part     *partition // the green context it was created in; nil: the whole device
	live     liveness   // Destroy and Close end it
	fences   streamFences
	// enqueues counts calls that enqueue work other than fences, twice
	// each: as they begin and as they end. A fence during which it did not
	// change, and after which it has not, marks all the stream's work
	// (LatestFence).
	enqueues atomic.Uint64
}

var _ backend.Stream = (*stream)(nil)

// NewStream creates a stream with cuStreamCreateWithPriority. A priority
// outside StreamPriorityRange is clamped to it, as CUDA does.
func (d *Device) NewStream(priority int) (backend.Stream, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.live.exit()
	priority = min(max(priority, d.greatest), d.least)
	h, r := d.c.streamCreate(priority)
	if r != 0 {
		return nil, d.fail("create stream", r)
	}
	return d.addStream(h, priority, nil), nil
}

// addStream tracks a stream just created (in partition part, or nil), so
// that Close destroys it if its owner does not.
func (d *Device) addStream(h hStream, priority int, part *partition) *stream {
	s := &stream{dev: d, h: h, priority: priority, part: part}
	d.mu.Lock()
	d.streams[s] = struct{}{}
	d.mu.Unlock()
	return s
}

// Priority is the stream's (clamped) priority.
func (s *stream) Priority() int { return s.priority }

// enter admits a call on the stream: it fails if the device is closed or
// lost or the stream destroyed. On success the caller must s.live.exit().
func (s *stream) enter() error {
	if !s.live.enter() {
		return s.deadErr()
	}
	if p := s.dev.lost.Load(); p != nil {
		s.live.exit()
		return *p
	}
	return nil
}

// enterEnqueue is enter for a call that enqueues work, counted before and
// after it (enqueues: LatestFence). On success the caller must
// s.exitEnqueue().
func (s *stream) enterEnqueue() error {
	if err := s.enter(); err != nil {
		return err
	}
	s.enqueues.Add(1)
	return nil
}

func (s *stream) exitEnqueue() {
	s.enqueues.Add(1)
	s.live.exit()
}

func (s *stream) deadErr() error {
	if s.dev.closed.Load() {
		return fmt.Errorf("stream: device %d: %w", s.dev.ordinal, ErrClosed)
	}
	return fmt.Errorf("stream was destroyed: %w", ErrInvalidHandle)
}

// Launch enqueues a kernel with cuLaunchKernel, passing params through
// CU_LAUNCH_PARAM_BUFFER_POINTER; the driver copies them before returning.
// params must hold at least the kernel's parameter bytes (Params); extra
// bytes are not passed. It is the hot path: no allocation, one cgo call.
func (s *stream) Launch(f backend.Function, cfg backend.LaunchConfig, params []byte) error {
	fn, ok := f.(*function)
	if !ok || fn.mod.dev != s.dev {
		return errForeignFunction
	}
	if err := s.enterEnqueue(); err != nil {
		return err
	}
	defer s.exitEnqueue()
	if !fn.mod.live.enter() {
		return fmt.Errorf("launch %s: module was unloaded: %w", fn.name, ErrInvalidHandle)
	}
	defer fn.mod.live.exit()
	n := len(params)
	if fn.paramSize >= 0 {
		if n < fn.paramSize {
			return fmt.Errorf("launch %s: %d parameter bytes, want %d: %w", fn.name, n, fn.paramSize, backend.ErrInvalidArgument)
		}
		n = fn.paramSize
	}
	if cfg.SharedMem > fn.dynShared.Load() {
		// More dynamic shared memory than 48 KiB must be opted into per
		// kernel (cuBLAS's sm90 GEMMs ask for 80 KiB and more): the
		// application did, in its own process (the shim checked it against
		// the device's opt-in limit), so the driver process does the same.
		if r := s.dev.c.funcSetAttr(fn.h, cuda.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int32(cfg.SharedMem)); r != 0 {
			return s.dev.fail("launch "+fn.name+": dynamic shared memory", r)
		}
		fn.dynShared.Store(cfg.SharedMem)
	}
	if r := s.dev.c.launch(fn.h, &cfg, s.h, params[:n]); r != 0 {
		return s.dev.fail("launch "+fn.name, r)
	}
	return nil
}

var errForeignFunction = fmt.Errorf("launch: function of another device or backend: %w", ErrInvalidHandle)

// CopyHtoD copies src to dst in stream order. From AllocHost or RegisterHost
// memory the copy is asynchronous (cuMemcpyHtoDAsync); from any other memory
// the call returns once the copy completed.
func (s *stream) CopyHtoD(dst backend.DevicePtr, src []byte) error {
	return s.hostCopy(dirHtoD, "copy host to device", uint64(dst), src)
}

// CopyDtoH copies src to dst in stream order. Into AllocHost or RegisterHost
// memory the copy is asynchronous (cuMemcpyDtoHAsync); into any other memory
// the call returns once dst is written.
func (s *stream) CopyDtoH(dst []byte, src backend.DevicePtr) error {
	return s.hostCopy(dirDtoH, "copy device to host", uint64(src), dst)
}

func (s *stream) hostCopy(dir int, what string, dev uint64, host []byte) error {
	if err := s.enterEnqueue(); err != nil {
		return err
	}
	defer s.exitEnqueue()
	if len(host) == 0 {
		return nil
	}
	d := s.dev
	if err := d.as.checkAccessible(what, dev, uint64(len(host))); err != nil {
		return err
	}
	var r cuda.CUresult
	if d.host.pinned(host) {
		r = d.c.copyAsync(dir, dev, host, s.h)
	} else {
		r = d.c.copySync(dir, dev, host, s.h)
	}
	return d.fail(what, r)
}

// CopyDtoD enqueues a device-to-device copy (cuMemcpyDtoDAsync).
func (s *stream) CopyDtoD(dst, src backend.DevicePtr, n uint64) error {
	if err := s.enterEnqueue(); err != nil {
		return err
	}
	defer s.exitEnqueue()
	if n == 0 {
		return nil
	}
	d := s.dev
	if err := d.as.checkAccessible("copy device to device: destination", uint64(dst), n); err != nil {
		return err
	}
	if err := d.as.checkAccessible("copy device to device: source", uint64(src), n); err != nil {
		return err
	}
	return d.fail("copy device to device", d.c.copyDtoD(uint64(dst), uint64(src), n, s.h))
}

// Memset enqueues cuMemsetD8/D16/D32Async: count elements of elemSize bytes.
func (s *stream) Memset(dst backend.DevicePtr, value uint32, elemSize int, count uint64) error {
	if err := s.enterEnqueue(); err != nil {
		return err
	}
	defer s.exitEnqueue()
	switch elemSize {
	case 1, 2, 4:
	default:
		return fmt.Errorf("memset: element size %d is not 1, 2 or 4: %w", elemSize, backend.ErrInvalidArgument)
	}
	if uint64(dst)%uint64(elemSize) != 0 {
		return fmt.Errorf("memset: %#x is not aligned to its %d-byte elements: %w", dst, elemSize, backend.ErrInvalidArgument)
	}
	if elemSize < 4 && value>>(8*elemSize) != 0 {
		return fmt.Errorf("memset: value %#x does not fit %d bytes: %w", value, elemSize, backend.ErrInvalidArgument)
	}
	if count == 0 {
		return nil
	}
	n := count * uint64(elemSize)
	if n/uint64(elemSize) != count {
		return fmt.Errorf("memset: %d elements of %d bytes overflow: %w", count, elemSize, backend.ErrInvalidArgument)
	}
	d := s.dev
	if err := d.as.checkAccessible("memset", uint64(dst), n); err != nil {
		return err
	}
	return d.fail("memset", d.c.memset(uint64(dst), value, elemSize, count, s.h))
}

// Record records e on the stream (cuEventRecord); e must be of this device.
func (s *stream) Record(e backend.Event) error { return s.recordEvent(e, true) }

var _ backend.MarkerRecorder = (*stream)(nil)

// RecordMarker is Record, not counted as work for LatestFence
// (backend.MarkerRecorder).
func (s *stream) RecordMarker(e backend.Event) error { return s.recordEvent(e, false) }

// recordEvent records e, counted in enqueues if it is work.
func (s *stream) recordEvent(e backend.Event, work bool) error {
	ev, ok := e.(*event)
	if !ok || ev.dev != s.dev {
		return fmt.Errorf("record: event of another device or backend: %w", ErrInvalidHandle)
	}
	if work {
		if err := s.enterEnqueue(); err != nil {
			return err
		}
		defer s.exitEnqueue()
	} else {
		if err := s.enter(); err != nil {
			return err
		}
		defer s.live.exit()
	}
	return s.record(ev)
}

func (s *stream) record(ev *event) error {
	if err := ev.enter(); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	defer ev.live.exit()
	return s.dev.fail("record event", s.dev.c.eventRecord(ev.h, s.h))
}

// WaitEvent makes later work on the stream wait for e's latest record
// (cuStreamWaitEvent). e may be of another device of this backend.
func (s *stream) WaitEvent(e backend.Event) error {
	ev, ok := e.(*event)
	if !ok {
		return fmt.Errorf("wait event: event of another backend: %w", ErrInvalidHandle)
	}
	if err := s.enterEnqueue(); err != nil {
		return err
	}
	defer s.exitEnqueue()
	if err := ev.enter(); err != nil {
		return fmt.Errorf("wait event: %w", err)
	}
	defer ev.live.exit()
	return s.dev.fail("wait event", s.dev.c.streamWait(s.h, ev.h))
}

// callback is one Stream.Callback: fn runs once, with the stream's status.
type callback struct {
	dev  *Device
	fn   func(error)
	done atomic.Bool
}

// Callback enqueues fn with cuStreamAddCallback, which (unlike
// cuLaunchHostFunc) still runs when earlier work failed and hands over the
// error, so a waiter learns of a lost context instead of waiting forever. fn
// runs on a driver thread, with nil or the error; it must not block or call
// the backend (the driver forbids CUDA calls there, and later work on the
// stream waits for fn).
func (s *stream) Callback(fn func(error)) error {
	if fn == nil {
		return fmt.Errorf("callback: nil function: %w", backend.ErrInvalidArgument)
	}
	if err := s.enterEnqueue(); err != nil {
		return err
	}
	defer s.exitEnqueue()
	d := s.dev
	cb := &callback{dev: d, fn: fn}
	h := newCallbackHandle(cb)
	d.mu.Lock()
	d.callbacks[cb] = struct{}{}
	d.mu.Unlock()
	if r := d.c.addCallback(s.h, h); r != 0 {
		d.mu.Lock()
		delete(d.callbacks, cb)
		d.mu.Unlock()
		deleteCallbackHandle(h)
		return d.fail("add callback", r)
	}
	return nil
}

// fire is the driver's call of the callback (see gpuosStreamCallback, which
// deletes the handle: only it may, as the driver may call late, after Close
// gave up on the callback).
func (cb *callback) fire(status cuda.CUresult) {
	var err error
	if status != cuda.CUDA_SUCCESS {
		err = cb.dev.fail("stream work before the callback", status)
	} else {
		err = cb.dev.lostErr() // a context lost elsewhere wins, as on the sim
	}
	cb.run(err)
}

// abandon runs the callback with err if the driver has not: Close gives up
// on callbacks of a lost context.
func (cb *callback) abandon(err error) { cb.run(err) }

func (cb *callback) run(err error) {
	if !cb.done.CompareAndSwap(false, true) {
		return
	}
	cb.dev.mu.Lock()
	delete(cb.dev.callbacks, cb)
	cb.dev.mu.Unlock()
	cb.fn(err)
}

// Query reports whether all work on the stream completed (cuStreamQuery).
func (s *stream) Query() (bool, error) {
	if err := s.enter(); err != nil {
		return false, err
	}
	defer s.live.exit()
	switch r := s.dev.c.streamQuery(s.h); r {
	case cuda.CUDA_SUCCESS:
		return true, nil
	case cuda.CUDA_ERROR_NOT_READY:
		return false, nil
	default:
		return false, s.dev.fail("query stream", r)
	}
}

// Synchronize waits for the stream's work (cuStreamSynchronize).
func (s *stream) Synchronize() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.live.exit()
	return s.dev.fail("synchronize stream", s.dev.c.streamSync(s.h))
}

// Destroy waits for the stream's work, then destroys it.
func (s *stream) Destroy() error {
	d := s.dev
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	if !s.live.end() {
		return fmt.Errorf("destroy stream: already destroyed: %w", ErrInvalidHandle)
	}
	d.mu.Lock()
	delete(d.streams, s)
	d.mu.Unlock()
	err := d.fail("destroy stream", d.c.streamDestroy(s.h))
	s.releaseFence()
	if s.part != nil {
		s.part.streamGone()
	}
	return err
}

// event is a CUevent: a backend.Event.
type event struct {
	dev   *Device
	h     hEvent
	flags backend.EventFlags
	live  liveness // Destroy and Close end it
}

var _ backend.Event = (*event)(nil)

// NewEvent creates an event (cuEventCreate): EventDisableTiming maps to
// CU_EVENT_DISABLE_TIMING, EventBlockingSync to CU_EVENT_BLOCKING_SYNC.
func (d *Device) NewEvent(flags backend.EventFlags) (backend.Event, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.live.exit()
	if flags&^(backend.EventDisableTiming|backend.EventBlockingSync) != 0 {
		return nil, fmt.Errorf("new event: unknown flags %#x: %w", uint32(flags), backend.ErrInvalidArgument)
	}
	var cf cuda.CUevent_flags
	if flags&backend.EventDisableTiming != 0 {
		cf |= cuda.CU_EVENT_DISABLE_TIMING
	}
	if flags&backend.EventBlockingSync != 0 {
		cf |= cuda.CU_EVENT_BLOCKING_SYNC
	}
	h, r := d.c.eventCreate(uint32(cf))
	if r != 0 {
		return nil, d.fail("create event", r)
	}
	e := &event{dev: d, h: h, flags: flags}
	d.mu.Lock()
	d.events[e] = struct{}{}
	d.mu.Unlock()
	return e, nil
}

func (e *event) enter() error {
	if !e.live.enter() {
		if e.dev.closed.Load() {
			return fmt.Errorf("event: device %d: %w", e.dev.ordinal, ErrClosed)
		}
		return fmt.Errorf("event was destroyed: %w", ErrInvalidHandle)
	}
	if p := e.dev.lost.Load(); p != nil {
		e.live.exit()
		return *p
	}
	return nil
}

// Query reports whether the work before the latest record completed; an
// event never recorded is complete (cuEventQuery).
func (e *event) Query() (bool, error) {
	if err := e.enter(); err != nil {
		return false, err
	}
	defer e.live.exit()
	switch r := e.dev.c.eventQuery(e.h); r {
	case cuda.CUDA_SUCCESS:
		return true, nil
	case cuda.CUDA_ERROR_NOT_READY:
		return false, nil
	default:
		return false, e.dev.fail("query event", r)
	}
}

// Synchronize waits for the work before the latest record.
func (e *event) Synchronize() error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.live.exit()
	return e.dev.fail("synchronize event", e.dev.c.eventSync(e.h))
}

// Elapsed is the device time from start's latest record to e's
// (cuEventElapsedTime, milliseconds with about half a microsecond of
// resolution). Both must time, be recorded and be complete; an incomplete
// one is an error matching v1.ErrNotReady.
func (e *event) Elapsed(start backend.Event) (time.Duration, error) {
	s, ok := start.(*event)
	if !ok {
		return 0, fmt.Errorf("elapsed: event of another backend: %w", ErrInvalidHandle)
	}
	if e.flags&backend.EventDisableTiming != 0 || s.flags&backend.EventDisableTiming != 0 {
		return 0, fmt.Errorf("elapsed: event created with EventDisableTiming: %w", backend.ErrInvalidArgument)
	}
	if err := e.enter(); err != nil {
		return 0, fmt.Errorf("elapsed: %w", err)
	}
	defer e.live.exit()
	if err := s.enter(); err != nil {
		return 0, fmt.Errorf("elapsed: start: %w", err)
	}
	defer s.live.exit()
	ms, r := e.dev.c.eventElapsed(s.h, e.h)
	if r != 0 {
		return 0, e.dev.fail("elapsed time between events", r)
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// Destroy destroys the event; waits already enqueued on it still complete.
func (e *event) Destroy() error {
	d := e.dev
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	if !e.live.end() {
		return fmt.Errorf("destroy event: already destroyed: %w", ErrInvalidHandle)
	}
	d.mu.Lock()
	delete(d.events, e)
	d.mu.Unlock()
	return d.fail("destroy event", d.c.eventDestroy(e.h))
}
