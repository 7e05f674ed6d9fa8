package driver

import (
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/sched"
)

// TestLowFenceWaits: by default a low-class session's fence waits query
// the fence's event and never block in its synchronize (nor does anything
// else of that class: the scheduler's low-class waiters poll too), and are
// reached all the same; with $GPUOS_LOW_FENCE_WAIT=sync, or for a tenant
// of another class, each wait blocks in the event's synchronize.
func TestLowFenceWaits(t *testing.T) {
	for _, tt := range []struct {
		name  string
		on    bool
		class sched.Class
		syncs bool // each wait synchronizes its event
	}{
		{"low class, paced", true, sched.ClassLow, false},
		{"low class, sync", false, sched.ClassLow, true},
		{"normal class", true, sched.ClassNormal, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer lowFencePollOn.Store(lowFencePollOn.Swap(tt.on))
			be, ts, launch := newWallSession(t, "be", tt.class)
			const waits = 8
			syncs := be.st.eventSyncs.Load()
			for range waits {
				for range 4 {
					ts.must(launch, nil)
				}
				var fc v1.FenceCreated
				ts.must(&v1.RecordFence{}, &fc)
				ts.must(&v1.WaitFence{Fence: fc.Handle}, nil)
				var polled v1.Message
				if err := ts.call(&v1.PollFence{Fence: fc.Handle}, polled); err != nil {
					t.Fatalf("the fence waited for is not reached: %v", err)
				}
			}
			got := be.st.eventSyncs.Load() - syncs
			if tt.syncs && got < waits {
				t.Errorf("%d event synchronizes for %d fence waits, want one each", got, waits)
			}
			if !tt.syncs && got != 0 {
				t.Errorf("%d event synchronizes, want none: the waits poll", got)
			}
			if expect := ts.s.fenceExpect.Load(); tt.syncs != (expect == 0) {
				t.Errorf("the session's fence-wait estimate is %v; want one only where the waits poll", time.Duration(expect))
			}
		})
	}
}

// TestLowFenceWaitEnv: only $GPUOS_LOW_FENCE_WAIT=sync turns the paced
// waits off.
func TestLowFenceWaitEnv(t *testing.T) {
	for _, tt := range []struct {
		value string
		polls bool
	}{{"", true}, {"poll", true}, {"sync", false}} {
		if got := lowFencesPoll(tt.value); got != tt.polls {
			t.Errorf("%s=%q: polls %v, want %v", LowFenceWaitEnv, tt.value, got, tt.polls)
		}
	}
}

// TestLowFenceWaitTimeout: a low-class WaitFence with a timeout whose fence
// is issued but not reached in time (behind a kernel of 300 ms) fails with
// CodeTimeout, whether it polls on the serving goroutine or blocks in the
// event's synchronize on a goroutine of its own; without a timeout, the
// same fence is reached.
func TestLowFenceWaitTimeout(t *testing.T) {
	defer func(d time.Duration) { wallKernelTime = d }(wallKernelTime)
	wallKernelTime = 300 * time.Millisecond
	for _, tt := range []struct {
		name string
		poll bool
	}{{"polling", true}, {"synchronizing", false}} {
		t.Run(tt.name, func(t *testing.T) {
			defer lowFencePollOn.Store(lowFencePollOn.Swap(tt.poll))
			_, ts, launch := newWallSession(t, "be", sched.ClassLow)
			ts.must(launch, nil)
			var fc v1.FenceCreated
			ts.must(&v1.RecordFence{}, &fc)
			err := ts.call(&v1.WaitFence{Fence: fc.Handle, TimeoutNs: uint64(5 * time.Millisecond)}, nil)
			if v1.CodeOf(err) != v1.CodeTimeout {
				t.Fatalf("wait with a 5-ms timeout on a fence behind a 300-ms kernel: %v, want a CodeTimeout error", err)
			}
			ts.must(&v1.WaitFence{Fence: fc.Handle}, nil)
			if err := ts.call(&v1.PollFence{Fence: fc.Handle}, nil); err != nil {
				t.Fatalf("the fence waited for is not reached: %v", err)
			}
		})
	}
}

// TestLowFenceWaitSpun: with the scheduler's spinner (on by default on the
// wall-clock device, which plays a GPU) and a service's session open, a
// low-class session's fence waits are watched by the spinner: a wait with
// a timeout on a fence behind a 300-ms kernel ends with CodeTimeout, a wait
// without one reaches it, and releasing the fence, whose timed-out watch may
// still be on, waits for the spinner to let go of it. With NoLowClassSpin
// the waits are not watched.
func TestLowFenceWaitSpun(t *testing.T) {
	defer func(d time.Duration) { wallKernelTime = d }(wallKernelTime)
	wallKernelTime = 300 * time.Millisecond
	for _, spin := range []bool{true, false} {
		be := newWallBackend()
		be.fences = true
		td := newDriverOn(t, be, Options{Sched: sched.Options{Policy: "priority"}, NoLowClassSpin: !spin})
		for name, class := range map[string]sched.Class{"hp": sched.ClassHigh, "be": sched.ClassLow} {
			if err := td.d.sched.SetShare(name, sched.Share{Compute: 1, Copy: 1, Class: class, ClassSet: true}); err != nil {
				t.Fatal(err)
			}
		}
		td.session("hp", 0) // the service: the spinner serves the low class
		ts := td.session("be", 0)
		k := ts.emptyKernel()
		ts.must(&v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}, nil)
		var fc v1.FenceCreated
		ts.must(&v1.RecordFence{}, &fc)
		err := ts.call(&v1.WaitFence{Fence: fc.Handle, TimeoutNs: uint64(5 * time.Millisecond)}, nil)
		if v1.CodeOf(err) != v1.CodeTimeout {
			t.Fatalf("spin %v: wait with a 5-ms timeout on a fence behind a 300-ms kernel: %v, want a CodeTimeout error", spin, err)
		}
		ts.must(&v1.WaitFence{Fence: fc.Handle}, nil)
		if err := ts.call(&v1.PollFence{Fence: fc.Handle}, nil); err != nil {
			t.Fatalf("spin %v: the fence waited for is not reached: %v", spin, err)
		}
		f, err := ts.s.fence(fc.Handle)
		if err != nil {
			t.Fatal(err)
		}
		f.watchMu.Lock()
		watched := f.watch != nil
		f.watchMu.Unlock()
		if watched != spin {
			t.Errorf("spin %v: the spinner watched the fence: %v", spin, watched)
		}
		ts.must(&v1.Release{Handle: fc.Handle}, nil)
	}
}
