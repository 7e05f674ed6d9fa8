package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func generateTo(t *testing.T, probe bool) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(&out, probe, "", ""); err != nil {
		t.Fatal(err)
	}
	name := "verify.c"
	if probe {
		name = "probe.c"
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func gcc(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found")
	}
	return path
}

// TestVerifyAgainstOwnHeader builds verify.c against include/cuda.h instead of NVIDIA's
// header: every assertion must hold and main must report no mismatch, in both stream
// modes. (On the GPU machine the same file is built against the toolkit's cuda.h.)
func TestVerifyAgainstOwnHeader(t *testing.T) {
	cc := gcc(t)
	src := generateTo(t, false)
	for _, def := range []string{"-UCUDA_API_PER_THREAD_DEFAULT_STREAM", "-DCUDA_API_PER_THREAD_DEFAULT_STREAM"} {
		bin := filepath.Join(t.TempDir(), "verify")
		out, err := exec.Command(cc, "-std=gnu11", "-Wall", "-Werror", def, "-I", "../../../../../include", "-o", bin, src).CombinedOutput()
		if err != nil {
			t.Fatalf("build verify.c %s: %v\n%s", def, err, out)
		}
		out, err = exec.Command(bin).CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("; 0 mismatches")) {
			t.Fatalf("verify %s: %v\n%s", def, err, out)
		}
	}
}

// TestVerifyCatchesDifference builds verify.c against a copy of the header with one
// value changed, which must not compile.
func TestVerifyCatchesDifference(t *testing.T) {
	cc := gcc(t)
	src := generateTo(t, false)
	data, err := os.ReadFile("../../../../../include/cuda.h")
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(data), "CUDA_ERROR_NOT_FOUND                      = 500,", "CUDA_ERROR_NOT_FOUND                      = 501,", 1)
	if changed == string(data) {
		t.Fatal("CUDA_ERROR_NOT_FOUND not found in include/cuda.h")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cuda.h"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cc, "-std=gnu11", "-fsyntax-only", "-I", dir, src).CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("CUDA_ERROR_NOT_FOUND differs")) {
		t.Fatalf("changed header: err %v\n%s", err, out)
	}
}

// TestProbe builds probe.c and runs it. Without a driver it exits 77; on a machine with
// one it compares the whole table with the driver and must report no mismatch.
func TestProbe(t *testing.T) {
	cc := gcc(t)
	src := generateTo(t, true)
	bin := filepath.Join(t.TempDir(), "probe")
	out, err := exec.Command(cc, "-std=gnu11", "-Wall", "-Werror", "-o", bin, src, "-ldl").CombinedOutput()
	if err != nil {
		t.Fatalf("build probe.c: %v\n%s", err, out)
	}
	out, err = exec.Command(bin).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 77:
		t.Skipf("no driver: %s", bytes.TrimSpace(out))
	case err != nil:
		t.Fatalf("probe: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
