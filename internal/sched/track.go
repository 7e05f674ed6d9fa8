package sched

import (
	"sync"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// point is a completion event after some issued commands of one stream (a
// batch of small ones, or one command or slice): when it completes, so have
// they. Compute points are timed: their charge is the GPU time from the
// later of the latest end accounted in their chain (their group's points in
// issue order, turns.go) and their own start event (recorded when the chain
// was idle or a turn began), to their end.
type point struct {
	sq     *streamQ
	t      *tenant
	e      Engine
	group  uint8
	ch     *chain // timed points: the accounting chain of their group
	timed  bool
	start  backend.Event
	end    backend.Event
	cmds   []*Command // one entry per part
	n      int        // parts
	cost   int64      // estimated charge of the parts
	units  uint32     // units of a single-part point, for the kernel's Estimate
	opened int64      // when it started collecting untracked commands
	synced time.Time  // when its waiter saw end complete
	since  int64      // when its queue took it on (own.go)
	done   bool
	err    error
	next   *point   // accounting order (timed points)
	fence  fenceEnd // end, when it ended at its command's fence (fenceend.go)
	// watch: a fence behind end, for the low class's spinner (lowspin.go);
	// watchSince: when the spinner began watching it, or last queried it.
	watch      backend.Fence
	watchSince time.Time
	// unstarted: a high-class point left without a start event
	// (highStartEvery); its charge is at most its tenant's estimate.
	unstarted bool
}

func (p *point) add(c *Command, cost int64, units uint32) {
	p.cmds = append(p.cmds, c)
	p.n++
	p.cost += cost
	p.units = units
}

// remove takes back the part just added (its issue failed).
func (p *point) remove(c *Command, cost int64) {
	if k := len(p.cmds); k > 0 && p.cmds[k-1] == c {
		p.cmds[k-1] = nil
		p.cmds = p.cmds[:k-1]
		p.n--
		p.cost -= cost
	}
}

// newPoint opens a point of stream sq on engine e in group g, and reports
// whether it needs a start event: its chain was idle, so the time since the
// chain's latest end may be idle time, not this point's.
func (s *Scheduler) newPoint(sq *streamQ, e Engine, g uint8) (p *point, idle bool) {
	if n := len(s.points); n > 0 {
		p, s.points = s.points[n-1], s.points[:n-1]
	} else {
		p = &point{}
	}
	p.sq, p.t, p.e, p.group, p.timed = sq, sq.q.t, e, g, e == EngineCompute
	if p.timed {
		ch := s.chainOf(e, g)
		idle = ch.head == nil
		ch.appendPoint(p)
	}
	return p, idle
}

func (s *Scheduler) freePoint(p *point) {
	clear(p.cmds)
	*p = point{cmds: p.cmds[:0]}
	s.points = append(s.points, p)
}

// takeEvent returns a pooled event, or nil: the caller creates one without
// the lock held.
func (s *Scheduler) takeEvent(timed bool) backend.Event {
	i := 0
	if timed {
		i = 1
	}
	pool := s.events[i]
	if n := len(pool); n > 0 {
		ev := pool[n-1]
		s.events[i] = pool[:n-1]
		return ev
	}
	return nil
}

func (s *Scheduler) putEvent(ev backend.Event, timed bool) {
	if ev == nil || isFenceEnd(ev) {
		return
	}
	i := 0
	if timed {
		i = 1
	}
	if len(s.events[i]) >= 4096 {
		ev.Destroy()
		return
	}
	s.events[i] = append(s.events[i], ev)
}

// recordMarker records ev, one of the scheduler's own events, on st: as a
// marker where the backend tells markers from work (backend.MarkerRecorder),
// so that it does not overtake a fence enqueued right after a command, which
// a synchronize may then poll instead of waiting behind the event.
func recordMarker(st backend.Stream, ev backend.Event) error {
	if m, ok := st.(backend.MarkerRecorder); ok {
		return m.RecordMarker(ev)
	}
	return st.Record(ev)
}

func (s *Scheduler) newEvent(timed bool) (backend.Event, error) {
	var flags backend.EventFlags
	if !timed {
		flags |= backend.EventDisableTiming
	}
	if s.opts.BlockingWait {
		flags |= backend.EventBlockingSync
	}
	return s.dev.NewEvent(flags)
}

// waiter completes one stream's points in order, on its own goroutine: a
// command's completion is signalled as soon as its stream reaches it,
// whatever other streams are doing.
type waiter struct {
	pts    []*point
	head   int
	closed bool
	cond   *sync.Cond
	busy   bool // its goroutine has a point in hand
	spun   bool // the spinner holds its points (lowspin.go)
	// expect is how long its recent waits for low-class compute points
	// took, a moving average (LowPollFirst).
	expect time.Duration
}

func (s *Scheduler) waiterFor(st backend.Stream) *waiter {
	w := s.waiters[st]
	if w == nil {
		w = &waiter{cond: sync.NewCond(&s.mu)}
		s.waiters[st] = w
		go s.wait(w)
	}
	return w
}

// pushLocked gives p to its stream's waiter: to the spinner if the waiter
// is idle and p has a fence, else to the waiter's goroutine.
func (s *Scheduler) pushLocked(st backend.Stream, p *point) {
	w := s.waiterFor(st)
	w.pts = append(w.pts, p)
	if !s.handToSpinnerLocked(w) {
		w.cond.Signal()
	}
}

// waiterBudget is how many dispatch actions a completion waiter performs
// before handing the rest to the background goroutine: enough for the room a
// batch frees, few enough that the next completion is not delayed long.
const waiterBudget = 32

func (s *Scheduler) wait(w *waiter) {
	var dones []*Command
	s.mu.Lock()
	for {
		for w.spun || (w.head == len(w.pts) && !w.closed) {
			w.cond.Wait()
		}
		if w.head == len(w.pts) {
			break
		}
		if s.handToSpinnerLocked(w) {
			continue
		}
		p := w.pts[w.head]
		w.pts[w.head] = nil
		w.head++
		if w.head == len(w.pts) {
			w.pts, w.head = w.pts[:0], 0
		}
		end := p.end
		poll := s.opts.LowClassPoll > 0 && p.t.class() == ClassLow
		paced := poll && !s.opts.NoLowClassPace && p.e == EngineCompute
		first := s.opts.LowClassPoll
		if paced {
			first = LowPollFirst(p.cost, w.expect, s.opts.LowClassPoll)
		}
		w.busy = true
		s.mu.Unlock()
		began := time.Now()
		var err error
		if poll {
			err = PollEvent(nil, end, first, s.opts.LowClassPoll, s.opts.LowClassPoll)
		} else {
			err = end.Synchronize()
		}
		synced := time.Now()
		s.mu.Lock()
		if paced {
			w.expect += (synced.Sub(began) - w.expect) / 4
		}
		p.synced = synced
		w.busy = false
		dones = s.completeLocked(p, err, dones[:0])
		s.afterCompletionsLocked(dones)
	}
	s.mu.Unlock()
}

// afterCompletionsLocked follows completions (a waiter's, or a submitter's
// Reap): it runs the finished commands' Done callbacks without the lock,
// then clears dones. They come first: a waiting client (a latency-critical
// service synchronizing on its kernel) is on their path, and issuing more
// work takes driver calls. The room the completions freed is then the
// dispatcher goroutine's to use if it is awake, else the caller issues some
// itself.
func (s *Scheduler) afterCompletionsLocked(dones []*Command) {
	s.gen.Add(1)
	s.reportLocked(dones)
	clear(dones)
	if !s.bgAwake.Load() {
		s.runLocked(waiterBudget)
	}
}

// completeAndReport completes a point whose event could not be recorded and
// runs the Done callbacks of the commands it finished.
func (s *Scheduler) completeAndReport(p *point, err error) {
	s.reportLocked(s.completeLocked(p, err, nil))
}

// reportLocked runs finished commands' Done callbacks, without the lock.
func (s *Scheduler) reportLocked(dones []*Command) {
	if len(dones) == 0 {
		return
	}
	s.mu.Unlock()
	for _, c := range dones {
		if c.Done != nil {
			c.Done(c.err)
		}
	}
	s.mu.Lock()
}

// completeLocked records that p's commands completed (with err), charges
// them, and appends the commands that are now finished to dones.
func (s *Scheduler) completeLocked(p *point, err error, dones []*Command) []*Command {
	p.done, p.err = true, err
	t, e := p.t, p.e
	te, eng := &t.eng[e], &s.eng[e]
	te.inflight -= p.n
	eng.inflight -= p.n
	eng.inflightCost -= p.cost
	eng.held = false
	for _, c := range p.cmds {
		c.pending--
		c.Synced = p.synced
		if err != nil && c.err == nil {
			c.err = err
		}
		if c.pending == 0 && c.state >= cmdIssued {
			c.q.finishLocked(c)
			dones = append(dones, c)
		}
	}
	if p.timed {
		s.accountLocked(p.ch)
	} else {
		var bytes int64
		for _, c := range p.cmds {
			bytes += max(int64(c.Bytes), 0)
		}
		s.chargeLocked(p, bytes)
		s.putEvent(p.end, false)
		s.freePoint(p)
	}
	return dones
}

// accountLocked charges the timed points of a chain that have completed, in
// issue order.
func (s *Scheduler) accountLocked(ch *chain) {
	for h := ch.head; h != nil && h.done; h = ch.head {
		charge, later := s.measure(h, ch.latest)
		s.chargeLocked(h, charge)
		switch {
		case h.err != nil || isFenceEnd(h.end):
			s.putEvent(h.end, true)
		case later || ch.latest == nil:
			s.putEvent(ch.latest, true)
			ch.latest = h.end
		default:
			// It ended before work accounted already (another stream of
			// the group, overlapping): the latest end stays.
			s.putEvent(h.end, true)
		}
		s.putEvent(h.start, true)
		ch.head = h.next
		if ch.head == nil {
			ch.tail = nil
		}
		s.freePoint(h)
	}
}

// measure returns a timed point's GPU time: from the later of latest (the
// latest end accounted in its chain) and its own start, to its end; and
// whether its end is later than latest. Without a usable measurement it is
// the estimate.
func (s *Scheduler) measure(p *point, latest backend.Event) (charge int64, later bool) {
	if p.err != nil || p.end == nil {
		return p.cost, false
	}
	best := int64(-1)
	known := false
	if latest != nil {
		if d, err := p.end.Elapsed(latest); err == nil {
			best, known, later = int64(d), true, d >= 0
		}
	}
	if p.start != nil {
		if d, err := p.end.Elapsed(p.start); err == nil && (!known || int64(d) < best) {
			best, known = int64(d), true
		}
	}
	if p.unstarted {
		// From the chain's latest end, the time the service's stream idled
		// would count: at most what its commands measured lately.
		est := p.cost
		if avg := p.t.eng[p.e].avg; avg > 0 {
			est = avg * int64(p.n)
		}
		if !known || best > est {
			best, known = est, true
		}
	}
	if !known {
		return p.cost, later
	}
	return max(best, 0), later
}

// recentWindow is the span of usage over which the recent share of each
// engine is computed: ns of GPU time, bytes copied.
var recentWindow = [NumEngines]float64{1e9, 4 << 30}

// chargeLocked charges a point's measured cost to its tenant and tells the policy.
func (s *Scheduler) chargeLocked(p *point, charge int64) {
	t, e := p.t, p.e
	te := &t.eng[e]
	// The estimate leaves the tenant's in-flight cost as the charge arrives,
	// so a policy never sees the work as neither pending nor charged.
	te.inflightCost -= p.cost
	te.usage += charge
	te.completed += uint64(p.n)
	if q := p.sq.q; e == EngineCompute {
		q.st.GPUTime += durationOf(charge)
	} else {
		q.st.CopyBytes += uint64(charge)
	}
	if e == EngineCompute && p.n > 0 && p.err == nil && !p.unstarted {
		per := charge / int64(p.n)
		te.avg += (per - te.avg) / 4
		if p.n == 1 && p.units > 0 {
			if est := p.cmds[0].Estimate; est != nil {
				u := charge / int64(p.units)
				if est.perUnit == 0 {
					est.perUnit = max(u, 1)
				} else {
					est.perUnit = max(est.perUnit+(u-est.perUnit)/2, 1)
				}
			}
		}
	}
	if charge > 0 {
		keep := 1 - float64(charge)/recentWindow[e]
		if keep < 0 {
			keep = 0
		}
		for _, u := range s.tenants {
			u.eng[e].recent *= keep
		}
		te.recent += float64(charge)
	}
	ev := CompleteEvent{Tenant: t.id, Engine: e, Commands: p.n, Charge: charge, Estimate: p.cost, Failed: p.err != nil}
	s.hookLocked(func(pol Policy) error { return pol.OnComplete(&s.host, ev) })
}

// highStartEvery: one in this many high-class points gets a start event.
// The start event is a timed cuEventRecord on the service's path before its
// launch (1.4 µs of the host's time on the H100 at the median, an untimed
// one 0.5, BenchmarkLaunchWith). Without it the scheduler's part of the
// service's receipt-to-launch (S->I0) fell at p50 from 2.5-2.8 to 1.0-1.2
// µs alone and from 4.0 to 1.9-2.1 µs loaded, and at p99 by 6-12 µs
// (bench/RESULTS.md, session 14, run 90). The others are charged at most
// the tenant's per-command estimate, which only the points with one update.
// Whether a point's chain idled cannot decide it: a service's previous
// point is often still unaccounted when its next launch comes (its
// completion is reaped later), and measured from that point's end the
// service was charged the whole millisecond between its requests (run 91:
// 47% of the GPU for kernels of 20 µs every millisecond).
const highStartEvery = 16

// sampleHighStart reports whether a high-class point gets a start event
// (one in highStartEvery, none with Options.NoHighClassStart).
func (s *Scheduler) sampleHighStart(te *tenantEngine) bool {
	if s.opts.NoHighClassStart {
		return false
	}
	te.startSkips++
	if te.startSkips < highStartEvery {
		return false
	}
	te.startSkips = 0
	return true
}
