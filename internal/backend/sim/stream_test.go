package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
)

func words(b []byte) []uint32 {
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w
}

// A kernel then a copy on one stream: the copy sees the kernel's writes.
func TestStreamOrdersKernelThenCopy(t *testing.T) {
	d := openTest(t, smallOptions())
	_, fns := loadTest(t, d)
	p := alloc(t, d, G)
	s := newStream(t, d)
	for round := uint32(1); round <= 20; round++ {
		must(t, s.Launch(fns["fill"], grid1(4, 64), fillParams(p, 256, round)))
		out := make([]byte, 1024)
		must(t, s.CopyDtoH(out, p)) // pageable: returns once written
		for i, w := range words(out) {
			if w != round {
				t.Fatalf("round %d: word %d = %d", round, i, w)
			}
		}
	}
}

// Cross-stream waits: work on B that waits for an event recorded on A after
// a kernel sees the kernel's result, and does not run before it.
func TestCrossStreamEventWait(t *testing.T) {
	d := openTest(t, smallOptions())
	_, fns := loadTest(t, d)
	p := alloc(t, d, G)
	a, b := newStream(t, d), newStream(t, d)
	ev, err := d.NewEvent(0)
	must(t, err)

	gate := make(chan struct{})
	must(t, a.hold(gate))
	must(t, a.Launch(fns["fill"], grid1(1, 64), fillParams(p, 64, 7)))
	must(t, a.Record(ev))
	must(t, b.WaitEvent(ev))
	host, err := d.AllocHost(256)
	must(t, err)
	must(t, b.CopyDtoH(host.Bytes(), p)) // pinned: asynchronous

	if done, err := b.Query(); done || err != nil {
		t.Fatalf("B.Query while A is held = %v, %v; want false, nil", done, err)
	}
	if done, err := ev.Query(); done || err != nil {
		t.Fatalf("event Query while A is held = %v, %v", done, err)
	}
	close(gate)
	must(t, b.Synchronize())
	for i, w := range words(host.Bytes()) {
		if w != 7 {
			t.Fatalf("word %d = %d after the wait, want 7", i, w)
		}
	}
	if done, err := ev.Query(); !done || err != nil {
		t.Fatalf("event Query after = %v, %v", done, err)
	}
	// A wait on an event never recorded is a no-op.
	fresh, err := d.NewEvent(0)
	must(t, err)
	must(t, b.WaitEvent(fresh))
	must(t, b.Synchronize())
}

// Waiting on an event captures its latest record at the time of the call,
// as in CUDA: re-recording later does not change what earlier waits wait for.
func TestWaitCapturesLatestRecord(t *testing.T) {
	d := openTest(t, smallOptions())
	a, b := newStream(t, d), newStream(t, d)
	ev, err := d.NewEvent(0)
	must(t, err)
	must(t, a.Record(ev)) // completes at once
	must(t, a.Synchronize())
	must(t, b.WaitEvent(ev))
	gate := make(chan struct{})
	must(t, a.hold(gate))
	must(t, a.Record(ev)) // a later record, held
	must(t, b.Synchronize())
	if done, _ := ev.Query(); done {
		t.Fatal("event complete while its latest record is held")
	}
	close(gate)
	must(t, ev.Synchronize())
}

// Host memory paths: pinned copies are asynchronous; pageable host-to-device
// copies consume the source before returning; pageable device-to-host copies
// write the destination before returning.
func TestHostMemoryPaths(t *testing.T) {
	d := openTest(t, smallOptions())
	p := alloc(t, d, G)
	s := newStream(t, d)

	// Pinned HtoD reads the source when it runs.
	pinned, err := d.AllocHost(64)
	must(t, err)
	copy(pinned.Bytes(), bytes.Repeat([]byte{1}, 64))
	gate := make(chan struct{})
	must(t, s.hold(gate))
	must(t, s.CopyHtoD(p, pinned.Bytes()))
	copy(pinned.Bytes(), bytes.Repeat([]byte{2}, 64)) // before it runs
	close(gate)
	out := make([]byte, 64)
	must(t, s.CopyDtoH(out, p))
	if !bytes.Equal(out, bytes.Repeat([]byte{2}, 64)) {
		t.Fatalf("pinned HtoD copied %v, want the bytes at run time (2s)", out[:4])
	}

	// Pageable HtoD is staged at the call.
	src := bytes.Repeat([]byte{3}, 64)
	gate = make(chan struct{})
	must(t, s.hold(gate))
	must(t, s.CopyHtoD(p, src))
	copy(src, bytes.Repeat([]byte{4}, 64))
	close(gate)
	must(t, s.CopyDtoH(out, p))
	if !bytes.Equal(out, bytes.Repeat([]byte{3}, 64)) {
		t.Fatalf("pageable HtoD copied %v, want the bytes at the call (3s)", out[:4])
	}

	// Pinned DtoH writes when it runs, after the call returned.
	gate = make(chan struct{})
	must(t, s.hold(gate))
	dst := pinned.Bytes()
	clear(dst)
	must(t, s.CopyDtoH(dst, p))
	if dst[0] != 0 {
		t.Fatal("pinned DtoH wrote before the stream reached it")
	}
	close(gate)
	must(t, s.Synchronize())
	if !bytes.Equal(dst, bytes.Repeat([]byte{3}, 64)) {
		t.Fatalf("pinned DtoH wrote %v", dst[:4])
	}

	// RegisterHost memory is pinned too (any sub-slice of it).
	reg := make([]byte, 4096)
	must(t, d.RegisterHost(reg))
	if !d.host.pinned(reg[100:200]) || d.host.pinned(out) || !d.host.pinned(pinned.Bytes()[8:]) {
		t.Fatal("pinned classification wrong")
	}
	must(t, d.UnregisterHost(reg))
	if d.host.pinned(reg) {
		t.Fatal("still pinned after UnregisterHost")
	}
	must(t, pinned.Free())
	if d.host.pinned(pinned.Bytes()) {
		t.Fatal("AllocHost memory still pinned after Free")
	}
}

func TestHostMemoryErrors(t *testing.T) {
	d := openTest(t, smallOptions())
	reg := make([]byte, 4096)
	must(t, d.RegisterHost(reg))
	h, err := d.AllocHost(128)
	must(t, err)
	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"alloc zero", func() error { _, err := d.AllocHost(0); return err }, backend.ErrInvalidArgument},
		{"alloc negative", func() error { _, err := d.AllocHost(-1); return err }, backend.ErrInvalidArgument},
		{"alloc absurd", func() error { _, err := d.AllocHost(1 << 50); return err }, backend.ErrInvalidArgument},
		{"register empty", func() error { return d.RegisterHost(nil) }, backend.ErrInvalidArgument},
		{"register twice", func() error { return d.RegisterHost(reg) }, backend.ErrInvalidArgument},
		{"register overlapping", func() error { return d.RegisterHost(reg[1000:]) }, backend.ErrInvalidArgument},
		{"register AllocHost memory", func() error { return d.RegisterHost(h.Bytes()) }, backend.ErrInvalidArgument},
		{"unregister unknown", func() error { return d.UnregisterHost(make([]byte, 8)) }, backend.ErrInvalidArgument},
		{"unregister middle", func() error { return d.UnregisterHost(reg[8:]) }, backend.ErrInvalidArgument},
		{"unregister AllocHost memory", func() error { return d.UnregisterHost(h.Bytes()) }, backend.ErrInvalidArgument},
		{"free twice", func() error {
			h2, err := d.AllocHost(8)
			must(t, err)
			must(t, h2.Free())
			return h2.Free()
		}, ErrInvalidHandle},
	}
	for _, tt := range tests {
		if err := tt.op(); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// exactCost is a cost model whose numbers are easy to check by hand: one
// thread-instruction per ns (with one SM), one byte per ns everywhere.
var exactCost = CostModel{
	LaunchOverhead:             1000,
	ClockMHz:                   1000,
	IssuePerSMPerClock:         1,
	GlobalBytesPerSecond:       1e9,
	CopyOverhead:               100,
	PinnedHtoDBytesPerSecond:   1e9,
	PinnedDtoHBytesPerSecond:   1e9,
	PageableHtoDBytesPerSecond: 5e8, // 2 ns per byte
	PageableDtoHBytesPerSecond: 5e8,
	DtoDBytesPerSecond:         1e9,
}

// Virtual times follow the model exactly: start = max(stream's previous end,
// engine's previous end, awaited events, host floor); end = start + cost.
func TestVirtualTimesExact(t *testing.T) {
	run := func() []time.Duration {
		d := openTest(t, Options{Granularity: G, Memory: 16 * G, SMs: 1, Cost: exactCost})
		_, fns := loadTest(t, d)
		p := alloc(t, d, G)
		a, b := newStream(t, d), newStream(t, d)
		pin, err := d.AllocHost(4096)
		must(t, err)
		evs := make([]backend.Event, 6)
		for i := range evs {
			evs[i], err = d.NewEvent(0)
			must(t, err)
		}
		must(t, a.Record(evs[0]))                                          // 0
		must(t, a.CopyHtoD(p, pin.Bytes()[:1000]))                         // HtoD [0, 1100)
		must(t, a.Launch(fns["work"], grid1(1, 32), workParams(1000, 0)))  // compute [1100, 3100)
		must(t, a.Record(evs[1]))                                          // 3100
		must(t, b.Launch(fns["work"], grid1(1, 32), workParams(500, 0)))   // compute free at 3100: [3100, 4600)
		must(t, b.CopyHtoD(p+2000, pin.Bytes()[:200]))                     // HtoD free at 1100, stream at 4600: [4600, 4900)
		must(t, b.Record(evs[2]))                                          // 4900
		must(t, a.Launch(fns["work"], grid1(1, 32), workParams(10, 3000))) // memory-bound: [4600, 4600+1000+3000) = 8600
		must(t, a.WaitEvent(evs[2]))                                       // a at 8600 > 4900
		must(t, a.CopyDtoH(pin.Bytes()[:300], p))                          // DtoH [8600, 9000)
		must(t, a.Record(evs[3]))                                          // 9000
		must(t, b.WaitEvent(evs[3]))                                       // b jumps to 9000
		must(t, b.Memset(p, 0, 4, 100))                                    // compute [9000, 9500)
		must(t, b.CopyDtoD(p+1024, p, 50))                                 // compute [9500, 9650)
		must(t, b.Record(evs[4]))                                          // 9650
		must(t, d.Synchronize())                                           // host floor 9650
		c := newStream(t, d)                                               // a new stream starts at the floor
		must(t, c.CopyDtoH(make([]byte, 100), p))                          // pageable DtoH [9650, 9650+100+200)
		must(t, c.Record(evs[5]))                                          // 9950
		must(t, c.Synchronize())
		var got []time.Duration
		for i := 1; i < len(evs); i++ {
			el, err := evs[i].Elapsed(evs[0])
			must(t, err)
			got = append(got, el)
		}
		return append(got, d.VirtualTime(), a.VirtualTime(), b.VirtualTime(), c.VirtualTime())
	}
	want := []time.Duration{3100, 4900, 9000, 9650, 9950, 9950, 9000, 9650, 9950}
	for i := 0; i < 5; i++ {
		got := run()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("run %d: times = %v, want %v", i, got, want)
		}
	}
}

// The default cost model on a real workload shape: times are reproducible
// to the nanosecond, whatever the goroutine scheduling.
func TestVirtualTimesReproducible(t *testing.T) {
	run := func() string {
		d := openTest(t, Options{Granularity: G, Memory: 16 * G})
		_, fns := loadTest(t, d)
		p := alloc(t, d, 4*G)
		var ss []*Stream
		for i := 0; i < 4; i++ {
			ss = append(ss, newStream(t, d))
		}
		buf := make([]byte, G)
		for round := 0; round < 10; round++ {
			for i, s := range ss {
				off := backend.DevicePtr(i) * G
				must(t, s.CopyHtoD(p+off, buf[:1000*(i+1)]))
				must(t, s.Launch(fns["fill"], grid1(uint32(i+1), 128), fillParams(p+off, 100, uint32(round))))
			}
		}
		must(t, d.Synchronize())
		var out []time.Duration
		for _, s := range ss {
			out = append(out, s.VirtualTime())
		}
		return fmt.Sprint(out, d.VirtualTime())
	}
	first := run()
	for i := 0; i < 5; i++ {
		if got := run(); got != first {
			t.Fatalf("run %d: %s, first run %s", i, got, first)
		}
	}
}

func TestCallbacks(t *testing.T) {
	d := openTest(t, Options{Granularity: G, Memory: 16 * G, NonFatalFaults: true})
	_, fns := loadTest(t, d)
	p := alloc(t, d, G)
	s := newStream(t, d)
	var (
		mu    sync.Mutex
		order []string
	)
	note := func(name string) func(error) {
		return func(err error) {
			mu.Lock()
			order = append(order, fmt.Sprintf("%s:%v", name, err != nil))
			mu.Unlock()
		}
	}
	must(t, s.Launch(fns["fill"], grid1(1, 4), fillParams(p, 4, 1)))
	must(t, s.Callback(note("after fill")))
	must(t, s.Launch(fns["poke"], grid1(1, 1), ptrParam(8))) // faults, not fatally
	var got error
	must(t, s.Callback(func(err error) { got = err; note("after fault")(err) }))
	ev, err := d.NewEvent(0)
	must(t, err)
	must(t, s.Record(ev))
	must(t, s.Callback(note("later")))
	if err := s.Synchronize(); !errors.Is(err, ErrIllegalAddress) || !errors.Is(err, ErrLaunchFailed) {
		t.Fatalf("Synchronize = %v, want the launch's illegal address", err)
	}
	want := "[after fill:false after fault:true later:true]"
	if fmt.Sprint(order) != want {
		t.Fatalf("callbacks %v, want %s", order, want)
	}
	if v1.CodeOf(got) != v1.CodeLaunchFailed {
		t.Fatalf("callback error code %v", v1.CodeOf(got))
	}
	if err := ev.Synchronize(); !errors.Is(err, ErrIllegalAddress) {
		t.Fatalf("event recorded after the fault: Synchronize = %v", err)
	}
	if done, err := ev.Query(); !done || !errors.Is(err, ErrIllegalAddress) {
		t.Fatalf("event recorded after the fault: Query = %v, %v", done, err)
	}
	// The device is still usable; other streams are unaffected.
	o := newStream(t, d)
	must(t, o.Launch(fns["fill"], grid1(1, 4), fillParams(p, 4, 9)))
	must(t, o.Synchronize())
	if err := s.Callback(nil); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("Callback(nil) = %v", err)
	}
}

// A fatal fault loses the context: every later call fails with an error that
// matches ErrContextLost and names the fault; queued work is dropped but its
// callbacks run; another device of the same backend is unaffected.
func TestFaultLosesContext(t *testing.T) {
	b := New(Options{Devices: 2, Granularity: G, Memory: 16 * G})
	devs := make([]*Device, 2)
	for i := range devs {
		dev, err := b.Open(i)
		must(t, err)
		devs[i] = dev.(*Device)
		useGoPrograms(devs[i], nil)
		t.Cleanup(func() { _ = dev.Close() })
	}
	d, other := devs[0], devs[1]
	_, fns := loadTest(t, d)
	p := alloc(t, d, G)
	s := newStream(t, d)
	ev, err := d.NewEvent(0)
	must(t, err)
	chunkBefore, err := d.CreateChunk(G)
	must(t, err)

	must(t, s.CopyHtoD(p, []byte("wxyz")))
	gate := make(chan struct{})
	must(t, s.hold(gate))
	must(t, s.Launch(fns["poke"], grid1(1, 1), ptrParam(uint64(p)+2*G))) // past the mapping
	out := make([]byte, 4)
	pin, err := d.AllocHost(4)
	must(t, err)
	must(t, s.CopyDtoH(pin.Bytes(), p))
	cbErr := make(chan error, 1)
	must(t, s.Callback(func(err error) { cbErr <- err }))
	must(t, s.Record(ev))
	close(gate)

	err = s.Synchronize()
	if !errors.Is(err, backend.ErrContextLost) || v1.CodeOf(err) != v1.CodeDeviceLost {
		t.Fatalf("Synchronize = %v, want ErrContextLost", err)
	}
	if !errors.Is(err, ErrIllegalAddress) {
		t.Fatalf("lost error %q does not carry the first fault", err)
	}
	if e := <-cbErr; !errors.Is(e, backend.ErrContextLost) {
		t.Fatalf("callback after the fault got %v", e)
	}
	if d.Lost() == nil {
		t.Fatal("Lost() = nil")
	}
	m, err := d.LoadModule([]byte(".version 9.0 // go:test"))
	_ = m
	calls := map[string]error{
		"Reserve":        func() error { _, err := d.Reserve(G, 0); return err }(),
		"CreateChunk":    func() error { _, err := d.CreateChunk(G); return err }(),
		"Chunk.Release":  chunkBefore.Release(),
		"Map":            d.Map(p, G, chunkBefore, 0),
		"SetAccess":      d.SetAccess(p, G),
		"MemoryInfo":     func() error { _, _, err := d.MemoryInfo(); return err }(),
		"AllocHost":      func() error { _, err := d.AllocHost(8); return err }(),
		"LoadModule":     err,
		"NewStream":      func() error { _, err := d.NewStream(0); return err }(),
		"NewEvent":       func() error { _, err := d.NewEvent(0); return err }(),
		"Synchronize":    d.Synchronize(),
		"Launch":         s.Launch(fns["fill"], grid1(1, 1), fillParams(p, 1, 1)),
		"CopyDtoH":       s.CopyDtoH(out, p),
		"Query":          func() error { _, err := s.Query(); return err }(),
		"Event.Query":    func() error { _, err := ev.Query(); return err }(),
		"Event.Elapsed":  func() error { _, err := ev.Elapsed(ev); return err }(),
		"Function":       func() error { _, err := fnsModule(t, fns).Function("fill"); return err }(),
		"Stream.Destroy": s.Destroy(),
	}
	for name, err := range calls {
		if !errors.Is(err, backend.ErrContextLost) {
			t.Errorf("%s after the fault: %v, want ErrContextLost", name, err)
		}
	}
	if pin.Bytes()[0] != 0 {
		t.Error("a copy queued after the fault ran")
	}
	// The ordinal stays lost for this backend (a real GPU needs a new process).
	must(t, d.Close())
	if _, err := b.Open(0); !errors.Is(err, backend.ErrContextLost) {
		t.Fatalf("reopen of a lost device: %v", err)
	}

	// The other device works normally.
	_, ofns := loadTest(t, other)
	op := alloc(t, other, G)
	os := newStream(t, other)
	must(t, os.Launch(ofns["fill"], grid1(1, 16), fillParams(op, 16, 5)))
	buf := make([]byte, 64)
	must(t, os.CopyDtoH(buf, op))
	for i, w := range words(buf) {
		if w != 5 {
			t.Fatalf("other device word %d = %d", i, w)
		}
	}
	must(t, other.Synchronize())
	if other.Lost() != nil {
		t.Fatal("the other device is lost")
	}
}

func fnsModule(_ *testing.T, fns map[string]backend.Function) backend.Module {
	return fns["fill"].(*function).mod
}

// A copy that reaches memory unmapped after it was enqueued is a device fault.
func TestCopyFaultAtRunTime(t *testing.T) {
	d := openTest(t, smallOptions())
	p := alloc(t, d, G)
	s := newStream(t, d)
	gate := make(chan struct{})
	must(t, s.hold(gate))
	must(t, s.CopyHtoD(p, make([]byte, 16)))
	must(t, d.Unmap(p, G))
	close(gate)
	if err := s.Synchronize(); !errors.Is(err, backend.ErrContextLost) || !errors.Is(err, ErrIllegalAddress) {
		t.Fatalf("Synchronize = %v", err)
	}
}

func TestEvents(t *testing.T) {
	d := openTest(t, smallOptions())
	s := newStream(t, d)
	timed, err := d.NewEvent(0)
	must(t, err)
	untimed, err := d.NewEvent(backend.EventDisableTiming | backend.EventBlockingSync)
	must(t, err)
	never, err := d.NewEvent(0)
	must(t, err)
	if _, err := d.NewEvent(1 << 7); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("NewEvent(bad flags) = %v", err)
	}
	if done, err := never.Query(); !done || err != nil {
		t.Fatalf("Query of a never-recorded event = %v, %v; want true", done, err)
	}
	must(t, never.Synchronize())

	must(t, s.Record(timed))
	must(t, s.Record(untimed))
	must(t, s.Synchronize())
	if _, err := timed.Elapsed(untimed); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("Elapsed with a no-timing event = %v", err)
	}
	if _, err := timed.Elapsed(never); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("Elapsed from a never-recorded event = %v", err)
	}
	gate := make(chan struct{})
	pending, err := d.NewEvent(0)
	must(t, err)
	must(t, s.hold(gate))
	must(t, s.Record(pending))
	if _, err := pending.Elapsed(timed); !errors.Is(err, v1.ErrNotReady) {
		t.Fatalf("Elapsed of a pending event = %v, want NotReady", err)
	}
	close(gate)
	must(t, pending.Synchronize())
	if el, err := pending.Elapsed(timed); err != nil || el != 0 {
		t.Fatalf("Elapsed = %v, %v; want 0 (no work between)", el, err)
	}

	other := openTest(t, smallOptions())
	foreign, err := other.NewEvent(0)
	must(t, err)
	if err := s.Record(foreign); !errors.Is(err, ErrInvalidHandle) {
		t.Fatalf("Record of another device's event = %v", err)
	}
	// Waiting on another device's event is allowed.
	os := newStream(t, other)
	must(t, os.Record(foreign))
	must(t, s.WaitEvent(foreign))
	must(t, s.Synchronize())

	must(t, timed.Destroy())
	if err := timed.Destroy(); !errors.Is(err, ErrInvalidHandle) {
		t.Fatalf("second Destroy = %v", err)
	}
	if err := s.Record(timed); !errors.Is(err, ErrInvalidHandle) {
		t.Fatalf("Record of a destroyed event = %v", err)
	}
	if err := s.WaitEvent(timed); !errors.Is(err, ErrInvalidHandle) {
		t.Fatalf("WaitEvent on a destroyed event = %v", err)
	}
}

func TestStreamPriorities(t *testing.T) {
	d := openTest(t, smallOptions())
	least, greatest := d.StreamPriorityRange()
	if least != 0 || greatest != -5 {
		t.Fatalf("range = %d, %d; want 0, -5", least, greatest)
	}
	for _, tc := range []struct{ ask, want int }{{0, 0}, {-3, -3}, {-5, -5}, {-9, -5}, {4, 0}} {
		s, err := d.NewStream(tc.ask)
		must(t, err)
		if got := s.(*Stream).Priority(); got != tc.want {
			t.Errorf("NewStream(%d).Priority() = %d, want %d", tc.ask, got, tc.want)
		}
	}
}

// Destroy lets pending work finish first; a destroyed stream refuses work.
func TestStreamDestroy(t *testing.T) {
	d := openTest(t, smallOptions())
	p := alloc(t, d, G)
	s := newStream(t, d)
	pin, err := d.AllocHost(8)
	must(t, err)
	must(t, s.CopyHtoD(p, []byte("12345678")))
	gate := make(chan struct{})
	must(t, s.hold(gate))
	must(t, s.CopyDtoH(pin.Bytes(), p))
	destroyed := make(chan error)
	go func() { destroyed <- s.Destroy() }()
	select {
	case <-destroyed:
		t.Fatal("Destroy returned while work was pending")
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	must(t, <-destroyed)
	if string(pin.Bytes()) != "12345678" {
		t.Fatalf("pending copy did not complete before Destroy returned: %q", pin.Bytes())
	}
	for name, err := range map[string]error{
		"Destroy":     s.Destroy(),
		"CopyHtoD":    s.CopyHtoD(p, []byte{1}),
		"Synchronize": s.Synchronize(),
		"Query":       func() error { _, err := s.Query(); return err }(),
	} {
		if !errors.Is(err, ErrInvalidHandle) {
			t.Errorf("%s on a destroyed stream: %v", name, err)
		}
	}
}

// Close aborts a running kernel and drops queued work; callbacks still run.
func TestCloseWithPendingWork(t *testing.T) {
	b := New(smallOptions())
	dev, err := b.Open(0)
	must(t, err)
	d := dev.(*Device)
	useGoPrograms(d, nil)
	_, fns := loadTest(t, d)
	s := newStream(t, d)
	must(t, s.Launch(fns["wait"], grid1(1, 1), nil))
	cb := make(chan error, 1)
	must(t, s.Callback(func(err error) { cb <- err }))
	must(t, d.Close())
	if err := <-cb; !errors.Is(err, ErrClosed) {
		t.Fatalf("callback after Close got %v", err)
	}
	if err := d.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := d.Reserve(G, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reserve after Close = %v", err)
	}
	// The ordinal can be opened again, with fresh memory.
	dev2, err := b.Open(0)
	must(t, err)
	defer dev2.Close()
	if free, total, _ := dev2.MemoryInfo(); free != total {
		t.Fatalf("reopened device has %d of %d free", free, total)
	}
}

// Many goroutines, each with its own stream and memory, launching and
// copying while others map and unmap: run with -race.
func TestConcurrentStreams(t *testing.T) {
	d := openTest(t, Options{Granularity: G, Memory: 64 * G})
	_, fns := loadTest(t, d)
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			errs <- func() error {
				p, err := allocErr(d, G)
				if err != nil {
					return err
				}
				s, err := d.NewStream(-w % 6)
				if err != nil {
					return err
				}
				defer s.Destroy()
				ev, err := d.NewEvent(0)
				if err != nil {
					return err
				}
				out := make([]byte, 256)
				for round := 0; round < 30; round++ {
					v := uint32(w*1000 + round)
					if err := s.Memset(p, 0, 4, 64); err != nil {
						return err
					}
					if err := s.Launch(fns["fill"], grid1(2, 32), fillParams(p, 64, v)); err != nil {
						return err
					}
					if err := s.Record(ev); err != nil {
						return err
					}
					if err := s.CopyDtoH(out, p); err != nil {
						return err
					}
					for i, got := range words(out) {
						if got != v {
							return fmt.Errorf("worker %d round %d word %d = %d", w, round, i, got)
						}
					}
				}
				return ev.Synchronize()
			}()
		}(w)
	}
	wg.Add(1)
	go func() { // VMM churn beside the kernels
		defer wg.Done()
		errs <- func() error {
			for i := 0; i < 50; i++ {
				p, err := d.Reserve(2*G, 0)
				if err != nil {
					return err
				}
				c, err := d.CreateChunk(2 * G)
				if err != nil {
					return err
				}
				if err := d.Map(p, 2*G, c, 0); err != nil {
					return err
				}
				if err := d.SetAccess(p, 2*G); err != nil {
					return err
				}
				if err := d.Unmap(p, 2*G); err != nil {
					return err
				}
				if err := c.Release(); err != nil {
					return err
				}
				if err := d.Release(p, 2*G); err != nil {
					return err
				}
			}
			return nil
		}()
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(t, d.Synchronize())
}

// A fence is reached only once the stream ran up to it, and never after
// failed work: the stream's Query reports the failure instead.
func TestFence(t *testing.T) {
	d := openTest(t, Options{Granularity: G, Memory: 16 * G, NonFatalFaults: true})
	_, fns := loadTest(t, d)
	s := newStream(t, d)
	gate := make(chan struct{})
	must(t, s.hold(gate))
	f, err := s.Fence()
	must(t, err)
	time.Sleep(10 * time.Millisecond)
	if f.Reached() {
		t.Fatal("fence reached while the stream is held before it")
	}
	close(gate)
	for deadline := time.Now().Add(5 * time.Second); !f.Reached(); {
		if time.Now().After(deadline) {
			t.Fatal("fence not reached once the stream ran")
		}
		time.Sleep(time.Millisecond)
	}

	must(t, s.Launch(fns["poke"], grid1(1, 1), ptrParam(8))) // faults, not fatally
	after, err := s.Fence()
	must(t, err)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		done, qerr := s.Query()
		if qerr != nil {
			if !errors.Is(qerr, ErrIllegalAddress) {
				t.Fatalf("Query after the fault = %v", qerr)
			}
			break
		}
		if done || time.Now().After(deadline) {
			t.Fatalf("Query = %v, nil after a faulting launch", done)
		}
	}
	if err := s.Synchronize(); !errors.Is(err, ErrIllegalAddress) {
		t.Fatalf("Synchronize after the fault = %v", err)
	}
	if after.Reached() {
		t.Fatal("a fence after failed work was reached")
	}
}
