package cuda

import (
	"errors"
	"testing"

	"github.com/gpuos/gpuos/internal/backend"
)

// The address table without a driver: what checkMap, checkUnmap,
// checkSetAccess and accessible decide.

const tG = 2 << 20

// tableWith returns a table with reservations [base, +8G) and [base+16G,
// +2G), and chunk c (4G) mapped at base+G (granules 1-2, accessible) and at
// base+4G (granules 4-7, from c's start, not accessible).
func tableWith(t *testing.T) (*addressSpace, *chunk, uint64) {
	as := newAddressSpace(tG)
	const base = 0x7000_0000_0000
	as.addReservation(base, 8*tG)
	as.addReservation(base+16*tG, 2*tG)
	c := &chunk{size: 4 * tG}
	for _, m := range []struct{ p, size, off uint64 }{{base + tG, 2 * tG, 2 * tG}, {base + 4*tG, 4 * tG, 0}} {
		r, err := as.checkMap(m.p, m.size, c, m.off)
		if err != nil {
			t.Fatal(err)
		}
		as.addMapping(&mapping{start: m.p, size: m.size, chunk: c, offset: m.off, resv: r})
	}
	must(t, as.checkSetAccess(base+tG, 2*tG))
	as.setAccess(base+tG, 2*tG)
	return as, c, base
}

func TestAddressTable(t *testing.T) {
	as, c, base := tableWith(t)
	other := &chunk{size: 2 * tG}
	bad := backend.ErrInvalidArgument
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"map a free granule", mapErr(as, base, tG, other, 0), nil},
		{"map over a mapping", mapErr(as, base, 2*tG, other, 0), bad},
		{"map across reservations", mapErr(as, base+7*tG, 2*tG, other, 0), bad},
		{"map past the reservation end", mapErr(as, base+16*tG+tG, 2*tG, other, 0), bad},
		{"map outside reservations", mapErr(as, base+10*tG, tG, other, 0), bad},
		{"map below every reservation", mapErr(as, 0, tG, other, 0), bad},
		{"map past the chunk", mapErr(as, base+16*tG, 2*tG, other, tG), bad},
		{"map an offset past the chunk", mapErr(as, base+16*tG, tG, other, 4*tG), bad},
		{"map unaligned", mapErr(as, base+16*tG+4096, tG, other, 0), bad},
		{"map unaligned offset", mapErr(as, base+16*tG, tG, other, 4096), bad},
		{"map zero", mapErr(as, base+16*tG, 0, other, 0), bad},
		{"map wrapping", mapErr(as, ^uint64(0)&^(tG-1), 2*tG, other, 0), bad},
		{"unmap a whole mapping", unmapErr(as, base+tG, 2*tG, 1), nil},
		{"unmap over a hole", unmapErr(as, base+tG, 7*tG, 2), bad}, // granule 3
		{"unmap part of a mapping", unmapErr(as, base+4*tG, 2*tG, 0), bad},
		{"unmap from the middle", unmapErr(as, base+5*tG, 3*tG, 0), bad},
		{"unmap unmapped", unmapErr(as, base, tG, 0), bad},
		{"set access over a mapping", as.checkSetAccess(base+4*tG, 4*tG), nil},
		{"set access over part of one", as.checkSetAccess(base+5*tG, tG), nil},
		{"set access with a hole", as.checkSetAccess(base+2*tG, 3*tG), bad},
		{"set access partial granule", as.checkSetAccess(base+tG, 100), bad},
		{"release with mappings", releaseErr(as, base, 8*tG), bad},
		{"release the empty one", releaseErr(as, base+16*tG, 2*tG), nil},
		{"release with the wrong size", releaseErr(as, base+16*tG, tG), bad},
		{"release the middle", releaseErr(as, base+17*tG, tG), bad},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.want) || (tt.want == nil && tt.err != nil) {
			t.Errorf("%s: err = %v, want %v", tt.name, tt.err, tt.want)
		}
	}
	if c.maps != 2 {
		t.Fatalf("chunk mapped %d times, want 2", c.maps)
	}
}

func mapErr(as *addressSpace, p, size uint64, c *chunk, off uint64) error {
	_, err := as.checkMap(p, size, c, off)
	return err
}

func unmapErr(as *addressSpace, p, size uint64, wantMappings int) error {
	ms, err := as.checkUnmap(p, size)
	if err == nil && len(ms) != wantMappings {
		return errors.New("wrong number of mappings")
	}
	return err
}

func releaseErr(as *addressSpace, p, size uint64) error {
	_, err := as.checkRelease(p, size)
	return err
}

func TestAccessible(t *testing.T) {
	as, _, base := tableWith(t)
	as.addGlobal(0x6000_0000_1000, 24, nil)
	tests := []struct {
		name string
		p, n uint64
		want bool
	}{
		{"inside the accessible mapping", base + tG + 100, 4096, true},
		{"all of it", base + tG, 2 * tG, true},
		{"across its two granules", base + 2*tG - 8, 16, true},
		{"empty", 0, 0, true},
		{"past its end", base + 3*tG - 8, 16, false},
		{"before its start", base + tG - 8, 16, false},
		{"mapped, not accessible", base + 4*tG, 16, false},
		{"unmapped", base, 16, false},
		{"nowhere", 8, 8, false},
		{"wrapping", ^uint64(0) - 3, 8, false},
		{"a module variable", 0x6000_0000_1000, 24, true},
		{"inside it", 0x6000_0000_1004, 8, true},
		{"past its end", 0x6000_0000_1010, 16, false},
		{"before it", 0x6000_0000_0ff8, 16, false},
	}
	for _, tt := range tests {
		if got := as.accessible(tt.p, tt.n); got != tt.want {
			t.Errorf("%s: accessible(%#x, %#x) = %v, want %v", tt.name, tt.p, tt.n, got, tt.want)
		}
	}
	// Access granted later, and taken away by unmapping.
	as.setAccess(base+4*tG, 4*tG)
	if as.accessible(base+2*tG, 6*tG) { // granule 3 is a hole
		t.Error("a range over a hole is accessible")
	}
	if !as.accessible(base+4*tG, 4*tG) {
		t.Error("SetAccess did not make the second mapping accessible")
	}
	ms, err := as.checkUnmap(base+4*tG, 4*tG)
	must(t, err)
	access := as.accessOf(ms)
	as.removeMappings(ms)
	if as.accessible(base+4*tG, 16) {
		t.Error("accessible after removeMappings")
	}
	as.restoreMappings(ms, access)
	if !as.accessible(base+4*tG, 4*tG) {
		t.Error("restoreMappings lost the access")
	}
	as.removeGlobals(nil)
	if as.accessible(0x6000_0000_1000, 4) {
		t.Error("a removed global is still accessible")
	}
}

// A mapping spanning leaves of the table (1 GiB each at 2 MiB granules).
func TestAddressTableAcrossLeaves(t *testing.T) {
	as := newAddressSpace(tG)
	const base = 0x7000_0000_0000 + (1<<30 - 2*tG) // two granules before a leaf boundary
	as.addReservation(base, 4*tG)
	c := &chunk{size: 4 * tG}
	r, err := as.checkMap(base, 4*tG, c, 0)
	must(t, err)
	as.addMapping(&mapping{start: base, size: 4 * tG, chunk: c, resv: r})
	as.setAccess(base, 4*tG)
	if !as.accessible(base, 4*tG) || !as.accessible(base+2*tG-1, 2) {
		t.Fatal("a range across a leaf boundary is not accessible")
	}
	if _, err := as.checkUnmap(base, 4*tG); err != nil {
		t.Fatal(err)
	}
	if len(as.leaves) != 2 {
		t.Fatalf("%d leaves", len(as.leaves))
	}
}

func TestCheckReserve(t *testing.T) {
	as := newAddressSpace(tG)
	for _, tc := range []struct {
		size, align, want uint64
		ok                bool
	}{
		{tG, 0, tG, true},
		{3 * tG, 1 << 30, 1 << 30, true},
		{0, 0, 0, false},
		{tG + 1, 0, 0, false},
		{tG, 3 * tG, 0, false},
		{tG, tG / 2, 0, false},
	} {
		got, err := as.checkReserve(tc.size, tc.align)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("checkReserve(%#x, %#x) = %#x, %v", tc.size, tc.align, got, err)
		}
	}
}
