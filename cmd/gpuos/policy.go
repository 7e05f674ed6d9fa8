package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/wire"
)

func init() {
	register(&command{name: "policy", summary: "scheduling: list, use, load and unload policies, their maps, tenants' shares", run: policyCmd})
}

const policyUsage = `usage:
  gpuos policy list [--socket PATH] [--json]
      the scheduling policies and which is active
  gpuos policy use NAME [--socket PATH]
      switch every device to policy NAME; queued work is kept, in order
  gpuos policy set-share TENANT [compute=N] [copy=N] [memory=SIZE] [class=low|normal|high] [--socket PATH]
      change a tenant's virtual GPU: compute and copy-bandwidth weights, memory share, class
  gpuos policy tenants [--socket PATH] [--json]
      each tenant's GPU time, share against target, queue delay, in flight
` + policyEngineUsage

func policyCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, policyUsage)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	sub := args[0]
	if run, ok := policySubcommands[sub]; ok { // policy_load.go
		return run(ctx, args[1:], stdout, stderr)
	}
	fs := newFlags("policy "+sub, stderr)
	fs.Usage = func() { fmt.Fprint(stderr, policyUsage) }
	socket := fs.String("socket", "", "the daemon's socket (default $GPUOS_SOCKET, else the default path)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return errUsage
	}
	bad := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "gpuos policy %s: "+format+"\n", append([]any{sub}, a...)...)
		fmt.Fprint(stderr, policyUsage)
		return errUsage
	}
	switch sub {
	case "list", "tenants":
		if len(pos) != 0 {
			return bad("takes no arguments")
		}
	case "use":
		if len(pos) != 1 {
			return bad("names one policy")
		}
	case "set-share":
		if len(pos) < 2 {
			return bad("names a tenant and at least one of compute=, copy=, memory=, class=")
		}
	default:
		return bad("unknown subcommand")
	}
	var share *v1.SetShare
	if sub == "set-share" {
		if share, err = parseShare(pos[0], pos[1:]); err != nil {
			return bad("%v", err)
		}
	}
	mgr, err := dialManager(ctx, *socket)
	if err != nil {
		return err
	}
	defer mgr.Close()
	switch sub {
	case "list":
		var p v1.Policies
		if err := mgr.Call(ctx, &v1.PolicyList{}, &p); err != nil {
			return fmt.Errorf("list policies: %w", err)
		}
		if *asJSON {
			return printJSON(stdout, &p)
		}
		printPolicies(stdout, &p)
	case "use":
		if err := mgr.Call(ctx, &v1.PolicyUse{Name: pos[0]}, nil); err != nil {
			return fmt.Errorf("use %s: %w", pos[0], err)
		}
		fmt.Fprintf(stdout, "policy %s is active\n", pos[0])
	case "set-share":
		if err := mgr.Call(ctx, share, nil); err != nil {
			return fmt.Errorf("set share of %s: %w", share.Tenant, err)
		}
		fmt.Fprintf(stdout, "tenant %s: %s\n", share.Tenant, strings.Join(pos[1:], " "))
	case "tenants":
		ts, err := tenantStats(ctx, mgr)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, ts)
		}
		printTenants(stdout, ts)
	}
	return nil
}

// parseInterleaved parses flags that may come before, between or after the
// positional arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseShare parses "compute=3 copy=1 memory=4GiB class=high".
func parseShare(tenant string, kvs []string) (*v1.SetShare, error) {
	s := &v1.SetShare{Tenant: tenant}
	weight := func(v string) (uint32, error) {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n < 1 || n > 1<<20 {
			return 0, fmt.Errorf("weight %q: want a whole number from 1 to %d", v, 1<<20)
		}
		return uint32(n), nil
	}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			return nil, fmt.Errorf("%q: want key=value", kv)
		}
		var err error
		switch k {
		case "compute":
			s.Fields |= v1.ShareCompute
			s.Compute, err = weight(v)
		case "copy":
			s.Fields |= v1.ShareCopy
			s.Copy, err = weight(v)
		case "memory":
			s.Fields |= v1.ShareMemory
			var n config.Size
			n, err = config.ParseSize(v)
			s.Memory = uint64(n)
		case "class", "priority":
			s.Fields |= v1.ShareClass
			var p config.Priority
			p, err = config.ParsePriority(v)
			s.Class = int32(p)
		default:
			return nil, fmt.Errorf("unknown share %q (want compute, copy, memory or class)", k)
		}
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// dialManager connects to the daemon's manager with the wire protocol and
// greets it, as the client library does.
func dialManager(ctx context.Context, socket string) (*wire.Client, error) {
	if socket == "" {
		socket = os.Getenv("GPUOS_SOCKET")
	}
	if socket == "" {
		socket = client.DefaultSocket()
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := wire.Dial(ctx, socket)
	if err != nil {
		return nil, fmt.Errorf("dial gpuos at %s: %w", socket, err)
	}
	mgr := wire.NewClient(conn)
	hello := v1.NewHello(v1.RoleClient, os.Getenv("GPUOS_TOKEN"), filepath.Base(os.Args[0]))
	hello.Tenant = os.Getenv("GPUOS_TENANT")
	if err := mgr.Call(ctx, hello, nil); err != nil {
		mgr.Close()
		return nil, fmt.Errorf("hello: %w", err)
	}
	return mgr, nil
}

func tenantStats(ctx context.Context, mgr *wire.Client) ([]v1.TenantStat, error) {
	var ts v1.Tenants
	if err := mgr.Call(ctx, &v1.TenantStats{}, &ts); err != nil {
		return nil, fmt.Errorf("tenant stats: %w", err)
	}
	return ts.Tenants, nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printPolicies(w io.Writer, p *v1.Policies) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tACTIVE\tKIND\tDESCRIPTION")
	for _, pi := range p.Policies {
		active, kind := "", "loaded"
		if pi.Active {
			active = "*"
		}
		if pi.Builtin {
			kind = "built-in"
		}
		desc := pi.Description
		if pi.Ejected != "" {
			desc += " [ejected: " + pi.Ejected + "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", pi.Name, active, kind, desc)
	}
	tw.Flush()
	fmt.Fprintf(w, "active: %s; a misbehaving policy is replaced by %s\n", p.Active, p.Fallback)
}

func className(c int32, set bool) string {
	n := map[int32]string{-1: "low", 0: "normal", 1: "high"}[c]
	if n == "" {
		n = strconv.Itoa(int(c))
	}
	if !set {
		n += " (nice)"
	}
	return n
}

func pct(ppm uint32) string { return fmt.Sprintf("%.1f%%", float64(ppm)/1e4) }

// printTenants prints the tenant view: each tenant's virtual GPU and how it
// is being served, per device.
func printTenants(w io.Writer, ts []v1.TenantStat) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tDEV\tCLASS\tWEIGHTS\tMEMORY\tSESSIONS\tGPU-TIME\tGPU-SHARE\tTARGET\tCOPIED\tCOPY-SHARE\tTARGET\tQ-DELAY\tIN-FLIGHT\tQUEUED")
	for _, t := range ts {
		mem := "-"
		if t.Memory > 0 {
			mem = config.Size(t.Memory).Human()
		}
		var avgDelay time.Duration
		if t.Dispatched > 0 {
			avgDelay = time.Duration(t.QueueDelayNs / t.Dispatched)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d/%d\t%s\t%d\t%v\t%s\t%s\t%s\t%s\t%s\t%v avg\t%d\t%d\n", t.Name, t.Device,
			className(t.Class, t.ClassSet), t.Compute, t.Copy, mem, t.Sessions,
			time.Duration(t.GPUTimeNs).Round(time.Microsecond), pct(t.ComputeShare), pct(t.ComputeTarget),
			config.Size(t.CopyBytes).Human(), pct(t.CopyShare), pct(t.CopyTarget),
			avgDelay.Round(100*time.Nanosecond), t.InFlight, t.Queued)
	}
	tw.Flush()
}

// psTenants prints the tenant view after gpuos ps's sessions.
func psTenants(ctx context.Context, socket string, w io.Writer) error {
	mgr, err := dialManager(ctx, socket)
	if err != nil {
		return err
	}
	defer mgr.Close()
	ts, err := tenantStats(ctx, mgr)
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	printTenants(w, ts)
	return nil
}
