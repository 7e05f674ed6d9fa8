package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuos/gpuos/client"
)

// TestMain lets the test binary act as gpuos itself when the manager starts it
// as a driver process ("<binary> driver ...") or a test starts it as a daemon
// of its own ($GPUOS_TEST_AS_GPUOS=1).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "driver" || os.Getenv("GPUOS_TEST_AS_GPUOS") == "1") {
		main()
	}
	os.Exit(m.Run())
}

func runCmd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	code := run(ctx, args, &out, &out)
	return code, out.String()
}

func TestVersionAndUsage(t *testing.T) {
	if code, out := runCmd(t, "version"); code != 0 || !strings.Contains(out, "gpuos "+Version) {
		t.Errorf("version: %d %q", code, out)
	}
	if code, out := runCmd(t, "nonsense"); code != 2 || !strings.Contains(out, "unknown command") {
		t.Errorf("unknown command: %d %q", code, out)
	}
	if code, out := runCmd(t, "help"); code != 0 || !strings.Contains(out, "demo") || strings.Contains(out, "driver") {
		t.Errorf("help lists the commands but not the internal driver: %d %q", code, out)
	}
	if code, _ := runCmd(t, "serve", "--no-such-flag"); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
}

func TestDemo(t *testing.T) {
	code, out := runCmd(t, "demo", "--backend", "sim", "--seed", "7")
	if code != 0 || !strings.Contains(out, "all 7 checks passed") {
		t.Fatalf("demo exited %d:\n%s", code, out)
	}
	for _, want := range []string{"vector add", "reduction", "tiled matmul", "restricted session", "revoked buffer", "quota"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

func TestServePsAudit(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "g.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serveOut bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--backend", "sim", "--socket", sock, "--sim-memory", "1GiB"}, &serveOut, &serveOut)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, serveOut.String())
		}
		// Stopped by its context (a signal): it says so.
		if !strings.Contains(serveOut.String(), "gpuos: interrupted; stopped serving on "+sock) {
			t.Errorf("serve stopped without saying so:\n%s", serveOut.String())
		}
	}()
	c := dialDaemon(t, ctx, sock, &serveOut)
	defer c.Close()
	s, err := c.OpenSession(ctx, client.SessionOptions{Label: "ps-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateBuffer(ctx, 3<<20); err != nil {
		t.Fatal(err)
	}
	code, out := runCmd(t, "ps", "--socket", sock)
	if code != 0 || !strings.Contains(out, "ps-test") || !strings.Contains(out, "default") || !strings.Contains(out, "3.0MiB") {
		t.Errorf("ps: %d\n%s", code, out)
	}
	code, out = runCmd(t, "audit", "--socket", sock, "--kind", "session.open")
	if code != 0 || !strings.Contains(out, `"kind":"session.open"`) || !strings.Contains(out, "ps-test") {
		t.Errorf("audit: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "ps", "--socket", filepath.Join(dir, "nobody.sock")); code != 1 || !strings.Contains(out, "dial") {
		t.Errorf("ps without a daemon: %d %q", code, out)
	}
}

// dialDaemon dials the daemon on sock until it answers, for a minute at
// most; out is the daemon's output, shown if it does not.
func dialDaemon(t *testing.T, ctx context.Context, sock string, out fmt.Stringer) *client.Client {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		c, err := client.Dial(ctx, client.Options{Socket: sock})
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not come up: %v\n%s", err, out.String())
		}
	}
}

func TestDoctor(t *testing.T) {
	code, out := runCmd(t, "doctor")
	if code != 0 || !strings.Contains(out, "backend: ") {
		t.Fatalf("doctor: %d\n%s", code, out)
	}
	if strings.Contains(out, "backend: sim") && !strings.Contains(out, "falling back to the software GPU") {
		t.Errorf("doctor on sim does not say it falls back:\n%s", out)
	}
	if code, out := runCmd(t, "doctor", "--backend", "sim"); code != 0 || !strings.Contains(out, "device 0: gpuos sim") {
		t.Errorf("doctor --backend sim: %d\n%s", code, out)
	}
}

func TestBenchQuickOnSim(t *testing.T) {
	js := filepath.Join(t.TempDir(), "bench.json")
	code, out := runCmd(t, "bench", "--backend", "sim", "--quick", "--rounds", "1", "--json", js)
	if code != 0 {
		t.Fatalf("bench exited %d:\n%s", code, out)
	}
	for _, want := range []string{"async empty launch", "launch + synchronize", "HtoD pageable", "alloc + free 1 MiB", "memory-bound kernel"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(js)
	if err != nil || !bytes.Contains(b, []byte(`"results"`)) {
		t.Errorf("json file: %v\n%s", err, b)
	}
}
