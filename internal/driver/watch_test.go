package driver

import (
	"errors"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/sched"
)

// awaitPublished waits until the page says stream's first n launches are
// issued and their fence is reached.
func awaitPublished(t *testing.T, view *ring.Completion, stream, n uint64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if i := view.StreamWord(stream); i >= 0 {
			if have, seq := view.Published(i); have >= n && view.Reached(i, seq) {
				if have != n {
					t.Fatalf("stream %d: %d launches published, want %d", stream, have, n)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream %d: %d launches never published as done", stream, n)
		}
		ring.Yield()
	}
}

// WatchLaunches: a session with a completion page has the driver publish,
// beside each stream's word, its launches sent since (not those before)
// with the fence behind them; a launch that fails raises the page's count
// of calls, and the Synchronize it sends the client to reports the error.
// A session without a page is refused, and so is one with a guarded
// program whose fault record lies outside its page.
func TestWatchLaunches(t *testing.T) {
	td, ts := highClass(t, 256<<20)
	if err := td.d.sched.SetShare("nm", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassNormal, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	nm := td.session("nm", 0)
	nm.useRings()
	if err := nm.call(&v1.WatchLaunches{}, nil); !errors.Is(err, ErrWatchUnsupported) {
		t.Errorf("a session without a page: %v, want %v", err, ErrWatchUnsupported)
	}
	early := td.session("hp", 0)
	early.useRings()
	early.emptyKernel() // loaded before the page: its faults are out of the client's sight
	if _, err := early.openCompletion(); err != nil {
		t.Fatal(err)
	}
	if err := early.call(&v1.WatchLaunches{}, nil); !errors.Is(err, ErrWatchUnsupported) {
		t.Errorf("a program loaded before the page: %v, want %v", err, ErrWatchUnsupported)
	}

	view, err := ts.openCompletion()
	if err != nil {
		t.Fatal(err)
	}
	k := ts.emptyKernel() // after the page: its fault record is in it
	launch := func(stream uint64) {
		t.Helper()
		if err := ts.rpc.Send(&v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, Stream: stream}); err != nil {
			t.Fatal(err)
		}
	}
	launch(0) // before WatchLaunches: not counted
	launch(0)
	if view.Watching() {
		t.Fatal("the page says watching before WatchLaunches")
	}
	ts.must(&v1.WatchLaunches{}, nil)
	if !view.Watching() {
		t.Fatal("the page does not say watching after WatchLaunches")
	}
	for range 3 {
		launch(0)
	}
	awaitPublished(t, view, 0, 3)
	var sc v1.StreamCreated
	ts.must(&v1.CreateStream{}, &sc)
	for range 5 {
		launch(sc.Handle)
		launch(0)
	}
	awaitPublished(t, view, sc.Handle, 5)
	awaitPublished(t, view, 0, 8)
	if c := view.Calls(); c != 0 {
		t.Fatalf("calls %d with nothing to report, want 0", c)
	}

	// A launch with the wrong parameters: counted, never published, and
	// the client is told to ask.
	if err := ts.rpc.Send(&v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, Params: []byte{1}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for view.Calls() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the page's calls never rose after a failed launch")
		}
		ring.Yield()
	}
	if err := ts.call(&v1.Synchronize{}, nil); !errors.Is(err, ErrBadParams) {
		t.Errorf("synchronize after the failed launch: %v, want %v", err, ErrBadParams)
	}
	launch(0) // the failed one's number is skipped
	awaitPublished(t, view, 0, 10)

	// The stream destroyed: its slot is found no more.
	ts.must(&v1.Release{Handle: sc.Handle}, nil)
	if i := view.StreamWord(sc.Handle); i >= 0 {
		t.Errorf("a destroyed stream still has slot %d", i)
	}

	// A launch refused before its handler (the session gave up its right
	// to launch) is one the client counted and the driver did not: the
	// page stops saying that the driver publishes.
	var rr v1.RightsReply
	ts.must(&v1.Restrict{Rights: v1.AllSessionRights &^ v1.RightLaunch}, &rr)
	launch(0)
	ts.call(&v1.Synchronize{}, nil) // reports the refusal; the launch was served before it
	if view.Watching() {
		t.Error("the page still says watching after a launch refused before its handler")
	}
}
