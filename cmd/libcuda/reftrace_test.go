package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The tools of testdata/cudart/gpu-check.sh that compare a program's calls
// to the real driver with its calls through gpuos. reftrace.sh is checked
// against a stand-in driver whose cuGetProcAddress, like driver 580's, hands
// out entry points that are not exported functions (run 4's real-driver
// trace held 5 calls because those went unlogged); firstdiff.py against two
// traces that part where run 4's did.

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
}

func TestRefTrace(t *testing.T) {
	need(t, "bash", "gcc", "nm")
	if runtime.GOARCH != "amd64" {
		t.Skip("reftrace.sh's trampolines are x86-64 only")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake", "libcuda.so.1")
	if err := os.MkdirAll(filepath.Dir(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, ".", nil, "gcc", "-O2", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", fake, "testdata/fakecuda.c")
	ref := filepath.Join(dir, "ref")
	run(t, ".", nil, "bash", filepath.Join(repo, "testdata", "cudart", "reftrace.sh"), ref, fake)
	prog := filepath.Join(dir, "refprog")
	run(t, ".", nil, "gcc", "-O1", "-o", prog, "testdata/refprog.c", filepath.Join(ref, "libcuda.so.1"))
	logFile := filepath.Join(dir, "ref.log")
	out := run(t, ".", []string{"REFTRACE_LOG=" + logFile, "LD_LIBRARY_PATH=" + ref}, prog)
	if strings.TrimSpace(out) != "0 1 0 13000 5 20" {
		t.Errorf("through reftrace the program printed %q, want \"0 1 0 13000 5 20\"", out)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	for _, want := range []string{
		`cuGetProcAddress_v2(`, // the exported function
		` cuGetProcAddress(`,   // the entry point it handed out, under the name asked for
		` cuInit(0, `, `) = CUDA_SUCCESS`,
		` cuInit(0x1, `, `) = CUDA_ERROR_INVALID_VALUE`,
		` cuDriverGetVersion(`,
		`"42d85a8123f6cb478298f6e78a3aecdc" = CUDA_SUCCESS`, // cuGetExportTable
		`table tools_tls 42d85a8123f6cb478298f6e78a3aecdc at`,
		`slot tools_tls[1](0x2, 0x3, `, `) = 0x5`,
		`slot tools_tls[2](0x4, 0x5, `, `) = 0x14`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the real-driver trace lacks %q:\n%s", want, log)
		}
	}
}

func TestFirstDiff(t *testing.T) {
	need(t, "python3")
	dir := t.TempDir()
	real := filepath.Join(dir, "real.log")
	ours := filepath.Join(dir, "gpuos.log")
	write := func(path string, lines ...string) {
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(real,
		`reftrace: pid 966, real /usr/lib/libcuda.so.1, 682 functions`,
		`T966 cuGetProcAddress_v2(0x5599->0x6e75, 0x5599->0, 0, 0, 0, 0) "cuInit" = CUDA_SUCCESS`,
		`T966 cuInit(0, 0, 0, 0, 0, 0) = CUDA_SUCCESS`,
		`T966 cuGetExportTable(0x7ffd->0x7f02, 0x5599->0x4ae7, 0, 0, 0, 0) "6bd5fb6c5bf4e74a8987d93912fd9df9" = CUDA_SUCCESS`,
		`T966 cuCtxGetDevice(0x7ffe, 0, 0, 0, 0, 0) = CUDA_ERROR_INVALID_CONTEXT`,
		`T966 cuLibraryLoadData(0x7ffe->0x5612, 0x5599, 0, 0, 0, 0) = CUDA_SUCCESS`,
		`T966 cuLibraryGetKernel(0x7ffe->0x5613, 0x5612, 0x5599, 0, 0, 0) "_Z6vecaddPKfS0_Pfi" = CUDA_SUCCESS`,
		`T966 cuDevicePrimaryCtxRetain(0x7ffe->0x5614, 0, 0, 0, 0, 0) = CUDA_SUCCESS`,
	)
	write(ours,
		`gpuos-shim: cuGetProcAddress("cuInit", 2000, 0) = cuInit CU_GET_PROC_ADDRESS_SUCCESS`,
		`gpuos-shim: T673 cuInit(Flags=0) = CUDA_SUCCESS`,
		`gpuos-shim: T673 cuGetExportTable(ppExportTable=&0x7fe4, pExportTableId=6bd5fb6c5bf4e74a8987d93912fd9df9) = CUDA_SUCCESS`,
		`gpuos-shim: T673 cuCtxGetDevice_v2(device=0x7fff, ctx=0x0) = CUDA_ERROR_INVALID_CONTEXT`,
		`gpuos-shim: T673 cuLibraryLoadData(library=0x7ffe, code=0x55e9, numLibraryOptions=1) = CUDA_ERROR_INVALID_CONTEXT`,
	)
	cmd := exec.Command("python3", filepath.Join(repo, "testdata", "cudart", "firstdiff.py"), real, ours)
	b, err := cmd.CombinedOutput()
	out := string(b)
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("firstdiff: %v, want exit status 1 (the results differ):\n%s", err, out)
	}
	for _, want := range []string{
		"6 calls on the real driver, 4 through gpuos",
		"first call whose result differs (call 4 through gpuos, 4 on the real driver):",
		"real:  T966 cuLibraryLoadData(",
		"gpuos: T673 cuLibraryLoadData(library=0x7ffe, code=0x55e9, numLibraryOptions=1) = CUDA_ERROR_INVALID_CONTEXT",
		"first result the real driver never gave cuLibraryLoadData: CUDA_ERROR_INVALID_CONTEXT",
		"the real driver answered it: CUDA_SUCCESS",
		"the sequences part at call 5 through gpuos, 5 on the real driver (delete)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("firstdiff's report lacks %q:\n%s", want, out)
		}
	}

	// The same trace twice: no difference, exit status 0.
	cmd = exec.Command("python3", filepath.Join(repo, "testdata", "cudart", "firstdiff.py"), ours, ours)
	b, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "the same 4 calls in the same order") {
		t.Errorf("firstdiff of a trace with itself: %v\n%s", err, b)
	}
}
