package driver

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/sched"
	"golang.org/x/sys/unix"
)

// openCompletion asks for the session's completion page and maps it as a
// client does; it returns the page, or the driver's error.
func (ts *testSession) openCompletion() (*ring.Completion, error) {
	ts.t.Helper()
	var co v1.CompletionOpened
	fds, err := ts.rpc.CallFDs(context.Background(), &v1.OpenCompletion{}, &co, nil)
	if err != nil {
		return nil, err
	}
	if len(fds) != 1 {
		ts.t.Fatalf("CompletionOpened carried %d descriptors", len(fds))
	}
	shm, err := ring.OpenReadOnly(fds[0], int(co.Bytes))
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(func() { shm.Close() })
	view, err := ring.NewCompletion(shm.Bytes(), int(co.Words), int(co.WordStride), int(co.FaultsOffset), int(co.FaultsBytes))
	if err != nil {
		ts.t.Fatal(err)
	}
	return view, nil
}

// awaitTargets polls the page's words as the client library does.
func awaitTargets(t *testing.T, view *ring.Completion, targets []v1.FenceTarget) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, tg := range targets {
		for !view.Reached(int(tg.Word), tg.Seq) {
			if time.Now().After(deadline) {
				t.Fatalf("word %d never reached %d", tg.Word, tg.Seq)
			}
			ring.Yield()
		}
	}
}

// highClass returns a driver with tenant hp of the high class, and a
// session of it on rings.
func highClass(t *testing.T, simMem uint64) (*testDriver, *testSession) {
	t.Helper()
	td := newTestDriver(t, simMem, Options{Sched: sched.Options{Policy: "priority"}})
	if err := td.d.sched.SetShare("hp", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassHigh, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	ts := td.session("hp", 0)
	ts.useRings()
	return td, ts
}

// TestCompletionPage: a high-class session on rings gets a completion page;
// a SynchronizeFences answers with words that the device writes once the
// work is done, on the session's stream and on one it creates, and the
// results are there when they are reached. Every other session is refused.
func TestCompletionPage(t *testing.T) {
	td, ts := highClass(t, 256<<20)
	if err := td.d.sched.SetShare("nm", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassNormal, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	t.Run("refused", func(t *testing.T) {
		if _, err := td.session("hp", 0).openCompletion(); !errors.Is(err, ErrCompletionUnsupported) {
			t.Errorf("high class without rings: %v, want %v", err, ErrCompletionUnsupported)
		}
		nm := td.session("nm", 0)
		nm.useRings()
		if _, err := nm.openCompletion(); !errors.Is(err, ErrCompletionUnsupported) {
			t.Errorf("normal class: %v, want %v", err, ErrCompletionUnsupported)
		}
		// Without a page, SynchronizeFences is Synchronize: no targets.
		var ft v1.FenceTargets
		nm.must(&v1.SynchronizeFences{}, &ft)
		if len(ft.Targets) != 0 {
			t.Errorf("without a page: targets %v, want none", ft.Targets)
		}
		t.Setenv(ClientCompletionEnv, "0")
		hp := td.session("hp", 0)
		hp.useRings()
		if _, err := hp.openCompletion(); !errors.Is(err, ErrCompletionUnsupported) {
			t.Errorf("with %s=0: %v, want %v", ClientCompletionEnv, err, ErrCompletionUnsupported)
		}
	})

	view, err := ts.openCompletion()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.openCompletion(); !errors.Is(err, ErrCompletionOpen) {
		t.Errorf("second OpenCompletion: %v, want %v", err, ErrCompletionOpen)
	}
	k := ts.loadKernel("vecadd.ptx", "vecadd")
	var sc v1.StreamCreated
	ts.must(&v1.CreateStream{}, &sc)
	const n = 1024
	buf := ts.vecaddBuffer(n, func(i int) float32 { return float32(i) }, func(i int) float32 { return float32(2 * i) })
	words := map[uint32]bool{}
	for round := range 20 {
		stream := []uint64{0, sc.Handle}[round%2]
		ts.must(&v1.Memset{Dst: v1.Ref{Buffer: buf.Handle, Offset: 8 * n}, Value: 0, ElemSize: 4, Count: n, Stream: stream}, nil)
		ts.must(vecaddLaunch(k, buf, n, stream), nil)
		var ft v1.FenceTargets
		ts.must(&v1.SynchronizeFences{Stream: stream}, &ft)
		if len(ft.Targets) == 0 {
			t.Fatalf("round %d: no targets: the driver waited itself", round)
		}
		awaitTargets(t, view, ft.Targets)
		for _, tg := range ft.Targets {
			words[tg.Word] = true
		}
		// No driver call since: what the words say is done, is.
		ts.expectVecadd(buf, n, func(i int) float32 { return float32(3 * i) }, fmt.Sprintf("round %d, once the words were reached", round))
	}
	// A client that does not see its words reached in time sends
	// Synchronize: it waits for the work SynchronizeFences answered for,
	// though the scheduler handed those streams to that call.
	for round := range 5 {
		ts.must(vecaddLaunch(k, buf, n, 0), nil)
		var ft v1.FenceTargets
		ts.must(&v1.SynchronizeFences{}, &ft)
		ts.must(&v1.Synchronize{}, nil)
		for _, tg := range ft.Targets {
			if !view.Reached(int(tg.Word), tg.Seq) {
				t.Fatalf("round %d: Synchronize returned before word %d reached %d", round, tg.Word, tg.Seq)
			}
		}
	}
	if len(words) != 2 {
		t.Errorf("the two streams wrote %d words, want 2", len(words))
	}
	if view.Faulted() {
		t.Errorf("the fault area shows a violation after benign work")
	}
	// A destroyed stream's word goes back to the page.
	cp := ts.s.completion.Load()
	cp.mu.Lock()
	free := len(cp.freeWords)
	cp.mu.Unlock()
	ts.must(&v1.Release{Handle: sc.Handle}, nil)
	cp.mu.Lock()
	if have := len(cp.freeWords); have != free+1 {
		t.Errorf("after the stream's release: %d free words, want %d", have, free+1)
	}
	cp.mu.Unlock()
}

// TestCompletionPageIsReadOnly: the client can read its completion page
// but neither write it nor get it writable by any route, so nothing it does
// changes what the driver reads there.
func TestCompletionPageIsReadOnly(t *testing.T) {
	_, ts := highClass(t, 64<<20)
	var co v1.CompletionOpened
	fds, err := ts.rpc.CallFDs(context.Background(), &v1.OpenCompletion{}, &co, nil)
	if err != nil || len(fds) != 1 {
		t.Fatalf("open completion: %v (%d descriptors)", err, len(fds))
	}
	fd := fds[0]
	defer unix.Close(fd)
	size := int(co.Bytes)
	if m, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err == nil {
		unix.Munmap(m)
		t.Errorf("mapped the page writable")
	}
	if _, err := unix.Pwrite(fd, []byte{1}, 0); err == nil {
		t.Errorf("wrote the page through its descriptor")
	}
	if err := unix.Ftruncate(fd, 0); err == nil {
		t.Errorf("truncated the page")
	}
	// A fresh open of the same file is sealed just the same.
	if fd2, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_RDWR, 0); err == nil {
		if m, err := unix.Mmap(fd2, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err == nil {
			unix.Munmap(m)
			t.Errorf("mapped the page writable through /proc/self/fd")
		}
		unix.Close(fd2)
	}
	m, err := unix.Mmap(fd, 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("read-only mapping: %v", err)
	}
	defer unix.Munmap(m)
	if err := unix.Mprotect(m, unix.PROT_READ|unix.PROT_WRITE); err == nil {
		t.Errorf("made the read-only mapping writable")
	}
	// Private copy-on-write mappings are allowed, but write only the copy.
	if p, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE); err == nil {
		p[0] = 0xff
		if m[0] == 0xff {
			t.Errorf("a private mapping's write reached the shared page")
		}
		unix.Munmap(p)
	}
}

// TestCompletionPageViolation: a guarded program of a session with a page
// keeps its fault record there. A kernel the guard catches shows in the
// page's fault area, and the violation is reported by the synchronize: by
// SynchronizeFences itself if the driver saw it first, else by the
// Synchronize the client sends when it sees the fault area written.
func TestCompletionPageViolation(t *testing.T) {
	_, ts := highClass(t, 64<<20)
	view, err := ts.openCompletion()
	if err != nil {
		t.Fatal(err)
	}
	k := ts.loadKernel("vecadd.ptx", "vecadd")
	buf := ts.buffer(4096, 0)
	// c points below every window: the guard suppresses the store.
	ts.must(&v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 1, 1},
		Params: pack(k, buf.Addr, buf.Addr, 0x1000, 32)}, nil)
	var ft v1.FenceTargets
	err = ts.call(&v1.SynchronizeFences{}, &ft)
	switch {
	case err != nil:
		if v1.CodeOf(err) != v1.CodeGuardViolation {
			t.Fatalf("SynchronizeFences = %v, want GuardViolation or targets", err)
		}
	case len(ft.Targets) == 0:
		t.Fatalf("no targets: the driver waited itself")
	default:
		awaitTargets(t, view, ft.Targets)
		if !view.Faulted() {
			t.Fatalf("words reached, fault area clear: the violation is not where the client looks")
		}
		if err := ts.call(&v1.Synchronize{}, nil); v1.CodeOf(err) != v1.CodeGuardViolation {
			t.Fatalf("Synchronize after the fault area showed a violation = %v, want GuardViolation", err)
		}
	}
	if !view.Faulted() {
		t.Errorf("the fault area is clear after a violation")
	}
	if err := ts.call(&v1.SynchronizeFences{}, &ft); v1.CodeOf(err) != v1.CodeGuardViolation {
		t.Errorf("a revoked session's SynchronizeFences = %v, want GuardViolation", err)
	}
}

// TestCompletionPageReleased: a session's completion page is unmapped from
// the device when the session ends, whether its client said goodbye with its
// work done or went away with launches still queued (a crash).
func TestCompletionPageReleased(t *testing.T) {
	td, _ := highClass(t, 1<<30)
	base := td.watch.hostMaps.Load() // the first session's page, if it asked: it did not
	for i := range 6 {
		ts := td.session("hp", 0)
		ts.useRings()
		view, err := ts.openCompletion()
		if err != nil {
			t.Fatalf("session %d: open completion: %v", i, err)
		}
		if have, want := td.watch.hostMaps.Load(), base+1; have != want {
			t.Fatalf("session %d: %d host mappings with its page open, want %d", i, have, want)
		}
		k := ts.emptyKernel()
		launch := &v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}
		for range 8 {
			if err := ts.rpc.Send(launch); err != nil {
				t.Fatal(err)
			}
		}
		if i%2 == 0 { // its work done, then goodbye
			var ft v1.FenceTargets
			ts.must(&v1.SynchronizeFences{}, &ft)
			awaitTargets(t, view, ft.Targets)
		} // else it goes away with its launches queued
		ts.rpc.Close()
		<-ts.s.Done()
		if have := td.watch.hostMaps.Load(); have != base {
			t.Errorf("session %d ended (work done: %v): %d host mappings, want %d", i, i%2 == 0, have, base)
		}
	}
}

// TestCompletionPageFull: a session has a word for 64 streams; a
// synchronize that needs a 65th is one the driver waits for itself (no
// targets), and it waits for all the session's work.
func TestCompletionPageFull(t *testing.T) {
	_, ts := highClass(t, 256<<20)
	view, err := ts.openCompletion()
	if err != nil {
		t.Fatal(err)
	}
	k := ts.loadKernel("vecadd.ptx", "vecadd")
	const n = 1 << 20 // long enough on the sim that the synchronize has to wait
	one := func(int) float32 { return 1 }
	buf := ts.vecaddBuffer(n, one, one)
	var streams []uint64
	for i := range view.Words() + 1 {
		var sc v1.StreamCreated
		ts.must(&v1.CreateStream{}, &sc)
		streams = append(streams, sc.Handle)
		if i < view.Words() {
			var ft v1.FenceTargets
			ts.must(&v1.SynchronizeFences{Stream: sc.Handle}, &ft)
			if len(ft.Targets) != 1 {
				t.Fatalf("stream %d: targets %v, want its word", i, ft.Targets)
			}
		}
	}
	var ft v1.FenceTargets
	for round, st := range []uint64{streams[len(streams)-1], streams[len(streams)-1]} {
		ts.must(&v1.Memset{Dst: v1.Ref{Buffer: buf.Handle, Offset: 8 * n}, Value: 0, ElemSize: 4, Count: n, Stream: st}, nil)
		ts.must(vecaddLaunch(k, buf, n, st), nil)
		// Session-wide (round 0) and naming the stream (round 1).
		ts.must(&v1.SynchronizeFences{Stream: []uint64{0, st}[round]}, &ft)
		if len(ft.Targets) != 0 {
			t.Fatalf("round %d: targets %v with every word taken", round, ft.Targets)
		}
		so, err := ts.s.streamOf(st)
		if err != nil {
			t.Fatal(err)
		}
		if done, err := so.st.Query(); !done || err != nil {
			t.Fatalf("round %d: the stream's work is not done after the driver's synchronize (%v, %v)", round, done, err)
		}
		// Read on the session's own stream: only the synchronize ordered it
		// after the kernel.
		ts.expectVecadd(buf, n, func(int) float32 { return 2 }, fmt.Sprintf("round %d, after the driver's synchronize", round))
	}
}
