package driver

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/auto"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/wire"
)

// The driver's hot path, measured in one process on the software GPU: what a
// launch costs the driver's CPU (decode, admission, validation, submission,
// dispatch) apart from the device work, and the client-to-driver round trips
// over rings. The sim's own launch costs CPU time too (it queues the kernel
// for a goroutine that interprets it); the "null" variants replace the
// stream's Launch with nothing, which leaves the driver's share alone: on a
// GPU, cuLaunchKernel's few microseconds come on top of it.

// nullLaunch is a backend whose streams accept launches and do nothing with
// them; everything else is the sim's.
type nullLaunch struct{ backend.Backend }

type nullDevice struct{ backend.Device }

type nullStream struct{ backend.Stream }

func (n nullLaunch) Open(ordinal int) (backend.Device, error) {
	dev, err := n.Backend.Open(ordinal)
	if err != nil {
		return nil, err
	}
	return nullDevice{dev}, nil
}

func (d nullDevice) NewStream(priority int) (backend.Stream, error) {
	st, err := d.Device.NewStream(priority)
	if err != nil {
		return nil, err
	}
	return nullStream{st}, nil
}

func (st nullStream) Launch(f backend.Function, cfg backend.LaunchConfig, params []byte) error {
	if launchCost > 0 {
		spin(launchCost)
	}
	return nil
}

// launchCost, if set, makes a null launch keep its thread busy that long, as
// cuLaunchKernel does (3.9 µs on the lent H100).
var launchCost = func() time.Duration {
	d, _ := time.ParseDuration(os.Getenv("GPUOS_BENCH_LAUNCH_COST"))
	return d
}()

func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// cpuTime is the process's CPU time (user and system): on a loaded machine
// it says more about a hot path's cost than wall time does, and it counts the
// work of every goroutine (serving, dispatching, tracking completions).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per operation since start; for the null
// backend, less the time its launches were told to spin (launchCost): the
// driver's own share.
func reportCPU(b *testing.B, start time.Duration, mode string) {
	spun := time.Duration(0)
	if mode == "null" {
		spun = time.Duration(b.N) * launchCost
	}
	b.ReportMetric(float64((cpuTime()-start-spun).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// benchEnv names another backend to run the benchmarks on besides the sim
// ones, e.g. cuda on the lent GPU (GPUOS_BENCH_BACKEND=cuda ./driver.test
// -test.bench 'ServeLaunch|DirectLaunch'): the driver's launch path with
// real cuLaunchKernel calls, without the client and the rings, next to the
// same launches made directly in the same process.
const benchEnv = "GPUOS_BENCH_BACKEND"

// benchModes are the backends the benchmarks run on: the software GPU, the
// null variant of it, and $GPUOS_BENCH_BACKEND if set.
var benchModes = func() []string {
	m := []string{"sim", "null"}
	if b := os.Getenv(benchEnv); b != "" && b != "sim" && b != "null" {
		m = append(m, b)
	}
	return m
}()

// benchBackend returns the backend of a mode, skipping the benchmark if it
// cannot be had.
func benchBackend(tb testing.TB, mode string) backend.Backend {
	switch mode {
	case "sim", "null":
		be := backend.Backend(sim.New(sim.Options{Memory: 256 << 20}))
		if mode == "null" {
			be = nullLaunch{be}
		}
		return be
	}
	c, err := auto.Open(mode, auto.Options{})
	if err != nil {
		tb.Skipf("backend %s: %v", mode, err)
	}
	return c.Backend
}

// emptyKernel loads bench.ptx's empty kernel (guarded, as a guarded tenant's).
func (ts *testSession) emptyKernel() v1.KernelInfo {
	ts.t.Helper()
	return ts.loadKernel("bench.ptx", "empty")
}

// loadKernel loads testdata/kernels/file and looks up a kernel of it.
func (ts *testSession) loadKernel(file, name string) v1.KernelInfo {
	ts.t.Helper()
	image, err := os.ReadFile(filepath.Join("..", "..", "testdata", "kernels", file))
	if err != nil {
		ts.t.Fatal(err)
	}
	var p v1.ProgramLoaded
	ts.must(&v1.LoadProgram{Image: image, Name: file}, &p)
	var k v1.KernelInfo
	ts.must(&v1.GetKernel{Program: p.Handle, Name: name}, &k)
	return k
}

// vecaddBuffer makes a buffer for vecadd of n elements: a, then b, as a and
// b give them, then n elements for c.
func (ts *testSession) vecaddBuffer(n int, a, b func(i int) float32) v1.BufferCreated {
	ts.t.Helper()
	av, bv := make([]byte, 4*n), make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(av[4*i:], math.Float32bits(a(i)))
		binary.LittleEndian.PutUint32(bv[4*i:], math.Float32bits(b(i)))
	}
	buf := ts.buffer(uint64(12*n), 0)
	ts.must(&v1.BufferWrite{Buffer: buf.Handle, Data: av}, nil)
	ts.must(&v1.BufferWrite{Buffer: buf.Handle, Offset: uint64(4 * n), Data: bv}, nil)
	return buf
}

// vecaddLaunch is the request that launches vecadd k over buf's n elements (n a multiple of
// 256) on stream (0: the session's default).
func vecaddLaunch(k v1.KernelInfo, buf v1.BufferCreated, n int, stream uint64) *v1.Launch {
	return &v1.Launch{Kernel: k.Handle, Grid: [3]uint32{uint32(n / 256), 1, 1}, Block: [3]uint32{256, 1, 1}, Stream: stream,
		Params: pack(k, buf.Addr, buf.Addr+uint64(4*n), buf.Addr+uint64(8*n), uint64(n))}
}

// expectVecadd reads vecadd's result c (after a and b in buf, n floats
// each) and fails the test at the first c[i] that is not want(i), naming
// what was checked.
func (ts *testSession) expectVecadd(buf v1.BufferCreated, n int, want func(i int) float32, what string) {
	ts.t.Helper()
	var out v1.Data
	ts.must(&v1.BufferRead{Buffer: buf.Handle, Offset: uint64(8 * n), Length: uint64(4 * n)}, &out)
	for i := range n {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(out.Data[4*i:])); got != want(i) {
			ts.t.Fatalf("%s: c[%d] = %v, want %v", what, i, got, want(i))
		}
	}
}

// useRings moves the session's requests onto shared-memory rings, as the
// client library does.
func (ts *testSession) useRings() v1.RingOpened {
	ts.t.Helper()
	var ro v1.RingOpened
	fds, err := ts.rpc.CallFDs(context.Background(), &v1.OpenRing{}, &ro, nil)
	if err != nil || len(fds) != 1 {
		ts.t.Fatalf("open rings: %v (%d descriptors)", err, len(fds))
	}
	sq, cq := int(ro.SubmitBytes), int(ro.CompleteBytes)
	shm, err := ring.Open(fds[0], wire.RingBytes(sq, cq), true)
	if err != nil {
		ts.t.Fatal(err)
	}
	if err := ts.rpc.UseRings(shm.Bytes(), sq, cq, ring.Options{}, func() { shm.Close() }); err != nil {
		ts.t.Fatal(err)
	}
	return ro
}

// BenchmarkRingLaunch: asynchronous empty launches from a client over rings,
// then one synchronize (what `gpuos bench` measures first).
func BenchmarkRingLaunch(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m, func(b *testing.B) {
			ts := newDriverOn(b, benchBackend(b, m), Options{}).session("bench", 0)
			k := ts.emptyKernel()
			ts.useRings()
			launch := &v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu := time.Now(), cpuTime()
			for range b.N {
				if err := ts.rpc.Send(launch); err != nil {
					b.Fatal(err)
				}
			}
			ts.must(&v1.Synchronize{}, nil)
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "launches/s")
			reportCPU(b, cpu, m)
		})
	}
}

// BenchmarkRingLaunchSync: one launch and a synchronize over rings.
func BenchmarkRingLaunchSync(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m, func(b *testing.B) {
			ts := newDriverOn(b, benchBackend(b, m), Options{}).session("bench", 0)
			k := ts.emptyKernel()
			ts.useRings()
			launch := &v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := ts.rpc.Send(launch); err != nil {
					b.Fatal(err)
				}
				ts.must(&v1.Synchronize{}, nil)
			}
		})
	}
}

// BenchmarkRingSmallWrite: a 64-byte synchronous write to a buffer over rings.
func BenchmarkRingSmallWrite(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m, func(b *testing.B) {
			ts := newDriverOn(b, benchBackend(b, m), Options{}).session("bench", 0)
			buf := ts.buffer(4096, 0)
			ts.useRings()
			w := &v1.BufferWrite{Buffer: buf.Handle, Data: make([]byte, 64)}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ts.must(w, nil)
			}
		})
	}
}

// frameFeed is a Transport that serves the same request frame n times, then a
// Synchronize, then ends: the driver's side of a launch loop without a client.
type frameFeed struct {
	hello, req, sync []byte
	n                int
	burst            bool // report Pending while requests remain, as rings do
	replies          atomic.Int64
	errs             atomic.Int64
}

func encodeFrame(tb testing.TB, id uint64, flags v1.Flags, m v1.Message) []byte {
	var e v1.Encoder
	if err := e.PutFrame(id, flags, m); err != nil {
		tb.Fatal(err)
	}
	return append([]byte(nil), e.Bytes()...)
}

func (f *frameFeed) ReadFrame() (wire.Frame, error) {
	var msg []byte
	switch {
	case f.hello != nil:
		msg, f.hello = f.hello, nil
	case f.n > 0:
		f.n--
		msg = f.req
	case f.sync != nil:
		msg, f.sync = f.sync, nil
	default:
		return wire.Frame{}, io.EOF
	}
	h, err := v1.ParseHeader(msg)
	if err != nil {
		return wire.Frame{}, err
	}
	return wire.Frame{Header: h, Payload: msg[v1.HeaderSize:]}, nil
}

// Pending is the rings' burst hint: another request waits behind this one.
func (f *frameFeed) Pending() bool { return f.burst && f.n > 0 }

func (f *frameFeed) WriteMessage(id uint64, flags v1.Flags, m v1.Message, fds ...int) error {
	f.replies.Add(1)
	if flags&v1.FlagError != 0 {
		f.errs.Add(1)
	}
	return nil
}

func (f *frameFeed) Close() error { return nil }

// serveModes: each backend, and with the launches arriving as a burst (the
// transport says another request waits, as rings do: submissions are
// Batched, issued by the dispatcher beside the serving goroutine) or one by
// one (each issued by the serving goroutine itself).
var serveModes = func() (modes []struct {
	name, backend string
	burst         bool
}) {
	for _, burst := range []bool{false, true} {
		for _, m := range benchModes {
			name := m
			if burst {
				name += "/burst"
			}
			modes = append(modes, struct {
				name, backend string
				burst         bool
			}{name, m, burst})
		}
	}
	return modes
}()

// BenchmarkServeLaunch: the driver's CPU per asynchronous launch, from a
// decoded ring frame to the backend call, with no client: read, admit,
// decode, validate, submit, dispatch, issue.
func BenchmarkServeLaunch(b *testing.B) {
	for _, m := range serveModes {
		b.Run(m.name, func(b *testing.B) {
			ts := newDriverOn(b, benchBackend(b, m.backend), Options{}).session("bench", 0)
			k := ts.emptyKernel()
			s := ts.s
			feed := &frameFeed{
				hello: encodeFrame(b, 1, 0, v1.NewHello(v1.RoleClient, "", "bench")),
				req:   encodeFrame(b, 2, v1.FlagNoReply, &v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}),
				sync:  encodeFrame(b, 3, 0, &v1.Synchronize{}),
				n:     b.N,
				burst: m.burst,
			}
			srv := s.server()
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			if err := srv.Serve(context.Background(), feed); err != nil {
				b.Fatal(err)
			}
			reportCPU(b, cpu, m.backend)
			b.StopTimer()
			if feed.replies.Load() != 2 || feed.errs.Load() != 0 {
				b.Fatalf("%d replies, %d errors; want 2 and 0", feed.replies.Load(), feed.errs.Load())
			}
		})
	}
}

// BenchmarkDirectLaunch is the baseline of BenchmarkServeLaunch: the empty
// kernel (unguarded) launched on the backend directly, in a loop on one
// goroutine, then one synchronize, as gpuos bench's native side does.
func BenchmarkDirectLaunch(b *testing.B) {
	image, err := os.ReadFile(filepath.Join("..", "..", "testdata", "kernels", "bench.ptx"))
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range benchModes {
		b.Run(m, func(b *testing.B) {
			dev, err := benchBackend(b, m).Open(0)
			if err != nil {
				b.Skipf("open device: %v", err)
			}
			defer dev.Close()
			mod, err := dev.LoadModule(image)
			if err != nil {
				b.Fatal(err)
			}
			defer mod.Unload()
			f, err := mod.Function("empty")
			if err != nil {
				b.Fatal(err)
			}
			st, err := dev.NewStream(0)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Destroy()
			cfg := backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu := time.Now(), cpuTime()
			for range b.N {
				if err := st.Launch(f, cfg, nil); err != nil {
					b.Fatal(err)
				}
			}
			if err := st.Synchronize(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "launches/s")
			reportCPU(b, cpu, m)
		})
	}
}
