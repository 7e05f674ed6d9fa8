package sim

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
)

// G is the granularity the VMM tests use (small, so chunks are cheap).
const G = 64 << 10

func smallOptions() Options {
	return Options{Granularity: G, Memory: 16 * G}
}

func TestVMMErrors(t *testing.T) {
	reserve := func(d *Device, size uint64) backend.DevicePtr {
		p, err := d.Reserve(size, 0)
		if err != nil {
			t.Fatalf("Reserve: %v", err)
		}
		return p
	}
	chunk := func(d *Device, size uint64) backend.Chunk {
		c, err := d.CreateChunk(size)
		if err != nil {
			t.Fatalf("CreateChunk: %v", err)
		}
		return c
	}
	tests := []struct {
		name string
		op   func(d *Device) error
		want error // nil: success
	}{
		{"reserve", func(d *Device) error { _, err := d.Reserve(G, 0); return err }, nil},
		{"reserve zero", func(d *Device) error { _, err := d.Reserve(0, 0); return err }, backend.ErrInvalidArgument},
		{"reserve partial granule", func(d *Device) error { _, err := d.Reserve(G+1, 0); return err }, backend.ErrInvalidArgument},
		{"reserve alignment not a power of two", func(d *Device) error { _, err := d.Reserve(G, 3*G); return err }, backend.ErrInvalidArgument},
		{"reserve alignment below granularity", func(d *Device) error { _, err := d.Reserve(G, G/2); return err }, backend.ErrInvalidArgument},
		{"reserve beyond the address space", func(d *Device) error { _, err := d.Reserve(1<<50, 0); return err }, backend.ErrOutOfMemory},
		{"reserve alignment beyond the address space", func(d *Device) error { _, err := d.Reserve(G, 1<<62); return err }, backend.ErrOutOfMemory},
		{"release", func(d *Device) error { return d.Release(reserve(d, 2*G), 2*G) }, nil},
		{"release unknown", func(d *Device) error { return d.Release(VAStart+G*1000, G) }, backend.ErrInvalidArgument},
		{"release middle", func(d *Device) error { p := reserve(d, 2*G); return d.Release(p+G, G) }, backend.ErrInvalidArgument},
		{"release wrong size", func(d *Device) error { p := reserve(d, 2*G); return d.Release(p, G) }, backend.ErrInvalidArgument},
		{"release twice", func(d *Device) error {
			p := reserve(d, G)
			must(t, d.Release(p, G))
			return d.Release(p, G)
		}, backend.ErrInvalidArgument},
		{"release mapped", func(d *Device) error {
			p := reserve(d, G)
			must(t, d.Map(p, G, chunk(d, G), 0))
			return d.Release(p, G)
		}, backend.ErrInvalidArgument},
		{"chunk zero", func(d *Device) error { _, err := d.CreateChunk(0); return err }, backend.ErrInvalidArgument},
		{"chunk partial granule", func(d *Device) error { _, err := d.CreateChunk(G - 1); return err }, backend.ErrInvalidArgument},
		{"chunk beyond memory", func(d *Device) error { _, err := d.CreateChunk(17 * G); return err }, backend.ErrOutOfMemory},
		{"chunks beyond memory", func(d *Device) error {
			chunk(d, 10*G)
			_, err := d.CreateChunk(7 * G)
			return err
		}, backend.ErrOutOfMemory},
		{"chunk release twice", func(d *Device) error {
			c := chunk(d, G)
			must(t, c.Release())
			return c.Release()
		}, ErrInvalidHandle},
		{"chunk release while mapped", func(d *Device) error {
			c := chunk(d, G)
			must(t, d.Map(reserve(d, G), G, c, 0))
			return c.Release()
		}, backend.ErrInvalidArgument},
		{"map", func(d *Device) error { return d.Map(reserve(d, 2*G), 2*G, chunk(d, 2*G), 0) }, nil},
		{"map outside reservations", func(d *Device) error { return d.Map(VAStart+100*G, G, chunk(d, G), 0) }, backend.ErrInvalidArgument},
		{"map past the reservation", func(d *Device) error { return d.Map(reserve(d, G), 2*G, chunk(d, 2*G), 0) }, backend.ErrInvalidArgument},
		{"map across two reservations", func(d *Device) error {
			p := reserve(d, G)
			if q := reserve(d, G); q != p+G {
				t.Fatalf("reservations not adjacent: %#x %#x", p, q)
			}
			return d.Map(p, 2*G, chunk(d, 2*G), 0)
		}, backend.ErrInvalidArgument},
		{"map over a mapping", func(d *Device) error {
			p := reserve(d, 2*G)
			must(t, d.Map(p+G, G, chunk(d, G), 0))
			return d.Map(p, 2*G, chunk(d, 2*G), 0)
		}, backend.ErrInvalidArgument},
		{"map partial granule", func(d *Device) error { return d.Map(reserve(d, 2*G), G+1, chunk(d, 2*G), 0) }, backend.ErrInvalidArgument},
		{"map unaligned address", func(d *Device) error { return d.Map(reserve(d, 2*G)+1, G, chunk(d, 2*G), 0) }, backend.ErrInvalidArgument},
		{"map unaligned offset", func(d *Device) error { return d.Map(reserve(d, G), G, chunk(d, 2*G), 1) }, backend.ErrInvalidArgument},
		{"map past the chunk", func(d *Device) error { return d.Map(reserve(d, 2*G), 2*G, chunk(d, 2*G), G) }, backend.ErrInvalidArgument},
		{"map released chunk", func(d *Device) error {
			c := chunk(d, G)
			must(t, c.Release())
			return d.Map(reserve(d, G), G, c, 0)
		}, ErrInvalidHandle},
		{"map foreign chunk", func(d *Device) error {
			other := openTest(t, smallOptions())
			c, err := other.CreateChunk(G)
			must(t, err)
			return d.Map(reserve(d, G), G, c, 0)
		}, ErrInvalidHandle},
		{"map into the module region", func(d *Device) error { return d.Map(moduleStart, G, chunk(d, G), 0) }, backend.ErrInvalidArgument},
		{"unmap", func(d *Device) error {
			p := reserve(d, 2*G)
			must(t, d.Map(p, 2*G, chunk(d, 2*G), 0))
			return d.Unmap(p, 2*G)
		}, nil},
		{"unmap two whole mappings", func(d *Device) error {
			p := reserve(d, 3*G)
			must(t, d.Map(p, G, chunk(d, G), 0))
			must(t, d.Map(p+G, 2*G, chunk(d, 2*G), 0))
			return d.Unmap(p, 3*G)
		}, nil},
		{"unmap unmapped", func(d *Device) error { return d.Unmap(reserve(d, G), G) }, backend.ErrInvalidArgument},
		{"unmap with a hole", func(d *Device) error {
			p := reserve(d, 3*G)
			must(t, d.Map(p, G, chunk(d, G), 0))
			must(t, d.Map(p+2*G, G, chunk(d, G), 0))
			return d.Unmap(p, 3*G)
		}, backend.ErrInvalidArgument},
		{"unmap part of a mapping", func(d *Device) error {
			p := reserve(d, 2*G)
			must(t, d.Map(p, 2*G, chunk(d, 2*G), 0))
			return d.Unmap(p, G)
		}, backend.ErrInvalidArgument},
		{"unmap zero", func(d *Device) error { return d.Unmap(reserve(d, G), 0) }, backend.ErrInvalidArgument},
		{"set access", func(d *Device) error {
			p := reserve(d, 2*G)
			must(t, d.Map(p, G, chunk(d, G), 0))
			must(t, d.Map(p+G, G, chunk(d, G), 0))
			return d.SetAccess(p, 2*G)
		}, nil},
		{"set access unmapped", func(d *Device) error { return d.SetAccess(reserve(d, G), G) }, backend.ErrInvalidArgument},
		{"set access partial granule", func(d *Device) error {
			p := reserve(d, G)
			must(t, d.Map(p, G, chunk(d, G), 0))
			return d.SetAccess(p, 100)
		}, backend.ErrInvalidArgument},
		{"copy to mapped but inaccessible", func(d *Device) error {
			p := reserve(d, G)
			must(t, d.Map(p, G, chunk(d, G), 0))
			s := newStream(t, d)
			return s.CopyHtoD(p, make([]byte, 16))
		}, backend.ErrInvalidArgument},
		{"copy after unmap", func(d *Device) error {
			p := alloc(t, d, G)
			must(t, d.Unmap(p, G))
			return newStream(t, d).CopyDtoH(make([]byte, 16), p)
		}, backend.ErrInvalidArgument},
		{"copy past the mapping", func(d *Device) error {
			p := alloc(t, d, G)
			return newStream(t, d).CopyHtoD(p+G-8, make([]byte, 16))
		}, backend.ErrInvalidArgument},
		{"memset wrapping around", func(d *Device) error {
			return newStream(t, d).Memset(backend.DevicePtr(^uint64(0)-3), 0, 4, 2)
		}, backend.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := openTest(t, smallOptions())
			err := tt.op(d)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if v1.CodeOf(err) != v1.CodeOf(tt.want) {
				t.Fatalf("code = %v, want %v", v1.CodeOf(err), v1.CodeOf(tt.want))
			}
		})
	}
}

func TestReserveLayout(t *testing.T) {
	d := openTest(t, smallOptions())
	type rng struct{ p, size uint64 }
	var got []rng
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		size := uint64(1+r.IntN(8)) * G
		align := uint64(G) << r.IntN(6)
		p, err := d.Reserve(size, align)
		must(t, err)
		if uint64(p)%align != 0 || uint64(p) < VAStart || uint64(p)+size > moduleStart {
			t.Fatalf("Reserve(%#x, %#x) = %#x: misaligned or outside the span", size, align, p)
		}
		for _, o := range got {
			if uint64(p) < o.p+o.size && o.p < uint64(p)+size {
				t.Fatalf("Reserve(%#x) = %#x overlaps %#x+%#x", size, p, o.p, o.size)
			}
		}
		got = append(got, rng{uint64(p), size})
		if i%3 == 0 { // release some, so later ones fill holes
			k := r.IntN(len(got))
			must(t, d.Release(backend.DevicePtr(got[k].p), got[k].size))
			got = append(got[:k], got[k+1:]...)
		}
	}
	// A released range is reused (first fit).
	p, err := d.Reserve(G, 0)
	must(t, err)
	must(t, d.Release(p, G))
	q, err := d.Reserve(G, 0)
	must(t, err)
	if q != p {
		t.Fatalf("Reserve after Release = %#x, want the released %#x", q, p)
	}
	// A naturally aligned window, as sessions use.
	w, err := d.Reserve(1<<30, 1<<30)
	must(t, err)
	if w%(1<<30) != 0 {
		t.Fatalf("window %#x not aligned", w)
	}
}

func TestMemoryInfo(t *testing.T) {
	d := openTest(t, smallOptions())
	free, total, err := d.MemoryInfo()
	must(t, err)
	if free != 16*G || total != 16*G {
		t.Fatalf("MemoryInfo = %d, %d; want %d, %d", free, total, 16*G, 16*G)
	}
	c, err := d.CreateChunk(3 * G)
	must(t, err)
	if free, _, _ = d.MemoryInfo(); free != 13*G {
		t.Fatalf("free after a 3-granule chunk = %d, want %d", free, 13*G)
	}
	must(t, c.Release())
	if free, _, _ = d.MemoryInfo(); free != 16*G {
		t.Fatalf("free after release = %d, want %d", free, 16*G)
	}
	if c.Size() != 3*G {
		t.Fatalf("Size = %d", c.Size())
	}
}

func TestMemsetErrors(t *testing.T) {
	d := openTest(t, smallOptions())
	p := alloc(t, d, G)
	s := newStream(t, d)
	for _, tc := range []struct {
		name  string
		dst   backend.DevicePtr
		value uint32
		elem  int
		count uint64
	}{
		{"element size 3", p, 0, 3, 1},
		{"element size 8", p, 0, 8, 1},
		{"misaligned 2", p + 1, 0, 2, 1},
		{"misaligned 4", p + 2, 0, 4, 1},
		{"value too wide for 1", p, 0x100, 1, 1},
		{"value too wide for 2", p, 0x10000, 2, 1},
		{"past the mapping", p, 0, 4, G/4 + 1},
		{"overflowing count", p, 0, 4, 1 << 62},
	} {
		if err := s.Memset(tc.dst, tc.value, tc.elem, tc.count); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	must(t, s.Memset(p, 0, 4, 0)) // nothing to do
}

// memView.Slice: hits, straddles, unmapped and inaccessible addresses, and
// invalidation when the page table changes.
func TestSlice(t *testing.T) {
	d := openTest(t, smallOptions())
	v := d.view
	a, err := d.CreateChunk(2 * G)
	must(t, err)
	b, err := d.CreateChunk(G)
	must(t, err)
	p, err := d.Reserve(4*G, 0)
	must(t, err)
	must(t, d.Map(p, 2*G, a, 0))
	must(t, d.Map(p+2*G, G, b, 0))
	c, err := d.CreateChunk(G)
	must(t, err)
	must(t, d.Map(p+3*G, G, c, 0)) // inaccessible for now
	must(t, d.SetAccess(p, 3*G))
	a.(*chunk).data[G-1] = 1
	a.(*chunk).data[G] = 2

	tests := []struct {
		name string
		addr backend.DevicePtr
		n    int
		want []byte
		err  error
	}{
		{"inside a granule", p + G, 1, []byte{2}, nil},
		{"straddling granules of one chunk", p + G - 1, 2, []byte{1, 2}, nil},
		{"straddling two chunks", p + 2*G - 1, 2, nil, ErrIllegalAddress},
		{"inaccessible", p + 3*G, 4, nil, ErrIllegalAddress},
		{"unmapped", p + 4*G, 4, nil, ErrIllegalAddress},
		{"null", 0, 4, nil, ErrIllegalAddress},
		{"negative", p, -1, nil, ErrIllegalAddress},
		{"wrapping", backend.DevicePtr(^uint64(0)), 2, nil, ErrIllegalAddress},
		{"empty", p, 0, nil, nil},
	}
	for _, tt := range tests {
		got, err := v.Slice(uint64(tt.addr), tt.n, false)
		if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.err)
			continue
		}
		if tt.err == nil && !bytes.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
	// Writes through a slice reach the chunk; the slice cannot grow past the access.
	w, err := v.Slice(uint64(p)+10, 4, true)
	must(t, err)
	copy(w, "abcd")
	if string(a.(*chunk).data[10:14]) != "abcd" || cap(w) != 4 {
		t.Fatalf("write through Slice: chunk %q, cap %d", a.(*chunk).data[10:14], cap(w))
	}
	// Unmapping invalidates cached translations; remapping shows the new chunk.
	must(t, d.Unmap(p+2*G, G))
	if _, err := v.Slice(uint64(p+2*G), 4, false); !errors.Is(err, ErrIllegalAddress) {
		t.Fatalf("Slice after Unmap: %v", err)
	}
	c, err = d.CreateChunk(G)
	must(t, err)
	c.(*chunk).data[0] = 42
	must(t, d.Map(p+2*G, G, c, 0))
	if _, err := v.Slice(uint64(p+2*G), 1, false); !errors.Is(err, ErrIllegalAddress) {
		t.Fatalf("Slice of a new mapping before SetAccess: %v", err)
	}
	must(t, d.SetAccess(p+2*G, G))
	got, err := v.Slice(uint64(p+2*G), 1, false)
	must(t, err)
	if got[0] != 42 {
		t.Fatalf("Slice after remap = %d, want 42", got[0])
	}
}

func BenchmarkSlice(b *testing.B) {
	d := openTest(b, Options{})
	p := alloc(b, d, 64<<20)
	v := d.view
	b.Run("same granule", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := v.Slice(uint64(p)+uint64(i&1023)*4, 4, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("32 granules round robin", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := v.Slice(uint64(p)+uint64(i&31)<<21+uint64(i&255)*8, 8, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, err := v.Slice(uint64(p)+uint64(i&31)<<21+uint64(i&1023)*4, 4, true); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	})
}

func TestMemAllocFree(t *testing.T) {
	dev := openTest(t, Options{})
	var sa backend.SimpleAllocator = dev
	p, err := sa.MemAlloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := dev.NewStream(0)
	if err := st.CopyHtoD(p, []byte("native")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 6)
	if err := st.CopyDtoH(got, p); err != nil || string(got) != "native" {
		t.Fatalf("read back %q, %v", got, err)
	}
	if err := sa.MemFree(p); err != nil {
		t.Fatal(err)
	}
	if err := sa.MemFree(p); err == nil {
		t.Error("double free accepted")
	}
}
