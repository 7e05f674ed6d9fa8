package shim

import "testing"

func TestTable(t *testing.T) {
	type obj struct{ n int }
	tab := newTable[obj](kindStream)
	a, b := &obj{1}, &obj{2}
	ha, hb := tab.add(a), tab.add(b)
	if ha == hb || ha == 0 || handleKind(ha) != kindStream {
		t.Fatalf("handles %#x %#x", ha, hb)
	}
	for _, special := range []uint64{0, 1, 2} {
		if tab.get(special) != nil {
			t.Errorf("get(%d) found an object", special)
		}
	}
	if tab.get(ha) != a || tab.get(hb) != b {
		t.Fatal("get does not return what add stored")
	}
	other := newTable[obj](kindEvent)
	if other.get(ha) != nil {
		t.Error("a stream handle names an object in the event table")
	}
	if tab.remove(ha) != a || tab.get(ha) != nil || tab.remove(ha) != nil {
		t.Error("remove does not forget the handle")
	}
	hc := tab.add(&obj{3})
	if hc == ha {
		t.Errorf("a reused slot gave the stale handle %#x again", ha)
	}
	if uint32(hc) != uint32(ha) {
		t.Errorf("slot not reused: %#x after %#x", hc, ha)
	}
	if n := len(tab.each()); n != 2 {
		t.Errorf("each: %d objects, want 2", n)
	}
	if tab.get(ha^1<<40) != nil || tab.get(0xdeadbeef) != nil {
		t.Error("forged handles found objects")
	}
}

// Lookups take no lock: they run while other goroutines add and remove, and
// a handle keeps naming its object across the table's growth.
func TestTableConcurrent(t *testing.T) {
	type obj struct{ n int }
	tab := newTable[obj](kindEvent)
	const keep = 3 * chunkSize
	kept := make([]uint64, keep)
	objs := make([]*obj, keep)
	for i := range kept {
		objs[i] = &obj{i}
		kept[i] = tab.add(objs[i])
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			h := tab.add(&obj{-1})
			if tab.remove(h) == nil {
				t.Error("remove of a fresh handle found nothing")
				return
			}
		}
	}()
	for round := 0; round < 50; round++ {
		for i, h := range kept {
			if tab.get(h) != objs[i] {
				t.Fatalf("round %d: handle %#x no longer names object %d", round, h, i)
			}
		}
	}
	close(stop)
	<-done
	if n := len(tab.each()); n != keep {
		t.Errorf("each: %d objects, want %d", n, keep)
	}
}
