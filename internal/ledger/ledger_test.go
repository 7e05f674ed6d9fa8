package ledger

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
)

func mustNew(t *testing.T, name string, parent *Ledger, limits Limits) *Ledger {
	t.Helper()
	l, err := New(name, parent, limits)
	if err != nil {
		t.Fatalf("New(%q): %v", name, err)
	}
	return l
}

func TestChargeAllOrNothing(t *testing.T) {
	tenant := mustNew(t, "tenant alice", nil, Limits{DeviceBytes: 100, Buffers: 3})
	s1 := mustNew(t, "session 1", tenant, Limits{DeviceBytes: 80})
	s2 := mustNew(t, "session 2", tenant, Limits{})

	tests := []struct {
		name       string
		l          *Ledger
		r          Resource
		n          uint64
		wantLedger string // "" for success
		wantLimit  uint64
		s1, s2, tn uint64 // DeviceBytes after
	}{
		{"within both", s1, DeviceBytes, 60, "", 0, 60, 0, 60},
		{"session limit", s1, DeviceBytes, 30, "session 1", 80, 60, 0, 60},
		{"tenant limit via other session", s2, DeviceBytes, 41, "tenant alice", 100, 60, 0, 60},
		{"tenant exactly full", s2, DeviceBytes, 40, "", 0, 60, 40, 100},
		{"zero is fine when full", s1, DeviceBytes, 0, "", 0, 60, 40, 100},
		{"overflow", s2, DeviceBytes, ^uint64(0), "session 2", 0, 60, 40, 100},
	}
	for _, tt := range tests {
		err := tt.l.Charge(tt.r, tt.n)
		if tt.wantLedger == "" {
			if err != nil {
				t.Errorf("%s: Charge: %v", tt.name, err)
			}
		} else {
			var qe *QuotaError
			if !errors.As(err, &qe) {
				t.Fatalf("%s: Charge error %v; want *QuotaError", tt.name, err)
			}
			if qe.Ledger != tt.wantLedger || qe.Limit != tt.wantLimit || qe.Resource != tt.r || qe.Asked != tt.n {
				t.Errorf("%s: QuotaError %+v; want ledger %q limit %d", tt.name, qe, tt.wantLedger, tt.wantLimit)
			}
			if !errors.Is(err, ErrQuotaExceeded) || !errors.Is(err, v1.ErrQuotaExceeded) || v1.CodeOf(err) != v1.CodeQuotaExceeded {
				t.Errorf("%s: %v does not carry the quota code", tt.name, err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.wantLedger) || !strings.Contains(msg, "device-bytes") {
				t.Errorf("%s: message %q does not name ledger and resource", tt.name, msg)
			}
		}
		if got := [3]uint64{s1.Used(DeviceBytes), s2.Used(DeviceBytes), tenant.Used(DeviceBytes)}; got != [3]uint64{tt.s1, tt.s2, tt.tn} {
			t.Errorf("%s: used (s1, s2, tenant) = %v; want %v", tt.name, got, [3]uint64{tt.s1, tt.s2, tt.tn})
		}
	}
}

func TestRefund(t *testing.T) {
	tenant := mustNew(t, "t", nil, Limits{})
	s := mustNew(t, "s", tenant, Limits{})
	other := mustNew(t, "o", tenant, Limits{})
	if err := s.Charge(Streams, 5); err != nil {
		t.Fatal(err)
	}
	if err := other.Charge(Streams, 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Refund(Streams, 2); err != nil {
		t.Fatal(err)
	}
	if s.Used(Streams) != 3 || tenant.Used(Streams) != 10 {
		t.Errorf("after refund: s %d tenant %d; want 3, 10", s.Used(Streams), tenant.Used(Streams))
	}
	// Refunding more than s holds must not take other's share from the tenant.
	err := s.Refund(Streams, 9)
	if !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("over-refund: %v; want invalid argument", err)
	}
	if s.Used(Streams) != 0 || tenant.Used(Streams) != 7 {
		t.Errorf("after over-refund: s %d tenant %d; want 0, 7", s.Used(Streams), tenant.Used(Streams))
	}
	for _, f := range []func() error{
		func() error { return s.Charge(NumResources, 1) },
		func() error { return s.Refund(NumResources, 1) },
		func() error { return s.SetLimit(NumResources, 1) },
	} {
		if err := f(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("unknown resource: %v; want invalid argument", err)
		}
	}
}

func TestCloseReturnsParentToZero(t *testing.T) {
	root := mustNew(t, "host", nil, Limits{})
	tenant := mustNew(t, "tenant", root, Limits{})
	if err := tenant.Charge(Programs, 1); err != nil { // the tenant's own charge survives
		t.Fatal(err)
	}
	before := tenant.Snapshot().Used
	s := mustNew(t, "session", tenant, Limits{})
	child := mustNew(t, "sub", s, Limits{})
	for r := range NumResources {
		if err := s.Charge(r, uint64(r)+10); err != nil {
			t.Fatal(err)
		}
		if err := child.Charge(r, 3); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if got := tenant.Snapshot().Used; got != before {
		t.Errorf("tenant after session close %v; want %v", got, before)
	}
	if got, want := root.Snapshot().Used, before; got != want {
		t.Errorf("root after session close %v; want %v", got, want)
	}
	if !child.Closed() || !s.Snapshot().Closed {
		t.Error("children of a closed ledger must be closed")
	}
	if err := s.Charge(Buffers, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("charge after close: %v; want ErrClosed", err)
	}
	if err := child.Charge(Buffers, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("charge to child after close: %v; want ErrClosed", err)
	}
	if err := s.Refund(Buffers, 1); err != nil {
		t.Errorf("refund after close: %v; want nil (already refunded)", err)
	}
	if _, err := New("late", s, Limits{}); !errors.Is(err, ErrClosed) {
		t.Errorf("New under closed parent: %v; want ErrClosed", err)
	}
	s.Close() // idempotent
	tenant.Close()
	if got := root.Snapshot().Used; got != (Snapshot{}).Used {
		t.Errorf("root after tenant close %v; want zero", got)
	}
}

func TestFree(t *testing.T) {
	tenant := mustNew(t, "t", nil, Limits{DeviceBytes: 1000})
	s := mustNew(t, "s", tenant, Limits{DeviceBytes: 300})
	other := mustNew(t, "o", tenant, Limits{})
	if got := s.Free(DeviceBytes); got != 300 {
		t.Errorf("Free = %d; want 300", got)
	}
	if err := other.Charge(DeviceBytes, 800); err != nil {
		t.Fatal(err)
	}
	if got := s.Free(DeviceBytes); got != 200 {
		t.Errorf("Free with tenant nearly full = %d; want 200", got)
	}
	if got := s.Free(Streams); got != ^uint64(0) {
		t.Errorf("Free of unlimited = %d", got)
	}
	if err := tenant.SetLimit(DeviceBytes, 500); err != nil {
		t.Fatal(err)
	}
	if got := s.Free(DeviceBytes); got != 0 {
		t.Errorf("Free over lowered limit = %d; want 0", got)
	}
}

func TestParseResource(t *testing.T) {
	for r := range NumResources {
		got, err := ParseResource(r.String())
		if err != nil || got != r {
			t.Errorf("ParseResource(%q) = %v, %v", r.String(), got, err)
		}
	}
	if _, err := ParseResource("gpus"); !errors.Is(err, v1.ErrInvalidArgument) {
		t.Errorf("ParseResource(gpus): %v", err)
	}
}

// Many sessions charging and refunding in-flight submissions against a
// tenant limit: the limit is never passed and everything returns to zero.
func TestConcurrentChargeNeverOverruns(t *testing.T) {
	const limit = 16
	tenant := mustNew(t, "t", nil, Limits{InFlight: limit})
	var wg sync.WaitGroup
	var overrun sync.Once
	for i := range 8 {
		s := mustNew(t, "s", tenant, Limits{InFlight: 4})
		wg.Add(1)
		go func() {
			defer wg.Done()
			held := 0
			for j := range 5000 {
				if err := s.Charge(InFlight, 1); err == nil {
					held++
					if u := tenant.Used(InFlight); u > limit {
						overrun.Do(func() { t.Errorf("tenant in-flight %d > %d", u, limit) })
					}
				} else if !errors.Is(err, ErrQuotaExceeded) {
					t.Errorf("charge: %v", err)
					return
				}
				if held > 0 && (j+i)%2 == 0 {
					if err := s.Refund(InFlight, 1); err != nil {
						t.Errorf("refund: %v", err)
						return
					}
					held--
				}
			}
			if i%2 == 0 {
				s.Close() // leaves its charges for Close to return
			} else if err := s.Refund(InFlight, uint64(held)); err != nil {
				t.Errorf("final refund: %v", err)
			}
		}()
	}
	wg.Wait()
	if u := tenant.Used(InFlight); u != 0 {
		t.Errorf("tenant in-flight after all done = %d; want 0", u)
	}
}

// Close racing with charges: the parent ends at exactly zero.
func TestCloseRacesCharges(t *testing.T) {
	for range 50 {
		tenant := mustNew(t, "t", nil, Limits{})
		s := mustNew(t, "s", tenant, Limits{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					if s.Charge(QueueDepth, 1) != nil {
						return
					}
				}
			}()
		}
		s.Close()
		wg.Wait()
		if u := tenant.Used(QueueDepth); u != 0 {
			t.Fatalf("tenant after close racing charges = %d; want 0", u)
		}
	}
}

func ExampleLedger_Charge() {
	tenant, _ := New("tenant alice", nil, Limits{DeviceBytes: 1 << 30})
	session, _ := New("session 7", tenant, Limits{})
	fmt.Println(session.Charge(DeviceBytes, 1<<29))
	fmt.Println(session.Charge(DeviceBytes, 1<<30))
	session.Close()
	fmt.Println(tenant.Used(DeviceBytes))
	// Output:
	// <nil>
	// quota exceeded: device-bytes limit 1073741824 on ledger "tenant alice" (using 536870912, asked for 1073741824 more)
	// 0
}
