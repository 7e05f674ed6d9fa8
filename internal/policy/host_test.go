package policy

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/policy/policytest"
)

// patient are limits for tests that do not test the deadline: this machine
// may be loaded, and a hook must not be stopped for that.
var patient = Limits{Deadline: 10 * time.Second, InitDeadline: 30 * time.Second}

func compile(t testing.TB, name string, wasm []byte, lim Limits) *Module {
	t.Helper()
	m, err := Compile(context.Background(), name, wasm, Options{Limits: lim})
	if err != nil {
		t.Fatalf("Compile %s: %v", name, err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func instance(t testing.TB, m *Module) *Instance {
	t.Helper()
	i, err := m.Instantiate(context.Background(), nil)
	if err != nil {
		t.Fatalf("Instantiate: %v", err)
	}
	t.Cleanup(func() { i.Close() })
	return i
}

func TestDispatchFirstReady(t *testing.T) {
	i := instance(t, compile(t, "first", policytest.FirstReady(), patient))
	env := newFakeEnv("a", "b", "c")
	for _, tc := range []struct {
		ready []uint32
		want  uint32
	}{{[]uint32{0, 1, 2}, 0}, {[]uint32{2}, 2}, {[]uint32{1, 2}, 1}, {nil, NoTenant}} {
		got, err := i.OnDispatch(env, EngineCompute, tc.ready)
		if err != nil || got.Tenant != tc.want {
			t.Errorf("OnDispatch(%v) = %+v, %v; want tenant %d", tc.ready, got, err, tc.want)
		}
	}
	if err := i.OnSubmit(env, SubmitEvent{Tenant: 1, Cost: 5}); err != nil {
		t.Errorf("OnSubmit: %v", err)
	}
}

func TestSpinIsStopped(t *testing.T) {
	for name, wasm := range map[string][]byte{"loop": policytest.Spin(), "recursion": policytest.SpinRecursive()} {
		t.Run(name, func(t *testing.T) {
			i := instance(t, compile(t, name, wasm, Limits{Deadline: 5 * time.Millisecond, InitDeadline: 30 * time.Second}))
			_, err := i.OnDispatch(newFakeEnv("a"), EngineCompute, []uint32{0})
			if !errors.Is(err, ErrDeadline) || !errors.Is(err, v1.ErrTimeout) {
				t.Fatalf("OnDispatch = %v, want ErrDeadline", err)
			}
			if _, err2 := i.OnDispatch(newFakeEnv("a"), EngineCompute, []uint32{0}); !errors.Is(err2, ErrDeadline) {
				t.Errorf("second call = %v, want the same ErrDeadline", err2)
			}
			t.Log(err)
		})
	}
}

func TestGrowIsStopped(t *testing.T) {
	lim := patient
	lim.Memory = 8 << 20
	i := instance(t, compile(t, "grow", policytest.Grow(), lim))
	_, err := i.OnDispatch(newFakeEnv("a"), EngineCompute, []uint32{0})
	if !errors.Is(err, ErrMemoryLimit) {
		t.Fatalf("OnDispatch = %v, want ErrMemoryLimit", err)
	}
	t.Log(err)
}

// TestHighClassReservedHost: a guest reads high_class_reserved, 1 while the
// high class has SMs of its own and 0 otherwise (here dispatched as the
// tenant id, so the host's answer comes back).
func TestHighClassReservedHost(t *testing.T) {
	m := policytest.Base(1)
	m.Imports = []policytest.Import{{Module: ModuleName, Name: "high_class_reserved", Results: []byte{policytest.I32}}}
	m.Funcs = append(m.Funcs, policytest.Dispatch(policytest.Code(policytest.Call(0), policytest.I64ExtendU)))
	i := instance(t, compile(t, "reserved", m.Bytes(), patient))
	for _, reserved := range []bool{false, true} {
		env := newFakeEnv("a", "b")
		env.reserved = reserved
		got, err := i.OnDispatch(env, EngineCompute, []uint32{0, 1})
		want := map[bool]uint32{false: 0, true: 1}[reserved]
		if err != nil || got.Tenant != want {
			t.Errorf("reserved %v: OnDispatch = %+v, %v; want tenant %d", reserved, got, err, want)
		}
	}
}
