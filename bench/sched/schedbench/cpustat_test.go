package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCPUStatSegments runs bench/sched/cpustat.py's segments report over
// two hand-made samples a second apart: per CPU, its busy time, steal, time
// in interrupts and device interrupts, and per process the CPUs its threads
// ran on; and over samples in the format before the last two were added,
// which it must still read.
func TestCPUStatSegments(t *testing.T) {
	python := tool(t, "python3")
	// /proc/stat's fields: user nice system idle iowait irq softirq steal, in
	// 1/100 s; per CPU: busy, steal, irq+softirq, device interrupts; per
	// process: ran ns, waited ns, voluntary and involuntary switches, threads,
	// and {tid: [ran ns, CPU]}.
	now := []string{
		`{"t": 100.0, "cpu": [0,0,0,0,0,0,0,0], "cpus": {"0": [10, 1, 5, 1000], "1": [0, 0, 0, 7]}, "irq": {"LOC": 0, "CAL": 0, "RES": 0, "TLB": 0}, "procs": {"gpuos serve [7]": [0, 0, 0, 0, 2, {"11": [0, 1], "12": [5000000, 0]}]}}`,
		`{"t": 101.0, "cpu": [57,0,20,100,0,10,10,3], "cpus": {"0": [60, 3, 25, 1050], "1": [30, 0, 0, 7]}, "irq": {"LOC": 900, "CAL": 40, "RES": 0, "TLB": 0}, "procs": {"gpuos serve [7]": [400000000, 0, 30, 0, 3, {"11": [300000000, 1], "12": [105000000, 0], "13": [999000000, 2]}]}}`,
	}
	before := []string{
		`{"t": 100.0, "cpu": [0,0,0,0,0,0,0,0], "cpus": {"0": [10, 1]}, "irq": {"LOC": 0, "CAL": 0, "RES": 0, "TLB": 0}, "procs": {"gpuos serve [7]": [0, 0, 0, 0, 2]}}`,
		`{"t": 101.0, "cpu": [57,0,20,100,0,10,10,3], "cpus": {"0": [60, 3]}, "irq": {"LOC": 900, "CAL": 40, "RES": 0, "TLB": 0}, "procs": {"gpuos serve [7]": [400000000, 0, 30, 0, 2]}}`,
	}
	for _, tt := range []struct {
		name          string
		samples       []string
		want, notWant []string
	}{
		{
			name:    "now",
			samples: now,
			want: []string{
				"CPUs busy  1.00  steal 0.030  per s: LOC 900 CAL 40",
				"per CPU busy/steal ms/s: 0:500/20.0 1:300/0.0",
				"per CPU in interrupts ms/s, device interrupts/s: 0:200/50 1:0/0",
				// thread 13 was not in the first sample: its time is not placed
				"CPU 0.400  waited for one   0.00 ms/s  slept     30/s  preempted     0/s  on CPUs 1:300 0:100",
			},
		},
		{
			name:    "before",
			samples: before,
			want: []string{
				"per CPU busy/steal ms/s: 0:500/20.0",
				"CPU 0.400  waited for one   0.00 ms/s  slept     30/s  preempted     0/s\n",
			},
			notWant: []string{"in interrupts", "on CPUs"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			samples, marks := filepath.Join(dir, "cpu.jsonl"), filepath.Join(dir, "marks")
			if err := os.WriteFile(samples, []byte(strings.Join(tt.samples, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(marks, []byte("all 100 101\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(python, "../cpustat.py", "segments", samples, marks).CombinedOutput()
			if err != nil {
				t.Fatalf("cpustat.py segments: %v\n%s", err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out)+"\n", w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(string(out), w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}
