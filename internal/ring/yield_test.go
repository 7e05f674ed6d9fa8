//go:build linux

package ring

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestNoYield: with $GPUOS_RING_YIELD=0 (yieldOff) the poll loops spin
// without giving up the CPU, and every spin setting still delivers
// everything.
func TestNoYield(t *testing.T) {
	defer func(old bool) { yieldOff = old }(yieldOff)
	yieldOff = true
	checkWaitModes(t)
}

// TestOptionsYield: a poller calls Options.Yield between its looks, both
// waiting to read and watching the ring, and what it waits for still
// arrives.
func TestOptionsYield(t *testing.T) {
	var yields atomic.Int64
	opts := Options{Spin: time.Hour, Yield: func() { yields.Add(1); Yield() }}
	p, c := pair(t, MinSize, opts)
	if c.Watch(time.Millisecond, 0, func() bool { return false }) {
		t.Fatal("Watch saw a request on an empty ring")
	}
	if yields.Load() == 0 {
		t.Fatal("Watch polled an empty ring for 1 ms without calling Options.Yield")
	}
	yields.Store(0)
	go func() {
		time.Sleep(2 * time.Millisecond)
		p.Write([]byte("late"))
	}()
	if m, err := c.Read(nil); err != nil || string(m) != "late" {
		t.Fatalf("Read = %q, %v", m, err)
	}
	if yields.Load() == 0 {
		t.Fatal("Read polled for 2 ms without calling Options.Yield")
	}
}
