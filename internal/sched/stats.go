package sched

import "time"

// TenantStat is one tenant's virtual GPU and how it is being served.
type TenantStat struct {
	ID       TenantID
	Name     string
	Share    Share
	Class    Class // effective class
	Sessions int
	Engines  [NumEngines]EngineStat
}

// EngineStat is a tenant's use of one engine.
type EngineStat struct {
	Usage                 int64 // charged since the tenant appeared: ns, or bytes
	Queued, InFlight      int
	Dispatched, Completed uint64
	QueueDelay            time.Duration // total wait between submission and issue
	// Recent is the tenant's part of the engine's recent usage (the last
	// second of GPU time, the last 4 GiB copied), 0..1.
	Recent float64
	// Target is the part its weight entitles it to among the tenants with
	// work now or recently, 0..1.
	Target float64
}

// Tenants returns every tenant's statistics.
func (s *Scheduler) Tenants() []TenantStat {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TenantStat, len(s.tenants))
	for e := Engine(0); e < NumEngines; e++ {
		var total, weights float64
		for _, t := range s.tenants {
			total += t.eng[e].recent
		}
		active := func(t *tenant) bool {
			te := &t.eng[e]
			return te.queued > 0 || te.inflight > 0 || (total > 0 && te.recent/total > 0.005)
		}
		for _, t := range s.tenants {
			if active(t) {
				weights += float64(t.weight(e))
			}
		}
		for i, t := range s.tenants {
			te := &t.eng[e]
			st := EngineStat{Usage: te.usage, Queued: te.queued, InFlight: te.inflight, Dispatched: te.dispatched,
				Completed: te.completed, QueueDelay: time.Duration(te.delay)}
			if total > 0 {
				st.Recent = te.recent / total
			}
			if weights > 0 && active(t) {
				st.Target = float64(t.weight(e)) / weights
			}
			out[i].Engines[e] = st
		}
	}
	for i, t := range s.tenants {
		out[i].ID, out[i].Name, out[i].Share, out[i].Class, out[i].Sessions = t.id, t.name, t.share, t.class(), len(t.queues)
	}
	return out
}
