package shim

import "testing"

func TestMemMap(t *testing.T) {
	var m memMap
	a := &alloc{base: 0x1000, size: 0x100, buf: nil}
	b := &alloc{base: 0x3000, size: 0x1000}
	m.insert(b)
	m.insert(a)
	tests := []struct {
		addr, n uint64
		want    *alloc
	}{
		{0x1000, 1, a}, {0x10ff, 1, a}, {0x1000, 0x100, a}, {0x1001, 0x100, nil}, {0x1100, 1, nil},
		{0xfff, 1, nil}, {0x3800, 0x800, b}, {0x3800, 0x801, nil}, {0x4000, 1, nil}, {0, 1, nil},
		{0x3000, 1 << 63, nil},
	}
	for _, tt := range tests {
		if got := m.find(tt.addr, tt.n); got != tt.want {
			t.Errorf("find(%#x, %#x) = %v, want %v", tt.addr, tt.n, got, tt.want)
		}
	}
	if !m.remove(a) || m.remove(a) || m.find(0x1000, 1) != nil {
		t.Error("remove")
	}
}

func TestHostMapRefusesOverlaps(t *testing.T) {
	var m hostMap
	if !m.insert(&hostRegion{base: 0x10000, size: 0x1000}) {
		t.Fatal("insert")
	}
	for _, r := range []struct{ base, size uint64 }{{0x10000, 1}, {0xff00, 0x200}, {0x10fff, 0x10}, {0xf000, 0x3000}} {
		if m.insert(&hostRegion{base: r.base, size: r.size}) {
			t.Errorf("overlapping region %#x+%#x accepted", r.base, r.size)
		}
	}
	if !m.insert(&hostRegion{base: 0x11000, size: 0x10}) || !m.insert(&hostRegion{base: 0xf000, size: 0x1000}) {
		t.Error("adjacent regions refused")
	}
	if m.removeAt(0x10000, true) != nil {
		t.Error("removed a registered region as an allocation")
	}
	if m.removeAt(0x10000, false) == nil || m.find(0x10000, 1) != nil {
		t.Error("removeAt")
	}
}
