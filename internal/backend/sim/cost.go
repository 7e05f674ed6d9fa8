package sim

import (
	"math/bits"
	"time"
)

// CostModel turns work into simulated device time. Every figure is an integer
// and every cost is computed with integer arithmetic (rounded up to whole
// nanoseconds), so the same work costs the same time on every machine and in
// every run. The defaults are near an H100 SXM measured on the lent machine
// (see RESEARCH.md); a zero field takes its default.
type CostModel struct {
	// LaunchOverhead is the fixed cost of every kernel launch (default 3 µs;
	// an async launch measured 3.4 µs).
	LaunchOverhead time.Duration
	// ClockMHz is the SM clock (default 1980 MHz).
	ClockMHz uint64
	// IssuePerSMPerClock is how many thread-instructions one SM issues per
	// clock (default 128: four schedulers, one 32-thread warp each).
	IssuePerSMPerClock uint64
	// GlobalBytesPerSecond is the bandwidth of kernels' global memory traffic
	// and of memsets (default 2.4 TB/s).
	GlobalBytesPerSecond uint64
	// CopyOverhead is the fixed cost of every copy and memset (default 2 µs).
	CopyOverhead time.Duration
	// Pinned* are the bandwidths of copies to and from AllocHost or
	// RegisterHost memory (default 55 GB/s both ways).
	PinnedHtoDBytesPerSecond uint64
	PinnedDtoHBytesPerSecond uint64
	// Pageable* are the bandwidths of copies to and from other host memory
	// (default 6.2 GB/s host to device, 11.9 GB/s device to host).
	PageableHtoDBytesPerSecond uint64
	PageableDtoHBytesPerSecond uint64
	// DtoDBytesPerSecond is the rate of device-to-device copies, counted in
	// bytes copied (default 1.5 TB/s).
	DtoDBytesPerSecond uint64
}

// DefaultCostModel returns the H100-like defaults.
func DefaultCostModel() CostModel {
	return CostModel{
		LaunchOverhead:             3 * time.Microsecond,
		ClockMHz:                   1980,
		IssuePerSMPerClock:         128,
		GlobalBytesPerSecond:       2_400_000_000_000,
		CopyOverhead:               2 * time.Microsecond,
		PinnedHtoDBytesPerSecond:   55_000_000_000,
		PinnedDtoHBytesPerSecond:   55_000_000_000,
		PageableHtoDBytesPerSecond: 6_200_000_000,
		PageableDtoHBytesPerSecond: 11_900_000_000,
		DtoDBytesPerSecond:         1_500_000_000_000,
	}
}

func (c CostModel) withDefaults() CostModel {
	d := DefaultCostModel()
	if c.LaunchOverhead <= 0 {
		c.LaunchOverhead = d.LaunchOverhead
	}
	if c.ClockMHz == 0 {
		c.ClockMHz = d.ClockMHz
	}
	if c.IssuePerSMPerClock == 0 {
		c.IssuePerSMPerClock = d.IssuePerSMPerClock
	}
	if c.GlobalBytesPerSecond == 0 {
		c.GlobalBytesPerSecond = d.GlobalBytesPerSecond
	}
	if c.CopyOverhead <= 0 {
		c.CopyOverhead = d.CopyOverhead
	}
	if c.PinnedHtoDBytesPerSecond == 0 {
		c.PinnedHtoDBytesPerSecond = d.PinnedHtoDBytesPerSecond
	}
	if c.PinnedDtoHBytesPerSecond == 0 {
		c.PinnedDtoHBytesPerSecond = d.PinnedDtoHBytesPerSecond
	}
	if c.PageableHtoDBytesPerSecond == 0 {
		c.PageableHtoDBytesPerSecond = d.PageableHtoDBytesPerSecond
	}
	if c.PageableDtoHBytesPerSecond == 0 {
		c.PageableDtoHBytesPerSecond = d.PageableDtoHBytesPerSecond
	}
	if c.DtoDBytesPerSecond == 0 {
		c.DtoDBytesPerSecond = d.DtoDBytesPerSecond
	}
	return c
}

// KernelWork is what one launch did, as the interpreter counts it.
type KernelWork struct {
	Instructions       uint64 // thread-instructions executed
	GlobalBytesRead    uint64
	GlobalBytesWritten uint64
	Blocks             uint64 // blocks run
}

// KernelTime is the simulated time of a launch on a device of sms SMs:
// LaunchOverhead plus the longer of its compute time and its memory time
// (a roofline). Compute runs on min(sms, blocks) SMs, since a block runs on
// one SM.
func (c CostModel) KernelTime(w KernelWork, sms int) time.Duration {
	c = c.withDefaults()
	used := uint64(max(sms, 1))
	if w.Blocks > 0 && w.Blocks < used {
		used = w.Blocks
	}
	// ns = instructions / (used × issue × MHz × 1e6) × 1e9.
	compute := ceilDiv(w.Instructions, 1000, satMul(satMul(used, c.IssuePerSMPerClock), c.ClockMHz))
	memory := transferNs(satAdd(w.GlobalBytesRead, w.GlobalBytesWritten), c.GlobalBytesPerSecond)
	return nsDuration(satAdd(uint64(c.LaunchOverhead), max(compute, memory)))
}

// NsPerInstruction is how long one thread takes per instruction (one SM
// clock); the interpreter advances %globaltimer and %clock by it.
func (c CostModel) NsPerInstruction() float64 {
	c = c.withDefaults()
	return 1000 / float64(c.ClockMHz)
}

// CopyKind names a copy direction for CopyTime.
type CopyKind int

// Copy kinds. Memset is a copy-like command on the compute engine.
const (
	CopyHtoD CopyKind = iota
	CopyDtoH
	CopyDtoD
	CopyMemset
)

// CopyTime is the simulated time of an n-byte copy or memset: CopyOverhead
// plus n at the direction's bandwidth (pinned or pageable for host copies).
func (c CostModel) CopyTime(kind CopyKind, n uint64, pinned bool) time.Duration {
	c = c.withDefaults()
	var bw uint64
	switch kind {
	case CopyHtoD:
		bw = c.PageableHtoDBytesPerSecond
		if pinned {
			bw = c.PinnedHtoDBytesPerSecond
		}
	case CopyDtoH:
		bw = c.PageableDtoHBytesPerSecond
		if pinned {
			bw = c.PinnedDtoHBytesPerSecond
		}
	case CopyDtoD:
		bw = c.DtoDBytesPerSecond
	default:
		bw = c.GlobalBytesPerSecond
	}
	return nsDuration(satAdd(uint64(c.CopyOverhead), transferNs(n, bw)))
}

// transferNs is ceil(n × 1e9 / bytesPerSecond).
func transferNs(n, bytesPerSecond uint64) uint64 {
	return ceilDiv(n, 1_000_000_000, bytesPerSecond)
}

// ceilDiv is ceil(a × b / d) in 128-bit arithmetic, saturated to 64 bits.
func ceilDiv(a, b, d uint64) uint64 {
	if d == 0 {
		return 0
	}
	hi, lo := bits.Mul64(a, b)
	if hi >= d {
		return ^uint64(0)
	}
	q, r := bits.Div64(hi, lo, d)
	if r != 0 {
		if q == ^uint64(0) {
			return q
		}
		q++
	}
	return q
}

func satMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return ^uint64(0)
	}
	return lo
}

func satAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return ^uint64(0)
	}
	return s
}

// nsDuration converts nanoseconds to a Duration, saturating.
func nsDuration(ns uint64) time.Duration {
	if ns > uint64(1<<63-1) {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(ns)
}
