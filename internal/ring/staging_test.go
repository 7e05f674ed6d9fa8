package ring

import (
	"context"
	"errors"
	"testing"
	"time"
)

func newStagingPair(t *testing.T, slots, slotSize int) (driver, client *Staging) {
	t.Helper()
	a, b := twoMappings(t, StagingBytes(slots, slotSize))
	if err := InitStaging(a.Bytes(), slots, slotSize); err != nil {
		t.Fatal(err)
	}
	d, err := NewStaging(a.Bytes(), slots, slotSize, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewStaging(b.Bytes(), slots, slotSize, Options{Spin: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); c.Close() })
	return d, c
}

func TestStagingLocate(t *testing.T) {
	d, _ := newStagingPair(t, 4, 8192)
	tests := []struct {
		off, n   uint64
		slot     int
		mustFail bool
	}{
		{0, 1, 0, false},
		{0, 8192, 0, false},
		{8192, 8192, 1, false},
		{3*8192 + 100, 8000, 3, false},
		{0, 0, 0, true},                 // empty
		{0, 8193, 0, true},              // more than a slot
		{8000, 400, 0, true},            // crosses a slot's end
		{4 * 8192, 1, 0, true},          // past the area
		{4*8192 - 1, 2, 0, true},        // runs past the area
		{^uint64(0) - 10, 100, 0, true}, // wraps
		{1, ^uint64(0), 0, true},
	}
	for _, tt := range tests {
		slot, err := d.Locate(tt.off, tt.n)
		if tt.mustFail {
			if !errors.Is(err, ErrLayout) {
				t.Errorf("Locate(%d, %d) = %d, %v; want ErrLayout", tt.off, tt.n, slot, err)
			}
			continue
		}
		if err != nil || slot != tt.slot {
			t.Errorf("Locate(%d, %d) = %d, %v; want slot %d", tt.off, tt.n, slot, err, tt.slot)
		}
	}
}

func TestStagingCompletion(t *testing.T) {
	d, c := newStagingPair(t, 8, MinSlotSize)
	copy(c.Slot(3), "payload")
	if got := string(d.Slot(3)[:7]); got != "payload" {
		t.Fatalf("slot seen by the other side: %q", got)
	}
	if &d.Data()[d.Offset(3)] != &d.Slot(3)[0] {
		t.Fatal("Offset and Slot disagree")
	}
	errc := make(chan error)
	go func() {
		errc <- c.Wait(context.Background(), func(done func(int) (uint32, bool)) bool {
			g, failed := done(3)
			return g == 5 && failed
		})
	}()
	d.Complete(3, 4, false)
	d.Complete(3, 5, true)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if g, failed := c.Completed(3); g != 5 || !failed {
		t.Fatalf("Completed(3) = %d, %v", g, failed)
	}
	if g, failed := c.Completed(2); g != 0 || failed {
		t.Fatalf("Completed(2) = %d, %v", g, failed)
	}
	var seen uint32
	if err := c.View(func(done func(int) (uint32, bool)) { seen, _ = done(3) }); err != nil || seen != 5 {
		t.Fatalf("View saw generation %d, %v", seen, err)
	}
}

func TestStagingWaitEnds(t *testing.T) {
	_, c := newStagingPair(t, 1, MinSlotSize)
	never := func(func(int) (uint32, bool)) bool { return false }
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := c.Wait(ctx, never); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait past its context: %v", err)
	}
	errc := make(chan error)
	go func() { errc <- c.Wait(context.Background(), never) }()
	c.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("wait on a closed area: %v, want ErrClosed", err)
	}
	if err := c.View(func(func(int) (uint32, bool)) { t.Error("View called fn on a closed area") }); !errors.Is(err, ErrClosed) {
		t.Fatalf("View on a closed area: %v", err)
	}
	c.Complete(0, 1, false) // no-op, no crash
	if _, failed := c.Completed(0); !failed {
		t.Fatal("Completed on a closed area should report failure")
	}
}

func TestStagingLayoutChecks(t *testing.T) {
	mem := make([]byte, StagingBytes(2, MinSlotSize))
	for _, tt := range []struct{ slots, size int }{{0, MinSlotSize}, {MaxSlots + 1, MinSlotSize}, {2, 5000}, {2, 2 * MinSlotSize}} {
		if err := InitStaging(mem, tt.slots, tt.size); !errors.Is(err, ErrLayout) {
			t.Errorf("InitStaging(%d, %d) = %v", tt.slots, tt.size, err)
		}
	}
	if _, err := NewStaging(mem, 2, MinSlotSize, Options{}); !errors.Is(err, ErrLayout) {
		t.Errorf("attach before init: %v", err)
	}
	InitStaging(mem, 2, MinSlotSize)
	if _, err := NewStaging(mem, 1, MinSlotSize, Options{}); !errors.Is(err, ErrLayout) {
		t.Errorf("attach with another geometry: %v", err)
	}
}

// TestStagingCompleteMovesForward: a slot's word takes only generations after
// the one it holds, so a late duplicate report of an earlier copy cannot hide
// a later one's, and the first report of a copy stands.
func TestStagingCompleteMovesForward(t *testing.T) {
	for _, tt := range []struct {
		name       string
		reports    []uint32 // generations completed, in this order
		failedAt   int      // index of the report made as failed; -1: none
		have       uint32
		haveFailed bool
	}{
		{"in order", []uint32{1, 2, 3}, -1, 3, false},
		{"late duplicate", []uint32{1, 2, 1}, -1, 2, false},
		{"duplicate failure after success", []uint32{1, 1}, 1, 1, false},
		{"failure first stands", []uint32{2, 2}, 0, 2, true},
		{"wraps around", []uint32{0x7000_0000, 0xE000_0000, 0xFFFF_FFFF, 0, 1}, -1, 1, false},
		{"older than the wrap", []uint32{0x7000_0000, 0xE000_0000, 0xFFFF_FFFF, 2, 0xFFFF_FFFE}, -1, 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, c := newStagingPair(t, 1, MinSlotSize)
			for i, g := range tt.reports {
				d.Complete(0, g, i == tt.failedAt)
			}
			if g, failed := c.Completed(0); g != tt.have || failed != tt.haveFailed {
				t.Errorf("Completed(0) = %d, %v; want %d, %v", g, failed, tt.have, tt.haveFailed)
			}
		})
	}
}
