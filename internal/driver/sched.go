package driver

import (
	"github.com/gpuos/gpuos/internal/audit"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/sched"
)

// newScheduler starts the driver's scheduler: per-tenant in-flight windows
// from the session limits, ejections written to the audit log.
func newScheduler(dev backend.Device, opts Options) (*sched.Scheduler, error) {
	lim := withDefaults(opts.Limits)
	so := opts.Sched
	so.Device = dev
	if so.TenantInFlight == 0 {
		so.TenantInFlight = lim.InFlight
	}
	al := opts.Audit
	so.OnEject = func(policy string, err error) {
		if opts.Log != nil {
			opts.Log.Warn("scheduling policy ejected; the fallback took over", "policy", policy, "err", err)
		}
		if al != nil {
			al.Log(audit.Event{Kind: audit.KindPolicyEject, Detail: map[string]any{"policy": policy}}.WithError(err))
		}
	}
	return sched.New(so)
}

// streamPriority is the backend priority of a new stream of tenant t that
// asked for requested: a high-class tenant's streams get the device's
// greatest priority, a low-class tenant's the least, and a normal tenant's
// what it asked for, short of the greatest (kept for the high class).
func (d *Driver) streamPriority(t *tenantState, requested int) int {
	least, greatest := d.dev.StreamPriorityRange()
	switch d.sched.TenantClass(t.name) {
	case sched.ClassHigh:
		return greatest
	case sched.ClassLow:
		return least
	}
	// CUDA priorities: lower numbers are more urgent; greatest <= least.
	p := min(max(requested, greatest), least)
	if p == greatest && greatest < least {
		p = greatest + 1
	}
	return p
}

// queueParams describes a new session's queue.
func (d *Driver) queueParams(s *Session) sched.QueueParams {
	t := s.tenant
	return sched.QueueParams{Tenant: t.name, Session: s.id, PID: s.params.PID, Class: sched.Class(s.params.Priority),
		Depth: d.limits.QueueDepth, Share: sched.Share{Compute: max(t.weight, 1), Copy: max(t.weight, 1)}}
}
