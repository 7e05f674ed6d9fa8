package driver

import (
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/sched"
)

// TestLowClassSpin: the scheduler's spinner is on by default on a device
// whose work runs off the host (a GPU), off on the software GPU unless
// sched.Options.LowClassSpin asks for it, and off wherever NoLowClassSpin
// says so; the slow-spell holds come with it (DefaultEpisodeHold) unless
// sched.Options.EpisodeHold sets them or turns them off (negative). Where
// it is on, a best-effort session's launches beside an open high-class
// session complete through it, each at a fence of its stream, with right
// results; where it is off, through the waiters.
func TestLowClassSpin(t *testing.T) {
	for _, tc := range []struct {
		name    string
		offHost bool
		opts    Options
		want    bool
		noHold  bool          // EpisodeHold off
		hold    time.Duration // EpisodeHold, if not the default
	}{
		{name: "software GPU", want: false},
		{name: "software GPU, asked", opts: Options{Sched: sched.Options{LowClassSpin: true}}, want: true},
		{name: "GPU", offHost: true, want: true},
		{name: "GPU, NoLowClassSpin", offHost: true, opts: Options{NoLowClassSpin: true}, want: false},
		{name: "GPU, asked and NoLowClassSpin", offHost: true,
			opts: Options{NoLowClassSpin: true, Sched: sched.Options{LowClassSpin: true}}, want: false},
		{name: "GPU, no episode holds", offHost: true, opts: Options{Sched: sched.Options{EpisodeHold: -1}}, want: true, noHold: true},
		{name: "GPU, holds of 5 ms", offHost: true, opts: Options{Sched: sched.Options{EpisodeHold: 5 * time.Millisecond}}, want: true, hold: 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &remapWatch{Backend: sim.New(sim.Options{Memory: 256 << 20}), running: map[backend.Stream]int{}, offHost: tc.offHost}
			opts := tc.opts
			opts.Sched.Policy = "priority"
			td := newDriverOn(t, w, opts)
			td.watch = w
			if got := td.d.opts.Sched.LowClassSpin; got != tc.want {
				t.Fatalf("the driver's sched.Options.LowClassSpin = %v, want %v", got, tc.want)
			}
			wantHold := map[bool]time.Duration{true: DefaultEpisodeHold}[tc.want]
			if tc.noHold {
				wantHold = 0
			} else if tc.hold != 0 {
				wantHold = tc.hold
			}
			if got, want := td.d.opts.Sched.EpisodeHold, wantHold; got != want {
				t.Fatalf("the driver's sched.Options.EpisodeHold = %v, want %v (where the spinner runs)", got, want)
			}
			for name, class := range map[string]sched.Class{"hp": sched.ClassHigh, "be": sched.ClassLow} {
				if err := td.d.sched.SetShare(name, sched.Share{Compute: 1, Copy: 1, Class: class, ClassSet: true}); err != nil {
					t.Fatal(err)
				}
			}
			const n, launches = 1024, 16
			hp, k, buf := newRingVecadd(td, "hp", n)
			be := td.session("be", 0)
			bk := be.loadKernel("vecadd.ptx", "vecadd")
			bbuf := be.vecaddBuffer(n, func(i int) float32 { return float32(i) }, func(i int) float32 { return 2 })
			for range launches {
				be.must(vecaddLaunch(bk, bbuf, n, 0), nil)
			}
			hp.must(vecaddLaunch(k, buf, n, 0), nil)
			hp.must(&v1.Synchronize{}, nil)
			be.must(&v1.Synchronize{}, nil)
			be.expectVecadd(bbuf, n, func(i int) float32 { return float32(i + 2) }, "the best effort's result")
			hp.expectVecadd(buf, n, func(i int) float32 { return float32(i + 1) }, "the service's result")
			if spun := be.s.queue.Stats().SpunEnds; (spun > 0) != tc.want {
				t.Errorf("%d of the best effort's points spun, want spinning %v", spun, tc.want)
			}
			hp.rpc.Close()
			<-hp.s.Done()
			td.d.pollers.mu.Lock()
			held := td.d.pollers.held
			td.d.pollers.mu.Unlock()
			if want := map[bool]int{true: 1, false: 0}[tc.want]; held != want {
				t.Errorf("%d Ps counted held after the service's end, want %d (the spinner's)", held, want)
			}
		})
	}
}
