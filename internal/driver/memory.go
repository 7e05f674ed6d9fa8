package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/mem"
	"golang.org/x/sys/unix"
)

// Audit kinds of the memory manager's moves.
const (
	KindEvict  audit.Kind = "mem.evict"   // a chunk was copied to host memory and unmapped
	KindSwapIn audit.Kind = "mem.swap-in" // a chunk was mapped back and its data restored
	// KindResident: a session was made resident before its work ran: bytes
	// brought back, bytes evicted to make room, and the time it took.
	KindResident audit.Kind = "mem.resident"
	// KindSwapReserve: the pinned host memory reserved for swapping is
	// pinned (bytes, ns since the driver started): from then on evictions
	// copy at once (bench/mem/run.sh waits for it).
	KindSwapReserve audit.Kind = "mem.swap-reserve"
)

// memHooks is the driver's side of the memory manager: Quiesce (stop a
// session's device work while its window is remapped), residency before
// dispatch (a pager per session that has work held back by an eviction),
// and the audit log and counters of swapping. The manager is created before
// the driver, so the hooks find the driver and the sessions through here.
type memHooks struct {
	d       atomic.Pointer[Driver]
	windows sync.Map // mem.Window.ID → *sessionMem
	// audit is the driver's audit log, for what the manager reports before
	// the driver exists (the swap reserve is pinned from the start).
	audit *audit.Logger
}

// sessionMem is what the hooks know of a session.
type sessionMem struct {
	s      *Session
	paging atomic.Bool // a pager goroutine runs for it
}

// memoryOptions are the memory manager's options for a driver.
func memoryOptions(dev backend.Device, opts Options, h *memHooks) (mem.Options, error) {
	mo := mem.Options{
		DeviceMemoryLimit: opts.DeviceMemoryLimit,
		Quiesce:           h.quiesce,
		OnSwap:            h.onSwap,
		Victims:           opts.Victims,
		MinResidency:      opts.MinResidency,
		SwapReserve:       opts.SwapReserve,
	}
	h.audit = opts.Audit
	_, total, err := dev.MemoryInfo()
	if err != nil {
		return mo, fmt.Errorf("query device memory: %w", err)
	}
	limit := total
	if l := opts.DeviceMemoryLimit; l != 0 && l < total {
		limit = l
	}
	mo.SinkChunk = sinkChunk(limit, dev.Granularity())
	switch {
	case opts.SwapLimit > 0:
		mo.SwapLimit = uint64(opts.SwapLimit)
	case opts.SwapLimit == 0:
		// Twice the device limit, so tenants' allocations may reach about
		// three times it; within half the host's memory.
		mo.SwapLimit = 2 * limit
		if ram := hostMemory(); ram > 0 {
			mo.SwapLimit = min(mo.SwapLimit, ram/2)
		}
	}
	if mo.SwapLimit > 0 && mo.SwapReserve == 0 && limit < total {
		mo.SwapReserve = defaultSwapReserve(limit, hostMemory())
	}
	// GPUOS_SWAP_PIN=register pins swap memory with cuMemHostRegister over
	// memory the driver maps and faults in itself, instead of cuMemHostAlloc:
	// on the lent H100's host that pinned 9.4 GB/s against 2.5 GB/s (run 8),
	// but as the default it broke TestQuiesceKernelsWhileRemapping (a
	// session's connection reset under evictions, one run in four), so it
	// stays opt-in until that is understood.
	mo.SwapPinRegister = os.Getenv("GPUOS_SWAP_PIN") == "register"
	return mo, nil
}

// defaultSwapReserve is the pinned host memory reserved for swapping when
// the operator caps device memory (gpuos serve --device-memory): a cap says
// tenants are expected to oversubscribe it. Pinning runs at about 2 GB/s per
// thread on an H100 host, 25 times slower than the copies it serves, so
// memory pinned only when an eviction needs it makes swapping run at the
// pinning rate; pinned from the start, in the background, evictions copy at
// once. The device limit's worth holds everything evicted while tenants
// together use twice the limit (a little more: the sink and slabs take
// device memory too); half as much again holds the copies in flight
// (swap-ins whose buffers are not reused yet, evictions begun ahead) and
// uneven use; within a quarter of the host's memory.
func defaultSwapReserve(limit, hostRAM uint64) uint64 {
	r := limit + limit/2
	if hostRAM > 0 {
		r = min(r, hostRAM/4)
	}
	return r
}

// hostMemory is the host's physical memory in bytes, or 0 if unknown.
func hostMemory() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// maxSinkChunk bounds the sink chunk (see sinkChunk).
const maxSinkChunk = 64 << 20

// sinkChunk is the size of the memory manager's sink chunk for a device
// limit: every chunk evicted is replaced by sink mappings of at most this
// size, and cuMemSetAccess costs about 35 µs per mapping, so with the 2 MiB
// granularity a 1 GiB eviction spent ~18 ms remapping (as long as its copy);
// a 64 MiB sink makes it 16 mappings. A 256th of the limit, at least a
// granule and at most 64 MiB.
func sinkChunk(limit, gran uint64) uint64 {
	n := min(limit/256, maxSinkChunk)
	return max(n/gran*gran, gran)
}

// quiesce stops the device work of the session that owns w until resume:
// its queue is held (nothing more of it is issued) once what it has in flight
// completed. It runs under w's lock, maybe for another session's window, so
// it only touches the scheduler. A window with no session (not attached yet,
// or a tenant's shared segments) runs no kernels: nothing to do.
func (h *memHooks) quiesce(w *mem.Window) (func(), error) {
	v, ok := h.windows.Load(w.ID())
	if !ok {
		return func() {}, nil
	}
	return v.(*sessionMem).s.queue.Hold(context.Background())
}

// onSwap audits a move and, after an eviction, starts the pager of every
// session whose work is now held back by it (the eviction keeps their
// queues held until their windows are resident again). It runs with the
// memory manager's eviction lock held: it must not call the manager.
func (h *memHooks) onSwap(ev mem.SwapEvent) {
	if ev.Kind == mem.SwapReserved {
		if h.audit != nil {
			h.audit.Log(audit.Event{Kind: KindSwapReserve, Detail: map[string]any{"bytes": ev.Bytes, "ns": ev.Duration.Nanoseconds()}})
		}
		return
	}
	d := h.d.Load()
	if d == nil {
		return
	}
	kind := KindEvict
	switch ev.Kind {
	case mem.SwapIn:
		kind = KindSwapIn
	case mem.Resident:
		kind = KindResident
	}
	var sessions []uint64
	for _, w := range ev.Windows {
		v, ok := h.windows.Load(w.ID())
		if !ok {
			continue
		}
		sm := v.(*sessionMem)
		sessions = append(sessions, sm.s.id)
		if ev.Kind == mem.SwapOut {
			if _, queued := sm.s.queue.Held(); queued > 0 {
				d.page(sm)
			}
		}
	}
	detail := map[string]any{"bytes": ev.Bytes, "addr": fmt.Sprintf("%#x", uint64(ev.Ptr)), "window": ev.Window,
		"sessions": sessions, "ns": ev.Duration.Nanoseconds()}
	switch ev.Kind {
	case mem.SwapOut:
		detail["for_tenant"] = ev.Why.Tenant
		detail["need"] = ev.Why.Need
		detail["swap_in"] = ev.Why.SwapIn
		detail["copy_ns"] = ev.Copy.Nanoseconds() // device time of the copy
		detail["pin_ns"] = ev.Pin.Nanoseconds()   // pinning host memory it had to do first
		detail["pinned"] = ev.Pinned
		detail["quiesce_ns"] = ev.Quiesce.Nanoseconds() // waiting for the victims' work to stop
		detail["remap_ns"] = ev.Remap.Nanoseconds()     // the sink mapped in its place
	case mem.Resident:
		detail["evicted"] = ev.Evicted
		detail["copy_in_ns"] = ev.CopyIn.Nanoseconds()
	}
	d.audit(audit.Event{Kind: kind, Tenant: ev.Tenant, Detail: detail})
}

// registerWindow lets the hooks find s by its window, once its queue exists.
func (d *Driver) registerWindow(s *Session) {
	d.memHooks.windows.Store(s.window.ID(), &sessionMem{s: s})
}

// unregisterWindow forgets s; its queue is closed and drained.
func (d *Driver) unregisterWindow(s *Session) {
	d.memHooks.windows.Delete(s.window.ID())
}

// afterSubmit runs once a command of s entered its queue: it stamps the
// window for the victim choice and, if the window is not resident, starts
// its pager (the queue is held until then). A concurrent eviction either sees
// the command queued or is seen here: each checks after its own change.
func (s *Session) afterSubmit() {
	s.window.Touch()
	if !s.window.Resident() {
		if v, ok := s.d.memHooks.windows.Load(s.window.ID()); ok {
			s.d.page(v.(*sessionMem))
		}
	}
}

// page makes sm's window resident on a goroutine of its own, unless one
// already does. The pager looks again before it stops, so a kick that came
// while it finished is not lost.
func (d *Driver) page(sm *sessionMem) {
	if !sm.paging.CompareAndSwap(false, true) {
		return
	}
	go func() {
		s := sm.s
		for {
			err := s.window.MakeResident(s.ctx)
			sm.paging.Store(false)
			if err != nil {
				if s.ctx.Err() == nil && !errors.Is(err, mem.ErrWindowClosed) {
					// Its held work could never run: end the session rather
					// than let it hang.
					d.log.Warn("session cannot be made resident", "session", s.id, "err", err)
					d.audit(audit.Event{Kind: audit.KindKill, Tenant: s.tenant.name, Session: s.id,
						Detail: map[string]any{"reason": "cannot be made resident"}}.WithError(err))
					s.kill()
				}
				return
			}
			if s.window.Resident() {
				return
			}
			if _, queued := s.queue.Held(); queued == 0 || !sm.paging.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// swapStats are the session's tenant's swap counters for its SessionStat.
func (s *Session) swapStats() (evictions, swapped uint64) {
	ev, _, sw := s.tenant.mem.SwapStats()
	return ev, sw
}
