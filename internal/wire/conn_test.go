package wire_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sync"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/api/v1/v1test"
	"github.com/gpuos/gpuos/internal/wire"
	"golang.org/x/sys/unix"
)

func pair(t testing.TB) (*wire.Conn, *wire.Conn) {
	t.Helper()
	a, b, err := wire.Pair()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// rawPair returns a Conn and the raw descriptor of its peer, for sending bytes
// and descriptors that a Conn would refuse to send.
func rawPair(t testing.TB) (*wire.Conn, int) {
	t.Helper()
	fd0, fd1, err := wire.SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	c, err := wire.FromFD(fd0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); unix.Close(fd1) })
	return c, fd1
}

func pipe(t testing.TB) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// openFDs counts this process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

func frameBytes(h v1.Header, payload []byte) []byte {
	h.Length = uint32(len(payload))
	return append(h.Append(nil), payload...)
}

func sendRaw(t testing.TB, fd int, b []byte, fds ...int) {
	t.Helper()
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if err := unix.Sendmsg(fd, b, oob, nil, 0); err != nil {
		t.Fatal(err)
	}
}

// Every message type survives a trip through a socket pair and the codec.
func TestEveryMessageThroughSocket(t *testing.T) {
	a, b := pair(t)
	_, w := pipe(t)
	samples := v1test.Samples()
	wfd := int(w.Fd())
	done := make(chan struct{})
	defer func() { <-done }()
	go func() {
		defer close(done)
		for i, m := range samples {
			var fds []int
			if info, _ := v1.Lookup(m.Type()); info.FDs > 0 {
				fds = []int{wfd}
			}
			if err := a.WriteMessage(uint64(i), v1test.Flags(m), m, fds...); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i, want := range samples {
		f, err := b.ReadFrame()
		if err != nil {
			t.Fatalf("frame %d (%v): %v", i, want.Type(), err)
		}
		info, err := v1.CheckHeader(f.Header)
		if err != nil {
			t.Fatalf("%v: %v", want.Type(), err)
		}
		if f.Header.ID != uint64(i) || len(f.FDs) != info.FDs {
			t.Errorf("%v: id %d, %d fds", want.Type(), f.Header.ID, len(f.FDs))
		}
		f.CloseFDs()
		got := info.New()
		if err := v1.Unmarshal(f.Payload, got); err != nil {
			t.Fatalf("%v: %v", want.Type(), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: have %+v, want %+v", want.Type(), got, want)
		}
	}
}

// A pipe's read end travels with a frame; what is written into the pipe is
// read through the received descriptor.
func TestPassPipe(t *testing.T) {
	a, b := pair(t)
	r, w := pipe(t)
	if err := a.WriteMessage(1, v1.FlagReply.WithFDs(1), &v1.SessionOpened{SessionID: 5}, int(r.Fd())); err != nil {
		t.Fatal(err)
	}
	f, err := b.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	if len(f.FDs) != 1 {
		t.Fatalf("received %d descriptors, want 1", len(f.FDs))
	}
	got := os.NewFile(uintptr(f.FDs[0]), "received")
	defer got.Close()
	if _, err := w.Write([]byte("through the pipe")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := got.Read(buf)
	if err != nil || string(buf[:n]) != "through the pipe" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if flags, err := unix.FcntlInt(uintptr(f.FDs[0]), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("received descriptor not close-on-exec: %#x, %v", flags, err)
	}
}

// Frames with and without descriptors, small and larger than the socket
// buffer, interleave; each frame gets exactly its own descriptors.
func TestFDsAttachToTheirFrames(t *testing.T) {
	a, b := pair(t)
	const n = 40
	pipes := make([][2]*os.File, n)
	for i := range pipes {
		pipes[i][0], pipes[i][1] = pipe(t)
	}
	errc := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			size := 10
			if i%7 == 3 {
				size = 600 << 10 // larger than the socket buffer: sent in pieces
			}
			payload := bytes.Repeat([]byte{byte(i)}, size)
			h := v1.Header{Type: v1.TypeData, Flags: v1.FlagReply, ID: uint64(i)}
			var err error
			if i%3 == 0 {
				err = a.WriteFrame(h, payload, int(pipes[i][0].Fd()))
			} else {
				err = a.WriteFrame(h, payload)
			}
			if err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for i := 0; i < n; i++ {
		f, err := b.ReadFrame()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.Header.ID != uint64(i) || len(f.Payload) == 0 || f.Payload[0] != byte(i) || f.Payload[len(f.Payload)-1] != byte(i) {
			t.Fatalf("frame %d: id %d, %d bytes", i, f.Header.ID, len(f.Payload))
		}
		wantFDs := 0
		if i%3 == 0 {
			wantFDs = 1
		}
		if len(f.FDs) != wantFDs {
			t.Fatalf("frame %d: %d descriptors, want %d", i, len(f.FDs), wantFDs)
		}
		if wantFDs == 1 {
			// The descriptor is frame i's pipe: a byte written to its write end
			// comes out of it.
			pipes[i][1].Write([]byte{byte(i)})
			var one [1]byte
			if _, err := unix.Read(f.FDs[0], one[:]); err != nil || one[0] != byte(i) {
				t.Fatalf("frame %d: descriptor reads %v, %v", i, one, err)
			}
		}
		f.CloseFDs()
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// Descriptors that arrive with a frame that claims none are closed.
func TestStrayFDsAreClosed(t *testing.T) {
	c, peer := rawPair(t)
	r, _ := pipe(t)
	before := openFDs(t)
	stray, err := unix.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	sendRaw(t, peer, frameBytes(v1.Header{Type: v1.TypeEmpty, Flags: v1.FlagReply, ID: 1}, nil), stray)
	unix.Close(stray)
	sendRaw(t, peer, frameBytes(v1.Header{Type: v1.TypeEmpty, Flags: v1.FlagReply, ID: 2}, nil))
	for id := uint64(1); id <= 2; id++ {
		f, err := c.ReadFrame()
		if err != nil || f.Header.ID != id || len(f.FDs) != 0 {
			t.Fatalf("frame %d: %+v, %v", id, f, err)
		}
	}
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open after a stray was received, %d before", after, before)
	}
}

func TestFDMismatch(t *testing.T) {
	r, _ := pipe(t)
	fd := int(r.Fd())
	tests := []struct {
		name   string
		claims int
		sends  []int
	}{
		{"claimed, none sent", 1, nil},
		{"claims two, one sent", 2, []int{fd}},
		{"claims one, two sent", 1, []int{fd, fd}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, peer := rawPair(t)
			before := openFDs(t)
			sendRaw(t, peer, frameBytes(v1.Header{Type: v1.TypeData, Flags: v1.FlagReply.WithFDs(tt.claims)}, []byte{0, 0, 0, 0}), tt.sends...)
			_, err := c.ReadFrame()
			if !errors.Is(err, wire.ErrBadFDs) || !errors.Is(err, v1.ErrMalformed) {
				t.Fatalf("ReadFrame = %v, want ErrBadFDs", err)
			}
			if _, again := c.ReadFrame(); !errors.Is(again, wire.ErrBadFDs) {
				t.Errorf("second ReadFrame = %v, want the same error", again)
			}
			if after := openFDs(t); after != before {
				t.Errorf("%d descriptors open, %d before", after, before)
			}
		})
	}
}

func TestTooManyFDsInOneMessage(t *testing.T) {
	c, peer := rawPair(t)
	r, _ := pipe(t)
	fds := make([]int, v1.MaxFDs+5)
	for i := range fds {
		fds[i] = int(r.Fd())
	}
	before := openFDs(t)
	sendRaw(t, peer, frameBytes(v1.Header{Type: v1.TypeData, Flags: v1.FlagReply.WithFDs(v1.MaxFDs)}, []byte{0, 0, 0, 0}), fds...)
	if _, err := c.ReadFrame(); !errors.Is(err, wire.ErrBadFDs) {
		t.Fatalf("ReadFrame = %v, want ErrBadFDs", err)
	}
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open, %d before", after, before)
	}
	a, _ := pair(t)
	if err := a.WriteFrame(v1.Header{Type: v1.TypeData}, nil, fds...); !errors.Is(err, wire.ErrTooManyFDs) {
		t.Errorf("WriteFrame with %d fds = %v, want ErrTooManyFDs", len(fds), err)
	}
}

func TestOversizedFrame(t *testing.T) {
	c, peer := rawPair(t)
	hdr := v1.Header{Length: v1.MaxPayload + 1, Type: v1.TypeBufferWrite, ID: 77}.Append(nil)
	sendRaw(t, peer, hdr)
	f, err := c.ReadFrame()
	if !errors.Is(err, wire.ErrFrameTooLarge) || !errors.Is(err, v1.ErrMalformed) {
		t.Fatalf("ReadFrame = %v, want ErrFrameTooLarge", err)
	}
	if f.Header.ID != 77 || f.Header.Type != v1.TypeBufferWrite {
		t.Errorf("header of the refused frame: %+v", f.Header)
	}
	if _, err := c.ReadFrame(); !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Errorf("later ReadFrame = %v, want the sticky error", err)
	}

	// A lowered limit applies the same way.
	a, b := pair(t)
	b.SetMaxPayload(100)
	if err := a.WriteMessage(1, 0, &v1.BufferWrite{Data: make([]byte, 200)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadFrame(); !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Errorf("ReadFrame over a 100-byte limit = %v, want ErrFrameTooLarge", err)
	}
	if err := a.WriteFrame(v1.Header{Type: v1.TypeData}, make([]byte, v1.MaxPayload+1)); !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Errorf("WriteFrame too large = %v", err)
	}
}

func TestMalformedHeader(t *testing.T) {
	c, peer := rawPair(t)
	sendRaw(t, peer, frameBytes(v1.Header{Type: v1.TypeLaunch, Flags: 1 << 10}, nil))
	if _, err := c.ReadFrame(); !errors.Is(err, v1.ErrMalformed) {
		t.Fatalf("ReadFrame = %v, want Malformed", err)
	}
}

func TestPeerClosesMidFrame(t *testing.T) {
	full := frameBytes(v1.Header{Type: v1.TypeData, Flags: v1.FlagReply, ID: 3}, v1.Marshal(&v1.Data{Data: make([]byte, 100)}))
	tests := []struct {
		name string
		sent []byte
		want error
	}{
		{"nothing", nil, io.EOF},
		{"whole frame then close", full, nil},
		{"part of the header", full[:9], io.ErrUnexpectedEOF},
		{"header only", full[:v1.HeaderSize], io.ErrUnexpectedEOF},
		{"part of the payload", full[:v1.HeaderSize+50], io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, peer := rawPair(t)
			if len(tt.sent) > 0 {
				sendRaw(t, peer, tt.sent)
			}
			unix.Close(peer)
			f, err := c.ReadFrame()
			if tt.want == nil {
				if err != nil || len(f.Payload) != 104 {
					t.Fatalf("ReadFrame = %d bytes, %v", len(f.Payload), err)
				}
				_, err = c.ReadFrame()
				tt.want = io.EOF
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("ReadFrame = %v, want %v", err, tt.want)
			}
			if tt.want == io.ErrUnexpectedEOF && !errors.Is(err, wire.ErrConnLost) {
				t.Errorf("error %v does not match ErrConnLost", err)
			}
		})
	}
}

// Many goroutines write frames of mixed sizes at once; every frame arrives
// whole and each writer's frames arrive in its order.
func TestConcurrentWriters(t *testing.T) {
	a, b := pair(t)
	const writers, perWriter = 8, 60
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				size := 1 + (i*7919+w*104729)%5000
				if i%17 == 5 {
					size = 300 << 10
				}
				data := make([]byte, size)
				for j := range data {
					data[j] = byte(w*31 + i + j)
				}
				var err error
				if i%2 == 0 {
					err = a.WriteMessage(uint64(w)<<32|uint64(i), v1.FlagReply, &v1.Data{Data: data})
				} else {
					err = a.WriteFrame(v1.Header{Type: v1.TypeData, Flags: v1.FlagReply, ID: uint64(w)<<32 | uint64(i)}, v1.Marshal(&v1.Data{Data: data}))
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	next := make([]int, writers)
	for n := 0; n < writers*perWriter; n++ {
		f, err := b.ReadFrame()
		if err != nil {
			t.Fatalf("frame %d: %v", n, err)
		}
		w, i := int(f.Header.ID>>32), int(uint32(f.Header.ID))
		if w >= writers || i != next[w] {
			t.Fatalf("frame id %#x out of order (want writer %d frame %d)", f.Header.ID, w, next[w])
		}
		next[w]++
		var d v1.Data
		if err := v1.Unmarshal(f.Payload, &d); err != nil {
			t.Fatal(err)
		}
		for j, c := range d.Data {
			if c != byte(w*31+i+j) {
				t.Fatalf("writer %d frame %d: byte %d corrupted", w, i, j)
			}
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

func TestMaxPayloadFrame(t *testing.T) {
	a, b := pair(t)
	data := make([]byte, v1.MaxPayload-4)
	for i := range data {
		data[i] = byte(i * 13)
	}
	errc := make(chan error, 1)
	go func() { errc <- a.WriteMessage(9, v1.FlagReply, &v1.Data{Data: data}) }()
	f, err := b.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	var d v1.Data
	if err := v1.Unmarshal(f.Payload, &d); err != nil || !bytes.Equal(d.Data, data) {
		t.Fatalf("16 MiB frame: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := a.WriteMessage(9, v1.FlagReply, &v1.Data{Data: make([]byte, v1.MaxPayload)}); !errors.Is(err, v1.ErrMalformed) {
		t.Errorf("payload over MaxPayload: %v, want Malformed", err)
	}
}

func TestWriteMessageRefusesBadFrames(t *testing.T) {
	a, b := pair(t)
	if err := a.WriteMessage(1, 0, &v1.Empty{}); !errors.Is(err, v1.ErrMalformed) {
		t.Errorf("reply type without FlagReply: %v", err)
	}
	if err := a.WriteMessage(1, 0, &v1.Launch{}, 0); !errors.Is(err, v1.ErrMalformed) {
		t.Errorf("launch with a descriptor: %v", err)
	}
	// Nothing reached the peer: the next frame is the first it reads.
	if err := a.WriteMessage(2, v1.FlagNoReply, &v1.Launch{Kernel: 1}); err != nil {
		t.Fatal(err)
	}
	if f, err := b.ReadFrame(); err != nil || f.Header.ID != 2 {
		t.Fatalf("ReadFrame = %+v, %v", f.Header, err)
	}
}

func TestPeerCred(t *testing.T) {
	a, _ := pair(t)
	cred, err := a.PeerCred()
	if err != nil {
		t.Fatal(err)
	}
	want := wire.Cred{PID: int32(os.Getpid()), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	if cred != want {
		t.Errorf("PeerCred = %+v, want %+v", cred, want)
	}
}

func TestFromFDRefusesOtherDescriptors(t *testing.T) {
	r, _ := pipe(t)
	pfd, err := unix.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	dgram, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dgram[1])
	before := openFDs(t)
	for _, fd := range []int{pfd, dgram[0]} {
		if c, err := wire.FromFD(fd); !errors.Is(err, wire.ErrNotStream) || !errors.Is(err, v1.ErrInvalidArgument) {
			t.Errorf("FromFD(%d) = %v, %v; want ErrNotStream", fd, c, err)
		}
	}
	if after := openFDs(t); after != before-2 {
		t.Errorf("FromFD did not close refused descriptors: %d open, %d before", after, before)
	}
}

func TestReadAfterClose(t *testing.T) {
	a, _ := pair(t)
	done := make(chan error, 1)
	go func() { _, err := a.ReadFrame(); done <- err }()
	a.Close()
	if err := <-done; err == nil {
		t.Fatal("ReadFrame on a closed Conn returned no error")
	}
}

func ExamplePair() {
	a, b, err := wire.Pair()
	if err != nil {
		panic(err)
	}
	defer a.Close()
	defer b.Close()

	r, w, _ := os.Pipe()
	defer r.Close()
	// Pass the pipe's write end along with a frame.
	if err := a.WriteMessage(1, v1.FlagReply.WithFDs(1), &v1.SessionOpened{SessionID: 7}, int(w.Fd())); err != nil {
		panic(err)
	}
	w.Close()

	f, err := b.ReadFrame()
	if err != nil {
		panic(err)
	}
	var so v1.SessionOpened
	if err := v1.Unmarshal(f.Payload, &so); err != nil {
		panic(err)
	}
	got := os.NewFile(uintptr(f.FDs[0]), "pipe")
	fmt.Fprint(got, "hi")
	got.Close()
	msg, _ := io.ReadAll(r)
	fmt.Println(f.Header.Type, so.SessionID, string(msg))
	// Output: SessionOpened 7 hi
}

func BenchmarkWriteLaunch(b *testing.B) {
	a, peer := rawPair(b)
	done := make(chan struct{})
	go func() { // drain without allocating
		defer close(done)
		buf := make([]byte, 1<<16)
		for {
			if n, err := unix.Read(peer, buf); err != nil || n == 0 {
				return
			}
		}
	}()
	b.Cleanup(func() { unix.Shutdown(peer, unix.SHUT_RDWR); <-done }) // before peer is closed
	m := &v1.Launch{Kernel: 12, Grid: [3]uint32{1024, 1, 1}, Block: [3]uint32{256, 1, 1}, Params: make([]byte, 32)}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := a.WriteMessage(uint64(i), v1.FlagNoReply, m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadLaunch(b *testing.B) {
	c, peer := rawPair(b)
	var enc v1.Encoder
	m := &v1.Launch{Kernel: 12, Grid: [3]uint32{1024, 1, 1}, Block: [3]uint32{256, 1, 1}, Params: make([]byte, 32)}
	for i := 0; i < 256; i++ {
		if err := enc.PutFrame(uint64(i), v1.FlagNoReply, m); err != nil {
			b.Fatal(err)
		}
	}
	batch := enc.Bytes()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := unix.Write(peer, batch); err != nil {
				return
			}
		}
	}()
	b.Cleanup(func() { unix.Shutdown(peer, unix.SHUT_RDWR); <-done }) // before peer is closed
	var got v1.Launch
	b.ReportAllocs()
	for b.Loop() {
		f, err := c.ReadFrame()
		if err != nil {
			b.Fatal(err)
		}
		if err := v1.Unmarshal(f.Payload, &got); err != nil {
			b.Fatal(err)
		}
	}
}
