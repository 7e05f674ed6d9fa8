package manager_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/manager"
)

// TestStartFailsWhenTheDriverCannotStart: a first driver that exits before
// it is ready (here a setting it refuses) makes Start fail with the reason,
// at once, rather than restart it for ever while clients wait.
func TestStartFailsWhenTheDriverCannotStart(t *testing.T) {
	dir := t.TempDir()
	m, err := manager.New(manager.Options{
		Socket:        filepath.Join(dir, "gpuos.sock"),
		Backend:       "sim",
		DriverCommand: []string{"/bin/sh", "-c", "echo 'gpuos driver: a bad setting' >&2; exit 3"},
		AuditLog:      filepath.Join(dir, "audit.jsonl"),
		MinBackoff:    20 * time.Millisecond,
		MaxBackoff:    200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	err = m.Start(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start = %v, want the driver's exit", err)
	}
	t.Logf("Start failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
}
