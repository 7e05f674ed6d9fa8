package sim

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
)

// With ConcurrentKernels, kernels that leave SMs free overlap, a later one
// can finish first, a kernel alone takes what it takes one at a time, and a
// memset spreads over every SM; the times are the same on every run.
func TestConcurrentKernelsTimes(t *testing.T) {
	run := func(concurrent bool) []time.Duration {
		d := openTest(t, Options{Granularity: G, Memory: 16 * G, SMs: 4, Cost: exactCost, ConcurrentKernels: concurrent})
		_, fns := loadTest(t, d)
		p := alloc(t, d, G)
		a, b := newStream(t, d), newStream(t, d)
		evs := make([]backend.Event, 5)
		for i := range evs {
			var err error
			evs[i], err = d.NewEvent(0)
			must(t, err)
		}
		must(t, a.Record(evs[0]))
		// 2 blocks of 2000 ns on SMs 0 and 1, after the 1000 ns launch: [1000, 3000).
		must(t, a.Launch(fns["work"], grid1(2, 32), workParams(4000, 0)))
		must(t, a.Record(evs[1]))
		// 2 blocks of 500 ns on the free SMs 2 and 3: [1000, 1500), done first.
		must(t, b.Launch(fns["work"], grid1(2, 32), workParams(1000, 0)))
		must(t, b.Record(evs[2]))
		// 100 bytes as 4 blocks of 100 ns after 100 ns: SMs 2 and 3 are
		// free from 1600 and run two each (SMs 0 and 1 are busy): ends 1800.
		must(t, b.Memset(p, 0, 4, 25))
		must(t, b.Record(evs[3]))
		// 8 blocks, 2 waves of 1000 ns, from a's end (3000) plus the launch: [4000, 6000).
		must(t, a.Launch(fns["work"], grid1(8, 32), workParams(8000, 0)))
		must(t, a.Record(evs[4]))
		must(t, d.Synchronize())
		var got []time.Duration
		for i := 1; i < len(evs); i++ {
			el, err := evs[i].Elapsed(evs[0])
			must(t, err)
			got = append(got, el)
		}
		return got
	}
	for _, tt := range []struct {
		concurrent bool
		want       []time.Duration
	}{
		{false, []time.Duration{3000, 4500, 4700, 7700}}, // one at a time, in enqueue order
		{true, []time.Duration{3000, 1500, 1800, 6000}},
	} {
		for i := range 5 {
			if got := run(tt.concurrent); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("concurrent=%v run %d: times = %v, want %v", tt.concurrent, i, got, tt.want)
			}
		}
	}
}

// A kernel's placement is final: a kernel enqueued later, even on a stream of
// the greatest priority, gets only the SM time left.
func TestConcurrentKernelsPlacementIsFinal(t *testing.T) {
	d := openTest(t, Options{Granularity: G, Memory: 16 * G, SMs: 2, Cost: exactCost, ConcurrentKernels: true})
	_, fns := loadTest(t, d)
	low := newStream(t, d)
	hs, err := d.NewStream(GreatestStreamPriority)
	must(t, err)
	high := hs.(*Stream)
	t.Cleanup(func() { high.Destroy() })
	start, _ := d.NewEvent(0)
	end, _ := d.NewEvent(0)
	must(t, low.Record(start))
	// 4 blocks of 1000 ns on 2 SMs: [1000, 3000).
	must(t, low.Launch(fns["work"], grid1(4, 32), workParams(4000, 0)))
	// 1 block of 100 ns: the first SM to free is free at 3000.
	must(t, high.Launch(fns["work"], grid1(1, 32), workParams(100, 0)))
	must(t, high.Record(end))
	must(t, end.Synchronize())
	el, err := end.Elapsed(start)
	must(t, err)
	if want := 3100 * time.Nanosecond; el != want {
		t.Errorf("urgent kernel ends at %v, want %v", el, want)
	}
}

func TestConcurrentKernelsAttributes(t *testing.T) {
	for _, tt := range []struct {
		concurrent bool
		want       int32
	}{{false, 32}, {true, 1}} {
		d := openTest(t, Options{Granularity: G, Memory: 16 * G, ConcurrentKernels: tt.concurrent})
		if got := d.Info().Attributes[cuda.CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR]; got != tt.want {
			t.Errorf("concurrent=%v: max blocks per SM = %d, want %d", tt.concurrent, got, tt.want)
		}
	}
}

func TestHostTime(t *testing.T) {
	d := openTest(t, Options{Granularity: G, Memory: 16 * G, SMs: 1, Cost: exactCost, ConcurrentKernels: true})
	_, fns := loadTest(t, d)
	s := newStream(t, d)
	if got := d.HostTime(); got != 0 {
		t.Fatalf("host time before any work = %v", got)
	}
	must(t, s.Launch(fns["work"], grid1(1, 32), workParams(500, 0)))
	must(t, s.Synchronize())
	if got, want := d.HostTime(), 1500*time.Nanosecond; got != want {
		t.Errorf("host time after a synchronize = %v, want %v", got, want)
	}
}

// A block takes an SM's idle gap between blocks placed before it, if it fits.
func TestConcurrentKernelsBackfill(t *testing.T) {
	d := openTest(t, Options{Granularity: G, Memory: 16 * G, SMs: 1, Cost: exactCost, ConcurrentKernels: true})
	_, fns := loadTest(t, d)
	a, b, c := newStream(t, d), newStream(t, d), newStream(t, d)
	evs := make([]backend.Event, 4)
	for i := range evs {
		var err error
		evs[i], err = d.NewEvent(0)
		must(t, err)
	}
	must(t, a.Record(evs[0]))
	must(t, a.Launch(fns["work"], grid1(1, 32), workParams(1000, 0))) // [1000, 2000)
	must(t, a.Record(evs[1]))
	must(t, b.WaitEvent(evs[1]))
	must(t, b.Launch(fns["work"], grid1(1, 32), workParams(1000, 0))) // from 2000 + 1000: [3000, 4000)
	must(t, b.Record(evs[2]))
	must(t, c.Launch(fns["work"], grid1(1, 32), workParams(500, 0))) // the gap: [2000, 2500)
	must(t, c.Record(evs[3]))
	must(t, d.Synchronize())
	var got []time.Duration
	for _, ev := range evs[1:] {
		el, err := ev.Elapsed(evs[0])
		must(t, err)
		got = append(got, el)
	}
	if want := []time.Duration{2000, 4000, 2500}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("times = %v, want %v", got, want)
	}
}

// TracePlacements reports each command's place on the virtual clock (a
// kernel, or a memset spread over the SMs): when the host enqueued it, when
// its stream let it start, and its blocks' span.
func TestTracePlacements(t *testing.T) {
	d := openTest(t, Options{Granularity: G, Memory: 16 * G, SMs: 2, Cost: exactCost, ConcurrentKernels: true})
	_, fns := loadTest(t, d)
	var got []Placement
	must(t, d.TracePlacements(func(p Placement) { got = append(got, p) }))
	low, high := newStream(t, d), newStream(t, d)
	must(t, low.Launch(fns["work"], grid1(4, 32), workParams(4000, 0))) // 2 waves of 1000 ns: [1000, 3000)
	must(t, high.Launch(fns["work"], grid1(1, 32), workParams(100, 0))) // waits for an SM: [3000, 3100)
	must(t, high.Synchronize())                                         // the host has seen 3100
	must(t, high.Launch(fns["work"], grid1(1, 32), workParams(100, 0))) // [4100, 4200)
	p := alloc(t, d, G)
	must(t, high.Memset(p, 0, 4, 25)) // after the kernel on its stream; a block per SM: [4300, 4400)
	must(t, d.Synchronize())
	must(t, d.TracePlacements(nil))
	must(t, low.Launch(fns["work"], grid1(1, 32), workParams(100, 0)))
	must(t, d.Synchronize())
	want := []Placement{
		{Function: fns["work"], Blocks: 4, Enqueued: 0, Ready: 0, Start: 1000, End: 3000},
		{Function: fns["work"], Blocks: 1, Enqueued: 0, Ready: 0, Start: 3000, End: 3100},
		{Function: fns["work"], Blocks: 1, Enqueued: 3100, Ready: 3100, Start: 4100, End: 4200},
		{Function: nil, Blocks: 2, Enqueued: 3100, Ready: 4200, Start: 4300, End: 4400},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("placements:\n have %v\n want %v", got, want)
	}

	one := openTest(t, Options{Granularity: G, Memory: 16 * G, SMs: 2, Cost: exactCost})
	if err := one.TracePlacements(func(Placement) {}); !errors.Is(err, backend.ErrUnsupported) {
		t.Errorf("without ConcurrentKernels: have %v, want an error matching backend.ErrUnsupported", err)
	}
}
