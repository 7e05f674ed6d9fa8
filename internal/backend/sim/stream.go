package sim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
)

// Stream priorities, as on an H100: lower is more urgent.
const (
	LeastStreamPriority    = 0
	GreatestStreamPriority = -5
)

// engineKind names the device's engines. Each runs one command at a time, in
// the order commands were enqueued on the device.
type engineKind int

const (
	computeEngine engineKind = iota // kernels, device-to-device copies, memsets
	htodEngine                      // host-to-device copies
	dtohEngine                      // device-to-host copies
	numEngines
)

type engine struct {
	kind engineKind
	last *cmd // the command enqueued on it most recently; guarded by Device.qmu
}

type cmdKind uint8

const (
	cmdLaunch cmdKind = iota
	cmdHtoD
	cmdDtoH
	cmdDtoD
	cmdMemset
	cmdRecord
	cmdWait
	cmdCallback
	cmdFence
	cmdHold // tests: hold the stream until a channel closes
)

// cmd is one enqueued command. Its result fields are written by its stream's
// goroutine and read by others only after done is closed.
type cmd struct {
	kind   cmdKind
	marker bool    // a record that is not work (RecordMarker)
	eng    *engine // nil for commands that use no engine
	prev   *cmd    // the command before it on eng, until waited for
	floor  uint64  // the host synchronization point when it was enqueued

	fn     *function
	cfg    backend.LaunchConfig
	params []byte

	dst, src uint64 // device addresses
	host     []byte
	n        uint64
	pinned   bool
	value    uint32
	elem     int

	wait     *cmd           // cmdWait: the record command to wait for
	word     *atomic.Uint32 // cmdFence: the word it writes, if any (SetFenceWord)
	callback func(error)
	hold     <-chan struct{}

	start, end uint64 // virtual nanoseconds
	err        error
	done       chan struct{}
}

// Stream is a sim stream: a backend.Stream whose commands one goroutine runs
// in order. It also reports its priority and its virtual time.
type Stream struct {
	d        *Device
	priority int
	part     *partition // the partition it was created in, or nil
	sms      smRange    // the SMs its compute-engine work runs on

	// Guarded by d.qmu.
	last        *cmd
	lastWork    *cmd   // the last command but markers (RecordMarker)
	latestFence *fence // the last fence, if it was the last work enqueued when made
	destroyed   bool
	fenceWord   *atomic.Uint32 // where its fences write (SetFenceWord), or nil
	fenceSeq    uint32         // the last number a fence wrote there

	// fenceMu makes a fence's numbering and its enqueue one step, so that
	// a word's numbers grow in stream order, as cuda's do.
	fenceMu sync.Mutex

	mu       sync.Mutex
	queue    []*cmd
	stopping bool
	wake     chan struct{}
	exited   chan struct{}

	// Owned by the goroutine.
	end uint64

	vtime    atomic.Uint64
	firstErr atomic.Pointer[error]
}

var _ backend.Stream = (*Stream)(nil)

// StreamPriorityRange returns the H100's range: least 0, greatest -5.
func (d *Device) StreamPriorityRange() (least, greatest int) {
	return LeastStreamPriority, GreatestStreamPriority
}

// NewStream creates a stream. A priority outside the range is clamped to it,
// as CUDA does. The sim records the priority (Priority) but runs every engine
// in enqueue order: ordering by priority is the scheduler's job.
func (d *Device) NewStream(priority int) (backend.Stream, error) {
	return d.newStream(priority, nil)
}

// newStream creates a stream in part, or on all SMs if part is nil.
func (d *Device) newStream(priority int, part *partition) (backend.Stream, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	priority = min(max(priority, GreatestStreamPriority), LeastStreamPriority)
	s := &Stream{d: d, priority: priority, part: part, sms: smRange{0, max(d.opts.SMs, 1)},
		wake: make(chan struct{}, 1), exited: make(chan struct{})}
	if part != nil {
		s.sms = part.sms
	}
	d.qmu.Lock()
	if d.closed.Load() {
		d.qmu.Unlock()
		return nil, d.check()
	}
	if part != nil {
		if part.closed {
			d.qmu.Unlock()
			return nil, fmt.Errorf("new stream: partition was closed: %w", ErrInvalidHandle)
		}
		part.streams++
	}
	d.streams[s] = struct{}{}
	d.qmu.Unlock()
	go s.run()
	return s, nil
}

// Priority is the stream's (clamped) priority.
func (s *Stream) Priority() int { return s.priority }

// SMs is the range of SMs [first, end) the stream's compute-engine work
// runs on: the whole device, or its partition's (Device.Partition).
func (s *Stream) SMs() (first, end int) { return s.sms.lo, s.sms.hi }

// VirtualTime is the end time of the stream's latest completed command.
func (s *Stream) VirtualTime() time.Duration { return nsDuration(s.vtime.Load()) }

func (s *Stream) firstError() error {
	if p := s.firstErr.Load(); p != nil {
		return *p
	}
	return nil
}

// enqueue appends c to the stream and, if it uses one, to its engine.
// locked, if not nil, runs under d.qmu before c is enqueued and can refuse
// it (Record uses it).
func (s *Stream) enqueue(c *cmd, eng engineKind, locked func() error) error {
	d := s.d
	if err := d.check(); err != nil {
		return err
	}
	c.done = make(chan struct{})
	d.qmu.Lock()
	if s.destroyed || d.closed.Load() {
		d.qmu.Unlock()
		if err := d.check(); err != nil {
			return err
		}
		return fmt.Errorf("enqueue on a destroyed stream: %w", ErrInvalidHandle)
	}
	if locked != nil {
		if err := locked(); err != nil {
			d.qmu.Unlock()
			return err
		}
	}
	c.floor = d.floor.Load()
	if eng >= 0 {
		c.eng = &d.engines[eng]
		c.prev = c.eng.last
		c.eng.last = c
	}
	s.last = c
	if !c.marker {
		s.lastWork = c
	}
	s.mu.Lock()
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	d.qmu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

const noEngine engineKind = -1

func (s *Stream) run() {
	defer close(s.exited)
	for {
		s.mu.Lock()
		for len(s.queue) == 0 {
			if s.stopping {
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			<-s.wake
			s.mu.Lock()
		}
		c := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.mu.Unlock()
		s.exec(c)
	}
}

// stop lets the goroutine finish the queue and exit, and waits for it.
func (s *Stream) stop() {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.exited
}

// exec runs one command: it starts once the stream's previous command, the
// command before it on its engine and any event it waits for have completed,
// at the latest of their virtual end times (and of the host floor).
func (s *Stream) exec(c *cmd) {
	d := s.d
	ready := max(s.end, c.floor)
	if c.wait != nil {
		<-c.wait.done
		ready = max(ready, c.wait.end)
		c.wait = nil
	}
	if c.prev != nil {
		<-c.prev.done
		// Concurrent kernels: the engine's order is only the order of
		// placement; the SMs decide the start (concurrent.go).
		if d.sms == nil || c.eng.kind != computeEngine {
			ready = max(ready, c.prev.end)
		}
		c.prev = nil
	}
	if c.hold != nil {
		<-c.hold
	}
	c.start, c.end = ready, ready
	d.coherent.Lock() // see what every command ended so far wrote
	d.coherent.Unlock()
	err := d.check()
	if err == nil {
		err = s.do(c)
	}
	d.coherent.Lock() // and publish what this one wrote
	d.coherent.Unlock()
	if c.kind == cmdLaunch {
		c.fn.mod.unpin()
	}
	if err != nil {
		c.err = err
		s.firstErr.CompareAndSwap(nil, &err)
	}
	if c.kind == cmdCallback {
		cbErr := d.check() // a lost context wins: it names the first fault too
		if cbErr == nil {
			cbErr = s.firstError()
		}
		c.callback(cbErr)
	}
	c.host, c.params, c.callback = nil, nil, nil // the last command of an engine or event lives on
	s.end = c.end
	s.vtime.Store(c.end)
	atomicMax(&d.vtime, c.end)
	close(c.done)
}

// do performs c's work and sets c.end.
func (s *Stream) do(c *cmd) error {
	d := s.d
	cost := d.opts.Cost
	switch c.kind {
	case cmdLaunch:
		return d.runKernel(c, s.sms)
	case cmdHtoD:
		c.end = c.start + uint64(cost.CopyTime(CopyHtoD, c.n, c.pinned))
		segs, err := d.as.resolve(c.dst, c.n)
		if err != nil {
			return d.fault(fmt.Errorf("copy host to device: %w", err))
		}
		src := c.host
		for _, seg := range segs {
			src = src[copy(seg, src):]
		}
	case cmdDtoH:
		c.end = c.start + uint64(cost.CopyTime(CopyDtoH, c.n, c.pinned))
		segs, err := d.as.resolve(c.src, c.n)
		if err != nil {
			return d.fault(fmt.Errorf("copy device to host: %w", err))
		}
		dst := c.host
		for _, seg := range segs {
			dst = dst[copy(dst, seg):]
		}
	case cmdDtoD:
		c.end = c.start + uint64(cost.CopyTime(CopyDtoD, c.n, false))
		d.spread(c, cost.CopyOverhead, s.sms)
		dsts, err := d.as.resolve(c.dst, c.n)
		if err != nil {
			return d.fault(fmt.Errorf("copy device to device: destination: %w", err))
		}
		srcs, err := d.as.resolve(c.src, c.n)
		if err != nil {
			return d.fault(fmt.Errorf("copy device to device: source: %w", err))
		}
		copySegments(dsts, srcs)
	case cmdRecord, cmdFence:
		// An event (and a fence) carries the stream's first error up to it, so that
		// waiting on the event reports failed work as CUDA does.
		err := s.firstError()
		if err == nil && c.word != nil {
			c.word.Store(c.value) // a fence's number, as the GPU writes it
		}
		return err
	case cmdMemset:
		c.end = c.start + uint64(cost.CopyTime(CopyMemset, c.n, false))
		d.spread(c, cost.CopyOverhead, s.sms)
		segs, err := d.as.resolve(c.dst, c.n)
		if err != nil {
			return d.fault(fmt.Errorf("memset: %w", err))
		}
		var pat [4]byte
		binary.LittleEndian.PutUint32(pat[:], c.value)
		for _, seg := range segs {
			fill(seg, pat[:c.elem])
		}
	}
	return nil
}

// fault handles a device-side error: with fatal faults the context is lost.
func (d *Device) fault(err error) error {
	if !d.opts.NonFatalFaults {
		d.lose(err)
	}
	return err
}

// copySegments copies between two segment lists of equal total length.
func copySegments(dsts, srcs [][]byte) {
	var src []byte
	for _, dst := range dsts {
		for len(dst) > 0 {
			if len(src) == 0 {
				src, srcs = srcs[0], srcs[1:]
			}
			n := copy(dst, src)
			dst, src = dst[n:], src[n:]
		}
	}
}

// fill repeats pat over b; len(b) is a multiple of len(pat).
func fill(b, pat []byte) {
	if len(b) == 0 {
		return
	}
	n := copy(b, pat)
	for n < len(b) {
		n += copy(b[n:], b[:n])
	}
}

// checkRange validates a device range at enqueue time.
func (d *Device) checkRange(what string, addr, n uint64) error {
	if _, err := d.as.resolve(addr, n); err != nil {
		return fmt.Errorf("%s: %w: %w", what, backend.ErrInvalidArgument, err)
	}
	return nil
}

// Launch enqueues a kernel of this device's modules.
func (s *Stream) Launch(f backend.Function, cfg backend.LaunchConfig, params []byte) error {
	if err := s.d.check(); err != nil {
		return err
	}
	fn, ok := f.(*function)
	if !ok || fn.mod.d != s.d {
		return fmt.Errorf("launch: function of another device or backend: %w", ErrInvalidHandle)
	}
	if err := fn.checkLaunch(cfg, params); err != nil {
		return err
	}
	if err := fn.mod.pin(); err != nil {
		return err
	}
	c := &cmd{kind: cmdLaunch, fn: fn, cfg: cfg, params: bytes.Clone(params)}
	if err := s.enqueue(c, computeEngine, nil); err != nil {
		fn.mod.unpin()
		return err
	}
	return nil
}

// CopyHtoD enqueues a host-to-device copy. Pageable src is staged before
// the call returns; pinned src is read when the copy runs.
func (s *Stream) CopyHtoD(dst backend.DevicePtr, src []byte) error {
	d := s.d
	if err := d.check(); err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	if err := d.checkRange("copy host to device", uint64(dst), uint64(len(src))); err != nil {
		return err
	}
	c := &cmd{kind: cmdHtoD, dst: uint64(dst), host: src, n: uint64(len(src)), pinned: d.host.pinned(src)}
	if !c.pinned {
		c.host = bytes.Clone(src)
	}
	return s.enqueue(c, htodEngine, nil)
}

// CopyDtoH enqueues a device-to-host copy. Into pageable dst the call waits
// until the copy ran (and returns its error); into pinned dst it returns at once.
func (s *Stream) CopyDtoH(dst []byte, src backend.DevicePtr) error {
	d := s.d
	if err := d.check(); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	if err := d.checkRange("copy device to host", uint64(src), uint64(len(dst))); err != nil {
		return err
	}
	c := &cmd{kind: cmdDtoH, src: uint64(src), host: dst, n: uint64(len(dst)), pinned: d.host.pinned(dst)}
	if err := s.enqueue(c, dtohEngine, nil); err != nil {
		return err
	}
	if c.pinned {
		return nil
	}
	<-c.done
	d.raiseFloor(c.end)
	if err := d.check(); err != nil {
		return err
	}
	return c.err
}

// CopyDtoD enqueues a device-to-device copy on the compute engine.
func (s *Stream) CopyDtoD(dst, src backend.DevicePtr, n uint64) error {
	d := s.d
	if err := d.check(); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if err := d.checkRange("copy device to device: destination", uint64(dst), n); err != nil {
		return err
	}
	if err := d.checkRange("copy device to device: source", uint64(src), n); err != nil {
		return err
	}
	return s.enqueue(&cmd{kind: cmdDtoD, dst: uint64(dst), src: uint64(src), n: n}, computeEngine, nil)
}

// Memset enqueues setting count elements of elemSize (1, 2 or 4) bytes at
// dst, which must be aligned to elemSize, to value.
func (s *Stream) Memset(dst backend.DevicePtr, value uint32, elemSize int, count uint64) error {
	d := s.d
	if err := d.check(); err != nil {
		return err
	}
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
	if err := d.checkRange("memset", uint64(dst), n); err != nil {
		return err
	}
	return s.enqueue(&cmd{kind: cmdMemset, dst: uint64(dst), n: n, value: value, elem: elemSize}, computeEngine, nil)
}

// Record enqueues a record of e: e's time becomes the end of the work
// enqueued on the stream before it.
func (s *Stream) Record(e backend.Event) error {
	return s.record(e, false)
}

var _ backend.MarkerRecorder = (*Stream)(nil)

// RecordMarker is Record, not counted as work for LatestFence
// (backend.MarkerRecorder).
func (s *Stream) RecordMarker(e backend.Event) error {
	return s.record(e, true)
}

func (s *Stream) record(e backend.Event, marker bool) error {
	if err := s.d.check(); err != nil {
		return err
	}
	ev, ok := e.(*event)
	if !ok || ev.d != s.d {
		return fmt.Errorf("record: event of another device or backend: %w", ErrInvalidHandle)
	}
	c := &cmd{kind: cmdRecord, marker: marker}
	return s.enqueue(c, noEngine, func() error {
		if ev.destroyed {
			return fmt.Errorf("record: event was destroyed: %w", ErrInvalidHandle)
		}
		ev.last = c
		return nil
	})
}

// WaitEvent makes later work on the stream wait for e's latest record (as of
// this call). An event never recorded is already complete. e may belong to
// another sim device.
func (s *Stream) WaitEvent(e backend.Event) error {
	if err := s.d.check(); err != nil {
		return err
	}
	ev, ok := e.(*event)
	if !ok {
		return fmt.Errorf("wait event: event of another backend: %w", ErrInvalidHandle)
	}
	rec, err := ev.record()
	if err != nil {
		return err
	}
	if rec == nil {
		return nil
	}
	return s.enqueue(&cmd{kind: cmdWait, wait: rec}, noEngine, nil)
}

// Callback enqueues fn, run on the stream's goroutine once all earlier work
// completed, with the stream's first error (or the lost or closed context's
// error). Later work waits for it.
func (s *Stream) Callback(fn func(error)) error {
	if err := s.d.check(); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("callback: nil function: %w", backend.ErrInvalidArgument)
	}
	return s.enqueue(&cmd{kind: cmdCallback, callback: fn}, noEngine, nil)
}

var (
	_ backend.Fencer          = (*Stream)(nil)
	_ backend.LatestFencer    = (*Stream)(nil)
	_ backend.FenceWordSetter = (*Stream)(nil)
)

// Fence enqueues a marker after the stream's work so far
// (backend.Fencer): it is reached once that work completed without error.
func (s *Stream) Fence() (backend.Fence, error) {
	if err := s.d.check(); err != nil {
		return nil, err
	}
	c := &cmd{kind: cmdFence}
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	s.d.qmu.Lock()
	if s.fenceWord != nil {
		// Numbered while the lock is held, so that numbers follow enqueue
		// order.
		s.fenceSeq++
		c.word, c.value = s.fenceWord, s.fenceSeq
	}
	s.d.qmu.Unlock()
	if err := s.enqueue(c, noEngine, nil); err != nil {
		return nil, err
	}
	f := &fence{d: s.d, c: c}
	s.d.qmu.Lock()
	if s.lastWork == c {
		s.latestFence = f
	}
	s.d.qmu.Unlock()
	return f, nil
}

// SetFenceWord makes the stream's later fences write their numbers into
// word (backend.FenceWordSetter), going on from the value it holds. The sim
// writes it from the host side when the marker runs; dptr is not used.
func (s *Stream) SetFenceWord(word *atomic.Uint32, dptr backend.DevicePtr) error {
	if word == nil || dptr == 0 {
		return fmt.Errorf("set fence word: %w", backend.ErrInvalidArgument)
	}
	if err := s.d.check(); err != nil {
		return err
	}
	s.d.qmu.Lock()
	defer s.d.qmu.Unlock()
	if s.destroyed {
		return fmt.Errorf("set fence word: %w", ErrInvalidHandle)
	}
	s.fenceWord, s.fenceSeq = word, word.Load()
	s.latestFence = nil
	return nil
}

// LatestFence returns the stream's last fence if nothing but markers was
// enqueued on it since (backend.LatestFencer).
func (s *Stream) LatestFence() (backend.Fence, bool) {
	s.d.qmu.Lock()
	defer s.d.qmu.Unlock()
	if f := s.latestFence; f != nil && !s.destroyed && s.lastWork == f.c {
		return f, true
	}
	return nil, false
}

// fence is a sim stream's marker.
type fence struct {
	d *Device
	c *cmd
}

var _ backend.WordFence = (*fence)(nil)

// Word returns the word the fence writes and its number; nil for a fence
// made before the stream had a word.
func (f *fence) Word() (*atomic.Uint32, uint32) { return f.c.word, f.c.value }

// Reached reports whether the marker's command ran without an earlier
// error on its stream. A host that saw it reached is synchronized with the
// stream up to the marker, as after Query.
func (f *fence) Reached() bool {
	select {
	case <-f.c.done:
	default:
		return false
	}
	if f.c.err != nil {
		return false
	}
	f.d.raiseFloor(f.c.end)
	return true
}

func (s *Stream) lastCmd() (*cmd, error) {
	s.d.qmu.Lock()
	defer s.d.qmu.Unlock()
	if s.destroyed {
		return nil, fmt.Errorf("stream was destroyed: %w", ErrInvalidHandle)
	}
	return s.last, nil
}

// Query reports whether all enqueued work completed, and the stream's first
// error. A stream's errors are sticky: once its work failed, Query and
// Synchronize report that error until the stream is destroyed.
func (s *Stream) Query() (bool, error) {
	if err := s.d.check(); err != nil {
		return false, err
	}
	last, err := s.lastCmd()
	if err != nil {
		return false, err
	}
	done := true
	if last != nil {
		select {
		case <-last.done:
			s.d.raiseFloor(last.end)
		default:
			done = false
		}
	}
	if err := s.d.check(); err != nil {
		return false, err
	}
	return done, s.firstError()
}

// Synchronize waits for all enqueued work and returns the stream's first error.
func (s *Stream) Synchronize() error {
	if err := s.d.check(); err != nil {
		return err
	}
	last, err := s.lastCmd()
	if err != nil {
		return err
	}
	if last != nil {
		<-last.done
		s.d.raiseFloor(last.end)
	}
	if err := s.d.check(); err != nil {
		return err
	}
	return s.firstError()
}

// Destroy waits for the stream's pending work, then ends it.
func (s *Stream) Destroy() error {
	d := s.d
	if err := d.check(); err != nil {
		return err
	}
	d.qmu.Lock()
	if s.destroyed {
		d.qmu.Unlock()
		return fmt.Errorf("destroy stream: already destroyed: %w", ErrInvalidHandle)
	}
	s.destroyed = true
	delete(d.streams, s)
	if s.part != nil {
		s.part.streams--
	}
	d.qmu.Unlock()
	s.stop()
	return nil
}

// event is a backend.Event. Its record state is guarded by its device's qmu.
type event struct {
	d     *Device
	flags backend.EventFlags

	last      *cmd
	destroyed bool
}

// NewEvent creates an event; flags are EventDisableTiming and EventBlockingSync.
func (d *Device) NewEvent(flags backend.EventFlags) (backend.Event, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if flags&^(backend.EventDisableTiming|backend.EventBlockingSync) != 0 {
		return nil, fmt.Errorf("new event: unknown flags %#x: %w", uint32(flags), backend.ErrInvalidArgument)
	}
	return &event{d: d, flags: flags}, nil
}

func (e *event) record() (*cmd, error) {
	e.d.qmu.Lock()
	defer e.d.qmu.Unlock()
	if e.destroyed {
		return nil, fmt.Errorf("event was destroyed: %w", ErrInvalidHandle)
	}
	return e.last, nil
}

// Query reports whether the work before the latest record completed, with
// the first error of that stream's work up to the record; an event never
// recorded is complete.
func (e *event) Query() (bool, error) {
	if err := e.d.check(); err != nil {
		return false, err
	}
	rec, err := e.record()
	if err != nil || rec == nil {
		return err == nil, err
	}
	select {
	case <-rec.done:
		e.d.raiseFloor(rec.end)
		if err := e.d.check(); err != nil {
			return false, err
		}
		return true, rec.err
	default:
		return false, nil
	}
}

// Synchronize waits for the work before the latest record and returns the
// first error of that stream's work up to the record.
func (e *event) Synchronize() error {
	if err := e.d.check(); err != nil {
		return err
	}
	rec, err := e.record()
	if err != nil || rec == nil {
		return err
	}
	<-rec.done
	e.d.raiseFloor(rec.end)
	if err := e.d.check(); err != nil {
		return err
	}
	return rec.err
}

// Elapsed is the virtual time from start's latest record to e's. Both must
// time (no EventDisableTiming), be recorded and be complete (else an error
// matching v1.ErrNotReady).
func (e *event) Elapsed(start backend.Event) (time.Duration, error) {
	if err := e.d.check(); err != nil {
		return 0, err
	}
	s, ok := start.(*event)
	if !ok {
		return 0, fmt.Errorf("elapsed: event of another backend: %w", ErrInvalidHandle)
	}
	if e.flags&backend.EventDisableTiming != 0 || s.flags&backend.EventDisableTiming != 0 {
		return 0, fmt.Errorf("elapsed: event created with EventDisableTiming: %w", backend.ErrInvalidArgument)
	}
	var recs [2]*cmd
	for i, ev := range [2]*event{s, e} {
		rec, err := ev.record()
		if err != nil {
			return 0, fmt.Errorf("elapsed: %w", err)
		}
		if rec == nil {
			return 0, fmt.Errorf("elapsed: event was never recorded: %w", backend.ErrInvalidArgument)
		}
		select {
		case <-rec.done:
		default:
			return 0, fmt.Errorf("elapsed: event not complete: %w", v1.ErrNotReady)
		}
		recs[i] = rec
	}
	if err := e.d.check(); err != nil {
		return 0, err
	}
	return time.Duration(int64(recs[1].end) - int64(recs[0].end)), nil
}

// Destroy destroys the event; waits already enqueued on it still complete.
func (e *event) Destroy() error {
	if err := e.d.check(); err != nil {
		return err
	}
	e.d.qmu.Lock()
	defer e.d.qmu.Unlock()
	if e.destroyed {
		return fmt.Errorf("destroy event: already destroyed: %w", ErrInvalidHandle)
	}
	e.destroyed = true
	e.last = nil
	return nil
}
