package manager

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/wire"
)

// fakeDriver is the driver's end of a control connection, answered by the
// test.
type fakeDriver struct {
	t    *testing.T
	ctl  *wire.Client // the manager's end
	conn *wire.Conn   // the driver's end
}

func newFakeDriver(t *testing.T) *fakeDriver {
	t.Helper()
	mc, conn, err := wire.Pair()
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDriver{t: t, ctl: wire.NewClient(mc), conn: conn}
	t.Cleanup(func() { f.ctl.Close(); f.conn.Close() })
	return f
}

// read returns the next request the manager sent, closing its descriptors.
func (f *fakeDriver) read() wire.Frame {
	f.t.Helper()
	f.conn.UnixConn().SetReadDeadline(time.Now().Add(10 * time.Second)) // no request: fail, not hang
	fr, err := f.conn.ReadFrame()
	if err != nil {
		f.t.Fatalf("fake driver: read: %v", err)
	}
	fr.CloseFDs()
	return fr
}

// TestOpenSessionWhileDriverExits: a driver that exits while the manager
// attaches a session to it. Whichever noticed first — the call, which sees
// the connection lost, or the supervisor, which closes it — the session is
// attached to the restarted driver, and a caller who gets no driver is told
// that the device was lost, not that its handle was invalid (the close was
// once reported as wire.ErrClosed: TestDriverKilled failed one run in 30 on a
// loaded machine).
func TestOpenSessionWhileDriverExits(t *testing.T) {
	cfg, err := config.Parse([]byte("tenants:\n  - {name: a, token: t}\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m, err := New(Options{Config: cfg, Socket: filepath.Join(dir, "s.sock"), DriverCommand: []string{"/bin/false"}})
	if err != nil {
		t.Fatal(err)
	}
	d := &driverProc{m: m, ordinal: 0, exited: make(chan struct{})}
	m.drivers = append(m.drivers, d)
	defer m.Close()
	defer close(d.exited) // no supervisor runs: Close waits for this
	cl := &client{tenant: &cfg.Tenants[0], cred: wire.Cred{PID: 0}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	first := newFakeDriver(t)
	d.mu.Lock()
	d.ctl, d.info = first.ctl, &v1.Devices{}
	d.mu.Unlock()

	t.Run("attach", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			_, _, err := m.attach(ctx, cl, d, &v1.OpenSession{}, 0)
			done <- err
		}()
		first.read() // the AttachSession, never answered: the driver exits
		d.setDown(nil)
		first.ctl.Close() // as the supervisor does once the process is reaped
		err := <-done
		if have, want := v1.CodeOf(err), v1.CodeDeviceLost; have != want {
			t.Errorf("attach to a driver that exited: %v (code %v), want code %v", err, have, want)
		}
	})

	t.Run("openSession", func(t *testing.T) {
		second := newFakeDriver(t)
		d.mu.Lock()
		d.ctl = second.ctl
		d.mu.Unlock()
		third := newFakeDriver(t)
		type result struct {
			msg v1.Message
			fds []int
			err error
		}
		done := make(chan result, 1)
		go func() {
			msg, fds, err := m.openSession(ctx, cl, &v1.OpenSession{})
			done <- result{msg, fds, err}
		}()
		second.read()
		d.setDown(nil)
		second.ctl.Close()
		// The supervisor restarts the driver: the manager's second try
		// attaches there.
		d.mu.Lock()
		d.ctl = third.ctl
		d.mu.Unlock()
		fr := third.read()
		if fr.Header.Type != v1.TypeAttachSession {
			t.Fatalf("restarted driver got %v, want AttachSession", fr.Header.Type)
		}
		if err := third.conn.WriteMessage(fr.Header.ID, v1.FlagReply, &v1.SessionAttached{WindowBase: 1 << 40, WindowSize: 1 << 30}); err != nil {
			t.Fatal(err)
		}
		r := <-done
		for _, fd := range r.fds {
			closeFD(fd)
		}
		if r.err != nil {
			t.Fatalf("open session while the driver restarts: %v", r.err)
		}
		if so, ok := r.msg.(*v1.SessionOpened); !ok || so.WindowSize != 1<<30 {
			t.Errorf("open session: %#v, want the restarted driver's window", r.msg)
		}
	})
}

// TestPolicyChangeWhileDriverStarts: an operator switches policy while a
// driver is being configured (it has its handshake done, and is not yet
// available to clients). The change waits for it and then reaches it: the
// driver runs the policy the manager reports. Without the serialization, the
// change skipped the driver as not yet running while the driver had already
// been given the old policy.
func TestPolicyChangeWhileDriverStarts(t *testing.T) {
	cfg, err := config.Parse([]byte("tenants:\n  - {name: a, token: t}\n"))
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m, err := New(Options{Config: cfg, Socket: filepath.Join(dir, "s.sock"), Backend: "sim",
		DriverCommand: []string{exe}, DriverArgs: []string{"--sim-memory", "256MiB"},
		DriverEnv: []string{"GPUOS_TESTENV_DRIVER=1"}, AuditLog: filepath.Join(dir, "audit.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	operator := &client{tenant: &cfg.Tenants[0], cred: wire.Cred{UID: m.self}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	changed := make(chan error, 1)
	var once sync.Once
	m.testHookConfigured = func() {
		once.Do(func() {
			go func() { changed <- m.policyUse(ctx, operator, &v1.PolicyUse{Name: "band"}) }()
			time.Sleep(100 * time.Millisecond) // long enough for a change that does not wait
		})
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-changed; err != nil {
		t.Fatalf("policy use band while the driver starts: %v", err)
	}
	ctl, err := m.drivers[0].controlNow()
	if err != nil {
		t.Fatal(err)
	}
	var pl v1.Policies
	if err := ctl.Call(ctx, &v1.PolicyList{}, &pl); err != nil {
		t.Fatal(err)
	}
	m.sched.mu.Lock()
	reported := m.sched.policy
	m.sched.mu.Unlock()
	if pl.Active != "band" || reported != "band" {
		t.Errorf("after switching to band while the driver started: the driver runs %q, the manager reports %q; want band for both", pl.Active, reported)
	}
}

// TestPolicyListWhileFirstDriverExits: of two devices' drivers, the first
// exits while `gpuos policy list` asks them; the second's answer is the
// list, where the first one's empty reply was once taken for all.
func TestPolicyListWhileFirstDriverExits(t *testing.T) {
	cfg, err := config.Parse([]byte("tenants:\n  - {name: a, token: t}\n"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Config: cfg, Socket: filepath.Join(t.TempDir(), "s.sock"), DriverCommand: []string{"/bin/false"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var fakes []*fakeDriver
	for i := range 2 {
		f := newFakeDriver(t)
		d := &driverProc{m: m, ordinal: i, exited: make(chan struct{}), ctl: f.ctl, info: &v1.Devices{}}
		m.drivers = append(m.drivers, d)
		fakes = append(fakes, f)
		defer close(d.exited) // no supervisor runs: Close waits for this
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		p   *v1.Policies
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := m.policyList(ctx)
		done <- result{p, err}
	}()
	fakes[0].read()
	m.drivers[0].setDown(nil)
	fakes[0].ctl.Close() // the first exits
	fr := fakes[1].read()
	if err := fakes[1].conn.WriteMessage(fr.Header.ID, v1.FlagReply, &v1.Policies{Active: "band", Fallback: "fair"}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.p == nil || r.p.Active != "band" {
		t.Errorf("policy list with the first driver gone: %+v, %v; want the second's (band)", r.p, r.err)
	}
}
