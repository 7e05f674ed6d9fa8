package policy

import (
	"context"
	"testing"
	"time"
)

// The EDF example dispatches the command with the earliest deadline
// (submission time plus its tenant's SLO by class) and counts the misses.
func TestEDFExample(t *testing.T) {
	store := NewMaps()
	i, err := compile(t, "edf", exampleWasm(t, "edf"), patient).Instantiate(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close()
	env := newFakeEnv("batch", "web", "normal")
	env.classes = []int{-1, 1, 0} // SLOs: 200 ms, 2 ms, 20 ms
	if err := i.Init(env); err != nil {
		t.Fatal(err)
	}
	submit := func(tenant uint32, at time.Duration) {
		t.Helper()
		env.now = at
		env.queued[tenant]++
		if err := i.OnSubmit(env, SubmitEvent{Tenant: tenant, Engine: EngineCompute}); err != nil {
			t.Fatal(err)
		}
	}
	dispatch := func(at time.Duration, ready ...uint32) uint32 {
		t.Helper()
		env.now = at
		c, err := i.OnDispatch(env, EngineCompute, ready)
		if err != nil {
			t.Fatal(err)
		}
		env.queued[c.Tenant]--
		return c.Tenant
	}
	submit(0, 0)                   // batch: deadline 200 ms
	submit(2, 1*time.Millisecond)  // normal: 21 ms
	submit(1, 10*time.Millisecond) // web: 12 ms
	if got := dispatch(11*time.Millisecond, 0, 1, 2); got != 1 {
		t.Errorf("first dispatch: tenant %d, want web (deadline 12 ms)", got)
	}
	if got := dispatch(11*time.Millisecond, 0, 2); got != 2 {
		t.Errorf("second dispatch: tenant %d, want normal (21 ms)", got)
	}
	if got := dispatch(300*time.Millisecond, 0); got != 0 {
		t.Errorf("third dispatch: tenant %d, want batch", got)
	}
	// Only batch's command was dispatched past its deadline, 100 ms late.
	snap := map[string]map[uint32]int64{}
	for _, mv := range store.Snapshot("edf.") {
		snap[mv.Name] = mv.Values
	}
	if m := snap["edf.missed"]; m[0] != 1 || m[1] != 0 || m[2] != 0 {
		t.Errorf("missed = %v, want batch 1", m)
	}
	if l := snap["edf.late_ns"]; l[0] != int64(100*time.Millisecond) {
		t.Errorf("late_ns = %v, want batch 100 ms", l)
	}
}
