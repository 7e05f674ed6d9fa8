package main

import (
	"os/exec"
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
