package mem

import (
	"errors"
	"slices"
	"testing"

	"github.com/gpuos/gpuos/internal/backend"
)

func TestFreeListPut(t *testing.T) {
	tests := []struct {
		name   string
		have   freeList
		s, n   uint64
		want   freeList
		wantOK bool
	}{
		{"into empty", nil, 4, 2, freeList{{4, 2}}, true},
		{"before, apart", freeList{{10, 2}}, 4, 2, freeList{{4, 2}, {10, 2}}, true},
		{"merge with previous", freeList{{0, 4}}, 4, 2, freeList{{0, 6}}, true},
		{"merge with next", freeList{{6, 4}}, 4, 2, freeList{{4, 6}}, true},
		{"merge both", freeList{{0, 4}, {6, 4}}, 4, 2, freeList{{0, 10}}, true},
		{"overlaps previous", freeList{{0, 5}}, 4, 2, freeList{{0, 5}}, false},
		{"overlaps next", freeList{{5, 5}}, 4, 2, freeList{{5, 5}}, false},
		{"inside one", freeList{{0, 10}}, 4, 2, freeList{{0, 10}}, false},
		{"zero length", nil, 4, 0, nil, false},
		{"wraps", nil, ^uint64(0), 2, nil, false},
	}
	for _, tt := range tests {
		l := slices.Clone(tt.have)
		ok := l.put(tt.s, tt.n)
		if ok != tt.wantOK || !slices.Equal(l, tt.want) {
			t.Errorf("%s: put(%d, %d) on %v = %v, %v; want %v, %v", tt.name, tt.s, tt.n, tt.have, l, ok, tt.want, tt.wantOK)
		}
	}
}

func TestFreeListFit(t *testing.T) {
	l := freeList{{0, 3}, {10, 8}, {20, 4}, {30, 5}}
	for _, tt := range []struct {
		n                   uint64
		wantFirst, wantBest int
	}{
		{1, 0, 0}, {4, 1, 2}, {5, 1, 3}, {8, 1, 1}, {9, -1, -1},
	} {
		if f, b := l.firstFit(tt.n), l.bestFit(tt.n); f != tt.wantFirst || b != tt.wantBest {
			t.Errorf("fit(%d): first %d best %d, want %d %d", tt.n, f, b, tt.wantFirst, tt.wantBest)
		}
	}
	if s := l.takeFront(2, 4); s != 20 || len(l) != 3 || l.total() != 16 || l.largest() != 8 {
		t.Errorf("takeFront whole extent: start %d, list %v", s, l)
	}
}

// A window whose opening fails leaves nothing reserved or mapped.
func TestOpenWindowFailure(t *testing.T) {
	for _, op := range []string{"Reserve", "Map", "SetAccess"} {
		t.Run(op, func(t *testing.T) {
			h := newHarness(t, testTotal, Options{SinkChunk: testGran})
			base := h.dev.counts()
			h.dev.fail = func(o string) error {
				if o == op {
					return backend.ErrContextLost
				}
				return nil
			}
			_, err := h.m.OpenWindow(h.m.Tenant("a"))
			h.dev.fail = nil
			if !errors.Is(err, backend.ErrContextLost) {
				t.Fatalf("OpenWindow: %v", err)
			}
			if c := h.dev.counts(); c.mappings != base.mappings || c.reservations != base.reservations {
				t.Errorf("after a failed OpenWindow: %+v, want as before (%+v)", c, base)
			}
			if st := h.m.Stats(); st.Device.Windows != 0 || st.Tenants[0].Windows != 0 {
				t.Errorf("stats after a failed OpenWindow: %+v", st)
			}
			h.open(h.m.Tenant("a")) // and the next one works
		})
	}
}
