package backendtest

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpuos/gpuos/internal/backend"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func roundUp(n, g uint64) uint64 { return (n + g - 1) &^ (g - 1) }

// alloc reserves, creates and maps size bytes (rounded up to the
// granularity), accessible; the test's cleanup frees them.
func alloc(t testing.TB, d backend.Device, size uint64) backend.DevicePtr {
	t.Helper()
	size = roundUp(max(size, 1), d.Granularity())
	p, err := d.Reserve(size, 0)
	must(t, err)
	c, err := d.CreateChunk(size)
	if err != nil {
		_ = d.Release(p, size)
		t.Fatalf("CreateChunk(%d): %v", size, err)
	}
	must(t, d.Map(p, size, c, 0))
	must(t, d.SetAccess(p, size))
	t.Cleanup(func() {
		_ = d.Synchronize()
		_ = d.Unmap(p, size)
		_ = c.Release()
		_ = d.Release(p, size)
	})
	return p
}

// reserve reserves size bytes; the test's cleanup releases them (after the
// cleanups registered later unmapped them).
func reserve(t testing.TB, d backend.Device, size uint64) backend.DevicePtr {
	t.Helper()
	p, err := d.Reserve(size, 0)
	must(t, err)
	t.Cleanup(func() { _ = d.Release(p, size) })
	return p
}

// chunk creates a chunk; the test's cleanup releases it if still held.
func chunk(t testing.TB, d backend.Device, size uint64) backend.Chunk {
	t.Helper()
	c, err := d.CreateChunk(size)
	must(t, err)
	t.Cleanup(func() { _ = c.Release() })
	return c
}

// mapped maps c at p and unmaps it in the test's cleanup.
func mapped(t testing.TB, d backend.Device, p backend.DevicePtr, size uint64, c backend.Chunk, off uint64) {
	t.Helper()
	must(t, d.Map(p, size, c, off))
	t.Cleanup(func() { _ = d.Synchronize(); _ = d.Unmap(p, size) })
}

func newStream(t testing.TB, d backend.Device) backend.Stream {
	t.Helper()
	s, err := d.NewStream(0)
	must(t, err)
	t.Cleanup(func() { _ = s.Destroy() })
	return s
}

func newEvent(t testing.TB, d backend.Device, flags backend.EventFlags) backend.Event {
	t.Helper()
	e, err := d.NewEvent(flags)
	must(t, err)
	t.Cleanup(func() { _ = e.Destroy() })
	return e
}

func allocHost(t testing.TB, d backend.Device, size int) backend.HostMemory {
	t.Helper()
	h, err := d.AllocHost(size)
	must(t, err)
	t.Cleanup(func() { _ = d.Synchronize(); _ = h.Free() })
	return h
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func grid1(blocks, threads uint32) backend.LaunchConfig {
	return backend.LaunchConfig{Grid: [3]uint32{blocks, 1, 1}, Block: [3]uint32{threads, 1, 1}}
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func f32s(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func f64bytes(v []float64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

func f64s(b []byte) []float64 {
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}

func randFloats(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*200 - 100
	}
	return v
}

// randSmallInts returns integer-valued floats, whose sums are exact in any order.
func randSmallInts(r *rand.Rand, n, bound int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.IntN(2*bound+1) - bound)
	}
	return v
}
