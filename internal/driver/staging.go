package driver

import (
	"math/bits"
	"sync"

	"github.com/gpuos/gpuos/internal/backend"
)

// stagingPool hands out page-locked host buffers for copies, so that device
// copies can run asynchronously on the stream while the session goes on. Buffers
// come in power-of-two size classes and are kept for reuse.
type stagingPool struct {
	dev backend.Device

	mu     sync.Mutex
	free   [40][]backend.HostMemory // by size class: 1<<class bytes
	closed bool
}

const (
	minStagingClass = 12 // 4 KiB
	maxPooledBytes  = 64 << 20
)

func newStagingPool(dev backend.Device) *stagingPool { return &stagingPool{dev: dev} }

func stagingClass(n int) int {
	c := bits.Len(uint(n - 1))
	if c < minStagingClass {
		c = minStagingClass
	}
	return c
}

// get returns a buffer of at least n bytes; its Bytes() may be longer.
func (p *stagingPool) get(n int) (backend.HostMemory, error) {
	c := stagingClass(n)
	p.mu.Lock()
	if l := len(p.free[c]); l > 0 {
		h := p.free[c][l-1]
		p.free[c] = p.free[c][:l-1]
		p.mu.Unlock()
		return h, nil
	}
	p.mu.Unlock()
	return p.dev.AllocHost(1 << c)
}

// put returns a buffer to the pool (or frees it when the class holds enough).
func (p *stagingPool) put(h backend.HostMemory) {
	c := stagingClass(len(h.Bytes()))
	p.mu.Lock()
	if !p.closed && (len(p.free[c])+1)<<c <= maxPooledBytes {
		p.free[c] = append(p.free[c], h)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	h.Free()
}

func (p *stagingPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for c := range p.free {
		for _, h := range p.free[c] {
			h.Free()
		}
		p.free[c] = nil
	}
}
