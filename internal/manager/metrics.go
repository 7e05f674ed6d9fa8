package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/metrics"
)

// MetricsHandler returns a handler that serves the manager's Prometheus
// metrics from a private registry, reading the drivers at each scrape (each
// bounded by o.Timeout). Each handler keeps its own tallies: make one per
// listener.
func (m *Manager) MetricsHandler(o metrics.Options) http.Handler {
	return metrics.Handler(metrics.NewRegistry(metrics.SourceFunc(m.metricsSnapshot), o))
}

// ServeMetrics serves MetricsHandler at /metrics on ln until ctx ends.
func (m *Manager) ServeMetrics(ctx context.Context, ln net.Listener, o metrics.Options) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.MetricsHandler(o))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	})
	defer stop()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve metrics: %w", err)
	}
	return nil
}

// ListenMetrics listens on addr (host:port) and serves the metrics at
// /metrics in the background until ctx ends. It returns the address bound.
func (m *Manager) ListenMetrics(ctx context.Context, addr string, o metrics.Options) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics: %w", err)
	}
	go func() {
		if err := m.ServeMetrics(ctx, ln, o); err != nil {
			m.log.Warn("metrics listener stopped", "err", err)
		}
	}()
	return ln.Addr(), nil
}

// metricsSnapshot asks every driver for its sessions at once and returns by
// ctx's deadline: a driver that is down, or has not answered by then, is
// reported as not up.
func (m *Manager) metricsSnapshot(ctx context.Context) metrics.Snapshot {
	m.mu.Lock()
	drivers := append([]*driverProc(nil), m.drivers...)
	m.mu.Unlock()

	snap := metrics.Snapshot{ClientsDenied: m.denied.Load()}
	for i := range m.cfg.Tenants {
		t := &m.cfg.Tenants[i]
		snap.Tenants = append(snap.Tenants, metrics.Tenant{Name: t.Name, MemoryQuota: uint64(t.Memory),
			Weight: uint32(max(t.Weight, 1))})
	}

	type answer struct {
		i        int
		sessions []v1.SessionStat
	}
	answers := make(chan answer, len(drivers)) // buffered: a late answer never blocks its goroutine
	pending := 0
	for i, d := range drivers {
		d.mu.Lock()
		restarts := d.restarts
		d.mu.Unlock()
		snap.Devices = append(snap.Devices, metrics.Device{Ordinal: d.ordinal, Restarts: uint64(restarts)})
		ctl, err := d.controlNow()
		if err != nil {
			continue
		}
		pending++
		go func() {
			var s v1.Sessions
			if ctl.Call(ctx, &v1.DriverStats{}, &s) == nil {
				answers <- answer{i, s.Sessions}
			} else {
				answers <- answer{i: -1}
			}
		}()
	}
	for ; pending > 0; pending-- {
		select {
		case a := <-answers:
			if a.i >= 0 {
				snap.Devices[a.i].Up = true
				snap.Sessions = append(snap.Sessions, a.sessions...)
			}
		case <-ctx.Done():
			return snap
		}
	}
	return snap
}
