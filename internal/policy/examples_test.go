package policy

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// The examples under examples/policies are built with the Go toolchain for
// wasip1, once per test binary, into a temporary directory.
var examples struct {
	once sync.Once
	dir  string
	err  error
	out  map[string]string // name -> build output on failure
}

// exampleNames lists the example policies (every directory of
// examples/policies).
func exampleNames(t testing.TB) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join("..", "..", "examples", "policies"))
	if err != nil {
		t.Fatalf("list examples: %v", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

func goTool() (string, error) {
	if p, err := exec.LookPath(filepath.Join(runtime.GOROOT(), "bin", "go")); err == nil {
		return p, nil
	}
	return exec.LookPath("go")
}

// exampleWasm builds (once) and returns an example policy's module.
func exampleWasm(t testing.TB, name string) []byte {
	t.Helper()
	goBin, err := goTool()
	if err != nil {
		t.Skipf("no go toolchain to build the example policies: %v", err)
	}
	examples.once.Do(func() {
		examples.dir, examples.err = os.MkdirTemp("", "gpuos-policy-examples-")
		if examples.err != nil {
			return
		}
		examples.out = map[string]string{}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, n := range exampleNames(t) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-o", filepath.Join(examples.dir, n+".wasm"), "./examples/policies/"+n)
				cmd.Dir = filepath.Join("..", "..")
				cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
				if out, err := cmd.CombinedOutput(); err != nil {
					mu.Lock()
					examples.out[n] = string(out) + err.Error()
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	})
	if examples.err != nil {
		t.Fatalf("build examples: %v", examples.err)
	}
	if out, ok := examples.out[name]; ok {
		t.Fatalf("GOOS=wasip1 GOARCH=wasm go build ./examples/policies/%s failed:\n%s", name, out)
	}
	b, err := os.ReadFile(filepath.Join(examples.dir, name+".wasm"))
	if err != nil {
		t.Fatalf("read example %s: %v", name, err)
	}
	return b
}

func TestMain(m *testing.M) {
	code := m.Run()
	if examples.dir != "" {
		os.RemoveAll(examples.dir)
	}
	os.Exit(code)
}

// Every example builds for wasip1 with the standard toolchain and loads:
// it passes validation, the import allowlist and the ABI version check, and
// exports the hooks its kind needs.
func TestExamplesBuildAndLoad(t *testing.T) {
	want := map[string][]Hook{
		"fair":   {HookInit, HookSubmit, HookDispatch, HookComplete, HookTick},
		"edf":    {HookInit, HookSubmit, HookDispatch},
		"victim": {HookPressure},
	}
	for _, name := range exampleNames(t) {
		t.Run(name, func(t *testing.T) {
			m := compile(t, name, exampleWasm(t, name), patient)
			i := instance(t, m)
			for _, h := range want[name] {
				if !i.Has(h) {
					t.Errorf("%s does not run hook %v", name, h)
				}
			}
			info := m.Info()
			t.Logf("%s: %d bytes, %d check sites, imports %v", name, info.Size, info.CheckSites, info.Imports)
		})
	}
}
