package sim

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// With Options.ConcurrentKernels the compute engine is a set of SMs, each
// running one block at a time. Kernels reach it in enqueue order, as without
// the option, but a kernel no longer waits for the one before it: each of its
// blocks takes the earliest time, from its arrival plus LaunchOverhead, at
// which some SM is idle long enough for it, gaps between blocks placed before
// included (on a tie, the SM that became idle last, then the lowest-numbered). A block lasts the kernel's
// time alone divided by its waves, so a kernel alone takes what the
// one-at-a-time engine gives it (to a nanosecond per wave); kernels that
// leave SMs free run side by side, and a later kernel can finish first, as on
// a GPU. A stream of a partition (partition.go) places its blocks on the
// partition's SMs only, and its kernels' time alone is their time on those.
//
// Placement is final: a block placed keeps its SM, so a kernel enqueued later
// (of a more urgent stream too) gets only the SM time left. A GPU's block
// scheduler would give a more urgent stream's blocks the next SM to free
// ahead of the pending blocks of a kernel enqueued earlier; the sim cannot,
// since work completes (and its times are known) as soon as it is placed.

// smPool is the SMs' busy intervals. Placements are serialized by the engine
// order (a command waits for the one enqueued before it on its engine); the
// mutex only keeps the race detector informed.
type smPool struct {
	mu    sync.Mutex
	busy  [][]span // per SM, sorted, disjoint
	trace atomic.Pointer[func(Placement)]
}

type span struct{ from, to uint64 }

func newSMPool(n int) *smPool { return &smPool{busy: make([][]span, max(n, 1))} }

// place runs blocks blocks of dur ns each on the SMs of r, none starting
// before eligible, and returns when the first one starts and the last one
// ends. Nothing can arrive before floor any more (the host floor only rises,
// and placements come in enqueue order), so intervals that end by then are
// forgotten, on every SM.
func (p *smPool) place(floor, eligible, blocks, dur uint64, r smRange) (start, end uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	idleFrom := uint64(0) // when every SM of r is idle for good
	for i, b := range p.busy {
		k := 0
		for k < len(b) && b[k].to <= floor {
			k++
		}
		p.busy[i] = b[k:]
		if n := len(p.busy[i]); n > 0 && r.has(i) {
			idleFrom = max(idleFrom, p.busy[i][n-1].to)
		}
	}
	start, end = ^uint64(0), eligible
	sms := p.busy[r.lo:r.hi]
	n := uint64(len(sms))
	if waves := blocks / n; waves > 0 && idleFrom <= eligible {
		// The SMs are idle from eligible on: whole waves side by side.
		for i := range sms {
			sms[i] = append(sms[i], span{eligible, eligible + waves*dur})
		}
		blocks -= waves * n
		start, end = eligible, eligible+waves*dur
	}
	for ; blocks > 0; blocks-- {
		best, bestAt, bestIdle := 0, ^uint64(0), uint64(0)
		for i, b := range sms {
			at, idle := fit(b, eligible, dur)
			if at < bestAt || at == bestAt && idle > bestIdle {
				best, bestAt, bestIdle = i, at, idle
			}
		}
		sms[best] = insert(sms[best], span{bestAt, bestAt + dur})
		start, end = min(start, bestAt), max(end, bestAt+dur)
	}
	return min(start, end), end
}

// smRange is the SMs [lo, hi) a stream's blocks may run on: all of them, or
// a partition's.
type smRange struct{ lo, hi int }

func (r smRange) n() int         { return r.hi - r.lo }
func (r smRange) has(i int) bool { return r.lo <= i && i < r.hi }

// fit is the earliest start at or after from of an interval of length dur
// that overlaps none of the sorted intervals b, and when the SM became idle
// before it. Among SMs where a block starts equally early, place takes the
// one that became idle last: an SM idle for long is left for work that may
// arrive, in virtual time, before this block — on a GPU such work would
// already be running there.
func fit(b []span, from, dur uint64) (at, idleSince uint64) {
	at = from
	for _, s := range b {
		if s.to <= at {
			idleSince = s.to
			continue
		}
		if at+dur <= s.from {
			return at, idleSince
		}
		at, idleSince = s.to, s.to
	}
	return at, idleSince
}

// insert adds s to the sorted intervals b.
func insert(b []span, s span) []span {
	i := len(b)
	for i > 0 && b[i-1].from > s.from {
		i--
	}
	b = append(b, span{})
	copy(b[i+1:], b[i:])
	b[i] = s
	return b
}

// placeKernel sets the end of a command of the compute engine that took
// total ns alone on the SMs of r (overhead included) over blocks blocks,
// starting from c.start.
func (d *Device) placeKernel(c *cmd, total, overhead, blocks uint64, r smRange) {
	blocks = max(blocks, 1)
	sms := uint64(r.n())
	waves := (blocks + sms - 1) / sms
	work := total - min(overhead, total)
	dur := (work + waves - 1) / waves
	var start uint64
	start, c.end = d.sms.place(c.floor, c.start+overhead, blocks, dur, r)
	if f := d.sms.trace.Load(); f != nil {
		var fn backend.Function
		if c.fn != nil {
			fn = c.fn
		}
		(*f)(Placement{Function: fn, Blocks: int(blocks), Enqueued: nsDuration(c.floor), Ready: nsDuration(c.start),
			Start: nsDuration(start), End: nsDuration(c.end)})
	}
}

// Placement is where the compute engine put one command (with
// Options.ConcurrentKernels): what a profiler's timeline shows of it.
type Placement struct {
	Function backend.Function // the kernel; nil for a memset or a device-to-device copy
	Blocks   int
	// Enqueued is the host's device time (HostTime) when the command was
	// enqueued: the earliest the device could have started it.
	Enqueued time.Duration
	// Ready is when its stream let it start: Enqueued, or later for the
	// stream's previous command and the events it waits for.
	Ready time.Duration
	// Start is when its first block began on an SM: Ready plus the launch
	// overhead, or later if no SM was free. End is when its last block ended.
	Start, End time.Duration
}

// TracePlacements calls f with each command the compute engine places from
// now on, in placement order, on the goroutine of the command's stream
// before the command completes (so a host that waited for the command sees
// its call); nil stops it. f must not block or call the device. A
// placement's times do not depend on when the host observes anything after
// the command was enqueued, so End - Enqueued is the command's queueing and
// running on the device alone. Without ConcurrentKernels there are no
// placements: the error matches backend.ErrUnsupported.
func (d *Device) TracePlacements(f func(Placement)) error {
	if d.sms == nil {
		return fmt.Errorf("trace placements: kernels run one at a time (no Options.ConcurrentKernels): %w", backend.ErrUnsupported)
	}
	if f == nil {
		d.sms.trace.Store(nil)
	} else {
		d.sms.trace.Store(&f)
	}
	return nil
}

// spread places a memset or device-to-device copy (its end already set as
// if it ran alone) as one block per SM of r: alone it takes the same time.
func (d *Device) spread(c *cmd, overhead time.Duration, r smRange) {
	if d.sms == nil {
		return
	}
	d.placeKernel(c, c.end-c.start, uint64(overhead), uint64(r.n()), r)
}
