package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunShDaemonOutlivesWatchdogs runs bench/sched/unserve-check.sh on
// run.sh: a scenario whose processes have all ended by the time run.sh's
// watch is called makes it kill its watchdog subshell right after forking
// it, and that subshell still runs run.sh's EXIT trap; run.sh's daemon must
// survive a hundred such scenarios (before unserve checked its shell, it was
// stopped within a few, and mid-verdict twice on the H100).
func TestRunShDaemonOutlivesWatchdogs(t *testing.T) {
	bash := tool(t, "bash")
	out, err := exec.Command(bash, "../unserve-check.sh", "../run.sh", "100").CombinedOutput()
	if err != nil {
		t.Fatalf("unserve-check.sh: %v\n%s", err, out)
	}
}

// outputAndExit runs cmd and returns its output and exit status; a command
// that could not run fails the test.
func outputAndExit(t *testing.T, cmd *exec.Cmd) (out []byte, exit int) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return out, ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out, 0
}

// TestRunShPlace runs run.sh's place (PLACE=1) as if the machine had the
// given CPUs: the serving thread on the last, the service on the three
// before it, the daemon and the best effort on the rest; a wrapper already
// set stays; fewer than 8 CPUs stop the run.
func TestRunShPlace(t *testing.T) {
	bash := tool(t, "bash")
	for _, tt := range []struct {
		name, cpus, preset, want string
		wantExit                 int
	}{
		{"16 CPUs", "16", "", "X=1 GPUOS_HIGH_CPUS=15|taskset -c 0-11|taskset -c 0-11|taskset -c 12-14", 0},
		{"8 CPUs", "8", "", "X=1 GPUOS_HIGH_CPUS=7|taskset -c 0-3|taskset -c 0-3|taskset -c 4-6", 0},
		{"service set", "16", "HP_WRAP='taskset -c 9'", "X=1 GPUOS_HIGH_CPUS=15|taskset -c 0-11|taskset -c 0-11|taskset -c 9", 0},
		{"4 CPUs", "4", "", "", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			script := `set -eu
eval "$(sed -n '/^place() {$/,/^}$/p' ../run.sh)"
declare -F place > /dev/null || { echo "no place in run.sh"; exit 9; }
nproc() { echo ` + tt.cpus + `; }
SERVE_ENV=X=1 SERVE_WRAP= BE_WRAP= HP_WRAP=
` + tt.preset + `
place
echo "$SERVE_ENV|$SERVE_WRAP|$BE_WRAP|$HP_WRAP"`
			out, exit := outputAndExit(t, exec.Command(bash, "-c", script))
			if exit != tt.wantExit {
				t.Fatalf("exit %d, want %d:\n%s", exit, tt.wantExit, out)
			}
			if got := strings.TrimSpace(string(out)); tt.wantExit == 0 && got != tt.want {
				t.Errorf("have %q, want %q", got, tt.want)
			}
			if tt.wantExit != 0 && !strings.Contains(string(out), "PLACE=1 needs 8 CPUs") {
				t.Errorf("no reason given:\n%s", out)
			}
		})
	}
}

// TestVerdictsShArms runs verdicts.sh with a stand-in for run.sh that
// reports the PLACE and SERVE_ENV it was given: ARMS runs one verdict per
// arm in the order given, P placed and D not, whatever PLACE says, and C as
// D with C_ENV added to the daemon's environment; without ARMS, N verdicts
// as PLACE says; an unknown arm, or C without C_ENV, stops it before any
// verdict runs.
func TestVerdictsShArms(t *testing.T) {
	bash := tool(t, "bash")
	tool(t, "tar")
	fake := filepath.Join(t.TempDir(), "fake-run.sh")
	if err := os.WriteFile(fake, []byte("mkdir -p \"$OUT\"\necho \"PASS placed=$PLACE\" > \"$OUT/report.txt\"\necho \"placement: env $SERVE_ENV\" >> \"$OUT/report.txt\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		env  []string
		want string
		exit int
	}{
		{"arms", []string{"ARMS=P D D P", "PLACE=1"}, "== verdict 1 of 4 (placed): run.sh rc=0|PASS placed=1|placement: env X=1|== verdict 2 of 4 (default): run.sh rc=0|PASS placed=0|placement: env X=1|" +
			"== verdict 3 of 4 (default): run.sh rc=0|PASS placed=0|placement: env X=1|== verdict 4 of 4 (placed): run.sh rc=0|PASS placed=1|placement: env X=1", 0},
		{"N placed", []string{"N=2", "PLACE=1"}, "== verdict 1 of 2: run.sh rc=0|PASS placed=1|placement: env X=1|== verdict 2 of 2: run.sh rc=0|PASS placed=1|placement: env X=1", 0},
		{"N", []string{"N=1"}, "== verdict 1 of 1: run.sh rc=0|PASS placed=0|placement: env X=1", 0},
		{"C arm", []string{"ARMS=C D", "C_ENV=A=1 B=2", "SERVE_ENV=Z=3"}, "== verdict 1 of 2 (C: A=1 B=2): run.sh rc=0|PASS placed=0|placement: env Z=3 A=1 B=2|" +
			"== verdict 2 of 2 (default): run.sh rc=0|PASS placed=0|placement: env Z=3", 0},
		{"C arm without C_ENV", []string{"ARMS=D C"}, "verdicts.sh: arm C in ARMS=\"D C\" needs C_ENV, the daemon's assignments", 2},
		{"bad arm", []string{"ARMS=P X"}, "verdicts.sh: arm X in ARMS=\"P X\" is none of P (placed), D (default), C (C_ENV)", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bash, "../verdicts.sh")
			for _, kv := range os.Environ() {
				if name, _, _ := strings.Cut(kv, "="); name != "ARMS" && name != "N" && name != "PLACE" && name != "C_ENV" && name != "SERVE_ENV" {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, append(tt.env, "RUNSH="+fake, "OUT="+t.TempDir())...)
			out, exit := outputAndExit(t, cmd)
			if exit != tt.exit {
				t.Fatalf("exit %d, want %d:\n%s", exit, tt.exit, out)
			}
			if got := strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "|"); got != tt.want {
				t.Errorf("have %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestRunShCPUPhases runs run.sh's cpuphases (CPU=1) over hand-made samples
// of an interleaved scenario of 500 ms phases, whose steal (0.2 CPUs) falls
// only in the loaded phases: the report's lines name the stack and the
// phase kind and split the steal so; a stack that was not sampled gives no
// lines.
func TestRunShCPUPhases(t *testing.T) {
	bash := tool(t, "bash")
	tool(t, "python3")
	dir := t.TempDir()
	var samples strings.Builder
	steal := 0
	for i := 0; i <= 20; i++ {
		if i > 0 && int((float64(i)/10-0.05)/0.5)%2 == 1 {
			steal += 2 // 1/100 s in this 0.1 s: 0.2 CPUs
		}
		fmt.Fprintf(&samples, `{"t": %.1f, "cpu": [%d,0,0,0,0,0,0,%d], "irq": {"LOC": 0, "CAL": 0, "RES": 0, "TLB": 0}}`+"\n", 100+float64(i)/10, 10*i, steal)
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu-gpuos.jsonl"), []byte(samples.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu-gpuos.start"), []byte("100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `set -euo pipefail
eval "$(sed -n '/^cpuphases() {$/,/^}$/p' ../run.sh)"
declare -F cpuphases > /dev/null || { echo "no cpuphases in run.sh"; exit 9; }
cd ../../..
OUT=` + dir + ` PHASE=500 ILDUR=2
cpuphases native
cpuphases gpuos`
	out, err := exec.Command(bash, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []*regexp.Regexp{
		regexp.MustCompile(`^gpuos, interleaved, CPUs in the alone phases: +[0-9.]+ s  CPUs busy +1\.00  steal 0\.000 `),
		// busy is all but idle time, the steal with it
		regexp.MustCompile(`^gpuos, interleaved, CPUs in the loaded phases: +[0-9.]+ s  CPUs busy +1\.20  steal 0\.200 `),
	}
	if len(lines) != len(want) {
		t.Fatalf("have %d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d: have %q, want it to match %q", i, lines[i], re)
		}
	}
}

// TestRunShCPUSample runs run.sh's cpusample and cpuunsample (CPU=1) under
// run.sh's shell options: the sampler writes samples while it runs, and
// stopping it, and calling the stop again, does not stop run.sh.
func TestRunShCPUSample(t *testing.T) {
	bash := tool(t, "bash")
	tool(t, "python3")
	dir := t.TempDir()
	script := `set -euo pipefail
eval "$(sed -n '/^cpusample() {$/,/^}$/p; /^cpuunsample() {$/,/^}$/p' ../run.sh)"
declare -F cpusample cpuunsample > /dev/null || { echo "no cpusample or cpuunsample in run.sh"; exit 9; }
cd ../../..
OUT=` + dir + ` CPU=1 WARM=0 ILDUR=1 SAMPLER=
cpusample gpuos
sleep 0.5
cpuunsample
cpuunsample
CPU=0 cpusample native
[[ -z $SAMPLER ]] || { echo "CPU=0 started a sampler"; exit 8; }
echo done`
	out, err := exec.Command(bash, "-c", script).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "done" {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "cpu-gpuos.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"cpu"`); n < 2 {
		t.Errorf("%d samples in 0.5 s, want 2 or more:\n%s", n, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "cpu-native.jsonl")); err == nil {
		t.Error("CPU=0 sampled")
	}
}
