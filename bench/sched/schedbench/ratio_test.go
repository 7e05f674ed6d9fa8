package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRatio(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r Result) string {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	twice := write("twice.json", Result{Mode: "hp", P99us: 118, Alone: &Result{P99us: 59}, PhasesUs: phasesOf(12, 200, 2)})
	// Pooled, slow alone phases of one run and slow loaded phases of the
	// other give a ratio that neither has: 160 over 200.
	flat := func(pairs int, alone, loaded float64) [][]float64 {
		var ph [][]float64
		for range pairs {
			ph = append(ph, slices.Repeat([]float64{alone}, 100), slices.Repeat([]float64{loaded}, 100))
		}
		return ph
	}
	up := write("up.json", Result{Mode: "hp", P99us: 150, Alone: &Result{P99us: 100}, PhasesUs: flat(5, 100, 150)})
	down := write("down.json", Result{Mode: "hp", P99us: 160, Alone: &Result{P99us: 200}, PhasesUs: flat(5, 200, 160)})
	noPhases := write("nophases.json", Result{Mode: "hp", P99us: 60, Alone: &Result{P99us: 50}})
	be := write("be.json", Result{Mode: "be", KernelsPerSec: 900})
	for _, tt := range []struct {
		name    string
		files   []string
		want    []string // substrings of the output
		wantErr string
	}{
		{"with phases", []string{twice}, []string{"ratio 2.00", "12 pairs of phases within 2.00-2.00", "; control (alone phases of every second pair over the others) "}, ""},
		{"without phases: the ratio alone", []string{noPhases}, []string{"P99 alone 50.0 us, loaded 60.0 us, ratio 1.20\n"}, ""},
		{"two files", []string{twice, noPhases}, []string{"twice.json: ", "nophases.json: "}, ""},
		{"not an hp run", []string{be}, nil, "not an interleaved hp run"},
		{"missing", []string{filepath.Join(dir, "none.json")}, nil, "no such file"},
		{"no files", nil, nil, "usage"},
		{"pooled", []string{"--pool", up, down}, []string{"2 runs pooled: P99 alone 200.0 us, loaded 160.0 us, ratio 0.80; ", " 10 pairs of phases within ", "each run's ratio 1.50 0.80\n"}, ""},
		{"pooled, without phases", []string{"--pool", twice, noPhases}, nil, "no phases to pool"},
		{"pooled, no files", []string{"--pool"}, nil, "usage"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			err := runRatio(tt.files, &out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output %q lacks %q", out.String(), w)
				}
			}
		})
	}
}
