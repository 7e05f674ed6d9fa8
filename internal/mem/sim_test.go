package mem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/mem"
)

func openSim(t testing.TB, memory uint64) backend.Device {
	t.Helper()
	dev, err := sim.New(sim.Options{Memory: memory}).Open(0)
	if err != nil {
		t.Fatalf("open sim device: %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

// The manager on the software GPU: what the device's own copies see agrees
// with the fake's checks (aliasing, backed guard ranges, scrubbing, limits),
// and everything goes back to the device at the end.
func TestOnSim(t *testing.T) {
	dev := openSim(t, 256<<20)
	gran := dev.Granularity()
	m, err := mem.NewManager(dev, mem.Options{DeviceMemoryLimit: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ta, tb := m.Tenant("a"), m.Tenant("b")
	ta.SetQuota(32 << 20)
	wa, err := m.OpenWindow(ta)
	if err != nil {
		t.Fatal(err)
	}
	wb, err := m.OpenWindow(tb)
	if err != nil {
		t.Fatal(err)
	}
	s, err := dev.NewStream(0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	write := func(p backend.DevicePtr, b []byte) {
		t.Helper()
		if err := s.CopyHtoD(p, b); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p backend.DevicePtr, n int) []byte {
		t.Helper()
		b := make([]byte, n)
		if err := s.CopyDtoH(b, p); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatalf("read %d bytes at %#x: %v", n, uint64(p), err)
		}
		return b
	}

	big, err := wa.Alloc(3*gran+100, 0)
	if err != nil {
		t.Fatal(err)
	}
	small, err := wa.Alloc(1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("gpuos"), 1000)
	write(big.Ptr()+backend.DevicePtr(gran)-7, data) // across a granule boundary
	write(small.Ptr(), data)
	att, err := wb.Attach(big, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(att.Ptr()+backend.DevicePtr(gran)-7, len(data)); !bytes.Equal(got, data) {
		t.Error("the attachment does not read what the owner wrote")
	}
	if !att.ReadOnly() {
		t.Error("attachment not read-only")
	}

	// Every granule of both guard ranges can be read without a fault.
	for _, w := range []*mem.Window{wa, wb} {
		lo, hi := w.GuardRange()
		for p := lo; p < hi; p += backend.DevicePtr(gran) {
			read(p, 1)
		}
	}

	if _, err := wa.Alloc(32<<20, 0); !errors.Is(err, v1.ErrQuotaExceeded) {
		t.Errorf("over quota: %v", err)
	}
	if _, err := wb.Alloc(60<<20, 0); !errors.Is(err, v1.ErrOutOfMemory) {
		t.Errorf("over the device limit: %v", err)
	}

	// The owner frees: the receiver's range is the sink now, readable, and
	// holds nothing of the owner's.
	if err := big.Free(); err != nil {
		t.Fatal(err)
	}
	if got := read(att.Ptr()+backend.DevicePtr(gran)-7, len(data)); bytes.Equal(got, data) {
		t.Error("the revoked attachment still reads the owner's data")
	}
	// Tenant b gets a's chunk from the pool, zeroed.
	b2, err := wb.Alloc(4*gran, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(b2.Ptr(), int(4*gran)); !bytes.Equal(got, make([]byte, 4*gran)) {
		t.Error("tenant b reads old data")
	}

	if err := wa.Close(); err != nil {
		t.Fatal(err)
	}
	if err := wb.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tn := range []*mem.Tenant{ta, tb} {
		if used, _ := tn.Usage(); used != 0 {
			t.Errorf("tenant %s: %d bytes charged after Close", tn.Name(), used)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if free, total, err := dev.MemoryInfo(); err != nil || free != total {
		t.Errorf("device memory after Close: %d free of %d, %v", free, total, err)
	}
}

func ExampleManager() {
	dev, err := sim.New(sim.Options{Memory: 1 << 30}).Open(0)
	if err != nil {
		panic(err)
	}
	defer dev.Close()
	m, err := mem.NewManager(dev, mem.Options{FreshChunksZeroed: true})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	alice := m.Tenant("alice")
	alice.SetQuota(64 << 20)
	w, _ := m.OpenWindow(alice) // one per session
	buf, _ := w.Alloc(1<<20, 0) // sub-allocated: 1 MiB < the 2 MiB granularity
	shared, _ := w.Alloc(8<<20, mem.Shareable)

	bob, _ := m.OpenWindow(m.Tenant("bob"))
	view, _ := bob.Attach(shared, true) // the same memory, at an address in bob's window

	used, quota := alice.Usage()
	fmt.Printf("window %d MiB; alice uses %d of %d MiB\n", w.Size()>>20, used>>20, quota>>20)
	a, off, _ := w.Resolve(buf.Ptr()+100, 10)
	fmt.Println(a == buf, off)
	fmt.Println(view.Size() == shared.Size(), view.ReadOnly())
	_, err = w.Alloc(64<<20, 0)
	fmt.Println(v1.CodeOf(err))
	// Output:
	// window 1024 MiB; alice uses 9 of 64 MiB
	// true 100
	// true true
	// quota exceeded
}

// Swapping on the software GPU: what its own copies read after an eviction
// and a swap-in is what was written, at the same address; every granule of
// an evicted window stays readable (the sink); the swap-in copies are timed
// with the device's events.
func TestSwapOnSim(t *testing.T) {
	dev := openSim(t, 256<<20)
	gran := dev.Granularity()
	m, err := mem.NewManager(dev, mem.Options{DeviceMemoryLimit: 8 * gran, SwapLimit: 32 * gran, MinResidency: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	wa, err := m.OpenWindow(m.Tenant("a"))
	if err != nil {
		t.Fatal(err)
	}
	wb, err := m.OpenWindow(m.Tenant("b"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := dev.NewStream(0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	a, err := wa.Alloc(5*gran, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("swap me "), int(5*gran/8))
	if err := s.CopyHtoD(a.Ptr(), data); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	b, err := wb.Alloc(5*gran, 0) // evicts a
	if err != nil {
		t.Fatal(err)
	}
	if wa.Resident() {
		t.Fatal("a was not evicted")
	}
	lo, hi := wa.GuardRange()
	for p := lo; p < hi; p += backend.DevicePtr(gran) {
		one := make([]byte, 1)
		if err := s.CopyDtoH(one, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatalf("reading an evicted window's guard range: %v", err)
	}
	if err := wa.MakeResident(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if err := s.CopyDtoH(got, a.Ptr()); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Error("data differs after eviction and swap-in")
	}
	st := m.Stats().Device
	if st.Evictions < 2 || st.SwapIns != 1 || st.SwapInCopyTime <= 0 || st.EvictCopyTime <= 0 {
		t.Errorf("stats %+v: want two evictions, one swap-in, both copies timed", st)
	}
	a.Free()
	b.Free()
}

// swapOnSim is two windows on the software GPU whose chunks of size bytes
// take turns on a device that holds one of them (beside the sink).
type swapOnSim struct {
	dev    backend.Device
	m      *mem.Manager
	wa, wb *mem.Window
	a, b   *mem.Allocation
	events chan mem.SwapEvent
}

func newSwapOnSim(t testing.TB, size uint64, opts mem.Options) *swapOnSim {
	t.Helper()
	dev := openSim(t, 2*size+64<<20)
	s := &swapOnSim{dev: dev, events: make(chan mem.SwapEvent, 1024)}
	opts.DeviceMemoryLimit = size + 8*dev.Granularity()
	opts.SwapLimit = 4 * size
	opts.MinResidency = -1
	opts.OnSwap = func(ev mem.SwapEvent) {
		select {
		case s.events <- ev:
		default:
		}
	}
	var err error
	if s.m, err = mem.NewManager(dev, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.m.Close() })
	if s.wa, err = s.m.OpenWindow(s.m.Tenant("a")); err != nil {
		t.Fatal(err)
	}
	if s.wb, err = s.m.OpenWindow(s.m.Tenant("b")); err != nil {
		t.Fatal(err)
	}
	if s.a, err = s.wa.Alloc(size, 0); err != nil {
		t.Fatal(err)
	}
	if s.b, err = s.wb.Alloc(size, 0); err != nil { // evicts a
		t.Fatal(err)
	}
	return s
}

// next returns the next event of kind k.
func (s *swapOnSim) next(t testing.TB, k mem.SwapKind) mem.SwapEvent {
	t.Helper()
	for {
		select {
		case ev := <-s.events:
			if ev.Kind == k {
				return ev
			}
		default:
			t.Fatalf("no %v event", k)
		}
	}
}

// An eviction copies into pinned host memory at the pinned rate of the sim's
// cost model, measured on the device's virtual clock: its Copy is exactly the
// cost of its pieces' copies as pinned memory (a pageable copy would cost
// almost five times as much), and it excludes pinning, which Pin reports
// when the store had no buffers ready. A swap-in's copies cost the pinned
// rate the other way.
func TestSwapCopyAtPinnedRate(t *testing.T) {
	const size, piece = 64 << 20, 16 << 20
	cost := sim.DefaultCostModel()
	pinnedCost := func(kind sim.CopyKind, pinned bool) time.Duration {
		var d time.Duration
		for n := uint64(size); n > 0; n -= min(n, piece) {
			d += cost.CopyTime(kind, min(n, piece), pinned)
		}
		return d
	}
	s := newSwapOnSim(t, size, mem.Options{SwapPiece: piece, SwapAhead: -1})
	first := s.next(t, mem.SwapOut)
	if want := pinnedCost(sim.CopyDtoH, true); first.Copy != want {
		t.Errorf("eviction copy took %v of device time, want %v (pinned; pageable would be %v)", first.Copy, want, pinnedCost(sim.CopyDtoH, false))
	}
	if first.Pinned != size || first.Pin <= 0 {
		t.Errorf("first eviction pinned %d bytes in %v; want %d bytes pinned, timed", first.Pinned, first.Pin, size)
	}
	if first.Duration < first.Pin+first.Quiesce {
		t.Errorf("eviction took %v in all, less than its pinning (%v) and quiescing (%v)", first.Duration, first.Pin, first.Quiesce)
	}
	for round := 0; round < 3; round++ {
		w, other := s.wa, s.wb
		if round%2 == 1 {
			w, other = other, w
		}
		if err := w.MakeResident(context.Background()); err != nil {
			t.Fatal(err)
		}
		if other.Resident() {
			t.Fatalf("round %d: both windows resident on a device that holds one", round)
		}
		out := s.next(t, mem.SwapOut)
		pass := s.next(t, mem.Resident)
		if want := pinnedCost(sim.CopyDtoH, true); out.Copy != want {
			t.Errorf("round %d: eviction copy %v, want %v", round, out.Copy, want)
		}
		if want := pinnedCost(sim.CopyHtoD, true); pass.CopyIn != want {
			t.Errorf("round %d: swap-in copies %v, want %v", round, pass.CopyIn, want)
		}
		// Round 0 evicts b into new buffers (a's are in use until its copy
		// back lands); then the store has buffers for every eviction.
		if round > 0 && (out.Pinned != 0 || out.Pin != 0) {
			t.Errorf("round %d: eviction pinned %d bytes (%v): the store had buffers", round, out.Pinned, out.Pin)
		}
	}
	st := s.m.Stats().Device
	if st.EvictPinned != 2*size || st.SwapHeld != 2*size {
		t.Errorf("evictions pinned %d bytes, the store holds %d; want %d both", st.EvictPinned, st.SwapHeld, 2*size)
	}
}

// With a reserve, the swap store pins in the background from the start, and
// the first eviction copies at once into memory pinned ahead.
func TestSwapReserve(t *testing.T) {
	const size, piece = 32 << 20, 8 << 20
	dev := openSim(t, 256<<20)
	m, err := mem.NewManager(dev, mem.Options{DeviceMemoryLimit: size + 8*dev.Granularity(), SwapLimit: 4 * size,
		SwapPiece: piece, SwapReserve: size, SwapAhead: -1, MinResidency: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for deadline := time.Now().Add(10 * time.Second); m.Stats().Device.SwapPinnedAhead < size; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the reserve was not pinned: %d bytes pinned, want %d", m.Stats().Device.SwapPinnedAhead, size)
		}
	}
	if st := m.Stats().Device; st.SwapHeld != size || st.SwapPinnedAhead != size {
		t.Errorf("reserve of %d: %d held, %d pinned ahead; want both %d", size, st.SwapHeld, st.SwapPinnedAhead, size)
	}
	wa, _ := m.OpenWindow(m.Tenant("a"))
	wb, _ := m.OpenWindow(m.Tenant("b"))
	if _, err := wa.Alloc(size, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := wb.Alloc(size, 0); err != nil {
		t.Fatal(err)
	}
	if st := m.Stats().Device; st.Evictions != 1 || st.EvictPinned != 0 || st.EvictPinTime != 0 || st.SwapHeld != size {
		t.Errorf("after one eviction: %d evictions, %d bytes pinned by them in %v, %d held; want 1, none, %d held",
			st.Evictions, st.EvictPinned, st.EvictPinTime, st.SwapHeld, size)
	}
}

// BenchmarkSwapSim moves 1 GiB chunks between two windows on the software
// GPU (each MakeResident evicts one chunk and brings the other back) and
// reports the throughput of the copies on the device's virtual clock, which
// the sim's cost model sets at 55 GB/s pinned both ways.
func BenchmarkSwapSim(b *testing.B) {
	const size = 1 << 30
	s := newSwapOnSim(b, size, mem.Options{})
	ws := []*mem.Window{s.wa, s.wb}
	for len(s.events) > 0 {
		<-s.events
	}
	var out, in, wall time.Duration
	var moves int
	for i := 0; b.Loop(); i++ {
		if err := ws[i%2].MakeResident(context.Background()); err != nil {
			b.Fatal(err)
		}
		ev := s.next(b, mem.SwapOut)
		pass := s.next(b, mem.Resident)
		out += ev.Copy
		in += pass.CopyIn
		wall += pass.Duration
		moves++
	}
	gbs := func(d time.Duration) float64 { return float64(moves) * size / d.Seconds() / 1e9 }
	b.ReportMetric(gbs(out), "evict-GB/s")
	b.ReportMetric(gbs(in), "swapin-GB/s")
	b.ReportMetric(gbs(wall), "pass-host-GB/s")
}

// A MakeResident pass that needs several chunks back evicts ahead: the copy
// of the next victim to host memory is under way while the pass remaps and
// copies back the chunk before it, so evictions overlap. Data survives
// every round both ways.
func TestSwapEvictsAhead(t *testing.T) {
	dev := openSim(t, 256<<20)
	gran := dev.Granularity()
	const chunks = 4
	size := 4 * gran
	m, err := mem.NewManager(dev, mem.Options{DeviceMemoryLimit: chunks*size + 4*gran, SwapLimit: 4 * chunks * size,
		SwapReserve: 2 * chunks * size, SwapAhead: -1, MinResidency: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := dev.NewStream(0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	type tenant struct {
		w    *mem.Window
		bufs []*mem.Allocation
		data [][]byte
	}
	var ts [2]*tenant
	for k := range ts {
		w, err := m.OpenWindow(m.Tenant(fmt.Sprint("t", k)))
		if err != nil {
			t.Fatal(err)
		}
		tn := &tenant{w: w}
		for i := 0; i < chunks; i++ {
			a, err := w.Alloc(size, 0)
			if err != nil {
				t.Fatal(err)
			}
			d := bytes.Repeat([]byte{byte(16*k + i + 1)}, int(size))
			if err := w.MakeResident(context.Background()); err != nil { // allocating may have evicted this window's own
				t.Fatal(err)
			}
			if err := s.CopyHtoD(a.Ptr(), d); err != nil {
				t.Fatal(err)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
			tn.bufs, tn.data = append(tn.bufs, a), append(tn.data, d)
		}
		ts[k] = tn
	}
	for round := 0; round < 4; round++ {
		tn := ts[round%2]
		if err := tn.w.MakeResident(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ts[1-round%2].w.Resident() {
			t.Fatalf("round %d: both windows resident on a device that holds one", round)
		}
		for i, a := range tn.bufs {
			got := make([]byte, size)
			if err := s.CopyDtoH(got, a.Ptr()); err != nil {
				t.Fatal(err)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tn.data[i]) {
				t.Fatalf("round %d: buffer %d differs after swapping", round, i)
			}
		}
	}
	if got := m.EvictionsOverlapped(); got < 2 {
		t.Errorf("at most %d evictions were under way at once; want the next victim's copy begun ahead", got)
	}
	if st := m.Stats().Device; st.EvictPinned != 0 {
		t.Errorf("evictions pinned %d bytes with a reserve that holds everything", st.EvictPinned)
	}
}

// countingHost counts how the swap store pins host memory.
type countingHost struct {
	backend.Device
	allocs, registers atomic.Int32
}

func (d *countingHost) AllocHost(n int) (backend.HostMemory, error) {
	d.allocs.Add(1)
	return d.Device.AllocHost(n)
}

func (d *countingHost) RegisterHost(b []byte) error {
	d.registers.Add(1)
	return d.Device.RegisterHost(b)
}

// With SwapPinRegister the store maps its own memory and registers it; data
// goes out and comes back through it, and closing the manager gives it back.
func TestSwapPinRegister(t *testing.T) {
	dev := &countingHost{Device: openSim(t, 256<<20)}
	gran := dev.Granularity()
	size := 8 * gran
	m, err := mem.NewManager(dev, mem.Options{DeviceMemoryLimit: size + 4*gran, SwapLimit: 4 * size, SwapPiece: 4 * gran,
		SwapPinRegister: true, MinResidency: -1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := dev.NewStream(0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	wa, _ := m.OpenWindow(m.Tenant("a"))
	wb, _ := m.OpenWindow(m.Tenant("b"))
	a, err := wa.Alloc(size, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("registered "), int(size/11)+1)[:size]
	if err := s.CopyHtoD(a.Ptr(), data); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if _, err := wb.Alloc(size, 0); err != nil { // evicts a
		t.Fatal(err)
	}
	if err := wa.MakeResident(context.Background()); err != nil { // evicts b
		t.Fatal(err)
	}
	got := make([]byte, size)
	if err := s.CopyDtoH(got, a.Ptr()); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Error("data differs after a round trip through registered host memory")
	}
	if r, al := dev.registers.Load(), dev.allocs.Load(); r == 0 || al != 0 {
		t.Errorf("the store registered %d pieces and allocated %d; want registered only", r, al)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}
