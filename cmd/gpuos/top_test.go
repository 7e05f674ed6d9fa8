package main

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/config"
)

func TestTenantRows(t *testing.T) {
	tenants := []config.Tenant{{Name: "a", Weight: 3, Memory: 1 << 30}, {Name: "b", Weight: 1}, {Name: "idle"}}
	prev := []client.SessionStat{
		{ID: 1, Tenant: "a", GPUTimeNs: 1e9, Launches: 100, Copies: 10, CopyBytes: 1e6, QueueDelayNs: 0},
		{ID: 2, Tenant: "b", GPUTimeNs: 5e8, Launches: 10},
		{ID: 9, Tenant: "b", GPUTimeNs: 7e9, Launches: 500}, // closes before cur
	}
	cur := []client.SessionStat{
		{ID: 1, Tenant: "a", GPUTimeNs: 1.6e9, Launches: 300, Copies: 10, CopyBytes: 5e6, QueueDelayNs: 400e6,
			MemoryBytes: 3 << 20, InFlight: 2, QueueDepth: 5, Evictions: 4},
		{ID: 3, Tenant: "a", GPUTimeNs: 0.15e9, MemoryBytes: 1 << 20, Evictions: 4}, // new; tenant-wide evictions repeat
		{ID: 2, Tenant: "b", GPUTimeNs: 7.5e8, Launches: 60, Violations: 1},
		{ID: 4, Tenant: "stranger", Launches: 2},
	}
	rows := tenantRows(prev, cur, 2*time.Second, tenants)
	want := []tenantRow{
		{name: "a", sessions: 2, memory: 4 << 20, quota: 1 << 30, weight: 3, gpu: 750 * time.Millisecond,
			share: 0.75, target: 0.75, launches: 100, copyBytes: 2e6, queueDelay: 2 * time.Millisecond,
			inFlight: 2, queued: 5, evictions: 4},
		{name: "b", sessions: 1, weight: 1, gpu: 250 * time.Millisecond, share: 0.25, target: 0.25, launches: 25,
			violations: 1},
		{name: "idle", weight: 1, target: 0},
		{name: "stranger", sessions: 1, target: -1, launches: 1},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for i, w := range want {
		h := *rows[i]
		if h.name != w.name || h.sessions != w.sessions || h.memory != w.memory || h.quota != w.quota ||
			h.weight != w.weight || h.gpu != w.gpu || !near(h.share, w.share) || !near(h.target, w.target) ||
			!near(h.launches, w.launches) || !near(h.copyBytes, w.copyBytes) || h.queueDelay != w.queueDelay ||
			h.inFlight != w.inFlight || h.queued != w.queued || h.violations != w.violations || h.evictions != w.evictions {
			t.Errorf("row %d:\nhave %+v\nwant %+v", i, h, w)
		}
	}
}

func TestTopFlags(t *testing.T) {
	for _, args := range [][]string{{"--interval", "0"}, {"-n", "-1"}, {"extra"}, {"--no-such-flag"}} {
		if code, out := runCmd(t, append([]string{"top"}, args...)...); code != 2 {
			t.Errorf("top %v: exit %d, want 2\n%s", args, code, out)
		}
	}
	if code, out := runCmd(t, "top", "-n", "1", "--socket", filepath.Join(t.TempDir(), "nobody.sock")); code != 1 || !strings.Contains(out, "dial") {
		t.Errorf("top without a daemon: %d %q", code, out)
	}
}

// syncBuffer is a bytes.Buffer that serve can write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeMetricsAndTop runs gpuos serve with --metrics and two working
// tenants, scrapes the metrics and runs gpuos top.
func TestServeMetricsAndTop(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "g.sock")
	cfgPath := filepath.Join(dir, "gpuos.yaml")
	// ops admits this test's own user without a token; last, so that a token
	// picks its tenant first.
	cfgText := `tenants:
  - {name: alpha, token: ta, memory: 256MiB, weight: 3}
  - {name: beta, token: tb, weight: 1}
  - {name: idle, token: ti}
  - {name: ops, uids: [self]}
`
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serveOut syncBuffer
	go func() {
		done <- run(ctx, []string{"serve", "--backend", "sim", "--socket", sock, "--sim-memory", "1GiB",
			"--config", cfgPath, "--metrics", "127.0.0.1:0"}, &serveOut, &serveOut)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, serveOut.String())
		}
	}()
	metricsLine := regexp.MustCompile(`metrics at (http://\S+/metrics)`)
	var url string
	for deadline := time.Now().Add(time.Minute); url == ""; {
		if m := metricsLine.FindStringSubmatch(serveOut.String()); m != nil {
			url = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not report its metrics address:\n%s", serveOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	for _, tok := range []string{"ta", "tb"} {
		c, err := client.Dial(ctx, client.Options{Socket: sock, Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := c.OpenSession(ctx, client.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		b, err := s.CreateBuffer(ctx, 3<<20)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Write(ctx, 0, make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
	}

	resp, err := (&http.Client{Timeout: time.Minute}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`gpuos_tenant_sessions{tenant="alpha"} 1`, `gpuos_tenant_sessions{tenant="beta"} 1`,
		`gpuos_tenant_memory_quota_bytes{tenant="alpha"} 2.68435456e+08`, `gpuos_driver_up{device="0"} 1`} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}

	code, out := runCmd(t, "top", "--socket", sock, "-n", "1", "--interval", "10ms", "--config", cfgPath)
	if code != 0 {
		t.Fatalf("top exited %d:\n%s", code, out)
	}
	t.Logf("gpuos top -n 1:\n%s", out)
	if strings.Contains(out, "\x1b[") {
		t.Error("top -n 1 wrote terminal escapes")
	}
	for _, want := range []string{"TENANT", "GPU%", "COPY-MB/S", "QDELAY", "VIOLATIONS"} {
		if !strings.Contains(out, want) {
			t.Errorf("top output lacks column %s", want)
		}
	}
	rowOf := func(out, tenant string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == tenant {
				return l
			}
		}
		return ""
	}
	for tenant, want := range map[string][]string{"alpha": {"3.0MiB/" + config.Size(256<<20).Human()}, "beta": {"3.0MiB/-"}, "idle": {"0B/-"}} {
		row := rowOf(out, tenant)
		if row == "" {
			t.Errorf("top lacks tenant %s", tenant)
			continue
		}
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("top row %q lacks %q", row, w)
			}
		}
	}

	code, out = runCmd(t, "top", "--socket", sock, "-n", "2", "--interval", "10ms")
	if code != 0 || strings.Count(out, "gpuos top ") != 2 || strings.Contains(out, "\x1b[") {
		t.Errorf("top -n 2 without a terminal: exit %d, want two frames and no escapes:\n%s", code, out)
	}
	if rowOf(out, "alpha") == "" || rowOf(out, "idle") != "" {
		t.Errorf("top without --config shows the tenants with sessions, and only those:\n%s", out)
	}
}
