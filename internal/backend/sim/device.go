package sim

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// Device is an open sim device: a backend.Device, plus the virtual clock the
// scheduler reads. All methods are safe for concurrent use.
type Device struct {
	b       *simBackend
	ordinal int
	opts    Options
	info    backend.DeviceInfo

	as   *addressSpace
	view *memView
	host hostRegistry

	mappedMu sync.Mutex
	hostMaps map[*byte]mappedRange // MapHost's mappings, by first byte

	// compile turns PTX text into a program: the interpreter, or a test's.
	compile func(text []byte) (program, error)

	ctx    context.Context // cancelled by Close: aborts a running kernel
	cancel context.CancelFunc

	closed atomic.Bool
	lost   atomic.Pointer[error] // the ErrContextLost error, once lost

	// coherent orders, for Go's memory model, every command's start after
	// the end of each command that ended before it: a command passes through
	// it when it starts and when its work is done. Device memory is coherent
	// across streams once work has completed, as on a GPU; without this, a
	// host that learned of a completion through memory the race detector
	// cannot follow (a fence word seen through a second mapping of the
	// completion page) and then copied the results on another stream would
	// be reported as racing with the kernel that wrote them.
	coherent sync.Mutex

	// Virtual clock, in nanoseconds since Open.
	floor atomic.Uint64 // host synchronization point: later work starts no earlier
	vtime atomic.Uint64 // latest end time of completed work

	engines [numEngines]engine
	sms     *smPool // Options.ConcurrentKernels: the compute engine's SMs

	// qmu orders enqueues: stream queues, engine links and event records
	// change together under it, so every engine runs its commands in the
	// order they were enqueued.
	qmu     sync.Mutex
	streams map[*Stream]struct{}
	modules map[*module]struct{}
}

var _ backend.Device = (*Device)(nil)

func newDevice(b *simBackend, ordinal int) *Device {
	d := &Device{
		b:       b,
		ordinal: ordinal,
		opts:    b.opts,
		info:    deviceInfo(b.opts, ordinal),
		as:      newAddressSpace(b.opts.Granularity, b.opts.Memory),
		streams: map[*Stream]struct{}{},
		modules: map[*module]struct{}{},
	}
	d.view = newMemView(d.as)
	d.compile = compilePTX
	d.ctx, d.cancel = context.WithCancel(background)
	for i := range d.engines {
		d.engines[i].kind = engineKind(i)
	}
	if b.opts.ConcurrentKernels {
		d.sms = newSMPool(b.opts.SMs)
	}
	return d
}

// check returns the error every call gets on a closed or lost device.
func (d *Device) check() error {
	if d.closed.Load() {
		return fmt.Errorf("device %d: %w", d.ordinal, ErrClosed)
	}
	if p := d.lost.Load(); p != nil {
		return *p
	}
	return nil
}

// lose makes the context lost after a fatal fault; the first fault wins.
func (d *Device) lose(fault error) {
	err := fmt.Errorf("device %d: %w: first fault: %w", d.ordinal, backend.ErrContextLost, fault)
	if d.lost.CompareAndSwap(nil, &err) {
		d.b.markLost(d.ordinal, err)
	}
}

// Lost returns the error that lost the context, or nil.
func (d *Device) Lost() error {
	if p := d.lost.Load(); p != nil {
		return *p
	}
	return nil
}

// VirtualTime is the latest end time of completed device work, in simulated
// time since Open. After a synchronization it is exactly reproducible.
func (d *Device) VirtualTime() time.Duration { return nsDuration(d.vtime.Load()) }

// HostTime is the latest device time the host has seen (through a
// synchronization, a query or an event): work enqueued now starts no
// earlier. With ConcurrentKernels, work already placed may end well after
// it, so it, not VirtualTime, is "now" for a command being submitted.
func (d *Device) HostTime() time.Duration { return nsDuration(d.floor.Load()) }

// Info describes the device.
func (d *Device) Info() backend.DeviceInfo {
	info := d.info
	info.Attributes = append([]int32(nil), d.info.Attributes...)
	return info
}

// Close destroys the context: a running kernel is aborted, queued work is
// dropped (its callbacks run with ErrClosed), and memory, modules and
// streams go. The ordinal can then be opened again unless it was lost.
func (d *Device) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return fmt.Errorf("close device %d: %w", d.ordinal, ErrClosed)
	}
	d.cancel()
	d.qmu.Lock()
	streams := make([]*Stream, 0, len(d.streams))
	for s := range d.streams {
		streams = append(streams, s)
	}
	d.streams = map[*Stream]struct{}{}
	d.modules = map[*module]struct{}{}
	d.qmu.Unlock()
	for _, s := range streams {
		s.stop()
	}
	d.host.clear()
	d.as.clear()
	d.view.flush()
	d.b.closed(d)
	return nil
}

// Granularity is the VMM granule.
func (d *Device) Granularity() uint64 { return d.as.gran }

// Reserve reserves size bytes of device virtual addresses aligned to
// alignment (0: the granularity) inside [VAStart, VAEnd).
func (d *Device) Reserve(size, alignment uint64) (backend.DevicePtr, error) {
	if err := d.check(); err != nil {
		return 0, err
	}
	p, err := d.as.reserve(size, alignment, VAStart, moduleStart)
	return backend.DevicePtr(p), err
}

// Release returns a whole reservation, which must have nothing mapped.
func (d *Device) Release(ptr backend.DevicePtr, size uint64) error {
	if err := d.check(); err != nil {
		return err
	}
	if uint64(ptr) >= moduleStart {
		return fmt.Errorf("release %#x: not a reservation of the caller: %w", ptr, backend.ErrInvalidArgument)
	}
	return d.as.release(uint64(ptr), size)
}

// CreateChunk allocates physical memory, counted against Options.Memory.
func (d *Device) CreateChunk(size uint64) (backend.Chunk, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	return d.as.createChunk(d, size)
}

func (c *chunk) Size() uint64 { return c.size }

func (c *chunk) Release() error {
	if err := c.dev.check(); err != nil {
		return err
	}
	if err := c.dev.as.releaseChunk(c); err != nil {
		return err
	}
	c.dev.view.flush() // cached translations must not keep the memory alive
	return nil
}

// Map maps [offset, offset+size) of chunk at ptr, inside one reservation, over
// granules that are not mapped yet. The range is inaccessible until SetAccess.
func (d *Device) Map(ptr backend.DevicePtr, size uint64, c backend.Chunk, offset uint64) error {
	if err := d.check(); err != nil {
		return err
	}
	ch, ok := c.(*chunk)
	if !ok || ch.dev != d {
		return fmt.Errorf("map %#x: chunk of another device or backend: %w", ptr, ErrInvalidHandle)
	}
	if uint64(ptr) >= moduleStart {
		return fmt.Errorf("map %#x: not in a reservation of the caller: %w", ptr, backend.ErrInvalidArgument)
	}
	return d.as.mapChunk(uint64(ptr), size, ch, offset)
}

// Unmap unmaps [ptr, ptr+size), which must be mapped and consist of whole
// mappings.
func (d *Device) Unmap(ptr backend.DevicePtr, size uint64) error {
	if err := d.check(); err != nil {
		return err
	}
	if uint64(ptr) >= moduleStart {
		return fmt.Errorf("unmap %#x: not in a reservation of the caller: %w", ptr, backend.ErrInvalidArgument)
	}
	return d.as.unmap(uint64(ptr), size)
}

// SetAccess makes a mapped range readable and writable by kernels and copies.
func (d *Device) SetAccess(ptr backend.DevicePtr, size uint64) error {
	if err := d.check(); err != nil {
		return err
	}
	if uint64(ptr) >= moduleStart {
		return fmt.Errorf("set access %#x: not in a reservation of the caller: %w", ptr, backend.ErrInvalidArgument)
	}
	return d.as.setAccess(uint64(ptr), size)
}

// MemoryInfo reports free and total physical memory.
func (d *Device) MemoryInfo() (free, total uint64, err error) {
	if err := d.check(); err != nil {
		return 0, 0, err
	}
	free, total = d.as.memoryInfo()
	return free, total, nil
}

// Synchronize waits for all work enqueued so far on every stream. Errors of
// the work itself are reported on its stream; this returns only a lost or
// closed context.
func (d *Device) Synchronize() error {
	if err := d.check(); err != nil {
		return err
	}
	d.qmu.Lock()
	var lasts []*cmd
	for s := range d.streams {
		if s.last != nil {
			lasts = append(lasts, s.last)
		}
	}
	d.qmu.Unlock()
	for _, c := range lasts {
		<-c.done
		d.raiseFloor(c.end)
	}
	return d.check()
}

// raiseFloor records that the host has seen the device reach virtual time t.
func (d *Device) raiseFloor(t uint64) { atomicMax(&d.floor, t) }

func atomicMax(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}
