package backendtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/ring"
	"syscall"
)

// Work on one stream runs in order: each step sees the one before.
func (s *suite) testStreamOrder(t *testing.T) {
	d := s.dev
	const n = 4 << 20
	a, b, c := alloc(t, d, n), alloc(t, d, n), alloc(t, d, n)
	st := newStream(t, d)
	for round := uint32(1); round <= 3; round++ {
		must(t, st.Memset(a, round, 4, n/4))
		must(t, st.CopyDtoD(b, a, n))
		must(t, st.Memset(a, round+100, 4, n/4))
		must(t, st.CopyDtoD(c, a, n))
		must(t, st.Memset(a, 0, 4, n/4))
		gotB, gotC := make([]byte, n), make([]byte, n)
		must(t, st.CopyDtoH(gotB, b))
		must(t, st.CopyDtoH(gotC, c))
		if !bytes.Equal(gotB, bytes.Repeat([]byte{byte(round), 0, 0, 0}, n/4)) ||
			!bytes.Equal(gotC, bytes.Repeat([]byte{byte(round + 100), 0, 0, 0}, n/4)) {
			t.Fatalf("round %d: b[0]=%d c[0]=%d: the stream did not keep its order", round, gotB[0], gotC[0])
		}
	}
	if done, err := st.Query(); !done || err != nil {
		t.Fatalf("Query after a synchronous copy = %v, %v; want true, nil", done, err)
	}
}

// A stream that waits for an event sees everything recorded before it, even
// when the recording stream is still busy and is never synchronized.
func (s *suite) testCrossStreamWait(t *testing.T) {
	d := s.dev
	const n = 32 << 20
	big1, big2 := alloc(t, d, n), alloc(t, d, n)
	x, y := alloc(t, d, 4096), alloc(t, d, 4096)
	s1, s2 := newStream(t, d), newStream(t, d)
	ev := newEvent(t, d, backend.EventDisableTiming)
	out := allocHost(t, d, 4096)
	for round := uint32(1); round <= 4; round++ {
		for i := 0; i < 8; i++ { // keep s1 busy for a while
			must(t, s1.CopyDtoD(big2, big1, n))
			must(t, s1.CopyDtoD(big1, big2, n))
		}
		must(t, s1.Memset(x, 0xabc00+round, 4, 1024))
		must(t, s1.Record(ev))
		must(t, s2.WaitEvent(ev))
		must(t, s2.CopyDtoD(y, x, 4096))
		must(t, s2.CopyDtoH(out.Bytes(), y))
		must(t, s2.Synchronize())
		want := bytes.Repeat([]byte{byte(round), 0xbc, 0x0a, 0}, 1024)
		if !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("round %d: s2 read %x before s1's memset: WaitEvent did not wait", round, out.Bytes()[:4])
		}
	}
	must(t, s1.Synchronize())
}

func (s *suite) testEvents(t *testing.T) {
	d := s.dev
	const n = 64 << 20
	p := alloc(t, d, n)
	st := newStream(t, d)
	start, end := newEvent(t, d, 0), newEvent(t, d, backend.EventBlockingSync)
	if done, err := start.Query(); !done || err != nil {
		t.Fatalf("Query of an event never recorded = %v, %v; want true, nil", done, err)
	}
	if _, err := end.Elapsed(start); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("Elapsed of events never recorded = %v, want ErrInvalidArgument", err)
	}
	must(t, st.Record(start))
	for i := 0; i < 4; i++ {
		must(t, st.Memset(p, uint32(i), 4, n/4))
	}
	must(t, st.Record(end))
	must(t, end.Synchronize())
	if done, err := end.Query(); !done || err != nil {
		t.Fatalf("Query after Synchronize = %v, %v", done, err)
	}
	el, err := end.Elapsed(start)
	must(t, err)
	if el <= 0 {
		t.Fatalf("Elapsed over 256 MiB of memsets = %v, want > 0", el)
	}
	s.opts.Logf("4 memsets of 64 MiB: %v of device time (%.0f GB/s)", el, 4*n/el.Seconds()/1e9)

	untimed := newEvent(t, d, backend.EventDisableTiming)
	must(t, st.Record(untimed))
	must(t, untimed.Synchronize())
	if _, err := untimed.Elapsed(start); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Errorf("Elapsed with EventDisableTiming = %v, want ErrInvalidArgument", err)
	}
	if _, err := d.NewEvent(1 << 7); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Errorf("NewEvent with unknown flags = %v, want ErrInvalidArgument", err)
	}
	e, err := d.NewEvent(0)
	must(t, err)
	must(t, e.Destroy())
	for name, err := range map[string]error{
		"Destroy": e.Destroy(),
		"Record":  st.Record(e),
		"Query":   func() error { _, err := e.Query(); return err }(),
	} {
		if v1.CodeOf(err) != v1.CodeInvalidHandle {
			t.Errorf("%s of a destroyed event = %v, want an invalid-handle error", name, err)
		}
	}
}

// Callbacks run in order, after the work before them, with nil.
func (s *suite) testCallbacks(t *testing.T) {
	d := s.dev
	p := alloc(t, d, 1<<20)
	st := newStream(t, d)
	pin := allocHost(t, d, 4096)
	var (
		mu    sync.Mutex
		order []string
	)
	note := func(name string, check func() bool) func(error) {
		return func(err error) {
			ok := check == nil || check()
			mu.Lock()
			order = append(order, fmt.Sprintf("%s:%v:%v", name, err, ok))
			mu.Unlock()
		}
	}
	for i := byte(1); i <= 3; i++ {
		must(t, st.Memset(p, uint32(i)*0x11, 1, 4096))
		must(t, st.CopyDtoH(pin.Bytes(), p))
		must(t, st.Callback(note(fmt.Sprint(i), func() bool {
			return bytes.Equal(pin.Bytes(), bytes.Repeat([]byte{i * 0x11}, 4096))
		})))
	}
	must(t, st.Synchronize())
	mu.Lock()
	got := fmt.Sprint(order)
	mu.Unlock()
	if want := "[1:<nil>:true 2:<nil>:true 3:<nil>:true]"; got != want {
		t.Fatalf("callbacks %s, want %s (name:error:saw the copy before it)", got, want)
	}
	if err := st.Callback(nil); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("Callback(nil) = %v", err)
	}
}

// Destroy lets pending work finish; a destroyed stream refuses work.
func (s *suite) testStreamLifecycle(t *testing.T) {
	d := s.dev
	least, greatest := d.StreamPriorityRange()
	for _, prio := range []int{least, greatest, least + 10, greatest - 10} {
		st, err := d.NewStream(prio)
		must(t, err)
		must(t, st.Destroy())
	}
	p := alloc(t, d, 64<<20)
	pin := allocHost(t, d, 8)
	st, err := d.NewStream(0)
	must(t, err)
	must(t, st.CopyHtoD(p, []byte("12345678")))
	for i := 0; i < 16; i++ {
		must(t, st.Memset(p+4096, uint32(i), 4, (64<<20-4096)/4))
	}
	must(t, st.CopyDtoH(pin.Bytes(), p))
	must(t, st.Destroy())
	if string(pin.Bytes()) != "12345678" {
		t.Fatalf("pending copy did not complete before Destroy returned: %q", pin.Bytes())
	}
	for name, err := range map[string]error{
		"Destroy":     st.Destroy(),
		"CopyHtoD":    st.CopyHtoD(p, []byte{1}),
		"Synchronize": st.Synchronize(),
		"Query":       func() error { _, err := st.Query(); return err }(),
	} {
		if v1.CodeOf(err) != v1.CodeInvalidHandle {
			t.Errorf("%s on a destroyed stream = %v, want an invalid-handle error", name, err)
		}
	}
}

// Many goroutines, each with its own stream and memory, copying while
// others map and unmap: run with -race.
func (s *suite) testConcurrent(t *testing.T) {
	d := s.dev
	G := d.Granularity()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.worker(w, G)
		}()
	}
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 16; i++ {
				p, err := d.Reserve(G, 0)
				if err != nil {
					errs <- err
					return
				}
				c, err := d.CreateChunk(G)
				if err == nil {
					err = errors.Join(d.Map(p, G, c, 0), d.SetAccess(p, G), d.Unmap(p, G), c.Release())
				}
				if err = errors.Join(err, d.Release(p, G)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func (s *suite) worker(w int, G uint64) (err error) {
	d := s.dev
	p, err := d.Reserve(G, 0)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, d.Release(p, G)) }()
	c, err := d.CreateChunk(G)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, c.Release()) }()
	if err := d.Map(p, G, c, 0); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, d.Unmap(p, G)) }()
	if err := d.SetAccess(p, G); err != nil {
		return err
	}
	st, err := d.NewStream(0)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Destroy()) }()
	r := rand.New(rand.NewPCG(uint64(w), 7))
	for i := 0; i < 20; i++ {
		data := randBytes(r, 1+r.IntN(1<<16))
		off := backend.DevicePtr(r.IntN(int(G) - len(data) + 1))
		if err := st.CopyHtoD(p+off, data); err != nil {
			return err
		}
		got := make([]byte, len(data))
		if err := st.CopyDtoH(got, p+off); err != nil {
			return err
		}
		if !bytes.Equal(got, data) {
			return fmt.Errorf("worker %d, round %d: round trip differs", w, i)
		}
	}
	return st.Synchronize()
}

// A fence (backend.Fencer, optional) is reached once the work before it has
// completed and its results are visible, in the order fences were enqueued;
// a destroyed stream's fence reports false.
func (s *suite) testFences(t *testing.T) {
	d := s.dev
	st := newStream(t, d)
	fr, ok := st.(backend.Fencer)
	if !ok {
		t.Skip("the backend's streams have no fences")
	}
	const n = 16 << 20
	a, b := alloc(t, d, n), alloc(t, d, n)
	out := allocHost(t, d, 4096)
	for round := uint32(1); round <= 3; round++ {
		must(t, st.Memset(a, 0x5e0000+round, 4, n/4))
		must(t, st.CopyDtoD(b, a, n))
		first, err := fr.Fence()
		must(t, err)
		must(t, st.CopyDtoH(out.Bytes(), b)) // pinned: asynchronous, so only the fence says it landed
		second, err := fr.Fence()
		must(t, err)
		deadline := time.Now().Add(10 * time.Second)
		for !second.Reached() {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: fence not reached in 10 s", round)
			}
			runtime.Gosched()
		}
		if !first.Reached() {
			t.Fatalf("round %d: the second fence was reached before the first", round)
		}
		if got := binary.LittleEndian.Uint32(out.Bytes()); got != 0x5e0000+round {
			t.Fatalf("round %d: after the fence the copy's result is %#x, want %#x", round, got, 0x5e0000+round)
		}
		// Query may still say not done: on an H100 the fence's own write is
		// seen before the driver counts it complete (run 50).
		if _, err := st.Query(); err != nil {
			t.Fatalf("round %d: Query after the fence: %v", round, err)
		}
	}
	last, err := fr.Fence()
	must(t, err)
	must(t, st.Synchronize())
	if !last.Reached() {
		t.Fatal("a fence is not reached after Synchronize")
	}
	other := newStream(t, d)
	must(t, other.Destroy())
	if f, ok := other.(backend.Fencer); ok {
		if fe, err := f.Fence(); err == nil || fe != nil {
			t.Fatalf("Fence on a destroyed stream = %v, %v; want an error", fe, err)
		}
	}
}

// A stream's latest fence (backend.LatestFencer, optional) is offered while
// nothing was enqueued after it, whatever enqueued it, and is reached once
// the stream's work is done.
func (s *suite) testLatestFence(t *testing.T) {
	d := s.dev
	st := newStream(t, d)
	lf, ok := st.(backend.LatestFencer)
	fr, ok2 := st.(backend.Fencer)
	if !ok || !ok2 {
		t.Skip("the backend's streams offer no latest fence")
	}
	if f, ok := lf.LatestFence(); ok {
		t.Fatalf("LatestFence before any fence = %v, true; want false", f)
	}
	a, b := alloc(t, d, 1<<20), alloc(t, d, 1<<20)
	ev := newEvent(t, d, backend.EventDisableTiming)
	other := newStream(t, d)
	enqueues := []struct {
		name string
		do   func() error
	}{
		{"Memset", func() error { return st.Memset(a, 7, 4, 1<<18) }},
		{"CopyDtoD", func() error { return st.CopyDtoD(b, a, 1<<20) }},
		{"Record", func() error { return st.Record(ev) }},
		{"WaitEvent", func() error { return st.WaitEvent(ev) }},
		{"Callback", func() error { return st.Callback(func(error) {}) }},
	}
	// A marker (backend.MarkerRecorder, optional) is not work: the fence
	// before it stays the latest, and the stream's synchronize covers it.
	if mr, ok := st.(backend.MarkerRecorder); ok {
		must(t, st.Memset(a, 3, 4, 1<<18))
		f, err := fr.Fence()
		must(t, err)
		timed := newEvent(t, d, 0)
		must(t, mr.RecordMarker(timed))
		must(t, mr.RecordMarker(ev))
		if g, ok := lf.LatestFence(); !ok || g != f {
			t.Fatalf("after two markers: LatestFence = %v, %v; want the fence before them, true", g, ok)
		}
		must(t, st.Synchronize())
		for _, e := range []backend.Event{timed, ev} {
			if done, err := e.Query(); !done || err != nil {
				t.Fatalf("a marker's event after Synchronize: Query = %v, %v; want true, nil", done, err)
			}
		}
		if !f.Reached() {
			t.Fatal("the fence before the markers is not reached after Synchronize")
		}
	}
	for _, e := range enqueues {
		_, err := fr.Fence()
		must(t, err)
		f, ok := lf.LatestFence()
		if !ok {
			t.Fatalf("before %s: LatestFence right after a fence = false, want true", e.name)
		}
		// Work on another stream, or a fence there, leaves it as it is.
		must(t, other.Memset(b, 1, 4, 16))
		if of, ok := other.(backend.Fencer); ok {
			_, err := of.Fence()
			must(t, err)
		}
		if _, ok := lf.LatestFence(); !ok {
			t.Fatalf("before %s: another stream's work took this stream's latest fence away", e.name)
		}
		must(t, e.do())
		if g, ok := lf.LatestFence(); ok {
			t.Fatalf("after %s: LatestFence = %v, true; want false (work after the fence)", e.name, g)
		}
		must(t, st.Synchronize())
		if !f.Reached() {
			t.Fatalf("before %s: the latest fence is not reached after Synchronize", e.name)
		}
	}
	must(t, other.Synchronize())
	must(t, st.Destroy())
	if f, ok := lf.LatestFence(); ok {
		t.Fatalf("LatestFence on a destroyed stream = %v, true; want false", f)
	}
}

// A stream given a word of host memory mapped for the device
// (backend.HostMapper, backend.FenceWordSetter; optional) writes its fences'
// numbers there, in order, and another mapping of the same pages (a
// client's, read-only) sees the word reach a fence's number once the work
// before the fence is done.
func (s *suite) testFenceWord(t *testing.T) {
	d := s.dev
	hm, ok := d.(backend.HostMapper)
	st := newStream(t, d)
	ws, ok2 := st.(backend.FenceWordSetter)
	fr, ok3 := st.(backend.Fencer)
	if !ok || !ok2 || !ok3 {
		t.Skip("the backend cannot write fences into host memory the caller maps")
	}
	if err := ws.SetFenceWord(nil, 0); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Errorf("SetFenceWord(nil, 0) = %v, want ErrInvalidArgument", err)
	}
	shm, err := ring.CreateReadOnlyShared("backendtest", ring.CompletionBytes)
	if errors.Is(err, ring.ErrUnsupported) {
		t.Skip(err)
	}
	must(t, err)
	defer shm.Close()
	page := func(mem []byte) *ring.Completion {
		c, err := ring.NewCompletion(mem, ring.CompletionWords, ring.CompletionWordStride, ring.CompletionFaultsOffset, ring.CompletionFaultsBytes)
		must(t, err)
		return c
	}
	view := page(shm.Bytes())
	dptr, err := hm.MapHost(shm.Bytes())
	must(t, err)
	defer func() { must(t, hm.UnmapHost(shm.Bytes())) }()
	fd, err := syscall.Dup(shm.FD())
	must(t, err)
	ro, err := ring.OpenReadOnly(fd, ring.CompletionBytes)
	must(t, err)
	defer ro.Close()
	client := page(ro.Bytes())

	const i = 3
	must(t, ws.SetFenceWord(view.Word(i), dptr+backend.DevicePtr(view.Offset(i))))
	const n = 16 << 20
	a, b := alloc(t, d, n), alloc(t, d, n)
	out := allocHost(t, d, 4096)
	var last uint32
	for round := uint32(1); round <= 3; round++ {
		must(t, st.Memset(a, 0x7a0000+round, 4, n/4))
		must(t, st.CopyDtoD(b, a, n))
		must(t, st.CopyDtoH(out.Bytes(), b))
		f, err := fr.Fence()
		must(t, err)
		wf, ok := f.(backend.WordFence)
		if !ok {
			t.Fatalf("a fence after SetFenceWord is a %T, not a WordFence", f)
		}
		w, seq := wf.Word()
		if w != view.Word(i) {
			t.Fatalf("round %d: the fence writes another word", round)
		}
		if round > 1 && seq != last+1 {
			t.Fatalf("round %d: fence number %d after %d", round, seq, last)
		}
		last = seq
		deadline := time.Now().Add(10 * time.Second)
		for !client.Reached(i, seq) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the word never reached %d in the client's mapping (it holds %d)", round, seq, client.Word(i).Load())
			}
			runtime.Gosched()
		}
		// The fence agrees (on the sim it may lag the word by the marker's
		// completion); its Reached is also what orders the read below for
		// the race detector, which cannot see the word's two mappings as one.
		for !f.Reached() {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the word was reached but the fence never says so", round)
			}
			runtime.Gosched()
		}
		if got := binary.LittleEndian.Uint32(out.Bytes()); got != 0x7a0000+round {
			t.Fatalf("round %d: once the word was reached the copy's result is %#x, want %#x", round, got, 0x7a0000+round)
		}
	}
	for j := range ring.CompletionWords {
		if j != i && client.Word(j).Load() != 0 {
			t.Fatalf("word %d was written, only %d should be", j, i)
		}
	}
	must(t, st.Synchronize())
}
