package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuos/gpuos/client"
	pt "github.com/gpuos/gpuos/internal/policy/policytest"
)

// work writes to a device buffer a few times: each write goes through the
// scheduler, so through the active policy's hooks.
func work(t *testing.T, sock string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.OpenSession(ctx, client.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := s.CreateBuffer(ctx, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := b.Write(ctx, uint64(i)*4096, []byte("policy engine")); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
}

func TestPolicyLoadUseMapsUnload(t *testing.T) {
	sock := serveForTest(t)
	dir := t.TempDir()
	file := func(name string, wasm []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, wasm, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := file("first.wasm", pt.FirstReady())
	counter := file("counter.wasm", pt.Counter())
	spin := file("spinner.wasm", pt.Spin())
	bad := file("bad.wasm", pt.WithImport("env", "abort", nil, nil))

	if code, out := runCmd(t, "policy", "load", first, "--socket", sock); code != 0 || !strings.Contains(out, "loaded policy first") ||
		!strings.Contains(out, "dispatch") {
		t.Fatalf("policy load: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "load", first, "--socket", sock); code != 1 || !strings.Contains(out, "loaded") {
		t.Errorf("second load under the same name: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "load", first, "--name", "fair", "--socket", sock); code != 1 {
		t.Errorf("load under a built-in's name: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "load", bad, "--socket", sock); code != 1 || !strings.Contains(out, "allowlist") {
		t.Errorf("load of a module importing env.abort: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "use", "first", "--socket", sock); code != 0 {
		t.Fatalf("policy use first: %d\n%s", code, out)
	}
	work(t, sock)
	if code, out := runCmd(t, "policy", "list", "--socket", sock); code != 0 || !strings.Contains(out, "active: first") ||
		!strings.Contains(out, "lru") {
		t.Errorf("policy list: %d\n%s", code, out)
	}

	// A policy's maps, read from the command line.
	if code, out := runCmd(t, "policy", "load", counter, "--socket", sock); code != 0 {
		t.Fatalf("load counter: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "use", "counter", "--socket", sock); code != 0 {
		t.Fatalf("use counter: %d\n%s", code, out)
	}
	work(t, sock)
	// The scheduler tells the policy of a completion after the client has
	// seen it, so the counter may lag the work by a moment.
	var code int
	var out string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		code, out = runCmd(t, "policy", "maps", "counter.", "--socket", sock)
		if code != 0 || strings.Contains(out, "counter.completions") || time.Now().After(deadline) {
			break
		}
	}
	if code != 0 || !strings.Contains(out, "counter.completions") || !strings.Contains(out, "loaded") || !strings.Contains(out, "default") {
		t.Errorf("policy maps counter.: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "maps", "--socket", sock); code != 0 || !strings.Contains(out, "weight.compute") {
		t.Errorf("policy maps: %d\n%s", code, out)
	}

	// A runaway policy is ejected at its first dispatch, unloaded and
	// audited; the work completes under the fallback.
	if code, out := runCmd(t, "policy", "load", spin, "--name", "spin", "--socket", sock); code != 0 {
		t.Fatalf("load spin: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "use", "spin", "--socket", sock); code != 0 {
		t.Fatalf("use spin: %d\n%s", code, out)
	}
	work(t, sock)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, out = runCmd(t, "policy", "list", "--socket", sock)
		if strings.Contains(out, "active: fair") && strings.Contains(out, "ejected") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spin not ejected: %d\n%s", code, out)
		}
	}
	code, out = runCmd(t, "audit", "--kind", "policy.", "--socket", sock)
	for _, want := range []string{`"policy.load"`, `"policy.use"`, `"policy.eject"`, `"policy.unload"`, "spin"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("audit lacks %s: %d\n%s", want, code, out)
		}
	}

	// A memory policy replaces the victim choice; lru brings the built-in back.
	if code, out := runCmd(t, "policy", "load", file("inorder.wasm", pt.InOrder()), "--socket", sock); code != 0 ||
		!strings.Contains(out, "pressure") {
		t.Fatalf("load inorder: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "use", "inorder", "--socket", sock); code != 0 {
		t.Fatalf("use inorder: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "list", "--socket", sock); code != 0 || !strings.Contains(out, "memory, in use: WebAssembly") {
		t.Errorf("policy list with a memory policy in use: %d\n%s", code, out)
	}
	work(t, sock)
	if code, out := runCmd(t, "policy", "use", "lru", "--socket", sock); code != 0 {
		t.Errorf("use lru: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "list", "--socket", sock); code != 0 || !strings.Contains(out, "memory, in use: evict") {
		t.Errorf("policy list after use lru: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "unload", "first", "--socket", sock); code != 0 {
		t.Errorf("unload first: %d\n%s", code, out)
	}
	if code, out := runCmd(t, "policy", "unload", "first", "--socket", sock); code != 1 || !strings.Contains(out, "not found") {
		t.Errorf("unload first again: %d\n%s", code, out)
	}
	for _, bad := range [][]string{
		{"policy", "load"},
		{"policy", "load", "a.wasm", "b.wasm"},
		{"policy", "unload"},
		{"policy", "maps", "a", "b"},
	} {
		if code, _ := runCmd(t, append(bad, "--socket", sock)...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", bad, code)
		}
	}
	if code, out := runCmd(t, "policy", "load", filepath.Join(dir, "nonesuch.wasm"), "--socket", sock); code != 1 {
		t.Errorf("load of a missing file: %d\n%s", code, out)
	}
}
