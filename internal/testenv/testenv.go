package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/driver"
	"github.com/gpuos/gpuos/internal/manager"
)

const driverEnv = "GPUOS_TESTENV_DRIVER"

// Main runs the tests, or a driver process when the manager started the test
// binary as one. Call it from TestMain.
func Main(m *testing.M) {
	if os.Getenv(driverEnv) == "1" {
		err := driver.RunProcess(context.Background(), os.Args[1:], os.Stderr)
		if errors.Is(err, driver.ErrDeviceLostExit) {
			os.Exit(driver.ExitDeviceLost)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "driver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Options configure Start.
type Options struct {
	Config     *config.Config // nil: the embedded default (the test's own user)
	SimMemory  string         // each software GPU's memory, e.g. "1GiB" (default 2GiB)
	DriverArgs []string       // extra driver flags
	// Backend is the daemon's backend: default $GPUOS_TEST_BACKEND, else "sim".
	// GPUOS_TEST_BACKEND=cuda runs a package's whole-system tests on a real GPU.
	Backend string
}

// Backend is the backend whole-system tests run on: $GPUOS_TEST_BACKEND, else
// "sim". Tests that start a daemon of their own (a script, a gpuos binary)
// pass it on, so that GPUOS_TEST_BACKEND=cuda moves them to the GPU too.
func Backend() string {
	if b := os.Getenv("GPUOS_TEST_BACKEND"); b != "" {
		return b
	}
	return "sim"
}

// Env is a running gpuos.
type Env struct {
	Manager *manager.Manager
	Socket  string
	Audit   string
	cancel  context.CancelFunc
	served  chan error
}

// Start starts a manager with its drivers and stops it when the test ends.
func Start(t testing.TB, o Options) *Env {
	t.Helper()
	dir, err := os.MkdirTemp("", "gpuos-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if o.SimMemory == "" {
		o.SimMemory = "2GiB"
	}
	if o.Backend == "" {
		o.Backend = Backend()
	}
	m, err := manager.New(manager.Options{
		Config:        o.Config,
		Socket:        filepath.Join(dir, "gpuos.sock"),
		Backend:       o.Backend,
		DriverCommand: []string{exe},
		DriverArgs:    append([]string{"--sim-memory", o.SimMemory}, o.DriverArgs...),
		DriverEnv:     []string{driverEnv + "=1"},
		AuditLog:      filepath.Join(dir, "audit.jsonl"),
		MinBackoff:    20 * time.Millisecond,
		MaxBackoff:    200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	if err := m.Start(sctx); err != nil {
		cancel()
		m.Close()
		t.Fatal(err)
	}
	e := &Env{Manager: m, Socket: m.Socket(), Audit: m.AuditLog(), cancel: cancel, served: make(chan error, 1)}
	go func() { e.served <- m.Serve(ctx) }()
	t.Cleanup(e.Stop)
	return e
}

// Stop stops the manager and its drivers.
func (e *Env) Stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.cancel = nil
	<-e.served
	e.Manager.Close()
}

// Dial connects a client; options default to this environment's socket.
func (e *Env) Dial(t testing.TB, o client.Options) *client.Client {
	t.Helper()
	if o.Socket == "" {
		o.Socket = e.Socket
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, o)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Session opens a session on device 0 for a client.
func (e *Env) Session(t testing.TB, c *client.Client, o client.SessionOptions) *client.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.OpenSession(ctx, o)
	if err != nil {
		t.Fatalf("open session: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
