package mem

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/gpuos/gpuos/internal/backend"
)

// FuzzOps runs an operation sequence decoded from the input on two tenants'
// windows — with swapping on if the first byte says so — and checks, after
// every operation, the backing invariant, the accounting (each tenant's usage
// is the sum of its live allocations' charges), Resolve of every live
// allocation and aliasing through attachments (across evictions); at the
// end, that everything goes back to the device and to the host.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1, 0, 0, 10, 0, 1, 200, 2, 0, 1, 5, 0, 0, 1, 0})
	f.Add([]byte{2, 0, 0, 255, 0, 1, 255, 2, 0, 3, 1, 1, 0, 4, 0, 0, 5, 0, 0})
	f.Add([]byte{3, 6, 0, 8, 0, 0, 40, 0, 1, 40, 0, 0, 40, 2, 1, 2, 7, 0, 0, 1, 2, 0, 4, 1, 0})
	f.Add([]byte{0x10, 0, 1, 240, 0, 2, 240, 0, 3, 240, 8, 0, 0, 4, 0, 9, 8, 1, 0, 2, 0, 1, 4, 1, 7, 8, 2, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 600 {
			return
		}
		opts := Options{
			DeviceMemoryLimit: 6 << 20,
			SinkChunk:         uint64(data[0]%4+1) * testGran,
			PoolLimit:         uint64(data[0]/4%4) * testGran, // 0: the default
		}
		swapping := data[0]&0x10 != 0
		if swapping {
			opts.SwapLimit, opts.MinResidency = 256*testGran, -1
		}
		h := newHarness(t, 16<<20, opts)
		resident := func(w *Window) {
			if err := w.MakeResident(context.Background()); err != nil {
				t.Fatalf("MakeResident: %v", err)
			}
		}
		data = data[1:]
		tenants := []*Tenant{h.m.Tenant("a"), h.m.Tenant("b")}
		ws := []*Window{h.open(tenants[0]), h.open(tenants[1]), h.open(tenants[0])}
		var live []*Allocation
		pick := func(b byte) *Allocation {
			if len(live) == 0 {
				return nil
			}
			return live[int(b)%len(live)]
		}
		drop := func(a *Allocation) {
			for i, x := range live {
				if x == a {
					live = append(live[:i], live[i+1:]...)
					return
				}
			}
		}
		for len(data) >= 3 {
			op, x, y := data[0]%9, data[1], data[2]
			data = data[3:]
			switch op {
			case 0: // alloc
				size := uint64(y)*uint64(y)*37 + uint64(x)
				if y > 200 {
					size = uint64(y-200) * testGran / 4
				}
				flags := AllocFlags(0)
				if x&1 == 1 {
					flags = Shareable
				}
				a, err := ws[int(x/2)%len(ws)].Alloc(max(size, 1), flags)
				if err != nil {
					if !errors.Is(err, ErrQuotaExceeded) && !errors.Is(err, ErrOutOfMemory) {
						t.Fatalf("Alloc(%d): %v", size, err)
					}
					continue
				}
				want := roundUp(a.Size(), allocAlign)
				if a.Shareable() {
					want = roundUp(a.Size(), testGran)
				}
				if a.charge != want {
					t.Fatalf("Alloc(%d, %v): charge %d, want %d", a.Size(), flags, a.charge, want)
				}
				live = append(live, a)
			case 1: // free
				if a := pick(x); a != nil {
					if err := a.Free(); err != nil {
						t.Fatalf("Free: %v", err)
					}
					drop(a)
				}
			case 2: // attach
				if a := pick(x); a != nil {
					att, err := ws[int(y)%len(ws)].Attach(a, y&1 == 1)
					switch {
					case err == nil:
						live = append(live, att)
					case errors.Is(err, ErrNotShareable) && !a.Shareable(),
						errors.Is(err, ErrRevoked) && a.Revoked(),
						errors.Is(err, ErrReadOnly) && a.ReadOnly(),
						errors.Is(err, ErrOutOfMemory):
					default:
						t.Fatalf("Attach: %v", err)
					}
				}
			case 3: // close a window, open another
				k := int(x) % len(ws)
				if err := ws[k].Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				ws[k] = h.open(ws[k].Tenant())
			case 4: // write through an owner, read through its attachments
				a := pick(x)
				if a == nil || !a.Shareable() || a.Revoked() {
					continue
				}
				src := a
				if a.src != nil {
					src = a.src
				}
				tag := []byte{y, x, 0x5a}
				resident(a.Window())
				if err := h.dev.write(a.Ptr(), tag); err != nil {
					t.Fatalf("write: %v", err)
				}
				for _, b := range live {
					if b.src == src && !b.Revoked() || b == src {
						resident(b.Window()) // may evict a's chunk: the data goes with it
						if got, err := h.dev.read(b.Ptr(), 3); err != nil || !bytes.Equal(got, tag) {
							t.Fatalf("read through an alias: %v, %v", got, err)
						}
					}
				}
			case 5:
				tenants[x%2].SetQuota(uint64(y) * testGran / 8)
			case 6:
				if err := h.m.Trim(); err != nil {
					t.Fatal(err)
				}
			case 8: // make a window resident
				resident(ws[int(x)%len(ws)])
			case 7: // free everything of one window
				w := ws[int(x)%len(ws)]
				for _, a := range append([]*Allocation(nil), live...) {
					if a.Window() == w {
						if err := a.Free(); err != nil {
							t.Fatal(err)
						}
						drop(a)
					}
				}
			}
			h.check()
			charged := map[*Tenant]uint64{}
			for _, a := range live {
				if a.Revoked() {
					continue
				}
				if !a.Attached() {
					charged[a.Window().Tenant()] += a.charge
				}
				got, off, err := a.Window().Resolve(a.Ptr()+backend.DevicePtr(a.Size()-1), 1)
				if err != nil || got != a || off != a.Size()-1 {
					t.Fatalf("Resolve of a live allocation: %p+%d, %v", got, off, err)
				}
			}
			for _, tn := range tenants {
				if used, _ := tn.Usage(); used != charged[tn] {
					t.Fatalf("tenant %s: usage %d, live allocations charge %d", tn.Name(), used, charged[tn])
				}
			}
		}
		for _, a := range live {
			if err := a.Free(); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.m.Close(); err != nil {
			t.Fatal(err)
		}
		if c := h.dev.counts(); c.chunks != 0 || c.mappings != 0 || c.reservations != 0 || c.host != 0 {
			t.Fatalf("device after Close: %+v", c)
		}
	})
}
