package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// schedbench ratio FILE...: an interleaved hp run's P99 ratio (loaded phases
// over alone phases) with its bootstrap range, for runs made outside run.sh
// (bench/sched/cpuprobe.sh) whose directories report cannot read.
func runRatio(files []string, w io.Writer) error {
	if len(files) == 0 {
		return errors.New("usage: schedbench ratio HP.json...")
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if r.Mode != "hp" || r.Alone == nil || r.Alone.P99us <= 0 || r.P99us <= 0 {
			return fmt.Errorf("%s: not an interleaved hp run with samples", name)
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
