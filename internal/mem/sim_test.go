package mem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

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
