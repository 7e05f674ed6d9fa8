package sim

import (
	"testing"
	"time"
)

func TestKernelTime(t *testing.T) {
	c := DefaultCostModel()
	tests := []struct {
		name string
		w    KernelWork
		sms  int
		want time.Duration
	}{
		// Launch overhead only.
		{"empty", KernelWork{Blocks: 1}, 132, 3 * time.Microsecond},
		// One block uses one SM: 128 × 1980 = 253,440 instructions per µs.
		{"one block", KernelWork{Instructions: 253_440, Blocks: 1}, 132, 4 * time.Microsecond},
		// 132 blocks use every SM: 33,454,080 instructions per µs.
		{"full device", KernelWork{Instructions: 33_454_080, Blocks: 1000}, 132, 4 * time.Microsecond},
		// Rounded up to the next nanosecond.
		{"one instruction", KernelWork{Instructions: 1, Blocks: 1}, 132, 3*time.Microsecond + 1},
		// Memory-bound: 2.4 MB at 2.4 TB/s is 1 µs, more than the compute time.
		{"memory bound", KernelWork{Instructions: 1000, GlobalBytesRead: 1_200_000, GlobalBytesWritten: 1_200_000, Blocks: 132}, 132, 4 * time.Microsecond},
		// Blocks = 0 (a launch that failed early) counts as the whole device.
		{"no blocks", KernelWork{Instructions: 33_454_080}, 132, 4 * time.Microsecond},
	}
	for _, tt := range tests {
		if got := c.KernelTime(tt.w, tt.sms); got != tt.want {
			t.Errorf("%s: KernelTime = %v, want %v", tt.name, got, tt.want)
		}
	}
	// Saturates instead of overflowing.
	slow := CostModel{ClockMHz: 1, IssuePerSMPerClock: 1}
	if got := slow.KernelTime(KernelWork{Instructions: ^uint64(0), Blocks: 1}, 1); got != 1<<63-1 {
		t.Errorf("huge KernelTime = %v, want the largest Duration", got)
	}
}

func TestCopyTime(t *testing.T) {
	c := DefaultCostModel()
	tests := []struct {
		kind   CopyKind
		n      uint64
		pinned bool
		want   time.Duration
	}{
		{CopyHtoD, 0, true, 2 * time.Microsecond},
		{CopyHtoD, 55_000, true, 3 * time.Microsecond},  // 55 GB/s
		{CopyDtoH, 55_000, true, 3 * time.Microsecond},  // 55 GB/s
		{CopyHtoD, 6_200, false, 3 * time.Microsecond},  // 6.2 GB/s
		{CopyDtoH, 11_900, false, 3 * time.Microsecond}, // 11.9 GB/s
		{CopyDtoD, 1_500_000, false, 3 * time.Microsecond},
		{CopyMemset, 2_400_000, false, 3 * time.Microsecond},
		{CopyHtoD, 1, true, 2*time.Microsecond + 1},
		{CopyHtoD, 256 << 20, true, 2*time.Microsecond + 4880645}, // ceil(268435456 / 55 = 4880644.65)
	}
	for _, tt := range tests {
		if got := c.CopyTime(tt.kind, tt.n, tt.pinned); got != tt.want {
			t.Errorf("CopyTime(%d, %d, %v) = %v, want %v", tt.kind, tt.n, tt.pinned, got, tt.want)
		}
	}
}

// A zero field takes its default; others are kept.
func TestCostModelDefaults(t *testing.T) {
	c := CostModel{CopyOverhead: time.Second}.withDefaults()
	d := DefaultCostModel()
	if c.CopyOverhead != time.Second || c.LaunchOverhead != d.LaunchOverhead || c.GlobalBytesPerSecond != d.GlobalBytesPerSecond {
		t.Fatalf("withDefaults = %+v", c)
	}
	if got := (CostModel{}).CopyTime(CopyHtoD, 0, true); got != d.CopyOverhead {
		t.Fatalf("zero model CopyTime = %v", got)
	}
	if ns := d.NsPerInstruction(); ns <= 0.5 || ns >= 0.51 {
		t.Fatalf("NsPerInstruction = %v, want one 1980 MHz clock", ns)
	}
}
