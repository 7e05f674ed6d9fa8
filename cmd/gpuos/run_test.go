package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRunEnv(t *testing.T) {
	env := []string{"PATH=/bin", "LD_LIBRARY_PATH=/opt/lib", "GPUOS_SOCKET=/old.sock", "GPUOS_TOKEN=secret", "GPUOS_TENANT=old"}
	got := runEnv(env, "/shim", "/new.sock", "research")
	for _, want := range []string{"PATH=/bin", "LD_LIBRARY_PATH=/shim:/opt/lib", "GPUOS_SOCKET=/new.sock", "GPUOS_TOKEN=secret", "GPUOS_TENANT=research"} {
		if !slices.Contains(got, want) {
			t.Errorf("environment lacks %q: %q", want, got)
		}
	}
	for _, gone := range []string{"GPUOS_SOCKET=/old.sock", "GPUOS_TENANT=old", "LD_LIBRARY_PATH=/opt/lib"} {
		if slices.Contains(got, gone) {
			t.Errorf("environment keeps %q", gone)
		}
	}
	// Without flags the caller's session variables pass through.
	got = runEnv([]string{"GPUOS_SOCKET=/s", "GPUOS_TENANT=t"}, "/shim", "", "")
	if !slices.Contains(got, "GPUOS_SOCKET=/s") || !slices.Contains(got, "GPUOS_TENANT=t") || !slices.Contains(got, "LD_LIBRARY_PATH=/shim") {
		t.Errorf("pass-through environment: %q", got)
	}
}

func TestFindShim(t *testing.T) {
	dir := t.TempDir()
	if _, err := findShim(dir); !errors.Is(err, errNoShim) {
		t.Errorf("empty --shim dir: %v, want errNoShim", err)
	}
	if err := os.WriteFile(filepath.Join(dir, shimName), []byte("ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := findShim(dir); err != nil || got != dir {
		t.Errorf("findShim(%s) = %s, %v", dir, got, err)
	}
}

func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, shimName), []byte("ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runCmd(t, "run", "--shim", dir, "--socket", "/x.sock", "--tenant", "t1", "--", "sh", "-c",
		`echo "$LD_LIBRARY_PATH $GPUOS_SOCKET $GPUOS_TENANT"; exit 3`)
	if code != 3 || !strings.Contains(out, dir+" /x.sock t1") {
		t.Errorf("run: exit %d, output %q; want exit 3 and the environment", code, out)
	}
	if code, out := runCmd(t, "run", "--shim", t.TempDir(), "--", "true"); code != 1 || !strings.Contains(out, "libcuda.so.1 not found") {
		t.Errorf("run without a shim: %d %q", code, out)
	}
	if code, _ := runCmd(t, "run"); code != 2 {
		t.Errorf("run without a command: exit %d, want 2", code)
	}
}
