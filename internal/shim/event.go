package shim

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// event is a CUDA event. Each record makes a new gpuos fence; the previous one
// is released when the last call using it is done with it.
type event struct {
	h     uint64
	ctx   *ctxObj
	flags uint32

	mu    sync.Mutex // guards fence
	fence *fenceRef  // the last record, nil before the first
}

// fenceRef is a fence shared by the event and the calls using it.
type fenceRef struct {
	f    *client.Fence
	sess *session
	refs atomic.Int32
}

func (f *fenceRef) release() {
	if f.refs.Add(-1) == 0 {
		go f.f.Close() // a round trip the application need not wait for
	}
}

// acquire returns the event's last record, referenced, or nil.
func (e *event) acquire() *fenceRef {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fence != nil {
		e.fence.refs.Add(1)
	}
	return e.fence
}

func (e *event) replace(f *fenceRef) {
	e.mu.Lock()
	old := e.fence
	e.fence = f
	e.mu.Unlock()
	if old != nil {
		old.release()
	}
}

// Event flags the shim honours. Interprocess events need IPC, which gpuos does
// not offer.
const eventFlags = uint32(cu.CU_EVENT_BLOCKING_SYNC | cu.CU_EVENT_DISABLE_TIMING)

// EventCreate is cuEventCreate.
func (d *Driver) EventCreate(t Thread, flags uint32) (uint64, Result) {
	c, _, r := d.currentSession(t)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if flags&uint32(cu.CU_EVENT_INTERPROCESS) != 0 {
		d.log.Once("event-ipc", "cuEventCreate: CU_EVENT_INTERPROCESS is not supported by gpuos")
		return 0, cu.CUDA_ERROR_NOT_SUPPORTED
	}
	if flags&^eventFlags != 0 {
		return 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	e := &event{ctx: c, flags: flags}
	e.h = d.events.add(e)
	return e.h, cu.CUDA_SUCCESS
}

func (d *Driver) event(h uint64) (*event, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return nil, r
	}
	e := d.events.get(h)
	if e == nil {
		return nil, cu.CUDA_ERROR_INVALID_HANDLE
	}
	return e, cu.CUDA_SUCCESS
}

// EventRecord is cuEventRecord (and cuEventRecordWithFlags with flags 0).
func (d *Driver) EventRecord(t Thread, h, streamH uint64) Result {
	e, r := d.event(h)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	var ds *dstream
	if isDefaultStream(streamH) {
		s, r := d.session(e.ctx.dev)
		if r != cu.CUDA_SUCCESS {
			return r
		}
		ds = s.blocking
	} else if ds, r = d.streamOf(t, streamH); r != cu.CUDA_SUCCESS {
		return r
	}
	if ds.sess.dev != e.ctx.dev {
		return cu.CUDA_ERROR_INVALID_HANDLE // a stream of another device
	}
	if r := ds.wait(); r != cu.CUDA_SUCCESS {
		return r
	}
	f, err := ds.sess.s.Record(bg, ds.cs)
	if err != nil {
		return d.fail(err)
	}
	ds.submit()
	ref := &fenceRef{f: f, sess: ds.sess}
	ref.refs.Store(1)
	e.replace(ref)
	return cu.CUDA_SUCCESS
}

// EventQuery is cuEventQuery: CUDA_SUCCESS once the work before the last
// record is done (or if there was none), CUDA_ERROR_NOT_READY before.
func (d *Driver) EventQuery(h uint64) Result {
	e, r := d.event(h)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	f := e.acquire()
	if f == nil {
		return cu.CUDA_SUCCESS
	}
	defer f.release()
	done, err := f.f.Poll(bg)
	if err != nil {
		return d.fail(err)
	}
	if !done {
		return cu.CUDA_ERROR_NOT_READY
	}
	return cu.CUDA_SUCCESS
}

// EventSynchronize is cuEventSynchronize.
func (d *Driver) EventSynchronize(h uint64) Result {
	e, r := d.event(h)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	f := e.acquire()
	if f == nil {
		return cu.CUDA_SUCCESS
	}
	defer f.release()
	return d.fail(f.f.Wait(bg, 0))
}

// EventElapsedTime is cuEventElapsedTime, in milliseconds.
func (d *Driver) EventElapsedTime(start, end uint64) (float32, Result) {
	s, r := d.event(start)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	e, r := d.event(end)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if (s.flags|e.flags)&uint32(cu.CU_EVENT_DISABLE_TIMING) != 0 {
		return 0, cu.CUDA_ERROR_INVALID_HANDLE
	}
	fs, fe := s.acquire(), e.acquire()
	if fs != nil {
		defer fs.release()
	}
	if fe != nil {
		defer fe.release()
	}
	if fs == nil || fe == nil {
		return 0, cu.CUDA_ERROR_INVALID_HANDLE
	}
	if fs.sess != fe.sess {
		return 0, cu.CUDA_ERROR_INVALID_HANDLE
	}
	dur, err := client.Elapsed(bg, fs.f, fe.f)
	if err != nil {
		if errors.Is(err, v1.ErrNotReady) {
			return 0, cu.CUDA_ERROR_NOT_READY
		}
		return 0, d.fail(err)
	}
	return float32(float64(dur) / float64(time.Millisecond)), cu.CUDA_SUCCESS
}

// EventDestroy is cuEventDestroy. A pending record completes on its own.
func (d *Driver) EventDestroy(h uint64) Result {
	e, r := d.event(h)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	return d.destroyEvent(e)
}

func (d *Driver) destroyEvent(e *event) Result {
	if d.events.remove(e.h) == nil {
		return cu.CUDA_ERROR_INVALID_HANDLE
	}
	e.replace(nil)
	return cu.CUDA_SUCCESS
}
