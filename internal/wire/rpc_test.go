package wire_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/wire"
	"golang.org/x/sys/unix"
)

// fakeSession is a toy driver session: enough behaviour to exercise the
// request/reply layer.
type fakeSession struct {
	mu       sync.Mutex
	rights   v1.Rights
	deferred error
	bufs     map[uint64][]byte
	next     uint64
	launches int
	entered  chan struct{} // WaitFence signals here, then blocks on release
	release  chan struct{}
	kill     func() // WaitFence with fence 666 calls it
}

func newFakeSession() *fakeSession {
	return &fakeSession{rights: v1.AllSessionRights, bufs: map[uint64][]byte{}, entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (s *fakeSession) Rights() v1.Rights {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rights
}

func (s *fakeSession) Defer(req *wire.Request, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deferred == nil {
		s.deferred = err
	}
}

func (s *fakeSession) Handle(ctx context.Context, req *wire.Request) (v1.Message, []int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m := req.Msg.(type) {
	case *v1.Hello:
		if m.Token != "good" {
			return nil, nil, v1.Errorf(v1.CodePermissionDenied, "unknown client")
		}
		return &v1.HelloReply{Major: v1.Major, Minor: v1.Minor, Server: "fake", Backend: "sim"}, nil, nil
	case *v1.CreateBuffer:
		s.next++
		s.bufs[s.next] = make([]byte, m.Size)
		return &v1.BufferCreated{Handle: s.next, Addr: 0x1000 * s.next, Size: m.Size}, nil, nil
	case *v1.BufferWrite:
		b, ok := s.bufs[m.Buffer]
		if !ok || m.Offset+uint64(len(m.Data)) > uint64(len(b)) {
			return nil, nil, v1.Errorf(v1.CodeInvalidArgument, "write out of range")
		}
		copy(b[m.Offset:], m.Data)
		return nil, nil, nil
	case *v1.BufferRead:
		if m.Buffer == 0 { // synthetic data for load tests
			d := make([]byte, m.Length)
			for i := range d {
				d[i] = byte(m.Offset) + byte(i)
			}
			return &v1.Data{Data: d}, nil, nil
		}
		b, ok := s.bufs[m.Buffer]
		if !ok || m.Offset+m.Length > uint64(len(b)) {
			return nil, nil, v1.Errorf(v1.CodeInvalidArgument, "read out of range")
		}
		return &v1.Data{Data: b[m.Offset : m.Offset+m.Length]}, nil, nil
	case *v1.Launch:
		if m.Kernel == 0 {
			return nil, nil, v1.Errorf(v1.CodeInvalidHandle, "kernel 0")
		}
		s.launches++
		return nil, nil, nil
	case *v1.Synchronize:
		err := s.deferred
		s.deferred = nil
		return nil, nil, err
	case *v1.Restrict:
		s.rights &= m.Rights
		return &v1.RightsReply{Rights: s.rights}, nil, nil
	case *v1.WaitFence:
		if m.Fence == 666 {
			s.kill()
			return nil, nil, nil
		}
		s.mu.Unlock()
		s.entered <- struct{}{}
		<-s.release
		s.mu.Lock()
		return nil, nil, nil
	case *v1.MemInfo:
		return &v1.Duration{}, nil, nil // the wrong reply type, on purpose
	}
	return nil, nil, v1.Errorf(v1.CodeUnsupported, "%v", req.Header.Type)
}

// startDriver serves a fake session on one end of a pair and returns the
// other end, and the Serve result.
func startDriver(t testing.TB, s *fakeSession) (*wire.Conn, <-chan error) {
	t.Helper()
	a, b := pair(t)
	s.kill = func() { b.Close() }
	srv := &wire.Server{Endpoint: v1.EndpointDriver, Rights: s.Rights, Handle: s.Handle, Deferred: s.Defer}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), b) }()
	return a, done
}

func greeted(t testing.TB, s *fakeSession) *wire.Client {
	t.Helper()
	c, _ := startDriver(t, s)
	cl := wire.NewClient(c)
	t.Cleanup(func() { cl.Close() })
	var hr v1.HelloReply
	if err := cl.Call(context.Background(), v1.NewHello(v1.RoleClient, "good", "test"), &hr); err != nil {
		t.Fatal(err)
	}
	if hr.Server != "fake" {
		t.Fatalf("HelloReply %+v", hr)
	}
	return cl
}

func TestCallAndSend(t *testing.T) {
	ctx := context.Background()
	s := newFakeSession()
	cl := greeted(t, s)

	var buf v1.BufferCreated
	if err := cl.Call(ctx, &v1.CreateBuffer{Size: 64}, &buf); err != nil || buf.Size != 64 {
		t.Fatalf("CreateBuffer: %+v, %v", buf, err)
	}
	if err := cl.Call(ctx, &v1.BufferWrite{Buffer: buf.Handle, Offset: 8, Data: []byte("abc")}, nil); err != nil {
		t.Fatal(err)
	}
	var d v1.Data
	if err := cl.Call(ctx, &v1.BufferRead{Buffer: buf.Handle, Offset: 8, Length: 3}, &d); err != nil || string(d.Data) != "abc" {
		t.Fatalf("BufferRead: %q, %v", d.Data, err)
	}
	// A typed error comes back as itself.
	err := cl.Call(ctx, &v1.BufferRead{Buffer: buf.Handle, Offset: 100, Length: 3}, &d)
	var ve *v1.Error
	if !errors.As(err, &ve) || ve.Code != v1.CodeInvalidArgument {
		t.Fatalf("out-of-range read: %v", err)
	}

	// Asynchronous launches: errors wait for Synchronize.
	if err := cl.Send(&v1.Launch{Kernel: 0}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Send(&v1.Launch{Kernel: 5}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Call(ctx, &v1.Synchronize{}, nil); !errors.Is(err, v1.ErrInvalidHandle) {
		t.Fatalf("Synchronize = %v, want the deferred InvalidHandle", err)
	}
	if err := cl.Call(ctx, &v1.Synchronize{}, nil); err != nil {
		t.Fatalf("second Synchronize = %v", err)
	}

	// The interface is the permission.
	var rr v1.RightsReply
	if err := cl.Call(ctx, &v1.Restrict{Rights: v1.RightCopy}, &rr); err != nil || rr.Rights != v1.RightCopy {
		t.Fatalf("Restrict: %v, %v", rr.Rights, err)
	}
	if err := cl.Call(ctx, &v1.Launch{Kernel: 5}, nil); !errors.Is(err, v1.ErrPermissionDenied) {
		t.Fatalf("Launch after Restrict = %v, want PermissionDenied", err)
	}
	if err := cl.Send(&v1.Launch{Kernel: 5}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Call(ctx, &v1.Synchronize{}, nil); !errors.Is(err, v1.ErrPermissionDenied) {
		t.Fatalf("Synchronize after a denied async launch = %v", err)
	}
	s.mu.Lock()
	if s.launches != 1 {
		t.Errorf("%d launches ran, want 1", s.launches)
	}
	s.mu.Unlock()

	// Refused on this side.
	if err := cl.Send(&v1.Memcpy{Dir: v1.DirDtoH, Size: 4}); !errors.Is(err, v1.ErrMalformed) {
		t.Errorf("async DtoH = %v, want Malformed", err)
	}
	if err := cl.Send(&v1.CreateBuffer{}); !errors.Is(err, v1.ErrMalformed) {
		t.Errorf("async CreateBuffer = %v, want Malformed", err)
	}
	if err := cl.Call(ctx, &v1.CreateBuffer{}, &v1.Data{}); !errors.Is(err, v1.ErrInvalidArgument) {
		t.Errorf("wrong reply type = %v, want InvalidArgument", err)
	}
	if err := cl.Call(ctx, &v1.Empty{}, nil); !errors.Is(err, v1.ErrInvalidArgument) {
		t.Errorf("calling a reply type = %v, want InvalidArgument", err)
	}
	// A handler answering with the wrong type is reported as Internal.
	if err := cl.Call(ctx, &v1.MemInfo{}, nil); !errors.Is(err, v1.ErrInternal) {
		t.Errorf("handler bug = %v, want Internal", err)
	}
	// The connection is still good.
	if err := cl.Call(ctx, &v1.Synchronize{}, nil); err != nil {
		t.Errorf("Synchronize at the end = %v", err)
	}
}

func TestHandshake(t *testing.T) {
	hello := func(mutate func(*v1.Hello)) v1.Message {
		h := v1.NewHello(v1.RoleClient, "good", "test")
		mutate(h)
		return h
	}
	tests := []struct {
		name  string
		first v1.Message
		want  error
	}{
		{"not hello", &v1.Synchronize{}, v1.ErrMalformed},
		{"other major", hello(func(h *v1.Hello) { h.Major = 2 }), v1.ErrVersionMismatch},
		{"control role on a session", hello(func(h *v1.Hello) { h.Role = v1.RoleControl }), v1.ErrPermissionDenied},
		{"bad token", hello(func(h *v1.Hello) { h.Token = "bad" }), v1.ErrPermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, served := startDriver(t, newFakeSession())
			cl := wire.NewClient(c)
			defer cl.Close()
			if err := cl.Call(context.Background(), tt.first, nil); !errors.Is(err, tt.want) {
				t.Fatalf("first call = %v, want %v", err, tt.want)
			}
			if err := <-served; err == nil {
				t.Errorf("Serve returned nil after a failed handshake")
			}
			<-cl.Done()
			if err := cl.Call(context.Background(), &v1.Synchronize{}, nil); !errors.Is(err, wire.ErrConnLost) {
				t.Errorf("call after the server closed = %v, want ErrConnLost", err)
			}
		})
	}
	// A second Hello is refused, and the connection stays up.
	cl := greeted(t, newFakeSession())
	if err := cl.Call(context.Background(), v1.NewHello(v1.RoleClient, "good", "again"), nil); !errors.Is(err, v1.ErrMalformed) {
		t.Errorf("second Hello = %v, want Malformed", err)
	}
	if err := cl.Call(context.Background(), &v1.Synchronize{}, nil); err != nil {
		t.Errorf("after a second Hello: %v", err)
	}
}

// readReply reads one frame and decodes it as an error reply, if it is one.
func readReply(t *testing.T, c *wire.Conn) (v1.Header, error) {
	t.Helper()
	f, err := c.ReadFrame()
	if err != nil {
		t.Fatalf("ReadFrame: %v", err)
	}
	if !f.Header.IsError() {
		return f.Header, nil
	}
	e := new(v1.Error)
	if err := v1.Unmarshal(f.Payload, e); err != nil {
		t.Fatal(err)
	}
	return f.Header, e
}

func TestServeRefusals(t *testing.T) {
	c, served := startDriver(t, newFakeSession())
	if err := c.WriteMessage(1, 0, v1.NewHello(v1.RoleClient, "good", "raw")); err != nil {
		t.Fatal(err)
	}
	if _, err := readReply(t, c); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		send func(id uint64) error
		want error
	}{
		{"unknown type", func(id uint64) error { return c.WriteFrame(v1.Header{Type: 99, ID: id}, nil) }, v1.ErrUnsupported},
		{"control request on a session", func(id uint64) error { return c.WriteMessage(id, 0, &v1.KillSession{}) }, v1.ErrPermissionDenied},
		{"manager request on a session", func(id uint64) error { return c.WriteMessage(id, 0, &v1.ListDevices{}) }, v1.ErrPermissionDenied},
		{"bad payload", func(id uint64) error {
			return c.WriteFrame(v1.Header{Type: v1.TypeMemset, ID: id}, v1.Marshal(&v1.Memset{ElemSize: 3}))
		}, v1.ErrMalformed},
		{"trailing byte", func(id uint64) error {
			return c.WriteFrame(v1.Header{Type: v1.TypeSynchronize, ID: id}, make([]byte, 9))
		}, v1.ErrMalformed},
		{"reply sent to a server", func(id uint64) error { return c.WriteMessage(id, v1.FlagReply, &v1.Empty{}) }, v1.ErrMalformed},
		{"fine", func(id uint64) error { return c.WriteMessage(id, 0, &v1.Synchronize{}) }, nil},
	}
	for i, tt := range tests {
		id := uint64(100 + i)
		if err := tt.send(id); err != nil {
			t.Fatalf("%s: send: %v", tt.name, err)
		}
		h, err := readReply(t, c)
		if h.ID != id || !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%s: reply to %d is %d, %v; want %v", tt.name, id, h.ID, err, tt.want)
		}
	}
	// Oversized: answered with Malformed under its ID, then the connection
	// closes. (A Conn will not send such a header, so write it raw.)
	hdr := v1.Header{Length: v1.MaxPayload + 1, Type: v1.TypeBufferWrite, ID: 501}
	if _, err := c.UnixConn().Write(hdr.Append(nil)); err != nil {
		t.Fatal(err)
	}
	h, err := readReply(t, c)
	if h.ID != 501 || !errors.Is(err, v1.ErrMalformed) {
		t.Fatalf("oversized: reply %d, %v", h.ID, err)
	}
	if err := <-served; !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Errorf("Serve = %v, want ErrFrameTooLarge", err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	cl := greeted(t, newFakeSession())
	const callers, calls = 12, 40
	var wg sync.WaitGroup
	errc := make(chan error, callers)
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				n := uint64(1 + (g*calls+i)%3000)
				var d v1.Data
				if err := cl.Call(context.Background(), &v1.BufferRead{Offset: uint64(g), Length: n}, &d); err != nil {
					errc <- err
					return
				}
				if uint64(len(d.Data)) != n || d.Data[0] != byte(g) || d.Data[n-1] != byte(g)+byte(n-1) {
					errc <- fmt.Errorf("caller %d call %d: got the wrong reply (%d bytes)", g, i, len(d.Data))
					return
				}
				if i%5 == 0 {
					if err := cl.Send(&v1.Launch{Kernel: 1}); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

func TestCallCancelled(t *testing.T) {
	s := newFakeSession()
	cl := greeted(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.entered // the server is inside WaitFence
		cancel()
	}()
	err := cl.Call(ctx, &v1.WaitFence{Fence: 1}, nil)
	if !errors.Is(err, v1.ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call = %v, want Timeout and context.Canceled", err)
	}
	close(s.release) // the late reply is dropped
	if err := cl.Call(context.Background(), &v1.Synchronize{}, nil); err != nil {
		t.Fatalf("call after a cancelled one: %v", err)
	}
	// A context that is already done sends nothing.
	if err := cl.Call(ctx, &v1.WaitFence{Fence: 1}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("call with a done context = %v", err)
	}
	// Requests are served in order: once this returns, a WaitFence sent
	// before it would have signalled.
	if err := cl.Call(context.Background(), &v1.Synchronize{}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.entered:
		t.Fatal("a request with a done context reached the server")
	default:
	}
}

func TestPeerGoneFailsCalls(t *testing.T) {
	cl := greeted(t, newFakeSession())
	err := cl.Call(context.Background(), &v1.WaitFence{Fence: 666}, nil) // the server closes its end
	if !errors.Is(err, wire.ErrConnLost) || !errors.Is(err, v1.ErrDeviceLost) {
		t.Fatalf("call when the server dies = %v, want ErrConnLost", err)
	}
	<-cl.Done()
	if err := cl.Send(&v1.Launch{Kernel: 1}); !errors.Is(err, v1.ErrDeviceLost) {
		t.Errorf("Send after = %v", err)
	}
}

func TestClientClose(t *testing.T) {
	cl := greeted(t, newFakeSession())
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Call(context.Background(), &v1.Synchronize{}, nil); !errors.Is(err, wire.ErrClosed) {
		t.Errorf("Call after Close = %v, want ErrClosed", err)
	}
	if !errors.Is(cl.Err(), wire.ErrClosed) {
		t.Errorf("Err = %v", cl.Err())
	}
}

// The whole session-open dance: the manager makes a socket pair, serves a
// driver on one end and passes the other to the client in SessionOpened.
func TestOpenSessionPassesConnection(t *testing.T) {
	ctx := context.Background()
	manager := func(ctx context.Context, req *wire.Request) (v1.Message, []int, error) {
		switch m := req.Msg.(type) {
		case *v1.Hello:
			return &v1.HelloReply{Major: v1.Major, Server: "manager"}, nil, nil
		case *v1.OpenSession:
			fd0, fd1, err := wire.SocketPair()
			if err != nil {
				return nil, nil, err
			}
			drv, err := wire.FromFD(fd1)
			if err != nil {
				return nil, nil, err
			}
			s := newFakeSession()
			srv := &wire.Server{Endpoint: v1.EndpointDriver, Rights: s.Rights, Handle: s.Handle}
			go srv.Serve(context.Background(), drv)
			return &v1.SessionOpened{SessionID: 1, Tenant: "t", Rights: m.Rights}, []int{fd0}, nil
		}
		return nil, nil, v1.ErrUnsupported
	}
	a, b := pair(t)
	go (&wire.Server{Endpoint: v1.EndpointManager, Handle: manager}).Serve(ctx, b)
	mc := wire.NewClient(a)
	defer mc.Close()
	if err := mc.Call(ctx, v1.NewHello(v1.RoleClient, "", "test"), nil); err != nil {
		t.Fatal(err)
	}
	var so v1.SessionOpened
	fds, err := mc.CallFDs(ctx, &v1.OpenSession{Rights: v1.RightAlloc}, &so, nil)
	if err != nil || len(fds) != 1 {
		t.Fatalf("OpenSession: %v, %d fds", err, len(fds))
	}
	sc, err := wire.FromFD(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	sess := wire.NewClient(sc)
	defer sess.Close()
	if err := sess.Call(ctx, v1.NewHello(v1.RoleClient, "good", "test"), nil); err != nil {
		t.Fatal(err)
	}
	var buf v1.BufferCreated
	if err := sess.Call(ctx, &v1.CreateBuffer{Size: 10}, &buf); err != nil || buf.Size != 10 {
		t.Fatalf("CreateBuffer on the passed session: %+v, %v", buf, err)
	}
}

func ExampleClient() {
	ctx := context.Background()
	a, b, _ := wire.Pair()

	// The server side: a driver session that answers Hello and CreateBuffer.
	srv := &wire.Server{
		Endpoint: v1.EndpointDriver,
		Handle: func(ctx context.Context, req *wire.Request) (v1.Message, []int, error) {
			switch m := req.Msg.(type) {
			case *v1.Hello:
				return &v1.HelloReply{Major: v1.Major, Minor: v1.Minor, Server: "example", Backend: "sim"}, nil, nil
			case *v1.CreateBuffer:
				return &v1.BufferCreated{Handle: 1, Addr: 0x10000, Size: m.Size}, nil, nil
			}
			return nil, nil, v1.Errorf(v1.CodeUnsupported, "%v", req.Header.Type)
		},
	}
	go srv.Serve(ctx, b)

	// The client side.
	cl := wire.NewClient(a)
	defer cl.Close()
	var hr v1.HelloReply
	if err := cl.Call(ctx, v1.NewHello(v1.RoleClient, "", "example"), &hr); err != nil {
		panic(err)
	}
	var buf v1.BufferCreated
	if err := cl.Call(ctx, &v1.CreateBuffer{Size: 4096}, &buf); err != nil {
		panic(err)
	}
	err := cl.Call(ctx, &v1.LoadProgram{Image: []byte("...")}, nil)
	fmt.Println(hr.Server, buf.Size, errors.Is(err, v1.ErrUnsupported))
	// Output: example 4096 true
}

func BenchmarkCallRoundTrip(b *testing.B) {
	cl := greeted(b, newFakeSession())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := cl.Call(ctx, &v1.Synchronize{}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// serveCalls serves srv on a fresh connection, says hello, sends each of
// sent as a call and returns once Serve has ended with the connection.
func serveCalls(t *testing.T, srv *wire.Server, sent []v1.Message) {
	t.Helper()
	a, b := pair(t)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), b) }()
	cl := wire.NewClient(a)
	ctx := context.Background()
	var hr v1.HelloReply
	if err := cl.Call(ctx, v1.NewHello(v1.RoleClient, "", "test"), &hr); err != nil {
		t.Fatal(err)
	}
	for _, m := range sent {
		if err := cl.Call(ctx, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestServeReuse: requests of a type the handler lets Serve reuse are
// decoded into one message, every field from its own request (none left from
// the one before); other types get a message each.
func TestServeReuse(t *testing.T) {
	type seen struct {
		msg    v1.Message
		launch v1.Launch // a copy, as the request said
	}
	var got []seen
	srv := &wire.Server{Endpoint: v1.EndpointDriver,
		Handle: func(ctx context.Context, req *wire.Request) (v1.Message, []int, error) {
			switch m := req.Msg.(type) {
			case *v1.Hello:
				return &v1.HelloReply{Major: v1.Major, Minor: v1.Minor}, nil, nil
			case *v1.Launch:
				l := *m
				l.Params = append([]byte(nil), m.Params...)
				got = append(got, seen{m, l})
			default:
				got = append(got, seen{msg: m})
			}
			return nil, nil, nil
		},
		Reuse: func(t v1.Type) bool { return t == v1.TypeLaunch },
	}
	sent := []v1.Message{
		&v1.Launch{Kernel: 1, Stream: 2, Grid: [3]uint32{3, 4, 5}, Block: [3]uint32{6, 7, 8}, SharedMem: 9, Params: []byte{1, 2, 3}},
		&v1.Launch{Kernel: 10, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}},
		&v1.Synchronize{},
		&v1.Synchronize{},
		&v1.Launch{Kernel: 11, Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{32, 1, 1}, Params: []byte{4}},
	}
	serveCalls(t, srv, sent)
	if len(got) != len(sent) {
		t.Fatalf("handled %d requests, want %d", len(got), len(sent))
	}
	for i, m := range sent {
		if l, ok := m.(*v1.Launch); ok {
			if have := got[i].launch; fmt.Sprint(have) != fmt.Sprint(*l) {
				t.Errorf("request %d decoded as %+v, want %+v", i, have, *l)
			}
		}
	}
	if got[0].msg != got[1].msg || got[1].msg != got[4].msg {
		t.Errorf("launches were decoded into different messages: %p %p %p", got[0].msg, got[1].msg, got[4].msg)
	}
	if got[2].msg == got[3].msg {
		t.Errorf("synchronizes (not reused) shared a message")
	}
}

// TestServeReuseTwoTypes: with two types to reuse, each keeps its own
// message when their requests alternate (a service's launch, then its
// synchronize), every field from its own request.
func TestServeReuseTwoTypes(t *testing.T) {
	var got []v1.Message
	var streams []uint64
	srv := &wire.Server{Endpoint: v1.EndpointDriver,
		Handle: func(ctx context.Context, req *wire.Request) (v1.Message, []int, error) {
			switch m := req.Msg.(type) {
			case *v1.Hello:
				return &v1.HelloReply{Major: v1.Major, Minor: v1.Minor}, nil, nil
			case *v1.Launch:
				got, streams = append(got, m), append(streams, m.Stream)
			case *v1.Synchronize:
				got, streams = append(got, m), append(streams, m.Stream)
			}
			return nil, nil, nil
		},
		Reuse: func(t v1.Type) bool { return t == v1.TypeLaunch || t == v1.TypeSynchronize },
	}
	one := [3]uint32{1, 1, 1}
	sent := []v1.Message{
		&v1.Launch{Kernel: 1, Stream: 7, Grid: one, Block: one},
		&v1.Synchronize{Stream: 5},
		&v1.Launch{Kernel: 1, Grid: one, Block: one},
		&v1.Synchronize{},
		&v1.Launch{Kernel: 1, Stream: 3, Grid: one, Block: one},
	}
	serveCalls(t, srv, sent)
	if have, want := fmt.Sprint(streams), "[7 5 0 0 3]"; have != want {
		t.Errorf("streams decoded %s, want %s", have, want)
	}
	if len(got) != len(sent) {
		t.Fatalf("handled %d requests, want %d", len(got), len(sent))
	}
	if got[0] != got[2] || got[2] != got[4] {
		t.Errorf("launches were decoded into different messages: %p %p %p", got[0], got[2], got[4])
	}
	if got[1] != got[3] {
		t.Errorf("synchronizes were decoded into different messages: %p %p", got[1], got[3])
	}
}

// TestAnswered: Server.Answered runs once per request, after its answer (or
// its handling, for one that takes none, refused or failed ones included),
// before the next request is served.
func TestAnswered(t *testing.T) {
	ctx := context.Background()
	s := newFakeSession()
	a, b := pair(t)
	var answered atomic.Int64
	srv := &wire.Server{Endpoint: v1.EndpointDriver, Rights: s.Rights, Handle: s.Handle, Deferred: s.Defer,
		Answered: func() { answered.Add(1) }}
	go srv.Serve(ctx, b)
	cl := wire.NewClient(a)
	t.Cleanup(func() { cl.Close() })
	var hr v1.HelloReply
	if err := cl.Call(ctx, v1.NewHello(v1.RoleClient, "good", "test"), &hr); err != nil {
		t.Fatal(err)
	}
	var buf v1.BufferCreated
	if err := cl.Call(ctx, &v1.CreateBuffer{Size: 64}, &buf); err != nil {
		t.Fatal(err)
	}
	if err := cl.Send(&v1.Launch{Kernel: 0}); err != nil { // no answer, fails
		t.Fatal(err)
	}
	if err := cl.Call(ctx, &v1.Synchronize{}, nil); !errors.Is(err, v1.ErrInvalidHandle) {
		t.Fatalf("Synchronize = %v, want the deferred InvalidHandle", err)
	}
	// Four requests were served, the last answered: Answered ran for the
	// first three before the fourth was served, and may be running for it.
	if n := answered.Load(); n < 3 || n > 4 {
		t.Fatalf("Answered ran %d times for 4 requests", n)
	}
	if err := cl.Call(ctx, &v1.CreateBuffer{Size: 64}, &buf); err != nil {
		t.Fatal(err)
	}
	if n := answered.Load(); n < 4 || n > 5 {
		t.Fatalf("Answered ran %d times for 5 requests", n)
	}
}

// A write that meets a socket whose peer stopped reading stops the client at
// once, as its reader would at the connection's end: the call fails with
// ErrConnLost, Err reports the loss and Done is closed, although the peer
// has not closed its end (the reader has seen no end).
func TestClientStopsOnBrokenWrite(t *testing.T) {
	fd0, fd1, err := wire.SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd1)
	if err := unix.Shutdown(fd1, unix.SHUT_RD); err != nil {
		t.Fatal(err)
	}
	c, err := wire.FromFD(fd0)
	if err != nil {
		t.Fatal(err)
	}
	cl := wire.NewClient(c)
	defer cl.Close()
	if err := cl.Call(context.Background(), &v1.Synchronize{}, nil); !errors.Is(err, wire.ErrConnLost) {
		t.Fatalf("call to a peer that stopped reading = %v, want ErrConnLost", err)
	}
	if err := cl.Err(); !errors.Is(err, wire.ErrConnLost) {
		t.Errorf("Err() = %v after the write failed, want ErrConnLost", err)
	}
	select {
	case <-cl.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the client did not stop")
	}
}
