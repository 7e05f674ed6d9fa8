package sched

import "time"

// Completions a submitter takes on itself. A latency-critical service's
// serving goroutine learns that its kernel finished before anyone else: it
// polls a fence behind it to answer the synchronize. Handing the kernel's
// completion event to a stream's waiter too costs a goroutine wake-up per
// request — on a virtual machine an interrupt to an idle CPU: keeping them
// took ~1,550 a second off a service of 1,000 requests a second
// (bench/RESULTS.md, session 11, run 63) — and a second thread blocking in
// the driver while the kernel runs. A queue that owns its
// completions (SetOwnCompletions) keeps its tracked points instead, and its
// submitter completes them (Reap) once it knows they are done.
//
// Nothing may wait for an owned point forever: every path that blocks on a
// queue's completions (Submit at depth, WaitIssued, Wait, Hold, Close) hands
// the owned points to the waiters first (handOffLocked), as do a queue with
// more than maxOwned of them and SetOwnCompletions(false). A submitter that
// goes idle calls HandOff.

// maxOwned bounds a queue's owned points: a submitter that keeps launching
// without synchronizing has its completions tracked by the waiters, so its
// in-flight window (Options.TenantInFlight) never fills with work no one
// completes.
const maxOwned = 8

// ownedMaxAge is how long Reap leaves an owned point whose event is not done
// before it hands it to a waiter.
const ownedMaxAge = int64(2 * time.Millisecond)

// SetOwnCompletions sets whether the queue keeps its tracked points (their
// completion events) for its submitter to complete (Reap) rather than the
// streams' waiters.
// Turning it off hands the points it holds to the waiters.
func (q *Queue) SetOwnCompletions(on bool) {
	s := q.s
	s.mu.Lock()
	q.own = on
	if !on {
		s.handOffLocked(q)
	}
	s.mu.Unlock()
}

// Reap completes, in issue order, the queue's owned points whose events are
// done, as a stream's waiter would, and reports how many it completed. The
// commands' Done callbacks run on the calling goroutine before it returns.
// An owned point still not done after ownedMaxAge goes to a waiter, with
// those behind it. Without owned points it takes no lock.
func (q *Queue) Reap() int {
	if !q.hasOwned.Load() {
		return 0
	}
	s := q.s
	s.mu.Lock()
	dones := q.reaped // nil while another goroutine reaps
	q.reaped = nil
	n := 0
	for q.ownedHead < len(q.owned) {
		p := q.owned[q.ownedHead]
		done, err := p.end.Query()
		if !done && err == nil {
			if s.now()-p.since > ownedMaxAge {
				s.handOffLocked(q)
			}
			break
		}
		q.owned[q.ownedHead] = nil
		q.ownedHead++
		p.synced = time.Now()
		dones = s.completeLocked(p, err, dones)
		n++
	}
	q.st.Reaped += uint64(n)
	q.trimOwnedLocked()
	if n > 0 {
		s.afterCompletionsLocked(dones) // as a waiter does
	}
	q.reaped = dones[:0]
	s.mu.Unlock()
	return n
}

// HandOff gives the queue's owned points to the streams' waiters: its
// submitter is about to stop looking.
func (q *Queue) HandOff() {
	if !q.hasOwned.Load() {
		return
	}
	q.s.mu.Lock()
	q.s.handOffLocked(q)
	q.s.mu.Unlock()
}

// ownLocked reports whether q keeps p, a tracked point just issued with its
// end event recorded, and keeps it if so: q owns its completions, p is a
// whole command's outside any turn, no one waits on q (Wait, Hold,
// WaitIssued, Submit at depth), q holds fewer than maxOwned, and p's stream
// has nothing with its waiter. If not, what q owns goes to the waiters
// first, so that each stream's completions stay in issue order.
func (s *Scheduler) ownLocked(q *Queue, p *point, a *action) bool {
	keep := q.own && !q.closed && !s.closed && a.group == 0 && a.hi == 0 && p.end != nil &&
		q.waiting == 0 && q.waitingIssue == 0 && q.waitingRoom == 0 && // no one waits for completions
		len(q.owned)-q.ownedHead < maxOwned
	if keep {
		if w := s.waiters[p.sq.st]; w != nil && w.head < len(w.pts) {
			keep = false
		}
	}
	if !keep {
		s.handOffLocked(q)
		return false
	}
	p.since = s.now()
	q.owned = append(q.owned, p)
	q.hasOwned.Store(true)
	return true
}

// handOffLocked pushes q's owned points to their streams' waiters, in issue
// order.
func (s *Scheduler) handOffLocked(q *Queue) {
	if len(q.owned) == 0 {
		return
	}
	for _, p := range q.owned[q.ownedHead:] {
		s.pushLocked(p.sq.st, p)
	}
	clear(q.owned)
	q.owned, q.ownedHead = q.owned[:0], 0
	q.hasOwned.Store(false)
}

func (q *Queue) trimOwnedLocked() {
	if q.ownedHead == len(q.owned) {
		clear(q.owned)
		q.owned, q.ownedHead = q.owned[:0], 0
		q.hasOwned.Store(false)
	}
}
