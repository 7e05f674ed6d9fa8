package sim

import (
	"fmt"

	"github.com/gpuos/gpuos/internal/backend"
)

// smGranularity is the step a partition's reserve is rounded up to: 8 SMs,
// the minimum and multiple CUDA's green contexts split an sm_90 device by.
// On a device of fewer than 16 SMs (a test's) it is half the SMs, at least
// one, so that one can still be split; 132 SMs get 8.
const smGranularity = 8

func partitionGranularity(sms int) int { return max(min(smGranularity, sms/2), 1) }

var (
	_ backend.Partitioner = (*Device)(nil)
	_ backend.Partition   = (*partition)(nil)
)

// partition is a backend.Partition: SMs [reserved, SMs) of the concurrent
// kernels engine. Partitions of a device overlap (the same reserve gives the
// same SMs); what they share is only that none of them uses the reserved SMs.
type partition struct {
	d   *Device
	sms smRange

	// Guarded by d.qmu.
	streams int // live streams created in it
	closed  bool
}

// Partition returns a partition whose streams' kernels, memsets and
// device-to-device copies run only on SMs [reserved, SMs), reserved being
// reserve rounded up to the granularity (8 SMs; see smGranularity). A kernel
// there takes its time on that many SMs: alone, a kernel of many blocks
// takes SMs/partition-SMs times as long as on the whole device. Streams
// created by Device.NewStream keep every SM, the reserved ones included.
//
// Only the concurrent kernels engine (Options.ConcurrentKernels) has SMs to
// partition: without it the error matches backend.ErrUnsupported. A reserve
// that is not positive, or that leaves no SM once rounded, matches
// backend.ErrInvalidArgument.
func (d *Device) Partition(reserve int) (backend.Partition, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.sms == nil {
		return nil, fmt.Errorf("partition: kernels run one at a time (no Options.ConcurrentKernels): %w", backend.ErrUnsupported)
	}
	n := max(d.opts.SMs, 1)
	if reserve <= 0 {
		return nil, fmt.Errorf("partition: reserve %d SMs: not positive: %w", reserve, backend.ErrInvalidArgument)
	}
	if reserve >= n {
		return nil, fmt.Errorf("partition: reserve %d SMs: leaves none of %d: %w", reserve, n, backend.ErrInvalidArgument)
	}
	g := partitionGranularity(n)
	reserved := (reserve + g - 1) / g * g
	if reserved >= n {
		return nil, fmt.Errorf("partition: reserve %d SMs: rounded to %d (a multiple of %d), leaves none of %d: %w",
			reserve, reserved, g, n, backend.ErrInvalidArgument)
	}
	return &partition{d: d, sms: smRange{reserved, n}}, nil
}

// SMs is the number of SMs the partition's streams run on.
func (p *partition) SMs() int { return p.sms.n() }

// Reserved is the number of SMs left out: SMs [0, Reserved).
func (p *partition) Reserved() int { return p.sms.lo }

// NewStream creates a stream in the partition; priority as Device.NewStream.
// After Close the error matches ErrInvalidHandle.
func (p *partition) NewStream(priority int) (backend.Stream, error) {
	return p.d.newStream(priority, p)
}

// Close releases the partition. Its streams must have been destroyed (else
// the error matches backend.ErrInvalidArgument); a second Close matches
// ErrInvalidHandle.
func (p *partition) Close() error {
	d := p.d
	if err := d.check(); err != nil {
		return err
	}
	d.qmu.Lock()
	defer d.qmu.Unlock()
	switch {
	case p.closed:
		return fmt.Errorf("close partition: already closed: %w", ErrInvalidHandle)
	case p.streams > 0:
		return fmt.Errorf("close partition: %d streams of it not destroyed: %w", p.streams, backend.ErrInvalidArgument)
	}
	p.closed = true
	return nil
}
