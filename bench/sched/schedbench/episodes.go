package main

import (
	"fmt"
	"io"
	"slices"
)

// An episode is a run of slow requests in a row: each over episodeFactor
// times the run's median latency and at most episodeGap requests after the
// last, episodeMin or more of them. On some hosts the service's P99 is set
// by such runs (tens of requests in a row, every stage slower, while the
// host takes CPU time from the virtual machine: bench/RESULTS.md, session
// 18) more than by single slow requests, so the report counts them for
// both stacks, and stages says which stages they slowed.
const (
	episodeFactor = 2.0
	episodeGap    = 3
	episodeMin    = 8
	// episodeShareMax is the share of a kind of phase's requests (%) in
	// episodes over which they are no longer the host's episodes but the
	// load's effect, and the report does not split requests by them.
	episodeShareMax = 10
)

// episode is the indexes of one episode's slow requests.
type episode []int

// episodeLimit is the latency over which a request counts as slow: episodeFactor
// times the median of xs (0 when xs is empty).
func episodeLimit(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return episodeFactor * median(xs)
}

// slowRuns returns the episodes of xs (latencies in the order they were
// measured) over limit.
func slowRuns(xs []float64, limit float64) []episode {
	var out []episode
	var cur episode
	for i, x := range xs {
		if x <= limit {
			continue
		}
		if len(cur) > 0 && i-cur[len(cur)-1] > episodeGap {
			if len(cur) >= episodeMin {
				out = append(out, cur)
			}
			cur = nil
		}
		cur = append(cur, i)
	}
	if len(cur) >= episodeMin {
		out = append(out, cur)
	}
	return out
}

// phaseEpisodes counts an interleaved run's episodes (phases_us: alone
// phases at even indexes, loaded at odd), each found within its phase, over
// the run's whole median.
type phaseEpisodes struct {
	alone, loaded         int // episodes
	aloneReqs, loadedReqs int // requests in them
	aloneAll, loadedAll   int // requests
	// each kind of phase's requests in episodes and the others: how much
	// slower the host made this stack's requests, and what the load did
	// outside the episodes, whose share of the requests sets the P99 on
	// hosts that have them
	aloneIn, aloneOut   []float64
	loadedIn, loadedOut []float64
}

func countPhaseEpisodes(phases [][]float64) phaseEpisodes {
	var all []float64
	for _, p := range phases {
		all = append(all, p...)
	}
	limit := episodeLimit(all)
	var c phaseEpisodes
	for k, p := range phases {
		n, reqs := 0, 0
		eps := slowRuns(p, limit)
		for _, e := range eps {
			n++
			reqs += len(e)
		}
		in := make([]bool, len(p))
		for _, e := range eps {
			for _, i := range e {
				in[i] = true
			}
		}
		inside, outside := &c.aloneIn, &c.aloneOut
		if k%2 == 0 {
			c.alone, c.aloneReqs, c.aloneAll = c.alone+n, c.aloneReqs+reqs, c.aloneAll+len(p)
		} else {
			c.loaded, c.loadedReqs, c.loadedAll = c.loaded+n, c.loadedReqs+reqs, c.loadedAll+len(p)
			inside, outside = &c.loadedIn, &c.loadedOut
		}
		for i, x := range p {
			if in[i] {
				*inside = append(*inside, x)
			} else {
				*outside = append(*outside, x)
			}
		}
	}
	return c
}

// printPhaseEpisodes prints one stack's line of episodes, if it has phases.
func printPhaseEpisodes(w io.Writer, stack string, phases [][]float64) {
	if len(phases) < 2 {
		return
	}
	c := countPhaseEpisodes(phases)
	pct := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	fmt.Fprintf(w, "%s, interleaved: slow episodes (%d+ requests in a row over %.0fx the median) in the alone phases %d (%.1f%% of their requests), in the loaded phases %d (%.1f%%)\n",
		stack, episodeMin, episodeFactor, c.alone, pct(c.aloneReqs, c.aloneAll), c.loaded, pct(c.loadedReqs, c.loadedAll))
	if len(c.aloneIn) > 0 && len(c.aloneOut) > 0 {
		// Where the host slows every stage alike, a stack whose request
		// does more on the CPUs is slowed by more µs: compare the stacks.
		in, out := median(c.aloneIn), median(c.aloneOut)
		fmt.Fprintf(w, "%s, interleaved: in the alone phases' episodes the median request took %.1f us, outside them %.1f us (%.1fx)\n",
			stack, in, out, in/out)
	}
	if c.alone+c.loaded > 0 && len(c.aloneOut) > 0 && len(c.loadedOut) > 0 &&
		pct(c.aloneReqs, c.aloneAll) < episodeShareMax && pct(c.loadedReqs, c.loadedAll) < episodeShareMax {
		// With episodes in a few percent of the requests, the P99 is
		// mostly theirs: the ratio then reads how many fell in each kind of
		// phase and how slow they were. Outside them is what the load did
		// to the rest. (Where the load itself makes most requests slow, as
		// natively, the "episodes" are the load, and the split means
		// nothing.)
		a, l := p99(slices.Clone(c.aloneOut)), p99(slices.Clone(c.loadedOut))
		fmt.Fprintf(w, "%s, interleaved: outside the episodes, P99 in the loaded phases / in the alone phases = %.2f (%.1f / %.1f us)",
			stack, l/a, l, a)
		if len(c.aloneIn) > 0 && len(c.loadedIn) > 0 {
			fmt.Fprintf(w, "; in them, the median request %.1f / %.1f us", median(c.loadedIn), median(c.aloneIn))
		}
		fmt.Fprintln(w)
	}
}

// median is the median of xs (not empty).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return at(s, 50)
}
