package client

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/wire"
)

// stager is the client's side of a session's staging area. A slot is free
// when no copy of this process holds it and the driver has completed the
// generation last sent through it.
type stager struct {
	shm     *ring.Shm
	st      *ring.Staging
	slot    int
	copiers int

	ops    sync.RWMutex // copies hold it shared; close exclusively, to unmap
	closed bool         // under ops

	mu   sync.Mutex // guards gen, busy and next
	gen  []uint32   // generation last sent through each slot
	busy []bool     // held by a copy: being filled, or read out
	next int        // where the search for a free slot starts
}

// slots is a range of a staging area's slots, [lo, hi): a copy's workers
// each take slots from their own range, so that none waits for a slot only
// another can free.
type slots struct{ lo, hi int }

// tryAcquire takes a free slot in r and the generation to send with it.
func (g *stager) tryAcquire(r slots) (slot int, gen uint32, ok bool) {
	g.st.View(func(completed func(int) (uint32, bool)) {
		g.mu.Lock()
		defer g.mu.Unlock()
		n := r.hi - r.lo
		start := g.next
		if start < r.lo || start >= r.hi {
			start = r.lo
		}
		for i := range n {
			j := r.lo + (start-r.lo+i)%n
			if g.busy[j] {
				continue
			}
			if done, _ := completed(j); done != g.gen[j] {
				continue // the device copy of its last use is not done
			}
			g.busy[j] = true
			g.gen[j]++
			g.next = j + 1
			slot, gen, ok = j, g.gen[j], true
			return
		}
	})
	return slot, gen, ok
}

// wait waits until some slot of r may have become free. Lock order: the
// staging area's, then mu (see ring.Staging.View).
func (g *stager) wait(ctx context.Context, r slots) error {
	return g.st.Wait(ctx, func(completed func(int) (uint32, bool)) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for j := r.lo; j < r.hi; j++ {
			if done, _ := completed(j); !g.busy[j] && done == g.gen[j] {
				return true
			}
		}
		return false
	})
}

// settle gives back a slot whose request failed. If the driver never queued
// the copy (it answered with an error, and did not complete the generation),
// the generation is taken back; if the answer is unknown (the wait was cut
// short), the slot stays out of use until the driver completes it.
func (g *stager) settle(slot int, gen uint32, answered bool) {
	err := g.st.View(func(completed func(int) (uint32, bool)) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.gen[slot] != gen {
			return // completed, and taken by another copy since
		}
		if done, _ := completed(slot); answered && done != gen {
			g.gen[slot]--
		}
		g.busy[slot] = false
	})
	if err != nil { // closed: nothing will use the slot again
		g.release(slot)
	}
}

// release gives back a slot whose request was sent (HtoD) or whose data was
// read out (DtoH).
func (g *stager) release(slot int) {
	g.mu.Lock()
	g.busy[slot] = false
	g.mu.Unlock()
}

// close ends waits and unmaps the area once no copy uses it.
func (g *stager) close() {
	g.st.Close()
	g.ops.Lock()
	defer g.ops.Unlock()
	if !g.closed {
		g.closed = true
		g.shm.Close()
	}
}

// memmove copies src to dst with up to copiers goroutines.
func memmove(dst, src []byte, copiers int) {
	const minPart = 512 << 10
	parts := min(copiers, len(src)/minPart)
	if parts <= 1 {
		copy(dst, src)
		return
	}
	var wg sync.WaitGroup
	per := (len(src)/parts + 63) &^ 63
	for off := 0; off < len(src); off += per {
		end := min(off+per, len(src))
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(dst[off:end], src[off:end])
		}()
	}
	wg.Wait()
}

// stagedCall is a staged copy in flight.
type stagedCall struct {
	call   *wire.Call
	slot   int
	gen    uint32
	off, n int
	dtoh   bool
}

// pipeline runs chunks of one staged copy, one after the other: for each it
// takes a slot of its range (collecting its own earlier calls first when
// none is free, so that it never waits on slots only it can free), puts the
// data in (HtoD), and starts the request; collect handles each reply in
// order, and takes the data out (DtoH). A copy runs one pipeline, or several
// at once on disjoint slots and chunks (stagedCopy).
type pipeline struct {
	s       *Session
	g       *stager
	ctx     context.Context
	host    []byte
	dir     v1.Dir
	dev     Ref
	st      *Stream
	r       slots
	copiers int // goroutines for one chunk's memmove
	q       []stagedCall
	err     error
}

// collect waits for the oldest call in flight.
func (p *pipeline) collect() {
	c := p.q[0]
	p.q = p.q[1:]
	err := c.call.Wait(p.ctx, nil)
	switch {
	case err != nil:
		p.g.settle(c.slot, c.gen, c.call.Answered())
		if p.err == nil {
			p.err = err
		}
	case c.dtoh:
		if p.err == nil {
			memmove(p.host[c.off:c.off+c.n], p.g.st.Slot(c.slot)[:c.n], p.copiers)
		}
		p.g.release(c.slot)
	}
}

// acquire takes a slot, collecting this pipeline's own calls while none is
// free.
func (p *pipeline) acquire() (int, uint32, bool) {
	for {
		if slot, gen, ok := p.g.tryAcquire(p.r); ok {
			return slot, gen, true
		}
		if len(p.q) > 0 {
			p.collect()
			if p.err != nil {
				return 0, 0, false
			}
			continue
		}
		if err := p.g.wait(p.ctx, p.r); err != nil {
			p.err = err
			return 0, 0, false
		}
	}
}

// chunk starts the copy of host[off:off+n]; wait asks the driver to answer
// once it has completed on the device (and report the session's deferred
// error), rather than once it is queued.
func (p *pipeline) chunk(off, n int, wait bool) {
	g := p.g
	slot, gen, ok := p.acquire()
	if !ok {
		return
	}
	dtoh := p.dir == v1.DirDtoH
	if !dtoh {
		memmove(g.st.Slot(slot)[:n], p.host[off:off+n], p.copiers)
	}
	req := &v1.StagedCopy{Stream: streamHandle(p.st), Dir: p.dir, Dev: p.dev.wire(uint64(off)),
		Offset: g.st.Offset(slot), Size: uint64(n), Gen: gen, Wait: dtoh || wait}
	call, err := p.s.rpc.Start(p.ctx, req)
	if err != nil {
		g.settle(slot, gen, true) // nothing was sent
		p.err = err
		return
	}
	if !dtoh {
		g.release(slot) // free again once the driver completes gen
	}
	p.q = append(p.q, stagedCall{call: call, slot: slot, gen: gen, off: off, n: n, dtoh: dtoh})
}

// drain collects every call still in flight.
func (p *pipeline) drain() {
	for len(p.q) > 0 {
		p.collect()
	}
}

// stagedCopy copies host through the staging area in chunks of a slot. With
// several copiers (and chunks), all chunks but the last are spread over that
// many pipelines at once, each on its own slots: the copy in this process
// (the bottleneck for pageable memory: one thread copies a few GB/s, the
// device many times that) then runs on several CPUs. The last chunk follows
// alone, so that its request comes after every other one: with wait (and
// always for DtoH) the driver answers it once the copy has completed, which
// by stream order covers the chunks before it.
func (s *Session) stagedCopy(ctx context.Context, g *stager, dir v1.Dir, dev Ref, host []byte, st *Stream, wait bool) error {
	g.ops.RLock()
	defer g.ops.RUnlock()
	if g.closed {
		return fmt.Errorf("staged copy: %w", s.rpc.Err())
	}
	nslots := len(g.gen)
	chunks := (len(host) + g.slot - 1) / g.slot
	workers := min(g.copiers, chunks-1, nslots)
	base := pipeline{s: s, g: g, ctx: ctx, host: host, dir: dir, dev: dev, st: st, r: slots{0, nslots}, copiers: 1}
	last := (chunks - 1) * g.slot
	if workers >= 2 {
		var next atomic.Int64
		var failed atomic.Bool
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := base
				p.r = slots{w * nslots / workers, (w + 1) * nslots / workers}
				for !failed.Load() {
					i := int(next.Add(1) - 1)
					if i >= chunks-1 {
						break
					}
					off := i * g.slot
					p.chunk(off, min(len(host)-off, g.slot), false)
					if p.err != nil {
						failed.Store(true)
					}
				}
				p.drain()
				errs[w] = p.err
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	} else {
		last = 0
	}
	// The rest (all of it with one pipeline), the last chunk last.
	p := base
	p.copiers = g.copiers
	for off := last; off < len(host) && p.err == nil; off += g.slot {
		n := min(len(host)-off, g.slot)
		p.chunk(off, n, wait && off+n == len(host))
	}
	p.drain()
	return p.err
}
