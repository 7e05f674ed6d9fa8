package client

import (
	"context"
	"fmt"
	"sync"

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

// tryAcquire takes a free slot and the generation to send with it.
func (g *stager) tryAcquire() (slot int, gen uint32, ok bool) {
	g.st.View(func(completed func(int) (uint32, bool)) {
		g.mu.Lock()
		defer g.mu.Unlock()
		n := len(g.gen)
		for i := range n {
			j := (g.next + i) % n
			if g.busy[j] {
				continue
			}
			if done, _ := completed(j); done != g.gen[j] {
				continue // the device copy of its last use is not done
			}
			g.busy[j] = true
			g.gen[j]++
			g.next = (j + 1) % n
			slot, gen, ok = j, g.gen[j], true
			return
		}
	})
	return slot, gen, ok
}

// wait waits until some slot may have become free. Lock order: the staging
// area's, then mu (see ring.Staging.View).
func (g *stager) wait(ctx context.Context) error {
	return g.st.Wait(ctx, func(completed func(int) (uint32, bool)) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for j := range g.gen {
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

// memmove copies src to dst with the stager's copiers.
func (g *stager) memmove(dst, src []byte) {
	const minPart = 1 << 20
	parts := min(g.copiers, len(src)/minPart)
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
	call      *wire.Call
	slot      int
	gen       uint32
	off, n    int
	dtoh      bool
	finalWait bool
}

// pipeline runs one staged copy of n bytes chunk by chunk: for each chunk it
// takes a slot (collecting its own earlier calls first when none is free, so
// that a copy never waits on slots only it can free), lets fill put the data
// in (HtoD), and starts the request; finish handles each reply in order.
type pipeline struct {
	s   *Session
	g   *stager
	ctx context.Context
	q   []stagedCall
	err error
}

// collect waits for the oldest call in flight.
func (p *pipeline) collect(out []byte) {
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
			p.g.memmove(out[c.off:c.off+c.n], p.g.st.Slot(c.slot)[:c.n])
		}
		p.g.release(c.slot)
	}
}

// acquire takes a slot, collecting this copy's own calls while none is free.
func (p *pipeline) acquire(out []byte) (int, uint32, bool) {
	for {
		if slot, gen, ok := p.g.tryAcquire(); ok {
			return slot, gen, true
		}
		if len(p.q) > 0 {
			p.collect(out)
			if p.err != nil {
				return 0, 0, false
			}
			continue
		}
		if err := p.g.wait(p.ctx); err != nil {
			p.err = err
			return 0, 0, false
		}
	}
}

func (s *Session) stagedCopy(ctx context.Context, g *stager, dir v1.Dir, dev Ref, host []byte, st *Stream, wait bool) error {
	g.ops.RLock()
	defer g.ops.RUnlock()
	if g.closed {
		return fmt.Errorf("staged copy: %w", s.rpc.Err())
	}
	p := &pipeline{s: s, g: g, ctx: ctx}
	dtoh := dir == v1.DirDtoH
	for off := 0; off < len(host) && p.err == nil; off += g.slot {
		n := min(len(host)-off, g.slot)
		slot, gen, ok := p.acquire(host)
		if !ok {
			break
		}
		if !dtoh {
			g.memmove(g.st.Slot(slot)[:n], host[off:off+n])
		}
		last := off+n == len(host)
		req := &v1.StagedCopy{Stream: streamHandle(st), Dir: dir, Dev: dev.wire(uint64(off)),
			Offset: g.st.Offset(slot), Size: uint64(n), Gen: gen, Wait: dtoh || (wait && last)}
		call, err := s.rpc.Start(ctx, req)
		if err != nil {
			g.settle(slot, gen, true) // nothing was sent
			p.err = err
			break
		}
		if !dtoh {
			g.release(slot) // free again once the driver completes gen
		}
		p.q = append(p.q, stagedCall{call: call, slot: slot, gen: gen, off: off, n: n, dtoh: dtoh})
	}
	for len(p.q) > 0 {
		p.collect(host)
	}
	return p.err
}
