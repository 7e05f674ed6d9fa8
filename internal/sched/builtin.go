package sched

import (
	"slices"
	"time"
)

// BuiltinInfo describes a built-in policy.
type BuiltinInfo struct {
	Name        string
	Description string
	New         func() Policy
}

// Builtins lists the policies compiled into gpuos.
func Builtins() []BuiltinInfo {
	return []BuiltinInfo{
		{"fifo", "first come, first served across tenants (pass-through)", NewFIFO},
		{"fair", "weighted fair share of GPU time (tenants take turns on the device) and of copy bandwidth", NewFair},
		{"band", "credit-based and bandwidth-aware, with time buffering (after Gdev's BAND); tenants take turns on the device", NewBand},
		{"priority", "strict classes: lower classes held back and sliced to leave room while a higher one has work; fair within a class", NewPriority},
	}
}

// ---- fifo -------------------------------------------------------------------

type fifo struct {
	builtin
	Base
}

// NewFIFO returns the pass-through policy: the oldest ready command first,
// whoever submitted it.
func NewFIFO() Policy { return &fifo{} }

func (*fifo) Name() string { return "fifo" }

func (*fifo) OnDispatch(h *Host, e Engine, ready []TenantID) (Choice, error) {
	best := ready[0]
	for _, t := range ready[1:] {
		if h.HeadSeq(t, e) < h.HeadSeq(best, e) {
			best = t
		}
	}
	return Choice{Tenant: best}, nil
}

// ---- fair -------------------------------------------------------------------

// fairScale keeps virtual times integral: charge × fairScale / weight.
const fairScale = 1 << 8

// fair is start-time fair queuing over charged usage: each tenant's virtual
// time advances by its charges divided by its weight, and the ready tenant
// whose virtual time — counting what it has in flight — is smallest goes
// next. A tenant that was idle re-enters at the smallest virtual time of the
// busy ones, so idling earns no credit.
type fair struct {
	builtin
	Base
	vt [NumEngines]*Map
}

// NewFair returns the weighted fair-share policy.
func NewFair() Policy { return &fair{} }

func (*fair) Name() string { return "fair" }

func (f *fair) Init(h *Host) error {
	for e := Engine(0); e < NumEngines; e++ {
		f.vt[e] = h.Map("fair.vtime." + e.String())
		f.vt[e].Reset()
	}
	return nil
}

func (f *fair) OnSubmit(h *Host, ev SubmitEvent) error {
	t, e := ev.Tenant, ev.Engine
	if h.Queued(t, e) != 1 || h.InFlight(t, e) != 0 {
		return nil // was busy already
	}
	floor, found := int64(0), false
	for u := range h.NumTenants() {
		u := TenantID(u)
		if u == t || (h.Queued(u, e) == 0 && h.InFlight(u, e) == 0) {
			continue
		}
		if v := f.vt[e].Get(u); !found || v < floor {
			floor, found = v, true
		}
	}
	if found && f.vt[e].Get(t) < floor {
		f.vt[e].Set(t, floor)
	}
	return nil
}

// key is a tenant's virtual time counting its in-flight work.
func (f *fair) key(h *Host, t TenantID, e Engine) int64 {
	return f.vt[e].Get(t) + h.InFlightCost(t, e)*fairScale/h.Weight(t, e)
}

func (f *fair) pick(h *Host, e Engine, ready []TenantID) TenantID {
	best, bestKey := ready[0], f.key(h, ready[0], e)
	for _, t := range ready[1:] {
		k := f.key(h, t, e)
		if k < bestKey || (k == bestKey && h.HeadSeq(t, e) < h.HeadSeq(best, e)) {
			best, bestKey = t, k
		}
	}
	return best
}

// shareGroup is the turn group (Choice.Group) of the share policies: every
// tenant's kernels take turns, so that GPU time charged is time the device
// gave (see the package doc, "What a share is").
const shareGroup = 1

func (f *fair) OnDispatch(h *Host, e Engine, ready []TenantID) (Choice, error) {
	return Choice{Tenant: f.pick(h, e, ready), Group: shareGroup}, nil
}

func (f *fair) OnComplete(h *Host, c CompleteEvent) error {
	f.vt[c.Engine].Add(c.Tenant, c.Charge*fairScale/h.Weight(c.Tenant, c.Engine))
	return nil
}

// OnTick keeps virtual times small: what matters is their differences.
func (f *fair) OnTick(h *Host, _ time.Duration) error {
	for e := Engine(0); e < NumEngines; e++ {
		n := h.NumTenants()
		if n == 0 {
			continue
		}
		low := f.vt[e].Get(0)
		for t := 1; t < n; t++ {
			low = min(low, f.vt[e].Get(TenantID(t)))
		}
		if low > 1<<40 {
			for t := range n {
				f.vt[e].Add(TenantID(t), -low)
			}
		}
	}
	return nil
}

// ---- priority ---------------------------------------------------------------

// priorityActive is how long after its last submission a tenant still counts
// as having work: a latency-critical service between requests is still
// there, and its next request must find the device ready for it.
const priorityActive = time.Second

// priority runs the highest class with ready work first, fair within a
// class. While a tenant of a higher class has work (queued, in flight, or
// submitted within the last second), the lower classes are held back:
//
//   - their long kernels are issued in slices of about one wave less a
//     reserve (Choice.Reserve), or of the scheduler's SliceTarget where the
//     wave is not known, so a kernel of the higher class finds SMs free, or
//     waits for at most one block of theirs on a GPU that schedules blocks
//     of its more urgent stream first; unless the high class has SMs of its
//     own (Host.HighClassReserved), where slices would buy it nothing
//     (measured on the H100, run 30: best effort 0.90 of the whole GPU with
//     whole kernels, 0.76 in slices);
//   - together they may have at most two commands (slices) in flight: one
//     running and one queued behind it, so the device does not idle while
//     the daemon learns of a completion, and little of theirs is queued in
//     hardware ahead of the higher class's next command.
//
// Tenants of a class take turns on the device (Choice.Group, one group per
// class), so their shares within the class are exact and the slices of two
// lower tenants do not run side by side and fill the device together; while
// held back, a tenant keeps its class's turn for about a millisecond of
// slices (priorityTurn) rather than one slice. The
// high class takes no turns: its kernels run beside whatever runs, as
// separate CUDA streams do, and wait for nothing but SMs.
type priority struct {
	fair
	last   *Map
	cands  []TenantID
	holder [NumEngines][numClasses]TenantID // the latest pick of each class
}

// NewPriority returns the strict-priority policy.
func NewPriority() Policy { return &priority{} }

func (*priority) Name() string { return "priority" }

func (p *priority) Init(h *Host) error {
	p.last = h.Map("priority.last_submit")
	for e := range p.holder {
		for c := range p.holder[e] {
			p.holder[e][c] = NoTenant
		}
	}
	return p.fair.Init(h)
}

func (p *priority) OnSubmit(h *Host, ev SubmitEvent) error {
	p.last.Set(ev.Tenant, max(int64(h.Now()), 1))
	return p.fair.OnSubmit(h, ev)
}

func (p *priority) active(h *Host, t TenantID, e Engine) bool {
	if h.Queued(t, e) > 0 || h.InFlight(t, e) > 0 {
		return true
	}
	last := p.last.Get(t)
	return last != 0 && int64(h.Now())-last < int64(priorityActive)
}

// lowerInFlight bounds the commands in flight of the classes below an
// active one, together (priority).
const lowerInFlight = 2

// classGroup is the turn group of a class under priority: none for the high
// class, one per class below it.
func classGroup(c Class) uint8 {
	if c >= ClassHigh {
		return 0
	}
	return uint8(1 + classIndex(c))
}

func (p *priority) OnDispatch(h *Host, e Engine, ready []TenantID) (Choice, error) {
	top := h.Class(ready[0])
	for _, t := range ready[1:] {
		top = max(top, h.Class(t))
	}
	higher := false
	lower := 0 // commands of this class and below in flight
	for u := range h.NumTenants() {
		u := TenantID(u)
		switch c := h.Class(u); {
		case c > top && p.active(h, u, e):
			higher = true
		case c <= top:
			lower += h.InFlight(u, e)
		}
	}
	if higher && lower >= lowerInFlight {
		return Choice{Tenant: NoTenant}, nil // held back until the next completion
	}
	p.cands = p.cands[:0]
	for _, t := range ready {
		if h.Class(t) == top {
			p.cands = append(p.cands, t)
		}
	}
	t := p.pick(h, e, p.cands)
	last := &p.holder[e][classIndex(top)]
	if higher && *last != t && slices.Contains(p.cands, *last) &&
		p.key(h, *last, e) < p.key(h, t, e)+int64(priorityTurn)*fairScale/h.Weight(*last, e) {
		t = *last // its turn goes on
	}
	*last = t
	ch := Choice{Tenant: t, Group: classGroup(top)}
	if higher && !h.HighClassReserved() {
		// With slicing off (SliceTarget not positive) whole kernels go.
		ch.Quantum, ch.Reserve = max(h.SliceTarget(), 0), true
	}
	return ch, nil
}

// priorityTurn is how far (in GPU time over weight) a tenant of a class
// held back by a higher one may run ahead of the others of its class
// before its turn passes on, so a turn lasts about twice that: the class's
// slices are short (a wave each), and every hand-off costs a wait between the
// two tenants' streams on the device and a few driver calls on the
// dispatcher, on the path of the higher class's next command. Fair share
// still holds over longer spans.
const priorityTurn = 500 * time.Microsecond

// ---- band -------------------------------------------------------------------

// Band parameters, per engine: how much credit a tenant may bank or owe,
// the span over which utilization is measured, and the time buffer.
var (
	bandCreditCap = [NumEngines]int64{20_000_000, 64 << 20}   // 20 ms of GPU time; 64 MiB
	bandWindow    = [NumEngines]int64{100_000_000, 512 << 20} // 100 ms; 512 MiB
)

const bandBuffer = 500 * time.Microsecond

// band is a credit scheduler aware of the bandwidth each tenant actually
// used, with time buffering, after the idea of Gdev's BAND scheduler
// (Kato et al., USENIX ATC 2012):
//
//   - Credits: as the engine runs, the time (or bytes) it spends is
//     replenished to the tenants with work in proportion to their weights
//     and debited from the tenant that used it, so credits sum to zero;
//     a tenant can bank or owe at most a cap, so an idle tenant does not
//     hoard and a burst is soon forgiven.
//   - Bandwidth awareness: GPU work is not preemptible and its length is not
//     known in advance, so credit alone overshoots or idles. A tenant is
//     entitled to run if it has credit, or if its measured recent
//     utilization is at most its share; among those entitled the one with
//     the most credit runs. A tenant with no credit that is over its share
//     runs only when no entitled tenant is ready.
//   - Time buffering: when the only ready tenants are over their share while
//     an under-served tenant is between two of its commands (it has work in
//     flight or submitted a moment ago), the engine is held for a short
//     buffer (500 µs) — once per completion — to let it submit, rather than
//     handing the device to the over-served tenant at once.
type band struct {
	builtin
	Base
	credit, used [NumEngines]*Map
	last         *Map
	rr           [NumEngines]uint32
	buffered     [NumEngines]bool
}

// NewBand returns the BAND-style policy.
func NewBand() Policy { return &band{} }

func (*band) Name() string { return "band" }

func (b *band) Init(h *Host) error {
	for e := Engine(0); e < NumEngines; e++ {
		b.credit[e] = h.Map("band.credit." + e.String())
		b.used[e] = h.Map("band.used." + e.String())
		b.credit[e].Reset()
		b.used[e].Reset()
	}
	b.last = h.Map("band.last_submit")
	return nil
}

func (b *band) active(h *Host, t TenantID, e Engine) bool {
	if h.Queued(t, e) > 0 || h.InFlight(t, e) > 0 {
		return true
	}
	last := b.last.Get(t)
	return last != 0 && int64(h.Now())-last < int64(bandBuffer)
}

func (b *band) OnSubmit(h *Host, ev SubmitEvent) error {
	b.last.Set(ev.Tenant, max(int64(h.Now()), 1))
	b.buffered[ev.Engine] = false
	return nil
}

// use is a tenant's recent use, counting what it has issued and not yet
// been charged for.
func (b *band) use(h *Host, t TenantID, e Engine) int64 {
	return b.used[e].Get(t) + h.InFlightCost(t, e)
}

// totals returns the total weight of active tenants and their total recent use.
func (b *band) totals(h *Host, e Engine) (weights, used int64) {
	for u := range h.NumTenants() {
		u := TenantID(u)
		if b.active(h, u, e) {
			weights += h.Weight(u, e)
		}
		used += b.use(h, u, e)
	}
	return weights, used
}

// over reports whether t used more than its share recently: use/total > w/weights.
func (b *band) over(h *Host, t TenantID, e Engine, weights, used int64) bool {
	if used == 0 || weights == 0 {
		return false
	}
	return float64(b.use(h, t, e))/float64(used) > float64(h.Weight(t, e))/float64(weights)
}

func (b *band) OnComplete(h *Host, c CompleteEvent) error {
	e, charge := c.Engine, c.Charge
	if charge <= 0 {
		return nil
	}
	weights, _ := b.totals(h, e)
	capc := bandCreditCap[e]
	for u := range h.NumTenants() {
		u := TenantID(u)
		v := b.credit[e].Get(u)
		if weights > 0 && b.active(h, u, e) {
			v += charge * h.Weight(u, e) / weights
		}
		if u == c.Tenant {
			v -= charge
		}
		b.credit[e].Set(u, min(max(v, -capc), capc))
		used := b.used[e].Get(u)
		if charge >= bandWindow[e] {
			used = 0
		} else {
			used -= used * charge / bandWindow[e]
		}
		if u == c.Tenant {
			used += charge
		}
		b.used[e].Set(u, used)
	}
	b.buffered[e] = false
	return nil
}

func (b *band) OnDispatch(h *Host, e Engine, ready []TenantID) (Choice, error) {
	weights, used := b.totals(h, e)
	// Credit counts what is already issued as spent.
	credit := func(t TenantID) int64 { return b.credit[e].Get(t) - h.InFlightCost(t, e) }
	// The tenant with the most credit among those entitled to run: with
	// credit left, or under their share of recent use. Ties go round robin.
	pick, best := NoTenant, int64(0)
	for i := range ready {
		t := ready[(i+int(b.rr[e]))%len(ready)]
		if c := credit(t); (c > 0 || !b.over(h, t, e, weights, used)) && (pick == NoTenant || c > best) {
			pick, best = t, c
		}
	}
	if pick == NoTenant {
		// Everyone ready is over budget and over its share. If an
		// under-served tenant is between two of its commands, buffer:
		// hold the engine briefly (once per completion) for it.
		if !b.buffered[e] && h.EngineInFlight(e) > 0 {
			for u := range h.NumTenants() {
				u := TenantID(u)
				if h.Queued(u, e) == 0 && b.active(h, u, e) && !b.over(h, u, e, weights, used) {
					b.buffered[e] = true
					return Choice{Tenant: NoTenant, Hold: bandBuffer}, nil
				}
			}
		}
		// Else the one owing least, so the engine does not idle.
		for _, t := range ready {
			if c := credit(t); pick == NoTenant || c > best {
				pick, best = t, c
			}
		}
	}
	b.rr[e]++
	return Choice{Tenant: pick, Group: shareGroup}, nil
}
