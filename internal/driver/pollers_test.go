package driver

import (
	"os"
	"runtime"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/sched"
)

// The high-class pollers share their Ps once fewer than freePs would be
// left to the daemon's other goroutines.
func TestPollersShare(t *testing.T) {
	for _, tt := range []struct {
		held, procs int
		want        bool
	}{
		{0, 1, false}, // nothing polls: nothing to share
		{0, 2, false},
		{1, 2, true},
		{2, 2, true}, // a service and its hedge at GOMAXPROCS=2 (session 33: best effort 0.11)
		{2, 3, true},
		{2, 4, false}, // two left (session 33: best effort 1.04)
		{2, 16, false},
		{14, 16, false},
		{15, 16, true},
		{16, 16, true},
	} {
		if have := pollersShare(tt.held, tt.procs); have != tt.want {
			t.Errorf("%d pollers of %d Ps: share %v, want %v", tt.held, tt.procs, have, tt.want)
		}
	}
}

// A session counts its serving goroutine's P when its rings poll (a
// high-class session's), and its hedge's helper's when it has one.
func TestHighClassPollerPs(t *testing.T) {
	for _, tt := range []struct {
		spin, hedge time.Duration
		want        int
	}{
		{0, 0, 0},
		{0, HighClassSpin, 0}, // no polling rings, no helper
		{HighClassSpin, 0, 1},
		{HighClassSpin, HighClassSpin, 2},
	} {
		if have := highClassPollerPs(tt.spin, tt.hedge); have != tt.want {
			t.Errorf("spin %v, hedge %v: %d Ps, want %d", tt.spin, tt.hedge, have, tt.want)
		}
	}
}

// pollerPs.add keeps the count and the decision as sessions come and go,
// and reads GOMAXPROCS again each time.
func TestPollerPsAdd(t *testing.T) {
	procs := 4
	p := &pollerPs{procs: func() int { return procs }}
	for i, step := range []struct {
		add  int
		want bool
	}{
		{2, false}, // one service: two Ps left
		{2, true},  // a second: none left
		{-2, false},
		{0, false},
		{-2, false},
	} {
		p.add(step.add)
		if have := p.share.Load(); have != step.want {
			t.Errorf("step %d (add %d, held %d of %d): share %v, want %v", i, step.add, p.held, procs, have, step.want)
		}
	}
	p.add(2)
	procs = 3 // GOMAXPROCS lowered (a container's CPU limit)
	p.add(0)  // no change: not read again
	if p.share.Load() {
		t.Errorf("share decided again without a change in the count")
	}
	p.add(1)
	if !p.share.Load() {
		t.Errorf("3 pollers of 3 Ps: not sharing")
	}
}

// The driver counts a high-class session's pollers from its rings' opening
// to its end, and none of another class: with three Ps, a service and its
// hedge leave one, and the pollers share theirs while it lasts.
func TestDriverCountsHighClassPollers(t *testing.T) {
	if ring.DefaultSpin() <= 0 || os.Getenv(ring.SpinEnv) != "" || os.Getenv(HedgeEnv) == "0" {
		t.Skip("rings do not poll here (one CPU), $GPUOS_RING_SPIN is set or hedging is off")
	}
	td := newTestDriver(t, 64<<20, Options{Sched: sched.Options{Policy: "priority"}})
	td.d.pollers.procs = func() int { return 3 }
	for name, class := range map[string]sched.Class{"hp": sched.ClassHigh, "be": sched.ClassLow} {
		if err := td.d.sched.SetShare(name, sched.Share{Compute: 1, Copy: 1, Class: class, ClassSet: true}); err != nil {
			t.Fatal(err)
		}
	}
	held := func() int {
		td.d.pollers.mu.Lock()
		defer td.d.pollers.mu.Unlock()
		return td.d.pollers.held
	}
	be := td.session("be", 0)
	be.useRings()
	if held() != 0 || td.d.pollers.share.Load() {
		t.Fatalf("a best-effort session's rings: %d Ps held (share %v), want 0", held(), td.d.pollers.share.Load())
	}
	hp := td.session("hp", 0)
	hp.useRings()
	if held() != 2 || !td.d.pollers.share.Load() {
		t.Fatalf("a service's rings: %d Ps held (share %v), want 2, sharing (3 Ps)", held(), td.d.pollers.share.Load())
	}
	for range 100 { // its rings and the other's work while the pollers share
		hp.must(&v1.Synchronize{}, nil)
		be.must(&v1.Synchronize{}, nil)
	}
	hp.rpc.Close()
	<-hp.s.Done()
	if held() != 0 || td.d.pollers.share.Load() {
		t.Errorf("after the service's end: %d Ps held (share %v), want 0", held(), td.d.pollers.share.Load())
	}
}

// BenchmarkBestEffortBesideService: a best-effort tenant's round trips
// (Synchronize over rings) while a high-class service submits every
// millisecond, with the daemon's Go runtime at GOMAXPROCS=2, on the null
// backend (polling as on a GPU: pollers keep their P). "keep" makes the
// service's pollers keep their Ps as if there were Ps to spare; "share" is
// what the driver does at two Ps (pollersShare). The service's serving
// goroutine polls its ring without pause at that rate, and its hedge's helper
// beside it once it has seen the goroutine away: kept, they leave the other
// tenant's serving goroutine only what the Go runtime's preemption gives it
// (session 33 on the H100: best effort 0.11 of alone). The in-process
// clients need Ps too, so this shows the mechanism, not the GPU's figures.
func BenchmarkBestEffortBesideService(b *testing.B) {
	if ring.DefaultSpin() <= 0 || os.Getenv(ring.SpinEnv) != "" {
		b.Skip("rings do not poll here (one CPU) or $GPUOS_RING_SPIN is set")
	}
	for _, mode := range []string{"keep", "share"} {
		b.Run(mode, func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
			td := newDriverOn(b, benchBackend(b, "null"), Options{Sched: sched.Options{Policy: "priority"}})
			procs := map[string]int{"keep": 64, "share": 2}[mode]
			td.d.pollers.procs = func() int { return procs }
			for name, class := range map[string]sched.Class{"hp": sched.ClassHigh, "be": sched.ClassLow} {
				if err := td.d.sched.SetShare(name, sched.Share{Compute: 1, Copy: 1, Class: class, ClassSet: true}); err != nil {
					b.Fatal(err)
				}
			}
			hp, be := td.session("hp", 0), td.session("be", 0)
			hp.useRings()
			be.useRings()
			if have, want := td.d.pollers.share.Load(), mode == "share"; have != want {
				b.Fatalf("pollers share %v, want %v", have, want)
			}
			stop := make(chan struct{})
			served := make(chan int)
			go func() {
				n := 0
				for {
					select {
					case <-stop:
						served <- n
						return
					case <-time.After(time.Millisecond):
					}
					if err := hp.call(&v1.Synchronize{}, nil); err != nil {
						b.Error(err)
					}
					n++
				}
			}()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				be.must(&v1.Synchronize{}, nil)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			close(stop)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "be-round-trips/s")
			b.ReportMetric(float64(<-served)/elapsed.Seconds(), "service-requests/s")
		})
	}
}
