package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/backend/auto"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/benchmark"
	"github.com/gpuos/gpuos/internal/config"
)

func init() {
	register(&command{name: "bench", summary: "measure gpuos against native use of the same GPU, in one run", run: benchCmd})
}

func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", stderr)
	backendName := fs.String("backend", "auto", "backend: auto (a real GPU when present), sim or cuda")
	jsonFile := fs.String("json", "", "also write the results as JSON to this file")
	quick := fs.Bool("quick", false, "small sizes and counts (for the software GPU and tests)")
	rounds := fs.Int("rounds", 3, "alternations of native and gpuos per measurement")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	simMem, _ := config.ParseSize(simMemoryForLocal)
	choice, err := auto.Open(*backendName, auto.Options{Sim: sim.Options{Memory: uint64(simMem)}})
	if err != nil {
		return err
	}
	// Two tenants of this user: a guarded one (the default tier) and a trusted
	// one for which the memory-bound kernel is allowlisted, so the guard's
	// overhead and gpuos's own are measured apart.
	sum := sha256.Sum256(benchmark.StreamPTX)
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
tenants:
  - {name: bench, uids: [self]}
  - {name: bench-trusted, uids: [self], trust: trusted}
trusted_modules: [%s]
`, hex.EncodeToString(sum[:]))))
	if err != nil {
		return err
	}
	// The daemon uses the backend that was chosen here, so both sides match.
	m, stop, err := localDaemon(ctx, cfg, choice.Backend.Name())
	if err != nil {
		return err
	}
	defer stop()
	dev, err := choice.Backend.Open(0)
	if err != nil {
		return fmt.Errorf("open device 0 natively: %w", err)
	}
	defer dev.Close()
	open := func(tenant string) (*client.Session, func(), error) {
		c, err := client.Dial(ctx, client.Options{Socket: m.Socket(), Program: "gpuos-bench", Tenant: tenant})
		if err != nil {
			return nil, nil, err
		}
		s, err := c.OpenSession(ctx, client.SessionOptions{Label: tenant})
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		return s, func() { s.Close(); c.Close() }, nil
	}
	s, closeS, err := open("bench")
	if err != nil {
		return err
	}
	defer closeS()
	ts, closeT, err := open("bench-trusted")
	if err != nil {
		return err
	}
	defer closeT()
	info := dev.Info()
	fmt.Fprintf(stdout, "gpuos bench %s: backend %s (%s), %s, driver %d, rounds %d\n", time.Now().Format("2006-01-02"),
		choice.Backend.Name(), choice.Reason, info.Name, choice.Backend.DriverVersion(), *rounds)
	results, err := benchmark.Run(ctx, benchmark.Options{Native: dev, Session: s, Trusted: ts, Quick: *quick, Rounds: *rounds, Log: stderr})
	if err != nil {
		return err
	}
	benchmark.Table(stdout, results)
	if *jsonFile != "" {
		out := struct {
			Date    string             `json:"date"`
			Backend string             `json:"backend"`
			Device  string             `json:"device"`
			Driver  int                `json:"driver_version"`
			Quick   bool               `json:"quick"`
			Results []benchmark.Result `json:"results"`
		}{time.Now().Format(time.RFC3339), choice.Backend.Name(), info.Name, choice.Backend.DriverVersion(), *quick, results}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonFile, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}
