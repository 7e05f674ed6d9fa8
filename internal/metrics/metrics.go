package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Snapshot is the daemon's state at one scrape.
type Snapshot struct {
	// Tenants are the configured tenants. Their names are the only tenant
	// label values besides OtherTenant.
	Tenants []Tenant
	// Devices are the devices and how their drivers fared.
	Devices []Device
	// Sessions are the sessions of the drivers that answered.
	Sessions []v1.SessionStat
	// ClientsDenied counts clients the manager refused since it started.
	ClientsDenied uint64
}

// Tenant is a configured tenant.
type Tenant struct {
	Name        string
	MemoryQuota uint64 // device-memory quota across its sessions; 0 = unlimited
	Weight      uint32 // compute share weight; 0 = not known
}

// Device is one device and its driver process.
type Device struct {
	Ordinal int
	// Up reports that the driver is running and answered within the deadline.
	// The sessions of a device that is not up are held at their last values.
	Up       bool
	Restarts uint64 // times the driver was restarted
}

// OtherTenant is the tenant label of sessions whose tenant is not configured,
// so that label values stay bounded by the configuration.
const OtherTenant = "_other"

// Source gives the Collector a Snapshot. It must return by ctx's deadline;
// a driver that has not answered by then is reported as not up.
type Source interface {
	Snapshot(ctx context.Context) Snapshot
}

// SourceFunc adapts a function to a Source.
type SourceFunc func(ctx context.Context) Snapshot

// Snapshot calls f.
func (f SourceFunc) Snapshot(ctx context.Context) Snapshot { return f(ctx) }

// DefaultTimeout is how long a scrape waits for the Source unless told otherwise.
const DefaultTimeout = time.Second

// Options configure a Collector.
type Options struct {
	// Timeout bounds how long a scrape waits for the Source (0: DefaultTimeout).
	Timeout time.Duration
	// NoSessionSeries leaves out the per-session series (gpuos_session_*), for
	// hosts with many short sessions; the tenant series are unaffected.
	NoSessionSeries bool
}

// Collector is a prometheus.Collector that asks a Source at each scrape.
type Collector struct {
	src Source
	opt Options

	sessionDescs []*prometheus.Desc // by stat index; nil for tenantWide stats
	tenantDescs  []*prometheus.Desc // by stat index
	tenantSess   *prometheus.Desc
	tenantQuota  *prometheus.Desc
	tenantWeight *prometheus.Desc
	driverUp     *prometheus.Desc
	restarts     *prometheus.Desc
	denied       *prometheus.Desc
	overruns     *prometheus.Desc

	// mu serializes scrapes, so the tallies see snapshots in order. It is held
	// across the Source call, which is bounded by the timeout.
	mu      sync.Mutex
	tally   tally
	overran uint64 // scrapes at which the Source missed its deadline
}

// NewCollector returns a Collector of src's metrics.
func NewCollector(src Source, o Options) *Collector {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	c := &Collector{src: src, opt: o, tally: newTally()}
	tenant, device, session := []string{"tenant"}, []string{"device"}, []string{"tenant", "device", "session"}
	for _, s := range stats {
		var sd *prometheus.Desc
		if s.scope == perSession {
			sd = prometheus.NewDesc("gpuos_session_"+s.name, s.help, session, nil)
		}
		c.sessionDescs = append(c.sessionDescs, sd)
		c.tenantDescs = append(c.tenantDescs, prometheus.NewDesc("gpuos_tenant_"+s.name, s.help+" Summed over the tenant's sessions.", tenant, nil))
	}
	c.tenantSess = prometheus.NewDesc("gpuos_tenant_sessions", "Sessions open.", tenant, nil)
	c.tenantQuota = prometheus.NewDesc("gpuos_tenant_memory_quota_bytes", "Device-memory quota across the tenant's sessions (absent: unlimited).", tenant, nil)
	c.tenantWeight = prometheus.NewDesc("gpuos_tenant_weight", "Compute share weight from the configuration.", tenant, nil)
	c.driverUp = prometheus.NewDesc("gpuos_driver_up", "1 if the device's driver process is running and answered this scrape in time.", device, nil)
	c.restarts = prometheus.NewDesc("gpuos_driver_restarts_total", "Times the device's driver process was restarted.", device, nil)
	c.denied = prometheus.NewDesc("gpuos_clients_denied_total", "Clients the manager refused to authenticate.", nil, nil)
	c.overruns = prometheus.NewDesc("gpuos_metrics_source_overruns_total", "Scrapes at which the daemon's state could not be read in time.", nil, nil)
	return c
}

// Describe sends the descriptors of every metric the Collector can emit.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for i := range stats {
		if c.sessionDescs[i] != nil && !c.opt.NoSessionSeries {
			ch <- c.sessionDescs[i]
		}
		ch <- c.tenantDescs[i]
	}
	for _, d := range []*prometheus.Desc{c.tenantSess, c.tenantQuota, c.tenantWeight, c.driverUp, c.restarts, c.denied, c.overruns} {
		ch <- d
	}
}

// Collect asks the Source for a snapshot and sends its metrics. It returns
// within one and a half times the timeout even if the Source does not.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.opt.Timeout)
	defer cancel()
	got := make(chan Snapshot, 1)
	go func() { got <- c.src.Snapshot(ctx) }()
	// The Source needs a moment after its deadline to return what it has.
	abandon := time.NewTimer(c.opt.Timeout + c.opt.Timeout/2)
	defer abandon.Stop()
	var snap Snapshot
	select {
	case snap = <-got:
	case <-abandon.C:
		// A Source that ignores its deadline must not hang the scrape; it
		// finishes into the buffered channel and is dropped.
		c.overran++
		ch <- prometheus.MustNewConstMetric(c.overruns, prometheus.CounterValue, float64(c.overran))
		return
	}
	ch <- prometheus.MustNewConstMetric(c.overruns, prometheus.CounterValue, float64(c.overran))
	c.emit(ch, snap)
}

func (c *Collector) emit(ch chan<- prometheus.Metric, snap Snapshot) {
	known := make(map[string]bool, len(snap.Tenants))
	for _, t := range snap.Tenants {
		known[t.Name] = true
	}
	label := func(name string) string {
		if known[name] {
			return name
		}
		return OtherTenant
	}
	totals := c.tally.update(snap, label)

	for _, t := range snap.Tenants {
		if t.MemoryQuota != 0 {
			ch <- prometheus.MustNewConstMetric(c.tenantQuota, prometheus.GaugeValue, float64(t.MemoryQuota), t.Name)
		}
		if t.Weight != 0 {
			ch <- prometheus.MustNewConstMetric(c.tenantWeight, prometheus.GaugeValue, float64(t.Weight), t.Name)
		}
	}
	for name, tot := range totals {
		ch <- prometheus.MustNewConstMetric(c.tenantSess, prometheus.GaugeValue, float64(tot.sessions), name)
		for i := range stats {
			ch <- prometheus.MustNewConstMetric(c.tenantDescs[i], stats[i].typ, tot.values[i], name)
		}
	}
	if !c.opt.NoSessionSeries {
		for i := range snap.Sessions {
			s := &snap.Sessions[i]
			tenant, dev, id := label(s.Tenant), strconv.FormatUint(uint64(s.Device), 10), strconv.FormatUint(s.ID, 10)
			for j := range stats {
				if d := c.sessionDescs[j]; d != nil {
					ch <- prometheus.MustNewConstMetric(d, stats[j].typ, stats[j].value(s), tenant, dev, id)
				}
			}
		}
	}
	for _, d := range snap.Devices {
		up, ord := 0.0, strconv.Itoa(d.Ordinal)
		if d.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.driverUp, prometheus.GaugeValue, up, ord)
		ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.CounterValue, float64(d.Restarts), ord)
	}
	ch <- prometheus.MustNewConstMetric(c.denied, prometheus.CounterValue, float64(snap.ClientsDenied))
}

// NewRegistry returns a private registry (not the global one) holding a
// Collector of src and the Go runtime and process collectors of this process.
func NewRegistry(src Source, o Options) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(src, o), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves a registry's metrics in the Prometheus exposition formats.
// A metric that fails to gather is left out rather than failing the scrape.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
