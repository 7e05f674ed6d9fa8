package manager

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/sched"
	"github.com/gpuos/gpuos/internal/wire"
)

// Errors returned for scheduling requests.
var (
	ErrNotOperator = v1.Errorf(v1.CodePermissionDenied, "only the daemon's operator may change scheduling")
	ErrNoTenant    = v1.Errorf(v1.CodeNotFound, "no such tenant")
)

// schedState is what the manager keeps of scheduling so that every driver,
// including one restarted later, gets the same policy and shares.
type schedState struct {
	mu     sync.Mutex
	policy string                  // the active policy
	shares map[string]*v1.SetShare // run-time changes, by tenant, merged
}

// initSched checks the configured policy and sets the starting state.
func (m *Manager) initSched() error {
	p := m.cfg.Policy
	if p == "" {
		p = sched.DefaultPolicy
	}
	if !builtinPolicy(p) {
		return fmt.Errorf("config: policy %q: %w", p, sched.ErrNoPolicy)
	}
	m.sched.policy = p
	m.sched.shares = map[string]*v1.SetShare{}
	return nil
}

func builtinPolicy(name string) bool {
	for _, b := range sched.Builtins() {
		if b.Name == name {
			return true
		}
	}
	return false
}

// shareOf is a tenant's virtual GPU: its configuration with the run-time
// changes applied.
func (m *Manager) shareOf(t *config.Tenant) v1.SetShare {
	sh := v1.SetShare{Tenant: t.Name, Fields: v1.ShareCompute | v1.ShareCopy | v1.ShareMemory,
		Compute: uint32(max(t.Weight, 1)), Copy: uint32(max(t.CopyShare, 1)), Memory: uint64(t.Memory)}
	if t.PrioritySet {
		sh.Fields |= v1.ShareClass
		sh.Class = int32(t.Priority)
	}
	m.sched.mu.Lock()
	defer m.sched.mu.Unlock()
	if o := m.sched.shares[t.Name]; o != nil {
		mergeShare(&sh, o)
	}
	return sh
}

// mergeShare applies the fields o names to sh.
func mergeShare(sh, o *v1.SetShare) {
	if o.Fields&v1.ShareCompute != 0 {
		sh.Compute = o.Compute
	}
	if o.Fields&v1.ShareCopy != 0 {
		sh.Copy = o.Copy
	}
	if o.Fields&v1.ShareMemory != 0 {
		sh.Memory = o.Memory
	}
	if o.Fields&v1.ShareClass != 0 {
		sh.Class = o.Class
	}
	sh.Fields |= o.Fields
}

// sessionClass is the scheduling class a new session of t gets: the
// tenant's configured (or set) class, else one from its process's nice value.
func (m *Manager) sessionClass(t *config.Tenant, pid int32) int32 {
	if sh := m.shareOf(t); sh.Fields&v1.ShareClass != 0 {
		return sh.Class
	}
	nice, err := niceOf(pid)
	if err != nil {
		return int32(sched.ClassNormal)
	}
	return int32(sched.ClassFromNice(nice))
}

// configureDriver gives a driver that just started the active policy and
// every tenant's share, before it serves sessions.
func (m *Manager) configureDriver(ctx context.Context, ctl *wire.Client) error {
	if err := m.configurePolicies(ctx, ctl); err != nil {
		return err
	}
	m.sched.mu.Lock()
	policy := m.sched.policy
	m.sched.mu.Unlock()
	if err := ctl.Call(ctx, &v1.PolicyUse{Name: policy}, nil); err != nil {
		return fmt.Errorf("set policy %s: %w", policy, err)
	}
	for i := range m.cfg.Tenants {
		sh := m.shareOf(&m.cfg.Tenants[i])
		if err := ctl.Call(ctx, &sh, nil); err != nil {
			return fmt.Errorf("set share of %s: %w", sh.Tenant, err)
		}
	}
	return nil
}

// handleSched answers scheduling requests; ok is false for others.
func (m *Manager) handleSched(ctx context.Context, cl *client, msg v1.Message) (reply v1.Message, ok bool, err error) {
	switch r := msg.(type) {
	case *v1.PolicyList:
		reply, err = m.policyList(ctx)
		return reply, true, err
	case *v1.PolicyUse:
		return nil, true, m.policyUse(ctx, cl, r)
	case *v1.SetShare:
		return nil, true, m.setShare(ctx, cl, r)
	case *v1.TenantStats:
		return &v1.Tenants{Tenants: m.tenantStats(ctx, cl)}, true, nil
	}
	return nil, false, nil
}

// eachDriver sends req to every running driver, with reply (if not nil) set
// by each in turn; it returns the reply of the first driver that answered
// (nil if none did or reply is nil), which speaks for all where all answer
// alike, and the first error. A driver that is restarting, or exits during
// the call, is skipped: it is configured from the manager's state when it
// comes up (under configMu, which the callers that change that state hold).
func (m *Manager) eachDriver(ctx context.Context, req v1.Message, reply func() v1.Message) (answer v1.Message, err error) {
	m.mu.Lock()
	drivers := append([]*driverProc(nil), m.drivers...)
	m.mu.Unlock()
	var first error
	for _, d := range drivers {
		ctl, err := d.controlNow()
		if err != nil {
			continue // a restarting driver is configured when it comes up
		}
		var out v1.Message
		if reply != nil {
			out = reply()
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = ctl.Call(cctx, req, out)
		cancel()
		if err != nil && ctl.Err() != nil {
			continue // it exited
		}
		if err != nil && first == nil {
			first = fmt.Errorf("device %d: %w", d.ordinal, err)
		}
		if err == nil && answer == nil {
			answer = out
		}
	}
	return answer, first
}

func (m *Manager) policyList(ctx context.Context) (*v1.Policies, error) {
	answer, err := m.eachDriver(ctx, &v1.PolicyList{}, func() v1.Message { return &v1.Policies{} })
	out, _ := answer.(*v1.Policies)
	if out == nil || out.Active == "" {
		if err == nil {
			err = v1.Errorf(v1.CodeDeviceLost, "no driver is running")
		}
		return nil, err
	}
	return out, nil
}

func (m *Manager) policyUse(ctx context.Context, cl *client, r *v1.PolicyUse) error {
	if !m.operator(cl) {
		return ErrNotOperator
	}
	m.configMu.Lock()
	defer m.configMu.Unlock()
	m.sched.mu.Lock()
	old := m.sched.policy
	m.sched.mu.Unlock()
	if _, err := m.eachDriver(ctx, r, nil); err != nil {
		// Put back the old one where the new one took.
		m.eachDriver(ctx, &v1.PolicyUse{Name: old}, nil)
		return fmt.Errorf("use policy %s: %w", r.Name, err)
	}
	m.sched.mu.Lock()
	m.sched.policy = r.Name
	m.sched.mu.Unlock()
	m.audit.Log(audit.Event{Kind: audit.KindPolicyUse, PID: cl.cred.PID, UID: audit.UID(cl.cred.UID),
		Detail: map[string]any{"policy": r.Name, "was": old}})
	return nil
}

func (m *Manager) setShare(ctx context.Context, cl *client, r *v1.SetShare) error {
	if !m.operator(cl) {
		return ErrNotOperator
	}
	t, ok := m.cfg.Tenant(r.Tenant)
	if !ok {
		return fmt.Errorf("set share: %w: %q", ErrNoTenant, r.Tenant)
	}
	m.configMu.Lock()
	defer m.configMu.Unlock()
	if _, err := m.eachDriver(ctx, r, nil); err != nil {
		return fmt.Errorf("set share of %s: %w", r.Tenant, err)
	}
	m.sched.mu.Lock()
	o := m.sched.shares[t.Name]
	if o == nil {
		o = &v1.SetShare{Tenant: t.Name}
		m.sched.shares[t.Name] = o
	}
	mergeShare(o, r)
	m.sched.mu.Unlock()
	m.audit.Log(audit.Event{Kind: audit.KindPolicyUse, Tenant: t.Name, PID: cl.cred.PID, UID: audit.UID(cl.cred.UID),
		Detail: map[string]any{"share": shareString(r)}})
	return nil
}

func shareString(s *v1.SetShare) string {
	var b []byte
	add := func(k, v string) {
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = append(append(append(b, k...), '='), v...)
	}
	if s.Fields&v1.ShareCompute != 0 {
		add("compute", strconv.FormatUint(uint64(s.Compute), 10))
	}
	if s.Fields&v1.ShareCopy != 0 {
		add("copy", strconv.FormatUint(uint64(s.Copy), 10))
	}
	if s.Fields&v1.ShareMemory != 0 {
		add("memory", config.Size(s.Memory).String())
	}
	if s.Fields&v1.ShareClass != 0 {
		add("class", sched.Class(s.Class).String())
	}
	return string(b)
}

func (m *Manager) tenantStats(ctx context.Context, cl *client) []v1.TenantStat {
	var all []*v1.Tenants
	m.eachDriver(ctx, &v1.TenantStats{}, func() v1.Message {
		t := &v1.Tenants{}
		all = append(all, t)
		return t
	})
	var out []v1.TenantStat
	for _, ts := range all {
		for _, t := range ts.Tenants {
			if m.operator(cl) || t.Name == cl.tenant.Name {
				out = append(out, t)
			}
		}
	}
	return out
}

// Errors returned by niceOf.
var errStat = errors.New("malformed /proc stat line")

// niceOf reads a process's CPU nice value from /proc/PID/stat.
func niceOf(pid int32) (int, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("nice of pid %d: no such process", pid)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("nice of pid %d: %w", pid, err)
	}
	n, err := parseStatNice(b)
	if err != nil {
		return 0, fmt.Errorf("nice of pid %d: %w", pid, err)
	}
	return n, nil
}

// parseStatNice returns the nice field of a /proc/PID/stat line: the 19th
// field, counting from the pid; the command name (field 2) is in parentheses
// and may itself hold spaces and parentheses, so fields are counted after
// the last ')'.
func parseStatNice(b []byte) (int, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errStat
	}
	fields := bytes.Fields(b[i+1:])
	// After the name: state is field 3, so nice (19) is the 17th.
	if len(fields) < 17 {
		return 0, errStat
	}
	n, err := strconv.Atoi(string(fields[16]))
	if err != nil || n < -20 || n > 19 {
		return 0, errStat
	}
	return n, nil
}
