package driver

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/sched"
	"github.com/gpuos/gpuos/internal/slice"
)

// TestSlicedLaunchUnderPriority: while a high-class tenant is active, a
// best-effort tenant's long guarded kernel runs as slices of its twin (each
// one wave of the device less a reserve: 4 SMs of 8 such blocks), and
// computes exactly what it would have whole. Twins are not visible to clients.
func TestSlicedLaunchUnderPriority(t *testing.T) {
	td := newDriverOn(t, sim.New(sim.Options{Memory: 256 << 20, SMs: 4}), Options{Sched: sched.Options{Policy: "priority", SliceTarget: 20 * time.Microsecond}})
	d := td.d
	if err := d.sched.SetShare("hp", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassHigh, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	if err := d.sched.SetShare("be", sched.Share{Compute: 1, Copy: 1, Class: sched.ClassLow, ClassSet: true}); err != nil {
		t.Fatal(err)
	}
	image, err := os.ReadFile(filepath.Join("..", "..", "testdata", "kernels", "vecadd.ptx"))
	if err != nil {
		t.Fatal(err)
	}
	load := func(ts *testSession) v1.KernelInfo {
		var p v1.ProgramLoaded
		ts.must(&v1.LoadProgram{Image: image, Name: "vecadd.ptx"}, &p)
		for _, k := range p.Kernels {
			if slice.IsTwin(k) {
				t.Errorf("program lists the twin %s", k)
			}
		}
		var bad v1.KernelInfo
		if err := ts.call(&v1.GetKernel{Program: p.Handle, Name: slice.Twin("vecadd")}, &bad); !errors.Is(err, v1.ErrNotFound) {
			t.Errorf("GetKernel of the twin: %v, want NotFound", err)
		}
		var k v1.KernelInfo
		ts.must(&v1.GetKernel{Program: p.Handle, Name: "vecadd"}, &k)
		return k
	}

	// The high-class tenant is active: it has just submitted work.
	hp := td.session("hp", 0)
	hk := load(hp)
	hbuf := hp.buffer(3*4*256, 0)
	hp.must(&v1.Launch{Kernel: hk.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{256, 1, 1},
		Params: pack(hk, hbuf.Addr, hbuf.Addr+1024, hbuf.Addr+2048, 256)}, nil)
	hp.must(&v1.Synchronize{}, nil)

	be := td.session("be", 0)
	k := load(be)
	const blocks, n = 64, 64 * 256
	a, b, c := make([]byte, 4*n), make([]byte, 4*n), make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(a[4*i:], math.Float32bits(float32(i)))
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(3*i)+0.5))
	}
	buf := be.buffer(uint64(3*4*n), 0)
	for i, data := range [][]byte{a, b, c} {
		be.must(&v1.BufferWrite{Buffer: buf.Handle, Offset: uint64(i * 4 * n), Data: data}, nil)
	}
	be.must(&v1.Launch{Kernel: k.Handle, Grid: [3]uint32{blocks, 1, 1}, Block: [3]uint32{256, 1, 1},
		Params: pack(k, buf.Addr, buf.Addr+4*n, buf.Addr+8*n, n)}, nil)
	be.must(&v1.Synchronize{}, nil)
	be.expectVecadd(buf, n, func(i int) float32 { return float32(i) + float32(3*i) + 0.5 }, "the sliced kernels' result")
	for _, ts := range d.sched.Tenants() {
		if ts.Name == "be" {
			parts := ts.Engines[sched.EngineCompute].Dispatched
			t.Logf("best-effort kernel of %d blocks issued in %d parts", blocks, parts)
			if parts < 2 {
				t.Errorf("the best-effort kernel was issued in %d part(s): not sliced", parts)
			}
		}
	}
}

// waveUnits counts what the device holds at once as the occupancy
// calculator does, in units of the sliced dimension.
func TestWaveUnits(t *testing.T) {
	attrs := make([]int32, 256)
	attrs[cuda.CU_DEVICE_ATTRIBUTE_WARP_SIZE] = 32
	attrs[cuda.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR] = 2048
	attrs[cuda.CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR] = 32
	attrs[cuda.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR] = 65536
	attrs[cuda.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR] = 233472
	attrs[cuda.CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK] = 1024
	h100 := &backend.DeviceInfo{SMCount: 132, Attributes: attrs}
	cfg := func(grid [3]uint32, threads, shared uint32) backend.LaunchConfig {
		return backend.LaunchConfig{Grid: grid, Block: [3]uint32{threads, 1, 1}, SharedMem: shared}
	}
	for _, tt := range []struct {
		name string
		dev  *backend.DeviceInfo
		sms  int // the stream's SMs (a partition's); 0: the device's
		fa   backend.FuncAttributes
		cfg  backend.LaunchConfig
		want uint32
	}{
		{"bench best effort: 128 threads, 16 a SM", h100, 0, backend.FuncAttributes{NumRegs: 16}, cfg([3]uint32{42240, 1, 1}, 128, 0), 132 * 16},
		{"the same on a stream of a 124-SM partition", h100, 124, backend.FuncAttributes{NumRegs: 16}, cfg([3]uint32{42240, 1, 1}, 128, 0), 124 * 16},
		{"bench shares: 1024 threads, 2 a SM", h100, 0, backend.FuncAttributes{NumRegs: 16}, cfg([3]uint32{264, 1, 1}, 1024, 0), 264},
		{"registers bound: 128 regs x 256 threads", h100, 0, backend.FuncAttributes{NumRegs: 128}, cfg([3]uint32{1000, 1, 1}, 256, 0), 132 * 2},
		{"shared memory bound: 100 KiB", h100, 0, backend.FuncAttributes{}, cfg([3]uint32{1000, 1, 1}, 64, 100<<10), 132 * 2},
		{"units of 4 blocks (grid y sliced)", h100, 0, backend.FuncAttributes{}, cfg([3]uint32{4, 1000, 1}, 256, 0), 132 * 8 / 4},
		{"a unit larger than the device", h100, 0, backend.FuncAttributes{}, cfg([3]uint32{5000, 2, 1}, 1024, 0), 0},
		{"no device limits", &backend.DeviceInfo{SMCount: 132}, 0, backend.FuncAttributes{}, cfg([3]uint32{1000, 1, 1}, 128, 0), 0},
	} {
		if got := waveUnits(tt.dev, tt.sms, tt.fa, tt.cfg); got != tt.want {
			t.Errorf("%s: waveUnits = %d, want %d", tt.name, got, tt.want)
		}
	}
}
