package backendtest

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
)

// Bad VMM calls get the sim's typed errors on every backend, and none of
// them reaches (or harms) the device.
func (s *suite) testVMMErrors(t *testing.T) {
	d := s.dev
	G := d.Granularity()
	invalidHandle := v1.ErrInvalidHandle
	tests := []struct {
		name string
		op   func(t *testing.T) error
		want error // nil: success
	}{
		{"reserve", func(t *testing.T) error { reserve(t, d, G); return nil }, nil},
		{"reserve zero", func(t *testing.T) error { _, err := d.Reserve(0, 0); return err }, backend.ErrInvalidArgument},
		{"reserve partial granule", func(t *testing.T) error { _, err := d.Reserve(G+1, 0); return err }, backend.ErrInvalidArgument},
		{"reserve alignment not a power of two", func(t *testing.T) error { _, err := d.Reserve(G, 3*G); return err }, backend.ErrInvalidArgument},
		{"reserve alignment below granularity", func(t *testing.T) error { _, err := d.Reserve(G, G/2); return err }, backend.ErrInvalidArgument},
		{"release", func(t *testing.T) error {
			p, err := d.Reserve(2*G, 0)
			must(t, err)
			return d.Release(p, 2*G)
		}, nil},
		{"release middle", func(t *testing.T) error { p := reserve(t, d, 2*G); return d.Release(p+backend.DevicePtr(G), G) }, backend.ErrInvalidArgument},
		{"release wrong size", func(t *testing.T) error { p := reserve(t, d, 2*G); return d.Release(p, G) }, backend.ErrInvalidArgument},
		{"release twice", func(t *testing.T) error {
			p, err := d.Reserve(G, 0)
			must(t, err)
			must(t, d.Release(p, G))
			return d.Release(p, G)
		}, backend.ErrInvalidArgument},
		{"release mapped", func(t *testing.T) error {
			p := reserve(t, d, G)
			mapped(t, d, p, G, chunk(t, d, G), 0)
			return d.Release(p, G)
		}, backend.ErrInvalidArgument},
		{"chunk zero", func(t *testing.T) error { _, err := d.CreateChunk(0); return err }, backend.ErrInvalidArgument},
		{"chunk partial granule", func(t *testing.T) error { _, err := d.CreateChunk(G - 1); return err }, backend.ErrInvalidArgument},
		{"chunk release twice", func(t *testing.T) error {
			c, err := d.CreateChunk(G)
			must(t, err)
			must(t, c.Release())
			return c.Release()
		}, invalidHandle},
		{"chunk release while mapped", func(t *testing.T) error {
			c := chunk(t, d, G)
			mapped(t, d, reserve(t, d, G), G, c, 0)
			return c.Release()
		}, backend.ErrInvalidArgument},
		{"map", func(t *testing.T) error { mapped(t, d, reserve(t, d, 2*G), 2*G, chunk(t, d, 2*G), 0); return nil }, nil},
		{"map past the reservation", func(t *testing.T) error { return d.Map(reserve(t, d, G), 2*G, chunk(t, d, 2*G), 0) }, backend.ErrInvalidArgument},
		{"map over a mapping", func(t *testing.T) error {
			p := reserve(t, d, 2*G)
			mapped(t, d, p+backend.DevicePtr(G), G, chunk(t, d, G), 0)
			return d.Map(p, 2*G, chunk(t, d, 2*G), 0)
		}, backend.ErrInvalidArgument},
		{"map partial granule", func(t *testing.T) error { return d.Map(reserve(t, d, 2*G), G+1, chunk(t, d, 2*G), 0) }, backend.ErrInvalidArgument},
		{"map unaligned address", func(t *testing.T) error { return d.Map(reserve(t, d, 2*G)+1, G, chunk(t, d, 2*G), 0) }, backend.ErrInvalidArgument},
		{"map unaligned offset", func(t *testing.T) error { return d.Map(reserve(t, d, G), G, chunk(t, d, 2*G), 1) }, backend.ErrInvalidArgument},
		{"map past the chunk", func(t *testing.T) error { return d.Map(reserve(t, d, 2*G), 2*G, chunk(t, d, 2*G), G) }, backend.ErrInvalidArgument},
		// The NVIDIA driver (580) answers CUDA_ERROR_NOT_SUPPORTED to any non-zero offset.
		{"map at a chunk offset", func(t *testing.T) error { return d.Map(reserve(t, d, G), G, chunk(t, d, 2*G), G) }, backend.ErrUnsupported},
		// And to a mapping of part of a chunk (run 7: 62 MiB of a 64 MiB chunk).
		{"map a prefix of a chunk", func(t *testing.T) error { return d.Map(reserve(t, d, G), G, chunk(t, d, 2*G), 0) }, backend.ErrUnsupported},
		{"map released chunk", func(t *testing.T) error {
			c, err := d.CreateChunk(G)
			must(t, err)
			must(t, c.Release())
			return d.Map(reserve(t, d, G), G, c, 0)
		}, invalidHandle},
		{"unmap", func(t *testing.T) error {
			p := reserve(t, d, 2*G)
			must(t, d.Map(p, 2*G, chunk(t, d, 2*G), 0))
			return d.Unmap(p, 2*G)
		}, nil},
		{"unmap two whole mappings", func(t *testing.T) error {
			p := reserve(t, d, 3*G)
			must(t, d.Map(p, G, chunk(t, d, G), 0))
			must(t, d.Map(p+backend.DevicePtr(G), 2*G, chunk(t, d, 2*G), 0))
			return d.Unmap(p, 3*G)
		}, nil},
		{"unmap unmapped", func(t *testing.T) error { return d.Unmap(reserve(t, d, G), G) }, backend.ErrInvalidArgument},
		{"unmap with a hole", func(t *testing.T) error {
			p := reserve(t, d, 3*G)
			mapped(t, d, p, G, chunk(t, d, G), 0)
			mapped(t, d, p+backend.DevicePtr(2*G), G, chunk(t, d, G), 0)
			return d.Unmap(p, 3*G)
		}, backend.ErrInvalidArgument},
		{"unmap part of a mapping", func(t *testing.T) error {
			p := reserve(t, d, 2*G)
			mapped(t, d, p, 2*G, chunk(t, d, 2*G), 0)
			return d.Unmap(p, G)
		}, backend.ErrInvalidArgument},
		{"unmap zero", func(t *testing.T) error { return d.Unmap(reserve(t, d, G), 0) }, backend.ErrInvalidArgument},
		{"set access over two mappings", func(t *testing.T) error {
			p := reserve(t, d, 2*G)
			mapped(t, d, p, G, chunk(t, d, G), 0)
			mapped(t, d, p+backend.DevicePtr(G), G, chunk(t, d, G), 0)
			return d.SetAccess(p, 2*G)
		}, nil},
		{"set access unmapped", func(t *testing.T) error { return d.SetAccess(reserve(t, d, G), G) }, backend.ErrInvalidArgument},
		{"set access partial granule", func(t *testing.T) error {
			p := reserve(t, d, G)
			mapped(t, d, p, G, chunk(t, d, G), 0)
			return d.SetAccess(p, 100)
		}, backend.ErrInvalidArgument},
		{"copy to mapped but inaccessible", func(t *testing.T) error {
			p := reserve(t, d, G)
			mapped(t, d, p, G, chunk(t, d, G), 0)
			return newStream(t, d).CopyHtoD(p, make([]byte, 16))
		}, backend.ErrInvalidArgument},
		{"copy after unmap", func(t *testing.T) error {
			p := reserve(t, d, G)
			c := chunk(t, d, G)
			must(t, d.Map(p, G, c, 0))
			must(t, d.SetAccess(p, G))
			must(t, d.Unmap(p, G))
			return newStream(t, d).CopyDtoH(make([]byte, 16), p)
		}, backend.ErrInvalidArgument},
		{"copy past the mapping", func(t *testing.T) error {
			p := alloc(t, d, G)
			return newStream(t, d).CopyHtoD(p+backend.DevicePtr(G)-8, make([]byte, 16))
		}, backend.ErrInvalidArgument},
		{"copy from an unreserved address", func(t *testing.T) error {
			return newStream(t, d).CopyDtoH(make([]byte, 16), 8)
		}, backend.ErrInvalidArgument},
		{"device copy from unmapped", func(t *testing.T) error {
			p := alloc(t, d, G)
			return newStream(t, d).CopyDtoD(p, reserve(t, d, G), 16)
		}, backend.ErrInvalidArgument},
		{"memset wrapping around", func(t *testing.T) error {
			return newStream(t, d).Memset(backend.DevicePtr(^uint64(0)-3), 0, 4, 2)
		}, backend.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op(t)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) || v1.CodeOf(err) != v1.CodeOf(tt.want) {
				t.Fatalf("err = %v (code %v), want code %v", err, v1.CodeOf(err), v1.CodeOf(tt.want))
			}
		})
	}
	// None of that harmed the device.
	p := alloc(t, d, G)
	st := newStream(t, d)
	must(t, st.Memset(p, 0x5a, 1, 4096))
	got := make([]byte, 4096)
	must(t, st.CopyDtoH(got, p))
	if !bytes.Equal(got, bytes.Repeat([]byte{0x5a}, 4096)) {
		t.Fatal("the device does not work after the error cases")
	}
}

// Reservations are aligned as asked and never overlap; a naturally aligned
// window (what sessions use) works.
func (s *suite) testReserveLayout(t *testing.T) {
	d := s.dev
	G := d.Granularity()
	type rng struct{ p, size uint64 }
	var got []rng
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 64; i++ {
		size := uint64(1+r.IntN(8)) * G
		align := G << r.IntN(6)
		p, err := d.Reserve(size, align)
		must(t, err)
		if uint64(p)%align != 0 || p == 0 {
			t.Fatalf("Reserve(%#x, %#x) = %#x: misaligned", size, align, p)
		}
		for _, o := range got {
			if uint64(p) < o.p+o.size && o.p < uint64(p)+size {
				t.Fatalf("Reserve(%#x) = %#x overlaps %#x+%#x", size, p, o.p, o.size)
			}
		}
		got = append(got, rng{uint64(p), size})
		if i%3 == 0 {
			k := r.IntN(len(got))
			must(t, d.Release(backend.DevicePtr(got[k].p), got[k].size))
			got = append(got[:k], got[k+1:]...)
		}
	}
	for _, o := range got {
		must(t, d.Release(backend.DevicePtr(o.p), o.size))
	}
	w, err := d.Reserve(1<<30, 1<<30)
	must(t, err)
	if w%(1<<30) != 0 {
		t.Fatalf("1 GiB window at %#x is not naturally aligned", w)
	}
	must(t, d.Release(w, 1<<30))
}

// Creating a chunk takes its memory from the free memory; releasing it gives
// it back. (Half the size, so that a real driver's own bookkeeping cannot
// make the test flaky.)
func (s *suite) testMemoryInfo(t *testing.T) {
	d := s.dev
	free, total, err := d.MemoryInfo()
	must(t, err)
	if total == 0 || free > total {
		t.Fatalf("MemoryInfo = %d free of %d", free, total)
	}
	size := roundUp(64<<20, d.Granularity())
	c, err := d.CreateChunk(size)
	must(t, err)
	if c.Size() != size {
		t.Fatalf("Size = %d, want %d", c.Size(), size)
	}
	after, _, err := d.MemoryInfo()
	must(t, err)
	if free < after || free-after < size/2 {
		t.Errorf("free memory went from %d to %d after a %d-byte chunk", free, after, size)
	}
	must(t, c.Release())
	back, _, err := d.MemoryInfo()
	must(t, err)
	if back < after || back-after < size/2 {
		t.Errorf("free memory went from %d to %d after releasing a %d-byte chunk", after, back, size)
	}
	s.opts.Logf("memory: %d MiB free of %d MiB", free>>20, total>>20)
}

// One chunk mapped at two addresses is one memory. (Whole chunks only: the
// NVIDIA driver refuses a mapping at a non-zero chunk offset.)
func (s *suite) testAliasing(t *testing.T) {
	d := s.dev
	G := d.Granularity()
	Gp := backend.DevicePtr(G)
	c, err := d.CreateChunk(2 * G)
	must(t, err)
	p1 := reserve(t, d, 2*G)
	p2 := reserve(t, d, 2*G)
	must(t, d.Map(p1, 2*G, c, 0))
	must(t, d.Map(p2, 2*G, c, 0))
	must(t, d.SetAccess(p1, 2*G))
	must(t, d.SetAccess(p2, 2*G))
	st := newStream(t, d)

	want := []byte("written through p1")
	must(t, st.CopyHtoD(p1+Gp+100, want))
	got := make([]byte, len(want))
	must(t, st.CopyDtoH(got, p2+Gp+100))
	if !bytes.Equal(got, want) {
		t.Fatalf("read through p2 = %q, want %q", got, want)
	}
	must(t, st.Memset(p2+Gp+512, 0xdeadbeef, 4, 8))
	got = make([]byte, 32)
	must(t, st.CopyDtoH(got, p1+backend.DevicePtr(G)+512))
	if !bytes.Equal(got, bytes.Repeat([]byte{0xef, 0xbe, 0xad, 0xde}, 8)) {
		t.Fatalf("memset through p2, read through p1: %x", got)
	}
	must(t, st.Synchronize())
	must(t, d.Unmap(p2, 2*G))
	must(t, st.CopyDtoH(got[:len(want)], p1+backend.DevicePtr(G)+100))
	if !bytes.Equal(got[:len(want)], want) {
		t.Fatalf("after unmapping the alias: %q", got[:len(want)])
	}
	if err := c.Release(); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("Release of a chunk still mapped once: %v", err)
	}
	must(t, st.Synchronize())
	must(t, d.Unmap(p1, 2*G))
	must(t, c.Release())
}

// Copies, device-to-device copies and memsets over granules backed by
// different chunks, out of order.
func (s *suite) testCopiesSpanChunks(t *testing.T) {
	d := s.dev
	G := d.Granularity()
	Gp := backend.DevicePtr(G)
	a, b, c := chunk(t, d, G), chunk(t, d, 2*G), chunk(t, d, G)
	p := reserve(t, d, 4*G)
	mapped(t, d, p, G, c, 0)      // granule 0: c
	mapped(t, d, p+Gp, 2*G, b, 0) // granules 1-2: b
	mapped(t, d, p+3*Gp, G, a, 0) // granule 3: a
	must(t, d.SetAccess(p, 4*G))
	st := newStream(t, d)

	data := randBytes(rand.New(rand.NewPCG(3, 4)), int(4*G-200))
	must(t, st.CopyHtoD(p+100, data))
	got := make([]byte, len(data))
	must(t, st.CopyDtoH(got, p+100))
	if !bytes.Equal(got, data) {
		t.Fatal("round trip over four granules of two chunks differs")
	}
	// The bytes landed where the mappings say: map c and a elsewhere and look.
	q := reserve(t, d, 2*G)
	mapped(t, d, q, G, c, 0)
	mapped(t, d, q+Gp, G, a, 0)
	must(t, d.SetAccess(q, 2*G))
	ga := make([]byte, 2*G)
	must(t, st.CopyDtoH(ga, q))
	if !bytes.Equal(ga[100:G], data[:G-100]) || !bytes.Equal(ga[G:2*G-100], data[3*G-100:]) {
		t.Fatal("chunk contents do not follow the mappings")
	}

	r := alloc(t, d, 4*G)
	must(t, st.CopyDtoD(r+7, p+100, uint64(len(data))))
	must(t, st.CopyDtoH(got, r+7))
	if !bytes.Equal(got, data) {
		t.Fatal("device-to-device copy over chunk boundaries differs")
	}

	for _, tc := range []struct {
		elem  int
		value uint32
		want  []byte
	}{
		{1, 0x5a, []byte{0x5a}},
		{2, 0xbeef, []byte{0xef, 0xbe}},
		{4, 0x01020304, []byte{4, 3, 2, 1}},
	} {
		start := p + Gp - 64
		must(t, st.Memset(start, tc.value, tc.elem, uint64(128/tc.elem)))
		out := make([]byte, 132)
		must(t, st.CopyDtoH(out, start))
		for i := 0; i < 128; i++ {
			if out[i] != tc.want[i%tc.elem] {
				t.Fatalf("memset%d: byte %d = %#x", tc.elem*8, i, out[i])
			}
		}
		if !bytes.Equal(out[128:], data[G-36:G-32]) {
			t.Fatalf("memset%d wrote past its range", tc.elem*8)
		}
	}
	must(t, st.Synchronize())
}

func (s *suite) testMemsetErrors(t *testing.T) {
	d := s.dev
	G := d.Granularity()
	p := alloc(t, d, G)
	st := newStream(t, d)
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
		if err := st.Memset(tc.dst, tc.value, tc.elem, tc.count); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	must(t, st.Memset(p, 0, 4, 0)) // nothing to do
	must(t, st.Synchronize())
}

// mmapped returns n bytes of anonymous memory outside the Go heap, which
// RegisterHost may page-lock.
func mmapped(t testing.TB, n int) []byte {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	must(t, err)
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	return b
}

// Pinned copies are asynchronous; a pageable host-to-device copy has
// consumed its source when it returns; a pageable device-to-host copy has
// written its destination.
func (s *suite) testHostMemoryPaths(t *testing.T) {
	d := s.dev
	p := alloc(t, d, d.Granularity())
	st := newStream(t, d)
	const n = 1 << 16
	r := rand.New(rand.NewPCG(5, 6))

	pinned := allocHost(t, d, n)
	if len(pinned.Bytes()) != n {
		t.Fatalf("AllocHost(%d) gave %d bytes", n, len(pinned.Bytes()))
	}
	want := randBytes(r, n)
	copy(pinned.Bytes(), want)
	must(t, st.CopyHtoD(p, pinned.Bytes()))
	must(t, st.Synchronize())
	clear(pinned.Bytes())
	must(t, st.CopyDtoH(pinned.Bytes(), p))
	must(t, st.Synchronize())
	if !bytes.Equal(pinned.Bytes(), want) {
		t.Fatal("pinned round trip differs")
	}

	// Pageable: the source may change as soon as the call returns.
	src := randBytes(r, n)
	want = bytes.Clone(src)
	must(t, st.CopyHtoD(p, src))
	clear(src)
	out := make([]byte, n)
	must(t, st.CopyDtoH(out, p)) // written by the time it returns
	if !bytes.Equal(out, want) {
		t.Fatal("pageable round trip differs: the source was not consumed at the call, or the destination not written")
	}

	// RegisterHost memory (any part of it) is pinned too.
	reg := mmapped(t, 2*n)
	must(t, d.RegisterHost(reg))
	copy(reg[n:], want)
	must(t, st.CopyHtoD(p+100, reg[n:]))
	must(t, st.CopyDtoH(reg[:n], p+100))
	must(t, st.Synchronize())
	if !bytes.Equal(reg[:n], want) {
		t.Fatal("registered round trip differs")
	}
	must(t, d.UnregisterHost(reg))
	must(t, pinned.Free())
	if err := pinned.Free(); v1.CodeOf(err) != v1.CodeInvalidHandle {
		t.Fatalf("second Free = %v, want an invalid-handle error", err)
	}
}

func (s *suite) testHostMemoryErrors(t *testing.T) {
	d := s.dev
	reg := mmapped(t, 1<<16)
	must(t, d.RegisterHost(reg))
	defer d.UnregisterHost(reg)
	h := allocHost(t, d, 128)
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
	}
	for _, tt := range tests {
		if err := tt.op(); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// The driver's own allocator, where a backend offers it for native baselines:
// memory that copies reach, freed once.
func (s *suite) testSimpleAllocator(t *testing.T) {
	sa, ok := s.dev.(backend.SimpleAllocator)
	if !ok {
		t.Skip("the backend offers no native allocator")
	}
	p, err := sa.MemAlloc(1 << 20)
	if errors.Is(err, backend.ErrUnsupported) {
		t.Skipf("native allocator: %v", err)
	}
	must(t, err)
	st := newStream(t, s.dev)
	want := []byte("allocated natively")
	must(t, st.CopyHtoD(p+4096, want))
	got := make([]byte, len(want))
	must(t, st.CopyDtoH(got, p+4096))
	if !bytes.Equal(got, want) {
		t.Fatalf("read back %q", got)
	}
	must(t, st.Synchronize())
	must(t, sa.MemFree(p))
}
