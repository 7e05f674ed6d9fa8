package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/config"
)

func init() {
	register(&command{name: "ps", summary: "list sessions: tenant, memory, launches, copies", run: psCmd})
	register(&command{name: "audit", summary: "show the audit log", run: auditCmd})
}

func dial(ctx context.Context, socket string) (*client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return client.Dial(ctx, client.Options{Socket: socket, Program: "gpuos"})
}

func psCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ps", stderr)
	socket := fs.String("socket", "", "the daemon's socket (default $GPUOS_SOCKET, else the default path)")
	asJSON := fs.Bool("json", false, "print JSON")
	tenants := fs.Bool("tenants", false, "also show each tenant: GPU time, share against target, queue delay (see gpuos policy tenants)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	c, err := dial(ctx, *socket)
	if err != nil {
		return err
	}
	defer c.Close()
	ss, err := c.Sessions(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ss)
	}
	printSessions(stdout, ss)
	if *tenants {
		return psTenants(ctx, *socket, stdout)
	}
	return nil
}

func printSessions(w io.Writer, ss []client.SessionStat) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tTENANT\tDEV\tPID\tLABEL\tMEMORY\tBUFFERS\tLAUNCHES\tCOPIES\tCOPIED\tGPU-TIME\tQ-DELAY\tIN-FLIGHT\tQUEUED\tSTATE")
	for _, s := range ss {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\t%d\t%d\t%d\t%s\t%v\t%v\t%d\t%d\t%s\n", s.ID, s.Tenant, s.Device, s.PID,
			dash(s.Label), config.Size(s.MemoryBytes).Human(), s.Buffers, s.Launches, s.Copies, config.Size(s.CopyBytes).Human(),
			time.Duration(s.GPUTimeNs).Round(time.Microsecond), time.Duration(s.QueueDelayNs).Round(time.Microsecond),
			s.InFlight, s.QueueDepth, s.State)
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func auditCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("audit", stderr)
	socket := fs.String("socket", "", "the daemon's socket (default $GPUOS_SOCKET, else the default path)")
	since := fs.Duration("since", 0, "only records from this long ago (e.g. 10m); 0: all")
	tenant := fs.String("tenant", "", "only this tenant's records")
	n := fs.Int("n", 100, "at most this many records (the most recent)")
	kind := fs.String("kind", "", "only records whose kind starts with this (e.g. deny, session.)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	c, err := dial(ctx, *socket)
	if err != nil {
		return err
	}
	defer c.Close()
	var from int64
	if *since > 0 {
		from = time.Now().Add(-*since).UnixNano()
	}
	lines, err := c.Audit(ctx, from, *tenant, 0)
	if err != nil {
		return err
	}
	var keep []string
	for _, l := range lines {
		if *kind == "" || strings.Contains(l, `"kind":"`+*kind) {
			keep = append(keep, l)
		}
	}
	if len(keep) > *n {
		keep = keep[len(keep)-*n:]
	}
	for _, l := range keep {
		fmt.Fprintln(stdout, l)
	}
	return nil
}
