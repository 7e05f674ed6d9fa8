package sim

import (
	"fmt"
	"sync"
	"time"
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
// a GPU.
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
	mu   sync.Mutex
	busy [][]span // per SM, sorted, disjoint
}

type span struct{ from, to uint64 }

func newSMPool(n int) *smPool { return &smPool{busy: make([][]span, max(n, 1))} }

// place runs blocks blocks of dur ns each, none starting before eligible,
// and returns when the last one ends. Nothing can arrive before floor any
// more (the host floor only rises, and placements come in enqueue order), so
// intervals that end by then are forgotten.
func (p *smPool) place(floor, eligible, blocks, dur uint64) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	idleFrom := uint64(0) // when every SM is idle for good
	for i, b := range p.busy {
		k := 0
		for k < len(b) && b[k].to <= floor {
			k++
		}
		p.busy[i] = b[k:]
		if n := len(p.busy[i]); n > 0 {
			idleFrom = max(idleFrom, p.busy[i][n-1].to)
		}
	}
	end := eligible
	n := uint64(len(p.busy))
	if waves := blocks / n; waves > 0 && idleFrom <= eligible {
		// The device is idle from eligible on: whole waves side by side.
		for i := range p.busy {
			p.busy[i] = append(p.busy[i], span{eligible, eligible + waves*dur})
		}
		blocks -= waves * n
		end = eligible + waves*dur
	}
	for ; blocks > 0; blocks-- {
		best, bestAt, bestIdle := 0, ^uint64(0), uint64(0)
		for i, b := range p.busy {
			at, idle := fit(b, eligible, dur)
			if at < bestAt || at == bestAt && idle > bestIdle {
				best, bestAt, bestIdle = i, at, idle
			}
		}
		if DebugPlace && blocks == 1 && dur == 21000 && bestAt > eligible {
			fmt.Printf("HP eligible %d starts %d floor %d\n", eligible, bestAt, floor)
			for i, b := range p.busy {
				fmt.Printf("  SM%d: %v\n", i, b)
			}
		}
		p.busy[best] = insert(p.busy[best], span{bestAt, bestAt + dur})
		end = max(end, bestAt+dur)
	}
	return end
}

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
// total ns alone (overhead included) over blocks blocks, starting from c.start.
func (d *Device) placeKernel(c *cmd, total, overhead, blocks uint64) {
	blocks = max(blocks, 1)
	sms := uint64(max(d.opts.SMs, 1))
	waves := (blocks + sms - 1) / sms
	work := total - min(overhead, total)
	dur := (work + waves - 1) / waves
	c.end = d.sms.place(c.floor, c.start+overhead, blocks, dur)
}

// spread places a memset or device-to-device copy (its end already set as
// if it ran alone) as one block per SM: alone it takes the same time.
func (d *Device) spread(c *cmd, overhead time.Duration) {
	if d.sms == nil {
		return
	}
	d.placeKernel(c, c.end-c.start, uint64(overhead), uint64(max(d.opts.SMs, 1)))
}

var DebugPlace bool
