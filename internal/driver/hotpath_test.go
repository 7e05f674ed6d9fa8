package driver

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/sched"
	"github.com/gpuos/gpuos/internal/wire"
)

// recorder logs what the streams of a recBackend are asked to do, in order,
// and can hold the first launch until released, so that the launches behind
// it wait in the scheduler.
type recorder struct {
	mu   sync.Mutex
	log  []string
	gate chan struct{} // the first launch waits for it to close; nil: none
	held bool
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
}

// entries returns the log, less the memsets that cleared new buffers.
func (r *recorder) entries() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.log {
		if e != "M0" {
			out = append(out, e)
		}
	}
	return out
}

type recBackend struct {
	backend.Backend
	rec *recorder
}

type recDevice struct {
	backend.Device
	rec *recorder
}

type recStream struct {
	backend.Stream
	rec *recorder
}

func (b recBackend) Open(ordinal int) (backend.Device, error) {
	dev, err := b.Backend.Open(ordinal)
	if err != nil {
		return nil, err
	}
	return recDevice{dev, b.rec}, nil
}

func (d recDevice) NewStream(priority int) (backend.Stream, error) {
	st, err := d.Device.NewStream(priority)
	if err != nil {
		return nil, err
	}
	return recStream{st, d.rec}, nil
}

// Launch logs "L" and the launch's tag: scale_copy's last parameter (the
// scale, never used with n = 0) read as an integer.
func (st recStream) Launch(f backend.Function, cfg backend.LaunchConfig, params []byte) error {
	r := st.rec
	r.mu.Lock()
	gate := r.gate
	if r.held {
		gate = nil
	}
	r.held = true
	r.mu.Unlock()
	if gate != nil {
		<-gate
	}
	tag := "?"
	if len(params) >= 28 {
		tag = fmt.Sprint(binary.LittleEndian.Uint32(params[24:]))
	}
	r.add("L" + tag)
	return st.Stream.Launch(f, cfg, params)
}

func (st recStream) Memset(dst backend.DevicePtr, value uint32, elemSize int, count uint64) error {
	st.rec.add(fmt.Sprint("M", value))
	return st.Stream.Memset(dst, value, elemSize, count)
}

// script is a Transport that serves fixed request frames, each but the last
// reported as part of a burst (Pending), as rings report requests already
// waiting. Before it hands out the first frame that wants a reply, it runs
// onSync. It keeps the replies.
type script struct {
	frames  [][]byte
	next    int
	onSync  func()
	replies []v1.Message
	errs    []string
}

func (sc *script) ReadFrame() (wire.Frame, error) {
	if sc.next == len(sc.frames) {
		return wire.Frame{}, io.EOF
	}
	msg := sc.frames[sc.next]
	sc.next++
	h, err := v1.ParseHeader(msg)
	if err != nil {
		return wire.Frame{}, err
	}
	if !h.NoReply() && h.Type != v1.TypeHello && sc.onSync != nil {
		sc.onSync()
		sc.onSync = nil
	}
	return wire.Frame{Header: h, Payload: msg[v1.HeaderSize:]}, nil
}

func (sc *script) Pending() bool { return sc.next < len(sc.frames) }

// NextType names the next frame's type, as rings tell it (wire.Request.NextType).
func (sc *script) NextType() (v1.Type, bool) {
	if sc.next == len(sc.frames) {
		return 0, false
	}
	h, err := v1.ParseHeader(sc.frames[sc.next])
	return h.Type, err == nil
}

func (sc *script) WriteMessage(id uint64, flags v1.Flags, m v1.Message, fds ...int) error {
	sc.replies = append(sc.replies, m)
	if e, ok := m.(*v1.Error); ok {
		sc.errs = append(sc.errs, e.Error())
	}
	return nil
}

func (sc *script) Close() error { return nil }

// joinFixture is a session on a recording software GPU with scale_copy
// loaded and a buffer, served by scripts on the test's goroutine (the
// session's own connection stays silent), and a script being built.
type joinFixture struct {
	t      *testing.T
	rec    *recorder
	s      *Session
	kernel uint64 // scale_copy
	other  uint64 // scale_copy of a second copy of the program
	buf    uint64
	sms    uint32
	frames [][]byte
	id     uint64
}

func newJoinFixture(t *testing.T) *joinFixture { return newJoinFixtureWith(t, Options{}) }

// newJoinFixtureWith is newJoinFixture with the driver's options.
func newJoinFixtureWith(t *testing.T, opts Options) *joinFixture {
	rec := &recorder{gate: make(chan struct{})}
	f := newScriptFixture(t, newDriverOn(t, recBackend{sim.New(sim.Options{Memory: 256 << 20}), rec}, opts), "join")
	f.rec = rec
	return f
}

// newScriptFixture is newJoinFixture on td, for tenant, without a recorder.
func newScriptFixture(t *testing.T, td *testDriver, tenant string) *joinFixture {
	c0, c1, err := wire.Pair()
	if err != nil {
		t.Fatal(err)
	}
	s, err := td.d.Attach(&v1.AttachSession{SessionID: nextTestSession.Add(1), Tenant: tenant, Rights: v1.AllSessionRights, Weight: 1}, c1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c0.Close()
		<-s.Done()
	})
	image, err := os.ReadFile(filepath.Join("..", "..", "testdata", "kernels", "bench.ptx"))
	if err != nil {
		t.Fatal(err)
	}
	s.joinFixed = maxJoined // not what the first, held launch says of the sim's speed
	f := &joinFixture{t: t, s: s, sms: uint32(td.d.info.SMCount)}
	f.reset()
	f.add(0, &v1.LoadProgram{Image: image, Name: "bench.ptx"})
	f.add(0, &v1.LoadProgram{Image: image, Name: "bench2.ptx"})
	f.add(0, &v1.CreateBuffer{Size: 4096})
	sc := f.serve(nil)
	p, ok1 := sc.replies[1].(*v1.ProgramLoaded)
	p2, ok2 := sc.replies[2].(*v1.ProgramLoaded)
	b, ok3 := sc.replies[3].(*v1.BufferCreated)
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("setup replies: %v", sc.replies)
	}
	f.reset()
	f.add(0, &v1.GetKernel{Program: p.Handle, Name: "scale_copy"})
	f.add(0, &v1.GetKernel{Program: p2.Handle, Name: "scale_copy"})
	sc = f.serve(nil)
	k, ok1 := sc.replies[1].(*v1.KernelInfo)
	k2, ok2 := sc.replies[2].(*v1.KernelInfo)
	if !ok1 || !ok2 {
		t.Fatalf("get kernel: %v", sc.replies)
	}
	f.kernel, f.other, f.buf = k.Handle, k2.Handle, b.Handle
	f.reset()
	return f
}

// reset starts a new script.
func (f *joinFixture) reset() {
	f.frames = nil
	f.add(0, v1.NewHello(v1.RoleClient, "", "join"))
}

func (f *joinFixture) add(flags v1.Flags, m v1.Message) {
	f.id++
	f.frames = append(f.frames, encodeFrame(f.t, f.id, flags, m))
}

func (f *joinFixture) serve(onSync func()) *script {
	s := f.s
	sc := &script{frames: f.frames, onSync: onSync}
	srv := s.server()
	if err := srv.Serve(context.Background(), sc); err != nil {
		f.t.Fatal(err)
	}
	return sc
}

// launch adds an asynchronous scale_copy launch (n = 0: no memory touched)
// tagged tag, of blocks blocks on stream 0.
func (f *joinFixture) launch(tag, blocks uint32) { f.launchOf(f.kernel, tag, blocks) }

func (f *joinFixture) launchOf(kernel uint64, tag, blocks uint32) {
	params := make([]byte, 28)
	binary.LittleEndian.PutUint32(params[24:], tag)
	f.add(v1.FlagNoReply, &v1.Launch{Kernel: kernel, Grid: [3]uint32{blocks, 1, 1}, Block: [3]uint32{32, 1, 1}, Params: params})
}

// run serves the script, releasing the first launch once the script reaches
// its synchronizing request (every launch before it has been submitted by
// then), and returns the error replies and the number of commands the
// session submitted.
func (f *joinFixture) run() (errs []string, commands uint64) {
	before := f.s.queue.Stats().Submitted
	sc := f.serve(func() { close(f.rec.gate) })
	return sc.errs, f.s.queue.Stats().Submitted - before
}

func launchTags(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprint("L", i))
	}
	return out
}

// A burst of small launches while the scheduler is busy shares commands,
// maxJoined launches each, and the device gets every launch in order.
func TestLaunchesJoin(t *testing.T) {
	f := newJoinFixture(t)
	const n = 100
	for i := range n {
		f.launch(uint32(i), 1)
	}
	f.add(0, &v1.Synchronize{})
	errs, commands := f.run()
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if have, want := f.rec.entries(), launchTags(0, n); !slices.Equal(have, want) {
		t.Errorf("device got\n%v\nwant\n%v", have, want)
	}
	if want := uint64((n + maxJoined - 1) / maxJoined); commands != want {
		t.Errorf("%d launches went in %d commands, want %d", n, commands, want)
	}
}

// Launches join only the command just before them: any other request, a
// launch too large to join, or an invalid launch in between keeps the order
// of everything, and the invalid launch's error comes at the synchronize.
func TestLaunchJoinKeepsOrder(t *testing.T) {
	f := newJoinFixture(t)
	for i := range 3 {
		f.launch(uint32(i), 1)
	}
	f.add(v1.FlagNoReply, &v1.Memset{Dst: v1.Ref{Buffer: f.buf}, Value: 77, ElemSize: 4, Count: 1})
	f.launch(3, 1)
	f.launch(4, f.sms+1) // more blocks than SMs: a command of its own
	f.launch(5, 1)
	f.add(v1.FlagNoReply, &v1.Launch{Kernel: f.kernel, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, Params: []byte{1}})
	f.launch(6, 1)
	f.launch(7, 1)
	f.add(0, &v1.Synchronize{})
	errs, commands := f.run()
	if len(errs) != 1 || !strings.Contains(errs[0], "parameter buffer") {
		t.Errorf("errors %q, want one about the bad parameters", errs)
	}
	want := []string{"L0", "L1", "L2", "M77", "L3", "L4", "L5", "L6", "L7"}
	if have := f.rec.entries(); !slices.Equal(have, want) {
		t.Errorf("device got %v, want %v", have, want)
	}
	// [0 1 2] [memset] [3] [4] [5 6 7]
	if commands != 5 {
		t.Errorf("%d commands, want 5", commands)
	}
}

// Launches of kernels of different programs join one command too, in
// order, and each program's guard checks its fault record when the command
// completes: a clean run reports nothing.
func TestLaunchesOfProgramsJoin(t *testing.T) {
	f := newJoinFixture(t)
	const n = 3 * maxJoined
	for i := range n {
		k := f.kernel
		if i%3 == 1 {
			k = f.other
		}
		f.launchOf(k, uint32(i), 1)
	}
	f.add(0, &v1.Synchronize{})
	errs, commands := f.run()
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if have, want := f.rec.entries(), launchTags(0, n); !slices.Equal(have, want) {
		t.Errorf("device got\n%v\nwant\n%v", have, want)
	}
	if commands != 3 {
		t.Errorf("%d launches went in %d commands, want 3", n, commands)
	}
}

// A command of small launches is flagged sched.Small: the scheduler's
// estimate of it, mostly the time the host takes to issue it, earns it no
// completion event of its own.
func TestSmallLaunchesAreSmallCommands(t *testing.T) {
	f := newJoinFixture(t)
	f.launch(0, 1)
	f.add(0, &v1.Synchronize{})
	var flags sched.Flags
	joined := false
	sc := f.serve(func() {
		if lc := f.s.joinable; lc != nil { // the first launch is held unissued
			joined, flags = true, lc.Flags
		}
		close(f.rec.gate)
	})
	if len(sc.errs) != 0 {
		t.Fatalf("errors: %v", sc.errs)
	}
	if !joined {
		t.Fatal("the small launch's command is not open to joining")
	}
	if flags&sched.Small == 0 {
		t.Errorf("small launch command flags %b, want Small (%b) set", flags, sched.Small)
	}
}

func TestJoinLimit(t *testing.T) {
	for _, c := range []struct {
		fixed   int
		issueNs int64
		want    int
	}{
		{0, 0, defaultJoin},           // nothing measured yet
		{0, 100, defaultJoin},         // fast launches: the default
		{0, 3400, 4},                  // the lent H100: 4 launches take 13.6 µs
		{0, 5000, 3},                  // slower ones: fewer, to stay under joinTarget
		{0, int64(joinTarget) * 2, 1}, // very slow: none joined
		{6, 5000, 6},                  // $GPUOS_LAUNCH_JOIN decides
		{1, 100, 1},                   // joining off
	} {
		s := &Session{joinFixed: c.fixed}
		s.issueNs.Store(c.issueNs)
		if have := s.joinLimit(); have != c.want {
			t.Errorf("fixed %d, %d ns a launch: limit %d, want %d", c.fixed, c.issueNs, have, c.want)
		}
	}
}

// noteIssue keeps a moving average of the time a launch takes to issue.
func TestNoteIssue(t *testing.T) {
	s := &Session{}
	s.noteIssue(8*time.Microsecond, 2)
	if have := s.issueNs.Load(); have != 4000 {
		t.Fatalf("first measurement %d ns, want 4000", have)
	}
	s.noteIssue(12*time.Microsecond, 1)
	if have := s.issueNs.Load(); have != 5000 {
		t.Fatalf("after a 12 µs launch %d ns, want 5000 (an eighth of the way)", have)
	}
}
