package driver

import (
	"cmp"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/sched"
)

// The wall-clock device: the sim with launches, events and synchronization
// that behave in time as a GPU's do, as far as the driver's host side sees
// them. A launch keeps its thread busy as cuLaunchKernel does, the kernel
// "runs" from the later of its arrival and the stream's previous kernel's
// end, events record the time their stream's work ends and Elapsed is the
// wall time between two of them, gaps where the device idled included. The
// sim's virtual clock leaves out those gaps (a launch costs 3 µs of virtual
// time however slowly the host issues it), which is why the scheduler's
// estimates on it differ from the GPU's: on a GPU, a command's measured time
// is the host's interval between commands whenever the host cannot keep
// the device busy. Counters say how many events the scheduler recorded and
// waited for.

// Costs of the wall-clock device, near the lent H100's (runs 7 to 11).
// $GPUOS_BENCH_LAUNCH_COST (launchCost) replaces the launch's.
var (
	wallLaunchCost  = cmp.Or(launchCost, 4300*time.Nanosecond) // cuLaunchKernel of an empty kernel from Go (run 11a's BenchmarkDirectLaunch/cuda)
	wallKernelTime  = 1500 * time.Nanosecond                   // an empty kernel back to back with the previous
	wallRecordCost  = 1500 * time.Nanosecond                   // cuEventRecord
	wallElapsedCost = 1000 * time.Nanosecond                   // cuEventElapsedTime
)

type wallBackend struct {
	backend.Backend
	st     *wallStats
	fences bool // its streams have fences (wallFencingStream)
}

// wallStats counts what the driver asked of a wall-clock device.
type wallStats struct {
	launches, records, eventSyncs, streamSyncs atomic.Int64
}

type wallDevice struct {
	backend.Device
	st     *wallStats
	fences bool
	mu     sync.Mutex
	end    time.Time // the latest end of any stream's work
}

type wallStream struct {
	backend.Stream
	d   *wallDevice
	mu  sync.Mutex
	end time.Time // when the stream's last kernel ends
}

type wallEvent struct {
	d  *wallDevice
	mu sync.Mutex
	at time.Time
}

func newWallBackend() wallBackend {
	return wallBackend{Backend: sim.New(sim.Options{Memory: 256 << 20}), st: &wallStats{}}
}

func (b wallBackend) Open(ordinal int) (backend.Device, error) {
	dev, err := b.Backend.Open(ordinal)
	if err != nil {
		return nil, err
	}
	return &wallDevice{Device: dev, st: b.st, fences: b.fences}, nil
}

// AllocMappedHost passes the sim's mapped host memory on (the guard's fault
// records), as the cuda backend has it.
func (d *wallDevice) AllocMappedHost(size int) (backend.HostMemory, backend.DevicePtr, error) {
	return d.Device.(backend.MappedHostAllocator).AllocMappedHost(size)
}

func (d *wallDevice) NewStream(priority int) (backend.Stream, error) {
	st, err := d.Device.NewStream(priority)
	if err != nil {
		return nil, err
	}
	ws := &wallStream{Stream: st, d: d}
	if d.fences {
		return &wallFencingStream{ws}, nil
	}
	return ws, nil
}

// wallFencingStream is a wallStream with fences (backend.Fencer): each is
// reached once the stream's work enqueued before it has ended.
type wallFencingStream struct{ *wallStream }

func (st *wallFencingStream) Fence() (backend.Fence, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return wallFence(st.end), nil
}

type wallFence time.Time

func (f wallFence) Reached() bool { return !time.Now().Before(time.Time(f)) }

func (d *wallDevice) NewEvent(flags backend.EventFlags) (backend.Event, error) {
	return &wallEvent{d: d}, nil
}

func (d *wallDevice) Synchronize() error {
	d.mu.Lock()
	end := d.end
	d.mu.Unlock()
	waitUntil(end)
	return d.Device.Synchronize()
}

func (st *wallStream) Launch(f backend.Function, cfg backend.LaunchConfig, params []byte) error {
	spin(wallLaunchCost)
	st.d.st.launches.Add(1)
	st.mu.Lock()
	st.end = later(st.end, time.Now()).Add(wallKernelTime)
	end := st.end
	st.mu.Unlock()
	st.d.mu.Lock()
	st.d.end = later(st.d.end, end)
	st.d.mu.Unlock()
	return nil
}

func (st *wallStream) Record(e backend.Event) error {
	spin(wallRecordCost)
	st.d.st.records.Add(1)
	st.mu.Lock()
	at := later(st.end, time.Now())
	st.mu.Unlock()
	ev := e.(*wallEvent)
	ev.mu.Lock()
	ev.at = at
	ev.mu.Unlock()
	return nil
}

func (st *wallStream) WaitEvent(e backend.Event) error {
	ev := e.(*wallEvent)
	ev.mu.Lock()
	at := ev.at
	ev.mu.Unlock()
	st.mu.Lock()
	st.end = later(st.end, at)
	st.mu.Unlock()
	return nil
}

func (st *wallStream) Callback(fn func(error)) error {
	st.mu.Lock()
	end := st.end
	st.mu.Unlock()
	go func() {
		waitUntil(end)
		fn(nil)
	}()
	return nil
}

func (st *wallStream) Query() (bool, error) {
	st.mu.Lock()
	end := st.end
	st.mu.Unlock()
	if time.Now().Before(end) {
		return false, nil
	}
	return st.Stream.Query()
}

func (st *wallStream) Synchronize() error {
	st.d.st.streamSyncs.Add(1)
	st.mu.Lock()
	end := st.end
	st.mu.Unlock()
	waitUntil(end)
	return st.Stream.Synchronize()
}

func (e *wallEvent) time() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.at
}

func (e *wallEvent) Query() (bool, error) { return !time.Now().Before(e.time()), nil }

func (e *wallEvent) Synchronize() error {
	e.d.st.eventSyncs.Add(1)
	waitUntil(e.time())
	return nil
}

func (e *wallEvent) Elapsed(start backend.Event) (time.Duration, error) {
	spin(wallElapsedCost)
	s, ok := start.(*wallEvent)
	if !ok {
		return 0, backend.ErrInvalidArgument
	}
	return e.time().Sub(s.time()), nil
}

func (e *wallEvent) Destroy() error { return nil }

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// waitUntil waits for the device to reach t, yielding the CPU while it
// polls, as a spinning cuEventSynchronize would if it yielded.
func waitUntil(t time.Time) {
	for time.Now().Before(t) {
		runtime.Gosched()
	}
}

// BenchmarkWallLaunch is launch_bench (bench/launch_bench.c) on the
// wall-clock device through the driver, with a client on rings as the shim
// has: a burst of asynchronous empty launches and one synchronize (burst),
// then launches each followed by a synchronize (sync, after a burst). Besides the time it reports the
// completion events the scheduler recorded per launch, the host-side cost a
// GPU's timing feeds back into.
func BenchmarkWallLaunch(b *testing.B) {
	for _, mode := range []string{"burst", "sync"} {
		b.Run(mode, func(b *testing.B) {
			be := newWallBackend()
			ts := newDriverOn(b, be, Options{}).session("bench", 0)
			k := ts.emptyKernel()
			ts.useRings()
			launch := &v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}
			warm := 1000 // launch_bench's warm-up
			if mode == "sync" {
				warm = 20000 // and its burst, which the round trips follow
			}
			for range warm {
				if err := ts.rpc.Send(launch); err != nil {
					b.Fatal(err)
				}
			}
			ts.must(&v1.Synchronize{}, nil)
			records, launches := be.st.records.Load(), be.st.launches.Load()
			b.ResetTimer()
			for range b.N {
				if err := ts.rpc.Send(launch); err != nil {
					b.Fatal(err)
				}
				if mode == "sync" {
					ts.must(&v1.Synchronize{}, nil)
				}
			}
			submitted := time.Now()
			ts.must(&v1.Synchronize{}, nil)
			b.StopTimer()
			if mode == "burst" { // what the driver had left to issue when the client was done
				b.ReportMetric(float64(time.Since(submitted).Microseconds()), "final-sync-µs")
			}
			n := be.st.launches.Load() - launches
			b.ReportMetric(float64(be.st.records.Load()-records)/float64(max(n, 1)), "events/launch")
		})
	}
}

// newWallSession starts a driver on a wall-clock device under the priority
// policy, gives tenant the class, and opens a session of it with a launch of
// an empty kernel to send.
func newWallSession(t *testing.T, tenant string, class sched.Class) (wallBackend, *testSession, *v1.Launch) {
	t.Helper()
	be := newWallBackend()
	td := newDriverOn(t, be, Options{Sched: sched.Options{Policy: "priority"}})
	if err := td.d.sched.SetShare(tenant, sched.Share{Compute: 1, Copy: 1, Class: class, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	ts := td.session(tenant, 0)
	k := ts.emptyKernel()
	return be, ts, &v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}
}

// TestHighClassChargeSkipsIdle: a high-class service's launches, each
// synchronized, with the device idle a millisecond between them: most get
// no start event (the scheduler's highStartEvery), yet the GPU time charged
// to the service stays near its kernels' own, not the idle time between
// them that its accounting chain's latest end would count.
func TestHighClassChargeSkipsIdle(t *testing.T) {
	be, ts, launch := newWallSession(t, "hp", sched.ClassHigh)
	const n = 48
	records := be.st.records.Load()
	for range n {
		ts.must(launch, nil)
		ts.must(&v1.Synchronize{}, nil)
		time.Sleep(time.Millisecond)
	}
	if got := be.st.records.Load() - records; got >= 2*n {
		t.Errorf("%d events recorded for %d launches on an idle device, want fewer than %d (start events sampled)", got, n, 2*n)
	}
	var st sched.QueueStats
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if st = ts.s.queue.Stats(); st.Completed >= n || time.Now().After(deadline) {
			break
		}
	}
	if st.Completed < n {
		t.Fatalf("%d of %d launches accounted", st.Completed, n)
	}
	// Each kernel takes wallKernelTime (and its launch wallLaunchCost) of
	// the device; n milliseconds of idle device went by between them.
	if limit := time.Duration(n) * 100 * time.Microsecond; st.GPUTime > limit {
		t.Errorf("%v of GPU time charged for %d launches %v apart, want at most %v", st.GPUTime, n, time.Millisecond, limit)
	}
}
