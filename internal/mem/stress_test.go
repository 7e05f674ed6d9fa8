package mem

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gpuos/gpuos/internal/backend"
)

// expectedAllocError reports whether err is one that random work may
// legitimately meet: a quota or the device limit, or a source freed or
// revoked under an Attach.
func expectedAllocError(err error) bool {
	return errors.Is(err, ErrQuotaExceeded) || errors.Is(err, ErrOutOfMemory) || errors.Is(err, ErrRevoked) || errors.Is(err, ErrFreed)
}

func randomSize(rng *rand.Rand) (uint64, AllocFlags) {
	switch rng.IntN(4) {
	case 0:
		return 1 + rng.Uint64N(4096), 0
	case 1:
		return 1 + rng.Uint64N(testGran), 0
	case 2:
		return 1 + rng.Uint64N(testGran), Shareable
	default:
		return testGran + rng.Uint64N(6*testGran), 0
	}
}

// 10k cycles of allocation, free, sharing and resolution across two tenants
// leave nothing behind: usage returns to zero, every chunk and mapping is
// given back, and the windows' address space is whole again.
func TestNoLeakAfter10kCycles(t *testing.T) {
	h := newHarness(t, testTotal, Options{DeviceMemoryLimit: 32 << 20})
	ta, tb := h.m.Tenant("a"), h.m.Tenant("b")
	ta.SetQuota(12 << 20)
	ws := []*Window{h.open(ta), h.open(tb), h.open(ta)}
	base := h.dev.counts()
	rng := rand.New(rand.NewPCG(1, 2))
	var live []*Allocation
	var allocs, attaches, refused int
	for i := range 10000 {
		switch op := rng.IntN(10); {
		case op < 4:
			size, flags := randomSize(rng)
			a, err := ws[rng.IntN(len(ws))].Alloc(size, flags)
			if err != nil {
				if !expectedAllocError(err) {
					t.Fatalf("cycle %d: Alloc(%d): %v", i, size, err)
				}
				refused++
				continue
			}
			allocs++
			live = append(live, a)
		case op < 7 && len(live) > 0:
			k := rng.IntN(len(live))
			if err := live[k].Free(); err != nil {
				t.Fatalf("cycle %d: Free: %v", i, err)
			}
			live = append(live[:k], live[k+1:]...)
		case op < 9 && len(live) > 0:
			src := live[rng.IntN(len(live))]
			a, err := ws[rng.IntN(len(ws))].Attach(src, rng.IntN(2) == 0)
			switch {
			case err == nil:
				attaches++
				live = append(live, a)
			case !src.Shareable() && errors.Is(err, ErrNotShareable), expectedAllocError(err), errors.Is(err, ErrReadOnly):
			default:
				t.Fatalf("cycle %d: Attach: %v", i, err)
			}
		case len(live) > 0:
			a := live[rng.IntN(len(live))]
			half := a.Size() / 2
			got, off, err := a.Window().Resolve(a.Ptr()+backend.DevicePtr(half), a.Size()-half)
			if a.Revoked() { // its address is free, or someone else's now
				if !a.Attached() || err == nil && got == a {
					t.Fatalf("cycle %d: revoked %p (attached %v) still resolves", i, a, a.Attached())
				}
				continue
			}
			if err != nil || got != a || off != half {
				t.Fatalf("cycle %d: Resolve = %p+%d, %v; want %p+%d", i, got, off, err, a, half)
			}
		}
		if i%250 == 0 {
			h.check()
		}
	}
	if allocs < 2000 || attaches < 500 || refused == 0 {
		t.Errorf("weak mix: %d allocations, %d attachments, %d refused", allocs, attaches, refused)
	}
	for _, a := range live {
		if err := a.Free(); err != nil {
			t.Fatalf("final Free: %v", err)
		}
	}
	h.check()
	for _, tn := range []*Tenant{ta, tb} {
		if used, _ := tn.Usage(); used != 0 {
			t.Errorf("tenant %s: %d bytes still charged", tn.Name(), used)
		}
	}
	for _, w := range ws {
		w.mu.RLock()
		if len(w.regions) != len(w.slabs) || len(w.slabs) > 1 || w.free.total() != w.granules()-uint64(len(w.slabs)) {
			t.Errorf("window %d: %d regions, %d slabs, %d of %d granules free", w.ID(), len(w.regions), len(w.slabs), w.free.total(), w.granules())
		}
		w.mu.RUnlock()
	}
	for _, w := range ws {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.m.Trim(); err != nil {
		t.Fatal(err)
	}
	st := h.m.Stats().Device
	c := h.dev.counts()
	if st.Physical != testGran || st.Chunks != 1 || c.chunks != 1 || c.mappings != 0 || c.reservations != base.reservations-3 || c.used != testGran {
		t.Errorf("after closing: stats %+v, device %+v; want the sink chunk alone", st, c)
	}
}

// Many sessions of several tenants allocate, free, share, resolve and close
// at once while a checker verifies, continuously, that every running window's
// guard range is backed. Run with -race.
func TestConcurrentSessions(t *testing.T) {
	h := newHarness(t, testTotal, Options{DeviceMemoryLimit: 48 << 20, PoolLimit: 4 << 20})
	tenants := []*Tenant{h.m.Tenant("a"), h.m.Tenant("b"), h.m.Tenant("c")}
	tenants[0].SetQuota(8 << 20)

	var (
		shmu   sync.Mutex
		shared []*Allocation // shareable allocations anyone may attach
		stop   atomic.Bool
		wg     sync.WaitGroup
	)
	var checks atomic.Int64
	checker := make(chan []error, 1)
	go func() {
		var errs []error
		for !stop.Load() {
			errs = append(errs, h.backingErrors()...)
			h.m.Stats()
			h.m.Candidates()
			checks.Add(1)
		}
		checker <- errs
	}()
	const workers, rounds = 8, 600
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			tn := tenants[g%len(tenants)]
			w := h.open(tn)
			var mine []*Allocation
			for i := range rounds {
				switch op := rng.IntN(12); {
				case op < 5:
					size, flags := randomSize(rng)
					a, err := w.Alloc(size, flags)
					if err != nil {
						if !expectedAllocError(err) {
							t.Errorf("Alloc: %v", err)
							return
						}
						continue
					}
					mine = append(mine, a)
					if a.Shareable() && rng.IntN(2) == 0 {
						shmu.Lock()
						shared = append(shared, a)
						shmu.Unlock()
					}
				case op < 8 && len(mine) > 0:
					k := rng.IntN(len(mine))
					if err := mine[k].Free(); err != nil {
						t.Errorf("Free: %v", err)
						return
					}
					mine = append(mine[:k], mine[k+1:]...)
				case op < 10:
					shmu.Lock()
					var src *Allocation
					if len(shared) > 0 {
						src = shared[rng.IntN(len(shared))]
					}
					shmu.Unlock()
					if src == nil {
						continue
					}
					a, err := w.Attach(src, false)
					if err != nil {
						if !expectedAllocError(err) && !errors.Is(err, ErrWindowClosed) {
							t.Errorf("Attach: %v", err)
							return
						}
						continue
					}
					mine = append(mine, a)
				case op < 11 && len(mine) > 0:
					a := mine[rng.IntN(len(mine))]
					if _, _, err := w.Resolve(a.Ptr(), a.Size()); err != nil && !a.Revoked() {
						t.Errorf("Resolve: %v", err)
						return
					}
				case i%150 == 149:
					// The session ends; a new one starts.
					if err := w.Close(); err != nil {
						t.Errorf("Close: %v", err)
						return
					}
					for _, a := range mine {
						if err := a.Free(); err != nil {
							t.Errorf("Free after Close: %v", err)
							return
						}
					}
					mine = nil
					w = h.open(tn)
				}
			}
			if err := w.Close(); err != nil {
				t.Errorf("final Close: %v", err)
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	for _, err := range <-checker {
		t.Error(err)
	}
	if checks.Load() == 0 {
		t.Error("the checker never ran")
	}
	for _, tn := range tenants {
		if used, _ := tn.Usage(); used != 0 {
			t.Errorf("tenant %s: %d bytes charged after every window closed", tn.Name(), used)
		}
	}
	if err := h.m.Close(); err != nil {
		t.Fatal(err)
	}
	if c := h.dev.counts(); c.chunks != 0 || c.mappings != 0 || c.used != 0 {
		t.Errorf("device after Close: %+v", c)
	}
}
