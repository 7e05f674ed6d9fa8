package mem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
)

// swapOpts is a device limit of limitGran granules with room to swap, and no
// protection of windows just made resident (tests choose when it matters).
func swapOpts(limitGran uint64) Options {
	return Options{DeviceMemoryLimit: limitGran * testGran, SwapLimit: 64 * testGran, SwapPiece: 2 * testGran,
		MinResidency: -1, MinWindow: 1 << 20}
}

func pattern(seed byte, n uint64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func (h *harness) write(p backend.DevicePtr, b []byte) {
	h.t.Helper()
	if err := h.dev.write(p, b); err != nil {
		h.t.Fatalf("write %#x: %v", uint64(p), err)
	}
}

func (h *harness) read(p backend.DevicePtr, n uint64) []byte {
	h.t.Helper()
	b, err := h.dev.read(p, n)
	if err != nil {
		h.t.Fatalf("read %#x: %v", uint64(p), err)
	}
	return b
}

func (h *harness) resident(w *Window) {
	h.t.Helper()
	if err := w.MakeResident(context.Background()); err != nil {
		h.t.Fatalf("MakeResident(window %d): %v", w.ID(), err)
	}
	if !w.Resident() {
		h.t.Fatalf("window %d not resident after MakeResident", w.ID())
	}
}

// Two windows that each fill most of the device take turns: each allocation
// or MakeResident evicts the other's chunk to host memory, the data comes
// back at the same address, and the guard invariant holds throughout (the
// harness checks every unmap happens while its window is quiesced).
func TestSwapTakesTurns(t *testing.T) {
	h := newHarness(t, testTotal, swapOpts(8))
	var events []SwapEvent
	h.m.onSwap = func(e SwapEvent) { events = append(events, e) }
	ta, tb := h.m.Tenant("a"), h.m.Tenant("b")
	wa, wb := h.open(ta), h.open(tb)
	size := uint64(5 * testGran)
	a := h.alloc(wa, size, 0)
	da := pattern(1, size)
	h.write(a.Ptr(), da)

	b := h.alloc(wb, size, 0) // 1 sink + 5 + 5 > 8: a is evicted
	if wa.Resident() || !wb.Resident() {
		t.Fatalf("after b's allocation: a resident %v, b resident %v; want false, true", wa.Resident(), wb.Resident())
	}
	if got := h.read(a.Ptr(), size); bytes.Equal(got, da) {
		t.Errorf("evicted a still reads its data: its granules should be sink-backed")
	}
	db := pattern(2, size)
	h.write(b.Ptr(), db)

	for round := 0; round < 3; round++ {
		h.resident(wa)
		if wb.Resident() {
			t.Fatalf("round %d: b stayed resident while a came back", round)
		}
		if got := h.read(a.Ptr(), size); !bytes.Equal(got, da) {
			t.Fatalf("round %d: a's data after swap-in differs", round)
		}
		h.resident(wb)
		if got := h.read(b.Ptr(), size); !bytes.Equal(got, db) {
			t.Fatalf("round %d: b's data after swap-in differs", round)
		}
		h.check()
	}
	st := h.m.Stats()
	if st.Device.Evictions == 0 || st.Device.SwapIns == 0 || st.Device.Evictions != st.Device.SwapIns+1 {
		t.Errorf("evictions %d swap-ins %d; want one more eviction than swap-ins (a is out)", st.Device.Evictions, st.Device.SwapIns)
	}
	if st.Device.Swapped != size || st.Device.Physical > st.Device.Limit {
		t.Errorf("swapped %d physical %d limit %d; want %d swapped and physical under the limit", st.Device.Swapped, st.Device.Physical, st.Device.Limit, size)
	}
	for _, ts := range st.Tenants {
		if ts.Evictions == 0 {
			t.Errorf("tenant %s: no evictions counted", ts.Name)
		}
	}
	var outs, ins, passes int
	for _, e := range events {
		switch e.Kind {
		case Resident:
			passes++
			if e.Bytes != size || e.Evicted != size {
				t.Errorf("resident pass %+v: want %d bytes in and %d evicted", e, size, size)
			}
		case SwapOut:
			outs++
			if len(e.Windows) != 1 || e.Bytes != size {
				t.Errorf("eviction event %+v: want one window and %d bytes", e, size)
			}
		case SwapIn:
			ins++
		}
	}
	if passes != 6 {
		t.Errorf("%d resident passes reported, want 6", passes)
	}
	if uint64(outs) != st.Device.Evictions || uint64(ins) != st.Device.SwapIns {
		t.Errorf("events: %d evictions %d swap-ins, stats %d and %d", outs, ins, st.Device.Evictions, st.Device.SwapIns)
	}
	h.free(a)
	h.free(b)
	if st := h.m.Stats(); st.Device.Swapped != 0 || !wa.Resident() {
		t.Errorf("after freeing: swapped %d, a resident %v; want 0, true", st.Device.Swapped, wa.Resident())
	}
}

// A chunk attached in another window is evicted from both; bringing either
// window back brings the other with it; Attach of an evicted buffer brings
// it back first.
func TestSwapShared(t *testing.T) {
	h := newHarness(t, testTotal, swapOpts(8))
	ta, tb, tc := h.m.Tenant("a"), h.m.Tenant("b"), h.m.Tenant("c")
	wa, wb, wc := h.open(ta), h.open(tb), h.open(tc)
	size := uint64(3 * testGran)
	a := h.alloc(wa, size, Shareable)
	att, err := wb.Attach(a, false)
	if err != nil {
		t.Fatal(err)
	}
	d := pattern(3, size)
	h.write(a.Ptr(), d)
	big := h.alloc(wc, 6*testGran, 0) // evicts a's chunk
	if wa.Resident() || wb.Resident() {
		t.Fatalf("a resident %v, b resident %v after eviction of the shared chunk; want both false", wa.Resident(), wb.Resident())
	}
	h.resident(wb)
	if !wa.Resident() {
		t.Error("owner window stayed non-resident after the receiver brought the chunk back")
	}
	if got := h.read(att.Ptr(), size); !bytes.Equal(got, d) {
		t.Error("receiver reads other data after swap-in")
	}
	if wc.Resident() {
		t.Error("c stayed resident although its chunk had to go")
	}
	// Evict a's chunk again, then attach it into a third window.
	h.resident(wc)
	if wa.Resident() {
		t.Fatal("a resident after c came back")
	}
	wd := h.open(h.m.Tenant("d"))
	att2, err := wd.Attach(a, true)
	if err != nil {
		t.Fatalf("Attach of an evicted allocation: %v", err)
	}
	if got := h.read(att2.Ptr(), size); !bytes.Equal(got, d) {
		t.Error("new attachment of a swapped chunk reads other data")
	}
	h.free(big)
	h.free(a) // revokes both attachments
	if err := att.Free(); err != nil {
		t.Errorf("free of revoked attachment: %v", err)
	}
	if st := h.m.Stats(); st.Device.Swapped != 0 {
		t.Errorf("swapped %d after freeing everything", st.Device.Swapped)
	}
	for _, w := range []*Window{wa, wb, wc, wd} {
		if !w.Resident() {
			t.Errorf("window %d not resident with nothing evicted", w.ID())
		}
	}
	h.check()
}

// Slabs are evicted whole; sub-allocations keep working in an evicted slab
// (the window stays non-resident until MakeResident), and freeing the last
// of them drops the evicted slab's host copy.
func TestSwapSlab(t *testing.T) {
	h := newHarness(t, testTotal, swapOpts(6))
	wa, wb := h.open(h.m.Tenant("a")), h.open(h.m.Tenant("b"))
	small := h.alloc(wa, 1000, 0)
	d := pattern(4, 1000)
	h.write(small.Ptr(), d)
	big := h.alloc(wb, 4*testGran, 0) // 1 sink + 1 slab + 4 = 6: fits
	if !wa.Resident() {
		t.Fatal("a evicted though everything fit")
	}
	big2 := h.alloc(wb, testGran, 0) // the slab must go
	if wa.Resident() {
		t.Fatal("a's slab not evicted")
	}
	more := h.alloc(wa, 500, 0) // fits in the evicted slab: no device memory needed
	if wa.Resident() {
		t.Error("sub-allocating in an evicted slab made the window resident")
	}
	h.free(big2)
	h.resident(wa)
	if got := h.read(small.Ptr(), 1000); !bytes.Equal(got, d) {
		t.Error("sub-allocation's data changed over eviction")
	}
	h.free(more)
	h.free(big)
	big = h.alloc(wb, 5*testGran, 0) // evicts the slab again
	h.free(small)                    // empty and evicted: dropped, not kept
	if st := h.m.Stats(); st.Device.Swapped != 0 || !wa.Resident() {
		t.Errorf("after freeing the last sub-allocation of an evicted slab: %d bytes swapped, resident %v; want 0, true", st.Device.Swapped, wa.Resident())
	}
	h.free(big)
	// An empty slab kept for reuse is given up under pressure, not evicted.
	h.free(h.alloc(wa, 100, 0))
	before := h.m.Stats().Device.Evictions
	big = h.alloc(wb, 5*testGran, 0)
	if st := h.m.Stats(); st.Device.Evictions != before || !wa.Resident() {
		t.Errorf("pressure on a window with only an empty slab: %d evictions (was %d), resident %v; want the slab dropped", st.Device.Evictions, before, wa.Resident())
	}
	h.free(big)
	h.check()
}

// Freeing or closing with chunks evicted gives back their host memory, and
// everything goes back to the device at Close: no chunk, mapping,
// reservation or pinned host byte is left.
func TestSwapNoLeak(t *testing.T) {
	h := newHarness(t, testTotal, swapOpts(8))
	base := h.dev.counts()
	rng := rand.New(rand.NewPCG(1, 2))
	var windows []*Window
	for i := 0; i < 3; i++ {
		windows = append(windows, h.open(h.m.Tenant(fmt.Sprint("t", i))))
	}
	type live struct {
		a *Allocation
		d []byte
	}
	var lives []live
	for i := 0; i < 300; i++ {
		w := windows[rng.IntN(len(windows))]
		switch op := rng.IntN(10); {
		case op < 4 || len(lives) == 0:
			size := uint64(rng.IntN(3*testGran) + 1)
			flags := AllocFlags(0)
			if rng.IntN(3) == 0 {
				flags = Shareable
			}
			a, err := w.Alloc(size, flags)
			if errors.Is(err, ErrOutOfMemory) {
				continue
			}
			if err != nil {
				t.Fatalf("alloc %d: %v", size, err)
			}
			h.resident(w)
			d := pattern(byte(i), size)
			h.write(a.Ptr(), d)
			lives = append(lives, live{a, d})
		case op < 7:
			k := rng.IntN(len(lives))
			h.free(lives[k].a)
			lives = append(lives[:k], lives[k+1:]...)
		default:
			k := rng.IntN(len(lives))
			l := lives[k]
			h.resident(l.a.Window())
			if got := h.read(l.a.Ptr(), l.a.Size()); !bytes.Equal(got, l.d) {
				t.Fatalf("op %d: allocation at %#x lost its data over swapping", i, uint64(l.a.Ptr()))
			}
		}
		h.check()
	}
	if st := h.m.Stats(); st.Device.Evictions == 0 {
		t.Fatal("the workload never evicted: the test does not test swapping")
	}
	for _, w := range windows {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st := h.m.Stats()
	if st.Device.Swapped != 0 {
		t.Errorf("swapped %d bytes after closing every window", st.Device.Swapped)
	}
	if err := h.m.Close(); err != nil {
		t.Fatal(err)
	}
	if c := h.dev.counts(); c.chunks != base.chunks-1 || c.mappings != 0 || c.reservations != 0 || c.host != 0 {
		t.Errorf("after Close: %d chunks, %d mappings, %d reservations, %d host bytes; want none", c.chunks, c.mappings, c.reservations, c.host)
	}
}

// A window that maps more than the device can hold beside the sink could
// never run: with swapping on, that allocation (or attachment) fails.
func TestSwapFootprint(t *testing.T) {
	h := newHarness(t, testTotal, swapOpts(8))
	w := h.open(h.m.Tenant("a"))
	a := h.alloc(w, 7*testGran, 0)
	if _, err := w.Alloc(testGran, 0); !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("alloc past the footprint limit: %v, want out of memory", err)
	}
	w2 := h.open(h.m.Tenant("b"))
	b := h.alloc(w2, 2*testGran, Shareable)
	if _, err := w.Attach(b, false); !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("attach past the footprint limit: %v, want out of memory", err)
	}
	h.free(a)
	h.free(b)
}

// Quotas hold with swapping on: evicting never makes room under a quota.
func TestSwapQuota(t *testing.T) {
	h := newHarness(t, testTotal, swapOpts(8))
	ta := h.m.Tenant("a")
	ta.SetQuota(4 * testGran)
	w := h.open(ta)
	h.alloc(w, 4*testGran, 0)
	if _, err := w.Alloc(1, 0); !errors.Is(err, ErrQuotaExceeded) || !errors.Is(err, v1.ErrQuotaExceeded) {
		t.Errorf("over quota: %v, want quota exceeded", err)
	}
}

// The victim chooser sees the pressure and the candidates; its choices are
// evicted; bad answers fall back to the built-in choice.
func TestSwapChooser(t *testing.T) {
	tests := []struct {
		name         string
		choose       func(p Pressure, c []Candidate) ([]int, error)
		wantFallback bool
		wantVictim   string // tenant evicted
	}{
		{"lowest priority LRU", nil, false, "low"},
		{"custom: most recent first", func(p Pressure, c []Candidate) ([]int, error) { return []int{len(c) - 1}, nil }, false, "high"},
		{"error", func(Pressure, []Candidate) ([]int, error) { return nil, errors.New("policy trapped") }, true, "low"},
		{"out of range", func(Pressure, []Candidate) ([]int, error) { return []int{99}, nil }, true, "low"},
		{"repeated", func(Pressure, []Candidate) ([]int, error) { return []int{0, 0}, nil }, true, "low"},
		{"empty", func(Pressure, []Candidate) ([]int, error) { return nil, nil }, true, "low"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := swapOpts(8)
			var seen []Pressure
			if tt.choose != nil {
				opts.Victims = VictimFunc(func(p Pressure, c []Candidate) ([]int, error) {
					seen = append(seen, p)
					return tt.choose(p, c)
				})
			}
			h := newHarness(t, testTotal, opts)
			low, high, req := h.m.Tenant("low"), h.m.Tenant("high"), h.m.Tenant("req")
			low.SetPriority(-1)
			high.SetPriority(1)
			wl := h.open(low)
			h.alloc(wl, 3*testGran, 0) // older, lower priority
			wh := h.open(high)
			h.alloc(wh, 3*testGran, 0)
			wr := h.open(req)
			h.alloc(wr, 2*testGran, 0) // 1+3+3+2 > 8: one must go
			evicted := ""
			for _, w := range []*Window{wl, wh} {
				if !w.Resident() {
					evicted += w.Tenant().Name()
				}
			}
			if evicted != tt.wantVictim {
				t.Errorf("evicted %q, want %q", evicted, tt.wantVictim)
			}
			if got := h.m.Stats().Device.ChooserFallbacks > 0; got != tt.wantFallback {
				t.Errorf("fallback %v, want %v", got, tt.wantFallback)
			}
			if tt.choose != nil && (len(seen) == 0 || seen[0].Tenant != "req" || seen[0].Window != wr.ID() || seen[0].Need == 0 || seen[0].SwapIn) {
				t.Errorf("chooser saw %+v, want the requester's allocation with a need", seen)
			}
		})
	}
}

// The built-in choice: other windows first, then lowest priority, then LRU,
// just enough to cover the need.
func TestLowestPriorityLRU(t *testing.T) {
	cands := []Candidate{
		{Tenant: "a", Window: 1, Priority: 0, LastUse: 5, Bytes: 10},
		{Tenant: "b", Window: 2, Priority: -1, LastUse: 9, Bytes: 10},
		{Tenant: "c", Window: 3, Priority: 0, LastUse: 1, Bytes: 10},
		{Tenant: "r", Window: 4, Priority: -5, LastUse: 0, Bytes: 10},
	}
	tests := []struct {
		need uint64
		want []int
	}{
		{1, []int{1}},
		{15, []int{1, 2}},
		{30, []int{1, 2, 0}},
		{100, []int{1, 2, 0, 3}},
	}
	for _, tt := range tests {
		got, err := LowestPriorityLRU{}.ChooseVictims(Pressure{Need: tt.need, Window: 4}, cands)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("need %d: %v, %v; want %v", tt.need, got, err, tt.want)
		}
	}
}

// A chunk just made resident is protected: making another window resident
// that would have to evict it is ErrBusy, not a thrash.
func TestSwapProtection(t *testing.T) {
	opts := swapOpts(8)
	opts.MinResidency = 1 << 40 // for the whole test
	h := newHarness(t, testTotal, opts)
	wa, wb := h.open(h.m.Tenant("a")), h.open(h.m.Tenant("b"))
	h.alloc(wa, 5*testGran, 0)
	h.alloc(wb, 5*testGran, 0) // evicts a (not protected: never swapped in)
	h.resident(wa)             // evicts b; a is protected now
	if err := h.m.makeResidentOnce(wb); !errors.Is(err, ErrBusy) || !errors.Is(err, v1.ErrBusy) {
		t.Errorf("making b resident against a protected a: %v, want busy", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := wb.MakeResident(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("MakeResident with a cancelled context: %v", err)
	}
	if wb.Resident() {
		t.Error("b resident though a is protected")
	}
}

// Host swap space is bounded: an eviction that does not fit fails the
// allocation that needed it, with out of memory, and nothing is lost.
func TestSwapLimit(t *testing.T) {
	opts := swapOpts(8)
	opts.SwapLimit = 2 * testGran
	h := newHarness(t, testTotal, opts)
	wa, wb := h.open(h.m.Tenant("a")), h.open(h.m.Tenant("b"))
	a := h.alloc(wa, 5*testGran, 0)
	d := pattern(5, 5*testGran)
	h.write(a.Ptr(), d)
	if _, err := wb.Alloc(5*testGran, 0); !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("alloc needing more swap than the limit: %v, want out of memory", err)
	}
	if !wa.Resident() || !bytes.Equal(h.read(a.Ptr(), 5*testGran), d) {
		t.Error("the victim was hurt by an eviction that could not happen")
	}
	if c := h.dev.counts(); c.host > opts.SwapLimit {
		t.Errorf("%d host bytes pinned, limit %d", c.host, opts.SwapLimit)
	}
}

// Concurrent allocations, frees, attachments and swap-ins keep the guard
// invariant and every allocation's data (run with -race).
func TestSwapConcurrent(t *testing.T) {
	h := newHarness(t, testTotal, swapOpts(12))
	const workers = 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	shared := h.alloc(h.open(h.m.Tenant("owner")), 2*testGran, Shareable)
	for i := 0; i < workers; i++ {
		w := h.open(h.m.Tenant(fmt.Sprint("t", i)))
		wg.Add(1)
		go func(i int, w *Window) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 9))
			var mine []*Allocation
			var datas [][]byte
			for k := 0; k < 150; k++ {
				switch rng.IntN(4) {
				case 0:
					size := uint64(rng.IntN(2*testGran) + 1)
					a, err := w.Alloc(size, 0)
					if errors.Is(err, ErrOutOfMemory) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					if err := w.MakeResident(context.Background()); err != nil {
						errs <- err
						return
					}
					d := pattern(byte(i*31+k), size)
					// Written while resident, as a dispatched kernel would.
					if err := h.writeResident(w, a.Ptr(), d); err != nil {
						errs <- err
						return
					}
					mine, datas = append(mine, a), append(datas, d)
				case 1:
					if len(mine) > 0 {
						j := rng.IntN(len(mine))
						if err := mine[j].Free(); err != nil {
							errs <- err
							return
						}
						mine, datas = append(mine[:j], mine[j+1:]...), append(datas[:j], datas[j+1:]...)
					}
				case 2:
					att, err := w.Attach(shared, true)
					if err == nil {
						err = att.Free()
					}
					if err != nil && !errors.Is(err, ErrOutOfMemory) {
						errs <- err
						return
					}
				default:
					if len(mine) > 0 {
						j := rng.IntN(len(mine))
						got, err := h.readResident(w, mine[j].Ptr(), mine[j].Size())
						if err != nil {
							errs <- err
							return
						}
						if !bytes.Equal(got, datas[j]) {
							errs <- fmt.Errorf("worker %d: allocation %#x lost its data", i, uint64(mine[j].Ptr()))
							return
						}
					}
				}
			}
			for _, a := range mine {
				a.Free()
			}
		}(i, w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	h.check()
	if st := h.m.Stats(); st.Device.Evictions == 0 {
		t.Error("no evictions: the test does not test swapping")
	}
}

// writeResident and readResident copy while the window is resident and no
// eviction can start (they hold the eviction lock), as a dispatched kernel
// runs while its session is resident and not quiesced.
func (h *harness) writeResident(w *Window, p backend.DevicePtr, b []byte) error {
	for {
		if err := w.MakeResident(context.Background()); err != nil {
			return err
		}
		h.m.evictMu.Lock()
		if w.Resident() {
			err := h.dev.write(p, b)
			h.m.evictMu.Unlock()
			return err
		}
		h.m.evictMu.Unlock()
	}
}

func (h *harness) readResident(w *Window, p backend.DevicePtr, n uint64) ([]byte, error) {
	for {
		if err := w.MakeResident(context.Background()); err != nil {
			return nil, err
		}
		h.m.evictMu.Lock()
		if w.Resident() {
			b, err := h.dev.read(p, n)
			h.m.evictMu.Unlock()
			return b, err
		}
		h.m.evictMu.Unlock()
	}
}

// When the device has less memory than the manager's accounting says (memory
// it does not manage: module variables, other processes), an allocation
// that the device refuses evicts all the same.
func TestSwapDeviceShort(t *testing.T) {
	h := newHarness(t, 12*testGran, Options{SwapLimit: 64 * testGran, MinResidency: -1, MinWindow: 1 << 20})
	outside, err := h.dev.CreateChunk(4 * testGran) // not the manager's
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Release()
	wa, wb := h.open(h.m.Tenant("a")), h.open(h.m.Tenant("b"))
	a := h.alloc(wa, 5*testGran, 0)
	d := pattern(6, 5*testGran)
	h.write(a.Ptr(), d)
	h.alloc(wb, 5*testGran, 0) // fits the accounting (1+5+5 <= 12), not the device (4 taken)
	if wa.Resident() {
		t.Fatal("the device was short and nothing was evicted")
	}
	h.resident(wa)
	if !bytes.Equal(h.read(a.Ptr(), 5*testGran), d) {
		t.Error("data lost over an eviction the device forced")
	}
}

// idle waits until the store's pinner has stopped.
func (s *swapStore) idle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.pinners > 0 {
		s.cond.Wait()
	}
}

// The swap store pins nothing until evictions begin; then it keeps ahead
// bytes free, pinned in the background in pieces, which slots of any size
// share block by block (a 3-granule chunk takes a piece and half of
// another); what is still lacking is pinned by the alloc itself; trim frees
// the pieces and stops pinning until the next eviction.
func TestSwapStoreAhead(t *testing.T) {
	dev := newFakeDevice(testGran, testTotal)
	const piece = 2 * testGran
	s := newSwapStore(dev, swapStoreConfig{piece: piece, limit: 16 * testGran, ahead: 4 * testGran, gran: testGran})
	s.idle()
	if u := s.usage(); u.held != 0 {
		t.Fatalf("%d bytes held before any eviction, want none", u.held)
	}
	s.evicting()
	s.idle()
	if u := s.usage(); u.held != 4*testGran || u.free != 4*testGran || u.pinnedAhead != 4*testGran {
		t.Fatalf("under pressure: %+v; want %d held, free and pinned ahead", u, 4*testGran)
	}
	if !s.ready(3 * testGran) {
		t.Error("not ready for 3 granules with 4 free")
	}
	if s.ready(5 * testGran) {
		t.Error("ready for 5 granules with 4 free")
	}
	lens := func(sl *swapSlot) []uint64 {
		var out []uint64
		for _, b := range sl.buffers() {
			out = append(out, uint64(len(b))/testGran)
		}
		return out
	}
	three, pinned, pinTime, err := s.alloc(3 * testGran)
	if err != nil {
		t.Fatal(err)
	}
	if got := lens(three); pinned != 0 || pinTime != 0 || !slices.Equal(got, []uint64{2, 1}) {
		t.Errorf("slot of 3 granules: runs of %v granules, %d bytes pinned in %v; want runs [2 1] of kept pieces, nothing pinned", got, pinned, pinTime)
	}
	s.evicting()
	s.idle()
	if u := s.usage(); u.held != 8*testGran || u.free != 5*testGran || u.used != 3*testGran {
		t.Errorf("after refilling: %+v; want 8 granules held, 5 free, 3 used", u)
	}
	five, pinned, _, err := s.alloc(5 * testGran)
	if err != nil || pinned != 0 {
		t.Fatalf("slot of 5 granules with 5 free: %d pinned, %v", pinned, err)
	}
	one, pinned, pinTime, err := s.alloc(testGran)
	if err != nil {
		t.Fatal(err)
	}
	if pinned != testGran || pinTime <= 0 {
		t.Errorf("slot with nothing free: %d bytes pinned in %v; want one granule, timed", pinned, pinTime)
	}
	// The data of each slot is where its runs are: no two slots share a block.
	for k, sl := range []*swapSlot{three, five, one} {
		for _, b := range sl.buffers() {
			for i := range b {
				b[i] = byte(k + 1)
			}
		}
	}
	for k, sl := range []*swapSlot{three, five, one} {
		var n uint64
		for _, b := range sl.buffers() {
			n += uint64(len(b))
			if i := slices.IndexFunc(b, func(c byte) bool { return c != byte(k+1) }); i >= 0 {
				t.Errorf("slot %d: byte %d overwritten by another slot", k, i)
			}
		}
		if n != sl.size {
			t.Errorf("slot %d: buffers of %d bytes, want %d", k, n, sl.size)
		}
	}
	s.release(three)
	s.release(five)
	s.release(one)
	s.trim()
	s.idle()
	if u := s.usage(); u.held != 0 || u.used != 0 || u.free != 0 || dev.counts().host != 0 {
		t.Errorf("after trim: %+v, %d host bytes; want none", u, dev.counts().host)
	}
	s.close()
	if _, _, _, err := s.alloc(testGran); !errors.Is(err, ErrClosed) {
		t.Errorf("alloc after close: %v, want closed", err)
	}
}

// A piece being pinned ahead counts against the limit; an eviction that
// needs that room waits for the piece and uses it instead of failing.
func TestSwapStoreWaitsForPinAhead(t *testing.T) {
	dev := newFakeDevice(testGran, testTotal)
	dev.hostGate = make(chan struct{})
	const piece = 2 * testGran
	s := newSwapStore(dev, swapStoreConfig{piece: piece, limit: 4 * testGran, ahead: 4 * testGran, gran: testGran})
	defer s.close()
	s.evicting() // the pinner blocks in AllocHost with a piece reserved
	for {
		s.mu.Lock()
		inflight := s.inflight
		s.mu.Unlock()
		if inflight > 0 {
			break
		}
		runtime.Gosched()
	}
	type result struct {
		slot *swapSlot
		err  error
	}
	done := make(chan result)
	go func() {
		slot, _, _, err := s.alloc(4 * testGran)
		done <- result{slot, err}
	}()
	for { // until the alloc waits for the piece in flight
		s.mu.Lock()
		waits := s.limitWaits
		s.mu.Unlock()
		if waits > 0 {
			break
		}
		runtime.Gosched()
	}
	close(dev.hostGate) // every AllocHost goes through from now on
	r := <-done
	if r.err != nil {
		t.Fatalf("alloc within the limit failed while a piece was pinned ahead: %v", r.err)
	}
	s.idle()
	if u := s.usage(); u.held > 4*testGran || u.used != 4*testGran {
		t.Errorf("%d held, %d used; want at most %d held and %d used", u.held, u.used, 4*testGran, 4*testGran)
	}
	s.release(r.slot)
}

// An eviction during MakeResident that finds no kept buffer reuses those of
// the pass's swap-ins already under way, once their copies land, rather than
// pinning new ones.
func TestSwapReusesSwapInBuffers(t *testing.T) {
	opts := swapOpts(8)
	opts.SwapAhead = -1
	h := newHarness(t, testTotal, opts)
	wa, wb := h.open(h.m.Tenant("a")), h.open(h.m.Tenant("b"))
	size := uint64(3 * testGran)
	a1, a2 := h.alloc(wa, size, 0), h.alloc(wa, size, 0)
	d1, d2 := pattern(1, size), pattern(2, size)
	h.write(a1.Ptr(), d1)
	h.write(a2.Ptr(), d2)
	h.alloc(wb, size, 0) // evicts a1
	h.alloc(wb, size, 0) // evicts a2
	if wa.Resident() {
		t.Fatal("a is resident: the test needs it evicted")
	}
	before := h.m.Stats().Device
	h.resident(wa) // evicts b's two chunks, one per swap-in
	after := h.m.Stats().Device
	if got := after.Evictions - before.Evictions; got != 2 {
		t.Fatalf("making a resident evicted %d chunks, want 2", got)
	}
	if got := after.EvictPinned - before.EvictPinned; got != size {
		t.Errorf("making a resident pinned %d bytes for its evictions, want %d (the second reuses a1's buffers)", got, size)
	}
	if !bytes.Equal(h.read(a1.Ptr(), size), d1) || !bytes.Equal(h.read(a2.Ptr(), size), d2) {
		t.Error("a's data differs after the swap-ins")
	}
}

// The store pins its reserve from the start on several goroutines at once
// (a piece each), and says once when the reserve is pinned.
func TestSwapStoreReservePinsInParallel(t *testing.T) {
	dev := newFakeDevice(testGran, testTotal)
	dev.hostGate = make(chan struct{})
	const pinners = 3
	told := make(chan uint64, 2)
	s := newSwapStore(dev, swapStoreConfig{piece: testGran, limit: 16 * testGran, reserve: 6 * testGran, gran: testGran,
		pinners: pinners, onReserve: func(n uint64, _ time.Duration) { told <- n }})
	defer s.close()
	for dev.hostWaiting.Load() < pinners { // every pinner holds a piece in AllocHost at once
		runtime.Gosched()
	}
	s.mu.Lock()
	running, inflight := s.pinners, s.inflight
	s.mu.Unlock()
	if running != pinners || inflight != pinners*testGran {
		t.Errorf("%d pinners pinning %d bytes, want %d pinning a piece each", running, inflight, pinners)
	}
	close(dev.hostGate)
	if n := <-told; n != 6*testGran {
		t.Errorf("told the reserve is pinned with %d bytes, want %d", n, 6*testGran)
	}
	s.idle()
	if u := s.usage(); u.held != 6*testGran || u.free != 6*testGran {
		t.Errorf("after the reserve: %+v, want %d held and free", u, 6*testGran)
	}
	if len(told) != 0 {
		t.Error("told of the reserve more than once")
	}
}

// A backend that cannot register host memory gets AllocHost instead.
func TestSwapStoreRegisterFallsBack(t *testing.T) {
	dev := newFakeDevice(testGran, testTotal)
	s := newSwapStore(dev, swapStoreConfig{piece: testGran, limit: 8 * testGran, gran: testGran, register: true})
	defer s.close()
	slot, pinned, _, err := s.alloc(2 * testGran)
	if err != nil {
		t.Fatal(err)
	}
	if pinned != 2*testGran || dev.counts().host != 2*testGran {
		t.Errorf("pinned %d bytes, %d allocated by AllocHost; want %d both", pinned, dev.counts().host, 2*testGran)
	}
	if s.register.Load() {
		t.Error("still registering after the backend refused")
	}
	s.release(slot)
}
