package driver

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/config"
)

// TestFloodIsBackpressured: a client floods a million asynchronous launches
// through its connection. The driver's queue for the session fills to its
// depth, the driver stops reading, the socket fills and the client's sends
// block: the driver's heap stays bounded and every launch runs.
func TestFloodIsBackpressured(t *testing.T) {
	total := 1_000_000
	if testing.Short() {
		total = 50_000
	}
	td := newTestDriver(t, 256<<20, Options{Limits: config.SessionLimits{QueueDepth: 1024}})
	ts := td.session("flood", 0)
	k := ts.emptyKernel()

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak, maxQueued atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			if q := uint64(ts.s.queue.Stats().Queued); q > maxQueued.Load() {
				maxQueued.Store(q)
			}
		}
	}()
	launch := &v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}
	start := time.Now()
	for i := range total {
		if err := ts.rpc.Send(launch); err != nil {
			t.Fatalf("launch %d: %v", i, err)
		}
	}
	ts.must(&v1.Synchronize{}, nil)
	elapsed := time.Since(start)
	close(stop)
	<-sampled
	if got := ts.s.launches.Load(); got != uint64(total) {
		t.Errorf("%d launches reached the driver, want %d", got, total)
	}
	grew := int64(peak.Load()) - int64(base)
	t.Logf("%d launches in %v (%.1f µs each); the session's queue reached %d of 1024; heap grew by at most %.1f MiB",
		total, elapsed.Round(time.Millisecond), float64(elapsed.Microseconds())/float64(total), maxQueued.Load(), float64(grew)/(1<<20))
	if grew > 128<<20 {
		t.Errorf("heap grew by %d MiB during the flood, want < 128", grew>>20)
	}
	if total >= 100_000 && maxQueued.Load() < 512 {
		t.Errorf("the session's queue never filled (at most %d): backpressure was not exercised", maxQueued.Load())
	}
}
