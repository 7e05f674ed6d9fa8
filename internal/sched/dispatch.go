package sched

import (
	"fmt"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

type actKind uint8

const (
	actFlush  actKind = iota + 1 // record a completion event after a stream's untracked commands
	actMarker                    // issue a marker at its stream's head
	actIssue                     // issue a command (or a slice of one) chosen by the policy
)

// action is one step of dispatching, decided under the lock and performed
// (backend calls) without it.
type action struct {
	kind   actKind
	sq     *streamQ
	c      *Command
	e      Engine
	lo, hi uint32 // a slice [lo, hi) of a sliceable command; hi == 0: the whole command
	group  uint8  // Choice.Group (compute only)
}

// runLocked dispatches until nothing more can be dispatched now, or, with a
// positive budget, until it performed that many actions (then the background
// goroutine carries on), and returns how many commands it issued. If another
// goroutine holds the dispatch token it returns at once: the holder
// re-examines the queues before it lets go — except for a high-class
// command, which this goroutine issues itself (express.go). Called and
// returns with s.mu held; drops it around backend calls.
func (s *Scheduler) runLocked(budget int) (issued int) {
	if s.dispatching {
		issued = s.expressLocked()
		if issued == 0 || s.dispatching {
			s.missed = true
			return issued
		}
		// The holder let go meanwhile (it leaves the device to the
		// express lane): dispatch what is left, as it would have.
	}
	s.dispatching = true
	for n := 0; ; n++ {
		if n%8 == 0 && (n > 0 || s.clk == 0) {
			s.tick()
		}
		if budget > 0 && n >= budget {
			s.dispatching = false
			s.kick()
			return issued
		}
		var a action
		if !s.nextLocked(&a) {
			break
		}
		switch a.kind {
		case actFlush:
			s.flushLocked(a.sq)
		case actMarker:
			s.issueMarkerLocked(a.sq)
			issued++
		case actIssue:
			s.issueLocked(&a)
			issued++
		}
	}
	s.dispatching = false
	s.missed = false // nextLocked found nothing more: this pass saw it all
	s.clk = 0
	return issued
}

// nextLocked decides the next action: completion events owed, then markers
// at stream heads, then a command per engine as the policy picks.
func (s *Scheduler) nextLocked(a *action) bool {
	for i, sq := range s.tails {
		if s.flushAll || sq.q.waiting > 0 || sq.tail.opened <= s.flushOlder {
			s.tails = append(s.tails[:i], s.tails[i+1:]...)
			sq.inTails = false
			*a = action{kind: actFlush, sq: sq}
			return true
		}
	}
	s.flushAll = false
	if s.closed {
		return false
	}
	if s.expressing > 0 {
		// A high-class command is being issued by the express lane: issue
		// nothing else meanwhile (it would go ahead of what follows it);
		// the express goroutine dispatches once done.
		return false
	}
	holdLow := s.holdsLowLocked() // a slow spell's hold (episode.go)
	for _, t := range s.tenants {
		t.head = [NumEngines]*streamQ{}
		low := holdLow && t.class() == ClassLow
		for _, sq := range t.active {
			c := sq.front()
			if sq.q.holds > 0 && c.state != cmdIssuing { // held (hold.go)
				continue
			}
			if c.After != nil && !c.After.issuedOrGone() {
				continue
			}
			if low && c.state != cmdIssuing { // a sliced command's rest is not held
				s.spinner.dispatchLocked() // the spinner dispatches it once the hold ends
				continue
			}
			if c.Kind == Marker || sq.st == nil {
				*a = action{kind: actMarker, sq: sq, c: c}
				return true
			}
			e := c.Kind.engine()
			if sq.tail != nil && sq.tail.e != e {
				// A batch is of one engine: close the open one first.
				s.removeTail(sq)
				*a = action{kind: actFlush, sq: sq}
				return true
			}
			if h := t.head[e]; h == nil || c.seq < h.front().seq {
				t.head[e] = sq
			}
		}
	}
	for i := Engine(0); i < NumEngines; i++ {
		e := (s.turn + i) % NumEngines
		if s.decideLocked(e, a) {
			s.turn = (e + 1) % NumEngines
			return true
		}
	}
	return false
}

// engineRoom reports whether more work may be issued to engine e.
func (s *Scheduler) engineRoom(e Engine) bool {
	eng := &s.eng[e]
	if eng.inflight < minInFlight {
		return true
	}
	if e == EngineCopy {
		return eng.inflightCost < int64(s.opts.CopyLookahead)
	}
	return eng.inflightCost < int64(s.opts.Lookahead)
}

// classRoom reports, by class (index: class − ClassLow), whether engine e
// has room for more of its work: what tenants of that class and higher have
// in flight is under the lookahead, or is fewer than minInFlight commands.
// Work of lower classes does not count against a higher one, so an urgent
// command never waits for room that best-effort work took.
func (s *Scheduler) classRoom(e Engine) (room [numClasses]bool) {
	var n [numClasses]int
	var cost [numClasses]int64
	for _, t := range s.tenants {
		i := classIndex(t.class())
		n[i] += t.eng[e].inflight
		cost[i] += t.eng[e].inflightCost
	}
	limit := int64(s.opts.Lookahead)
	if e == EngineCopy {
		limit = int64(s.opts.CopyLookahead)
	}
	var sumN int
	var sumCost int64
	for i := numClasses - 1; i >= 0; i-- {
		sumN += n[i]
		sumCost += cost[i]
		room[i] = sumN < minInFlight || sumCost < limit
	}
	return room
}

// decideLocked asks the policy for engine e's next command.
func (s *Scheduler) decideLocked(e Engine, a *action) bool {
	eng := &s.eng[e]
	room := s.classRoom(e)
	ready := s.ready[e][:0]
	for _, t := range s.tenants {
		if t.head[e] != nil && t.eng[e].inflight < s.opts.TenantInFlight && room[classIndex(t.class())] {
			ready = append(ready, t.id)
		}
	}
	s.ready[e] = ready
	if len(ready) == 0 {
		eng.readySince = 0
		return false
	}
	// A batch of untracked commands must not span another stream's work on
	// this engine, or its end event would time that work too: close it first
	// unless its stream is the only candidate.
	for i, sq := range s.tails {
		if sq.tail.e == e && (len(ready) != 1 || s.tenants[ready[0]].head[e] != sq) {
			s.tails = append(s.tails[:i], s.tails[i+1:]...)
			sq.inTails = false
			*a = action{kind: actFlush, sq: sq}
			return true
		}
	}
	now := s.clk
	if eng.held {
		if eng.holdUntil == 0 || now < eng.holdUntil {
			s.noteReady(e, now)
			return false
		}
		eng.held = false
	}
	var ch Choice
	for {
		pe := s.active
		err := s.guard(pe, func(p Policy) (err error) {
			ch, err = p.OnDispatch(&s.host, e, ready)
			return err
		})
		if err == nil {
			err = s.validate(ch, e)
		}
		if err == nil {
			break
		}
		if !s.ejectLocked(pe, err) {
			ch = Choice{Tenant: ready[0]}
			break
		}
	}
	if ch.Tenant == NoTenant {
		eng.held, eng.holdUntil = true, 0
		switch {
		case ch.Hold > 0:
			eng.holdUntil = now + int64(ch.Hold)
		case eng.inflight == 0:
			// No completion will come to ask again: ask after MaxHold.
			eng.holdUntil = now + int64(s.opts.MaxHold)
		}
		s.noteReady(e, now)
		if eng.holdUntil != 0 {
			s.kick()
		}
		return false
	}
	t := s.tenants[ch.Tenant]
	sq := t.head[e]
	if f, ok := s.turnFlushLocked(e, ch.Group, t, sq); ok {
		*a = f // then decide again
		return true
	}
	c := sq.front()
	if sl := eng.sliced; sl != nil && sl != c {
		eng.sliced = nil
		if sl.state == cmdIssuing {
			ev := PreemptEvent{Tenant: sl.q.t.id, Engine: e, Remaining: sl.Units - sl.next, By: t.id}
			s.hookLocked(func(p Policy) error { return p.OnPreempt(&s.host, ev) })
		}
	}
	*a = action{kind: actIssue, sq: sq, c: c, e: e}
	if e == EngineCompute {
		a.group = ch.Group
	}
	if c.Units > 1 && c.IssueUnits != nil && s.opts.SliceTarget > 0 && (ch.Quantum > 0 || ch.Reserve || c.state == cmdIssuing) {
		remaining := c.Units - c.next
		n := s.sliceUnits(c, ch)
		n = min(n, remaining)
		if c.next > 0 || n < c.Units {
			a.lo, a.hi = c.next, c.next+n
		}
	}
	eng.readySince = 0
	return true
}

func (c *Command) perUnit() int64 {
	if c.Estimate != nil {
		return c.Estimate.perUnit
	}
	return 0
}

func (s *Scheduler) noteReady(e Engine, now int64) {
	if eng := &s.eng[e]; eng.inflight == 0 && eng.readySince == 0 {
		eng.readySince = now
	}
}

// validate checks a policy's choice against the ready set.
func (s *Scheduler) validate(ch Choice, e Engine) error {
	if ch.Quantum < 0 {
		return fmt.Errorf("%w: negative quantum %v", ErrPolicy, ch.Quantum)
	}
	if ch.Tenant == NoTenant {
		if ch.Hold < 0 || ch.Hold > s.opts.MaxHold {
			return fmt.Errorf("%w: hold %v outside [0, %v]", ErrPolicy, ch.Hold, s.opts.MaxHold)
		}
		return nil
	}
	for _, t := range s.ready[e] {
		if t == ch.Tenant {
			return nil
		}
	}
	return fmt.Errorf("%w: chose %v, which has nothing ready on the %v engine", ErrPolicy, ch.Tenant, e)
}

// cost estimates a command's charge: ns for compute (units > 0: of that many
// units of a sliceable kernel; 0: of what remains of it), bytes for copy.
func (s *Scheduler) cost(c *Command, e Engine, units uint32) int64 {
	if e == EngineCopy {
		return max(int64(c.Bytes), 1)
	}
	whole := max(c.Units, 1)
	if units == 0 {
		units = max(c.Units-c.next, 1)
	}
	if per := c.perUnit(); per > 0 {
		return per * int64(units)
	}
	avg := c.q.t.eng[e].avg
	return max(avg*int64(units)/int64(whole), 1)
}

// issueMarkerLocked issues the marker at sq's head (or a command on no
// stream, which completes when issued).
func (s *Scheduler) issueMarkerLocked(sq *streamQ) {
	c := sq.pop()
	q := sq.q
	s.poppedLocked(sq)
	if c.Kind != Marker {
		q.t.eng[c.Kind.engine()].queued--
	}
	c.state = cmdIssued
	q.inflight++
	q.issuing++
	q.markDirty(sq)
	q.st.QueueDelay += time.Duration(max(s.clk-c.queued, 0))
	s.mu.Unlock()
	s.countIssuing(1)
	var err error
	if c.Issue != nil {
		err = c.Issue()
	}
	if c.Done != nil {
		c.Done(err)
	}
	s.countIssuing(-1)
	s.mu.Lock()
	c.err = err
	q.finishLocked(c)
	q.issuing--
	q.settledLocked()
}

// poppedLocked updates a queue after its stream sq's head left the FIFO.
func (s *Scheduler) poppedLocked(sq *streamQ) {
	q := sq.q
	q.queued--
	if q.queued == q.lowWater {
		q.room.Broadcast()
	}
	if sq.len() == 0 && sq.inActive {
		q.t.removeActive(sq)
	}
}

// finishLocked accounts a command that has completed (every part) or failed.
func (q *Queue) finishLocked(c *Command) {
	q.inflight--
	q.st.Completed++
	if c.err != nil {
		q.st.Errors++
	}
	if q.inflight == 0 && (q.queued == 0 || q.holds > 0) { // Hold waits for in-flight only
		q.idle.Broadcast()
	}
}

// issueLocked issues a command, or one slice of it, and decides how its
// completion is tracked.
func (s *Scheduler) issueLocked(a *action) {
	c, sq, e := a.c, a.sq, a.e
	q, t := sq.q, sq.q.t
	te, eng := &t.eng[e], &s.eng[e]
	units := max(c.Units, 1)
	if a.hi != 0 {
		units = a.hi - a.lo
	}
	cost := s.cost(c, e, units)
	now := s.clk
	if c.state == cmdQueued {
		q.inflight++
		d := max(now-c.queued, 0)
		q.st.QueueDelay += time.Duration(d)
		te.delay += d
	}
	whole := a.hi == 0 || a.hi == c.Units
	if whole {
		sq.pop()
		s.poppedLocked(sq)
		te.queued--
		c.state = cmdIssued
	} else {
		c.state = cmdIssuing
		c.next = a.hi
		eng.sliced = c
	}
	c.pending++
	q.issuing++
	q.markDirty(sq)
	te.inflight++
	te.dispatched++
	te.inflightCost += cost
	eng.inflight++
	eng.inflightCost += cost

	p := sq.tail
	needStart := false
	var gate turnGate
	if a.group != 0 {
		gate = s.turnLocked(e, a.group, t, sq)
	}
	if p == nil {
		var idle bool
		p, idle = s.newPoint(sq, e, a.group)
		// A chain with nothing in flight may have idled, and a turn begins
		// once the previous one ended: mark the start, so that the time
		// before is not charged to this command.
		needStart = p.timed && (idle || gate.start)
		if p.timed && a.group == 0 && t.class() == ClassHigh {
			needStart = s.sampleHighStart(te)
			p.unstarted = !needStart
		}
	}
	p.add(c, cost, units)
	track := c.Flags&Sync != 0 || q.waiting > 0 || p.n >= s.opts.TrackEvery || a.hi != 0 || t.class() == ClassHigh ||
		(e == EngineCompute && cost >= trackComputeNs && c.Flags&Small == 0) || (e == EngineCopy && c.Bytes >= trackCopyBytes) ||
		eng.inflight > te.inflight || te.inflight >= s.opts.TenantInFlight || !s.engineRoom(e) || s.closed
	if track {
		sq.tail = nil
		if sq.inTails {
			s.removeTail(sq)
		}
	} else if sq.tail == nil {
		sq.tail = p
		p.opened = now
		s.tails = append(s.tails, sq)
		sq.inTails = true
		if due := now + int64(s.opts.FlushDelay); s.bgNext < 0 || due < s.bgNext {
			s.bgNext = due
			s.kick()
		}
	}
	var start, end backend.Event
	if needStart {
		start = s.takeEvent(true)
	}
	if track {
		end = s.takeEvent(p.timed)
	}
	timed, st := p.timed, sq.st
	// A point that takes no timing from its end, which its queue will own,
	// may end at the command's own fence (fenceend.go).
	fenceable := track && p.unstarted && a.hi == 0 && q.own && q.waiting == 0
	spun := track && s.spinWatchLocked(t)
	// A service's launch is timed for the slow spells (episode.go).
	timeIssue := s.opts.EpisodeHold > 0 && a.hi == 0 && e == EngineCompute && t.class() == ClassHigh
	c.EndFence = nil
	s.mu.Unlock()
	s.countIssuing(1)

	gate.apply(s, st) // the turn's gate first: the start is after it
	if needStart {
		if start == nil {
			start, _ = s.newEvent(true)
		}
		if start != nil && recordMarker(st, start) != nil {
			start.Destroy() // the engine predecessor bounds the start instead
			start = nil
		}
	}
	var err error
	var issueStart, issueEnd int64 // a timed Issue's (scheduler clock)
	if timeIssue {
		issueStart = s.now()
	}
	if a.hi == 0 {
		err = c.Issue()
		if timeIssue {
			issueEnd = s.now()
		}
	} else {
		err = c.IssueUnits(a.lo, a.hi)
	}
	var recErr error
	fenced := fenceable && err == nil && c.EndFence != nil
	if track && !fenced {
		if end == nil {
			end, recErr = s.newEvent(timed)
		}
		if recErr == nil {
			recErr = recordMarker(st, end)
		}
	}
	var watch backend.Fence
	if spun && !fenced && recErr == nil && err == nil {
		watch = watchFence(st)
	}

	s.countIssuing(-1)
	s.mu.Lock()
	if timeIssue && err == nil {
		s.noteServiceIssueLocked(issueEnd-issueStart, issueEnd)
	}
	gate.doneLocked(s)
	if start != nil {
		p.start = start
	}
	var failed *Command
	if err != nil {
		p.remove(c, cost)
		c.pending--
		te.inflight--
		te.inflightCost -= cost
		eng.inflight--
		eng.inflightCost -= cost
		if c.err == nil {
			c.err = err
		}
		if c.state == cmdIssuing {
			// A slice failed: the rest of the kernel is not issued.
			sq.pop()
			s.poppedLocked(sq)
			te.queued--
			c.state = cmdIssued
		}
		if eng.sliced == c {
			eng.sliced = nil
		}
		if c.pending == 0 {
			q.finishLocked(c)
			failed = c
		}
	}
	if fenced {
		s.putEvent(end, timed) // taken for nothing
		p.fence = fenceEnd{f: c.EndFence, st: st}
		end = &p.fence
		q.st.FenceEnds++
	}
	c.EndFence = nil
	if track {
		p.end, p.watch = end, watch
		if recErr != nil {
			s.completeAndReport(p, fmt.Errorf("track completion: %w", recErr))
		} else if !s.ownLocked(q, p, a) {
			s.pushLocked(st, p)
		}
	}
	if failed != nil && failed.Done != nil {
		s.mu.Unlock()
		failed.Done(err)
		s.mu.Lock()
	}
	q.issuing--
	q.settledLocked()
}

// flushLocked records a completion event after sq's untracked commands.
func (s *Scheduler) flushLocked(sq *streamQ) {
	p := sq.tail
	sq.tail = nil
	end := s.takeEvent(p.timed)
	timed, st := p.timed, sq.st
	spun := s.spinWatchLocked(p.t)
	s.mu.Unlock()
	var err error
	if end == nil {
		end, err = s.newEvent(timed)
	}
	if err == nil {
		err = recordMarker(st, end)
	}
	var watch backend.Fence
	if spun && err == nil {
		watch = watchFence(st)
	}
	s.mu.Lock()
	p.end, p.watch = end, watch
	if err != nil {
		s.completeAndReport(p, fmt.Errorf("track completion: %w", err))
		return
	}
	s.pushLocked(st, p)
}

func (s *Scheduler) removeTail(sq *streamQ) {
	for i, x := range s.tails {
		if x == sq {
			s.tails = append(s.tails[:i], s.tails[i+1:]...)
			break
		}
	}
	sq.inTails = false
}

// kick wakes the background goroutine.
func (s *Scheduler) kick() {
	select {
	case s.bgWake <- struct{}{}:
	default:
	}
}
