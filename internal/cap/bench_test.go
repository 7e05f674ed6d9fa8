package cap

import "testing"

func benchTable(b *testing.B) (*Table, Handle) {
	sp := NewSpace()
	tab := sp.NewTable(0)
	sess, err := tab.Insert(KindSession, "s", Ref{}, AllRights, nil)
	if err != nil {
		b.Fatal(err)
	}
	sref, _ := tab.Ref(sess, KindSession, 0)
	var k Handle
	for i := range 1000 { // a table with some history
		k, err = tab.Insert(KindKernel, i, sref, RightLaunch, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
	return tab, k
}

// BenchmarkLookup is the launch path: one kernel handle checked per launch.
func BenchmarkLookup(b *testing.B) {
	tab, k := benchTable(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tab.Lookup(k, KindKernel, RightLaunch); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLookupParallel(b *testing.B) {
	tab, k := benchTable(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := tab.Lookup(k, KindKernel, RightLaunch); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkInsertRelease(b *testing.B) {
	tab, _ := benchTable(b)
	b.ReportAllocs()
	for b.Loop() {
		h, err := tab.Insert(KindFence, nil, Ref{}, 0, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := tab.Release(h); err != nil {
			b.Fatal(err)
		}
	}
}
