package metrics

// tally turns successive snapshots into tenant totals whose counters never go
// down, although the sessions (and drivers) that make them up come and go.
type tally struct {
	// sessions holds the last counter values of each session seen and not yet
	// known to be closed.
	sessions map[sessionKey]*seenSession
	// closed holds, per tenant, the counters of its sessions that have closed.
	closed map[string][]float64
	// wideLast holds the last tenantWide counter values of a tenant on a
	// device; wideBase the values from before a reset (driver restart).
	wideLast map[wideKey][]float64
	wideBase map[string][]float64
	restarts map[uint32]uint64 // by device, as of the last snapshot
}

type sessionKey struct {
	device uint32
	id     uint64
}

type seenSession struct {
	tenant   string
	counters []float64 // by stat index; perSession counters only
}

type wideKey struct {
	tenant string
	device uint32
}

// totals are one tenant's values at a snapshot.
type totals struct {
	values   []float64 // by stat index
	sessions int
}

func newTally() tally {
	return tally{sessions: map[sessionKey]*seenSession{}, closed: map[string][]float64{},
		wideLast: map[wideKey][]float64{}, wideBase: map[string][]float64{}, restarts: map[uint32]uint64{}}
}

func addTo(m map[string][]float64, tenant string, vals []float64) {
	acc := m[tenant]
	if acc == nil {
		acc = make([]float64, len(stats))
		m[tenant] = acc
	}
	for i, v := range vals {
		if stats[i].counter() {
			acc[i] += v
		}
	}
}

// update applies a snapshot and returns the totals of every configured tenant
// and of OtherTenant if it has anything. label maps a session's tenant to its
// label value.
func (t *tally) update(snap Snapshot, label func(string) string) map[string]*totals {
	up := map[uint32]bool{}
	restarted := map[uint32]bool{}
	for _, d := range snap.Devices {
		ord := uint32(d.Ordinal)
		up[ord] = d.Up
		if prev, ok := t.restarts[ord]; ok && d.Restarts != prev {
			restarted[ord] = true
		}
		t.restarts[ord] = d.Restarts
	}
	answered := func(dev uint32) bool {
		u, listed := up[dev]
		return u || !listed
	}

	// A restarted driver's tenant-wide counters start again from zero.
	for k, last := range t.wideLast {
		if restarted[k.device] {
			addTo(t.wideBase, k.tenant, last)
			delete(t.wideLast, k)
		}
	}

	// Sessions gone from a driver that answered (or that restarted) have
	// closed: fold their counters into their tenant. Those of a driver that
	// did not answer are held.
	present := make(map[sessionKey]bool, len(snap.Sessions))
	for i := range snap.Sessions {
		present[sessionKey{snap.Sessions[i].Device, snap.Sessions[i].ID}] = true
	}
	for k, s := range t.sessions {
		if !present[k] && (answered(k.device) || restarted[k.device]) {
			addTo(t.closed, s.tenant, s.counters)
			delete(t.sessions, k)
		}
	}

	out := map[string]*totals{}
	get := func(tenant string) *totals {
		tot := out[tenant]
		if tot == nil {
			tot = &totals{values: make([]float64, len(stats))}
			out[tenant] = tot
		}
		return tot
	}
	for _, tn := range snap.Tenants {
		get(tn.Name)
	}

	wideNow := map[wideKey][]float64{}
	for i := range snap.Sessions {
		s := &snap.Sessions[i]
		tenant := label(s.Tenant)
		k := sessionKey{s.Device, s.ID}
		seen := t.sessions[k]
		if seen == nil {
			seen = &seenSession{counters: make([]float64, len(stats))}
			t.sessions[k] = seen
		}
		seen.tenant = tenant
		tot := get(tenant)
		tot.sessions++
		wk := wideKey{tenant, s.Device}
		for j := range stats {
			st := &stats[j]
			v := st.value(s)
			switch {
			case st.scope == tenantWide:
				w := wideNow[wk]
				if w == nil {
					w = make([]float64, len(stats))
					wideNow[wk] = w
				}
				w[j] = max(w[j], v)
			case st.counter():
				seen.counters[j] = v
			default:
				tot.values[j] += v
			}
		}
	}

	// Tenant-wide values: gauges as they are now; counters continue from the
	// last value seen, and a value lower than that one means a reset.
	for k, now := range wideNow {
		last := t.wideLast[k]
		if last == nil {
			last = make([]float64, len(stats))
			t.wideLast[k] = last
		}
		tot := get(k.tenant)
		for j := range stats {
			if stats[j].scope != tenantWide {
				continue
			}
			if !stats[j].counter() {
				tot.values[j] += now[j]
				continue
			}
			if now[j] < last[j] {
				addTo(t.wideBase, k.tenant, onlyAt(j, last[j]))
			}
			last[j] = now[j]
		}
	}
	for k, last := range t.wideLast {
		tot := get(k.tenant)
		for j := range stats {
			if stats[j].scope == tenantWide && stats[j].counter() {
				tot.values[j] += last[j]
			}
		}
	}
	for tenant, base := range t.wideBase {
		tot := get(tenant)
		for j := range stats {
			if stats[j].scope == tenantWide {
				tot.values[j] += base[j]
			}
		}
	}

	// Per-session counters: closed sessions plus every session still held.
	for _, s := range t.sessions {
		tot := get(s.tenant)
		for j := range stats {
			if stats[j].scope == perSession && stats[j].counter() {
				tot.values[j] += s.counters[j]
			}
		}
	}
	for tenant, c := range t.closed {
		tot := get(tenant)
		for j := range stats {
			if stats[j].scope == perSession {
				tot.values[j] += c[j]
			}
		}
	}
	return out
}

// onlyAt returns a stat-indexed slice that is v at index i and 0 elsewhere.
func onlyAt(i int, v float64) []float64 {
	s := make([]float64, len(stats))
	s[i] = v
	return s
}
