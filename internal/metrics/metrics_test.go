package metrics_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/metrics"
)

// fixed is a Source that returns the snapshot it holds.
type fixed struct{ snap metrics.Snapshot }

func (f *fixed) Snapshot(context.Context) metrics.Snapshot { return f.snap }

var twoTenants = []metrics.Tenant{{Name: "a", MemoryQuota: 1 << 30, Weight: 3}, {Name: "b", Weight: 1}}

func up(restarts uint64) []metrics.Device {
	return []metrics.Device{{Ordinal: 0, Up: true, Restarts: restarts}}
}

func TestCollectExposition(t *testing.T) {
	src := &fixed{metrics.Snapshot{
		Tenants: twoTenants,
		Devices: []metrics.Device{{Ordinal: 0, Up: true, Restarts: 2}, {Ordinal: 1}},
		Sessions: []v1.SessionStat{
			{ID: 1, Tenant: "a", Launches: 10, MemoryBytes: 4 << 20, GPUTimeNs: 1.5e9, Evictions: 3, SwappedBytes: 2 << 20},
			{ID: 2, Tenant: "a", Launches: 5, MemoryBytes: 2 << 20, CopyBytes: 100, Copies: 2, Evictions: 3, SwappedBytes: 2 << 20},
			{ID: 3, Tenant: "b", InFlight: 4, QueueDepth: 7, QueueDelayNs: 250e6, Violations: 1},
			{ID: 4, Tenant: "mallory", Launches: 1},
		},
		ClientsDenied: 9,
	}}
	c := metrics.NewCollector(src, metrics.Options{})
	want := `
# HELP gpuos_clients_denied_total Clients the manager refused to authenticate.
# TYPE gpuos_clients_denied_total counter
gpuos_clients_denied_total 9
# HELP gpuos_driver_restarts_total Times the device's driver process was restarted.
# TYPE gpuos_driver_restarts_total counter
gpuos_driver_restarts_total{device="0"} 2
gpuos_driver_restarts_total{device="1"} 0
# HELP gpuos_driver_up 1 if the device's driver process is running and answered this scrape in time.
# TYPE gpuos_driver_up gauge
gpuos_driver_up{device="0"} 1
gpuos_driver_up{device="1"} 0
# HELP gpuos_session_launches_total Kernel launches.
# TYPE gpuos_session_launches_total counter
gpuos_session_launches_total{device="0",session="1",tenant="a"} 10
gpuos_session_launches_total{device="0",session="2",tenant="a"} 5
gpuos_session_launches_total{device="0",session="3",tenant="b"} 0
gpuos_session_launches_total{device="0",session="4",tenant="_other"} 1
# HELP gpuos_tenant_evictions_total Chunks of the tenant's memory evicted to host memory. Summed over the tenant's sessions.
# TYPE gpuos_tenant_evictions_total counter
gpuos_tenant_evictions_total{tenant="_other"} 0
gpuos_tenant_evictions_total{tenant="a"} 3
gpuos_tenant_evictions_total{tenant="b"} 0
# HELP gpuos_tenant_gpu_seconds_total GPU time charged (compute engine), in seconds. Summed over the tenant's sessions.
# TYPE gpuos_tenant_gpu_seconds_total counter
gpuos_tenant_gpu_seconds_total{tenant="_other"} 0
gpuos_tenant_gpu_seconds_total{tenant="a"} 1.5
gpuos_tenant_gpu_seconds_total{tenant="b"} 0
# HELP gpuos_tenant_in_flight Commands issued to the device and not yet complete. Summed over the tenant's sessions.
# TYPE gpuos_tenant_in_flight gauge
gpuos_tenant_in_flight{tenant="_other"} 0
gpuos_tenant_in_flight{tenant="a"} 0
gpuos_tenant_in_flight{tenant="b"} 4
# HELP gpuos_tenant_launches_total Kernel launches. Summed over the tenant's sessions.
# TYPE gpuos_tenant_launches_total counter
gpuos_tenant_launches_total{tenant="_other"} 1
gpuos_tenant_launches_total{tenant="a"} 15
gpuos_tenant_launches_total{tenant="b"} 0
# HELP gpuos_tenant_memory_bytes Device memory in use. Summed over the tenant's sessions.
# TYPE gpuos_tenant_memory_bytes gauge
gpuos_tenant_memory_bytes{tenant="_other"} 0
gpuos_tenant_memory_bytes{tenant="a"} 6.291456e+06
gpuos_tenant_memory_bytes{tenant="b"} 0
# HELP gpuos_tenant_memory_quota_bytes Device-memory quota across the tenant's sessions (absent: unlimited).
# TYPE gpuos_tenant_memory_quota_bytes gauge
gpuos_tenant_memory_quota_bytes{tenant="a"} 1.073741824e+09
# HELP gpuos_tenant_queue_delay_seconds_total Time commands waited in the daemon's queues before issue, summed over commands, in seconds. Summed over the tenant's sessions.
# TYPE gpuos_tenant_queue_delay_seconds_total counter
gpuos_tenant_queue_delay_seconds_total{tenant="_other"} 0
gpuos_tenant_queue_delay_seconds_total{tenant="a"} 0
gpuos_tenant_queue_delay_seconds_total{tenant="b"} 0.25
# HELP gpuos_tenant_sessions Sessions open.
# TYPE gpuos_tenant_sessions gauge
gpuos_tenant_sessions{tenant="_other"} 1
gpuos_tenant_sessions{tenant="a"} 2
gpuos_tenant_sessions{tenant="b"} 1
# HELP gpuos_tenant_swapped_bytes Bytes of the tenant's device memory held in host memory now. Summed over the tenant's sessions.
# TYPE gpuos_tenant_swapped_bytes gauge
gpuos_tenant_swapped_bytes{tenant="_other"} 0
gpuos_tenant_swapped_bytes{tenant="a"} 2.097152e+06
gpuos_tenant_swapped_bytes{tenant="b"} 0
# HELP gpuos_tenant_violations_total Guard violations (accesses outside the session's window). Summed over the tenant's sessions.
# TYPE gpuos_tenant_violations_total counter
gpuos_tenant_violations_total{tenant="_other"} 0
gpuos_tenant_violations_total{tenant="a"} 0
gpuos_tenant_violations_total{tenant="b"} 1
# HELP gpuos_tenant_weight Compute share weight from the configuration.
# TYPE gpuos_tenant_weight gauge
gpuos_tenant_weight{tenant="a"} 3
gpuos_tenant_weight{tenant="b"} 1
`
	names := []string{"gpuos_clients_denied_total", "gpuos_driver_restarts_total", "gpuos_driver_up",
		"gpuos_session_launches_total", "gpuos_tenant_evictions_total", "gpuos_tenant_gpu_seconds_total",
		"gpuos_tenant_in_flight", "gpuos_tenant_launches_total", "gpuos_tenant_memory_bytes",
		"gpuos_tenant_memory_quota_bytes", "gpuos_tenant_queue_delay_seconds_total", "gpuos_tenant_sessions",
		"gpuos_tenant_swapped_bytes", "gpuos_tenant_violations_total", "gpuos_tenant_weight"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	// The pedantic registry checks every metric against its descriptor.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Errorf("pedantic gather: %v", err)
	}
}

// gatherValue returns the value of one series, and whether it was present.
func gatherValue(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if matches(m, labels) {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue(), true
				case m.Gauge != nil:
					return m.Gauge.GetValue(), true
				}
			}
		}
	}
	return 0, false
}

func matches(m *dto.Metric, labels map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := labels[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(labels)
}

// TestTenantCountersNeverDecrease follows one tenant through sessions that
// open and close and a driver that stops answering and restarts.
func TestTenantCountersNeverDecrease(t *testing.T) {
	sess := func(id, launches, evictions uint64) v1.SessionStat {
		return v1.SessionStat{ID: id, Tenant: "a", Launches: launches, Evictions: evictions}
	}
	steps := []struct {
		name          string
		devices       []metrics.Device
		sessions      []v1.SessionStat
		wantLaunches  float64
		wantEvictions float64
		wantSessions  float64
	}{
		{"first session", up(0), []v1.SessionStat{sess(1, 10, 2)}, 10, 2, 1},
		{"second session", up(0), []v1.SessionStat{sess(1, 20, 4), sess(2, 5, 4)}, 25, 4, 2},
		{"first closes", up(0), []v1.SessionStat{sess(2, 6, 4)}, 26, 4, 1},
		{"driver silent: held", []metrics.Device{{Ordinal: 0, Up: false}}, nil, 26, 4, 0},
		{"driver answers again", up(0), []v1.SessionStat{sess(2, 8, 5)}, 28, 5, 1},
		{"driver died: restarted, sessions gone", []metrics.Device{{Ordinal: 0, Up: false, Restarts: 1}}, nil, 28, 5, 0},
		{"new driver, new session", up(1), []v1.SessionStat{sess(3, 1, 1)}, 29, 6, 1},
		{"tenant-wide counter reset without a restart seen", up(1), []v1.SessionStat{sess(3, 2, 0)}, 30, 6, 1},
		{"all closed", up(1), nil, 30, 6, 0},
	}
	src := &fixed{}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(src, metrics.Options{}))
	a := map[string]string{"tenant": "a"}
	for _, s := range steps {
		src.snap = metrics.Snapshot{Tenants: twoTenants, Devices: s.devices, Sessions: s.sessions}
		if got, _ := gatherValue(t, reg, "gpuos_tenant_launches_total", a); got != s.wantLaunches {
			t.Errorf("%s: launches %v, want %v", s.name, got, s.wantLaunches)
		}
		if got, _ := gatherValue(t, reg, "gpuos_tenant_evictions_total", a); got != s.wantEvictions {
			t.Errorf("%s: evictions %v, want %v", s.name, got, s.wantEvictions)
		}
		if got, _ := gatherValue(t, reg, "gpuos_tenant_sessions", a); got != s.wantSessions {
			t.Errorf("%s: sessions %v, want %v", s.name, got, s.wantSessions)
		}
	}
}

func TestSessionSeriesDisappearWithTheirSession(t *testing.T) {
	src := &fixed{metrics.Snapshot{Tenants: twoTenants, Devices: up(0),
		Sessions: []v1.SessionStat{{ID: 7, Tenant: "b", Launches: 3}}}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(src, metrics.Options{}))
	series := map[string]string{"session": "7", "tenant": "b", "device": "0"}
	if v, ok := gatherValue(t, reg, "gpuos_session_launches_total", series); !ok || v != 3 {
		t.Errorf("open session: launches %v (present %v), want 3", v, ok)
	}
	src.snap.Sessions = nil
	if _, ok := gatherValue(t, reg, "gpuos_session_launches_total", series); ok {
		t.Error("the series of a closed session is still exported")
	}
	if v, _ := gatherValue(t, reg, "gpuos_tenant_launches_total", map[string]string{"tenant": "b"}); v != 3 {
		t.Errorf("tenant launches after close: %v, want 3", v)
	}
}

func TestNoSessionSeries(t *testing.T) {
	src := &fixed{metrics.Snapshot{Tenants: twoTenants, Devices: up(0),
		Sessions: []v1.SessionStat{{ID: 1, Tenant: "a", Launches: 3}}}}
	c := metrics.NewCollector(src, metrics.Options{NoSessionSeries: true})
	if n := testutil.CollectAndCount(c, "gpuos_session_launches_total"); n != 0 {
		t.Errorf("%d per-session series with NoSessionSeries", n)
	}
	if n := testutil.CollectAndCount(c, "gpuos_tenant_launches_total"); n != 2 {
		t.Errorf("%d tenant launch series, want 2", n)
	}
}

// TestSourceOverrunDoesNotHangScrape: a Source that ignores its deadline
// delays the scrape by the timeout, no more, and the overrun is counted.
func TestSourceOverrunDoesNotHangScrape(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	src := metrics.SourceFunc(func(context.Context) metrics.Snapshot {
		<-release
		return metrics.Snapshot{}
	})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(src, metrics.Options{Timeout: 10 * time.Millisecond}))
	for want := 1.0; want <= 2; want++ {
		if v, ok := gatherValue(t, reg, "gpuos_metrics_source_overruns_total", nil); !ok || v != want {
			t.Errorf("overruns %v (present %v), want %v", v, ok, want)
		}
	}
}

func TestHandlerExposition(t *testing.T) {
	src := &fixed{metrics.Snapshot{Tenants: twoTenants, Devices: up(0),
		Sessions: []v1.SessionStat{{ID: 1, Tenant: "a", Copies: 4, CopyBytes: 4096}}}}
	srv := httptest.NewServer(metrics.Handler(metrics.NewRegistry(src, metrics.Options{})))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	for _, name := range []string{"gpuos_tenant_copy_bytes_total", "gpuos_session_copies_total", "gpuos_driver_up", "go_goroutines", "process_start_time_seconds"} {
		if mfs[name] == nil {
			t.Errorf("exposition lacks %s", name)
		}
	}
	if mf := mfs["gpuos_tenant_copy_bytes_total"]; mf != nil {
		for _, m := range mf.GetMetric() {
			if matches(m, map[string]string{"tenant": "a"}) && m.GetCounter().GetValue() != 4096 {
				t.Errorf("tenant a copy bytes %v, want 4096", m.GetCounter().GetValue())
			}
		}
	}
}
