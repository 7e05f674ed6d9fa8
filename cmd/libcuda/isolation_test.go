package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuos/gpuos/internal/testenv"
)

// Two tenants in one shared context, both C programs through the shim (the
// GPU half of issue 5's acceptance; on the software GPU unless
// GPUOS_TEST_BACKEND=cuda): testdata/isolation/run.sh runs a victim that
// keeps computing and checking its data while an attacker launches every
// kernel of testdata/guard/attacks at it, one process each.
func TestIsolationThroughShim(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found")
	}
	dir := t.TempDir()
	build(t, dir)
	cmd := exec.Command("bash", filepath.Join("testdata", "isolation", "run.sh"), dir, filepath.Join(dir, "out"))
	cmd.Dir = repo
	cmd.Env = append(cmd.Environ(), "BACKEND="+testenv.Backend(), "GPUOS_SHIM_LOG=")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS isolation") {
		t.Fatalf("testdata/isolation/run.sh: %v\n%s", err, out)
	}
	for _, want := range []string{"PASS victim", "the secret unchanged", "attacks stopped: "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("%s", out)
}
