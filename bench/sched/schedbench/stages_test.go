package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// request is one synthetic traced request: offsets in µs from its launch.
type request struct {
	at                           time.Duration // launch time from the first request
	recv, issue0, issue1, gs, ge float64       // daemon receipt, cuLaunchKernel called/returned, GPU start/end
	submit                       float64       // handed to the scheduler (0: a log without the column)
	served                       float64       // the launch's handler returned (0: a log without the column)
	fenced                       float64       // the fence behind the launch enqueued (0: a log without the column, or none)
	helper                       int           // 1: the hedge's helper served the launch; -1: a log without the column
	locked                       float64       // the scheduler's lock taken (0: a log without the column)
	beside                       int           // other goroutines issuing at the launch's issue (-1: no column)
	syncCall                     float64       // the client called its synchronize (0: a trace without the column)
	syncRecv, syncIssued, synced float64       // the synchronize's stamps
	back                         float64       // the client's synchronize returned
	extraLaunch                  bool          // a second launch command inside its window: left out
}

// writeRun writes the three files stages reads: the GPU clock is the host's
// plus gpuSkew, so the alignment has something to remove.
func writeRun(t *testing.T, reqs []request) string {
	t.Helper()
	dir := t.TempDir()
	const base = int64(1_800_000_000_000_000_000)
	const gpuSkew = int64(123_456_789)
	ns := func(at time.Duration, us float64) int64 { return base + int64(at) + int64(us*1e3) }
	var tr, lat, syn strings.Builder
	tr.WriteString("launch_ns,synced_ns,gpu_start_ns,gpu_end_ns\n")
	for _, r := range reqs {
		fmt.Fprintf(&tr, "%d,%d,%d,%d", ns(r.at, 0), ns(r.at, r.back), ns(r.at, r.gs)+gpuSkew, ns(r.at, r.ge)+gpuSkew)
		if r.syncCall > 0 {
			fmt.Fprintf(&tr, ",%d", ns(r.at, r.syncCall))
		}
		tr.WriteString("\n")
		fmt.Fprintf(&lat, "\"7 (tenant hp, hp)\",%d,%d,%d,%d,%d,false", ns(r.at, r.recv), ns(r.at, r.issue0), ns(r.at, r.issue1), ns(r.at, r.ge+5), ns(r.at, r.ge+6))
		if r.submit > 0 {
			fmt.Fprintf(&lat, ",%d", ns(r.at, r.submit))
			if r.served > 0 {
				fmt.Fprintf(&lat, ",%d", ns(r.at, r.served))
				if r.fenced > 0 {
					fmt.Fprintf(&lat, ",%d", ns(r.at, r.fenced))
				} else {
					lat.WriteString(",0")
				}
				if r.helper >= 0 {
					fmt.Fprintf(&lat, ",%d", r.helper)
					if r.locked > 0 {
						fmt.Fprintf(&lat, ",%d", ns(r.at, r.locked))
						if r.beside >= 0 {
							fmt.Fprintf(&lat, ",%d", r.beside)
						}
					}
				}
			}
		}
		lat.WriteString("\n")
		if r.extraLaunch {
			fmt.Fprintf(&lat, "\"7 (tenant hp, hp)\",%d,%d,%d,%d,%d,true\n", ns(r.at, r.recv+1), ns(r.at, r.issue0+1), ns(r.at, r.issue1+1), ns(r.at, r.ge+5), ns(r.at, r.ge+6))
		}
		fmt.Fprintf(&lat, "\"9 (tenant be1, be)\",%d,%d,%d,%d,%d,false\n", ns(r.at, r.recv), ns(r.at, r.issue0), ns(r.at, r.issue1), ns(r.at, r.ge), ns(r.at, r.ge)) // another tenant: ignored
		fmt.Fprintf(&syn, "\"7 (tenant hp, hp)\",%d,%d,%d,1\n", ns(r.at, r.syncRecv), ns(r.at, r.syncIssued), ns(r.at, r.synced))
	}
	for name, s := range map[string]string{"gpuos-hp-interleaved.trace.csv": tr.String(), "latency.log.csv": lat.String(), "latency.log.sync.csv": syn.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// readRun reads back the three files writeRun wrote.
func readRun(t *testing.T, dir string) (tr []traceRow, launches, syncs []stampRow) {
	t.Helper()
	tr, err := readTrace(filepath.Join(dir, "gpuos-hp-interleaved.trace.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if launches, err = readStamps(filepath.Join(dir, "latency.log.csv"), "tenant hp", 3); err != nil {
		t.Fatal(err)
	}
	if syncs, err = readStamps(filepath.Join(dir, "latency.log.sync.csv"), "tenant hp", 3); err != nil {
		t.Fatal(err)
	}
	return tr, launches, syncs
}

// A request's stages come from its own launch and synchronize stamps, with
// the GPU's clock aligned so that the soonest kernel start after its launch
// call is the floor; requests are grouped by phase, and one whose window
// holds two launch commands is left out.
func TestStageGroups(t *testing.T) {
	plain := request{recv: 5, submit: 9, locked: 10.25, issue0: 12, issue1: 18, fenced: 18.75, served: 19.5, syncCall: 2, gs: 15, ge: 35, syncRecv: 20, syncIssued: 20.5, synced: 37, back: 41}
	slowHop := plain
	slowHop.back = 141 // the reply reached the client 100 µs later
	late := plain
	late.gs, late.ge, late.synced, late.back = 25, 45, 47, 51 // the kernel started 10 µs later
	late.submit, late.syncCall = 0, 0                         // and its rows have no submit time nor synchronize call
	var reqs []request
	for i := range 8 {
		r := plain
		switch i {
		case 3:
			r = slowHop
		case 4:
			r.fenced = 0 // a launch with no fence behind it
		case 5:
			r = late
		case 6:
			r.extraLaunch = true
		}
		r.at = time.Duration(i) * 100 * time.Millisecond
		reqs = append(reqs, r)
	}
	tr, launches, syncs := readRun(t, writeRun(t, reqs))

	groups, order := stageGroups(tr, launches, syncs, 0, 0)
	if len(order) != 1 || order[0] != "all" {
		t.Fatalf("groups %v without phases, want [all]", order)
	}
	all := groups["all"]
	if len(all) != 7 {
		t.Fatalf("%d requests matched, want 7 (one has two launch commands)", len(all))
	}
	near := func(have, want float64) bool { return have > want-0.01 && have < want+0.01 }
	for _, tt := range []struct {
		row   int
		stage string
		want  float64
	}{
		{0, "total", 41}, {0, "L->R", 5}, {0, "R->I0", 7}, {0, "R->S", 4}, {0, "S->I0", 3}, {0, "S->K", 1.25}, {0, "K->I0", 1.75}, {0, "I0->I1", 6},
		{0, "I0->GS", 0}, // the floor: every kernel but one started 3 µs after its call
		{0, "GS->GE", 20}, {0, "GE->SS", 5}, {0, "SS->C", 4}, {0, "R->SR", 15}, {0, "SR->SI", 0.5},
		{0, "max(I1,SI)->SS", 16.5},
		{0, "I1->SV", 1.5}, {0, "I1->F", 0.75}, {0, "F->SV", 0.75}, {0, "SV->SR", 0.5}, {0, "L->Y", 2}, {0, "Y->SR", 18},
		{3, "SS->C", 104}, {3, "total", 141},
		{5, "I0->GS", 10}, {5, "GE->SS", 5}, // the late kernel, against the floor
	} {
		if have := all[tt.row][tt.stage]; !near(have, tt.want) {
			t.Errorf("request %d, %s = %.2f µs, want %.2f", tt.row, tt.stage, have, tt.want)
		}
	}
	if v, ok := all[5]["R->S"]; ok {
		t.Errorf("request 5, logged without a submit time: R->S = %.2f µs, want none", v)
	}
	if v, ok := all[4]["I1->F"]; ok {
		t.Errorf("request 4, logged with no fence (0): I1->F = %.2f µs, want none", v)
	}
	for _, st := range []string{"S->I0", "S->K", "I1->SV", "L->Y"} {
		if xs := column(all, st); len(xs) != 6 {
			t.Errorf("%s column of %d values, want 6 (request 5 has none)", st, len(xs))
		}
	}

	// 250 ms phases, the first 50 ms of an alone phase settling: requests
	// at 100, 200 and 700 ms alone, 300 and 400 ms loaded, 0 and 500 ms
	// settling, and 600 ms has two launch commands.
	groups, order = stageGroups(tr, launches, syncs, 250*time.Millisecond, 50*time.Millisecond)
	if got := fmt.Sprint(order, len(groups["alone"]), len(groups["loaded"])); got != "[alone loaded] 3 2" {
		t.Errorf("phase groups and sizes: %s, want [alone loaded] 3 2", got)
	}
}

// The report prints every stage and names each of the slowest requests'
// worst stage.
func TestStagesReport(t *testing.T) {
	var reqs []request
	for i := range 200 {
		r := request{at: time.Duration(i) * time.Millisecond, recv: 5, submit: 8, issue0: 12, issue1: 18, served: 19, gs: 15, ge: 35, syncCall: 2, syncRecv: 20, syncIssued: 20.5, synced: 37, back: 41}
		switch i {
		case 150: // a 500 µs hop in, read late by the daemon (the client went on to its synchronize), then by the hedge's helper
			r.recv, r.submit, r.issue0, r.issue1, r.served, r.gs, r.ge, r.syncRecv, r.syncIssued, r.synced, r.back = 505, 508, 512, 518, 519, 515, 535, 520, 520.5, 537, 541
			r.helper = 1
		case 100: // a 50 µs hop back
			r.back = 91
		}
		reqs = append(reqs, r)
	}
	dir := writeRun(t, reqs)
	var out bytes.Buffer
	if err := runStages([]string{"--phase", "0", dir}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"200 requests traced; matched: all 200", "total", "max(I1,SI)->SS", "all, slowest 1% (2): the stage most over its median: L->R 1 SS->C 1",
		"all, slowest 1%, median stage (us): L->R 505.0 L->Y 2.0 Y->SR 518.0",
		"; launch served by the hedge's helper: 1 of 2 (all: 1 of 200)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if err := runStages([]string{filepath.Join(dir, "nonexistent")}, &out); err == nil {
		t.Error("stages of a directory without the files: no error")
	}
}

// Runs of slow requests are reported as episodes: how many, how far apart,
// and each stage's median inside against outside them. A run shorter than
// episodeMin is not one, and a quick request inside a run does not split it.
func TestStagesEpisodes(t *testing.T) {
	var reqs []request
	slow := func(i int) bool {
		switch {
		case i >= 50 && i < 60 && i != 55: // 9 slow, one quick among them
			return true
		case i >= 250 && i < 258: // 8 slow
			return true
		case i >= 150 && i < 155: // 5 slow: too few
			return true
		}
		return false
	}
	for i := range 400 {
		r := request{at: time.Duration(i) * time.Millisecond, recv: 5, issue0: 12, issue1: 18, gs: 15, ge: 35, syncRecv: 20, syncIssued: 20.5, synced: 37, back: 41}
		if slow(i) { // 100 µs more on the way in
			r.recv, r.issue0, r.issue1, r.gs, r.ge, r.syncRecv, r.syncIssued, r.synced, r.back = 105, 112, 118, 115, 135, 120, 120.5, 137, 141
		}
		reqs = append(reqs, r)
	}
	dir := writeRun(t, reqs)
	tr, launches, syncs := readRun(t, dir)
	groups, _ := stageGroups(tr, launches, syncs, 0, 0)
	eps := findEpisodes(groups["all"])
	if len(eps) != 2 || len(eps[0]) != 9 || eps[0][0] != 50 || len(eps[1]) != 8 || eps[1][0] != 250 {
		t.Fatalf("episodes %v, want two: 9 requests from 50 and 8 from 250", eps)
	}
	var out bytes.Buffer
	if err := runStages([]string{"--phase", "0", dir}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"all, episodes (8+ requests over 2x the median, each within 3 of the last): 2, holding 17 requests (4.2%), starts 200 ms apart at the median",
		"total 141.0/41.0 L->R 105.0/5.0 R->I0 7.0/7.0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// Requests started in the first 100 ms of their wall-clock second are
// compared with the rest, so work done once a second shows.
func TestStagesSecondStart(t *testing.T) {
	var reqs []request
	for i := range 300 { // from a second's start, 1 ms apart
		r := request{at: time.Duration(i) * time.Millisecond, recv: 5, issue0: 12, issue1: 18, gs: 15, ge: 35, syncRecv: 20, syncIssued: 20.5, synced: 37, back: 41}
		if i < 100 {
			r.back = 91
		}
		reqs = append(reqs, r)
	}
	var out bytes.Buffer
	if err := runStages([]string{"--phase", "0", writeRun(t, reqs)}, &out); err != nil {
		t.Fatal(err)
	}
	want := "by start within its second (us): first 100 ms p50 91.0 p90 91.0 (100 requests); the rest p50 41.0 p90 41.0 (200)"
	if !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
}

// An episode does not run on across the gap between two phases of a group.
func TestEpisodesSplitAtGaps(t *testing.T) {
	var rows []map[string]float64
	for i := range 40 {
		at := float64(i) * 1000 // µs
		if i >= 20 {
			at += 500_000 // the next phase of the group
		}
		total := 40.0
		if i >= 15 && i < 25 { // 5 slow at the end of one phase, 5 at the start of the next
			total = 200
		}
		rows = append(rows, map[string]float64{atKey: at, "total": total})
	}
	if eps := findEpisodes(rows); len(eps) != 0 {
		t.Errorf("episodes %v across a phase gap, want none (5 and 5 are too few)", eps)
	}
	for i := 25; i < 30; i++ {
		rows[i]["total"] = 200
	}
	if eps := findEpisodes(rows); len(eps) != 1 || len(eps[0]) != 10 || eps[0][0] != 20 {
		t.Errorf("episodes %v, want one of 10 from 20", eps)
	}
}

// A client that watches its launches logs few synchronizes: its requests
// without one still count, with GE->C (the kernel's end to the client's
// return) for the synchronize's stages; a request whose synchronize was
// logged keeps GE->SS and SS->C. The report names the worst stage among
// those each request has.
func TestStagesWatching(t *testing.T) {
	plain := request{recv: 5, submit: 9, issue0: 12, issue1: 18, fenced: 18.75, served: 19.5, syncCall: 2, gs: 15, ge: 35, syncRecv: 20, syncIssued: 20.5, synced: 37, back: 41}
	var reqs []request
	for i := range 200 {
		r := plain
		r.at = time.Duration(i) * 10 * time.Millisecond
		if i == 7 {
			r.back = 341 // the slowest: 300 µs after the kernel's end
		}
		reqs = append(reqs, r)
	}
	dir := writeRun(t, reqs)
	// Keep the synchronizes of one request in ten (those the client asked).
	syncPath := filepath.Join(dir, "latency.log.sync.csv")
	all, err := os.ReadFile(syncPath)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for i, row := range strings.Split(strings.TrimSpace(string(all)), "\n") {
		if i%10 == 0 {
			kept = append(kept, row)
		}
	}
	if err := os.WriteFile(syncPath, []byte(strings.Join(kept, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, launches, syncs := readRun(t, dir)
	groups, _ := stageGroups(tr, launches, syncs, 0, 0)
	rows := groups["all"]
	if len(rows) != 200 {
		t.Fatalf("%d requests matched, want 200 (those without a synchronize too)", len(rows))
	}
	near := func(have, want float64) bool { return have > want-0.01 && have < want+0.01 }
	// Against the launch latency's floor (3 µs here), as GE->SS is.
	if v, ok := rows[3]["GE->C"]; !ok || !near(v, 9) {
		t.Errorf("request 3 (no synchronize): GE->C = %.2f (%v), want 9", v, ok)
	}
	if _, ok := rows[3]["GE->SS"]; ok {
		t.Error("request 3 (no synchronize) has GE->SS")
	}
	if v, ok := rows[10]["GE->SS"]; !ok || !near(v, 5) {
		t.Errorf("request 10 (synchronize logged): GE->SS = %.2f (%v), want 5", v, ok)
	}
	if _, ok := rows[10]["GE->C"]; ok {
		t.Error("request 10 (synchronize logged) has GE->C")
	}
	if w := worstStages(rows, []map[string]float64{rows[7]}); w["GE->C"] != 1 {
		t.Errorf("worst stage of request 7: %v, want GE->C", w)
	}
	var out strings.Builder
	if err := stages(dir, "interleaved", 0, 0, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "GE->C") {
		t.Errorf("the report has no GE->C:\n%s", out.String())
	}
}

// The report splits the service's cuLaunchKernel by whether other
// goroutines were issuing as it began (the latency log's last column).
func TestStagesBeside(t *testing.T) {
	plain := request{recv: 5, submit: 9, locked: 10, issue0: 12, issue1: 18, fenced: 18.75, served: 19.5, syncCall: 2, gs: 15, ge: 35, syncRecv: 20, syncIssued: 20.5, synced: 37, back: 41}
	var reqs []request
	for i := range 100 {
		r := plain
		r.at = time.Duration(i) * 10 * time.Millisecond
		if i%4 == 0 {
			r.beside, r.issue1 = 2, 30 // a launch call of 18 µs beside two others
		}
		if i >= 40 && i < 52 {
			r.back = 141 // an episode: twelve slow requests in a row
		}
		reqs = append(reqs, r)
	}
	dir := writeRun(t, reqs)
	var out strings.Builder
	if err := stages(dir, "interleaved", 0, 0, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"all, with no other goroutine issuing / with some (75 / 25 requests), p50 p90 (us): I0->I1 6.0 6.0 / 18.0 18.0",
		"all in episodes, with no other goroutine issuing / with some (9 / 3 requests)", // 40, 44, 48 beside
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	// A log without the column says nothing of it.
	for i := range reqs {
		reqs[i].beside = -1
	}
	out.Reset()
	if err := stages(writeRun(t, reqs), "interleaved", 0, 0, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "other goroutine issuing") {
		t.Errorf("a log without the column: the report splits by it:\n%s", out.String())
	}
}
