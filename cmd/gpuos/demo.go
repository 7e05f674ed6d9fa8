package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/examples"
	"github.com/gpuos/gpuos/internal/config"
)

func init() {
	register(&command{name: "demo", summary: "run the whole system here and check every result", run: demoCmd})
}

// demoConfig: three tenants. carol's small quota shows quota enforcement.
const demoConfig = `
tenants:
  - name: alice
    token: demo-alice
    memory: 1GiB
    weight: 1
  - name: bob
    token: demo-bob
    memory: 1GiB
    weight: 2
  - name: carol
    token: demo-carol
    memory: 64MiB
    weight: 1
`

type demoCheck struct {
	tenant, what string
	ok           bool
	detail       string
}

func demoCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr)
	backendName := fs.String("backend", "auto", "backend: auto (a real GPU when present), sim or cuda")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "seed for the random inputs")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	cfg, err := config.Parse([]byte(demoConfig))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "gpuos demo: starting a manager and its driver processes (backend %s)...\n", *backendName)
	m, stop, err := localDaemon(ctx, cfg, *backendName)
	if err != nil {
		return err
	}
	defer stop()

	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	dialAs := func(tenant string) (*client.Client, error) {
		return client.Dial(ctx, client.Options{Socket: m.Socket(), Token: "demo-" + tenant, Program: "gpuos-demo"})
	}
	probe, err := dialAs("alice")
	if err != nil {
		return err
	}
	defer probe.Close()
	devs, err := probe.Devices(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backend %s, device 0: %s, %s, %d SMs\n", probe.Backend(), devs[0].Name,
		config.Size(devs[0].TotalMemory).Human(), devs[0].SMCount)
	fmt.Fprintf(stdout, "random inputs from seed %d\n\n", *seed)

	var (
		mu     sync.Mutex
		checks []demoCheck
	)
	record := func(c demoCheck) {
		mu.Lock()
		checks = append(checks, c)
		mu.Unlock()
	}
	// Three tenants at once, each on its own session (its own address window).
	work := []struct {
		tenant string
		run    func(context.Context, *client.Session, *rand.Rand) (examples.Result, error)
	}{
		{"alice", func(c context.Context, s *client.Session, r *rand.Rand) (examples.Result, error) {
			return examples.VectorAdd(c, s, r, 1<<20)
		}},
		{"bob", func(c context.Context, s *client.Session, r *rand.Rand) (examples.Result, error) {
			return examples.Reduce(c, s, r, 1<<20)
		}},
		{"carol", func(c context.Context, s *client.Session, r *rand.Rand) (examples.Result, error) {
			return examples.Matmul(c, s, r, 128, 128, 128)
		}},
	}
	sessions := map[string]*client.Session{}
	var wg sync.WaitGroup
	for i, w := range work {
		cl, err := dialAs(w.tenant)
		if err != nil {
			return err
		}
		defer cl.Close()
		s, err := cl.OpenSession(ctx, client.SessionOptions{Label: "demo-" + w.tenant})
		if err != nil {
			return err
		}
		defer s.Close()
		sessions[w.tenant] = s
		wg.Add(1)
		go func(i int, tenant string, s *client.Session, run func(context.Context, *client.Session, *rand.Rand) (examples.Result, error)) {
			defer wg.Done()
			start := time.Now()
			r, err := run(ctx, s, rand.New(rand.NewPCG(*seed, uint64(i))))
			c := demoCheck{tenant: tenant, what: r.Workload + " " + r.Size, ok: err == nil && r.OK}
			if err != nil {
				c.detail = err.Error()
			} else {
				c.detail = fmt.Sprintf("max relative error %.1g vs the CPU, %v", r.MaxErr, time.Since(start).Round(time.Millisecond))
			}
			record(c)
		}(i, w.tenant, s, w.run)
	}
	wg.Wait()

	// Capabilities at work.
	record(demoRestricted(ctx, sessions["alice"]))
	record(demoRevoked(ctx, sessions["bob"]))
	record(demoQuota(ctx, sessions["carol"]))
	record(demoIsolation(ctx, sessions["alice"], sessions["bob"]))

	sort.SliceStable(checks, func(i, j int) bool { return checks[i].tenant < checks[j].tenant })
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tCHECK\tRESULT\tDETAIL")
	failed := 0
	for _, c := range checks {
		verdict := "pass"
		if !c.ok {
			verdict, failed = "FAIL", failed+1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.tenant, c.what, verdict, c.detail)
	}
	tw.Flush()

	fmt.Fprintln(stdout, "\nsessions, as gpuos ps shows them:")
	ss, err := probe.Sessions(ctx)
	if err != nil {
		return err
	}
	printTenantTable(stdout, ss)
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(checks))
	}
	fmt.Fprintf(stdout, "\nall %d checks passed\n", len(checks))
	return nil
}

// printTenantTable sums sessions per tenant.
func printTenantTable(w io.Writer, ss []client.SessionStat) {
	type row struct {
		sessions                    int
		mem, launches, copies, byts uint64
	}
	rows := map[string]*row{}
	var names []string
	for _, s := range ss {
		r := rows[s.Tenant]
		if r == nil {
			r = &row{}
			rows[s.Tenant] = r
			names = append(names, s.Tenant)
		}
		r.sessions++
		r.mem += s.MemoryBytes
		r.launches += s.Launches
		r.copies += s.Copies
		r.byts += s.CopyBytes
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tSESSIONS\tMEMORY\tLAUNCHES\tCOPIES\tCOPIED")
	for _, n := range names {
		r := rows[n]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\n", n, r.sessions, config.Size(r.mem).Human(), r.launches, r.copies, config.Size(r.byts).Human())
	}
	tw.Flush()
}

// demoRestricted: a session that gave up its launch right is refused a launch.
func demoRestricted(ctx context.Context, s *client.Session) demoCheck {
	c := demoCheck{tenant: s.Tenant(), what: "restricted session launches"}
	cl := s // the same tenant opens a second, restricted session through the same connection's rights
	p, err := cl.LoadProgram(ctx, examples.VecAddPTX, "vecadd")
	if err != nil {
		c.detail = err.Error()
		return c
	}
	k, err := p.Kernel(ctx, "vecadd")
	if err != nil {
		c.detail = err.Error()
		return c
	}
	buf, err := cl.CreateBuffer(ctx, 1024)
	if err != nil {
		c.detail = err.Error()
		return c
	}
	if _, err := cl.Restrict(ctx, client.AllSessionRights&^client.RightLaunch); err != nil {
		c.detail = err.Error()
		return c
	}
	cl.Launch(k, client.LaunchConfig{Grid: client.Dim3{X: 1}, Block: client.Dim3{X: 32}}, buf, buf, buf, int32(0))
	err = cl.Synchronize(ctx)
	c.ok = errors.Is(err, client.ErrPermissionDenied)
	c.detail = "refused: " + firstLine(err)
	return c
}

// demoRevoked: a revoked buffer is refused.
func demoRevoked(ctx context.Context, s *client.Session) demoCheck {
	c := demoCheck{tenant: s.Tenant(), what: "use of a revoked buffer"}
	b, err := s.CreateBuffer(ctx, 4096)
	if err == nil {
		err = b.Revoke(ctx)
	}
	if err != nil {
		c.detail = err.Error()
		return c
	}
	err = b.Write(ctx, 0, []byte("after revoke"))
	c.ok = errors.Is(err, client.ErrRevoked)
	c.detail = "refused: " + firstLine(err)
	return c
}

// demoQuota: an allocation over the tenant's quota is refused.
func demoQuota(ctx context.Context, s *client.Session) demoCheck {
	c := demoCheck{tenant: s.Tenant(), what: "allocation over the 64 MiB quota"}
	_, err := s.CreateBuffer(ctx, 100<<20)
	c.ok = errors.Is(err, client.ErrQuotaExceeded)
	c.detail = "refused: " + firstLine(err)
	return c
}

// demoIsolation: one session cannot reach another session's buffer by address.
func demoIsolation(ctx context.Context, a, b *client.Session) demoCheck {
	c := demoCheck{tenant: b.Tenant(), what: "read of another session's address"}
	buf, err := a.CreateBuffer(ctx, 4096)
	if err != nil {
		c.detail = err.Error()
		return c
	}
	err = b.CopyFromDevice(ctx, make([]byte, 16), client.Addr(buf.Addr()), nil)
	c.ok = errors.Is(err, client.ErrInvalidArgument)
	c.detail = "refused: " + firstLine(err)
	return c
}

func firstLine(err error) string {
	if err == nil {
		return "no error"
	}
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 90 {
		s = s[:87] + "..."
	}
	return s
}
