package shim

import (
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

func TestExportTablesWellFormed(t *testing.T) {
	seen := map[[16]byte]bool{}
	names := map[string]bool{}
	for _, tab := range ExportTables() {
		if seen[tab.UUID] || names[tab.Name] {
			t.Errorf("%s: duplicate UUID or name", tab.Name)
		}
		seen[tab.UUID], names[tab.Name] = true, true
		if tab.Slots < 1 || tab.Slots > 256 {
			t.Errorf("%s: %d slots", tab.Name, tab.Slots)
		}
		for _, s := range tab.Impl {
			if s.Index < 0 || s.Index >= tab.Slots || (s.Index == 0 && tab.SizeWord) {
				t.Errorf("%s: implemented slot %d outside the table or on its size word", tab.Name, s.Index)
			}
			if !strings.HasPrefix(s.Func, "gpuosET") {
				t.Errorf("%s: slot function %s", tab.Name, s.Func)
			}
		}
	}
}

// EXPORTTABLES.md names every table the shim serves.
func TestExportTablesDocumented(t *testing.T) {
	doc, err := os.ReadFile("EXPORTTABLES.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tab := range ExportTables() {
		id := hex.EncodeToString(tab.UUID[:])
		if !strings.Contains(string(doc), "`"+id+"`") || !strings.Contains(string(doc), tab.Name) {
			t.Errorf("EXPORTTABLES.md lacks %s (%s)", tab.Name, id)
		}
	}
}

func TestExportTableIndex(t *testing.T) {
	var log strings.Builder
	d := New(Config{Log: NewLog(&log, TraceTables)})
	for i, tab := range ExportTables() {
		if got := d.ExportTableIndex(tab.UUID); got != i {
			t.Errorf("%s: index %d, want %d", tab.Name, got, i)
		}
	}
	if got := d.ExportTableIndex([16]byte{1}); got != -1 {
		t.Errorf("unknown UUID: %d", got)
	}
	t.Setenv("GPUOS_SHIM_DENY_TABLES", "unknown_f8cff951, d4082055")
	for _, tab := range ExportTables() {
		denied := tab.Name == "unknown_f8cff951" || tab.Name == "integrity_check"
		if got := d.ExportTableIndex(tab.UUID); (got == -1) != denied {
			t.Errorf("%s with a deny list: index %d", tab.Name, got)
		}
	}
	if !strings.Contains(log.String(), "refused by GPUOS_SHIM_DENY_TABLES") {
		t.Errorf("log: %s", log.String())
	}
}

func TestExportSlotStub(t *testing.T) {
	var log strings.Builder
	d := New(Config{Log: NewLog(&log, TraceOff)})
	for i, tab := range ExportTables() {
		got := d.ExportSlotStub(i, 1, [6]uint64{1, 2, 3})
		want := uint64(801)
		if tab.Fill == FillSuccess {
			want = 0
		}
		if got != want {
			t.Errorf("%s: stub returned %d, want %d", tab.Name, got, want)
		}
	}
	if !strings.Contains(log.String(), "unimplemented slot 1 called") {
		t.Errorf("log: %s", log.String())
	}
}
