package policy

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	pt "github.com/gpuos/gpuos/internal/policy/policytest"
)

// Modules that must be refused at load, and why.
func TestCompileRefuses(t *testing.T) {
	withImport := func(mod, name string, params, results []byte) []byte {
		return pt.WithImport(mod, name, params, results)
	}
	memImport := pt.Base(1)
	memImport.ImportMemory = true
	memImport.Funcs = append(memImport.Funcs, pt.Dispatch(pt.I64Const(0)))
	noVersion := &pt.Module{MemoryPages: 1, Funcs: []pt.Func{pt.Dispatch(pt.I64Const(0))}}
	badSig := pt.Base(1)
	badSig.Funcs = append(badSig.Funcs, pt.Func{Params: []byte{pt.I32}, Results: []byte{pt.I32}, Code: pt.I32Const(0), Export: "gpuos_on_dispatch"})
	noHooks := pt.Base(1)
	noExchange := &pt.Module{MemoryPages: 1, Funcs: []pt.Func{
		{Results: []byte{pt.I32}, Code: pt.I32Const(1), Export: "gpuos_abi_version"},
		pt.Dispatch(pt.I64Const(0)),
	}}
	tooBig := pt.Base(1)
	tooBig.MemoryPages = 2048 // 128 MiB initial, past the 64 MiB default
	simd := pt.Base(1)
	simd.Funcs = append(simd.Funcs, pt.Dispatch(pt.Code([]byte{0xfd, 0x0c}, make([]byte, 16), []byte{0x1a}, pt.I64Const(0))))
	fuel := pt.Base(1) // no globals of its own: global 0 would be the fuel counter
	fuel.Funcs = append(fuel.Funcs, pt.Dispatch(pt.Code(pt.I32Const(1<<30), []byte{0x24, 0x00}, pt.I64Const(0))))
	tail := pt.Base(1)
	tail.Funcs = append(tail.Funcs, pt.Dispatch(pt.Code([]byte{0x12, 0x02})))

	for _, tc := range []struct {
		name string
		wasm []byte
		want error
		msg  string
	}{
		{"not wasm", []byte("#!/bin/sh\nrm -rf /\n"), ErrInvalidModule, "not a WebAssembly module"},
		{"empty", nil, ErrInvalidModule, "not a WebAssembly module"},
		{"version 2 binary", append([]byte("\x00asm\x02\x00\x00\x00"), 0), ErrInvalidModule, "version"},
		{"truncated", pt.FirstReady()[:40], ErrInvalidModule, ""},
		{"env import", withImport("env", "abort", nil, nil), ErrImportRefused, "env.abort"},
		{"wasi path_open", withImport("wasi_snapshot_preview1", "path_open", []byte{pt.I32, pt.I32, pt.I32, pt.I32, pt.I32, pt.I64, pt.I64, pt.I32, pt.I32}, []byte{pt.I32}), ErrImportRefused, "path_open"},
		{"wasi fd_read", withImport("wasi_snapshot_preview1", "fd_read", []byte{pt.I32, pt.I32, pt.I32, pt.I32}, []byte{pt.I32}), ErrImportRefused, "fd_read"},
		{"wasi sock_accept", withImport("wasi_snapshot_preview1", "sock_accept", []byte{pt.I32, pt.I32, pt.I32}, []byte{pt.I32}), ErrImportRefused, "sock_accept"},
		{"reserved meter", withImport("gpuos", "__meter", nil, []byte{pt.I32}), ErrImportRefused, "__meter"},
		{"unknown host function", withImport("gpuos", "exec", nil, nil), ErrImportRefused, "gpuos.exec"},
		{"wrong host signature", withImport("gpuos", "now", nil, []byte{pt.I32}), ErrImportRefused, "signature"},
		{"memory import", memImport.Bytes(), ErrImportRefused, "memory env.memory"},
		{"no abi version", noVersion.Bytes(), ErrInvalidModule, "gpuos_abi_version"},
		{"hook signature", badSig.Bytes(), ErrInvalidModule, "gpuos_on_dispatch has signature"},
		{"no hooks", noHooks.Bytes(), ErrInvalidModule, "no hook"},
		{"dispatch without exchange", noExchange.Bytes(), ErrInvalidModule, "gpuos_exchange"},
		{"abi version 2", pt.Base(2).Bytes(), ErrABIVersion, "version 2"},
		{"memory above limit", tooBig.Bytes(), ErrMemoryLimit, ""},
		{"simd", simd.Bytes(), ErrInvalidModule, "SIMD"},
		{"tail call", tail.Bytes(), ErrInvalidModule, "tail calls"},
		{"fuel counter", fuel.Bytes(), ErrInvalidModule, "global index 0 of 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "no hooks" || tc.name == "abi version 2" || tc.name == "memory above limit" {
				// Base alone has no hook: give it one so the check under test is reached.
				m := pt.Base(1)
				switch tc.name {
				case "abi version 2":
					m = pt.Base(2)
					m.Funcs = append(m.Funcs, pt.Dispatch(pt.I64Const(0)))
				case "memory above limit":
					m.MemoryPages = 2048
					m.Funcs = append(m.Funcs, pt.Dispatch(pt.I64Const(0)))
				}
				tc.wasm = m.Bytes()
			}
			m, err := Compile(context.Background(), tc.name, tc.wasm, Options{Limits: patient})
			if err == nil {
				m.Close()
				t.Fatalf("Compile succeeded, want %v", tc.want)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Compile = %v; want %v containing %q", err, tc.want, tc.msg)
			}
			if v1.CodeOf(err) == v1.CodeOK || v1.CodeOf(err) == v1.CodeInternal {
				t.Errorf("error %v has code %v: want a typed refusal", err, v1.CodeOf(err))
			}
		})
	}
}

// The allowlisted imports load; each WASI function of the subset behaves as
// wasi.go says (checked through a Go guest in the examples test).
func TestCompileAcceptsABIImports(t *testing.T) {
	for name, f := range hostFuncs {
		wasm := pt.WithImport(ModuleName, name, f.params, f.results)
		m, err := Compile(context.Background(), name, wasm, Options{Limits: patient})
		if err != nil {
			t.Errorf("import gpuos.%s: %v", name, err)
			continue
		}
		m.Close()
	}
	for name, f := range wasiFuncs {
		wasm := pt.WithImport(wasiModule, name, f.params, f.results)
		m, err := Compile(context.Background(), name, wasm, Options{Limits: patient})
		if err != nil {
			t.Errorf("import %s.%s: %v", wasiModule, name, err)
			continue
		}
		m.Close()
	}
}

// Decisions outside the ABI stop the guest with ErrInvalidDecision.
func TestInvalidDecisions(t *testing.T) {
	env := newFakeEnv("a", "b", "c")
	for _, tc := range []struct {
		name  string
		wasm  []byte
		ready []uint32
	}{
		{"tenant not ready", pt.Choose(1, 0), []uint32{0, 2}},
		{"tenant unknown", pt.Choose(1000, 0), []uint32{0, 1, 2}},
		{"nothing ready", pt.Choose(0, 0), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := instance(t, compile(t, tc.name, tc.wasm, patient))
			_, err := i.OnDispatch(env, EngineCompute, tc.ready)
			if !errors.Is(err, ErrInvalidDecision) {
				t.Fatalf("OnDispatch = %v, want ErrInvalidDecision", err)
			}
			if !errors.Is(i.Err(), ErrInvalidDecision) {
				t.Errorf("Err() = %v after an invalid decision", i.Err())
			}
		})
	}
	// NoTenant with a hold is a valid answer.
	i := instance(t, compile(t, "idle", pt.Choose(NoTenant, 5000), patient))
	c, err := i.OnDispatch(env, EngineCopy, []uint32{0})
	if err != nil || c.Tenant != NoTenant || c.Hold != 5000 {
		t.Errorf("OnDispatch = %+v, %v; want NoTenant holding 5µs", c, err)
	}
}

// A guest counts completions in a map through the host functions; the
// store shows them under the policy's name, and they outlive the instance.
func TestMaps(t *testing.T) {
	store := NewMaps()
	m := compile(t, "counter", pt.Counter(), patient)
	i, err := m.Instantiate(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	env := newFakeEnv("a", "b")
	for _, c := range []CompleteEvent{{Tenant: 0, Commands: 3}, {Tenant: 1, Commands: 1}, {Tenant: 0, Commands: 2}} {
		if err := i.OnComplete(env, c); err != nil {
			t.Fatal(err)
		}
	}
	i.Close()
	snap := store.Snapshot("counter.")
	if len(snap) != 1 || snap[0].Name != "counter.completions" {
		t.Fatalf("Snapshot = %+v, want one map counter.completions", snap)
	}
	if got := snap[0].Values; got[0] != 5 || got[1] != 1 {
		t.Errorf("completions = %v, want 0:5 1:1", got)
	}
	store.Drop("counter")
	if snap := store.Snapshot(""); len(snap) != 0 {
		t.Errorf("after Drop: %+v", snap)
	}
}

func TestMapNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"credits", true}, {"vtime.compute", true}, {"a-b_c.9", true}, {"", false}, {"Credits", false},
		{"a b", false}, {"a/b", false}, {strings.Repeat("x", 64), true}, {strings.Repeat("x", 65), false}} {
		if got := validMapName(tc.name); got != tc.ok {
			t.Errorf("validMapName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// Interrupt between calls does nothing; Close of a stopped instance is fine;
// hooks of a closed instance return ErrClosed.
func TestInterruptAndClose(t *testing.T) {
	i := instance(t, compile(t, "first", pt.FirstReady(), patient))
	env := newFakeEnv("a")
	i.Interrupt()
	if _, err := i.OnDispatch(env, EngineCompute, []uint32{0}); err != nil {
		t.Fatalf("OnDispatch after an idle Interrupt: %v", err)
	}
	if err := i.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := i.OnDispatch(env, EngineCompute, []uint32{0}); !errors.Is(err, ErrClosed) {
		t.Errorf("OnDispatch after Close = %v, want ErrClosed", err)
	}
	if err := i.OnSubmit(env, SubmitEvent{}); !errors.Is(err, ErrClosed) {
		t.Errorf("OnSubmit after Close = %v, want ErrClosed", err)
	}
	if err := i.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A module closed while instances run keeps them working until they close.
func TestModuleCloseKeepsInstances(t *testing.T) {
	m, err := Compile(context.Background(), "first", pt.FirstReady(), Options{Limits: patient})
	if err != nil {
		t.Fatal(err)
	}
	i, err := m.Instantiate(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := m.Instantiate(context.Background(), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Instantiate after Close = %v, want ErrClosed", err)
	}
	if c, err := i.OnDispatch(newFakeEnv("a"), 0, []uint32{0}); err != nil || c.Tenant != 0 {
		t.Errorf("OnDispatch = %+v, %v", c, err)
	}
	i.Close()
}

// Hooks a module does not export have their defaults.
func TestDefaults(t *testing.T) {
	i := instance(t, compile(t, "first", pt.FirstReady(), patient))
	env := newFakeEnv("a")
	if ok, err := i.OnSessionOpen(env, SessionEvent{}); !ok || err != nil {
		t.Errorf("OnSessionOpen = %v, %v; want admit", ok, err)
	}
	if ok, err := i.OnAlloc(env, AllocEvent{}); !ok || err != nil {
		t.Errorf("OnAlloc = %v, %v; want allow", ok, err)
	}
	if _, err := i.OnPressure(env, Pressure{}, nil); !errors.Is(err, ErrNoHook) {
		t.Errorf("OnPressure = %v, want ErrNoHook", err)
	}
	if err := i.OnFault(env, FaultEvent{}); err != nil {
		t.Errorf("OnFault = %v", err)
	}
	if err := i.Init(env); err != nil {
		t.Errorf("Init = %v", err)
	}
}
