package main

import (
	"math/rand/v2"
	"slices"
)

// bootstrapDraws is how many resamples ratioInterval draws.
const bootstrapDraws = 2000

// ratioInterval is how sure an interleaved run's P99 ratio (loaded phases
// over alone phases) is, given how the host's hiccups fell: it resamples the
// run's pairs of phases (an alone phase and the loaded one after it) with
// replacement, bootstrapDraws times, and returns the 2.5th and 97.5th
// percentiles of the ratio over the draws, and the number of pairs. Pairs
// rather than requests are drawn because slow requests come in episodes
// (bench/RESULTS.md, run 35) that a phase holds whole. The generator is
// seeded, so a report reads the same each time. ok is false with fewer
// than two pairs.
func ratioInterval(phases [][]float64) (lo, hi float64, pairs int, ok bool) {
	pairs = len(phases) / 2
	if pairs < 2 {
		return 0, 0, pairs, false
	}
	r := rand.New(rand.NewPCG(1, 2))
	ratios := make([]float64, 0, bootstrapDraws)
	var alone, loaded []float64
	for range bootstrapDraws {
		alone, loaded = alone[:0], loaded[:0]
		for range pairs {
			k := r.IntN(pairs)
			alone = append(alone, phases[2*k]...)
			loaded = append(loaded, phases[2*k+1]...)
		}
		a, l := p99(alone), p99(loaded)
		if a > 0 && l > 0 {
			ratios = append(ratios, l/a)
		}
	}
	if len(ratios) == 0 {
		return 0, 0, pairs, false
	}
	slices.Sort(ratios)
	return ratios[len(ratios)*25/1000], ratios[len(ratios)*975/1000], pairs, true
}

// p99 is the 99th percentile as latencyResult takes it (the element at
// len*99/100 in sorted order; 0 for none). It reorders xs.
func p99(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return nth(xs, len(xs)*99/100)
}

// nth returns the element that would be at index k if xs were sorted
// (quickselect: linear on average, where a sort per bootstrap draw made the
// report take seconds). It reorders xs.
func nth(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		pivot := xs[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// aloneControl is the measurement's own noise on a run: the alone phases
// split by turns into two groups that differ in nothing but when they ran
// (the alone phase of every second pair, over that of the pairs between),
// and the P99 ratio between them, with its bootstrap range over the control's
// pairs (two consecutive pairs' alone phases). A run whose control is far
// from 1 was made on a host whose hiccups alone move the P99 that much; one
// whose control is near 1 and whose verdict ratio is not measured a load
// effect. ok is false with fewer than four pairs.
func aloneControl(phases [][]float64) (ratio, lo, hi float64, pairs int, ok bool) {
	var control [][]float64
	for k := 0; 4*k+2 < len(phases); k++ {
		control = append(control, phases[4*k], phases[4*k+2])
	}
	pairs = len(control) / 2
	if pairs < 2 {
		return 0, 0, 0, pairs, false
	}
	var first, second []float64
	for k := range pairs {
		first = append(first, control[2*k]...)
		second = append(second, control[2*k+1]...)
	}
	a, b := p99(first), p99(second)
	if a <= 0 || b <= 0 {
		return 0, 0, 0, pairs, false
	}
	lo, hi, _, ok = ratioInterval(control)
	return b / a, lo, hi, pairs, ok
}
