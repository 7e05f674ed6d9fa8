package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuos/gpuos/client"
)

// serveForTest runs gpuos serve on a private socket until the test ends.
func serveForTest(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "g.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--backend", "sim", "--socket", sock, "--sim-memory", "1GiB"}, &out, &out)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, out.String())
		}
	})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		c, err := client.Dial(ctx, client.Options{Socket: sock})
		if err == nil {
			c.Close()
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not come up: %v\n%s", err, out.String())
		}
	}
}

func TestPolicyCommand(t *testing.T) {
	sock := serveForTest(t)
	code, out := runCmd(t, "policy", "list", "--socket", sock)
	if code != 0 || !strings.Contains(out, "active: fair") {
		t.Fatalf("policy list: %d\n%s", code, out)
	}
	for _, name := range []string{"fifo", "fair", "band", "priority"} {
		if !strings.Contains(out, name) {
			t.Errorf("policy list lacks %s:\n%s", name, out)
		}
	}
	// Flags may follow the positional arguments.
	if code, out := runCmd(t, "policy", "use", "band", "--socket", sock); code != 0 || !strings.Contains(out, "band is active") {
		t.Errorf("policy use band: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "list", "--socket", sock); code != 0 || !strings.Contains(out, "active: band") {
		t.Errorf("policy list after use: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "use", "--socket", sock, "nonesuch"); code != 1 || !strings.Contains(out, "not found") {
		t.Errorf("policy use nonesuch: %d\n%s", code, out)
	}
	code, out = runCmd(t, "policy", "set-share", "default", "compute=3", "copy=2", "memory=512MiB", "class=high", "--socket", sock)
	if code != 0 {
		t.Errorf("set-share: %d\n%s", code, out)
	}
	code, out = runCmd(t, "policy", "tenants", "--socket", sock)
	if code != 0 || !strings.Contains(out, "default") || !strings.Contains(out, "3/2") || !strings.Contains(out, "512.0MiB") ||
		!strings.Contains(out, "high") {
		t.Errorf("policy tenants after set-share: %d\n%s", code, out)
	}
	code, out = runCmd(t, "policy", "tenants", "--json", "--socket", sock)
	if code != 0 || !strings.Contains(out, `"Compute": 3`) {
		t.Errorf("policy tenants --json: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "ps", "--tenants", "--socket", sock); code != 0 || !strings.Contains(out, "GPU-SHARE") || !strings.Contains(out, "Q-DELAY") {
		t.Errorf("ps --tenants: %d\n%s", code, out)
	}
	for _, bad := range [][]string{
		{"policy"},
		{"policy", "frobnicate"},
		{"policy", "use"},
		{"policy", "set-share", "default"},
		{"policy", "set-share", "default", "compute=0"},
		{"policy", "set-share", "default", "speed=11"},
		{"policy", "set-share", "default", "class=urgent"},
		{"policy", "list", "extra"},
	} {
		if code, _ := runCmd(t, append(bad, "--socket", sock)...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", bad, code)
		}
	}
	if code, out := runCmd(t, "policy", "set-share", "nobody", "compute=2", "--socket", sock); code != 1 || !strings.Contains(out, "no such tenant") {
		t.Errorf("set-share of an unknown tenant: %d\n%s", code, out)
	}
}
