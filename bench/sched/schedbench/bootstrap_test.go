package main

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNth: nth picks what a sort would put at k, duplicates and all.
func TestNth(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 10, 101, 1000} {
		for range 20 {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = float64(r.IntN(n/2 + 1)) // duplicates
			}
			sorted := slices.Sorted(slices.Values(xs))
			k := r.IntN(n)
			if got := nth(slices.Clone(xs), k); got != sorted[k] {
				t.Fatalf("nth(%v, %d) = %v, want %v", xs, k, got, sorted[k])
			}
		}
	}
}

// phasesOf makes pairs pairs of phases of n latencies each, uniform in
// [40, 60) µs, the loaded ones scaled by loadedScale.
func phasesOf(pairs, n int, loadedScale float64) [][]float64 {
	r := rand.New(rand.NewPCG(3, 4))
	var phases [][]float64
	for range pairs {
		a, l := make([]float64, n), make([]float64, n)
		for i := range n {
			a[i] = 40 + 20*r.Float64()
			l[i] = a[i] * loadedScale
		}
		phases = append(phases, a, l)
	}
	return phases
}

func TestRatioInterval(t *testing.T) {
	episode := phasesOf(12, 200, 1)
	for range 40 { // one loaded phase holds an episode of slow requests
		episode[5] = append(episode[5], 1000)
	}
	for _, tt := range []struct {
		name   string
		phases [][]float64
		ok     bool
		check  func(lo, hi float64) bool
		want   string
	}{
		{"too few pairs", phasesOf(1, 200, 1), false, nil, ""},
		{"loaded twice alone in every phase", phasesOf(12, 200, 2), true,
			func(lo, hi float64) bool { return lo == 2 && hi == 2 }, "exactly 2"},
		{"the same load in every phase", phasesOf(12, 200, 1), true,
			func(lo, hi float64) bool { return lo <= 1 && hi >= 1 && hi-lo < 0.1 }, "around 1, narrow"},
		// The pooled ratio is ~17; a draw without the episode's phase (a third
		// of them) gives ~1: the interval says the run's verdict rests on it.
		{"an episode in one loaded phase", episode, true,
			func(lo, hi float64) bool { return lo < 1.1 && hi > 10 }, "from about 1 to above 10"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, pairs, ok := ratioInterval(tt.phases)
			if ok != tt.ok || pairs != len(tt.phases)/2 {
				t.Fatalf("ok %v, %d pairs; want %v, %d", ok, pairs, tt.ok, len(tt.phases)/2)
			}
			if ok && !tt.check(lo, hi) {
				t.Errorf("interval %.3f-%.3f, want %s", lo, hi, tt.want)
			}
			if lo2, hi2, _, _ := ratioInterval(tt.phases); lo2 != lo || hi2 != hi {
				t.Errorf("a second call gave %.3f-%.3f, the first %.3f-%.3f: want the same", lo2, hi2, lo, hi)
			}
		})
	}
}

// TestAloneControl: the control compares the alone phases of odd pairs with
// those of even pairs and never looks at a loaded phase.
func TestAloneControl(t *testing.T) {
	// slowTurns makes the alone phases of odd pairs slower by scale, and
	// every loaded phase ten times slower (which the control must ignore).
	slowTurns := func(pairs int, scale float64) [][]float64 {
		phases := phasesOf(pairs, 200, 10)
		for k := 1; 2*k < len(phases); k += 2 {
			for i := range phases[2*k] {
				phases[2*k][i] *= scale
			}
		}
		return phases
	}
	for _, tt := range []struct {
		name           string
		phases         [][]float64
		ok             bool
		want           float64 // the ratio, to 0.02 (the groups hold different draws)
		wantLo, wantHi float64 // the range, to 0.02
		wantPairs      int
	}{
		{"too few pairs", phasesOf(3, 200, 1), false, 0, 0, 0, 1},
		{"four pairs: two control pairs", slowTurns(4, 1.5), true, 1.5, 1.5, 1.5, 2},
		{"alike turns", slowTurns(12, 1), true, 1, 0.9, 1.1, 6},
		{"odd pairs' alone phases twice as slow", slowTurns(12, 2), true, 2, 2, 2, 6},
		{"an odd count of pairs: the last alone phase unpaired", slowTurns(13, 2), true, 2, 2, 2, 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x, lo, hi, pairs, ok := aloneControl(tt.phases)
			if ok != tt.ok || pairs != tt.wantPairs {
				t.Fatalf("ok %v, %d pairs; want %v, %d", ok, pairs, tt.ok, tt.wantPairs)
			}
			if !ok {
				return
			}
			near := func(a, b float64) bool { return a > b-0.02 && a < b+0.02 }
			if !near(x, tt.want) {
				t.Errorf("ratio %.3f, want %.2f", x, tt.want)
			}
			if tt.wantLo == tt.wantHi {
				if !near(lo, tt.wantLo) || !near(hi, tt.wantHi) {
					t.Errorf("range %.3f-%.3f, want %.2f", lo, hi, tt.wantLo)
				}
			} else if lo < tt.wantLo || hi > tt.wantHi || lo > 1 || hi < 1 {
				t.Errorf("range %.3f-%.3f, want 1 inside it, within %.2f-%.2f", lo, hi, tt.wantLo, tt.wantHi)
			}
		})
	}
}
