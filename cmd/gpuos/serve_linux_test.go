package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/driver"
)

// TestServeKeepsOffHighClassCPUs: with $GPUOS_HIGH_CPUS, no thread of the
// daemon (gpuos serve and the driver process it starts) may run on those
// CPUs until a high-class session asks for them; a list it cannot use stops
// serve at its start.
func TestServeKeepsOffHighClassCPUs(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for c := 0; c < 1024; c++ {
		if set.IsSet(c) {
			cpu = c
		}
	}
	if set.Count() < 2 {
		t.Skip("one CPU allowed")
	}

	dir := t.TempDir()
	sock := filepath.Join(dir, "g.sock")
	cmd := exec.Command(os.Args[0], "serve", "--backend", "sim", "--socket", sock, "--sim-memory", "256MiB")
	cmd.Env = append(os.Environ(), "GPUOS_TEST_AS_GPUOS=1", driver.HighClassCPUsEnv+"="+strconv.Itoa(cpu))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("serve: %v\n%s", err, out.String())
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := dialDaemon(t, ctx, sock, &out)
	defer c.Close()
	s, err := c.OpenSession(ctx, client.SessionOptions{Label: "keep-off"}) // starts a driver process
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	pids := append([]int{cmd.Process.Pid}, childrenOf(t, cmd.Process.Pid)...)
	if len(pids) < 2 {
		t.Fatalf("no driver process under serve (pid %d)", cmd.Process.Pid)
	}
	for _, pid := range pids {
		tids, on := threadsOn(t, pid, cpu)
		if tids == 0 || len(on) != 0 {
			t.Errorf("process %d: %d threads, %v may run on CPU %d", pid, tids, on, cpu)
		}
	}

	t.Setenv(driver.HighClassCPUsEnv, "2-1")
	if code, msg := runCmd(t, "serve", "--backend", "sim", "--socket", filepath.Join(dir, "bad.sock")); code != 1 || !strings.Contains(msg, "gpuos serve: "+driver.HighClassCPUsEnv+`: CPU list "2-1"`) {
		t.Errorf("serve with a malformed list: exit %d, %q", code, msg)
	}
}

// childrenOf lists the processes pid started, as /proc/PID/task/*/children
// tell.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	files, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	if err != nil || len(files) == 0 {
		t.Skipf("/proc/%d/task/*/children: %v", pid, err)
	}
	var kids []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(w); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids
}

// threadsOn counts pid's threads and lists those that may run on cpu.
func threadsOn(t *testing.T, pid, cpu int) (n int, on []int) {
	t.Helper()
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tasks {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) != nil {
			continue // ended meanwhile
		}
		n++
		if set.IsSet(cpu) {
			on = append(on, tid)
		}
	}
	return n, on
}
