package cuda

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Test environment:
//
//   - A real GPU is used when Open succeeds (the default libcuda.so.1, or
//     $GPUOS_LIBCUDA). Without one the GPU tests skip, unless
//     GPUOS_REQUIRE_GPU=1, which makes them fail: set it on the GPU machine
//     so that a broken driver setup cannot pass as "skipped".
//   - The fake driver (testdata/fakecuda/fakecuda.c) is built with gcc into a
//     temporary directory; without gcc the fake tests skip.
//   - Tests that fault a context (it poisons the process on a real GPU) run
//     in a child process: the parent re-executes this test binary with
//     -test.run naming the child test and childEnv set.

const (
	requireGPUEnv = "GPUOS_REQUIRE_GPU"
	childEnv      = "GPUOS_CUDA_TEST_CHILD"
)

func TestMain(m *testing.M) {
	code := m.Run()
	fakeBuild.mu.Lock()
	if fakeBuild.dir != "" {
		os.RemoveAll(fakeBuild.dir)
	}
	fakeBuild.mu.Unlock()
	os.Exit(code)
}

// fakeVariants are the builds of the fake driver, by name: their C defines.
var fakeVariants = map[string][]string{
	"fake":     nil,
	"shim":     {"-DFAKE_SHIM"},
	"noretain": {"-DFAKE_NO_RETAIN"},
	"noglobal": {"-DFAKE_NO_GLOBAL"},
	"nowrite":  {"-DFAKE_NO_WRITE_VALUE"},
}

var fakeBuild struct {
	mu   sync.Mutex
	dir  string
	libs map[string]string
	errs map[string]error
}

// fakeLib returns the path of a build of the fake driver, building it on
// first use; it skips the test where gcc is missing.
func fakeLib(t testing.TB, variant string) string {
	t.Helper()
	if !haveCgo {
		t.Skip("built without cgo: no driver library can be loaded")
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build the fake driver: ", err)
	}
	fakeBuild.mu.Lock()
	defer fakeBuild.mu.Unlock()
	if p, ok := fakeBuild.libs[variant]; ok {
		return p
	}
	if err := fakeBuild.errs[variant]; err != nil {
		t.Fatal(err)
	}
	if fakeBuild.dir == "" {
		dir, err := os.MkdirTemp("", "gpuos-fakecuda-")
		if err != nil {
			t.Fatal(err)
		}
		fakeBuild.dir = dir
		fakeBuild.libs = map[string]string{}
		fakeBuild.errs = map[string]error{}
	}
	out := filepath.Join(fakeBuild.dir, variant, "libcuda.so.1")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-shared", "-fPIC", "-O1", "-pthread", "-Wall", "-Werror"}, fakeVariants[variant]...)
	args = append(args, "-o", out, filepath.Join("testdata", "fakecuda", "fakecuda.c"))
	if msg, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		err = fmt.Errorf("build the fake driver (%s): %v\n%s", variant, err, msg)
		fakeBuild.errs[variant] = err
		t.Fatal(err)
	}
	fakeBuild.libs[variant] = out
	return out
}

// openFake opens a backend on the fake driver.
func openFake(t testing.TB) *Backend {
	t.Helper()
	t.Setenv(LibraryEnv, fakeLib(t, "fake"))
	b, err := Open()
	if err != nil {
		t.Fatalf("Open on the fake driver: %v", err)
	}
	return b
}

// openFakeDevice opens device 0 of the fake driver, closed at cleanup.
func openFakeDevice(t testing.TB) (*Backend, *Device) {
	t.Helper()
	b := openFake(t)
	d, err := b.open(0)
	if err != nil {
		t.Fatalf("open the fake device: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return b, d
}

var realGPU struct {
	once sync.Once
	b    *Backend
	err  error
}

// gpu returns the real driver, or skips the test without one (fails with
// GPUOS_REQUIRE_GPU=1).
func gpu(t testing.TB) *Backend {
	t.Helper()
	realGPU.once.Do(func() {
		if p := os.Getenv(LibraryEnv); p != "" && strings.Contains(p, "gpuos-fakecuda-") {
			realGPU.err = errors.New("GPUOS_LIBCUDA names the fake driver")
			return
		}
		realGPU.b, realGPU.err = Open()
	})
	if realGPU.err != nil {
		if os.Getenv(requireGPUEnv) == "1" {
			t.Fatalf("no usable GPU and %s=1: %v", requireGPUEnv, realGPU.err)
		}
		t.Skipf("no usable GPU (set %s=1 to make this a failure): %v", requireGPUEnv, realGPU.err)
	}
	return realGPU.b
}

// gpuDevice opens device 0 of the real GPU, closed at cleanup.
func gpuDevice(t testing.TB) (*Backend, *Device) {
	t.Helper()
	b := gpu(t)
	d, err := b.open(0)
	if err != nil {
		t.Fatalf("open GPU 0: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return b, d
}

// isChild reports whether this process runs only the named child test.
func isChild(name string) bool { return os.Getenv(childEnv) == name }

// runChild runs test name of this binary in a new process, with env added,
// logs its output and fails t if it did not pass.
func runChild(t *testing.T, name string, env ...string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(append(os.Environ(), childEnv+"="+name), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("child process %s:\n%s", name, out)
	switch {
	case strings.Contains(string(out), "--- SKIP: "+name):
		t.Skipf("child %s skipped", name)
	case err != nil:
		t.Fatalf("child %s: %v", name, err)
	case !strings.Contains(string(out), "--- PASS: "+name):
		t.Fatalf("child %s did not report a pass", name)
	}
}
