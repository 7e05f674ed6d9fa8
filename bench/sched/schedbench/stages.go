package main

import (
	"cmp"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// schedbench stages DIR [LABEL]: where the service's time goes, request by
// request, from a traced run (bench/sched/run.sh with TRACE=1, or ab.sh).
// It joins three files of DIR:
//
//	gpuos-hp-LABEL.trace.csv  the client: launch called, synchronize returned, and the GPU's %globaltimer start and end of the kernel
//	latency.log.csv           the daemon, per launch command: received, cuLaunchKernel called and returned, ...
//	latency.log.sync.csv      the daemon, per synchronize: received, its commands issued, streams synchronized
//
// and prints each stage's p50/p90/p99 per phase group (for the interleaved
// scenario, alone and loaded phases; else one group), then, among each
// group's slowest 1%, which stage exceeded its own median the most.
//
// The GPU's clock is aligned to the host's by taking the soonest kernel
// start of each 500 ms after its cuLaunchKernel was called as the launch
// latency floor: a line through those minima (the clocks drift) gives the
// offset. Stages that involve the GPU's times (I0->GS, GE->SS) are relative
// to that floor: compare them between groups, not as absolute figures.

// stageNames are the stages in the order of a request: L launch called
// (client), R received (daemon), I0/I1 cuLaunchKernel called/returned, GS/GE
// the kernel's start and end on the GPU, S the launch handed to the
// scheduler (R->S, S->I0 split R->I0; logs without it leave them blank), K
// the scheduler's lock taken for it (S->K, the wait for other goroutines,
// and K->I0 split S->I0), SV
// the launch's handler returned (the serving goroutine free for the next
// request; F, in between, the fence behind the launch enqueued), Y the client called its synchronize, SR/SI synchronize received / its
// commands issued, SS streams synchronized, C the client's synchronize
// returned. A client that waits on its completion page
// ($GPUOS_SYNC_CLIENT=1) has SS the driver's answer with the words to
// watch, usually before the kernel ends: GE->SS is then negative, and
// SS->C holds the client's own wait. One that watches its launches
// ($GPUOS_SYNC_CLIENT=watch) sends no synchronize when it waits on the page
// alone: GE->C, the kernel's end to the client's return, stands for
// GE->SS and SS->C in those requests.
var stageNames = []string{"total", "L->R", "R->I0", "R->S", "S->I0", "S->K", "K->I0", "I0->I1", "I0->GS", "GS->GE", "GE->C", "GE->SS", "SS->C", "R->SR", "I1->SV", "I1->F", "F->SV", "SV->SR", "L->Y", "Y->SR", "SR->SI", "max(I1,SI)->SS"}

// pathStages are the stages that make up total, one after the other (the
// GPU may start the kernel before cuLaunchKernel returns, so I0->GS
// overlaps I0->I1): the candidates for a slow request's worst stage. A
// request has either GE->SS and SS->C or GE->C.
var pathStages = []string{"L->R", "R->I0", "I0->I1", "I0->GS", "GS->GE", "GE->SS", "SS->C", "GE->C"}

// runStages parses the stages mode's flags and runs it.
func runStages(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("stages", flag.ContinueOnError)
	label := fs.String("label", "interleaved", "the hp run's label: gpuos-hp-LABEL.trace.csv")
	phase := fs.Duration("phase", 500*time.Millisecond, "the interleaved scenario's phase (0: one group)")
	settle := fs.Duration("settle", 25*time.Millisecond, "an alone phase's first part that counts in neither group")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: schedbench stages [--label L --phase D --settle D] DIR")
	}
	return stages(fs.Arg(0), *label, *phase, *settle, w)
}

// traceRow is a request of the client's trace; syncCalled is 0 in traces
// written before it was recorded.
type traceRow struct{ launch, synced, gpuStart, gpuEnd, syncCalled int64 }

// stampRow is one row of latency.log.csv or latency.log.sync.csv: the times
// after the session's name.
type stampRow []int64

func stages(dir, label string, phase, settle time.Duration, w io.Writer) error {
	tr, err := readTrace(filepath.Join(dir, "gpuos-hp-"+label+".trace.csv"))
	if err != nil {
		return err
	}
	launches, err := readStamps(filepath.Join(dir, "latency.log.csv"), "tenant hp", 3)
	if err != nil {
		return err
	}
	syncs, err := readStamps(filepath.Join(dir, "latency.log.sync.csv"), "tenant hp", 3)
	if err != nil {
		return err
	}
	groups, order := stageGroups(tr, launches, syncs, phase, settle)
	fmt.Fprintf(w, "%s, %s: %d requests traced; matched:", dir, label, len(tr))
	for _, g := range order {
		fmt.Fprintf(w, " %s %d", g, len(groups[g]))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  %-16s", "stage (us)")
	for _, g := range order {
		fmt.Fprintf(w, "%12s%8s%8s", g+" p50", "p90", "p99")
	}
	fmt.Fprintln(w)
	for _, st := range stageNames {
		fmt.Fprintf(w, "  %-16s", st)
		for _, g := range order {
			xs := column(groups[g], st)
			if len(xs) == 0 {
				fmt.Fprintf(w, "%28s", "")
				continue
			}
			fmt.Fprintf(w, "%12.1f%8.1f%8.1f", at(xs, 50), at(xs, 90), at(xs, 99))
		}
		fmt.Fprintln(w)
	}
	for _, g := range order {
		slow := slowest(groups[g])
		if len(slow) == 0 {
			continue
		}
		worst := worstStages(groups[g], slow)
		fmt.Fprintf(w, "  %s, slowest 1%% (%d): the stage most over its median:", g, len(slow))
		for _, st := range pathStages {
			if worst[st] > 0 {
				fmt.Fprintf(w, " %s %d", st, worst[st])
			}
		}
		fmt.Fprintln(w)
		printSlowMedians(w, g, groups[g], slow)
	}
	printEpisodes(w, groups, order)
	printBeside(w, groups, order)
	printSecondStart(w, tr)
	return nil
}

// besideKey is a request's key (not a stage): how many other goroutines
// were issuing commands (making driver calls) as its cuLaunchKernel began;
// logs before session 29 lack it.
const besideKey = "issuing beside"

// printBeside prints, per group, the service's cuLaunchKernel (I0->I1) and
// its receipt to it (R->I0) with no other goroutine issuing at its start
// and with some: whether the best-effort tenants' driver calls, in the same
// process and CUDA context, slow the service's.
func printBeside(w io.Writer, groups map[string][]map[string]float64, order []string) {
	for _, g := range order {
		printBesideOf(w, g, groups[g])
	}
}

// printBesideOf is printBeside's line for rows, named label.
func printBesideOf(w io.Writer, label string, rows []map[string]float64) {
	var none, some []map[string]float64
	for _, r := range rows {
		n, ok := r[besideKey]
		switch {
		case !ok:
		case n == 0:
			none = append(none, r)
		default:
			some = append(some, r)
		}
	}
	if len(none) == 0 || len(some) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s, with no other goroutine issuing / with some (%d / %d requests), p50 p90 (us):", label, len(none), len(some))
	for _, st := range []string{"I0->I1", "R->I0", "total"} {
		a, b := column(none, st), column(some, st)
		if len(a) == 0 || len(b) == 0 {
			continue
		}
		fmt.Fprintf(w, " %s %.1f %.1f / %.1f %.1f", st, at(a, 50), at(a, 90), at(b, 50), at(b, 90))
	}
	fmt.Fprintln(w)
}

// printSecondStart compares the requests started in the first 100 ms of
// their wall-clock second with the rest: work done once a second (such as
// the audit log's sampling before session 18) shows there.
func printSecondStart(w io.Writer, tr []traceRow) {
	var first, rest []float64
	for _, r := range tr {
		if r.synced == 0 {
			continue
		}
		x := float64(r.synced-r.launch) / 1e3
		if r.launch%int64(time.Second) < int64(100*time.Millisecond) {
			first = append(first, x)
		} else {
			rest = append(rest, x)
		}
	}
	if len(first) == 0 || len(rest) == 0 {
		return
	}
	slices.Sort(first)
	slices.Sort(rest)
	fmt.Fprintf(w, "  by start within its second (us): first 100 ms p50 %.1f p90 %.1f (%d requests); the rest p50 %.1f p90 %.1f (%d)\n",
		at(first, 50), at(first, 90), len(first), at(rest, 50), at(rest, 90), len(rest))
}

// stageGroups matches each traced request with the launch command and the
// synchronize the daemon received between its launch and its return (one
// of each, else it is left out) and computes its stages, in µs, grouped by
// phase.
func stageGroups(tr []traceRow, launches, syncs []stampRow, phase, settle time.Duration) (map[string][]map[string]float64, []string) {
	order := []string{"all"}
	if phase > 0 {
		order = []string{"alone", "loaded"}
	}
	groups := map[string][]map[string]float64{}
	if len(tr) == 0 {
		return groups, order
	}
	off := gpuOffset(tr, launches)
	t0 := tr[0].launch
	// A client that watches its launches (GPUOS_SYNC_CLIENT=watch) sends
	// most synchronizes nowhere: with fewer synchronizes logged than
	// requests traced by half, a request with none still counts, its
	// synchronize's stages left out.
	watching := 2*len(syncs) < len(tr)
	for _, r := range tr {
		g := "all"
		if phase > 0 {
			since := r.launch - t0
			k := since / int64(phase)
			switch {
			case k%2 == 1:
				g = "loaded"
			case since-k*int64(phase) >= int64(settle):
				g = "alone"
			default:
				continue
			}
		}
		x, y := within(launches, r), within(syncs, r)
		if x == nil || (y == nil && !watching) {
			continue
		}
		R, I0, I1 := x[0], x[1], x[2]
		o := off(r.launch)
		us := func(ns int64) float64 { return float64(ns) / 1e3 }
		st := map[string]float64{
			atKey: us(r.launch - t0), "total": us(r.synced - r.launch), "L->R": us(R - r.launch), "R->I0": us(I0 - R), "I0->I1": us(I1 - I0),
			"I0->GS": (float64(r.gpuStart-I0) - o) / 1e3, "GS->GE": us(r.gpuEnd - r.gpuStart),
		}
		if y == nil {
			st["GE->C"] = (float64(r.synced-r.gpuEnd) + o) / 1e3
		} else {
			SR, SI, SS := y[0], y[1], y[2]
			st["GE->SS"], st["SS->C"] = (float64(SS-r.gpuEnd)+o)/1e3, us(r.synced-SS)
			st["R->SR"], st["SR->SI"], st["max(I1,SI)->SS"] = us(SR-R), us(SI-SR), us(SS-max(I1, SI))
		}
		groups[g] = append(groups[g], st)
		if len(x) > 5 && x[5] != 0 { // the submit column
			st["R->S"], st["S->I0"] = us(x[5]-R), us(I0-x[5])
		}
		if len(x) > 6 && x[6] != 0 { // the handler's return
			st["I1->SV"] = us(x[6] - I1)
			if y != nil {
				st["SV->SR"] = us(y[0] - x[6])
			}
			if len(x) > 7 && x[7] != 0 { // the fence behind the launch
				st["I1->F"], st["F->SV"] = us(x[7]-I1), us(x[6]-x[7])
			}
			if len(x) > 8 { // served by the hedge's helper (1) or Serve's goroutine (0)
				st[byHelper] = float64(x[8])
			}
			if len(x) > 9 && x[9] != 0 && x[5] != 0 { // the scheduler's lock taken
				st["S->K"], st["K->I0"] = us(x[9]-x[5]), us(I0-x[9])
			}
			if len(x) > 10 && x[10] >= 0 { // other goroutines issuing as its issue began (-1: not counted)
				st[besideKey] = float64(x[10])
			}
		}
		if r.syncCalled > 0 {
			st["L->Y"] = us(r.syncCalled - r.launch)
			if y != nil {
				st["Y->SR"] = us(y[0] - r.syncCalled)
			}
		}
	}
	return groups, order
}

// within returns the one row (sorted by their first time) whose first time
// lies in the request's [launch, synced], or nil if none or several do.
func within(rows []stampRow, r traceRow) stampRow {
	i := sort.Search(len(rows), func(i int) bool { return rows[i][0] >= r.launch })
	j := sort.Search(len(rows), func(i int) bool { return rows[i][0] > r.synced })
	if j != i+1 {
		return nil
	}
	return rows[i]
}

// gpuOffset returns the GPU clock's offset from the host's at a host time:
// per 500 ms, the request whose kernel started soonest after its
// cuLaunchKernel was called, and a least-squares line through those points
// moved down onto the lowest of them.
func gpuOffset(tr []traceRow, launches []stampRow) func(int64) float64 {
	const bin = int64(500 * time.Millisecond)
	type point struct{ t, v float64 } // t from the first request: float64 is exact there
	t0 := tr[0].launch
	best := map[int64]point{}
	for _, r := range tr {
		x := within(launches, r)
		if x == nil || r.gpuStart == 0 {
			continue
		}
		b, v := r.launch/bin, float64(r.gpuStart-x[1])
		if p, ok := best[b]; !ok || v < p.v {
			best[b] = point{float64(r.launch - t0), v}
		}
	}
	if len(best) == 0 {
		return func(int64) float64 { return 0 }
	}
	var mt, mv float64
	for _, p := range best {
		mt += p.t
		mv += p.v
	}
	n := float64(len(best))
	mt, mv = mt/n, mv/n
	var num, den float64
	for _, p := range best {
		num += (p.t - mt) * (p.v - mv)
		den += (p.t - mt) * (p.t - mt)
	}
	slope := 0.0
	if den > 0 {
		slope = num / den
	}
	base := mv
	for _, p := range best {
		base = min(base, p.v-slope*(p.t-mt))
	}
	return func(t int64) float64 { return base + slope*(float64(t-t0)-mt) }
}

func column(rows []map[string]float64, stage string) []float64 {
	xs := make([]float64, 0, len(rows))
	for _, r := range rows {
		if v, ok := r[stage]; ok { // rows of an older log lack some
			xs = append(xs, v)
		}
	}
	slices.Sort(xs)
	return xs
}

// at is the pct-th percentile of sorted xs (nearest rank below).
func at(xs []float64, pct int) float64 { return xs[len(xs)*pct/100] }

// worstStages counts, over slow (the slowest 1% of rows by total), the path
// stage that most exceeded its median over rows.
func worstStages(rows, slow []map[string]float64) map[string]int {
	med := map[string]float64{}
	for _, st := range pathStages {
		if xs := column(rows, st); len(xs) > 0 {
			med[st] = at(xs, 50)
		}
	}
	worst := map[string]int{}
	for _, r := range slow {
		w, over := "", 0.0
		for _, st := range pathStages {
			v, ok := r[st]
			if !ok {
				continue // a stage of the other kind of request (GE->C, or GE->SS and SS->C)
			}
			if d := v - med[st]; w == "" || d > over {
				w, over = st, d
			}
		}
		worst[w]++
	}
	return worst
}

// slowStages are the stages whose medians over the slowest 1% say which
// side stalled: with L->R long, an L->Y as short as usual means the client
// had written its launch and gone on to its synchronize before the daemon
// read it (the daemon stalled), a long one that the client itself stalled.
var slowStages = []string{"L->R", "L->Y", "Y->SR", "R->I0", "I0->I1", "GE->SS", "SS->C", "GE->C"}

// byHelper is a request's key (not a stage) that is 1 if the hedge's helper
// served its launch, 0 if Serve's goroutine did; logs before session 25
// lack it.
const byHelper = "by helper"

// printSlowMedians prints the median of each of slowStages over slow, a
// group's slowest 1% of rows by total, and how many of them and of the
// whole group had their launch served by the hedge's helper.
func printSlowMedians(w io.Writer, g string, rows, slow []map[string]float64) {
	fmt.Fprintf(w, "  %s, slowest 1%%, median stage (us):", g)
	for _, st := range slowStages {
		if xs := column(slow, st); len(xs) > 0 {
			fmt.Fprintf(w, " %s %.1f", st, at(xs, 50))
		}
	}
	helped := func(rows []map[string]float64) (n, of int) {
		for _, r := range rows {
			if v, ok := r[byHelper]; ok {
				of++
				if v != 0 {
					n++
				}
			}
		}
		return n, of
	}
	if n, of := helped(slow); of > 0 {
		all, allOf := helped(rows)
		fmt.Fprintf(w, "; launch served by the hedge's helper: %d of %d (all: %d of %d)", n, of, all, allOf)
	}
	fmt.Fprintln(w)
}

// slowest returns the slowest 1% of rows by total.
func slowest(rows []map[string]float64) []map[string]float64 {
	sorted := slices.Clone(rows)
	slices.SortFunc(sorted, func(a, b map[string]float64) int { return cmp.Compare(a["total"], b["total"]) })
	return sorted[len(sorted)*99/100:]
}

func readTrace(path string) ([]traceRow, error) {
	recs, err := readCSV(path)
	if err != nil {
		return nil, err
	}
	var out []traceRow
	for i, r := range recs {
		if i == 0 && len(r) > 0 && strings.HasPrefix(r[0], "launch") {
			continue // the header
		}
		if len(r) != 4 && len(r) != 5 {
			return nil, fmt.Errorf("%s: row %d has %d fields, want 4 or 5", path, i+1, len(r))
		}
		var v [5]int64
		for k := range r {
			if v[k], err = strconv.ParseInt(r[k], 10, 64); err != nil {
				return nil, fmt.Errorf("%s: row %d: %w", path, i+1, err)
			}
		}
		out = append(out, traceRow{v[0], v[1], v[2], v[3], v[4]})
	}
	slices.SortFunc(out, func(a, b traceRow) int { return cmp.Compare(a.launch, b.launch) })
	return out, nil
}

// readStamps reads the rows of the sessions whose name contains who: their
// integer fields after the name (a trailing true/false is not one), at
// least want of them.
func readStamps(path, who string, want int) ([]stampRow, error) {
	recs, err := readCSV(path)
	if err != nil {
		return nil, err
	}
	var out []stampRow
	for i, r := range recs {
		if len(r) == 0 || !strings.Contains(r[0], who) {
			continue
		}
		var row stampRow
		for _, f := range r[1:] {
			if f == "true" || f == "false" {
				continue
			}
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: row %d: %w", path, i+1, err)
			}
			row = append(row, v)
		}
		if len(row) < want {
			return nil, fmt.Errorf("%s: row %d has %d times, want at least %d", path, i+1, len(row), want)
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b stampRow) int { return cmp.Compare(a[0], b[0]) })
	return out, nil
}

func readCSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s: %w", path, errEmpty)
	}
	return recs, nil
}

var errEmpty = errors.New("empty file")

// atKey is a row's launch time, µs from the first request's: not a stage.
const atKey = "at"

// findEpisodes returns the episodes (episodes.go) among rows, in launch
// order, by their totals. A group's rows may come from several phases: an
// episode does not run on across a gap of more than episodeSplit between
// two rows' launches.
func findEpisodes(rows []map[string]float64) []episode {
	totals := make([]float64, len(rows))
	for i, r := range rows {
		totals[i] = r["total"]
	}
	limit := episodeLimit(totals)
	var out []episode
	from := 0
	for i := 1; i <= len(rows); i++ {
		if i < len(rows) && rows[i][atKey]-rows[i-1][atKey] <= episodeSplit {
			continue
		}
		for _, e := range slowRuns(totals[from:i], limit) {
			for k := range e {
				e[k] += from
			}
			out = append(out, e)
		}
		from = i
	}
	return out
}

// episodeSplit, in µs, is a gap between two requests that ends an episode:
// longer than any request, shorter than a phase.
const episodeSplit = 50_000

// printEpisodes prints, per phase group that had episodes, how many and how
// far apart, and each path stage's median inside them against outside.
func printEpisodes(w io.Writer, groups map[string][]map[string]float64, order []string) {
	for _, g := range order {
		rows := groups[g]
		eps := findEpisodes(rows)
		if len(eps) == 0 {
			continue
		}
		in := map[int]bool{}
		var starts []float64
		for _, e := range eps {
			for _, i := range e {
				in[i] = true
			}
			starts = append(starts, rows[e[0]][atKey])
		}
		var inside, outside []map[string]float64
		for i, r := range rows {
			if in[i] {
				inside = append(inside, r)
			} else {
				outside = append(outside, r)
			}
		}
		var gaps []float64
		for i := 1; i < len(starts); i++ {
			gaps = append(gaps, (starts[i]-starts[i-1])/1e3)
		}
		slices.Sort(gaps)
		fmt.Fprintf(w, "  %s, episodes (%d+ requests over %.0fx the median, each within %d of the last): %d, holding %d requests (%.1f%%)",
			g, episodeMin, episodeFactor, episodeGap, len(eps), len(inside), 100*float64(len(inside))/float64(len(rows)))
		if len(gaps) > 0 {
			fmt.Fprintf(w, ", starts %.0f ms apart at the median", at(gaps, 50))
		}
		fmt.Fprintf(w, "\n  %s, median stage (us) in episodes / outside:", g)
		for _, st := range append([]string{"total"}, pathStages...) {
			a, b := column(inside, st), column(outside, st)
			if len(a) == 0 || len(b) == 0 {
				continue
			}
			fmt.Fprintf(w, " %s %.1f/%.1f", st, at(a, 50), at(b, 50))
		}
		fmt.Fprintln(w)
		printBesideOf(w, g+" in episodes", inside)
	}
}
