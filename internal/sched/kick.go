package sched

// Deferred kicks. A high-class submitter issues its own commands and leaves
// the other tenants' to the background goroutine, which it wakes (kick) if
// any are queued. Under a best-effort load some always are, so every
// request of a latency-critical service woke that goroutine: a goroutine
// wake-up (on a virtual machine, an interrupt to another CPU) on the
// service's path between its launch and its synchronize, and a second
// goroutine taking the scheduler's lock just as the synchronize wants it.
// Usually for nothing: the policy holds the lower classes back while the
// service is active, and their completions dispatch them anyway. On the
// H100 (bench/RESULTS.md, session 19), the load added 3.8-4.1 µs at the
// median to the service's time from its cuLaunchKernel's return to its
// serving goroutine being free for the synchronize with the wake-up made
// there, and 0.7-1.2 µs with it deferred.
//
// A queue with deferred kicks (SetDeferredKicks) notes the wake-up as owed
// instead, and its submitter pays it (Kick) once its requests are answered.
// Nothing waits on an owed kick for long: the background goroutine wakes on
// its own timer while work is queued (Options.TickInterval), completions
// dispatch on their goroutines, and Close pays it.

// SetDeferredKicks sets whether the queue's submissions leave the
// background goroutine's wake-up owed for Kick rather than waking it.
// Turning it off pays a kick owed.
func (q *Queue) SetDeferredKicks(on bool) {
	s := q.s
	s.mu.Lock()
	q.deferKicks = on
	s.mu.Unlock()
	if !on {
		q.Kick()
	}
}

// Kick wakes the background goroutine if a submission of the queue left
// its wake-up owed. Without one owed it takes no lock and makes no call.
func (q *Queue) Kick() {
	if q.kickOwed.Load() && q.kickOwed.Swap(false) {
		q.s.kick()
	}
}

// KickOwed reports whether a submission of the queue left the background
// goroutine's wake-up owed.
func (q *Queue) KickOwed() bool { return q.kickOwed.Load() }
