package manager_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/metrics"
	"github.com/gpuos/gpuos/internal/testenv"
)

// scrape fetches and parses an exposition. The HTTP client's limit is far
// above any scrape's own deadline: reaching it means the scrape hung.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	hc := &http.Client{Timeout: time.Minute}
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	return mfs
}

// series returns the value of the series of a family whose labels include
// want, and whether there is one.
func series(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		}
	}
	return 0, false
}

// vecadd runs one vector addition in s: three buffers, two copies in, one
// launch, one copy out.
func vecadd(t *testing.T, s *client.Session, n int) {
	t.Helper()
	c := tctx(t)
	image, err := os.ReadFile("../../testdata/kernels/vecadd.ptx")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := s.LoadProgram(c, image, "vecadd")
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel(c, "vecadd")
	if err != nil {
		t.Fatal(err)
	}
	var bufs [3]*client.Buffer
	for i := range bufs {
		if bufs[i], err = s.CreateBuffer(c, uint64(4*n)); err != nil {
			t.Fatal(err)
		}
	}
	in := make([]byte, 4*n)
	for _, b := range bufs[:2] {
		if err := b.Write(c, 0, in); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Launch(k, client.LaunchConfig{Grid: client.Dim3{X: uint32((n + 255) / 256)}, Block: client.Dim3{X: 256}},
		bufs[0], bufs[1], bufs[2], int32(n)); err != nil {
		t.Fatal(err)
	}
	if err := bufs[2].Read(c, 0, in); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(c); err != nil {
		t.Fatal(err)
	}
}

func TestMetricsAfterWork(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: tokenConfig(t)})
	url := env.MetricsURL(t, metrics.Options{})
	st := env.Session(t, env.Dial(t, client.Options{Token: "t"}), client.SessionOptions{Label: "worker"})
	su := env.Session(t, env.Dial(t, client.Options{Token: "u"}), client.SessionOptions{})
	const n = 1 << 16
	vecadd(t, st, n)
	if _, err := su.CreateBuffer(tctx(t), 2<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Dial(tctx(t), client.Options{Socket: env.Socket, Token: "wrong"}); err == nil {
		t.Fatal("a client with a wrong token was admitted")
	}

	mfs := scrape(t, url)
	tt, tu := map[string]string{"tenant": "t"}, map[string]string{"tenant": "u"}
	sid := map[string]string{"tenant": "t", "device": "0", "session": strconv.FormatUint(st.ID(), 10)}
	atLeast := []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"gpuos_tenant_launches_total", tt, 1},
		{"gpuos_tenant_copies_total", tt, 3},
		{"gpuos_tenant_copy_bytes_total", tt, 3 * 4 * n},
		{"gpuos_tenant_memory_bytes", tt, 3 * 4 * n},
		{"gpuos_tenant_memory_bytes", tu, 2 << 20},
		{"gpuos_tenant_memory_quota_bytes", tt, 256 << 20},
		{"gpuos_tenant_gpu_seconds_total", tt, 1e-9},
		{"gpuos_tenant_sessions", tt, 1},
		{"gpuos_tenant_sessions", tu, 1},
		{"gpuos_session_launches_total", sid, 1},
		{"gpuos_session_copy_bytes_total", sid, 3 * 4 * n},
		{"gpuos_driver_up", map[string]string{"device": "0"}, 1},
		{"gpuos_clients_denied_total", nil, 1},
	}
	for _, w := range atLeast {
		if v, ok := series(mfs, w.name, w.labels); !ok || v < w.min {
			t.Errorf("%s%v = %v (present %v), want at least %v", w.name, w.labels, v, ok, w.min)
		}
	}
	for _, name := range []string{"gpuos_tenant_in_flight", "gpuos_tenant_queue_depth", "gpuos_tenant_queue_delay_seconds_total",
		"gpuos_tenant_violations_total", "gpuos_tenant_evictions_total", "gpuos_driver_restarts_total"} {
		if _, ok := series(mfs, name, nil); !ok {
			t.Errorf("exposition lacks %s", name)
		}
	}
	if _, ok := series(mfs, "gpuos_tenant_memory_quota_bytes", tu); ok {
		t.Error("unlimited tenant u has a quota series")
	}
	launches, _ := series(mfs, "gpuos_tenant_launches_total", tt)

	// The session closes: its series go, its tenant's counters stay.
	st.Close()
	waitFor(t, func() bool {
		v, _ := series(scrape(t, url), "gpuos_tenant_sessions", tt)
		return v == 0
	}, "tenant t's session to close")
	mfs = scrape(t, url)
	if _, ok := series(mfs, "gpuos_session_launches_total", sid); ok {
		t.Error("a closed session's series is still exported")
	}
	if v, _ := series(mfs, "gpuos_tenant_launches_total", tt); v != launches {
		t.Errorf("tenant t launches after its session closed: %v, want %v", v, launches)
	}
}

// TestMetricsStoppedDriverDoesNotHangScrape stops the driver process (it
// keeps its connection but answers nothing): the scrape returns after its
// deadline with the driver down and the tenant's counters held.
func TestMetricsStoppedDriverDoesNotHangScrape(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: tokenConfig(t)})
	url := env.MetricsURL(t, metrics.Options{Timeout: 200 * time.Millisecond})
	s := env.Session(t, env.Dial(t, client.Options{Token: "t"}), client.SessionOptions{})
	vecadd(t, s, 1024)
	tt, dev0 := map[string]string{"tenant": "t"}, map[string]string{"device": "0"}
	before, _ := series(scrape(t, url), "gpuos_tenant_launches_total", tt)

	pid := env.Manager.Drivers()[0]
	if pid == 0 {
		t.Fatal("no driver running")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := func() { syscall.Kill(pid, syscall.SIGCONT) }
	t.Cleanup(cont) // before the environment stops
	// kill returns before every thread of the driver has stopped; one still
	// running could answer the scrape.
	waitFor(t, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		_, rest, _ := strings.Cut(string(b), ") ")
		return err == nil && strings.HasPrefix(rest, "T")
	}, "the driver to stop")

	mfs := scrape(t, url)
	if v, ok := series(mfs, "gpuos_driver_up", dev0); !ok || v != 0 {
		t.Errorf("stopped driver: up = %v (present %v), want 0", v, ok)
	}
	if v, _ := series(mfs, "gpuos_tenant_launches_total", tt); v != before {
		t.Errorf("launches while the driver is silent: %v, want %v held", v, before)
	}
	cont()
	waitFor(t, func() bool {
		v, _ := series(scrape(t, url), "gpuos_driver_up", dev0)
		return v == 1
	}, "the continued driver to answer")
}

// TestMetricsDriverKilled: a dead driver reads as down, then restarted; the
// tenant's counters do not go back.
func TestMetricsDriverKilled(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: tokenConfig(t)})
	url := env.MetricsURL(t, metrics.Options{})
	cl := env.Dial(t, client.Options{Token: "t"})
	s := env.Session(t, cl, client.SessionOptions{})
	vecadd(t, s, 1024)
	tt, dev0 := map[string]string{"tenant": "t"}, map[string]string{"device": "0"}
	before, _ := series(scrape(t, url), "gpuos_tenant_launches_total", tt)
	if err := syscall.Kill(env.Manager.Drivers()[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	waitFor(t, func() bool {
		mfs := scrape(t, url)
		r, _ := series(mfs, "gpuos_driver_restarts_total", dev0)
		u, _ := series(mfs, "gpuos_driver_up", dev0)
		return r >= 1 && u == 1
	}, "the driver to restart")
	s2 := env.Session(t, cl, client.SessionOptions{})
	vecadd(t, s2, 1024)
	if v, _ := series(scrape(t, url), "gpuos_tenant_launches_total", tt); v != before+1 {
		t.Errorf("launches after the restart: %v, want %v", v, before+1)
	}
}

// TestListenMetrics serves on a real listener until its context ends.
func TestListenMetrics(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	addr, err := env.Manager.ListenMetrics(ctx, "127.0.0.1:0", metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mfs := scrape(t, "http://"+addr.String()+"/metrics")
	if _, ok := series(mfs, "gpuos_tenant_sessions", map[string]string{"tenant": "default"}); !ok {
		t.Error("no sessions series for the default tenant")
	}
	cancel()
	waitFor(t, func() bool {
		_, err := (&http.Client{Timeout: time.Second}).Get("http://" + addr.String() + "/metrics")
		return err != nil
	}, "the metrics listener to stop")
	if _, err := env.Manager.ListenMetrics(context.Background(), "not an address", metrics.Options{}); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("listen on a bad address: %v", err)
	}
}
