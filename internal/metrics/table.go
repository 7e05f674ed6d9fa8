package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// scope says whose quantity a SessionStat field is.
type scope uint8

const (
	// perSession: the session's own. It is exported per session, and the
	// tenant's value is the sum over its sessions (closed ones included, for
	// counters).
	perSession scope = iota
	// tenantWide: the tenant's value on the session's device, repeated in each
	// of its sessions there (e.g. evictions). It is exported per tenant only,
	// as the sum over devices.
	tenantWide
)

// stat is one v1.SessionStat field exported as metrics. A perSession stat
// named x becomes gpuos_session_x and gpuos_tenant_x; a tenantWide one
// gpuos_tenant_x.
type stat struct {
	name  string
	help  string
	typ   prometheus.ValueType // prometheus.CounterValue or prometheus.GaugeValue
	scope scope
	value func(*v1.SessionStat) float64
}

func (s *stat) counter() bool { return s.typ == prometheus.CounterValue }

const nsPerSecond = 1e9

// stats is the table of exported SessionStat fields. To export a new field,
// add a row: counters end in _total, units are seconds and bytes.
var stats = []stat{
	{"gpu_seconds_total", "GPU time charged (compute engine), in seconds.", prometheus.CounterValue, perSession,
		func(s *v1.SessionStat) float64 { return float64(s.GPUTimeNs) / nsPerSecond }},
	{"memory_bytes", "Device memory in use.", prometheus.GaugeValue, perSession,
		func(s *v1.SessionStat) float64 { return float64(s.MemoryBytes) }},
	{"buffers", "Buffers held.", prometheus.GaugeValue, perSession,
		func(s *v1.SessionStat) float64 { return float64(s.Buffers) }},
	{"launches_total", "Kernel launches.", prometheus.CounterValue, perSession,
		func(s *v1.SessionStat) float64 { return float64(s.Launches) }},
	{"copies_total", "Copies and memsets.", prometheus.CounterValue, perSession,
		func(s *v1.SessionStat) float64 { return float64(s.Copies) }},
	{"copy_bytes_total", "Bytes copied or set.", prometheus.CounterValue, perSession,
		func(s *v1.SessionStat) float64 { return float64(s.CopyBytes) }},
	{"queue_delay_seconds_total", "Time commands waited in the daemon's queues before issue, summed over commands, in seconds.",
		prometheus.CounterValue, perSession,
		func(s *v1.SessionStat) float64 { return float64(s.QueueDelayNs) / nsPerSecond }},
	{"in_flight", "Commands issued to the device and not yet complete.", prometheus.GaugeValue, perSession,
		func(s *v1.SessionStat) float64 { return float64(s.InFlight) }},
	{"queue_depth", "Commands waiting in the daemon's queues.", prometheus.GaugeValue, perSession,
		func(s *v1.SessionStat) float64 { return float64(s.QueueDepth) }},
	{"violations_total", "Guard violations (accesses outside the session's window).", prometheus.CounterValue, perSession,
		func(s *v1.SessionStat) float64 { return float64(s.Violations) }},
	{"evictions_total", "Chunks of the tenant's memory evicted to host memory.", prometheus.CounterValue, tenantWide,
		func(s *v1.SessionStat) float64 { return float64(s.Evictions) }},
	{"swapped_bytes", "Bytes of the tenant's device memory held in host memory now.", prometheus.GaugeValue, tenantWide,
		func(s *v1.SessionStat) float64 { return float64(s.SwappedBytes) }},
}
