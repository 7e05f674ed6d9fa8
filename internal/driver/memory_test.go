package driver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	membench "github.com/gpuos/gpuos/bench/mem"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/wire"
)

// remapWatch wraps a backend so a test can see whether a granule of a
// session's window is ever unmapped while a kernel of that session runs:
// what Quiesce must prevent (on a GPU it faults and kills the context).
type remapWatch struct {
	backend.Backend
	mu         sync.Mutex
	running    map[backend.Stream]int // launches enqueued and not yet completed, by inner stream
	windows    func() map[backend.Stream][2]uint64
	violations []string
	unmaps     atomic.Int64
	fences     atomic.Int64 // fences enqueued on its streams
	hostMaps   atomic.Int64 // host memory mapped for the device (MapHost) and not yet unmapped
	offHost    bool         // its devices say their work runs off the host, as a GPU's does
}

type watchDevice struct {
	backend.Device
	w *remapWatch
}

type watchStream struct {
	backend.Stream
	w *remapWatch
}

func (w *remapWatch) Open(ordinal int) (backend.Device, error) {
	dev, err := w.Backend.Open(ordinal)
	if err != nil {
		return nil, err
	}
	return &watchDevice{Device: dev, w: w}, nil
}

func (d *watchDevice) NewStream(priority int) (backend.Stream, error) {
	st, err := d.Device.NewStream(priority)
	if err != nil {
		return nil, err
	}
	return &watchStream{Stream: st, w: d.w}, nil
}

// Fence passes the inner stream's fences through (high-class sessions
// poll them), counting them.
func (s *watchStream) Fence() (backend.Fence, error) {
	fr, ok := s.Stream.(backend.Fencer)
	if !ok {
		return nil, backend.ErrUnsupported
	}
	f, err := fr.Fence()
	if err == nil {
		s.w.fences.Add(1)
	}
	return f, err
}

// LatestFence passes the inner stream's through.
func (s *watchStream) LatestFence() (backend.Fence, bool) {
	if lf, ok := s.Stream.(backend.LatestFencer); ok {
		return lf.LatestFence()
	}
	return nil, false
}

// SetFenceWord passes the inner stream's through (completion pages).
func (s *watchStream) SetFenceWord(word *atomic.Uint32, dptr backend.DevicePtr) error {
	if ws, ok := s.Stream.(backend.FenceWordSetter); ok {
		return ws.SetFenceWord(word, dptr)
	}
	return backend.ErrUnsupported
}

// MapHost and UnmapHost pass the inner device's through (completion pages).
func (d *watchDevice) MapHost(mem []byte) (backend.DevicePtr, error) {
	if hm, ok := d.Device.(backend.HostMapper); ok {
		p, err := hm.MapHost(mem)
		if err == nil {
			d.w.hostMaps.Add(1)
		}
		return p, err
	}
	return 0, backend.ErrUnsupported
}

// ExecutesOnHost passes the inner device's through, unless the watch plays
// a GPU (offHost).
func (d *watchDevice) ExecutesOnHost() bool {
	return !d.w.offHost && backend.ExecutesOnHost(d.Device)
}

func (d *watchDevice) UnmapHost(mem []byte) error {
	if hm, ok := d.Device.(backend.HostMapper); ok {
		err := hm.UnmapHost(mem)
		if err == nil {
			d.w.hostMaps.Add(-1)
		}
		return err
	}
	return backend.ErrUnsupported
}

// RecordMarker passes the inner stream's markers through (the scheduler
// records its events so).
func (s *watchStream) RecordMarker(e backend.Event) error {
	if m, ok := s.Stream.(backend.MarkerRecorder); ok {
		return m.RecordMarker(e)
	}
	return s.Stream.Record(e)
}

func (s *watchStream) Launch(f backend.Function, cfg backend.LaunchConfig, params []byte) error {
	s.w.mu.Lock()
	s.w.running[s]++
	s.w.mu.Unlock()
	if err := s.Stream.Launch(f, cfg, params); err != nil {
		s.w.mu.Lock()
		s.w.running[s]--
		s.w.mu.Unlock()
		return err
	}
	// Stream order: the kernel, this callback, then the scheduler's
	// completion event. So once the scheduler sees the launch complete, it is
	// no longer counted.
	return s.Stream.Callback(func(error) {
		s.w.mu.Lock()
		s.w.running[s]--
		s.w.mu.Unlock()
	})
}

func (d *watchDevice) Unmap(ptr backend.DevicePtr, size uint64) error {
	w := d.w
	w.unmaps.Add(1)
	if w.windows != nil {
		ranges := w.windows()
		w.mu.Lock()
		for st, r := range ranges {
			if uint64(ptr) < r[1] && r[0] < uint64(ptr)+size && w.running[st] > 0 {
				w.violations = append(w.violations, fmt.Sprintf("unmap %#x+%#x in window [%#x, %#x) with %d kernels of its session running",
					uint64(ptr), size, r[0], r[1], w.running[st]))
			}
		}
		w.mu.Unlock()
	}
	return d.Device.Unmap(ptr, size)
}

// testDriver is a driver on a watched software GPU, with sessions over
// in-process connections.
type testDriver struct {
	t     testing.TB
	d     *Driver
	watch *remapWatch
	// afterClose runs once the driver has closed, when the test ends.
	afterClose func()
}

func newTestDriver(t testing.TB, simMem uint64, opts Options) *testDriver {
	t.Helper()
	w := &remapWatch{Backend: sim.New(sim.Options{Memory: simMem}), running: map[backend.Stream]int{}}
	td := newDriverOn(t, w, opts)
	td.watch = w
	d := td.d
	w.windows = func() map[backend.Stream][2]uint64 {
		out := map[backend.Stream][2]uint64{}
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, s := range d.sessions {
			if s.stream != nil {
				out[s.stream.st] = [2]uint64{uint64(s.window.Base()), uint64(s.window.Base()) + s.window.Size()}
			}
		}
		return out
	}
	td.afterClose = func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, v := range w.violations {
			t.Errorf("quiesce: %s", v)
		}
	}
	return td
}

// newDriverOn starts a driver on a backend, closed when the test ends.
func newDriverOn(t testing.TB, be backend.Backend, opts Options) *testDriver {
	t.Helper()
	opts.Backend = be
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	td := &testDriver{t: t, d: d}
	t.Cleanup(func() {
		d.Close()
		if td.afterClose != nil {
			td.afterClose()
		}
	})
	return td
}

// testSession is a session of a testDriver, spoken to in raw protocol.
type testSession struct {
	t   testing.TB
	rpc *wire.Client
	s   *Session
}

var nextTestSession atomic.Uint64

func (td *testDriver) session(tenant string, quota uint64) *testSession {
	td.t.Helper()
	c0, c1, err := wire.Pair()
	if err != nil {
		td.t.Fatal(err)
	}
	s, err := td.d.Attach(&v1.AttachSession{SessionID: nextTestSession.Add(1), Tenant: tenant, Rights: v1.AllSessionRights,
		MemoryQuota: quota, Weight: 1}, c1)
	if err != nil {
		td.t.Fatal(err)
	}
	rpc := wire.NewClient(c0)
	var hr v1.HelloReply
	if err := rpc.Call(context.Background(), v1.NewHello(v1.RoleClient, "", "test"), &hr); err != nil {
		td.t.Fatal(err)
	}
	ts := &testSession{t: td.t, rpc: rpc, s: s}
	td.t.Cleanup(func() {
		rpc.Close()
		<-s.Done()
	})
	return ts
}

func (ts *testSession) call(req, reply v1.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return ts.rpc.Call(ctx, req, reply)
}

func (ts *testSession) must(req, reply v1.Message) {
	ts.t.Helper()
	if err := ts.call(req, reply); err != nil {
		ts.t.Fatalf("%v: %v", req.Type(), err)
	}
}

func (ts *testSession) buffer(size uint64, flags uint32) v1.BufferCreated {
	ts.t.Helper()
	var b v1.BufferCreated
	ts.must(&v1.CreateBuffer{Size: size, Flags: flags}, &b)
	return b
}

// kernel loads memtest.ptx and looks up a kernel, returning its handle and
// parameter layout.
func (ts *testSession) kernel(name string) v1.KernelInfo {
	ts.t.Helper()
	var p v1.ProgramLoaded
	ts.must(&v1.LoadProgram{Image: membench.PTX, Name: "memtest.ptx"}, &p)
	var k v1.KernelInfo
	ts.must(&v1.GetKernel{Program: p.Handle, Name: name}, &k)
	return k
}

// pack lays out 8- and 4-byte arguments by the kernel's parameter layout.
func pack(k v1.KernelInfo, args ...uint64) []byte {
	var size uint32
	for _, p := range k.Params {
		size = max(size, p.Offset+p.Size)
	}
	buf := make([]byte, size)
	for i, p := range k.Params {
		if p.Size == 8 {
			binary.LittleEndian.PutUint64(buf[p.Offset:], args[i])
		} else {
			binary.LittleEndian.PutUint32(buf[p.Offset:], uint32(args[i]))
		}
	}
	return buf
}

// Kernels of a session run over its whole guard range while the session
// allocates and frees (remapping sink granules in that range) and another
// tenant's allocations evict its chunks (remapping them from another
// session's goroutine): no granule of the window is unmapped while a kernel
// of the session runs, the context survives, and the work completes.
func TestQuiesceKernelsWhileRemapping(t *testing.T) {
	const gran = sim.DefaultGranularity
	td := newTestDriver(t, 256<<20, Options{DeviceMemoryLimit: 24 << 20, MinResidency: -1})
	a := td.session("a", 0)
	b := td.session("b", 0)
	sweep := a.kernel("sweep")
	out := a.buffer(64<<10, 0)
	a.buffer(6<<20, 0) // kept: b's allocations must evict it
	base := uint64(a.s.window.Base())

	var wg sync.WaitGroup
	errs := make(chan error, 3)
	stop := make(chan struct{})
	wg.Add(1)
	// Remapped under the kernels: b evicted a's chunks, and granules were
	// unmapped. a launches at least 40 kernels, and more until both have
	// happened (on a loaded machine its 40 may end before b's first
	// eviction), for at most 10 s.
	remapped := func() bool { return td.d.mem.Stats().Device.Evictions > 0 && td.watch.unmaps.Load() > 0 }
	deadline := time.Now().Add(10 * time.Second)
	go func() { // a's kernels: read every 64 KiB of a's guard range (sink and chunks)
		defer wg.Done()
		defer close(stop)
		for i := 0; i < 40 || (!remapped() && time.Now().Before(deadline)); i++ {
			_, hi := a.s.window.GuardRange() // it only grows
			p := pack(sweep, base, uint64(hi)-base, 64<<10, 16, out.Addr)
			if err := a.rpc.Send(&v1.Launch{Kernel: sweep.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{64, 1, 1}, Params: p}); err != nil {
				errs <- err
				return
			}
			if i%8 == 7 {
				if err := a.call(&v1.Synchronize{}, nil); err != nil {
					errs <- fmt.Errorf("synchronize a: %w", err)
					return
				}
			}
		}
		if err := a.call(&v1.Synchronize{}, nil); err != nil {
			errs <- fmt.Errorf("synchronize a: %w", err)
		}
	}()
	wg.Add(2)
	go func() { // a's allocations come and go inside its guard range
		defer wg.Done()
		rng := rand.New(rand.NewPCG(1, 1))
		for {
			select {
			case <-stop:
				return
			default:
			}
			var bc v1.BufferCreated
			size := uint64(rng.IntN(3*gran) + 1)
			if err := a.call(&v1.CreateBuffer{Size: size, Flags: uint32(rng.IntN(2))}, &bc); err != nil {
				if v1.CodeOf(err) == v1.CodeOutOfMemory {
					continue
				}
				errs <- fmt.Errorf("a alloc: %w", err)
				return
			}
			if err := a.call(&v1.Release{Handle: bc.Handle}, nil); err != nil {
				errs <- fmt.Errorf("a free: %w", err)
				return
			}
		}
	}()
	go func() { // b's allocations evict a's chunks
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var bc v1.BufferCreated
			if err := b.call(&v1.CreateBuffer{Size: 14 << 20}, &bc); err != nil {
				errs <- fmt.Errorf("b alloc: %w", err)
				return
			}
			if err := b.call(&v1.Memset{Dst: v1.Ref{Buffer: bc.Handle}, Value: 1, ElemSize: 4, Count: 1024}, nil); err != nil {
				errs <- fmt.Errorf("b memset: %w", err)
				return
			}
			if err := b.call(&v1.Synchronize{}, nil); err != nil {
				errs <- fmt.Errorf("b synchronize: %w", err)
				return
			}
			if err := b.call(&v1.Release{Handle: bc.Handle}, nil); err != nil {
				errs <- fmt.Errorf("b free: %w", err)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := td.d.LostErr(); err != nil {
		t.Fatalf("device lost: %v", err)
	}
	st := td.d.mem.Stats()
	if st.Device.Evictions == 0 || td.watch.unmaps.Load() == 0 {
		t.Errorf("%d evictions, %d unmaps: the test did not remap under the kernels", st.Device.Evictions, td.watch.unmaps.Load())
	}
	var data v1.Data
	a.must(&v1.BufferRead{Buffer: out.Handle, Length: 256}, &data)
}

// snapshot is what must come back to baseline after a workload.
type snapshot struct {
	physical, pooled, swapped, swapHeld uint64
	chunks, windows                     int
}

func (td *testDriver) snapshot() snapshot {
	st := td.d.mem.Stats()
	return snapshot{physical: st.Device.Physical, pooled: st.Device.Pooled, swapped: st.Device.Swapped,
		swapHeld: st.Device.SwapHeld, chunks: st.Device.Chunks, windows: st.Device.Windows}
}

// 10,000 cycles of allocation, free, grant, attach, segment get, attach and
// detach through the driver — with swapping, since the device is small —
// leave device memory, chunks, windows and pinned host swap memory where
// they were (once the pools are trimmed), and the tenants' usage at zero.
func TestNoLeakAfterCycles(t *testing.T) {
	cycles := 10000
	if testing.Short() {
		cycles = 1000
	}
	td := newTestDriver(t, 256<<20, Options{DeviceMemoryLimit: 16 << 20, MinResidency: -1})
	base := td.snapshot()
	a := td.session("a", 0)
	b := td.session("b", 0)
	c := td.session("a", 0) // a second session of a: same tenant, own window
	rng := rand.New(rand.NewPCG(3, 4))
	big := b.buffer(8<<20, 0) // keeps the device under pressure: a's memory gets evicted
	for i := 0; i < cycles; i++ {
		switch i % 4 {
		case 0: // plain buffers of every size
			x := a.buffer(uint64(rng.IntN(5<<20)+1), 0)
			a.must(&v1.Memset{Dst: v1.Ref{Buffer: x.Handle}, Value: uint32(i), ElemSize: 1, Count: min(x.Size, 4096)}, nil)
			a.must(&v1.Release{Handle: x.Handle}, nil)
		case 1: // a grant attached by another tenant, revoked
			x := a.buffer(uint64(rng.IntN(3<<20)+1), uint32(1))
			var g v1.Granted
			a.must(&v1.Grant{Buffer: x.Handle, Rights: v1.RightBufferRead | v1.RightBufferWrite}, &g)
			var m v1.BufferCreated
			b.must(&v1.Attach{Token: g.Token}, &m)
			b.must(&v1.Memset{Dst: v1.Ref{Buffer: m.Handle}, Value: 7, ElemSize: 4, Count: 16}, nil)
			b.must(&v1.Synchronize{}, nil)
			if i%8 == 1 {
				a.must(&v1.Revoke{Handle: g.Handle}, nil)
			}
			b.must(&v1.Release{Handle: m.Handle}, nil)
			a.must(&v1.Release{Handle: g.Handle}, nil)
			a.must(&v1.Release{Handle: x.Handle}, nil)
		case 2: // a segment made, attached by the owner's other session and another tenant, removed
			name := fmt.Sprint("seg", i)
			var sg v1.ShmSegment
			a.must(&v1.ShmGet{Name: name, Size: uint64(rng.IntN(2<<20) + 1), Flags: v1.ShmCreate | v1.ShmExclusive}, &sg)
			var st v1.ShmStat
			a.must(&v1.ShmCtl{Segment: sg.Handle, Op: v1.ShmAllow, Tenant: "b", Rights: v1.RightBufferRead}, &st)
			var sc, sb v1.ShmSegment
			c.must(&v1.ShmGet{Name: name}, &sc)
			b.must(&v1.ShmGet{Owner: "a", Name: name}, &sb)
			var mc, mb v1.BufferCreated
			c.must(&v1.ShmAttach{Segment: sc.Handle}, &mc)
			b.must(&v1.ShmAttach{Segment: sb.Handle, ReadOnly: true}, &mb)
			a.must(&v1.ShmCtl{Segment: sg.Handle, Op: v1.ShmRemove}, &st)
			b.must(&v1.Release{Handle: mb.Handle}, nil)
			b.must(&v1.Release{Handle: sb.Handle}, nil)
			c.must(&v1.Release{Handle: sc.Handle}, nil) // its mapping goes with it
			a.must(&v1.Release{Handle: sg.Handle}, nil)
		case 3: // small buffers in slabs, freed out of order
			var hs []uint64
			for k := 0; k < 4; k++ {
				hs = append(hs, c.buffer(uint64(rng.IntN(4096)+1), 0).Handle)
			}
			for _, k := range rng.Perm(len(hs)) {
				c.must(&v1.Release{Handle: hs[k]}, nil)
			}
		}
	}
	b.must(&v1.Release{Handle: big.Handle}, nil)
	st := td.d.mem.Stats()
	if st.Device.Evictions == 0 {
		t.Error("no evictions: the cycles did not swap")
	}
	for _, ts := range st.Tenants {
		if ts.Used != 0 || ts.Swapped != 0 {
			t.Errorf("tenant %s: %d bytes charged, %d swapped after the cycles; want 0", ts.Name, ts.Used, ts.Swapped)
		}
	}
	td.d.shm.mu.Lock()
	nseg, nwin := len(td.d.shm.live), len(td.d.shm.windows)
	td.d.shm.mu.Unlock()
	if nseg != 0 || nwin != 0 {
		t.Errorf("%d segments and %d segment windows left", nseg, nwin)
	}
	if err := td.d.mem.Trim(); err != nil {
		t.Fatal(err)
	}
	got := td.snapshot()
	// Each open session keeps one window, and one empty slab for a and c.
	want := base
	want.windows += 3
	if got.swapped != 0 || got.swapHeld != 0 || got.pooled != 0 || got.windows != want.windows ||
		got.physical-base.physical > 2*sim.DefaultGranularity || got.chunks-base.chunks > 2 {
		t.Errorf("after %d cycles and Trim: %+v; baseline %+v (plus three windows and at most two kept slabs)", cycles, got, base)
	}
}

// Over quota is a typed error on every allocation path the daemon has:
// buffers of every size, shareable ones, segments, and a guarded module's
// globals (relocated into the window and charged like a buffer).
func TestQuotaEveryPath(t *testing.T) {
	td := newTestDriver(t, 256<<20, Options{})
	const quota = 8 << 20
	a := td.session("a", quota)
	hold := a.buffer(quota-4096, 0) // leaves less than a granule
	tests := []struct {
		name string
		req  v1.Message
	}{
		{"small buffer", &v1.CreateBuffer{Size: 8192}},
		{"granule buffer", &v1.CreateBuffer{Size: sim.DefaultGranularity}},
		{"large buffer", &v1.CreateBuffer{Size: 64 << 20}},
		{"shareable buffer", &v1.CreateBuffer{Size: 1, Flags: 1}},
		{"pitch-like buffer", &v1.CreateBuffer{Size: 512 * 1000}},
		{"segment", &v1.ShmGet{Name: "s", Size: 1 << 20, Flags: v1.ShmCreate}},
		{"module globals", &v1.LoadProgram{Image: []byte(globalsPTX), Name: "globals.ptx"}},
	}
	for _, tt := range tests {
		err := a.call(tt.req, nil)
		if !errors.Is(err, v1.ErrQuotaExceeded) {
			t.Errorf("%s: %v, want quota exceeded", tt.name, err)
		}
	}
	var mi v1.MemInfoReply
	a.must(&v1.MemInfo{}, &mi)
	if mi.Total != quota || mi.Free > 4096 {
		t.Errorf("MemInfo = free %d total %d; want the tenant's view: total %d, free at most 4096", mi.Free, mi.Total, quota)
	}
	a.must(&v1.Release{Handle: hold.Handle}, nil)
	for _, tt := range tests[:2] {
		if err := a.call(tt.req, nil); err != nil {
			t.Errorf("%s after freeing: %v", tt.name, err)
		}
	}
}

// globalsPTX is a module with a 4 MiB global: the guard relocates it into
// the window, charging the tenant.
const globalsPTX = `.version 8.0
.target sm_80
.address_size 64

.visible .global .align 4 .b8 table[4194304];

.visible .entry touch(
	.param .u64 touch_out
)
{
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<4>;

	mov.u64 	%rd1, table;
	ld.global.u32 	%r1, [%rd1];
	ld.param.u64 	%rd2, [touch_out];
	cvta.to.global.u64 	%rd3, %rd2;
	st.global.u32 	[%rd3], %r1;
	ret;
}
`

func TestDefaultSwapReserve(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name           string
		limit, hostRAM uint64
		want           uint64
	}{
		{"16GiB limit, 128GiB host", 16 * gib, 128 * gib, 24 * gib},
		{"within a quarter of the host", 80 * gib, 128 * gib, 32 * gib},
		{"host memory unknown", 16 * gib, 0, 24 * gib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if have := defaultSwapReserve(tc.limit, tc.hostRAM); have != tc.want {
				t.Errorf("have %d, want %d", have, tc.want)
			}
		})
	}
}

// With --device-memory below the device's memory, the driver pins the
// default swap reserve from the start and audits when it is pinned.
func TestSwapReserveAudited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	al, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	const limit = 16 << 20
	newDriverOn(t, sim.New(sim.Options{Memory: 256 << 20}), Options{DeviceMemoryLimit: limit, Audit: al})
	want := defaultSwapReserve(limit, hostMemory())
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if err := al.Flush(); err != nil {
			t.Fatal(err)
		}
		if ev, ok := findAudit(t, path, KindSwapReserve); ok {
			// Pinned in whole pieces: at least the reserve.
			if n, _ := ev.Detail["bytes"].(float64); uint64(n) < want {
				t.Errorf("reserve of %v bytes audited, want at least %d", ev.Detail["bytes"], want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no mem.swap-reserve record")
		}
	}
}

// findAudit returns the first record of kind k in the audit log at path.
func findAudit(t *testing.T, path string, k audit.Kind) (audit.Event, bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := audit.NewReader(f)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return audit.Event{}, false
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == k {
			return ev, true
		}
	}
}
