package policy

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	pt "github.com/gpuos/gpuos/internal/policy/policytest"
)

// FuzzInstrument checks the instrumentation pass against wazero's own
// decoder: the pass never panics, and a module it accepts is valid after the
// pass exactly when it was valid before (with the features policies get).
// Custom sections, which the pass drops, are left out of the comparison.
// (Modules the pass refuses are not handed to wazero: some make its decoder
// allocate without bound, which is one reason the pass runs first.)
func FuzzInstrument(f *testing.F) {
	for _, b := range [][]byte{pt.FirstReady(), pt.Spin(), pt.SpinRecursive(), pt.Grow(), pt.Trap(), pt.Counter(),
		pt.Choose(3, 100), pt.WithImport("gpuos", "now", nil, []byte{pt.I64})} {
		f.Add(b)
	}
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(api.CoreFeaturesV2 &^ api.CoreFeatureSIMD).
		WithDebugInfoEnabled(false).WithCustomSections(false)
	f.Fuzz(func(t *testing.T, b []byte) {
		ins, err := instrument(b)
		if err != nil {
			return
		}
		rt := wazero.NewRuntimeWithConfig(ctx, cfg)
		defer rt.Close(ctx)
		_, refErr := rt.CompileModule(ctx, withoutCustomSections(b))
		_, outErr := rt.CompileModule(ctx, ins.wasm)
		if refErr == nil && outErr != nil {
			t.Fatalf("the pass turned a valid module into an invalid one: %v", outErr)
		}
		if refErr != nil && outErr == nil {
			t.Fatalf("the pass turned an invalid module (%v) into a valid one", refErr)
		}
	})
}

// withoutCustomSections returns a module (that the pass accepted, so its
// sections are well delimited) without its custom sections.
func withoutCustomSections(b []byte) []byte {
	out := append([]byte(nil), b[:8]...)
	r := &moduleReader{b: b, off: 8}
	for !r.done() {
		start := r.off
		id := r.byte()
		r.bytes(r.u32())
		if id != secCustom {
			out = append(out, b[start:r.off]...)
		}
	}
	return out
}
