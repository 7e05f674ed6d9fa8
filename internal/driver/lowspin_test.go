package driver

import (
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/sched"
)

// TestLowClassSpin: with sched.Options.LowClassSpin, a best-effort
// session's launches beside an open high-class session complete through the
// scheduler's spinner, each at a fence of the software GPU's stream, with
// right results; without it, through the waiters.
func TestLowClassSpin(t *testing.T) {
	for _, spin := range []bool{true, false} {
		td := newTestDriver(t, 256<<20, Options{Sched: sched.Options{Policy: "priority", LowClassSpin: spin}})
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
		if spun := be.s.queue.Stats().SpunEnds; (spun > 0) != spin {
			t.Errorf("LowClassSpin %v: %d of the best effort's points spun", spin, spun)
		}
		hp.rpc.Close()
		<-hp.s.Done()
		td.d.pollers.mu.Lock()
		held := td.d.pollers.held
		td.d.pollers.mu.Unlock()
		if want := map[bool]int{true: 1, false: 0}[spin]; held != want {
			t.Errorf("LowClassSpin %v: %d Ps counted held after the service's end, want %d (the spinner's)", spin, held, want)
		}
	}
}
