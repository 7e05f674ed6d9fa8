package driver

import (
	"errors"
	"slices"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/sched"
)

// countedEvent completes at its doneAt-th query, or fails with err there.
type countedEvent struct {
	backend.Event
	queries, doneAt int
	err             error
}

func (e *countedEvent) Query() (bool, error) {
	e.queries++
	if e.queries < e.doneAt {
		return false, nil
	}
	return e.err == nil, e.err
}

// TestPollPaced: a look at once, then after the first nap, then naps from
// the period doubling up to the cap; the event's failure ends the wait.
func TestPollPaced(t *testing.T) {
	const us = time.Microsecond
	var naps []time.Duration
	defer func(f func(time.Duration)) { pacedSleep = f }(pacedSleep)
	pacedSleep = func(d time.Duration) { naps = append(naps, d) }
	failed := errors.New("the work failed")
	for _, tt := range []struct {
		name                  string
		doneAt                int
		err                   error
		first, period, maxNap time.Duration
		want                  []time.Duration
	}{
		{"done at once", 1, nil, 300 * us, 20 * us, 100 * us, nil},
		{"done at the second look", 2, nil, 300 * us, 20 * us, 100 * us, []time.Duration{300 * us}},
		{"doubling to the cap", 7, nil, 300 * us, 20 * us, 100 * us, []time.Duration{300 * us, 20 * us, 40 * us, 80 * us, 100 * us, 100 * us}},
		{"a first nap of one period doubles too", 4, nil, 20 * us, 20 * us, 1000 * us, []time.Duration{20 * us, 20 * us, 40 * us}},
		{"failed", 3, failed, 300 * us, 20 * us, 100 * us, []time.Duration{300 * us, 20 * us}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			naps = nil
			ev := &countedEvent{doneAt: tt.doneAt, err: tt.err}
			if err := pollPaced(ev, tt.first, tt.period, tt.maxNap); !errors.Is(err, tt.err) {
				t.Fatalf("pollPaced = %v, want %v", err, tt.err)
			}
			if ev.queries != tt.doneAt || !slices.Equal(naps, tt.want) {
				t.Errorf("%d queries, naps %v; want %d, %v", ev.queries, naps, tt.doneAt, tt.want)
			}
		})
	}
}

// TestLowFenceWaits: with $GPUOS_LOW_FENCE_WAIT=poll a low-class session's
// fence waits query the fence's event and never block in its synchronize
// (nor does anything else of that class: the scheduler's low-class waiters
// poll too), and are reached all the same; without it, or for a tenant of
// another class, each wait blocks in the event's synchronize.
func TestLowFenceWaits(t *testing.T) {
	for _, tt := range []struct {
		name  string
		on    bool
		class sched.Class
		syncs bool // each wait synchronizes its event
	}{
		{"low class, paced", true, sched.ClassLow, false},
		{"low class, off", false, sched.ClassLow, true},
		{"normal class", true, sched.ClassNormal, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer lowFencePollOn.Store(lowFencePollOn.Swap(tt.on))
			be := newWallBackend()
			td := newDriverOn(t, be, Options{Sched: sched.Options{Policy: "priority"}})
			if err := td.d.sched.SetShare("be", sched.Share{Compute: 1, Copy: 1, Class: tt.class, ClassSet: true}); err != nil {
				t.Fatal(err)
			}
			ts := td.session("be", 0)
			k := ts.emptyKernel()
			launch := &v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}
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
