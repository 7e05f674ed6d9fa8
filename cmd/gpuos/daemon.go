package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/manager"
)

// simMemoryForLocal is the software GPU's memory in the daemons demo and bench
// start for themselves.
const simMemoryForLocal = "4GiB"

// localDaemon starts a private manager and its drivers on a temporary socket,
// for commands that run the whole system by themselves (demo, bench).
func localDaemon(ctx context.Context, cfg *config.Config, backendName string) (*manager.Manager, func(), error) {
	dir, err := os.MkdirTemp("", "gpuos-local-")
	if err != nil {
		return nil, nil, err
	}
	m, err := manager.New(manager.Options{Config: cfg, Socket: filepath.Join(dir, "gpuos.sock"), Backend: backendName,
		AuditLog: filepath.Join(dir, "audit.jsonl"), DriverArgs: []string{"--sim-memory", simMemoryForLocal}})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	if err := m.Start(ctx); err != nil {
		m.Close()
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("start drivers: %w", err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		m.Serve(sctx)
		close(served)
	}()
	return m, func() {
		stop()
		<-served
		m.Close()
		os.RemoveAll(dir)
	}, nil
}
