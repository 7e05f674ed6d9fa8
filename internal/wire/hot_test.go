package wire_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/wire"
	"golang.org/x/sys/unix"
)

// hotSession is a toy driver session served over a HotConn: it offers rings
// on OpenRing and records the order of what it handles.
type hotSession struct {
	hc         *wire.HotConn
	sq, cq     int
	mu         sync.Mutex
	launches   []uint64  // Launch.Kernel values, in the order handled
	more       []bool    // each Launch's Request.More
	next       []v1.Type // each Launch's HotConn.NextType (0: none)
	reqNext    []v1.Type // each Launch's Request.NextType (0: none)
	hedged     []bool    // each Launch's Request.Hedged
	block      chan struct{}
	shm        *ring.Shm
	servedErr  chan error
	decline    bool // offer rings but expect the peer to stay on the socket
	writeBytes int
}

func (s *hotSession) handle(ctx context.Context, req *wire.Request) (v1.Message, []int, error) {
	switch m := req.Msg.(type) {
	case *v1.Hello:
		return &v1.HelloReply{Major: v1.Major, Minor: v1.Minor}, nil, nil
	case *v1.OpenRing:
		shm, err := ring.Create("hot-test", wire.RingBytes(s.sq, s.cq), true)
		if err != nil {
			return nil, nil, err
		}
		if err := wire.InitRings(shm.Bytes(), s.sq, s.cq); err != nil {
			return nil, nil, err
		}
		if err := s.hc.UseRings(shm.Bytes(), s.sq, s.cq, ring.Options{}, func() { shm.Close() }); err != nil {
			shm.Close()
			return nil, nil, err
		}
		s.mu.Lock()
		s.shm = shm
		s.mu.Unlock()
		return &v1.RingOpened{SubmitBytes: uint32(s.sq), CompleteBytes: uint32(s.cq)}, []int{shm.TakeFD()}, nil
	case *v1.OpenStaging: // stands for any reply with a descriptor
		shm, err := ring.Create("hot-test-staging", 4096, false)
		if err != nil {
			return nil, nil, err
		}
		defer shm.Close()
		return &v1.StagingOpened{Slots: 1, SlotBytes: 4096}, []int{shm.TakeFD()}, nil
	case *v1.Launch:
		s.mu.Lock()
		s.launches = append(s.launches, m.Kernel)
		s.more = append(s.more, req.More)
		s.hedged = append(s.hedged, req.Hedged)
		next, ok := s.hc.NextType()
		if !ok {
			next = 0
		}
		s.next = append(s.next, next)
		reqNext, ok := req.NextType()
		if !ok {
			reqNext = 0
		}
		s.reqNext = append(s.reqNext, reqNext)
		s.mu.Unlock()
		return nil, nil, nil
	case *v1.MemInfo: // Free: launches handled, Total: the last one's kernel
		s.mu.Lock()
		defer s.mu.Unlock()
		r := &v1.MemInfoReply{Free: uint64(len(s.launches))}
		if n := len(s.launches); n > 0 {
			r.Total = s.launches[n-1]
		}
		return r, nil, nil
	case *v1.BufferRead: // a pattern of Length bytes seeded by Offset
		return &v1.Data{Data: pattern(m.Offset, int(m.Length))}, nil, nil
	case *v1.BufferWrite:
		if !bytes.Equal(m.Data, pattern(m.Offset, len(m.Data))) {
			return nil, nil, v1.Errorf(v1.CodeInvalidArgument, "data of %d bytes garbled", len(m.Data))
		}
		s.mu.Lock()
		s.writeBytes += len(m.Data)
		s.mu.Unlock()
		return nil, nil, nil
	case *v1.WaitFence:
		<-s.block
		return nil, nil, nil
	}
	return nil, nil, v1.Errorf(v1.CodeUnsupported, "%v", req.Header.Type)
}

func pattern(seed uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed) ^ byte(i) ^ byte(i>>8)
	}
	return b
}

// hotPair starts a hotSession on one end of a socket pair and returns a client
// on the other, greeted, and on rings unless onRings is false.
func hotPair(t *testing.T, sq, cq int, onRings bool) (*wire.Client, *hotSession) {
	return hotPairB(t, sq, cq, onRings)
}

func hotPairB(t testing.TB, sq, cq int, onRings bool) (*wire.Client, *hotSession) {
	return hotPairHedged(t, sq, cq, onRings, 0)
}

// hotPairHedged is hotPair with the server's Hedge set to hedge (0: none),
// its helper watching always (not on demand), so that it stands in as often
// as it can.
func hotPairHedged(t testing.TB, sq, cq int, onRings bool, hedge time.Duration) (*wire.Client, *hotSession) {
	t.Helper()
	if hedge <= 0 {
		return hotPairWith(t, sq, cq, onRings, nil)
	}
	return hotPairServer(t, sq, cq, onRings, func(srv *wire.Server) {
		srv.Hedge = func() time.Duration { return hedge }
		srv.HedgeAlways = true
	})
}

// hotPairWith is hotPair with the server's Hedge set to hedge.
func hotPairWith(t testing.TB, sq, cq int, onRings bool, hedge func() time.Duration) (*wire.Client, *hotSession) {
	t.Helper()
	return hotPairServer(t, sq, cq, onRings, func(srv *wire.Server) { srv.Hedge = hedge })
}

// hotPairServer is hotPair with the server set up further by config.
func hotPairServer(t testing.TB, sq, cq int, onRings bool, config func(*wire.Server)) (*wire.Client, *hotSession) {
	t.Helper()
	a, b, err := wire.Pair()
	if err != nil {
		t.Fatal(err)
	}
	s := &hotSession{hc: wire.NewHotConn(b), sq: sq, cq: cq, block: make(chan struct{}), servedErr: make(chan error, 1)}
	srv := &wire.Server{Endpoint: v1.EndpointDriver, Handle: s.handle}
	config(srv)
	go func() { s.servedErr <- srv.Serve(context.Background(), s.hc) }()
	cl := wire.NewClient(a)
	t.Cleanup(func() { cl.Close(); s.hc.Close() })
	ctx := tctx(t)
	if err := cl.Call(ctx, v1.NewHello(v1.RoleClient, "", "hot"), nil); err != nil {
		t.Fatal(err)
	}
	if onRings {
		openRings(t, cl, sq, cq)
	}
	return cl, s
}

func openRings(t testing.TB, cl *wire.Client, sq, cq int) *ring.Shm {
	t.Helper()
	var ro v1.RingOpened
	fds, err := cl.CallFDs(tctx(t), &v1.OpenRing{SubmitBytes: uint32(sq), CompleteBytes: uint32(cq)}, &ro, nil)
	if err != nil {
		t.Fatal(err)
	}
	shm, err := ring.Open(fds[0], wire.RingBytes(int(ro.SubmitBytes), int(ro.CompleteBytes)), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.UseRings(shm.Bytes(), int(ro.SubmitBytes), int(ro.CompleteBytes), ring.Options{}, func() { shm.Close() }); err != nil {
		t.Fatal(err)
	}
	return shm
}

func tctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// A synchronous call after asynchronous requests is handled after them, on
// rings as on the socket, with any number of goroutines sending, and with
// two goroutines serving (Server.Hedge): one that watches only briefly, so
// that the two often pass the serving state, and the idle one parks.
func TestHotOrderedStream(t *testing.T) {
	for _, tc := range []struct {
		onRings bool
		hedge   time.Duration
	}{{false, 0}, {true, 0}, {true, 2 * time.Millisecond}, {true, 20 * time.Microsecond}} {
		onRings := tc.onRings
		t.Run(fmt.Sprintf("rings=%v,hedge=%v", onRings, tc.hedge), func(t *testing.T) {
			cl, _ := hotPairHedged(t, 8<<10, 8<<10, onRings, tc.hedge)
			if cl.OnRings() != onRings {
				t.Fatalf("OnRings = %v", cl.OnRings())
			}
			ctx := tctx(t)
			for i := range 2000 {
				if err := cl.Send(&v1.Launch{Kernel: uint64(i)}); err != nil {
					t.Fatal(err)
				}
				if i%500 == 499 {
					var r v1.MemInfoReply
					if err := cl.Call(ctx, &v1.MemInfo{}, &r); err != nil {
						t.Fatal(err)
					}
					if r.Free != uint64(i+1) || r.Total != uint64(i) {
						t.Fatalf("after %d launches the server had handled %d, last %d", i+1, r.Free, r.Total)
					}
				}
			}
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 50 {
						n := (g*977 + i*4099) % (40 << 10) // up to five times the ring
						var d v1.Data
						if err := cl.Call(ctx, &v1.BufferRead{Offset: uint64(g*100 + i), Length: uint64(n)}, &d); err != nil {
							t.Error(err)
							return
						}
						if !bytes.Equal(d.Data, pattern(uint64(g*100+i), n)) {
							t.Errorf("read of %d bytes garbled", n)
							return
						}
						if err := cl.Call(ctx, &v1.BufferWrite{Offset: uint64(i), Data: pattern(uint64(i), n)}, nil); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// Frames of the protocol's full size cross rings far smaller than them.
func TestHotLargeFrames(t *testing.T) {
	cl, s := hotPair(t, 64<<10, 64<<10, true)
	ctx := tctx(t)
	big := v1.MaxPayload - 64
	if err := cl.Call(ctx, &v1.BufferWrite{Offset: 3, Data: pattern(3, big)}, nil); err != nil {
		t.Fatal(err)
	}
	var d v1.Data
	if err := cl.Call(ctx, &v1.BufferRead{Offset: 5, Length: uint64(big)}, &d); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d.Data, pattern(5, big)) || s.writeBytes != big {
		t.Fatalf("large frames garbled: read %d bytes, server got %d", len(d.Data), s.writeBytes)
	}
}

// A reply with a descriptor comes on the socket, to a caller that reads the
// completion ring.
func TestHotDescriptorReply(t *testing.T) {
	cl, _ := hotPair(t, 8<<10, 8<<10, true)
	var so v1.StagingOpened
	fds, err := cl.CallFDs(tctx(t), &v1.OpenStaging{}, &so, nil)
	if err != nil || len(fds) != 1 {
		t.Fatalf("reply with a descriptor on rings: %v, %v", fds, err)
	}
	shm, err := ring.Open(fds[0], 4096, false)
	if err != nil {
		t.Fatal(err)
	}
	shm.Close()
	if err := cl.Send(&v1.Launch{}); err != nil {
		t.Fatal(err)
	}
}

// A client that is offered rings but goes on on the socket is served there.
func TestHotDeclined(t *testing.T) {
	cl, s := hotPair(t, 8<<10, 8<<10, false)
	var ro v1.RingOpened
	fds, err := cl.CallFDs(tctx(t), &v1.OpenRing{}, &ro, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	cl.Send(&v1.Launch{Kernel: 7})
	var r v1.MemInfoReply
	if err := cl.Call(tctx(t), &v1.MemInfo{}, &r); err != nil || r.Free != 1 || r.Total != 7 {
		t.Fatalf("socket after declined rings: %+v, %v", r, err)
	}
	if s.hc.OnRings() {
		t.Fatal("server still on rings")
	}
}

// Requests the peer published before closing its socket are served; then the
// session ends cleanly.
func TestHotDrainOnClose(t *testing.T) {
	cl, s := hotPair(t, 64<<10, 8<<10, true)
	for i := range 300 {
		cl.Send(&v1.Launch{Kernel: uint64(i)})
	}
	cl.Conn().Close() // the peer's socket goes; its rings stay mapped here
	if err := <-s.servedErr; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if len(s.launches) != 300 {
		t.Fatalf("served %d of 300 launches sent before the close", len(s.launches))
	}
}

// The socket's end wakes a caller waiting on the completion ring.
func TestHotPeerDeathWakesCaller(t *testing.T) {
	cl, s := hotPair(t, 8<<10, 8<<10, true)
	errc := make(chan error)
	go func() { errc <- cl.Call(tctx(t), &v1.WaitFence{}, nil) }()
	time.Sleep(10 * time.Millisecond) // let it get into its wait; the result does not depend on it
	s.hc.Conn().Close()
	if err := <-errc; !errors.Is(err, wire.ErrConnLost) {
		t.Fatalf("call when the server went: %v, want ErrConnLost", err)
	}
	close(s.block)
	if err := cl.Send(&v1.Launch{}); !errors.Is(err, v1.ErrDeviceLost) {
		t.Fatalf("send after the server went: %v", err)
	}
	<-cl.Done()
}

// A caller whose context ends stops waiting; the late reply is dropped and
// the connection goes on.
func TestHotCallTimeout(t *testing.T) {
	cl, s := hotPair(t, 8<<10, 8<<10, true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := cl.Call(ctx, &v1.WaitFence{}, nil); !errors.Is(err, v1.ErrTimeout) {
		t.Fatalf("call past its context: %v", err)
	}
	close(s.block)
	if err := cl.Call(tctx(t), &v1.MemInfo{}, nil); err != nil {
		t.Fatal(err)
	}
}

// A request on the socket after the rings were taken ends the session.
func TestHotSocketAfterRings(t *testing.T) {
	cl, s := hotPair(t, 8<<10, 8<<10, true)
	if err := cl.Call(tctx(t), &v1.MemInfo{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cl.Conn().WriteMessage(99, 0, &v1.MemInfo{}); err != nil {
		t.Fatal(err)
	}
	if err := <-s.servedErr; !errors.Is(err, wire.ErrSocketAfterRings) {
		t.Fatalf("serve: %v, want ErrSocketAfterRings", err)
	}
}

// Garbage in the submission ring ends that session with Malformed; the
// client learns that its connection is gone.
func TestHotGarbageInRing(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  []byte // written as one ring message; nil: a corrupt record
	}{
		{"corrupt record", nil},
		{"not a frame", []byte("GET / HTTP/1.1\r\n")},
		{"frame length lies", v1.Header{Length: 100, Type: v1.TypeMemInfo, ID: 5}.Append(nil)},
		{"frame claims descriptors", v1.Header{Type: v1.TypeMemInfo, Flags: v1.Flags(0).WithFDs(1), ID: 5}.Append(nil)},
	} {
		for _, hedge := range []time.Duration{0, 10 * time.Second} { // hedged: the helper may read it
			t.Run(fmt.Sprintf("%s,hedge=%v", tc.name, hedge), func(t *testing.T) {
				testGarbageInRing(t, tc.msg, hedge)
			})
		}
	}
}

// testGarbageInRing writes msg (nil: a corrupt record) into a session's
// submission ring, as a hostile client would, and checks that the session
// ends Malformed and its client finds out; hedge as hotPairHedged.
func testGarbageInRing(t *testing.T, msg []byte, hedge time.Duration) {
	cl, s := hotPairHedged(t, 8<<10, 8<<10, true, hedge)
	if err := cl.Call(tctx(t), &v1.MemInfo{}, nil); err != nil {
		t.Fatal(err)
	}
	// Write into the submission ring as a hostile client would: a
	// producer of our own on the server's mapping.
	s.mu.Lock()
	mem := s.shm.Bytes()[:ring.Bytes(8<<10)]
	s.mu.Unlock()
	if msg == nil {
		head := binary.LittleEndian.Uint64(mem[128:])
		binary.LittleEndian.PutUint64(mem[ring.ControlBytes+int(head%(8<<10)):], 1<<31)
		binary.LittleEndian.PutUint64(mem[128:], head+8)
	} else {
		p, err := ring.NewProducer(mem, 8<<10, 1<<20, ring.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p.Write(msg)
	}
	// No doorbell: a sleeping server re-checks within its sleep bound.
	if err := <-s.servedErr; !errors.Is(err, v1.ErrMalformed) {
		t.Fatalf("serve: %v, want Malformed", err)
	}
	// The server closed the session: the client finds out.
	<-cl.Done()
	if err := cl.Call(tctx(t), &v1.MemInfo{}, nil); !errors.Is(err, v1.ErrDeviceLost) {
		t.Fatalf("call after the session ended: %v, want DeviceLost", err)
	}
}

// Start keeps several requests in flight from one goroutine.
func TestHotStartWait(t *testing.T) {
	for _, onRings := range []bool{false, true} {
		cl, _ := hotPair(t, 8<<10, 8<<10, onRings)
		ctx := tctx(t)
		var calls []*wire.Call
		for i := range 20 {
			c, err := cl.Start(ctx, &v1.BufferRead{Offset: uint64(i), Length: uint64(100 * i)})
			if err != nil {
				t.Fatal(err)
			}
			calls = append(calls, c)
		}
		for i, c := range calls {
			var d v1.Data
			if err := c.Wait(ctx, &d); err != nil || !bytes.Equal(d.Data, pattern(uint64(i), 100*i)) {
				t.Fatalf("rings=%v call %d: %d bytes, %v", onRings, i, len(d.Data), err)
			}
		}
		if _, err := cl.Start(ctx, &v1.Empty{}); !errors.Is(err, v1.ErrInvalidArgument) {
			t.Fatalf("Start of a reply type: %v", err)
		}
	}
}

// BenchmarkHotSend measures asynchronous requests (a Launch frame) through to
// a server that does nothing with them, on each transport: the transport's
// cost alone, without a driver's work.
func BenchmarkHotSend(b *testing.B) {
	for _, onRings := range []bool{false, true} {
		b.Run(map[bool]string{false: "socket", true: "ring"}[onRings], func(b *testing.B) {
			cl, s := hotPairB(b, 1<<20, 256<<10, onRings)
			m := &v1.Launch{Kernel: 1, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, Params: make([]byte, 16)}
			b.ResetTimer()
			for range b.N {
				if err := cl.Send(m); err != nil {
					b.Fatal(err)
				}
			}
			if err := cl.Call(context.Background(), &v1.MemInfo{}, nil); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if len(s.launches) != b.N {
				b.Fatalf("server handled %d of %d", len(s.launches), b.N)
			}
		})
	}
}

// BenchmarkHotCall measures a synchronous round trip on each transport.
func BenchmarkHotCall(b *testing.B) {
	for _, onRings := range []bool{false, true} {
		b.Run(map[bool]string{false: "socket", true: "ring"}[onRings], func(b *testing.B) {
			cl, _ := hotPairB(b, 1<<20, 256<<10, onRings)
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				if err := cl.Call(ctx, &v1.MemInfo{}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHotMore: a request read while others already wait on the ring behind
// it says so (Request.More); the last of a burst does not.
func TestHotMore(t *testing.T) {
	cl, s := hotPair(t, 1<<16, 1<<16, true)
	ctx := tctx(t)
	blocked, err := cl.Start(ctx, &v1.WaitFence{}) // holds the server while the burst queues
	if err != nil {
		t.Fatal(err)
	}
	for k := uint64(1); k <= 3; k++ {
		if err := cl.Send(&v1.Launch{Kernel: k}); err != nil {
			t.Fatal(err)
		}
	}
	close(s.block)
	if err := blocked.Wait(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for { // nothing more is sent until the burst is handled
		s.mu.Lock()
		n := len(s.launches)
		s.mu.Unlock()
		if n == 3 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the burst was not handled")
		}
		time.Sleep(time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if want := []bool{true, true, false}; fmt.Sprint(s.more) != fmt.Sprint(want) {
		t.Errorf("Request.More of the burst's launches: %v, want %v", s.more, want)
	}
}

// TestHotNextType: as a request is served, NextType (and Request.NextType) names
// the request queued behind it on the ring, and nothing once none is; on the
// socket they name nothing.
func TestHotNextType(t *testing.T) {
	for _, onRings := range []bool{true, false} {
		cl, s := hotPair(t, 1<<16, 1<<16, onRings)
		ctx := tctx(t)
		blocked, err := cl.Start(ctx, &v1.WaitFence{}) // holds the server while requests queue
		if err != nil {
			t.Fatal(err)
		}
		for k := uint64(1); k <= 2; k++ {
			if err := cl.Send(&v1.Launch{Kernel: k}); err != nil {
				t.Fatal(err)
			}
		}
		info, err := cl.Start(ctx, &v1.MemInfo{})
		if err != nil {
			t.Fatal(err)
		}
		close(s.block)
		for _, c := range []*wire.Call{blocked, info} {
			if err := c.Wait(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.Call(ctx, &v1.Launch{Kernel: 3}, nil); err != nil {
			t.Fatal(err)
		}
		want := []v1.Type{v1.TypeLaunch, v1.TypeMemInfo, 0}
		if !onRings {
			want = []v1.Type{0, 0, 0}
		}
		s.mu.Lock()
		if fmt.Sprint(s.next) != fmt.Sprint(want) {
			t.Errorf("on rings %v: NextType as each launch was served: %v, want %v", onRings, s.next, want)
		}
		if fmt.Sprint(s.reqNext) != fmt.Sprint(want) {
			t.Errorf("on rings %v: Request.NextType of each launch: %v, want %v", onRings, s.reqNext, want)
		}
		s.mu.Unlock()
	}
}

// TestHotRecycle: on rings, the frame of a request of a Reuse type is read
// into again for the next request, and a frame of any other type never is:
// what a handler keeps of it (BufferWrite's data, here) stays as sent.
func TestHotRecycle(t *testing.T) {
	a, b, err := wire.Pair()
	if err != nil {
		t.Fatal(err)
	}
	s := &hotSession{hc: wire.NewHotConn(b), sq: 64 << 10, cq: 64 << 10, block: make(chan struct{}), servedErr: make(chan error, 1)}
	var kept [][]byte     // BufferWrite data, as the frames hold it
	var params [][]byte   // Launch parameters, copied when handled
	var firstByte []*byte // where each launch's parameters were
	var mu sync.Mutex     // orders the handler's reads and writes before the test's
	handle := func(ctx context.Context, req *wire.Request) (v1.Message, []int, error) {
		mu.Lock()
		defer mu.Unlock()
		switch m := req.Msg.(type) {
		case *v1.BufferWrite:
			kept = append(kept, m.Data)
			return nil, nil, nil
		case *v1.Launch:
			params = append(params, append([]byte(nil), m.Params...))
			firstByte = append(firstByte, &m.Params[0])
			return nil, nil, nil
		}
		return s.handle(ctx, req)
	}
	srv := &wire.Server{Endpoint: v1.EndpointDriver, Handle: handle, Reuse: func(t v1.Type) bool { return t == v1.TypeLaunch }}
	go func() { s.servedErr <- srv.Serve(context.Background(), s.hc) }()
	cl := wire.NewClient(a)
	t.Cleanup(func() { cl.Close(); s.hc.Close() })
	ctx := tctx(t)
	if err := cl.Call(ctx, v1.NewHello(v1.RoleClient, "", "hot"), nil); err != nil {
		t.Fatal(err)
	}
	openRings(t, cl, s.sq, s.cq)
	launch := func(seed uint64) *v1.Launch {
		return &v1.Launch{Kernel: 1, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, Params: pattern(seed, 32)}
	}
	sent := []v1.Message{
		&v1.BufferWrite{Buffer: 1, Offset: 1, Data: pattern(1, 48)},
		launch(2), launch(3),
		&v1.BufferWrite{Buffer: 1, Offset: 4, Data: pattern(4, 40)},
		launch(5), launch(6), launch(7),
		&v1.BufferWrite{Buffer: 1, Offset: 8, Data: pattern(8, 48)},
		launch(9),
	}
	for _, m := range sent {
		send := cl.Send
		if _, ok := m.(*v1.BufferWrite); ok { // it wants a reply
			send = func(m v1.Message, _ ...int) error { return cl.Call(ctx, m, nil) }
		}
		if err := send(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Call(ctx, &v1.MemInfo{}, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var wantKept, wantParams [][]byte
	for _, m := range sent {
		switch m := m.(type) {
		case *v1.BufferWrite:
			wantKept = append(wantKept, m.Data)
		case *v1.Launch:
			wantParams = append(wantParams, m.Params)
		}
	}
	if fmt.Sprint(kept) != fmt.Sprint(wantKept) {
		t.Errorf("kept write data changed after it was handled:\n%v\nwant\n%v", kept, wantKept)
	}
	if fmt.Sprint(params) != fmt.Sprint(wantParams) {
		t.Errorf("launch parameters\n%v\nwant\n%v", params, wantParams)
	}
	// Launches 5, 6 and 7 came one after another: each read into the frame
	// of the one before.
	if len(firstByte) != 6 || firstByte[2] != firstByte[3] || firstByte[3] != firstByte[4] {
		t.Errorf("consecutive launches were read into new memory each")
	}
}

// atLeastProcs runs the test with at least n Ps. Serve's goroutine and the
// helper spin; with fewer Ps than spinners and the client, the client runs
// only when Serve's goroutine gives up watching, which wakes the helper and
// would hide one that parks when it should not.
func atLeastProcs(t *testing.T, n int) {
	old := runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), n))
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// primaryHold holds Serve's goroutine of hedged serving at its next watch
// once armed, as a hypervisor holds a virtual CPU, until released.
type primaryHold struct {
	on       atomic.Bool
	held     chan struct{}
	released chan struct{}
	once     sync.Once
}

// holdPrimary sets the hedge's watch hook to hold Serve's goroutine when
// armed (untilHeld); the test's end releases it and unsets the hook.
func holdPrimary(t *testing.T) *primaryHold {
	h := &primaryHold{held: make(chan struct{}, 1), released: make(chan struct{})}
	unset := wire.SetHedgeWatchHook(func(primary bool) {
		if primary && h.on.Load() {
			select {
			case h.held <- struct{}{}:
			default:
			}
			<-h.released
		}
	})
	t.Cleanup(func() { h.release(); unset() })
	return h
}

// untilHeld arms the hold and sends launches (kernels 0, 1, ...), each
// ending a watch, until Serve's goroutine is held; it returns how many it
// sent.
func (h *primaryHold) untilHeld(ctx context.Context, t *testing.T, cl *wire.Client) int {
	t.Helper()
	h.on.Store(true)
	for k := 0; ; k++ {
		if err := cl.Send(&v1.Launch{Kernel: uint64(k)}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-h.held:
			return k + 1
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			t.Fatal("Serve's goroutine never came to the hook")
		}
	}
}

// release lets Serve's goroutine go on, and no longer holds it.
func (h *primaryHold) release() {
	h.on.Store(false)
	h.once.Do(func() { close(h.released) })
}

// TestHotHedgeStandsIn: with Server.Hedge, requests on the rings are served
// while Serve's own goroutine is held away (as a hypervisor holds a virtual
// CPU), by the helper watching beside it; without it they wait. The helper
// still watches after a steady stream of requests longer than its spin, in
// which Serve's goroutine never waited in the transport's own way (until
// session 25 it parked after its first spin, so a service sending one
// request a millisecond was hedged for its first 2 ms only).
func TestHotHedgeStandsIn(t *testing.T) {
	for _, tt := range []struct {
		name         string
		spin, steady time.Duration
	}{
		{"spin longer than the test", 10 * time.Second, 0},
		{"after a stream longer than the spin", 5 * time.Millisecond, 40 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) { testHedgeStandsIn(t, tt.spin, tt.steady) })
	}
}

func testHedgeStandsIn(t *testing.T, spin, steady time.Duration) {
	atLeastProcs(t, 4)
	hold := holdPrimary(t)
	cl, srv := hotPairHedged(t, 8<<10, 8<<10, true, spin)
	ctx := tctx(t)
	var r v1.MemInfoReply
	if err := cl.Call(ctx, &v1.MemInfo{}, &r); err != nil { // hedging starts
		t.Fatal(err)
	}
	for end := time.Now().Add(steady); time.Now().Before(end); { // requests well within spin of each other
		if err := cl.Call(ctx, &v1.MemInfo{}, &r); err != nil {
			t.Fatal(err)
		}
		time.Sleep(spin / 20)
	}
	// Requests are served in order, so all the launches sent until Serve's
	// goroutine is held are handled (by it before the hook, or by the
	// helper) before the next request is answered; counting them rather
	// than reading how many were handled already, which the helper may
	// still be about to change, keeps the figures below exact.
	before := hold.untilHeld(ctx, t, cl)
	heldCtx, cancel := context.WithTimeout(ctx, 10*time.Second) // held for good without a helper
	defer cancel()
	for i := range 100 {
		if err := cl.Send(&v1.Launch{Kernel: uint64(1000 + i)}); err != nil {
			t.Fatal(err)
		}
		if err := cl.Call(heldCtx, &v1.MemInfo{}, &r); err != nil {
			t.Fatalf("request %d while Serve's goroutine was held: %v", i, err)
		}
		if r.Total != uint64(1000+i) || r.Free != uint64(before+i+1) {
			t.Fatalf("while Serve's goroutine was held: %d launches handled, the last %d; want %d, %d", r.Free, r.Total, before+i+1, 1000+i)
		}
	}
	hold.release()
	if err := cl.Call(ctx, &v1.MemInfo{}, &r); err != nil {
		t.Fatal(err)
	}
	if r.Free != uint64(before+100) {
		t.Errorf("after the hold: %d launches handled, want %d", r.Free, before+100)
	}
	// The launches sent while it was held say that the helper served them.
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for i, k := range srv.launches {
		if k >= 1000 && !srv.hedged[i] {
			t.Errorf("launch %d, served while Serve's goroutine was held: Request.Hedged false", k)
		}
	}
}

// TestHotHedgeDelay: the helper stands in for a request only once it has
// waited unread for Server.HedgeDelay.
func TestHotHedgeDelay(t *testing.T) {
	atLeastProcs(t, 4)
	hold := holdPrimary(t)
	const delay = 30 * time.Millisecond
	cl, srv := hotPairServer(t, 8<<10, 8<<10, true, func(s *wire.Server) {
		s.Hedge = func() time.Duration { return 10 * time.Second }
		s.HedgeDelay = delay
		s.HedgeAlways = true
	})
	ctx := tctx(t)
	if err := cl.Call(ctx, &v1.MemInfo{}, nil); err != nil { // hedging starts
		t.Fatal(err)
	}
	hold.untilHeld(ctx, t, cl)
	// The last launch may have come after Serve's goroutine was held: this
	// call waits for the helper to serve both, in up to the delay.
	if err := cl.Call(ctx, &v1.MemInfo{}, nil); err != nil {
		t.Fatal(err)
	}
	for k := uint64(1000); k < 1003; k++ {
		// Standing in, the helper serves what is there without waiting
		// again: a request sent at once after an answer may find it still
		// draining. One sent later waits the delay anew.
		time.Sleep(2 * time.Millisecond)
		sent := time.Now()
		if err := cl.Call(ctx, &v1.Launch{Kernel: k}, nil); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(sent); waited < delay {
			t.Errorf("launch %d answered by the helper after %v, before HedgeDelay %v", k, waited, delay)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if n := len(srv.hedged); n < 3 || !srv.hedged[n-1] {
		t.Errorf("launches handled %v, Request.Hedged %v: want the last ones by the helper", srv.launches, srv.hedged)
	}
}

// TestHotHedgeOnDemand: unless told to watch always, the helper watches
// (and stands in) once Serve's goroutine was seen away between two of its
// looks. (That it parks otherwise is TestHedgeWatchesOnDemand's.)
func TestHotHedgeOnDemand(t *testing.T) {
	atLeastProcs(t, 4)
	hold := holdPrimary(t)
	var stalls atomic.Int64
	var away atomic.Bool
	defer wire.SetHedgeStallHook(func() { stalls.Add(1) })()
	defer wire.SetHedgeLookHook(func() {
		if away.Load() {
			time.Sleep(time.Millisecond) // as if the hypervisor took the CPU
		}
	})()
	const spin = 5 * time.Millisecond
	cl, srv := hotPairServer(t, 8<<10, 8<<10, true, func(s *wire.Server) {
		s.Hedge = func() time.Duration { return spin }
	})
	ctx := tctx(t)
	if err := cl.Call(ctx, &v1.MemInfo{}, nil); err != nil { // hedging starts
		t.Fatal(err)
	}
	// Away for a millisecond between two looks: the helper watches, and
	// stands in for requests while Serve's goroutine is held.
	away.Store(true)
	for stalls.Load() == 0 {
		if err := cl.Call(ctx, &v1.MemInfo{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	away.Store(false)
	// Several spins later (the wake alone would have the helper watch for
	// one), still within the second it watches for.
	for end := time.Now().Add(4 * spin); time.Now().Before(end); {
		if err := cl.Call(ctx, &v1.MemInfo{}, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(spin / 20)
	}
	hold.untilHeld(ctx, t, cl)
	heldCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for i := range 20 {
		if err := cl.Send(&v1.Launch{Kernel: uint64(1000 + i)}); err != nil {
			t.Fatal(err)
		}
		if err := cl.Call(heldCtx, &v1.MemInfo{}, nil); err != nil {
			t.Fatalf("request %d while Serve's goroutine was held after a stall: %v", i, err)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if n := len(srv.hedged); n == 0 || !srv.hedged[n-1] {
		t.Errorf("the last launch was not served by the helper (Request.Hedged %v)", srv.hedged)
	}
}

// TestHotHedgeParksWhenIdle: once requests stop, neither Serve's goroutine
// nor the helper keeps spinning: the helper's watches stop within a spin or
// two of Serve's goroutine going to wait.
func TestHotHedgeParksWhenIdle(t *testing.T) {
	atLeastProcs(t, 4)
	var helperWatches atomic.Int64
	defer wire.SetHedgeWatchHook(func(primary bool) {
		if !primary {
			helperWatches.Add(1)
		}
	})()
	const spin = 2 * time.Millisecond
	cl, _ := hotPairHedged(t, 8<<10, 8<<10, true, spin)
	ctx := tctx(t)
	for range 20 {
		if err := cl.Call(ctx, &v1.MemInfo{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(25 * spin)
	before := helperWatches.Load()
	time.Sleep(25 * spin)
	if after := helperWatches.Load(); after != before {
		t.Errorf("idle: the helper watched %d more times in %v, want none", after-before, 25*spin)
	}
	if err := cl.Call(ctx, &v1.MemInfo{}, nil); err != nil { // still served after parking
		t.Fatal(err)
	}
}

// TestHotHedgeAskedOnce: Server.Hedge is asked once the connection is on
// rings, and only once (not again per request while it says no).
func TestHotHedgeAskedOnce(t *testing.T) {
	var asked atomic.Int64
	cl, srv := hotPairWith(t, 8<<10, 8<<10, true, func() time.Duration { asked.Add(1); return 0 })
	ctx := tctx(t)
	for k := range 100 {
		if err := cl.Send(&v1.Launch{Kernel: uint64(k)}); err != nil {
			t.Fatal(err)
		}
		if err := cl.Call(ctx, &v1.MemInfo{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("Hedge asked %d times, want 1", n)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if slices.Contains(srv.hedged, true) { // no helper: nothing was hedged
		t.Errorf("unhedged: launches with Request.Hedged set: %v", srv.hedged)
	}
}

// OnRingWrite sees the requests written on the submission ring in the
// order the server reads them, whichever goroutines send them; a client on
// its socket has no such order to give.
func TestHotOnRingWrite(t *testing.T) {
	cl, hs := hotPair(t, 8<<10, 8<<10, true)
	var seen []uint64 // kernels of the launches written, in ring order
	others := 0
	if !cl.OnRingWrite(func(m v1.Message) {
		if l, ok := m.(*v1.Launch); ok {
			seen = append(seen, l.Kernel) // under the ring's send lock
		} else {
			others++
		}
	}) {
		t.Fatal("OnRingWrite refused on rings")
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				if err := cl.Send(&v1.Launch{Kernel: uint64(g*1000 + i)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var r v1.MemInfoReply
	if err := cl.Call(tctx(t), &v1.MemInfo{}, &r); err != nil {
		t.Fatal(err)
	}
	hs.mu.Lock()
	handled := slices.Clone(hs.launches)
	hs.mu.Unlock()
	if len(seen) != 1200 || !slices.Equal(seen, handled) {
		t.Fatalf("the hook saw %d launches, the server handled %d; the same order: %v", len(seen), len(handled), slices.Equal(seen, handled))
	}
	if others != 1 {
		t.Errorf("the hook saw %d other requests, want 1 (MemInfo)", others)
	}

	sock, _ := hotPair(t, 8<<10, 8<<10, false)
	if sock.OnRingWrite(func(v1.Message) {}) {
		t.Error("OnRingWrite accepted on a client not on rings")
	}
}
