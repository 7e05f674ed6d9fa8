package sched

// The express lane. One goroutine at a time dispatches (the dispatch token,
// runLocked), and it makes backend calls for each command it issues. A driver
// call can block for milliseconds (on the H100, cuEventRecord and
// cuLaunchKernel of best-effort work took 1–3 ms now and then, run 22's
// slow-call log and execution trace), and a high-class command submitted
// meanwhile waited for the token that long. So while another goroutine
// holds the token, a goroutine that would have dispatched issues the next
// command of a high-class tenant itself, if the policy picks that tenant:
// urgent work never waits behind another tenant's driver calls.
//
// Stream order holds: a tenant with a command being issued (by the token
// holder, or another express issue) is left alone, the command issued is the
// tenant's earliest submitted front one, and while an express issue is in
// progress the token holder issues nothing (it would overtake the high-class
// commands behind it): it lets the token go, and the express goroutine,
// once done, dispatches what is left. What the express lane does not handle — a marker at the
// front, a command that would be sliced or take a turn, a batch of another
// stream's untracked commands still open on the engine — waits for the
// token holder as before.
//
// High first. A high-class submitter that finds the token free takes it,
// issues the high class's commands that the express lane would, and hands
// the rest (other tenants' markers, batch ends, commands) to the background
// goroutine rather than issuing it in nextLocked's order first: other
// tenants' driver calls, which can block for milliseconds, then never run on
// the service's goroutine between its request and its next. (By itself it
// did not shorten the service's wait for its launch on the H100, run 42;
// what did is that Submit no longer leaves the high class's Batched
// commands to another goroutine: bench/RESULTS.md, runs 41-45.)

// expressLocked issues high-class commands while another goroutine holds
// the dispatch token, as long as the policy picks them, and returns how many
// it issued. Called and returns with s.mu held; drops it around backend
// calls.
func (s *Scheduler) expressLocked() (issued int) {
	for s.dispatching && !s.closed && s.clk != 0 && !s.opts.NoExpress {
		a, t := s.nextExpress()
		if t == nil {
			break
		}
		s.expressed++
		s.expressing++
		t.expressing = true
		a.c.Expressed = true
		s.issueLocked(&a)
		t.expressing = false
		s.expressing--
		issued++
	}
	return issued
}

// nextExpress picks the next command for the express lane, if any.
func (s *Scheduler) nextExpress() (action, *tenant) {
	for _, t := range s.tenants {
		if t.class() < ClassHigh || len(t.active) == 0 {
			continue
		}
		if a, ok := s.expressAction(t); ok {
			return a, t
		}
	}
	return action{}, nil
}

// expressAction decides whether tenant t's next command can take the
// express lane, and how. As the token holder would, it takes the tenant's
// earliest submitted front command, and nothing while any of the tenant's
// commands is being issued: commands of one tenant on one stream may come
// from several of its sessions' queues, and reach the device in submission
// order.
func (s *Scheduler) expressAction(t *tenant) (action, bool) {
	if t.expressing {
		return action{}, false
	}
	for _, q := range t.queues {
		if q.issuing > 0 {
			return action{}, false
		}
	}
	var sq *streamQ
	for _, x := range t.active {
		c := x.front()
		if x.q.holds > 0 || c.Kind == Marker || x.st == nil {
			return action{}, false // the token holder's: markers go first
		}
		if sq == nil || c.seq < sq.front().seq {
			sq = x
		}
	}
	c := sq.front()
	if c.state != cmdQueued || (c.After != nil && !c.After.issuedOrGone()) {
		return action{}, false
	}
	e := c.Kind.engine()
	if (sq.tail != nil && sq.tail.e != e) || t.eng[e].inflight >= s.opts.TenantInFlight || !s.classRoom(e)[classIndex(t.class())] {
		return action{}, false
	}
	for _, other := range s.tails {
		if other != sq && other.tail.e == e {
			return action{}, false
		}
	}
	s.expressReady[0] = t.id // policies run under s.mu: one user at a time
	var ch Choice
	if err := s.guard(s.active, func(p Policy) (err error) {
		ch, err = p.OnDispatch(&s.host, e, s.expressReady[:])
		return err
	}); err != nil || ch.Tenant != t.id || ch.Group != 0 || ch.Quantum < 0 {
		// A misbehaving policy is the token holder's to handle.
		return action{}, false
	}
	if c.Units > 1 && c.IssueUnits != nil && s.opts.SliceTarget > 0 && (ch.Quantum > 0 || ch.Reserve) {
		return action{}, false
	}
	eng := &s.eng[e]
	if sl := eng.sliced; sl != nil && sl != c {
		eng.sliced = nil
		if sl.state == cmdIssuing {
			ev := PreemptEvent{Tenant: sl.q.t.id, Engine: e, Remaining: sl.Units - sl.next, By: t.id}
			s.hookLocked(func(p Policy) error { return p.OnPreempt(&s.host, ev) })
		}
	}
	return action{kind: actIssue, sq: sq, c: c, e: e}, true
}

// runForLocked is runLocked for a goroutine serving queue q (Submit, Flush,
// WaitIssued). For a high-class tenant with the token free, it issues the
// high class's commands first and leaves the rest to the background
// goroutine; when none can go that way (a marker at the front, another
// stream's batch open on the engine), it dispatches as runLocked does.
func (s *Scheduler) runForLocked(q *Queue, budget int) (issued int) {
	t := q.t
	if t.class() < ClassHigh || s.dispatching || s.closed || s.opts.NoExpress || s.opts.NoHighFirst {
		return s.runLocked(budget)
	}
	s.dispatching = true
	if s.clk == 0 {
		s.tick()
	}
	for !s.closed {
		a, u := s.nextExpress()
		if u == nil {
			break
		}
		s.issueLocked(&a)
		issued++
	}
	s.dispatching = false
	if issued == 0 {
		return s.runLocked(budget)
	}
	if s.pendingLocked() {
		switch {
		case !s.dispatcherOwedLocked(q):
			q.st.KicksSpared++
		case q.deferKicks:
			if !q.kickOwed.Swap(true) {
				q.st.KicksDeferred++
			}
		default:
			s.kick()
		}
	}
	s.clk = 0
	return issued
}

// dispatcherOwedLocked reports whether what a high-class submitter of q
// left undispatched (pendingLocked) needs the background goroutine woken
// for it. Under a best-effort load other tenants' work is always queued,
// and waking the goroutine for it after each of a service's requests made
// ~1,000 wake-ups a second (on a virtual machine, interrupts to other
// CPUs) that were usually for nothing: the policy holds the lower classes
// back while the service is active, and the next completion on an engine
// dispatches anyway (afterCompletionsLocked; bench/RESULTS.md, session
// 34). So it is owed only where no completion or timer will come to that
// work: an engine with work queued and nothing in flight, q's own commands
// the express lane left, a marker at a stream's head, a goroutine that
// left its dispatching to this one (missed), or a background goroutine
// asleep with no timer (then nothing ticks the policy).
func (s *Scheduler) dispatcherOwedLocked(q *Queue) bool {
	if s.opts.NoSpareKicks || s.missed || len(q.t.active) > 0 || (!s.bgAwake.Load() && s.bgNext < 0) {
		return true
	}
	for e := range s.eng {
		if s.eng[e].inflight > 0 {
			continue
		}
		for _, t := range s.tenants {
			if t.eng[e].queued > 0 {
				return true
			}
		}
	}
	for _, t := range s.tenants {
		for _, sq := range t.active {
			if sq.len() > 0 && sq.front().Kind == Marker {
				return true
			}
		}
	}
	return false
}

// pendingLocked reports whether a dispatcher has anything to look at:
// commands queued or batches open.
func (s *Scheduler) pendingLocked() bool {
	if len(s.tails) > 0 {
		return true
	}
	for _, t := range s.tenants {
		if len(t.active) > 0 {
			return true
		}
	}
	return false
}
