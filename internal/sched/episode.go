package sched

import (
	"slices"
	"sync/atomic"
	"time"
)

// Holding the best effort through a service's slow spells
// (Options.EpisodeHold).
//
// On some of the lent H100's hosts the cores slow 3-11x for tens of
// milliseconds at a time (the "episodes", bench/RESULTS.md sessions 18-38),
// and a service's P99 is set by its requests in them. Under a best-effort
// load each such request takes about a tenth longer than alone: the daemon's
// CPU work for the other tenants, which the episode multiplies. Holding that
// work only around each request (session 38's quiet windows) did not lower
// it. This holds it for the whole spell, as Heracles-style controllers take
// a best-effort job's resources away while the latency-critical one lacks
// slack: the scheduler times each high-class launch's Issue (the driver's
// launch call, the service's own CPU path), and once episodeRun of them in a
// row took over 2.5 times the usual, the low class's work waits until
// EpisodeHold after the last slow one. The best effort's kernels in flight
// finish; nothing of it is issued, completed or answered until then, so its
// clients and the daemon's goroutines for them sleep. The usual is one
// running median for all high-class launches: several services' launches
// share it.
//
// A budget bounds what it may cost the best effort: holds take at most
// episodeShare of the time, with at most episodeCreditMax saved up; a hold
// starts only with a whole EpisodeHold of credit, and is extended as far as
// the credit goes.
//
// As session 38's quiet windows did, a hold applies only while the spinner
// (lowspin.go) runs, which carries on once it ends: a hold costs no
// wake-up.

const (
	// A launch whose Issue took over episodeFactorNum/episodeFactorDen
	// times the usual (the running median) is slow: an episode's cores ran
	// 3.4x slower at their median (session 28), the service's launch call
	// 3-4x (session 18). The first version took three times the recent
	// fastest, which about one launch in six passed on a host whose
	// episodes held 2-3% of them (bench/RESULTS.md, session 39).
	episodeFactorNum, episodeFactorDen = 5, 2
	// episodeRun is how many slow launches in a row start a hold: one
	// alone is more often a preemption or another thread's driver call.
	episodeRun = 2
	// episodeWarm is how many launches are timed, for a first median,
	// before the first hold.
	episodeWarm = 64
	// episodeStep: the median moves by 1/episodeStep of itself a launch,
	// so that an episode's tens of slow launches raise it by a fifth at
	// most, and a lasting change (a slower host) becomes the norm within a
	// few hundred.
	episodeStep = 256
	// episodeShare is the most of the time holds may take, and
	// episodeCreditMax how much of it may be saved up.
	episodeShare     = 4 // one part in
	episodeCreditMax = int64(250 * time.Millisecond)
)

// episodeBounds are the upper bounds, in halves of the median, of
// EpisodeStats.Ratios' buckets (the last is unbounded).
var episodeBounds = [...]int64{2, 3, 4, 5, 6, 8, 12}

// episodeWatch is the scheduler's view of the service's launch times.
type episodeWatch struct {
	// Under the scheduler's lock.
	warm     []int64 // the first episodeWarm times (ns), for the first median
	median   int64   // the running median of the Issue times (ns); 0: not yet
	slowRun  int     // slow launches in a row
	credit   int64   // ns of hold the budget allows
	creditAt int64   // when credit last accrued (scheduler clock)

	// until is when the hold ends (scheduler clock, ns); 0: none. The
	// spinner reads it without the lock.
	until atomic.Int64

	ratios [len(episodeBounds) + 1]atomic.Uint64 // launches timed, by their time over the median
	holds  atomic.Uint64                         // holds begun
	slow   atomic.Uint64                         // slow launches seen
	heldT  atomic.Int64                          // ns the spinner held completed work, in all
	spent  atomic.Int64                          // ns of holds granted, in all
}

// EpisodeStats counts the holds of Options.EpisodeHold.
type EpisodeStats struct {
	// Ratios counts the high-class launches timed after the first median,
	// by their Issue's time over the median then: under 1, 1-1.5, 1.5-2,
	// 2-2.5, 2.5-3, 3-4, 4-6 and over 6 times.
	Ratios  [len(episodeBounds) + 1]uint64
	Slow    uint64        // high-class launches whose Issue was slow
	Holds   uint64        // holds begun
	Granted time.Duration // the holds' length, in all
	Held    time.Duration // how long completed low-class work waited for holds to end
}

// EpisodeStats reports the holds' counts.
func (s *Scheduler) EpisodeStats() EpisodeStats {
	w := &s.episode
	e := EpisodeStats{Slow: w.slow.Load(), Holds: w.holds.Load(),
		Granted: time.Duration(w.spent.Load()), Held: time.Duration(w.heldT.Load())}
	for i := range e.Ratios {
		e.Ratios[i] = w.ratios[i].Load()
	}
	return e
}

// noteServiceIssueLocked takes the time a high-class launch's Issue took,
// ending at now (scheduler clock), and starts or extends a hold.
func (s *Scheduler) noteServiceIssueLocked(took, now int64) {
	w := &s.episode
	took = max(took, 1)
	if w.median == 0 {
		if w.warm = append(w.warm, took); len(w.warm) == episodeWarm {
			slices.Sort(w.warm)
			w.median, w.warm = w.warm[episodeWarm/2], nil
		}
		return
	}
	m := w.median
	bucket := 0
	for bucket < len(episodeBounds) && 2*took > episodeBounds[bucket]*m {
		bucket++
	}
	w.ratios[bucket].Add(1)
	if step := max(m/episodeStep, 1); took > m {
		w.median = m + step
	} else if took < m {
		w.median = max(m-step, 1)
	}
	if episodeFactorDen*took <= episodeFactorNum*m {
		w.slowRun = 0
		return
	}
	w.slow.Add(1)
	if w.slowRun++; w.slowRun < episodeRun {
		return
	}
	if w.creditAt == 0 {
		w.credit = episodeCreditMax
	} else {
		w.credit = min(w.credit+(now-w.creditAt)/episodeShare, episodeCreditMax)
	}
	w.creditAt = now
	from := max(w.until.Load(), now)
	grant := min(now+int64(s.opts.EpisodeHold)-from, w.credit)
	if from == now && grant < int64(s.opts.EpisodeHold) {
		return // a new hold starts whole or not at all
	}
	if grant <= 0 {
		return
	}
	if from == now {
		w.holds.Add(1)
	}
	w.credit -= grant
	w.spent.Add(grant)
	w.until.Store(from + grant)
}

// holdsAt reports whether a hold is on at now (scheduler clock).
func (w *episodeWatch) holdsAt(now int64) bool { return now < w.until.Load() }

// holdsLowLocked reports whether the low class's work waits now: a hold is
// on and the spinner runs, to carry on once it ends. The dispatcher that
// leaves work for it hands it to the spinner (lowSpinner.dispatchLocked).
func (s *Scheduler) holdsLowLocked() bool {
	return s.opts.EpisodeHold > 0 && s.spinner.running && !s.spinner.parked && s.episode.holdsAt(s.now())
}

// waitEpisode spins, without the scheduler's lock, until the hold on now
// ends, and counts the time as held; it returns at once if none is on. The
// spinner calls it before it completes or dispatches anything.
func (s *Scheduler) waitEpisode() {
	if s.opts.EpisodeHold <= 0 {
		return
	}
	w := &s.episode
	start := s.now()
	now := start
	for w.holdsAt(now) {
		s.opts.Yield()
		now = s.now()
	}
	w.heldT.Add(now - start)
}
