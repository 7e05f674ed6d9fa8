package client_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/ring"
	"github.com/gpuos/gpuos/internal/testenv"
	"github.com/gpuos/gpuos/internal/wire"
)

// smallStaging makes staging cheap to exhaust: four 64 KiB slots, copies over
// 4 KiB staged.
var smallStaging = client.HotPath{Staging: 256 << 10, StagingChunk: 64 << 10, InlineMax: 4 << 10}

// onRing asks for the ring transport whatever $GPUOS_TRANSPORT says.
var onRing = client.Options{Transport: client.TransportRing, HotPath: smallStaging}

func TestTransportChoice(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	tests := []struct {
		opts client.Options
		env  string
		want string
	}{
		{client.Options{}, "", client.TransportRing},
		{client.Options{Transport: client.TransportSocket}, "", client.TransportSocket},
		{client.Options{}, client.TransportSocket, client.TransportSocket},
		{client.Options{Transport: client.TransportRing}, client.TransportSocket, client.TransportRing},
	}
	for _, tt := range tests {
		t.Setenv("GPUOS_TRANSPORT", tt.env)
		s := env.Session(t, env.Dial(t, tt.opts), client.SessionOptions{})
		if got := s.Transport(); got != tt.want {
			t.Errorf("options %q, $GPUOS_TRANSPORT %q: transport %s, want %s", tt.opts.Transport, tt.env, got, tt.want)
		}
	}
	t.Setenv("GPUOS_TRANSPORT", "")
	cl := env.Dial(t, client.Options{Transport: "carrier-pigeon"})
	if _, err := cl.OpenSession(ctx(t), client.SessionOptions{}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("unknown transport: %v, want ErrInvalidArgument", err)
	}
	t.Setenv("GPUOS_STAGING_CHUNK", "lots")
	if _, err := env.Dial(t, client.Options{}).OpenSession(ctx(t), client.SessionOptions{}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("bad $GPUOS_STAGING_CHUNK: %v, want ErrInvalidArgument", err)
	}
}

func randBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Copies of every size class land intact on both transports: inline, one
// staging slot, many slots with reuse, and more than the staging area.
func TestCopiesBothTransports(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	for _, transport := range []string{client.TransportSocket, client.TransportRing} {
		t.Run(transport, func(t *testing.T) {
			s := env.Session(t, env.Dial(t, client.Options{Transport: transport, HotPath: smallStaging}), client.SessionOptions{})
			c := ctx(t)
			buf, err := s.CreateBuffer(c, 4<<20)
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range []int{0, 1, 4 << 10, 4<<10 + 1, 64 << 10, 64<<10 + 3, 300 << 10, 3<<20 + 5} {
				src := randBytes(n, uint64(i))
				off := uint64(i * 8)
				if err := s.CopyToDevice(buf.At(off), src, nil); err != nil {
					t.Fatalf("copy %d bytes to device: %v", n, err)
				}
				got := make([]byte, n)
				if err := s.CopyFromDevice(c, got, buf.At(off), nil); err != nil {
					t.Fatalf("copy %d bytes from device: %v", n, err)
				}
				if !bytes.Equal(got, src) {
					t.Fatalf("%d bytes through CopyToDevice/CopyFromDevice came back different", n)
				}
				src = randBytes(n, uint64(100+i))
				if err := buf.Write(c, off, src); err != nil {
					t.Fatalf("write %d bytes: %v", n, err)
				}
				if err := buf.Read(c, off, got); err != nil {
					t.Fatalf("read %d bytes: %v", n, err)
				}
				if !bytes.Equal(got, src) {
					t.Fatalf("%d bytes through Write/Read came back different", n)
				}
			}
			if err := s.Synchronize(c); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Goroutines copying at once share four slots without deadlock or mix-up.
func TestStagingShared(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, onRing), client.SessionOptions{})
	c := ctx(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf, err := s.CreateBuffer(c, 1<<20)
			if err != nil {
				t.Error(err)
				return
			}
			for i := range 5 {
				src := randBytes(1<<20-i, uint64(g*10+i))
				if err := s.CopyToDevice(buf.At(0), src, nil); err != nil {
					t.Error(err)
					return
				}
				got := make([]byte, len(src))
				if err := s.CopyFromDevice(c, got, buf.At(0), nil); err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(got, src) {
					t.Errorf("goroutine %d copy %d came back different", g, i)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Asynchronous work is done before a synchronous call after it is answered:
// the session's requests are one ordered stream on rings too.
func TestAsyncThenSyncOrdered(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, onRing), client.SessionOptions{})
	if s.Transport() != client.TransportRing {
		t.Fatalf("transport %s", s.Transport())
	}
	c := ctx(t)
	buf, err := s.CreateBuffer(c, 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		var last []byte
		for i := range 200 {
			n := 8 // inline
			if i%50 == 49 {
				n = 100 << 10 // staged
			}
			last = randBytes(n, uint64(round*1000+i))
			if err := s.CopyToDevice(buf.At(0), last, nil); err != nil {
				t.Fatal(err)
			}
			if err := s.Memset(buf.At(200<<10), uint32(i), 4, 16, nil); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]byte, len(last))
		if err := buf.Read(c, 0, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, last) {
			t.Fatalf("round %d: a read after 200 asynchronous copies saw an older one", round)
		}
		word := make([]byte, 4)
		if err := buf.Read(c, 200<<10+60, word); err != nil || binary.LittleEndian.Uint32(word) != 199 {
			t.Fatalf("round %d: memset value %d, %v; want the last, 199", round, binary.LittleEndian.Uint32(word), err)
		}
	}
}

// Errors of staged copies: bad references come back from the call, as the
// driver refuses them before queueing, and leave every slot usable.
func TestStagedCopyErrors(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, onRing), client.SessionOptions{})
	c := ctx(t)
	buf, err := s.CreateBuffer(c, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 300<<10)
	for range 10 { // more failures than slots
		if err := s.CopyToDevice(buf.At(1<<20-100), big, nil); !errors.Is(err, client.ErrInvalidArgument) {
			t.Fatalf("staged copy past the buffer's end: %v, want ErrInvalidArgument", err)
		}
		if err := s.CopyFromDevice(c, big, client.Addr(0x10), nil); err == nil {
			t.Fatal("staged copy from an address outside the window succeeded")
		}
	}
	if err := s.CopyToDevice(buf.At(0), big, nil); err != nil {
		t.Fatalf("staging unusable after refused copies: %v", err)
	}
	if err := s.Synchronize(c); err != nil {
		t.Fatal(err)
	}
}

// ---- attacks through the raw protocol -------------------------------------------

// rawSession opens a session with the wire protocol, on rings if asked, so a
// test can send what the client library never would.
func rawSession(t *testing.T, env *testenv.Env, rings bool) (*wire.Client, *ring.Shm) {
	t.Helper()
	c := ctx(t)
	conn, err := wire.Dial(c, env.Socket)
	if err != nil {
		t.Fatal(err)
	}
	mgr := wire.NewClient(conn)
	t.Cleanup(func() { mgr.Close() })
	if err := mgr.Call(c, v1.NewHello(v1.RoleClient, "", "raw"), nil); err != nil {
		t.Fatal(err)
	}
	var so v1.SessionOpened
	fds, err := mgr.CallFDs(c, &v1.OpenSession{}, &so, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := wire.FromFD(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	s := wire.NewClient(sc)
	t.Cleanup(func() { s.Close() })
	if err := s.Call(c, v1.NewHello(v1.RoleClient, "", "raw"), nil); err != nil {
		t.Fatal(err)
	}
	if !rings {
		return s, nil
	}
	var ro v1.RingOpened
	if fds, err = s.CallFDs(c, &v1.OpenRing{SubmitBytes: 64 << 10}, &ro, nil); err != nil {
		t.Fatal(err)
	}
	shm, err := ring.Open(fds[0], wire.RingBytes(int(ro.SubmitBytes), int(ro.CompleteBytes)), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UseRings(shm.Bytes(), int(ro.SubmitBytes), int(ro.CompleteBytes), ring.Options{}, func() { shm.Close() }); err != nil {
		t.Fatal(err)
	}
	return s, shm // mapped until s stops
}

// badDirection is a StagedCopy whose direction the codec refuses.
type badDirection struct{ v1.StagedCopy }

func (m *badDirection) Encode(e *v1.Encoder) {
	m.StagedCopy.Encode(e)
	b := e.Bytes()
	b[len(b)-1-4-8-8-16-1] = byte(v1.DirDtoD) // the Dir byte: before Dev, Offset, Size, Gen, Wait
}

func TestStagingBoundsAttacks(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	bystander := env.Session(t, env.Dial(t, client.Options{}), client.SessionOptions{})
	c := ctx(t)
	keep, _ := bystander.CreateBuffer(c, 4096)
	keep.Write(c, 0, []byte("still here"))
	for _, rings := range []bool{false, true} {
		t.Run(fmt.Sprintf("rings=%v", rings), func(t *testing.T) {
			s, _ := rawSession(t, env, rings)
			var bc v1.BufferCreated
			if err := s.Call(c, &v1.CreateBuffer{Size: 1 << 20}, &bc); err != nil {
				t.Fatal(err)
			}
			if err := s.Call(c, &v1.StagedCopy{Dir: v1.DirHtoD, Dev: v1.Ref{Buffer: bc.Handle}, Size: 1}, nil); !errors.Is(err, v1.ErrInvalidArgument) {
				t.Errorf("staged copy before OpenStaging: %v", err)
			}
			var so v1.StagingOpened
			fds, err := s.CallFDs(c, &v1.OpenStaging{Bytes: 1 << 20, SlotBytes: 256 << 10}, &so, nil)
			if err != nil {
				t.Fatal(err)
			}
			syscall.Close(fds[0])
			if _, err := s.CallFDs(c, &v1.OpenStaging{}, nil, nil); !errors.Is(err, v1.ErrInvalidArgument) {
				t.Errorf("second OpenStaging: %v", err)
			}
			total := uint64(so.Slots) * so.SlotBytes
			dev := v1.Ref{Buffer: bc.Handle}
			for _, tc := range []struct {
				name         string
				m            v1.StagedCopy
				want         error
				noRefusalMsg bool
			}{
				{"empty", v1.StagedCopy{Dir: v1.DirHtoD, Dev: dev}, v1.ErrInvalidArgument, false},
				{"past the area", v1.StagedCopy{Dir: v1.DirHtoD, Dev: dev, Offset: total, Size: 1}, v1.ErrInvalidArgument, false},
				{"runs past the area", v1.StagedCopy{Dir: v1.DirDtoH, Dev: dev, Offset: total - 8, Size: 16}, v1.ErrInvalidArgument, false},
				{"crosses a slot", v1.StagedCopy{Dir: v1.DirHtoD, Dev: dev, Offset: so.SlotBytes - 8, Size: 16}, v1.ErrInvalidArgument, false},
				{"more than a slot", v1.StagedCopy{Dir: v1.DirHtoD, Dev: dev, Size: so.SlotBytes + 1}, v1.ErrInvalidArgument, false},
				{"wraps", v1.StagedCopy{Dir: v1.DirHtoD, Dev: dev, Offset: ^uint64(0) - 4, Size: 8}, v1.ErrInvalidArgument, false},
				{"huge size", v1.StagedCopy{Dir: v1.DirDtoH, Dev: dev, Offset: 8, Size: ^uint64(0)}, v1.ErrInvalidArgument, false},
				{"past the buffer", v1.StagedCopy{Dir: v1.DirHtoD, Dev: v1.Ref{Buffer: bc.Handle, Offset: 1<<20 - 4}, Size: 8}, v1.ErrInvalidArgument, false},
				{"forged buffer", v1.StagedCopy{Dir: v1.DirDtoH, Dev: v1.Ref{Buffer: bc.Handle + 1<<40}, Size: 8}, v1.ErrInvalidHandle, false},
				{"outside the window", v1.StagedCopy{Dir: v1.DirDtoH, Dev: v1.Ref{Offset: 0x1000}, Size: 8}, v1.ErrInvalidArgument, true},
				{"unknown stream", v1.StagedCopy{Stream: 12345, Dir: v1.DirHtoD, Dev: dev, Size: 8}, v1.ErrInvalidHandle, false},
			} {
				err := s.Call(c, &tc.m, nil)
				if err == nil || (!tc.noRefusalMsg && !errors.Is(err, tc.want)) {
					t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
				}
			}
			if err := s.Call(c, &badDirection{v1.StagedCopy{Dir: v1.DirHtoD, Dev: dev, Size: 8}}, nil); !errors.Is(err, v1.ErrMalformed) {
				t.Errorf("device-to-device staged copy: %v, want Malformed", err)
			}
			// The session still works, with a good staged copy.
			if err := s.Call(c, &v1.StagedCopy{Dir: v1.DirHtoD, Dev: dev, Offset: so.SlotBytes, Size: 64, Gen: 1, Wait: true}, nil); err != nil {
				t.Fatalf("good staged copy after the attacks: %v", err)
			}
		})
	}
	got := make([]byte, 10)
	if err := keep.Read(c, 0, got); err != nil || string(got) != "still here" {
		t.Fatalf("bystander after the attacks: %q, %v", got, err)
	}
}

// Garbage in a session's submission ring ends that session only.
func TestGarbageInRingEndsSession(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	bystander := env.Session(t, env.Dial(t, client.Options{}), client.SessionOptions{})
	c := ctx(t)
	keep, _ := bystander.CreateBuffer(c, 4096)
	keep.Write(c, 0, []byte("still here"))
	for _, garbage := range []func(mem []byte){
		func(mem []byte) { // a record longer than the ring allows
			head := binary.LittleEndian.Uint64(mem[128:])
			binary.LittleEndian.PutUint32(mem[ring.ControlBytes+int(head%(64<<10)):], 1<<30)
			binary.LittleEndian.PutUint64(mem[128:], head+8)
		},
		func(mem []byte) { // a head beyond the ring
			binary.LittleEndian.PutUint64(mem[128:], 1<<40)
		},
		func(mem []byte) { // a well-formed record that is no frame
			p, err := ring.NewProducer(mem[:ring.Bytes(64<<10)], 64<<10, 1<<20, ring.Options{})
			if err == nil {
				p.Write([]byte("this is not a frame at all"))
			}
		},
	} {
		s, shm := rawSession(t, env, true)
		if err := s.Call(c, &v1.MemInfo{}, nil); err != nil {
			t.Fatal(err)
		}
		garbage(shm.Bytes())
		<-s.Done() // the driver ends the session
		if err := s.Call(c, &v1.MemInfo{}, nil); !errors.Is(err, v1.ErrDeviceLost) {
			t.Errorf("call after garbage: %v, want DeviceLost", err)
		}
	}
	got := make([]byte, 10)
	if err := keep.Read(c, 0, got); err != nil || string(got) != "still here" {
		t.Fatalf("bystander after the garbage: %q, %v", got, err)
	}
	s := env.Session(t, env.Dial(t, client.Options{}), client.SessionOptions{})
	if _, err := s.CreateBuffer(c, 4096); err != nil {
		t.Fatalf("new session after the garbage: %v", err)
	}
}

// ---- a client killed in the middle of writing to its rings ----------------------

const hotChildEnv = "GPUOS_CLIENT_TEST_CHILD"

// hotChild is a client process the test kills: it floods its rings with
// launches and staged copies without end.
func hotChild() int {
	c := context.Background()
	cl, err := client.Dial(c, client.Options{Transport: client.TransportRing})
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	s, err := cl.OpenSession(c, client.SessionOptions{Label: "doomed"})
	if err != nil || s.Transport() != client.TransportRing {
		fmt.Println("session:", err, s.Transport())
		return 1
	}
	ptx, err := os.ReadFile("../testdata/kernels/bench.ptx")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	p, err := s.LoadProgram(c, ptx, "bench")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	k, err := p.Kernel(c, "empty")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	buf, err := s.CreateBuffer(c, 16<<20)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	data := make([]byte, 16<<20)
	fmt.Println("ready")
	one := client.LaunchConfig{Grid: client.Dim3{X: 1}, Block: client.Dim3{X: 1}}
	for {
		for range 100 {
			if err := s.LaunchRaw(k, one, nil); err != nil {
				return 1
			}
		}
		if err := s.CopyToDevice(buf.At(0), data, nil); err != nil {
			return 1
		}
	}
}

func TestClientKilledMidWrite(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	c := ctx(t)
	mem := func() uint64 {
		s := env.Session(t, env.Dial(t, client.Options{}), client.SessionOptions{})
		free, _, err := s.MemInfo(c)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		return free
	}
	before := mem()
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), hotChildEnv+"=1", "GPUOS_SOCKET="+env.Socket)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q, %v", line, err)
	}
	time.Sleep(50 * time.Millisecond) // let it get well into its flood
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	cl := env.Dial(t, client.Options{})
	gone := func() bool { // teardown frees the memory, then forgets the session
		ss, err := cl.Sessions(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range ss {
			if st.Label == "doomed" {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(time.Minute); !gone() || mem() != before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed client's session and memory were never reclaimed")
		}
	}
}
