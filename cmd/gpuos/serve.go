package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/driver"
	"github.com/gpuos/gpuos/internal/manager"
	"github.com/gpuos/gpuos/internal/metrics"
)

const (
	protoMajor = v1.Major
	protoMinor = v1.Minor
)

func init() {
	register(&command{name: "serve", summary: "run the daemon", run: serveCmd})
}

func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	backendName := fs.String("backend", "", "backend: auto, sim or cuda (default: the config's, else auto)")
	socket := fs.String("socket", "", "listening socket (default $XDG_RUNTIME_DIR/gpuos.sock, else /run/gpuos/gpuos.sock)")
	configFile := fs.String("config", "", "YAML configuration (default: one tenant made of the local user)")
	auditLog := fs.String("audit", "", "audit log file (default: gpuos-audit.jsonl beside the socket)")
	devMem := fs.String("device-memory", "", "cap on device memory gpuos may use, e.g. 16GiB (default: all)")
	simMem := fs.String("sim-memory", "", "memory of each software GPU, e.g. 4GiB (sim backend only)")
	swap := fs.String("swap", "", "pinned host memory for swapping device memory out, e.g. 32GiB, or off (default: twice the device memory, within half the host's)")
	minRes := fs.Duration("min-residency", 0, "how long a session just swapped back in is kept from eviction (default 50ms)")
	verbose := fs.Bool("v", false, "log at debug level")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9400 (default: off)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	// First, so that every thread of the daemon, and the driver processes it
	// starts, stay off the CPUs kept for high-class sessions.
	if err := driver.KeepOffHighClassCPUs(); err != nil {
		return err
	}
	cfg := config.Default()
	if *configFile != "" {
		var err error
		if cfg, err = config.Load(*configFile); err != nil {
			return err
		}
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	opts := manager.Options{Config: cfg, Socket: *socket, Backend: *backendName, AuditLog: *auditLog, Log: log}
	if *devMem != "" {
		n, err := config.ParseSize(*devMem)
		if err != nil {
			return fmt.Errorf("--device-memory: %w", err)
		}
		opts.DeviceMemory = uint64(n)
	}
	if *simMem != "" {
		if _, err := config.ParseSize(*simMem); err != nil {
			return fmt.Errorf("--sim-memory: %w", err)
		}
		opts.DriverArgs = append(opts.DriverArgs, "--sim-memory", *simMem)
	}
	switch *swap {
	case "":
	case "off", "0":
		opts.DriverArgs = append(opts.DriverArgs, "--swap", "-1")
	default:
		n, err := config.ParseSize(*swap)
		if err != nil {
			return fmt.Errorf("--swap: %w", err)
		}
		opts.DriverArgs = append(opts.DriverArgs, "--swap", fmt.Sprint(uint64(n)))
	}
	if *minRes != 0 {
		opts.DriverArgs = append(opts.DriverArgs, "--min-residency", minRes.String())
	}
	m, err := manager.New(opts)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "gpuos %s serving on %s (audit log %s)\n", Version, m.Socket(), m.AuditLog())
	if *metricsAddr != "" {
		addr, err := m.ListenMetrics(ctx, *metricsAddr, metrics.Options{})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "metrics at http://%s/metrics\n", addr)
	}
	err = m.Serve(ctx)
	if ctx.Err() != nil {
		// Stopped by a signal (SIGINT or SIGTERM): say so, so that a daemon
		// that went away is told from one that crashed.
		fmt.Fprintf(stdout, "gpuos: interrupted; stopped serving on %s\n", m.Socket())
	}
	return err
}
