package cuda

import (
	"fmt"
	"sync"

	"github.com/gpuos/gpuos/internal/backend"
)

// partition is a green context: a subset of the device's SMs whose streams'
// kernels run only there. It is never made current; its streams are used
// with the primary context current, like every other stream, since a green
// context's streams belong to the primary context (its memory, modules and
// events work on them: run 18a).
type partition struct {
	dev           *Device
	g             hGreenCtx
	sms, reserved int
	mu            sync.Mutex // the driver does not serialize calls on one green context
	closed        bool
	streams       int // live streams created in it
}

var _ backend.Partitioner = (*Device)(nil)

// Partition creates a green context on the device's SMs less at least
// reserve of them (cuDevSmResourceSplitByCount rounds up: 8 SMs on sm_90).
// A driver without green contexts (before 12.4) gives ErrUnsupported.
func (d *Device) Partition(reserve int) (backend.Partition, error) {
	if reserve <= 0 || reserve >= d.info.SMCount {
		return nil, fmt.Errorf("partition: reserve %d of %d SMs: %w", reserve, d.info.SMCount, backend.ErrInvalidArgument)
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.live.exit()
	g, sms, reserved, r := d.c.partition(reserve)
	if r != 0 {
		return nil, d.fail(fmt.Sprintf("partition: reserve %d SMs", reserve), r)
	}
	p := &partition{dev: d, g: g, sms: sms, reserved: reserved}
	d.mu.Lock()
	d.partitions[p] = struct{}{}
	d.mu.Unlock()
	return p, nil
}

func (p *partition) SMs() int      { return p.sms }
func (p *partition) Reserved() int { return p.reserved }

// NewStream creates a stream of the green context (cuGreenCtxStreamCreate),
// non-blocking, with the priority clamped as Device.NewStream does.
func (p *partition) NewStream(priority int) (backend.Stream, error) {
	d := p.dev
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.live.exit()
	priority = min(max(priority, d.greatest), d.least)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("partition was closed: %w", ErrInvalidHandle)
	}
	h, r := d.c.partitionStream(p.g, priority)
	if r == 0 {
		p.streams++
	}
	p.mu.Unlock()
	if r != 0 {
		return nil, d.fail("create stream in partition", r)
	}
	return d.addStream(h, priority, p), nil
}

// streamGone is called once a stream of the partition is destroyed.
func (p *partition) streamGone() {
	p.mu.Lock()
	p.streams--
	p.mu.Unlock()
}

// Close destroys the green context; its streams must have been destroyed.
func (p *partition) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("partition already closed: %w", ErrInvalidHandle)
	}
	if p.streams > 0 {
		return fmt.Errorf("close partition: %d streams still live: %w", p.streams, backend.ErrInvalidArgument)
	}
	d := p.dev
	if err := d.enter(); err != nil {
		return err
	}
	defer d.live.exit()
	p.closed = true
	d.mu.Lock()
	delete(d.partitions, p)
	d.mu.Unlock()
	return d.fail("destroy partition", d.c.partitionDestroy(p.g))
}
