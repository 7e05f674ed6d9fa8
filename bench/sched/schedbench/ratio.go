package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// schedbench ratio FILE...: an interleaved hp run's P99 ratio (loaded phases
// over alone phases) with its bootstrap range, for runs made outside run.sh
// (bench/sched/cpuprobe.sh) whose directories report cannot read.
//
// schedbench ratio --pool FILE...: the runs' pairs of phases together, as
// one run: a single 60 s verdict on a host with slow episodes has a wide
// range, several pooled say where the host's ratio lies (bench/RESULTS.md,
// session 39).
func runRatio(files []string, w io.Writer) error {
	if len(files) > 0 && files[0] == "--pool" {
		return runPool(files[1:], w)
	}
	if len(files) == 0 {
		return errors.New("usage: schedbench ratio [--pool] HP.json...")
	}
	for _, name := range files {
		r, err := readInterleaved(name)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: P99 alone %.1f us, loaded %.1f us, ratio %.2f", name, r.Alone.P99us, r.P99us, r.P99us/r.Alone.P99us)
		if lo, hi, pairs, ok := ratioInterval(r.PhasesUs); ok {
			fmt.Fprintf(w, "; 95%% of %d draws of its %d pairs of phases within %.2f-%.2f", bootstrapDraws, pairs, lo, hi)
		}
		if x, lo, hi, _, ok := aloneControl(r.PhasesUs); ok {
			fmt.Fprintf(w, "; control (alone phases of every second pair over the others) %.2f, within %.2f-%.2f", x, lo, hi)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// readInterleaved reads an interleaved hp run's result.
func readInterleaved(name string) (Result, error) {
	var r Result
	b, err := os.ReadFile(name)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	if r.Mode != "hp" || r.Alone == nil || r.Alone.P99us <= 0 || r.P99us <= 0 {
		return r, fmt.Errorf("%s: not an interleaved hp run with samples", name)
	}
	return r, nil
}

// runPool prints the P99 ratio of the runs' phases pooled, with its
// bootstrap range over all their pairs.
func runPool(files []string, w io.Writer) error {
	if len(files) == 0 {
		return errors.New("usage: schedbench ratio --pool HP.json...")
	}
	var phases [][]float64
	each := make([]string, 0, len(files))
	for _, name := range files {
		r, err := readInterleaved(name)
		if err != nil {
			return err
		}
		if len(r.PhasesUs) < 2 {
			return fmt.Errorf("%s: no phases to pool", name)
		}
		phases = append(phases, r.PhasesUs[:len(r.PhasesUs)/2*2]...) // whole pairs: alone, loaded
		each = append(each, fmt.Sprintf("%.2f", r.P99us/r.Alone.P99us))
	}
	var alone, loaded []float64
	for k := 0; k+1 < len(phases); k += 2 {
		alone = append(alone, phases[k]...)
		loaded = append(loaded, phases[k+1]...)
	}
	a, l := p99(alone), p99(loaded)
	fmt.Fprintf(w, "%d runs pooled: P99 alone %.1f us, loaded %.1f us, ratio %.2f", len(files), a, l, l/a)
	if lo, hi, pairs, ok := ratioInterval(phases); ok {
		fmt.Fprintf(w, "; 95%% of %d draws of its %d pairs of phases within %.2f-%.2f", bootstrapDraws, pairs, lo, hi)
	}
	fmt.Fprintf(w, "; each run's ratio %s\n", strings.Join(each, " "))
	return nil
}
