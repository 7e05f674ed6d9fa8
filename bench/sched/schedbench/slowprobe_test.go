package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tool returns the path of a program the test needs, or skips the test.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("no %s", name)
	}
	return p
}

// TestSlowprobeJoin runs bench/hiccup/slowprobe_join.py over a hand-made
// probe and trace: 2,000 milliseconds in phases of 500, the probe's work 10x
// slower in 20 of them (5 in an alone phase, 15 in a loaded one), the
// service's request slow in exactly those. The report must find the slow
// requests' milliseconds 10x slower for the core's work, not for memory,
// and count the slow milliseconds by phase.
func TestSlowprobeJoin(t *testing.T) {
	python := tool(t, "python3")
	dir := t.TempDir()
	const t0 = 1_795_000_000_000 // ms
	slowAt := map[int]bool{}
	for i := range 5 {
		slowAt[100+i] = true // alone: the first phase
	}
	for i := range 15 {
		slowAt[600+i] = true // loaded: the second
	}
	var probe, trace strings.Builder
	probe.WriteString("ms,alu_min,alu_med,l2_min,l2_med,mem_min,mem_med,sys_min,sys_med\n")
	trace.WriteString("launch_ns,synced_ns,gpu_start_ns,gpu_end_ns,sync_called_ns\n")
	for i := range 2000 {
		core, mem, took := 6000, 6000, 45_000
		if slowAt[i] {
			core, took = 60000, 150_000
		}
		fmt.Fprintf(&probe, "%d,%d,%d,%d,%d,%d,%d,%d,%d\n", t0+i, core, core, core, core, mem, mem, core/5, core/5)
		launch := int64(t0+i)*1_000_000 + 100
		fmt.Fprintf(&trace, "%d,%d,0,0,0\n", launch, launch+int64(took))
	}
	probe.WriteString("1795000002000,6000,60") // a last row cut off mid-write
	pp, tp := filepath.Join(dir, "probe.csv"), filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(pp, []byte(probe.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tp, []byte(trace.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, filepath.Join("..", "..", "hiccup", "slowprobe_join.py"), pp, tp, "500").CombinedOutput()
	if err != nil {
		t.Fatalf("slowprobe_join.py: %v\n%s", err, out)
	}
	for _, want := range []string{
		"2000 requests in the probe's window, median 45.0 us; slow (over 90.0 us): 20",
		"slow over other, the probe's fastest per ms: alu 10.00x  l2 10.00x  mem 1.00x  sys 10.00x",
		"milliseconds with alu over 1.5x its usual 6.00 us: 20 of 2000; requests in them 20, median 150.0 us, slow 20",
		"by phase: alone 5 of 1000 (0.50%)  loaded 15 of 1000 (1.50%)",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestSlowprobeRuns builds bench/hiccup/slowprobe.c and runs it briefly: a
// header and a row per millisecond, each of its four kinds timed.
func TestSlowprobeRuns(t *testing.T) {
	gcc := tool(t, "gcc")
	bin := filepath.Join(t.TempDir(), "slowprobe")
	if out, err := exec.Command(gcc, "-O2", "-o", bin, filepath.Join("..", "..", "hiccup", "slowprobe.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "0.05", "0").Output()
	if err != nil {
		t.Fatalf("slowprobe: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[0] != "ms,alu_min,alu_med,l2_min,l2_med,mem_min,mem_med,sys_min,sys_med" {
		t.Fatalf("header %q", lines[0])
	}
	if len(lines) < 10 {
		t.Fatalf("%d rows in 50 ms, want one a millisecond", len(lines)-1)
	}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) != 9 {
			t.Fatalf("row %q: %d fields, want 9", l, len(f))
		}
		for _, v := range f[1:] {
			if v == "0" || strings.HasPrefix(v, "-") {
				t.Fatalf("row %q: a time of %s", l, v)
			}
		}
	}
}
