package sim

import (
	"container/heap"
	"sync"
	"time"
)

// With Options.ConcurrentKernels the compute engine is a set of SMs, each
// running one block at a time. Kernels reach it in enqueue order, as without
// the option, but a kernel no longer waits for the one before it: its blocks
// take, one after another, the SM that frees first (the lowest-numbered on a
// tie), from its arrival plus LaunchOverhead. A block lasts the kernel's time
// alone divided by its waves, so a kernel alone takes exactly what the
// one-at-a-time engine gives it; kernels that leave SMs free run side by
// side, and a later kernel can finish first, as on a GPU.
//
// Placement is final: a block placed keeps its SM, so a kernel enqueued later
// (of a more urgent stream too) gets only the SM time left. A GPU's block
// scheduler would give a more urgent stream's blocks the next SM to free
// instead of the pending blocks of a kernel enqueued earlier; the sim cannot,
// since work completes (and its times are known) as soon as it is placed.

// smPool is the SMs' state: when each becomes free. Placements are
// serialized by the engine order (a command waits for the one enqueued before
// it on its engine), the mutex only keeps the race detector informed.
type smPool struct {
	mu   sync.Mutex
	free smHeap
}

func newSMPool(n int) *smPool {
	p := &smPool{free: make(smHeap, n)}
	for i := range p.free {
		p.free[i] = smFree{sm: i}
	}
	return p
}

// place runs blocks blocks of dur ns each, none starting before eligible,
// and returns when the last one ends.
func (p *smPool) place(eligible, blocks, dur uint64) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	end := eligible
	n := uint64(len(p.free))
	// Every SM free by eligible: whole waves need no heap.
	if waves := blocks / n; waves > 0 && p.allFreeBy(eligible) {
		for i := range p.free {
			p.free[i].at = eligible + waves*dur
		}
		blocks -= waves * n
		end = eligible + waves*dur
		heap.Init(&p.free)
	}
	for ; blocks > 0; blocks-- {
		f := &p.free[0]
		start := max(f.at, eligible)
		f.at = start + dur
		end = max(end, f.at)
		heap.Fix(&p.free, 0)
	}
	return end
}

func (p *smPool) allFreeBy(t uint64) bool {
	for _, f := range p.free {
		if f.at > t {
			return false
		}
	}
	return true
}

type smFree struct {
	at uint64 // virtual ns when the SM is free
	sm int
}

// smHeap orders SMs by when they free, then by number, so that placement is
// deterministic.
type smHeap []smFree

func (h smHeap) Len() int { return len(h) }
func (h smHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].sm < h[j].sm)
}
func (h smHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *smHeap) Push(x any)   { *h = append(*h, x.(smFree)) }
func (h *smHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// placeKernel sets the end of a command of the compute engine that took
// total ns alone (overhead included) over blocks blocks, starting from c.start.
func (d *Device) placeKernel(c *cmd, total, overhead, blocks uint64) {
	blocks = max(blocks, 1)
	sms := uint64(max(d.opts.SMs, 1))
	waves := (blocks + sms - 1) / sms
	work := total - min(overhead, total)
	dur := (work + waves - 1) / waves
	c.end = d.sms.place(c.start+overhead, blocks, dur)
}

// spread places a memset or device-to-device copy (its end already set as
// if it ran alone) as one block per SM: alone it takes the same time.
func (d *Device) spread(c *cmd, overhead time.Duration) {
	if d.sms == nil {
		return
	}
	d.placeKernel(c, c.end-c.start, uint64(overhead), uint64(max(d.opts.SMs, 1)))
}
