package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/config"
)

func init() {
	register(&command{name: "top", summary: "live per-tenant view: memory, GPU share, launches, copies, queue delay", run: topCmd})
}

func topCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("top", stderr)
	socket := fs.String("socket", "", "the daemon's socket (default $GPUOS_SOCKET, else the default path)")
	interval := fs.Duration("interval", time.Second, "time between refreshes; rates are over this interval")
	iterations := fs.Int("n", 0, "refresh this many times, then exit (0: until interrupted); -n 1 prints once")
	configFile := fs.String("config", "", "the daemon's YAML configuration, to show quotas, target shares and idle tenants")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *interval <= 0 || *iterations < 0 || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "gpuos top: --interval must be positive, -n at least 0, and no arguments follow the flags")
		return errUsage
	}
	var tenants []config.Tenant
	if *configFile != "" {
		cfg, err := config.Load(*configFile)
		if err != nil {
			return err
		}
		tenants = cfg.Tenants
	}
	c, err := dial(ctx, *socket)
	if err != nil {
		return err
	}
	defer c.Close()

	clear := *iterations != 1 && isTerminal(stdout)
	prev, err := c.Sessions(ctx)
	if err != nil {
		return err
	}
	prevAt := time.Now()
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for i := 0; *iterations == 0 || i < *iterations; i++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil // interrupted: a normal way to leave top
		}
		cur, err := c.Sessions(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now := time.Now()
		rows := tenantRows(prev, cur, now.Sub(prevAt), tenants)
		if clear {
			fmt.Fprint(stdout, "\x1b[H\x1b[2J") // home, clear screen
		} else if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "gpuos top  %s  over %s  %d sessions  backend %s\n\n", now.Format("15:04:05"),
			now.Sub(prevAt).Round(time.Millisecond), len(cur), c.Backend())
		printTenantRows(stdout, rows)
		prev, prevAt = cur, now
	}
	return nil
}

// isTerminal reports whether w is a terminal, where top redraws in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// tenantRow is one tenant over one interval.
type tenantRow struct {
	name     string
	sessions int
	memory   uint64
	quota    uint64 // 0: unlimited or not known
	weight   int    // compute weight; 0: not known
	gpu      time.Duration
	share    float64 // of every tenant's GPU time over the interval, 0..1
	target   float64 // the share its weight entitles it to among the active tenants; -1: not known
	// Rates over the interval, per second.
	launches, copyBytes float64
	// queueDelay is the mean wait per command issued in the interval.
	queueDelay time.Duration
	// Now.
	inFlight, queued      int
	violations, evictions uint64
}

// tenantRows computes per-tenant rows from two ListSessions snapshots taken
// dt apart. Counters are differenced by session; a session that closed in
// between is not counted (its last moments are lost). Configured tenants
// without sessions get rows too, so idle tenants show.
func tenantRows(prev, cur []client.SessionStat, dt time.Duration, tenants []config.Tenant) []*tenantRow {
	byTenant := map[string]*tenantRow{}
	row := func(name string) *tenantRow {
		r := byTenant[name]
		if r == nil {
			r = &tenantRow{name: name, target: -1}
			byTenant[name] = r
		}
		return r
	}
	for i := range tenants {
		r := row(tenants[i].Name)
		r.quota, r.weight = uint64(tenants[i].Memory), max(tenants[i].Weight, 1)
	}
	before := make(map[uint64]*client.SessionStat, len(prev))
	for i := range prev {
		before[prev[i].ID] = &prev[i]
	}
	since := func(now, then uint64) uint64 {
		if now < then {
			return 0
		}
		return now - then
	}
	type wide struct {
		tenant string
		device uint32
	}
	// Evictions are tenant-wide on a device: the same in each of its sessions there.
	evictions := map[wide]uint64{}
	queueDelay, commands := map[string]uint64{}, map[string]uint64{} // over the interval
	var totalGPU time.Duration
	for i := range cur {
		s := &cur[i]
		p := before[s.ID]
		if p == nil {
			p = &client.SessionStat{}
		}
		r := row(s.Tenant)
		r.sessions++
		r.memory += s.MemoryBytes
		gpu := time.Duration(since(s.GPUTimeNs, p.GPUTimeNs))
		r.gpu += gpu
		totalGPU += gpu
		launches, copies := since(s.Launches, p.Launches), since(s.Copies, p.Copies)
		r.launches += float64(launches)
		r.copyBytes += float64(since(s.CopyBytes, p.CopyBytes))
		queueDelay[s.Tenant] += since(s.QueueDelayNs, p.QueueDelayNs)
		commands[s.Tenant] += launches + copies
		r.inFlight += int(s.InFlight)
		r.queued += int(s.QueueDepth)
		r.violations += uint64(s.Violations)
		k := wide{s.Tenant, s.Device}
		evictions[k] = max(evictions[k], s.Evictions)
	}
	for k, n := range evictions {
		byTenant[k.tenant].evictions += n
	}
	active := func(r *tenantRow) bool { return r.gpu > 0 || r.inFlight > 0 || r.queued > 0 }
	activeWeight := 0
	for _, r := range byTenant {
		if r.weight > 0 && active(r) {
			activeWeight += r.weight
		}
	}
	secs := dt.Seconds()
	rows := make([]*tenantRow, 0, len(byTenant))
	for name, r := range byTenant {
		if totalGPU > 0 {
			r.share = float64(r.gpu) / float64(totalGPU)
		}
		if r.weight > 0 && activeWeight > 0 {
			r.target = 0
			if active(r) {
				r.target = float64(r.weight) / float64(activeWeight)
			}
		}
		if secs > 0 {
			r.launches /= secs
			r.copyBytes /= secs
		}
		if n := commands[name]; n > 0 {
			r.queueDelay = time.Duration(queueDelay[name] / n)
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	return rows
}

// topColumns are top's columns: to show another statistic, add a row here
// (and its field to tenantRow).
var topColumns = []struct {
	head string
	cell func(r *tenantRow) string
}{
	{"TENANT", func(r *tenantRow) string { return r.name }},
	{"SESS", func(r *tenantRow) string { return fmt.Sprint(r.sessions) }},
	{"MEMORY/QUOTA", func(r *tenantRow) string {
		if r.quota == 0 {
			return config.Size(r.memory).Human() + "/-"
		}
		return config.Size(r.memory).Human() + "/" + config.Size(r.quota).Human()
	}},
	{"GPU%", func(r *tenantRow) string { return fmt.Sprintf("%.1f", 100*r.share) }},
	{"TARGET%", func(r *tenantRow) string {
		if r.target < 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", 100*r.target)
	}},
	{"LAUNCH/S", func(r *tenantRow) string { return fmt.Sprintf("%.0f", r.launches) }},
	{"COPY-MB/S", func(r *tenantRow) string { return fmt.Sprintf("%.1f", r.copyBytes/1e6) }},
	{"QDELAY", func(r *tenantRow) string { return r.queueDelay.Round(time.Microsecond).String() }},
	{"IN-FLIGHT", func(r *tenantRow) string { return fmt.Sprint(r.inFlight) }},
	{"QUEUED", func(r *tenantRow) string { return fmt.Sprint(r.queued) }},
	{"VIOLATIONS", func(r *tenantRow) string { return fmt.Sprint(r.violations) }},
	{"EVICTIONS", func(r *tenantRow) string { return fmt.Sprint(r.evictions) }},
}

func printTenantRows(w io.Writer, rows []*tenantRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, c := range topColumns {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, c.head)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		for i, c := range topColumns {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c.cell(r))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}
