// Package metrics exports gpuos's state as Prometheus metrics: per tenant and
// per session (GPU time, memory, launches, copies, queue delay, in-flight,
// evictions, guard violations), per device (driver up, restarts) and for the
// manager (clients denied).
//
// Nothing is counted here. A Collector asks a Source (the manager) for a
// Snapshot at each scrape, with a deadline, so a slow or dead driver delays a
// scrape by little more than that deadline and shows as gpuos_driver_up 0. Which
// v1.SessionStat field becomes which series is one table (table.go): exporting
// a new field is one row.
//
// Tenant series stay monotonic although sessions come and go: the counters of
// a session that has closed are folded into its tenant's totals at the last
// value a scrape saw (work done after that last scrape is not counted), and a
// session whose driver did not answer is held at its last value rather than
// taken as closed.
//
// Label cardinality is bounded: tenant label values are the configured tenants'
// names (anything else is reported as tenant "_other"), device values are the
// device ordinals, and session ids appear only on per-session series, which
// disappear when their session closes.
//
// Lock order: Collector.mu only. It serializes scrapes and is held across the
// call to the Source, which the timeout bounds.
package metrics
