package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeResults writes one JSON line per result into dir, as run.sh does.
func writeResults(t *testing.T, dir string, results map[string]Result) {
	t.Helper()
	for name, r := range results {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReport(t *testing.T) {
	shares := func(a, b, daemonA float64) Result {
		return Result{Mode: "shares", Stack: "gpuos", Tenants: []ShareResult{
			{Tenant: "a", Weight: 1, Kernels: 100, KernelUs: 200, Share: a, Target: 0.25, Daemon: daemonA},
			{Tenant: "b", Weight: 3, Kernels: 30, KernelUs: 2000, Share: b, Target: 0.75, Daemon: 1 - daemonA},
		}}
	}
	hp := func(p99 float64) Result {
		return Result{Mode: "hp", Samples: 10000, P50us: 40, P90us: 50, P99us: p99, MaxUs: 2 * p99}
	}
	be := func(rate float64) Result {
		return Result{Mode: "be", Kernels: 1000, KernelsPerSec: rate, KernelUs: 1000, DispatchesPerKernel: 1}
	}
	interleaved := func(alone, loaded float64) Result {
		r, a := hp(loaded), hp(alone)
		r.Samples, a.Samples = 5000, 5000
		r.PhaseMs, r.Alone = 500, &a
		return r
	}
	beSliced := func(rate float64) Result {
		r := be(rate)
		r.DispatchesPerKernel = 21
		return r
	}
	for _, tt := range []struct {
		name     string
		results  map[string]Result
		wantErr  bool
		contains []string
	}{
		{
			name: "all pass",
			results: map[string]Result{
				"gpuos-shares-fair": shares(0.26, 0.74, 0.25), "gpuos-shares-band": shares(0.24, 0.76, 0.25),
				"gpuos-hp-alone": hp(100), "gpuos-hp-mixed": hp(115),
				"gpuos-be-alone-1": be(400), "gpuos-be-alone-2": be(400), "gpuos-be-mixed-1": beSliced(300), "gpuos-be-mixed-2": beSliced(300),
				"native-hp-alone": hp(60), "native-hp-mixed": hp(4000),
				"gpuos-hp-alone-spin": hp(70),
			},
			contains: []string{"/ alone = 1.15 (target <= 1.2)  PASS", "/ alone = 0.75 (target >= 0.70)  PASS",
				"alone, rings polling", "dispatches per kernel alone 1.0, with the service 21.0 (its kernels sliced", "all checks passed"},
		},
		{
			name: "shares, latency and throughput off",
			results: map[string]Result{
				"gpuos-shares-fair": shares(0.05, 0.95, 0.25), "gpuos-shares-band": shares(0.29, 0.71, 0.25),
				"gpuos-hp-alone": hp(100), "gpuos-hp-mixed": hp(130),
				"gpuos-be-alone-1": be(400), "gpuos-be-alone-2": be(400), "gpuos-be-mixed-1": be(200), "gpuos-be-mixed-2": be(200),
			},
			wantErr: true,
			contains: []string{"fair       a       1        200      100   5.00%  25.00%  20.00%         25.00%             FAIL",
				"/ alone = 1.30 (target <= 1.2)  FAIL", "/ alone = 0.50 (target >= 0.70)  FAIL", "6 check(s) failed",
				"with the service 1.0 (its kernels issued whole: the service has SMs of its own)"},
		},
		{
			// SMs reserved for the service: the throughput verdict takes the
			// best-effort tenants alone on the whole GPU as its baseline.
			name: "reserve: whole-GPU baseline decides",
			results: map[string]Result{
				"gpuos-shares-fair": shares(0.25, 0.75, 0.25), "gpuos-shares-band": shares(0.25, 0.75, 0.25),
				"gpuos-hp-alone": hp(100), "gpuos-hp-mixed": hp(100),
				"gpuos-be-alone-1": be(300), "gpuos-be-alone-2": be(300), "gpuos-be-mixed-1": be(250), "gpuos-be-mixed-2": be(250),
				"gpuos-be-whole-1": be(400), "gpuos-be-whole-2": be(400),
			},
			wantErr: true,
			contains: []string{"alone with the same SMs reserved = 0.83", "alone on the whole GPU = 0.75 (600.0 vs 800.0 kernels/s)",
				"/ alone on the whole GPU = 0.62 (target >= 0.70)  FAIL", "1 check(s) failed"},
		},
		{
			// The interleaved scenario decides the P99 verdict; the separate
			// windows' ratio (a host hiccup in the loaded one) is shown beside.
			name: "interleaved decides",
			results: map[string]Result{
				"gpuos-shares-fair": shares(0.25, 0.75, 0.25), "gpuos-shares-band": shares(0.25, 0.75, 0.25),
				"gpuos-hp-alone": hp(100), "gpuos-hp-mixed": hp(900),
				"gpuos-be-alone-1": be(400), "gpuos-be-alone-2": be(400), "gpuos-be-mixed-1": be(380), "gpuos-be-mixed-2": be(380),
				"gpuos-hp-interleaved": interleaved(110, 120), "gpuos-be-interleaved-1": be(370), "gpuos-be-interleaved-2": be(370),
				"native-hp-interleaved": interleaved(60, 4700),
			},
			contains: []string{"gpuos  interleaved, alone phases   5000  40.0  50.0  110.0  220.0  -",
				"gpuos  interleaved, loaded phases  5000  40.0  50.0  120.0  240.0  740.0",
				"in the loaded phases / in the alone phases = 1.09 (interleaved, 500 ms phases; target <= 1.2)  PASS",
				"separate windows = 9.00", "native baseline, interleaved: high-priority P99 in the loaded phases / in the alone phases = 78.33",
				"all checks passed"},
		},
		{
			name: "interleaved fails",
			results: map[string]Result{
				"gpuos-shares-fair": shares(0.25, 0.75, 0.25), "gpuos-shares-band": shares(0.25, 0.75, 0.25),
				"gpuos-hp-alone": hp(100), "gpuos-hp-mixed": hp(100),
				"gpuos-be-alone-1": be(400), "gpuos-be-alone-2": be(400), "gpuos-be-mixed-1": be(380), "gpuos-be-mixed-2": be(380),
				"gpuos-hp-interleaved": interleaved(100, 130),
			},
			wantErr:  true,
			contains: []string{"in the alone phases = 1.30 (interleaved, 500 ms phases; target <= 1.2)  FAIL", "separate windows = 1.00", "1 check(s) failed"},
		},
		{
			// With the latencies by phase, the bootstrap interval of the
			// ratio is printed under it (loaded twice alone in every phase),
			// and the control (alone phases alike: 1).
			name: "interleaved with phases",
			results: map[string]Result{
				"gpuos-shares-fair": shares(0.25, 0.75, 0.25), "gpuos-shares-band": shares(0.25, 0.75, 0.25),
				"gpuos-be-alone-1": be(400), "gpuos-be-alone-2": be(400),
				"gpuos-hp-interleaved": func() Result {
					r := interleaved(50, 100)
					for range 4 { // as many as a run has: a JSON line of megabytes
						r.PhasesUs = append(r.PhasesUs, slices.Repeat([]float64{50.125}, 20000), slices.Repeat([]float64{100.25}, 20000))
					}
					return r
				}(), "gpuos-be-interleaved-1": be(370), "gpuos-be-interleaved-2": be(370),
			},
			wantErr: true,
			contains: []string{"in the alone phases = 2.00 (interleaved, 500 ms phases; target <= 1.2)  FAIL",
				"the same ratio with the run's 4 pairs of phases resampled (bootstrap, 2000 draws): 95% of draws within 2.00-2.00",
				"gpuos: control, no load on either side: the alone phases of every second pair / of the pairs between = 1.00 (2 pairs; 95% of draws within 1.00-1.00)"},
		},
		{
			name:     "nothing ran",
			results:  map[string]Result{},
			wantErr:  true,
			contains: []string{"(not run)", "missing results  FAIL", "4 check(s) failed"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeResults(t, dir, tt.results)
			var out strings.Builder
			err := report(dir, &out)
			if (err != nil) != tt.wantErr {
				t.Errorf("report: error %v, want error: %v\n%s", err, tt.wantErr, out.String())
			}
			// Table cells are compared with their padding collapsed.
			squeeze := func(s string) string { return strings.Join(strings.Fields(s), " ") }
			for _, s := range tt.contains {
				if !strings.Contains(squeeze(out.String()), squeeze(s)) {
					t.Errorf("report lacks %q:\n%s", s, out.String())
				}
			}
		})
	}
}

// TestReportHiccups: the report says how much of its CPUs the host took away
// before and after the runs (bench/hiccup's summary line), and skips a file
// without one.
func TestReportHiccups(t *testing.T) {
	dir := t.TempDir()
	before := "cpu  gaps>20us >100us >1ms  max_us  lost_ms  steal_ms(/proc/stat)\n  0  10  2  1  1463  21.08  0\n" +
		"summary cpus=16 seconds=4 gaps_over_1ms=48 lost_ms=508.4 max_us=3752\n"
	if err := os.WriteFile(filepath.Join(dir, "hiccup-before.txt"), []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hiccup-after.txt"), []byte("summary cpus=0 nonsense\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	report(dir, &out) // nothing else ran: it fails, and still says what it has
	want := "host (hiccup-before): 48 gaps over 1 ms in 4 s on 16 CPUs, 508.4 ms lost (0.79% of their time), the longest 3752 us"
	if !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
	if strings.Contains(out.String(), "hiccup-after") {
		t.Errorf("report used a summary line it could not read:\n%s", out.String())
	}
}

// TestReportHost: the report names the machine start it ran on (run.sh's
// host.txt), the processes' placement when the run placed them and the
// daemon's environment when run.sh set one, and says nothing of one whose
// file names no boot.
func TestReportHost(t *testing.T) {
	for _, tt := range []struct {
		name, file, want, wantPlacement, wantEnv string
	}{
		{"whole", "boot=3f2a91c0-77d1-4c2e-9a0b-0c1d2e3f4a5b\ncpu=Intel(R) Xeon(R) Platinum 8480+\nkernel=6.1.0\n",
			"host: boot 3f2a91c0 (Intel(R) Xeon(R) Platinum 8480+, kernel 6.1.0)", "", ""},
		{"placed", "boot=3f2a91c0-77d1-4c2e-9a0b-0c1d2e3f4a5b\ncpu=x\nkernel=6.1.0\nplacement=serving thread on CPUs 15; daemon taskset -c 0-11\n",
			"host: boot 3f2a91c0 (x, kernel 6.1.0)", "placement: serving thread on CPUs 15; daemon taskset -c 0-11", ""},
		{"daemon env", "boot=3f2a91c0-77d1-4c2e-9a0b-0c1d2e3f4a5b\ncpu=x\nkernel=6.1.0\ndaemon_env=X=1 GPUOS_SCHED_LOWPOLL=off\n",
			"host: boot 3f2a91c0 (x, kernel 6.1.0)", "", "daemon environment: X=1 GPUOS_SCHED_LOWPOLL=off"},
		{"no boot", "boot=\ncpu=x\nkernel=6.1.0\nplacement=y\ndaemon_env=Y=2\n", "", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "host.txt"), []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			report(dir, &out)
			got, placement, env := "", "", ""
			for _, line := range strings.Split(out.String(), "\n") {
				if strings.HasPrefix(line, "host: ") {
					got = line
				}
				if strings.HasPrefix(line, "placement: ") {
					placement = line
				}
				if strings.HasPrefix(line, "daemon environment: ") {
					env = line
				}
			}
			if got != tt.want {
				t.Errorf("host line: have %q, want %q", got, tt.want)
			}
			if placement != tt.wantPlacement {
				t.Errorf("placement line: have %q, want %q", placement, tt.wantPlacement)
			}
			if env != tt.wantEnv {
				t.Errorf("daemon environment line: have %q, want %q", env, tt.wantEnv)
			}
		})
	}
}

// The report counts each stack's slow episodes in the interleaved scenario's
// alone and loaded phases, compares the median request inside the alone
// phases' episodes with the one outside, and gives the hypervisor's steal
// during each stack's interleaved scenario (run.sh's cpumark lines).
func TestReportEpisodesAndSteal(t *testing.T) {
	phase := func(slowFrom, slowN int) []float64 {
		p := make([]float64, 100)
		for i := range p {
			p[i] = 40
			if i >= slowFrom && i < slowFrom+slowN {
				p[i] = 200
			}
		}
		return p
	}
	loaded := phase(10, 9)
	copy(loaded[60:], phase(0, 12)[:12]) // a second episode
	gpuos := Result{Mode: "hp", Stack: "gpuos", Samples: 200, P99us: 200, PhaseMs: 500, Alone: &Result{Samples: 200, P99us: 200},
		PhasesUs: [][]float64{phase(50, 10), loaded, phase(0, 7), phase(0, 0)}} // 7 in a row: too few
	native := Result{Mode: "hp", Stack: "native", Samples: 200, P99us: 45, PhaseMs: 500, Alone: &Result{Samples: 200, P99us: 45},
		PhasesUs: [][]float64{phase(0, 0), phase(0, 0), phase(0, 0), phase(0, 0)}}
	dir := t.TempDir()
	writeResults(t, dir, map[string]Result{"gpuos-hp-interleaved": gpuos, "native-hp-interleaved": native})
	marks := "native-interleaved-start cpu  100 0 50 10000 0 0 0 10 0 0\n" +
		"native-interleaved-end cpu  200 0 100 19800 0 0 0 20 0 0\n" +
		"gpuos-interleaved-start cpu  1000 0 500 20000 0 0 10 100 0 0\n" +
		"gpuos-interleaved-end cpu  2000 0 1000 28100 0 0 10 500 0 0\n" +
		"gpuos-other-start cpu 1 2\n" // a short line: left out
	if err := os.WriteFile(filepath.Join(dir, "cpustat.txt"), []byte(marks), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	report(dir, &out)
	for _, want := range []string{
		"gpuos, interleaved: slow episodes (8+ requests in a row over 2x the median) in the alone phases 1 (5.0% of their requests), in the loaded phases 2 (10.5%)",
		"native, interleaved: slow episodes (8+ requests in a row over 2x the median) in the alone phases 0 (0.0% of their requests), in the loaded phases 0 (0.0%)",
		// the alone phases' episode is 10 requests of 200 us; the 190 others (7 of them 200 us) take 40
		"gpuos, interleaved: in the alone phases' episodes the median request took 200.0 us, outside them 40.0 us (5.0x)",
		"host steal during gpuos's interleaved scenario: 4.00% of the CPUs' time (busy 15.0%)",
		"host steal during native's interleaved scenario: 0.10% of the CPUs' time (busy 1.5%)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "native, interleaved: in the alone phases' episodes") {
		t.Errorf("report compares native's requests in and out of episodes it did not have:\n%s", out.String())
	}
}

// Where the host has slow episodes, the report also gives the P99 ratio of
// the requests outside them, and the median request inside them by kind of
// phase: the pooled ratio can fail on how the episodes fell between the
// phases while the load cost the rest little.
func TestReportOutsideEpisodes(t *testing.T) {
	phase := func(us float64, slowN int, slowUs float64) []float64 {
		p := make([]float64, 100)
		for i := range p {
			p[i] = us
			if i >= 20 && i < 20+slowN {
				p[i] = slowUs
			}
		}
		return p
	}
	// alone: 192 requests of 40 us and an episode of 8 at 300; loaded: 190
	// of 44 and an episode of 10 at 400. Pooled P99 300 / 400.
	gpuos := Result{Mode: "hp", Stack: "gpuos", Samples: 400, P99us: 400, PhaseMs: 500, Alone: &Result{Samples: 200, P99us: 300},
		PhasesUs: [][]float64{phase(40, 8, 300), phase(44, 10, 400), phase(40, 0, 0), phase(44, 0, 0)}}
	// Natively the load makes every loaded request slow (20 a phase at 4.7
	// ms): runs over twice the median, but the load's, not the host's.
	slow := func() []float64 { return phase(4700, 0, 0)[:20] }
	native := Result{Mode: "hp", Stack: "native", Samples: 240, P99us: 4700, PhaseMs: 500, Alone: &Result{Samples: 200, P99us: 40},
		PhasesUs: [][]float64{phase(40, 0, 0), slow(), phase(40, 0, 0), append(slow(), 40)}}
	dir := t.TempDir()
	writeResults(t, dir, map[string]Result{"gpuos-hp-interleaved": gpuos, "native-hp-interleaved": native})
	var out strings.Builder
	report(dir, &out)
	want := "gpuos, interleaved: outside the episodes, P99 in the loaded phases / in the alone phases = 1.10 (44.0 / 40.0 us); in them, the median request 400.0 / 300.0 us"
	if !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
	if strings.Contains(out.String(), "native, interleaved: outside the episodes") {
		t.Errorf("report splits native's requests by episodes that are the load:\n%s", out.String())
	}
}
