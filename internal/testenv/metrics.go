package testenv

import (
	"net/http/httptest"
	"testing"

	"github.com/gpuos/gpuos/internal/metrics"
)

// MetricsURL serves the manager's Prometheus metrics on a loopback HTTP
// server until the test ends, and returns the URL to scrape.
func (e *Env) MetricsURL(t testing.TB, o metrics.Options) string {
	t.Helper()
	srv := httptest.NewServer(e.Manager.MetricsHandler(o))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}
