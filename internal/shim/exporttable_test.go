package shim

import (
	"encoding/hex"
	"os"
	"strings"
	"testing"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
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
		// Every slot is one thing: the size word, a number, NULL or a function.
		taken := map[int]string{}
		take := func(i int, what string) {
			if i < 0 || i >= tab.Slots {
				t.Errorf("%s: %s at slot %d outside the table", tab.Name, what, i)
			}
			if prev, ok := taken[i]; ok {
				t.Errorf("%s: slot %d is both %s and %s", tab.Name, i, prev, what)
			}
			taken[i] = what
		}
		if tab.SizeWord {
			take(0, "the size word")
		}
		for _, s := range tab.Impl {
			take(s.Index, s.Func)
		}
		for _, w := range tab.Words {
			take(w.Index, "a number")
			// A sub-table's size word covers slots that exist.
			if w.Value%8 != 0 || w.Index+int(w.Value/8) > tab.Slots {
				t.Errorf("%s: sub-table at %d of %d bytes runs past the table's %d slots", tab.Name, w.Index, w.Value, tab.Slots)
			}
		}
		for _, n := range tab.Null {
			take(n, "NULL")
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
	t.Setenv("GPUOS_SHIM_STUB_SUCCESS", "f8cff951")
	for i, tab := range ExportTables() {
		got := d.ExportSlotStub(i, 2, [6]uint64{})
		if want := tab.Name == "unknown_f8cff951" || tab.Fill == FillSuccess; (got == 0) != want {
			t.Errorf("%s with GPUOS_SHIM_STUB_SUCCESS: stub returned %d", tab.Name, got)
		}
	}
}

func TestRefusedTableResult(t *testing.T) {
	tests := []struct {
		env  string
		want Result
	}{
		{"", cu.CUDA_ERROR_INVALID_VALUE},
		{"500", cu.CUDA_ERROR_NOT_FOUND},
		{"CUDA_ERROR_NOT_FOUND", cu.CUDA_ERROR_NOT_FOUND},
		{" 801 ", cu.CUDA_ERROR_NOT_SUPPORTED},
		{"99999", cu.CUDA_ERROR_INVALID_VALUE},
		{"nonsense", cu.CUDA_ERROR_INVALID_VALUE},
	}
	for _, tt := range tests {
		t.Setenv("GPUOS_SHIM_DENY_RESULT", tt.env)
		if got := RefusedTableResult(); got != tt.want {
			t.Errorf("GPUOS_SHIM_DENY_RESULT=%q: %s, want %s", tt.env, got.Name(), tt.want.Name())
		}
	}
	t.Setenv("GPUOS_SHIM_DENY_TABLES", "f8cff951,tools_tls")
	for _, tt := range []struct {
		uuid string
		want bool
	}{
		{"f8cff95121468b4eb9e2fb469e7c0dd9", true},
		{"42d85a8123f6cb478298f6e78a3aecdc", true},
		{"6bd5fb6c5bf4e74a8987d93912fd9df9", false},
		{"00112233445566778899aabbccddeeff", false},
	} {
		if got := Denied(uuid(tt.uuid)); got != tt.want {
			t.Errorf("Denied(%s) = %v", tt.uuid, got)
		}
	}
}
