package sched_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/sched"
)

// TestFloodIsBoundedByBackpressure: a tenant submitting a million commands
// to a device slower than it is held back at its queue's depth; the
// scheduler's memory stays bounded (measured as heap growth) and every
// command completes.
func TestFloodIsBoundedByBackpressure(t *testing.T) {
	total := 1_000_000
	if testing.Short() {
		total = 100_000
	}
	const depth = 4096
	s := newSched(t, sched.Options{Device: &fakeDevice{}})
	q := newQueue(t, s, sched.QueueParams{Tenant: "flood", Session: 1, Depth: depth})
	st := newFakeStream(false)
	ctx := tctx(t)

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	var fulls, done atomic.Int64
	var submitted atomic.Bool
	device := make(chan struct{})
	// The "device" completes work only once the queue is full, and then
	// until it is half empty (a blocked submitter is let in again only once a
	// quarter of the queue has been issued), so that every cycle the
	// submitter meets backpressure (and, once everything is submitted, until
	// everything is done). It samples the heap then.
	go func() {
		defer close(device)
		var m runtime.MemStats
		draining := false
		for done.Load() < int64(total) {
			switch queued := q.Stats().Queued; {
			case queued >= depth:
				draining = true
			case queued <= depth/2:
				draining = false
			}
			if !submitted.Load() && !draining {
				runtime.Gosched()
				continue
			}
			if !submitted.Load() && fulls.Add(1)%16 == 1 {
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > peak.Load() {
					peak.Store(m.HeapAlloc)
				}
			}
			st.release(-1)
			runtime.Gosched()
		}
	}()
	fin := func(err error) {
		if err != nil {
			t.Error(err)
		}
		done.Add(1)
	}
	for range total {
		if err := q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op, Done: fin}); err != nil {
			t.Fatal(err)
		}
	}
	submitted.Store(true)
	if err := q.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	<-device
	if d := done.Load(); d != int64(total) {
		t.Errorf("%d of %d commands completed", d, total)
	}
	grew := int64(peak.Load()) - int64(base)
	t.Logf("%d commands; the queue filled %d times; heap grew by at most %.1f MiB", total, fulls.Load(), float64(grew)/(1<<20))
	if fulls.Load() < int64(total/(2*depth)) {
		t.Errorf("the queue was full only %d times: backpressure was not exercised", fulls.Load())
	}
	if grew > 64<<20 {
		t.Errorf("heap grew by %d MiB during the flood, want < 64", grew>>20)
	}
	if err := s.CheckIdle(); err != nil {
		t.Error(err)
	}
}

// cpuTime is the process's CPU time (user and system): on a loaded machine
// it says more about a hot path's cost than wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports CPU ns per op since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkSubmit measures the hot path: one Submit per command, issued by
// the submitter itself into an idle scheduler, completion tracked in
// batches. The command is allocated by the caller, as the driver does.
func BenchmarkSubmit(b *testing.B) {
	for _, policy := range []string{"fifo", "fair", "band", "priority"} {
		b.Run(policy, func(b *testing.B) {
			s := newSched(b, sched.Options{Device: &fakeDevice{}, Policy: policy})
			q := newQueue(b, s, sched.QueueParams{Tenant: "t", Session: 1})
			st := newFakeStream(true)
			ctx := tctx(b)
			done := func(error) {}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for range b.N {
				if err := q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op, Done: done}); err != nil {
					b.Fatal(err)
				}
			}
			q.Wait(ctx)
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkDirect is the baseline of BenchmarkSubmit: the command's work
// issued directly, with no scheduler.
func BenchmarkDirect(b *testing.B) {
	st := newFakeStream(true)
	b.ReportAllocs()
	cpu := cpuTime()
	for range b.N {
		c := &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op}
		if err := c.Issue(); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkSubmitParallel: four tenants submitting at once under fair.
func BenchmarkSubmitParallel(b *testing.B) {
	s := newSched(b, sched.Options{Device: &fakeDevice{}})
	var next atomic.Int64
	ctx := tctx(b)
	b.ReportAllocs()
	b.SetParallelism(1)
	b.RunParallel(func(pb *testing.PB) {
		i := next.Add(1)
		q, err := s.NewQueue(sched.QueueParams{Tenant: fmt.Sprint("t", i%4), Session: uint64(i)})
		if err != nil {
			b.Error(err)
			return
		}
		defer q.Close()
		st := newFakeStream(true)
		for pb.Next() {
			if err := q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: st.op}); err != nil {
				b.Error(err)
				return
			}
		}
		q.Wait(ctx)
	})
}

// BenchmarkSubmitSim launches a one-thread kernel on the software GPU per
// command: the scheduler's share of a launch next to the sim's own cost.
func BenchmarkSubmitSim(b *testing.B) {
	for _, direct := range []bool{true, false} {
		name := "scheduled"
		if direct {
			name = "direct"
		}
		b.Run(name, func(b *testing.B) {
			g := newSimGPU(b)
			st := g.stream(b, 0)
			launch := g.launch(st, 1, 1)
			s := newSched(b, sched.Options{Device: g.dev})
			q := newQueue(b, s, sched.QueueParams{Tenant: "t", Session: 1})
			ctx := tctx(b)
			b.ReportAllocs()
			start := time.Now()
			for range b.N {
				if direct {
					if err := launch(); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if err := q.Submit(ctx, &sched.Command{Kind: sched.Compute, Stream: st, Issue: launch}); err != nil {
					b.Fatal(err)
				}
			}
			q.Wait(ctx)
			st.Synchronize()
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "ns/launch-completed")
		})
	}
}
