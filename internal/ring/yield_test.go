//go:build linux

package ring

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNoYield: with $GPUOS_RING_YIELD=0 (yieldOff) the poll loops spin
// without giving up the CPU, and every spin setting still delivers
// everything.
func TestNoYield(t *testing.T) {
	defer func(old bool) { yieldOff = old }(yieldOff)
	yieldOff = true
	checkWaitModes(t)
}

// TestOptionsYield: a poller calls Options.Yield between its looks, both
// waiting to read and watching the ring, and what it waits for still
// arrives.
func TestOptionsYield(t *testing.T) {
	var yields atomic.Int64
	opts := Options{Spin: time.Hour, Yield: func() { yields.Add(1); Yield() }}
	p, c := pair(t, MinSize, opts)
	if c.Watch(time.Millisecond, 0, func() bool { return false }) {
		t.Fatal("Watch saw a request on an empty ring")
	}
	if yields.Load() == 0 {
		t.Fatal("Watch polled an empty ring for 1 ms without calling Options.Yield")
	}
	yields.Store(0)
	go func() {
		time.Sleep(2 * time.Millisecond)
		p.Write([]byte("late"))
	}()
	if m, err := c.Read(nil); err != nil || string(m) != "late" {
		t.Fatalf("Read = %q, %v", m, err)
	}
	if yields.Load() == 0 {
		t.Fatal("Read polled for 2 ms without calling Options.Yield")
	}
}

// fakeYields is a yieldGate on a clock the test moves: each sched_yield
// takes the next of took (then 1 µs).
type fakeYields struct {
	yieldGate
	clock time.Duration
	took  []time.Duration
	calls int
}

func newFakeYields() *fakeYields {
	f := &fakeYields{}
	f.now = func() time.Duration { return f.clock }
	f.sysYield = func() {
		f.calls++
		d := time.Microsecond
		if len(f.took) > 0 {
			d, f.took = f.took[0], f.took[1:]
		}
		f.clock += d
	}
	return f
}

// TestYieldBackoff: short yields all go to the kernel; one that kept the
// poller away longer than LongYield stops yielding for yieldBackoff; a
// long one again within a back-off of resuming doubles it, up to
// maxYieldBackoff; one after a quiet back-off starts over.
func TestYieldBackoff(t *testing.T) {
	f := newFakeYields()
	for range 100 {
		f.yield()
	}
	if f.calls != 100 || f.long.Load() != 0 {
		t.Fatalf("100 short yields: %d reached the kernel, %d counted long; want 100, 0", f.calls, f.long.Load())
	}
	f.took = []time.Duration{LongYield}
	f.yield() // exactly LongYield is not long
	if f.long.Load() != 0 {
		t.Fatalf("a yield of exactly LongYield counted long")
	}

	// skipped reports how many of n yields, 1 ms apart from now, did not
	// reach the kernel.
	skipped := func(n int) int {
		before := f.calls
		for range n {
			f.yield()
			f.clock += time.Millisecond
		}
		return n - (f.calls - before)
	}
	backoffs := []time.Duration{yieldBackoff, 2 * yieldBackoff, 4 * yieldBackoff, 8 * yieldBackoff,
		16 * yieldBackoff, 32 * yieldBackoff, maxYieldBackoff}
	for i, want := range backoffs {
		f.took = []time.Duration{4 * time.Millisecond} // the hog's slice
		f.yield()
		if got := f.long.Load(); got != uint64(i+1) {
			t.Fatalf("long yield %d: LongYields = %d", i+1, got)
		}
		// Yields stop for want from the long one's end, then resume.
		ms := int(want / time.Millisecond)
		if got := skipped(ms); got != ms {
			t.Fatalf("long yield %d: %d of the %d yields in the next %v skipped, want all", i+1, got, ms, want)
		}
		if got := skipped(1); got != 0 {
			t.Fatalf("long yield %d: still skipping after %v", i+1, want)
		}
	}

	// A quiet back-off after resuming: the next long yield starts over.
	if got := skipped(int(maxYieldBackoff/time.Millisecond) + 1); got != 0 {
		t.Fatalf("%d short yields skipped", got)
	}
	f.took = []time.Duration{4 * time.Millisecond}
	f.yield()
	if ms := int(yieldBackoff / time.Millisecond); skipped(ms) != ms || skipped(1) != 0 {
		t.Fatalf("after a quiet stretch the back-off is not %v", yieldBackoff)
	}
}

// TestYieldBackoffTogether: pollers whose long yields end during a back-off
// another one started count, but do not lengthen it.
func TestYieldBackoffTogether(t *testing.T) {
	f := newFakeYields()
	f.took = []time.Duration{4 * time.Millisecond}
	f.yield()
	until := f.until.Load()
	f.tookLong(f.clock + time.Millisecond) // a second poller, back 1 ms later
	if f.until.Load() != until || f.long.Load() != 2 {
		t.Fatalf("second poller's long yield: until moved by %v, LongYields %d; want 0, 2",
			time.Duration(f.until.Load()-until), f.long.Load())
	}
}

// TestYieldBesideIdleHog: on the running kernel, a poller that yields
// beside a SCHED_IDLE spinner on its CPU loses the CPU to it for a slice,
// and its gate notices. (It cannot tell the spinner from any other thread
// that keeps the CPU: the fake-clock tests above carry the gate's logic;
// bench/hiccup/yieldprobe.c measures the loss itself.)
func TestYieldBesideIdleHog(t *testing.T) {
	if testing.Short() {
		t.Skip("spins two threads on one CPU for up to 2 s")
	}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Skipf("no CPU affinity here: %v", err)
	}
	cpu := -1
	for c := range 1024 {
		if allowed.IsSet(c) {
			cpu = c
			break
		}
	}
	if cpu < 0 {
		t.Skip("no CPU in this process's affinity set")
	}
	// pin moves the calling goroutine's thread, for good (the thread ends
	// with the goroutine), to cpu.
	pin := func() error {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		return unix.SchedSetaffinity(0, &set)
	}
	stop := make(chan struct{})
	defer close(stop)
	hog := make(chan error, 1)
	go func() {
		err := pin()
		if err == nil {
			err = unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}, 0)
		}
		hog <- err
		for err == nil {
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	if err := <-hog; err != nil {
		t.Skipf("no SCHED_IDLE spinner on CPU %d: %v", cpu, err)
	}
	poller := make(chan uint64, 1)
	go func() {
		g := yieldGate{now: monotonic, sysYield: schedYield}
		if err := pin(); err != nil {
			t.Errorf("pinning the poller to CPU %d: %v", cpu, err)
		}
		for end := monotonic() + 2*time.Second; g.long.Load() == 0 && monotonic() < end; {
			g.yield()
		}
		poller <- g.long.Load()
	}()
	if long := <-poller; long == 0 {
		t.Fatalf("2 s of yields beside a SCHED_IDLE spinner on CPU %d: none took over %v", cpu, LongYield)
	}
}
