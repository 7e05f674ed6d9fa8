package policy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/mem"
	pt "github.com/gpuos/gpuos/internal/policy/policytest"
)

func memCands() []mem.Candidate {
	return []mem.Candidate{
		{Tenant: "a", Priority: 0, Window: 1, Bytes: 2 << 20, LastUse: 1},
		{Tenant: "b", Priority: 0, Window: 2, Bytes: 2 << 20, LastUse: 2, Shared: true},
		{Tenant: "b", Priority: 0, Window: 2, Bytes: 2 << 20, LastUse: 3},
		{Tenant: "b", Priority: 0, Window: 2, Bytes: 2 << 20, LastUse: 4},
		{Tenant: "c", Priority: 0, Window: 3, Bytes: 2 << 20, LastUse: 5},
	}
}

func tenantIDs(names ...string) func(string) (uint32, bool) {
	return func(n string) (uint32, bool) {
		for i, x := range names {
			if x == n {
				return uint32(i), true
			}
		}
		return 0, false
	}
}

// Without a policy the switch answers as the built-in does.
func TestMemorySwitchBuiltin(t *testing.T) {
	s := NewMemorySwitch(MemoryOptions{})
	p := mem.Pressure{Need: 3 << 20, Tenant: "a", Window: 1}
	got, err := s.ChooseVictims(p, memCands())
	want, _ := mem.LowestPriorityLRU{}.ChooseVictims(p, memCands())
	if err != nil || !equalInts(got, want) {
		t.Errorf("ChooseVictims = %v, %v; want the built-in's %v", got, err, want)
	}
}

// The victim example evicts from the tenant holding the most, unshared
// chunks first, and never the requester's window while others suffice.
func TestVictimExample(t *testing.T) {
	store := NewMaps()
	i, err := compile(t, "victim", exampleWasm(t, "victim"), patient).Instantiate(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close()
	s := NewMemorySwitch(MemoryOptions{TenantID: tenantIDs("a", "b", "c")})
	if err := s.Use(i); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		p    mem.Pressure
		want []int
	}{
		{"b holds most: its unshared chunks, oldest first", mem.Pressure{Need: 3 << 20, Tenant: "a", Window: 1}, []int{2, 3}},
		{"then its shared one", mem.Pressure{Need: 5 << 20, Tenant: "a", Window: 1}, []int{2, 3, 1}},
		{"the requester's own last", mem.Pressure{Need: 10 << 20, Tenant: "a", Window: 1}, []int{2, 3, 1, 4, 0}},
		{"requester b: others first", mem.Pressure{Need: 1 << 20, Tenant: "b", Window: 2}, []int{0}},
	} {
		got, err := s.ChooseVictims(tc.p, memCands())
		if err != nil || !equalInts(got, tc.want) {
			t.Errorf("%s: ChooseVictims = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if snap := store.Snapshot("victim.evicted_bytes"); len(snap) != 1 || snap[0].Values[1] == 0 {
		t.Errorf("evicted_bytes = %+v, want bytes counted for tenant b", snap)
	}
}

// A hand-built memory policy answers through the exchange area.
func TestInOrderGuest(t *testing.T) {
	s := NewMemorySwitch(MemoryOptions{})
	if err := s.Use(instance(t, compile(t, "inorder", pt.InOrder(), patient))); err != nil {
		t.Fatal(err)
	}
	got, err := s.ChooseVictims(mem.Pressure{Need: 1}, memCands())
	if err != nil || !equalInts(got, []int{0, 1, 2, 3, 4}) {
		t.Errorf("ChooseVictims = %v, %v; want every candidate in order", got, err)
	}
}

// A memory policy that fails is ejected: the failing decision returns an
// error (the memory manager makes it with the built-in), later ones are
// the built-in's, and OnEject is told.
func TestMemorySwitchEjects(t *testing.T) {
	// Hand-built memory policies: on_pressure answering a fixed count of
	// victims, all naming candidate v.
	pressure := func(count, v int32) []byte {
		m := pt.Base(1)
		m.Funcs = append(m.Funcs, pt.Func{
			Params: []byte{pt.I64, pt.I32, pt.I64, pt.I32, pt.I32, pt.I32, pt.I32}, Results: []byte{pt.I32},
			Export: "gpuos_on_pressure",
			Code: pt.Code(
				// out[0] = v; out[1] = v
				pt.LocalGet(6), pt.I32Const(v), pt.I32Store(0),
				pt.LocalGet(6), pt.I32Const(v), pt.I32Store(4),
				pt.I32Const(count),
			),
		})
		return m.Bytes()
	}
	spin := pt.Base(1)
	spin.Funcs = append(spin.Funcs, pt.Func{
		Params: []byte{pt.I64, pt.I32, pt.I64, pt.I32, pt.I32, pt.I32, pt.I32}, Results: []byte{pt.I32},
		Export: "gpuos_on_pressure", Code: pt.Code(pt.Loop, pt.Br(0), pt.End, pt.I32Const(0)),
	})
	for _, tc := range []struct {
		name string
		wasm []byte
		lim  Limits
		want error
	}{
		{"out of range", pressure(1, 9), patient, ErrInvalidDecision},
		{"named twice", pressure(2, 0), patient, ErrInvalidDecision},
		{"none", pressure(0, 0), patient, ErrInvalidDecision},
		{"too many", pressure(6, 0), patient, ErrInvalidDecision},
		{"spin", spin.Bytes(), Limits{Deadline: 5 * time.Millisecond, InitDeadline: 30 * time.Second}, ErrDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ejected := make(chan error, 1)
			s := NewMemorySwitch(MemoryOptions{OnEject: func(_ string, err error) { ejected <- err }})
			i := instance(t, compile(t, tc.name, tc.wasm, tc.lim))
			if err := s.Use(i); err != nil {
				t.Fatal(err)
			}
			p := mem.Pressure{Need: 1 << 20}
			if _, err := s.ChooseVictims(p, memCands()); !errors.Is(err, tc.want) {
				t.Fatalf("ChooseVictims = %v, want %v", err, tc.want)
			}
			if err := <-ejected; !errors.Is(err, tc.want) {
				t.Errorf("OnEject told %v", err)
			}
			if name, why := s.Active(); name != "" || why == "" {
				t.Errorf("Active = %q, %q; want the built-in and a reason", name, why)
			}
			got, err := s.ChooseVictims(p, memCands())
			want, _ := mem.LowestPriorityLRU{}.ChooseVictims(p, memCands())
			if err != nil || !equalInts(got, want) {
				t.Errorf("after ejection: %v, %v; want the built-in's %v", got, err, want)
			}
		})
	}
	// A module without on_pressure cannot be a memory policy.
	s := NewMemorySwitch(MemoryOptions{})
	if err := s.Use(instance(t, compile(t, "first", pt.FirstReady(), patient))); !errors.Is(err, ErrNoHook) {
		t.Errorf("Use of a scheduling-only policy = %v, want ErrNoHook", err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Interrupt stops a memory hook in progress without waiting for it.
func TestMemorySwitchInterrupt(t *testing.T) {
	spin := pt.Base(1)
	spin.Funcs = append(spin.Funcs, pt.Func{
		Params: []byte{pt.I64, pt.I32, pt.I64, pt.I32, pt.I32, pt.I32, pt.I32}, Results: []byte{pt.I32},
		Export: "gpuos_on_pressure", Code: pt.Code(pt.Loop, pt.Br(0), pt.End, pt.I32Const(0)),
	})
	s := NewMemorySwitch(MemoryOptions{})
	if err := s.Use(instance(t, compile(t, "spin", spin.Bytes(), patient))); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			default:
				s.Interrupt()
				time.Sleep(time.Millisecond)
			}
		}
	}()
	_, err := s.ChooseVictims(mem.Pressure{Need: 1}, memCands())
	close(done)
	if !errors.Is(err, ErrDeadline) {
		t.Errorf("ChooseVictims = %v, want ErrDeadline", err)
	}
}
