package main

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/testenv"
)

// The tests build libcuda.so.1 and the gpuos binary once, compile the C
// programs of testdata/capi against include/cuda.h with gcc, and run each
// against a gpuos on the software GPU, asserting its exit status and output.
// They need go and gcc; without gcc they skip.

func TestMain(m *testing.M) { testenv.Main(m) }

const repo = "../.."

func goTool(t *testing.T) string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// prebuiltEnv names a folder holding libcuda.so.1 and gpuos built elsewhere,
// for a machine with gcc and a GPU but no Go (bench/gputests.sh).
const prebuiltEnv = "GPUOS_TEST_PREBUILT"

// build makes dir/libcuda.so.1 (with its soname, and the libcuda.so link a
// linker wants) and dir/gpuos, or copies them from $GPUOS_TEST_PREBUILT.
func build(t *testing.T, dir string) {
	t.Helper()
	if pre := os.Getenv(prebuiltEnv); pre != "" {
		for _, name := range []string{"libcuda.so.1", "gpuos"} {
			src := filepath.Join(pre, name)
			// A copy, not a link: testdata/isolation/run.sh finds the
			// daemon's drivers by the path of the binary they run.
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatalf("%s: %v", prebuiltEnv, err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink("libcuda.so.1", filepath.Join(dir, "libcuda.so")); err != nil {
			t.Fatal(err)
		}
		return
	}
	goBin := goTool(t)
	run(t, ".", nil, goBin, "build", "-buildmode=c-shared", "-ldflags=-extldflags=-Wl,-soname,libcuda.so.1",
		"-o", filepath.Join(dir, "libcuda.so.1"), ".")
	if err := os.Symlink("libcuda.so.1", filepath.Join(dir, "libcuda.so")); err != nil {
		t.Fatal(err)
	}
	run(t, ".", nil, goBin, "build", "-o", filepath.Join(dir, "gpuos"), "../gpuos")
}

// compile builds testdata/capi/name.c (or bench/name.c) against the shim.
func compile(t *testing.T, dir, src string) string {
	t.Helper()
	out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".c"))
	run(t, ".", nil, "gcc", "-std=gnu11", "-O1", "-Wall", "-Werror", "-I", filepath.Join(repo, "include"),
		src, "-o", out, "-L", dir, "-lcuda", "-lpthread")
	return out
}

// program is one C test program and lines its output must contain.
type program struct {
	name string
	want []string
}

var programs = []program{
	{"vecadd", []string{"vecadd of 10000 elements with kernelParams", "with extra", "parameter 3 at 24"}},
	{"reduce", []string{"reduce_shared: 128 blocks", "reduce_shfl: sum", "= CUDA_ERROR_INVALID_VALUE"}},
	{"streams", []string{"stream order", "cross-stream wait", "host functions and callbacks in stream order", "legacy default stream"}},
	{"memcpy", []string{"cuMemcpyHtoD, cuMemcpyDtoD, cuMemcpyDtoH", "the Async forms", "cuMemcpy host->device->device->host",
		"pinned host memory both ways", "cuMemcpy2D host->pitched device", "cuMemcpy3D", "cuMemcpyPeer"}},
	{"memset", []string{"cuMemsetD8, cuMemsetD16, cuMemsetD32", "cuMemsetD2D32", "pinned host memory"}},
	{"library", []string{"from cuModuleLoadFatBinary", "from a compressed fat binary", "launched as a CUkernel",
		"a CUkernel as a function", "cuLaunchKernelEx of a CUkernel", "from a 17 MiB fat binary",
		"module globals", "library globals and kernel enumeration"}},
	{"nocontext", []string{"with no context", "as a CUkernel on the default stream", "through cuKernelGetFunction",
		"a library global written by a CUkernel", "launched from a thread with no context", "after the primary context was released"}},
	{"pointers", []string{"device pointer: type, context", "cuMemGetAddressRange of an interior pointer", "unknown address"}},
	{"context", []string{"context stack", "per-thread current context", "context-local storage", "integrity check"}},
	{"ipc", []string{"child read the parent's", "parent reads what the child wrote"}},
	{"errors", []string{
		"cuModuleGetFunction(&f, mod, \"no_such_kernel\") = CUDA_ERROR_NOT_FOUND",
		"cuMemAlloc(&d, (size_t)1 << 50) = CUDA_ERROR_OUT_OF_MEMORY",
		"cuMemFree((CUdeviceptr)local) = CUDA_ERROR_INVALID_VALUE",
		"cuGraphCreate(&g, 0) = CUDA_ERROR_NOT_SUPPORTED",
		"cuMemAllocManaged(&d, 1 << 20, 1) = CUDA_ERROR_NOT_SUPPORTED",
		"cuGetProcAddress returns its own functions",
		"gpa(\"\", &fn, 0, 0, &st) = CUDA_SUCCESS",
	}},
}

func TestCAPI(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found")
	}
	dir := t.TempDir()
	build(t, dir)
	t.Run("Symbols", func(t *testing.T) { testSymbols(t, filepath.Join(dir, "libcuda.so.1")) })

	env := testenv.Start(t, testenv.Options{SimMemory: "1GiB"})
	kernels, err := filepath.Abs(filepath.Join(repo, "testdata", "kernels"))
	if err != nil {
		t.Fatal(err)
	}
	runEnv := []string{"LD_LIBRARY_PATH=" + dir, "GPUOS_SOCKET=" + env.Socket, "GPUOS_SHIM_LOG=", "GPUOS_SHIM_TRACE="}
	// exeOn runs testdata/capi/name.c's program with extra environment.
	exeOn := func(t *testing.T, name string, extra ...string) (*exec.Cmd, string, error) {
		bin := compile(t, dir, filepath.Join(repo, "testdata", "capi", name+".c"))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, kernels)
		cmd.Env = append(append(os.Environ(), runEnv...), extra...)
		out, err := cmd.CombinedOutput()
		return cmd, string(out), err
	}
	// check runs p and checks its output, with extra environment.
	check := func(t *testing.T, p program, extra ...string) {
		t.Helper()
		_, out, err := exeOn(t, p.name, extra...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", p.name, err, out)
		}
		for _, w := range append(p.want, "PASS "+p.name) {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", p.name, w, out)
			}
		}
	}
	for _, p := range programs {
		t.Run(p.name, func(t *testing.T) { check(t, p) })
	}

	// The same programs as a latency-critical tenant's, whose sessions
	// watch their launches on a completion page by default: synchronizes
	// that need no request among copies, stream waits, callbacks and
	// errors that must still be reported.
	t.Run("service", func(t *testing.T) {
		cfg, err := config.Parse([]byte("tenants:\n  - {name: svc, uids: [self], memory: 1GiB, priority: high}\n"))
		if err != nil {
			t.Fatal(err)
		}
		svc := testenv.Start(t, testenv.Options{SimMemory: "1GiB", Config: cfg})
		for _, p := range programs {
			switch p.name {
			case "vecadd", "reduce", "streams", "memcpy", "errors":
			default:
				continue
			}
			check(t, p, "GPUOS_SOCKET="+svc.Socket) // the later assignment wins
		}
	})

	t.Run("leak", func(t *testing.T) {
		cmd, out, err := exeOn(t, "leak")
		if err != nil || !strings.Contains(out, "PASS leak") {
			t.Fatalf("leak: %v\n%s", err, out)
		}
		pid := int32(cmd.ProcessState.Pid())
		c := env.Dial(t, client.Options{})
		var left []client.SessionStat
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			ss, err := c.Sessions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			left = left[:0]
			for _, s := range ss {
				if s.PID == pid {
					left = append(left, s)
				}
			}
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(left) > 0 {
			t.Errorf("the daemon still holds the exited program's session: %+v", left)
		}
	})

	t.Run("gpuos run", func(t *testing.T) {
		bin := compile(t, dir, filepath.Join(repo, "testdata", "capi", "vecadd.c"))
		cmd := exec.Command(filepath.Join(dir, "gpuos"), "run", "--socket", env.Socket, "--", bin, kernels)
		cmd.Env = append(os.Environ(), "GPUOS_SHIM_LOG=")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "PASS vecadd") {
			t.Fatalf("gpuos run -- vecadd: %v\n%s", err, out)
		}
		cmd = exec.Command(filepath.Join(dir, "gpuos"), "run", "--socket", env.Socket, "--", "sh", "-c", "exit 3")
		if err := cmd.Run(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
			t.Errorf("gpuos run -- exit 3: %v, want exit status 3", err)
		}
	})

	t.Run("launch bench", func(t *testing.T) {
		bin := compile(t, dir, filepath.Join(repo, "bench", "launch_bench.c"))
		cmd := exec.Command(bin, "200", filepath.Join(kernels, "bench.ptx"))
		cmd.Env = append(os.Environ(), runEnv...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "us/launch") {
			t.Fatalf("launch_bench: %v\n%s", err, out)
		}
	})

	t.Run("entry bench", func(t *testing.T) {
		bin := compile(t, dir, filepath.Join(repo, "testdata", "cudart", "entry_bench.c"))
		cmd := exec.Command(bin, "200", filepath.Join(kernels, "bench.ptx"))
		cmd.Env = append(os.Environ(), runEnv...)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Count(string(out), "ns/call") != 7 {
			t.Fatalf("entry_bench: %v\n%s", err, out)
		}
	})

	// The probe of the 21318c60 table's stream slots (testdata/cudart/slot51.c,
	// written for the real driver) against the shim: slot 39's id of slot 51's
	// object is cuStreamGetId's, for the default streams and a created one.
	t.Run("slot51", func(t *testing.T) {
		bin := filepath.Join(dir, "slot51")
		run(t, ".", nil, "gcc", "-std=gnu11", "-O1", "-Wall", "-Werror", "-I", filepath.Join(repo, "include"),
			filepath.Join(repo, "testdata", "cudart", "slot51.c"), "-o", bin, "-ldl")
		cmd := exec.Command(bin, filepath.Join(dir, "libcuda.so.1"))
		// Its probes in this process: a forked child of the shim's may hang
		// (one CI run waited ten minutes on one).
		cmd.Env = append(os.Environ(), append(runEnv, "SLOT51_IN_PROCESS=1")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("slot51: %v\n%s", err, out)
		}
		t.Logf("slot51 on the shim:\n%s", out)
		for _, want := range []string{
			"slot51(ctx, NULL, perThread 0) = CUDA_SUCCESS, out CU_STREAM_LEGACY",
			"slot51(ctx, NULL, perThread 1) = CUDA_SUCCESS, out CU_STREAM_PER_THREAD",
			"slot51(ctx, a created stream, 0) = CUDA_SUCCESS, out the stream itself",
			"slot51(other ctx, the primary context's stream, 0) = CUDA_ERROR_INVALID_CONTEXT",
			"slot51(ctx, NULL, out=NULL, 0) = CUDA_ERROR_INVALID_VALUE",
			"slot51(ctx, stream 0x1000, &out, 0) = CUDA_ERROR_INVALID_HANDLE",
			"done",
		} {
			if !strings.Contains(string(out), want) {
				t.Errorf("slot51: output lacks %q:\n%s", want, out)
			}
		}
		if n := strings.Count(string(out), ": SAME"); n != 10 || strings.Contains(string(out), "DIFFERENT") {
			t.Errorf("slot51: %d ids the same as cuStreamGetId's, want 10, none different:\n%s", n, out)
		}
	})

	// GPUOS_SHIM_TRACE=2 logs every call with its arguments and result, and
	// the program runs as it does untraced.
	t.Run("call trace", func(t *testing.T) {
		if runtime.GOARCH != "amd64" {
			t.Skip("the call trace's trampolines are x86-64 only")
		}
		bin := compile(t, dir, filepath.Join(repo, "testdata", "capi", "vecadd.c"))
		logFile := filepath.Join(t.TempDir(), "trace.log")
		cmd := exec.Command(bin, kernels)
		cmd.Env = append(os.Environ(), append(runEnv, "GPUOS_SHIM_TRACE=2", "GPUOS_SHIM_LOG="+logFile)...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "PASS vecadd") {
			t.Fatalf("vecadd traced: %v\n%s", err, out)
		}
		log, err := os.ReadFile(logFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			" cuInit(Flags=0) = CUDA_SUCCESS",
			" cuDeviceGet(device=&0, ordinal=0) = CUDA_SUCCESS",
			` cuModuleGetFunction(hfunc=&0x`,
			`, name="vecadd") = CUDA_SUCCESS`,
			// Eleven arguments: the last five come from the stack.
			" cuLaunchKernel(f=0x",
			", gridDimX=40, gridDimY=1, gridDimZ=1, blockDimX=256, blockDimY=1, blockDimZ=1, sharedMemBytes=0, hStream=0x0, kernelParams=0x",
			", extra=0x0) = CUDA_SUCCESS",
			" cuMemFree_v2(dptr=0x",
		} {
			if !strings.Contains(string(log), want) {
				t.Errorf("the call trace lacks %q:\n%s", want, log)
			}
		}
	})

	// Last: a fault takes the device's driver process down.
	t.Run("fault", func(t *testing.T) {
		_, out, err := exeOn(t, "fault")
		if err != nil || !strings.Contains(out, "surfaced at cuCtxSynchronize as CUDA_ERROR_") || !strings.Contains(out, "PASS fault") {
			t.Fatalf("fault: %v\n%s", err, out)
		}
	})
}

// testSymbols checks that the library exports exactly the real driver's
// functions, and gpuos_shim_version.
func testSymbols(t *testing.T, lib string) {
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			have[s.Name] = true
		}
	}
	var missing []string
	for _, s := range cu.Symbols() {
		if !have[s.Name] {
			missing = append(missing, s.Name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d driver functions not exported: %v", len(missing), missing)
	}
	var extra []string
	want := map[string]bool{}
	for _, s := range cu.Symbols() {
		want[s.Name] = true
	}
	for n := range have {
		if strings.HasPrefix(n, "cu") && !want[n] {
			extra = append(extra, n)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("exported functions the real driver lacks: %v", extra)
	}
	if !have["gpuos_shim_version"] {
		t.Error("gpuos_shim_version is not exported")
	}
}

func TestGeneratedFresh(t *testing.T) {
	goBin := goTool(t)
	if _, err := os.Stat(goBin); err != nil {
		t.Skipf("needs the go tool (a test binary run where Go is not): %v", err)
	}
	out, err := exec.Command(goBin, "run", "./internal/gen", "-check").CombinedOutput()
	if err != nil {
		t.Fatalf("zlibcuda.c is stale (run go generate ./cmd/libcuda): %v\n%s", err, out)
	}
}

// TestStubsAreTheRest checks the split between implemented entry points and
// stubs: every driver function is one or the other, and the implemented ones
// include the core of issue 4.
func TestStubsAreTheRest(t *testing.T) {
	src, err := os.ReadFile("zlibcuda.c")
	if err != nil {
		t.Fatal(err)
	}
	stubs := map[string]bool{}
	for _, line := range bytes.Split(src, []byte("\n")) {
		var name string
		if n, _ := fmt.Sscanf(string(line), "static int stub_%s", &name); n == 1 && bytes.Contains(line, []byte("return stub(")) {
			stubs[strings.TrimSuffix(name, "(void)")] = true
		}
	}
	if len(stubs) == 0 {
		t.Fatal("no stubs found in zlibcuda.c")
	}
	for _, must := range []string{"cuInit", "cuMemAlloc_v2", "cuLaunchKernel", "cuGetProcAddress_v2", "cuGetExportTable",
		"cuModuleLoadData", "cuLibraryLoadData", "cuStreamAddCallback", "cuEventElapsedTime", "cuMemcpy2D_v2"} {
		if stubs[must] {
			t.Errorf("%s is a stub", must)
		}
	}
	for _, stub := range []string{"cuGraphCreate", "cuArrayCreate_v2", "cuMemAllocAsync", "cuIpcGetEventHandle"} {
		if !stubs[stub] {
			t.Errorf("%s is not a stub", stub)
		}
	}
}
