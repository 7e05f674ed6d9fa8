package cuda

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// Benchmarks of the backend used directly, the "native" side of gpuos bench.
// Each runs on the GPU when there is one; the launch and allocation ones also
// run on the fake driver, where they measure the backend's own cost (Go, cgo,
// bookkeeping) without the driver's. Native figures of the lent H100 are in
// RESEARCH.md: 3.43 µs per async empty launch, 8.74 µs launch+sync, 1.37 µs
// idle stream sync, 66.8 µs cuMemAlloc+cuMemFree of 1 MiB, 54.7/53.9 GB/s
// pinned HtoD/DtoH, 7.3 µs for a 64-byte synchronous HtoD copy, ~2390 GB/s
// for the memory-bound kernel.

type benchTarget struct {
	name  string
	open  func(b *testing.B) *Device
	image string // a module with the kernel "empty" and no others needed
}

func benchTargets(b *testing.B, withFake bool) []benchTarget {
	ts := []benchTarget{{name: "gpu", open: func(b *testing.B) *Device {
		_, d := gpuDevice(b)
		return d
	}}}
	if withFake {
		ts = append(ts, benchTarget{name: "fake", open: func(b *testing.B) *Device {
			_, d := openFakeDevice(b)
			return d
		}, image: fakePTX})
	}
	return ts
}

func (bt benchTarget) empty(b *testing.B, d *Device) backend.Function {
	img := bt.image
	if img == "" {
		img = string(readTestdata(b, "kernels/bench.ptx"))
	}
	m, err := d.LoadModule([]byte(img))
	must(b, err)
	b.Cleanup(func() { _ = m.Unload() })
	f, err := m.Function("empty")
	must(b, err)
	return f
}

func benchStream(b *testing.B, d *Device) backend.Stream {
	s, err := d.NewStream(0)
	must(b, err)
	b.Cleanup(func() { _ = s.Destroy() })
	return s
}

var one = backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}

// BenchmarkLaunchAsync: empty kernels launched back to back, one
// synchronization at the end (native: 3.43 µs per launch).
func BenchmarkLaunchAsync(b *testing.B) {
	for _, bt := range benchTargets(b, true) {
		b.Run(bt.name, func(b *testing.B) {
			d := bt.open(b)
			f, s := bt.empty(b, d), benchStream(b, d)
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Launch(f, one, nil); err != nil {
					b.Fatal(err)
				}
			}
			must(b, s.Synchronize())
		})
	}
}

// BenchmarkLaunchSync: launch then wait for it (native: 8.74 µs).
func BenchmarkLaunchSync(b *testing.B) {
	for _, bt := range benchTargets(b, true) {
		b.Run(bt.name, func(b *testing.B) {
			d := bt.open(b)
			f, s := bt.empty(b, d), benchStream(b, d)
			for b.Loop() {
				if err := s.Launch(f, one, nil); err != nil {
					b.Fatal(err)
				}
				if err := s.Synchronize(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLaunchFence: as BenchmarkLaunchSync, but the host waits by
// polling a fence (backend.Fencer) instead of cuStreamSynchronize: the wait a
// high-class session's synchronizing calls use.
func BenchmarkLaunchFence(b *testing.B) {
	for _, bt := range benchTargets(b, true) {
		b.Run(bt.name, func(b *testing.B) {
			d := bt.open(b)
			f, s := bt.empty(b, d), benchStream(b, d)
			fr := s.(backend.Fencer)
			for b.Loop() {
				if err := s.Launch(f, one, nil); err != nil {
					b.Fatal(err)
				}
				fe, err := fr.Fence()
				if err != nil {
					b.Fatal(err)
				}
				for !fe.Reached() {
				}
			}
		})
	}
}

// BenchmarkLaunchWith: the host's cost of what the scheduler and the driver
// enqueue around a high-class launch, launch by launch, with a synchronize
// every 256: "event" a timed completion event (cuEventRecord), "untimed" one
// without timing, "fence" a fence word (cuStreamWriteValue32). Less
// BenchmarkLaunchAsync's figure, what each costs the path.
func BenchmarkLaunchWith(b *testing.B) {
	for _, bt := range benchTargets(b, true) {
		for _, pat := range []string{"launch", "launch+event", "launch+untimed", "launch+fence", "event+launch+event", "launch+fence+event"} {
			b.Run(bt.name+"/"+pat, func(b *testing.B) {
				d := bt.open(b)
				f, s := bt.empty(b, d), benchStream(b, d)
				timed, err := d.NewEvent(0)
				must(b, err)
				defer timed.Destroy()
				untimed, err := d.NewEvent(backend.EventDisableTiming)
				must(b, err)
				defer untimed.Destroy()
				fr := s.(backend.Fencer)
				steps := strings.Split(pat, "+")
				i := 0
				for b.Loop() {
					for _, step := range steps {
						var err error
						switch step {
						case "launch":
							err = s.Launch(f, one, nil)
						case "event":
							err = s.Record(timed)
						case "untimed":
							err = s.Record(untimed)
						case "fence":
							_, err = fr.Fence()
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					if i++; i%256 == 0 {
						must(b, s.Synchronize())
					}
				}
				must(b, s.Synchronize())
			})
		}
	}
}

// BenchmarkStreamSyncIdle: synchronizing a stream with nothing to do
// (native: 1.37 µs).
func BenchmarkStreamSyncIdle(b *testing.B) {
	for _, bt := range benchTargets(b, true) {
		b.Run(bt.name, func(b *testing.B) {
			s := benchStream(b, bt.open(b))
			for b.Loop() {
				if err := s.Synchronize(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAllocVMM: one granule (2 MiB on an H100) the way gpuos allocates:
// reserve, create, map, set access, then unmap, release the chunk, free the
// range (native cuMemAlloc+cuMemFree of 1 MiB: 66.8 µs). "chunk" is the
// physical part alone, "map" the mapping part alone over a kept chunk and
// range: what a window with chunk reuse pays.
func BenchmarkAllocVMM(b *testing.B) {
	for _, bt := range benchTargets(b, true) {
		b.Run(bt.name+"/full", func(b *testing.B) {
			d := bt.open(b)
			g := d.Granularity()
			for b.Loop() {
				p, err := d.Reserve(g, 0)
				must(b, err)
				c, err := d.CreateChunk(g)
				must(b, err)
				must(b, d.Map(p, g, c, 0))
				must(b, d.SetAccess(p, g))
				must(b, d.Unmap(p, g))
				must(b, c.Release())
				must(b, d.Release(p, g))
			}
		})
		b.Run(bt.name+"/chunk", func(b *testing.B) {
			d := bt.open(b)
			g := d.Granularity()
			for b.Loop() {
				c, err := d.CreateChunk(g)
				must(b, err)
				must(b, c.Release())
			}
		})
		b.Run(bt.name+"/map", func(b *testing.B) {
			d := bt.open(b)
			g := d.Granularity()
			p, err := d.Reserve(g, 0)
			must(b, err)
			c, err := d.CreateChunk(g)
			must(b, err)
			for b.Loop() {
				must(b, d.Map(p, g, c, 0))
				must(b, d.SetAccess(p, g))
				must(b, d.Unmap(p, g))
			}
		})
	}
}

// BenchmarkCopySmallSync: a 64-byte copy from Go memory, which returns once
// done (native synchronous 64-byte HtoD: 7.3 µs).
func BenchmarkCopySmallSync(b *testing.B) {
	for _, bt := range benchTargets(b, true) {
		b.Run(bt.name, func(b *testing.B) {
			d := bt.open(b)
			p := allocFake(b, d, 1)
			s := benchStream(b, d)
			src := make([]byte, 64)
			b.ReportAllocs()
			for b.Loop() {
				if err := s.CopyHtoD(p, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCopy256MiB: host↔device bandwidth, pinned (AllocHost) and
// pageable (Go memory), each copy waited for (native pinned 54.7/53.9 GB/s,
// pageable 6.2/11.9 GB/s HtoD/DtoH).
func BenchmarkCopy256MiB(b *testing.B) {
	const n = 256 << 20
	for _, pinned := range []bool{true, false} {
		for _, dir := range []string{"HtoD", "DtoH"} {
			name := dir + "/pageable"
			if pinned {
				name = dir + "/pinned"
			}
			b.Run(name, func(b *testing.B) {
				_, d := gpuDevice(b)
				p := allocFake(b, d, n)
				s := benchStream(b, d)
				host := make([]byte, n)
				if pinned {
					h, err := d.AllocHost(n)
					must(b, err)
					b.Cleanup(func() { _ = h.Free() })
					host = h.Bytes()
				}
				b.SetBytes(n)
				for b.Loop() {
					var err error
					if dir == "HtoD" {
						err = s.CopyHtoD(p, host)
					} else {
						err = s.CopyDtoH(host, p)
					}
					if err == nil {
						err = s.Synchronize()
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMemoryBoundKernel: scale_copy over 256 MiB of floats, read and
// written (native ~2390 GB/s), timed by events and by the wall clock.
func BenchmarkMemoryBoundKernel(b *testing.B) {
	const n = 64 << 20 // floats: 256 MiB
	_, d := gpuDevice(b)
	m, err := d.LoadModule(readTestdata(b, "kernels/bench.ptx"))
	must(b, err)
	b.Cleanup(func() { _ = m.Unload() })
	f, err := m.Function("scale_copy")
	must(b, err)
	in, out := allocFake(b, d, 4*n), allocFake(b, d, 4*n)
	s := benchStream(b, d)
	must(b, s.Memset(in, math.Float32bits(1.5), 4, n))
	params := make([]byte, 28)
	binary.LittleEndian.PutUint64(params, uint64(in))
	binary.LittleEndian.PutUint64(params[8:], uint64(out))
	binary.LittleEndian.PutUint64(params[16:], n)
	binary.LittleEndian.PutUint32(params[24:], math.Float32bits(2))
	sms := uint32(d.Info().SMCount)
	cfg := backend.LaunchConfig{Grid: [3]uint32{sms * 8, 1, 1}, Block: [3]uint32{256, 1, 1}}
	start, err := d.NewEvent(0)
	must(b, err)
	end, err := d.NewEvent(0)
	must(b, err)
	var device time.Duration
	b.SetBytes(2 * 4 * n)
	for b.Loop() {
		must(b, s.Record(start))
		must(b, s.Launch(f, cfg, params))
		must(b, s.Record(end))
		must(b, end.Synchronize())
		el, err := end.Elapsed(start)
		must(b, err)
		device += el
	}
	b.ReportMetric(float64(2*4*n)*float64(b.N)/device.Seconds()/1e9, "device-GB/s")
}
