package manager_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/testenv"
	"github.com/gpuos/gpuos/internal/wire"
)

const childEnv = "GPUOS_E2E_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child(os.Getenv(childEnv), os.Getenv("GPUOS_SOCKET")))
	}
	testenv.Main(m)
}

// child is a client process the tests kill: it opens a session, allocates,
// says "ready" and then writes to its buffer without end.
func child(mode, socket string) int {
	ctx := context.Background()
	c, err := client.Dial(ctx, client.Options{Socket: socket, Token: "t"})
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	s, err := c.OpenSession(ctx, client.SessionOptions{Label: "doomed"})
	if err != nil {
		fmt.Println("session:", err)
		return 1
	}
	b, err := s.CreateBuffer(ctx, 32<<20)
	if err != nil {
		fmt.Println("alloc:", err)
		return 1
	}
	s.CreateStream(ctx, 0)
	data := make([]byte, 16<<20)
	fmt.Println("ready")
	for {
		if err := b.Write(ctx, 0, data); err != nil {
			fmt.Println("write:", err)
			return 1
		}
	}
}

func tokenConfig(t *testing.T) *config.Config {
	cfg, err := config.Parse([]byte("tenants: [{name: t, token: t, memory: 256MiB}, {name: u, token: u}]"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func tctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// rawSession opens a session with the wire protocol directly, so tests can
// send what the client library never would.
func rawSession(t *testing.T, env *testenv.Env, token string) *wire.Client {
	t.Helper()
	c := tctx(t)
	conn, err := wire.Dial(c, env.Socket)
	if err != nil {
		t.Fatal(err)
	}
	mgr := wire.NewClient(conn)
	t.Cleanup(func() { mgr.Close() })
	if err := mgr.Call(c, v1.NewHello(v1.RoleClient, token, "raw"), nil); err != nil {
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
	return s
}

func createBuffer(t *testing.T, s *wire.Client, size uint64) uint64 {
	t.Helper()
	var r v1.BufferCreated
	if err := s.Call(tctx(t), &v1.CreateBuffer{Size: size}, &r); err != nil {
		t.Fatal(err)
	}
	return r.Handle
}

func TestForgedStaleAndForeignHandles(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: tokenConfig(t)})
	a, b := rawSession(t, env, "t"), rawSession(t, env, "t")
	c := tctx(t)
	hA := createBuffer(t, a, 4096)
	hB := createBuffer(t, b, 4096)
	stale := createBuffer(t, a, 4096)
	if err := a.Call(c, &v1.Release{Handle: stale}, nil); err != nil {
		t.Fatal(err)
	}
	fresh := createBuffer(t, a, 4096) // may reuse the stale handle's slot
	read := func(s *wire.Client, h uint64) error {
		return s.Call(c, &v1.BufferRead{Buffer: h, Length: 16}, nil)
	}
	for _, tc := range []struct {
		name string
		s    *wire.Client
		h    uint64
	}{
		{"forged", a, 0x1234_5678_9abc_def0},
		{"zero", a, 0},
		{"stale generation", a, stale},
		{"from another connection", a, hB},
		{"from another connection, other way", b, hA},
		{"own buffer with a flipped bit", a, hA ^ 1},
	} {
		if err := read(tc.s, tc.h); !errors.Is(err, v1.ErrInvalidHandle) {
			t.Errorf("%s handle: %v, want InvalidHandle", tc.name, err)
		}
	}
	for _, h := range []uint64{hA, fresh} {
		if err := read(a, h); err != nil {
			t.Errorf("valid handle refused: %v", err)
		}
	}
	// A kernel handle used as a buffer is the wrong kind.
	var pl v1.ProgramLoaded
	if err := a.Call(c, &v1.LoadProgram{Image: mustRead(t, "../../testdata/kernels/vecadd.ptx")}, &pl); err != nil {
		t.Fatal(err)
	}
	if err := read(a, pl.Handle); !errors.Is(err, v1.ErrInvalidHandle) {
		t.Errorf("program handle as a buffer: %v, want InvalidHandle", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawBytes sends bytes on a fresh connection to path, after an optional valid
// hello, and returns what came back until the connection closed or a second passed.
func rawConn(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func header(length uint32, typ v1.Type, flags v1.Flags, id uint64) []byte {
	b := make([]byte, v1.HeaderSize)
	binary.LittleEndian.PutUint32(b[0:], length)
	binary.LittleEndian.PutUint16(b[4:], uint16(typ))
	binary.LittleEndian.PutUint16(b[6:], uint16(flags))
	binary.LittleEndian.PutUint64(b[8:], id)
	return b
}

// expectErrorReply reads frames until an Error reply (returning its code) or the
// connection closes (returning CodeOK).
func expectErrorReply(t *testing.T, c *net.UnixConn) v1.Code {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	for {
		h := make([]byte, v1.HeaderSize)
		if _, err := ioReadFull(r, h); err != nil {
			return v1.CodeOK
		}
		hd, err := v1.ParseHeader(h)
		if err != nil {
			t.Fatalf("daemon sent a bad header: %v", err)
		}
		p := make([]byte, hd.Length)
		if _, err := ioReadFull(r, p); err != nil {
			return v1.CodeOK
		}
		if hd.IsError() {
			var e v1.Error
			if err := v1.Unmarshal(p, &e); err != nil {
				t.Fatalf("bad error payload: %v", err)
			}
			return e.Code
		}
	}
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func TestMalformedFramesLeaveDaemonUp(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: tokenConfig(t)})
	// A healthy session of another tenant runs throughout.
	bystander := env.Session(t, env.Dial(t, client.Options{Token: "u"}), client.SessionOptions{})
	c := tctx(t)
	keep, err := bystander.CreateBuffer(c, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := keep.Write(c, 0, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	hello := func() []byte {
		m := v1.NewHello(v1.RoleClient, "t", "attacker")
		p := v1.Marshal(m)
		return append(header(uint32(len(p)), v1.TypeHello, 0, 1), p...)
	}
	cases := []struct {
		name  string
		bytes []byte
		want  v1.Code // CodeOK: the daemon just closes the connection
	}{
		{"oversized length", header(v1.MaxPayload+1, v1.TypeHello, 0, 1), v1.CodeMalformed},
		{"unknown flags", header(0, v1.TypeListDevices, 1<<12, 1), v1.CodeMalformed},
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: gpuos\r\n\r\n"), v1.CodeMalformed},
		{"hello with a bad magic", append(header(4, v1.TypeHello, 0, 1), 1, 2, 3, 4), v1.CodeMalformed},
		{"truncated frame then close", header(100, v1.TypeHello, 0, 1)[:10], v1.CodeOK},
		{"request before hello", header(0, v1.TypeListDevices, 0, 1), v1.CodeMalformed},
		{"unknown type after hello", append(hello(), header(0, 999, 0, 2)...), v1.CodeUnsupported},
		{"driver request to the manager", append(hello(), append(header(12, v1.TypeCreateBuffer, 0, 2), make([]byte, 12)...)...), v1.CodePermissionDenied},
		{"truncated payload after hello", append(hello(), append(header(20, v1.TypeOpenSession, 0, 2), 1, 2)...), v1.CodeOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn := rawConn(t, env.Socket)
			conn.Write(tc.bytes)
			if tc.want == v1.CodeOK {
				conn.CloseWrite()
			}
			got := expectErrorReply(t, conn)
			if tc.want != v1.CodeOK && got != tc.want {
				t.Errorf("reply code %v, want %v", got, tc.want)
			}
		})
	}
	// The same on a session connection to the driver.
	raw := rawSession(t, env, "t")
	if err := raw.Call(c, &v1.ListDevices{}, nil); !errors.Is(err, v1.ErrPermissionDenied) {
		t.Errorf("manager request to a driver: %v, want PermissionDenied", err)
	}
	if err := raw.Call(c, &v1.CreateBuffer{Size: 1 << 62}, nil); err == nil {
		t.Error("absurd allocation accepted")
	}
	drv := raw.Conn()
	if err := drv.WriteFrame(v1.Header{Type: v1.TypeCreateBuffer, ID: 77}, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := raw.Call(c, &v1.MemInfo{}, nil); err != nil {
		t.Errorf("session unusable after a malformed request: %v", err)
	}
	// And everyone else is unaffected.
	got := make([]byte, 10)
	if err := keep.Read(c, 0, got); err != nil || string(got) != "still here" {
		t.Fatalf("bystander after the attacks: %q, %v", got, err)
	}
	if _, err := client.Dial(c, client.Options{Socket: env.Socket, Token: "u"}); err != nil {
		t.Fatalf("new client after the attacks: %v", err)
	}
}

func tenantFree(t *testing.T, env *testenv.Env, token string) uint64 {
	t.Helper()
	s := env.Session(t, env.Dial(t, client.Options{Token: token}), client.SessionOptions{})
	free, _, err := s.MemInfo(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return free
}

func TestRevocationCascadeReclaimsEverything(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: tokenConfig(t)})
	c := tctx(t)
	before := tenantFree(t, env, "t")
	a := env.Session(t, env.Dial(t, client.Options{Token: "t"}), client.SessionOptions{})
	b := env.Session(t, env.Dial(t, client.Options{Token: "u"}), client.SessionOptions{})
	buf, err := a.CreateBuffer(c, 8<<20, client.Shareable)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := a.CreateBuffer(c, 1000); err != nil {
			t.Fatal(err)
		}
	}
	prog, err := a.LoadProgram(c, mustRead(t, "../../testdata/kernels/vecadd.ptx"), "v")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prog.Kernel(c, "vecadd"); err != nil {
		t.Fatal(err)
	}
	st, _ := a.CreateStream(c, 0)
	if _, err := a.Record(c, st); err != nil {
		t.Fatal(err)
	}
	g, err := a.Grant(c, buf, client.BufferRead|client.BufferWrite)
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.Attach(c, g.Token())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Write(c, 0, []byte("shared")); err != nil {
		t.Fatal(err)
	}
	if free, _, _ := a.MemInfo(c); free >= before {
		t.Fatalf("free %d did not drop below %d after allocating", free, before)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// The receiver's mapping died with the owner's session.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := m.Read(c, 0, make([]byte, 6))
		if errors.Is(err, client.ErrRevoked) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mapping after the owner closed: %v, want ErrRevoked", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitFor(t, func() bool { return tenantFree(t, env, "t") == before }, "tenant t's memory to return")
	ss, err := env.Dial(t, client.Options{Token: "t"}).Sessions(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.ID == a.ID() {
			t.Errorf("closed session still listed: %+v", s)
		}
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClientKilledMidCall(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: tokenConfig(t)})
	before := tenantFree(t, env, "t")
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=hold", "GPUOS_SOCKET="+env.Socket)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		t.Fatalf("child said %q, %v", line, err)
	}
	time.Sleep(50 * time.Millisecond) // let it get well into a write
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitFor(t, func() bool { return tenantFree(t, env, "t") == before }, "the killed client's memory to return")
	// Teardown ends with the session leaving the list.
	cl := env.Dial(t, client.Options{Token: "t"})
	waitFor(t, func() bool {
		ss, err := cl.Sessions(tctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			if s.Label == "doomed" {
				return false
			}
		}
		return true
	}, "the killed client's session to leave the list")
}

func TestDriverKilled(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: tokenConfig(t)})
	c := tctx(t)
	cl := env.Dial(t, client.Options{Token: "t"})
	s, err := cl.OpenSession(c, client.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	buf, err := s.CreateBuffer(c, 4096)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := s.LoadProgram(c, mustRead(t, "../../testdata/kernels/vecadd.ptx"), "vecadd")
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel(c, "vecadd")
	if err != nil {
		t.Fatal(err)
	}
	// Mid-stream: the client keeps launching and synchronizing while the
	// driver is killed; the first error it sees must be DeviceLost.
	streamErr := make(chan error, 1)
	var rounds atomic.Int64
	go func() {
		for {
			if err := s.Launch(k, client.LaunchConfig{Grid: client.Dim3{X: 4}, Block: client.Dim3{X: 256}}, buf, buf, buf, int32(1000)); err != nil {
				streamErr <- err
				return
			}
			if err := s.Synchronize(c); err != nil {
				streamErr <- err
				return
			}
			rounds.Add(1)
		}
	}()
	for rounds.Load() < 10 {
		time.Sleep(time.Millisecond)
	}
	pid := env.Manager.Drivers()[0]
	if pid == 0 {
		t.Fatal("no driver running")
	}
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = <-streamErr
	t.Logf("the streaming client saw %q %v after the driver was killed (after %d launch+sync rounds)", err, time.Since(killed), rounds.Load())
	if !errors.Is(err, client.ErrDeviceLost) {
		t.Errorf("mid-stream error after the driver died: %v, want ErrDeviceLost", err)
	}
	<-s.Done()
	if err := buf.Write(c, 0, []byte{1}); !errors.Is(err, client.ErrDeviceLost) {
		t.Errorf("call after the driver died: %v, want ErrDeviceLost", err)
	}
	// The manager restarts the driver; a new session works.
	s2, err := cl.OpenSession(c, client.SessionOptions{})
	if err != nil {
		t.Fatalf("session after restart: %v", err)
	}
	defer s2.Close()
	b2, err := s2.CreateBuffer(c, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.Write(c, 0, []byte("alive")); err != nil {
		t.Fatal(err)
	}
	if p := env.Manager.Drivers()[0]; p == pid || p == 0 {
		t.Errorf("driver pid after restart = %d (was %d)", p, pid)
	}
}
