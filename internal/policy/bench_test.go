package policy

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"

	pt "github.com/gpuos/gpuos/internal/policy/policytest"
)

// BenchmarkHook measures one hook call through an Instance: a hand-built
// guest's notification (the floor: call, deadline bookkeeping, result
// check), the same guest's on_dispatch over 3 ready tenants, and the Go
// fair example's on_dispatch (Go's wasmexport entry, 3 × (map_get,
// in_flight_cost, tenant_weight) host calls). "wazero-noop" is a bare
// wazero call of the same guest's function, for reference.
func BenchmarkHook(b *testing.B) {
	env := newFakeEnv("a", "b", "c")
	ready := []uint32{0, 1, 2}
	first := compile(b, "first", pt.FirstReady(), patient)
	fi := instance(b, first)
	b.Run("wazero-noop", func(b *testing.B) {
		ctx := context.Background()
		rt := wazero.NewRuntime(ctx)
		defer rt.Close(ctx)
		m := pt.Base(1)
		m.Funcs = append(m.Funcs, pt.Notify("noop", pt.I64))
		mod, err := rt.Instantiate(ctx, m.Bytes())
		if err != nil {
			b.Fatal(err)
		}
		f := mod.ExportedFunction("noop")
		st := []uint64{0}
		for b.Loop() {
			if err := f.CallWithStack(ctx, st); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("notify", func(b *testing.B) {
		for b.Loop() {
			if err := fi.OnTick(env, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dispatch", func(b *testing.B) {
		for b.Loop() {
			if _, err := fi.OnDispatch(env, 0, ready); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-fair-dispatch", func(b *testing.B) {
		i := instance(b, compile(b, "wfair", exampleWasm(b, "fair"), patient))
		for b.Loop() {
			if _, err := i.OnDispatch(env, 0, ready); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-fair-complete", func(b *testing.B) {
		i := instance(b, compile(b, "wfair", exampleWasm(b, "fair"), patient))
		for b.Loop() {
			if err := i.OnComplete(env, CompleteEvent{Tenant: 1, Charge: 1000, Commands: 1}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
