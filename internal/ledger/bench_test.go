package ledger

import "testing"

// BenchmarkChargeRefund is the launch path: one in-flight submission charged
// to a session and its tenant, then refunded at completion.
func BenchmarkChargeRefund(b *testing.B) {
	tenant, _ := New("t", nil, Limits{InFlight: 1 << 20})
	s, _ := New("s", tenant, Limits{InFlight: 1 << 10})
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Charge(InFlight, 1); err != nil {
			b.Fatal(err)
		}
		if err := s.Refund(InFlight, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// Sessions of one tenant launching in parallel share the tenant's counter.
func BenchmarkChargeRefundParallel(b *testing.B) {
	tenant, _ := New("t", nil, Limits{InFlight: 1 << 20})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		s, _ := New("s", tenant, Limits{InFlight: 1 << 10})
		for pb.Next() {
			if err := s.Charge(InFlight, 1); err != nil {
				b.Error(err)
				return
			}
			if err := s.Refund(InFlight, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
