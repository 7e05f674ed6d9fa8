package client_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/testenv"
)

// The hot path's benchmarks, each on both transports. On the software GPU
// they measure gpuos's own overhead (the sim's device work is fast and
// deterministic); the figures that count come from the lent GPU.

var transports = []string{client.TransportSocket, client.TransportRing}

type benchSession struct {
	s     *client.Session
	empty *client.Kernel
}

func benchSetup(b *testing.B, env *testenv.Env, o client.Options) benchSession {
	b.Helper()
	s := env.Session(b, env.Dial(b, o), client.SessionOptions{Label: "bench"})
	ptx, err := os.ReadFile("../testdata/kernels/bench.ptx")
	if err != nil {
		b.Fatal(err)
	}
	c := context.Background()
	p, err := s.LoadProgram(c, ptx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	k, err := p.Kernel(c, "empty")
	if err != nil {
		b.Fatal(err)
	}
	return benchSession{s: s, empty: k}
}

var one = client.LaunchConfig{Grid: client.Dim3{X: 1}, Block: client.Dim3{X: 1}}

// BenchmarkAsyncLaunch: empty kernels launched back to back, then one
// synchronize: launches/s as the client sees them.
func BenchmarkAsyncLaunch(b *testing.B) {
	env := testenv.Start(b, testenv.Options{})
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			bs := benchSetup(b, env, client.Options{Transport: tr})
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if err := bs.s.LaunchRaw(bs.empty, one, nil); err != nil {
					b.Fatal(err)
				}
			}
			if err := bs.s.Synchronize(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "launches/s")
		})
	}
}

// BenchmarkLaunchSync: one launch and a synchronize, the round trip.
func BenchmarkLaunchSync(b *testing.B) {
	env := testenv.Start(b, testenv.Options{})
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			bs := benchSetup(b, env, client.Options{Transport: tr})
			c := context.Background()
			b.ResetTimer()
			for range b.N {
				if err := bs.s.LaunchRaw(bs.empty, one, nil); err != nil {
					b.Fatal(err)
				}
				if err := bs.s.Synchronize(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSyncCall: a synchronous request with nothing to do on the device
// (MemInfo): the transport's round trip alone.
func BenchmarkSyncCall(b *testing.B) {
	env := testenv.Start(b, testenv.Options{})
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			s := env.Session(b, env.Dial(b, client.Options{Transport: tr}), client.SessionOptions{})
			c := context.Background()
			b.ResetTimer()
			for range b.N {
				if _, _, err := s.MemInfo(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

const bulk = 256 << 20

func bulkBench(b *testing.B, o client.Options, toDevice, pinned bool) {
	env := testenv.Start(b, testenv.Options{SimMemory: "1GiB"})
	s := env.Session(b, env.Dial(b, o), client.SessionOptions{})
	c := context.Background()
	buf, err := s.CreateBuffer(c, bulk)
	if err != nil {
		b.Fatal(err)
	}
	host := make([]byte, bulk)
	if pinned {
		hb, err := s.AllocHost(c, bulk)
		if err != nil {
			b.Fatal(err)
		}
		defer hb.Close()
		host = hb.Bytes()
	}
	for i := range host {
		host[i] = byte(i)
	}
	b.SetBytes(bulk)
	b.ResetTimer()
	for range b.N {
		if toDevice {
			err = s.CopyToDevice(buf.At(0), host, nil)
			if err == nil {
				err = s.Synchronize(c)
			}
		} else {
			err = s.CopyFromDevice(c, host, buf.At(0), nil)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHtoD256MiB: a 256 MiB copy and a synchronize: from ordinary
// (pageable) memory on each transport (the ring transport pipelines it
// through the staging area), and from a HostBuffer ("pinned").
func BenchmarkHtoD256MiB(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) { bulkBench(b, client.Options{Transport: tr}, true, false) })
	}
	b.Run("pinned", func(b *testing.B) { bulkBench(b, client.Options{Transport: client.TransportRing}, true, true) })
}

// BenchmarkDtoH256MiB: a 256 MiB copy into ordinary memory, and into a
// HostBuffer.
func BenchmarkDtoH256MiB(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) { bulkBench(b, client.Options{Transport: tr}, false, false) })
	}
	b.Run("pinned", func(b *testing.B) { bulkBench(b, client.Options{Transport: client.TransportRing}, false, true) })
}

// BenchmarkStagingChunk sweeps the staging slot size (the pipelining chunk)
// for 256 MiB copies to the device, to choose its default.
func BenchmarkStagingChunk(b *testing.B) {
	for _, chunk := range []int{256 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("%dKiB", chunk>>10), func(b *testing.B) {
			bulkBench(b, client.Options{Transport: client.TransportRing, HotPath: client.HotPath{StagingChunk: chunk, Staging: 64 << 20}}, true, false)
		})
	}
}

// BenchmarkServiceSync: a high-class service's launch and synchronize,
// taking turns between a session that waits on its completion page asking
// for its words ($GPUOS_SYNC_CLIENT=1), one that waits in the driver (0)
// and one that watches its launches (watch), so all see the same machine; quiet, then with a busy process on every CPU (the
// threads each wait needs must then win a CPU back). It reports each
// wait's median and 99th percentile in µs. On the software GPU: what the
// paths cost on this machine's CPUs, not what they cost beside a GPU.
func BenchmarkServiceSync(b *testing.B) {
	cfg, err := config.Parse([]byte("tenants:\n  - {name: svc, uids: [self], memory: 64MiB, priority: high}\n"))
	if err != nil {
		b.Fatal(err)
	}
	env := testenv.Start(b, testenv.Options{Config: cfg})
	b.Setenv(client.ClientCompletionEnv, "0")
	driver := benchSetup(b, env, client.Options{Tenant: "svc"})
	b.Setenv(client.ClientCompletionEnv, "1")
	page := benchSetup(b, env, client.Options{Tenant: "svc"})
	b.Setenv(client.ClientCompletionEnv, "watch")
	watch := benchSetup(b, env, client.Options{Tenant: "svc"})
	if !page.s.ClientCompletion() || driver.s.ClientCompletion() || !watch.s.WatchesLaunches() {
		b.Skip("no completion page here (no rings?)")
	}
	for _, load := range []string{"quiet", "busy"} {
		b.Run(load, func(b *testing.B) {
			if load == "busy" {
				for range runtime.NumCPU() {
					cmd := exec.Command("sh", "-c", "while :; do :; done")
					if err := cmd.Start(); err != nil {
						b.Skip(err)
					}
					b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
				}
			}
			c := context.Background()
			lat := [3][]time.Duration{}
			b.ResetTimer()
			for i := range b.N {
				bs := []benchSession{page, driver, watch}[i%3]
				start := time.Now()
				if err := bs.s.LaunchRaw(bs.empty, one, nil); err != nil {
					b.Fatal(err)
				}
				if err := bs.s.Synchronize(c); err != nil {
					b.Fatal(err)
				}
				lat[i%3] = append(lat[i%3], time.Since(start))
			}
			b.StopTimer()
			for j, name := range []string{"page", "driver", "watch"} {
				l := lat[j]
				if len(l) == 0 {
					continue
				}
				slices.Sort(l)
				b.ReportMetric(float64(l[len(l)/2].Nanoseconds())/1e3, name+"-p50-µs")
				b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds())/1e3, name+"-p99-µs")
			}
		})
	}
}

// BenchmarkClassSync: one launch of an empty kernel and a synchronize, by a
// tenant of the high class (polling rings, hedged serving, fences) and of
// the normal class, each on a daemon of its own; each wait's median and 99th
// percentile in µs. On the software GPU it shows what the high class's
// pollers cost when the device's work needs the same CPUs
// (bench/RESULTS.md, session 17).
func BenchmarkClassSync(b *testing.B) {
	for _, class := range []string{"high", "normal"} {
		b.Run(class, func(b *testing.B) {
			// Under the priority policy, as a service would run: under fair
			// the high class's express lane and owned completions stand aside.
			cfg, err := config.Parse([]byte("policy: priority\ntenants:\n  - {name: svc, uids: [self], memory: 64MiB, priority: " + class + "}\n"))
			if err != nil {
				b.Fatal(err)
			}
			env := testenv.Start(b, testenv.Options{Config: cfg})
			bs := benchSetup(b, env, client.Options{Tenant: "svc"})
			c := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if err := bs.s.LaunchRaw(bs.empty, one, nil); err != nil {
					b.Fatal(err)
				}
				if err := bs.s.Synchronize(c); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
}
