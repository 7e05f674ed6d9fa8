package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pkgDir is package cuda, whose data files the generator reads.
const pkgDir = "../.."

// TestGeneratedUpToDate fails when zenums.go or zsymbols.go no longer match the data
// files: run go generate ./internal/abi/cuda.
func TestGeneratedUpToDate(t *testing.T) {
	files, err := generate(pkgDir)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		have, err := os.ReadFile(filepath.Join(pkgDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, want) {
			t.Errorf("%s is out of date: run go generate ./internal/abi/cuda", name)
		}
	}
}

func TestRunCheck(t *testing.T) {
	if err := run(pkgDir, true); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{enumsFile, entryPointsFile, symbolsFile, dataSymbolsFile} {
		data, err := os.ReadFile(filepath.Join(pkgDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(dir, true); err == nil {
		t.Fatal("check passed with no generated files present")
	}
	if err := run(dir, false); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, true); err != nil {
		t.Fatalf("check after writing: %v", err)
	}
}

func TestParseEnumsErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"stray end", "end\n", "stray end"},
		{"outside group", "CU_X 1\n", "outside a group"},
		{"unterminated", "enum CUx CUx_enum uint32\nCU_X 1\n", "not ended"},
		{"nested", "enum CUx CUx_enum uint32\nenum CUy CUy_enum uint32\n", "not ended"},
		{"empty", "enum CUx CUx_enum uint32\nend\n", "empty group"},
		{"bad underlying", "enum CUx CUx_enum int64\nCU_X 1\nend\n", "underlying"},
		{"bad value", "enum CUx CUx_enum uint32\nCU_X one\nend\n", "value of CU_X"},
		{"negative unsigned", "enum CUx CUx_enum uint32\nCU_X -1\nend\n", "out of range"},
		{"duplicate name", "macro -\nCU_X 1\nCU_X 2\nend\n", "already defined"},
		{"duplicate enum", "enum CUx CUx_enum uint32\nCU_X 1\nend\nenum CUx CUx_enum uint32\nCU_Y 1\nend\n", "already defined"},
		{"bad name", "macro -\n1X 1\nend\n", "bad name"},
		{"bad quote", "macro -\nCU_X 1 \"open\nend\n", "quoted"},
		{"text after quote", "macro -\nCU_X 1 \"a\" b\nend\n", "after quoted"},
		{"too many fields", "macro -\nCU_X 1 2 3\nend\n", "NAME VALUE"},
		{"bad header", "enum CUx\n", "malformed group header"},
		{"negative pointer", "pointer void\nCU_P -1\nend\n", "out of range"},
	}
	for _, tt := range tests {
		_, err := parseEnums([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestParseEnums(t *testing.T) {
	in := "# comment\nenum CUx CUx_enum int32\nCU_A 0 \"the first\"\nCU_B -1\nCU_C 0\nend\n\nmacro -\nCU_M 0x10\nend\n"
	groups, err := parseEnums([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || len(groups[0].Values) != 3 || len(groups[1].Values) != 1 {
		t.Fatalf("groups = %+v", groups)
	}
	g := groups[0]
	if g.Type != "CUx" || g.Tag != "CUx_enum" || g.Underlying != "int32" {
		t.Errorf("header = %+v", g)
	}
	if v := g.Values[0]; v.Name != "CU_A" || v.Value != 0 || v.Doc != "the first" || v.Alias {
		t.Errorf("CU_A = %+v", v)
	}
	if v := g.Values[2]; !v.Alias {
		t.Errorf("CU_C is not marked as an alias of CU_A")
	}
	if v := groups[1].Values[0]; v.Value != 16 {
		t.Errorf("CU_M = %d, want 16", v.Value)
	}
}

func TestParseEntryPointsErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"fields", "cuX cuX 2000 -\n", "want SYMBOL"},
		{"bad symbol", "1cu cuX 2000 - CUresult\n", "bad symbol"},
		{"duplicate", "cuX cuX 2000 - CUresult\ncuX cuX 3000 - CUresult\n", "already listed"},
		{"half given", "cuX - 2000 - CUresult\n", "both"},
		{"bad version", "cuX cuX 20x - CUresult\n", "bad CUDA version"},
		{"odd version", "cuX cuX 2001 - CUresult\n", "bad CUDA version"},
		{"bad variant", "cuX_ptds cuX 7000 pt CUresult\n", "bad stream variant"},
		{"suffix", "cuX cuX 7000 ptds CUresult\n", "lacks the _ptds suffix"},
		{"return type", "cuX cuX 2000 - int\n", "unknown return type"},
	}
	for _, tt := range tests {
		_, err := parseEntryPoints([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestCrossCheck(t *testing.T) {
	entries := []entry{
		{Symbol: "cuA", API: "cuA", Since: 2000},
		{Symbol: "cuA_v2", API: "cuA", Since: 2000},
		{Symbol: "cuGone", API: "cuGone", Since: 2000},
	}
	err := crossCheck(entries, []string{"cuA", "cuA_v2", "cuB", "cudbgX"}, []string{"cudbgX"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"both answer cuA", "cuGone is not exported", "cuB has no line", "cudbgX is listed both"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// head returns the first n lines of a data file: a seed small enough for the fuzzer to
// mutate quickly (the whole files are parsed by TestGeneratedUpToDate).
func head(f *testing.F, name string, n int) []byte {
	data, err := os.ReadFile(filepath.Join(pkgDir, name))
	if err != nil {
		f.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	return []byte(strings.Join(lines[:min(n, len(lines))], ""))
}

func FuzzParseEnums(f *testing.F) {
	f.Add(head(f, enumsFile, 30))
	f.Add([]byte("enum CUx CUx_enum uint32\nCU_A 1 \"x\"\nend\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		groups, err := parseEnums(data)
		if err != nil {
			return
		}
		names := map[string]bool{}
		for _, g := range groups {
			if len(g.Values) == 0 {
				t.Fatalf("empty group %s accepted", g.Type)
			}
			for _, v := range g.Values {
				if names[v.Name] || !isIdent(v.Name) || checkRange(g, v.Value) != nil {
					t.Fatalf("bad value %+v accepted", v)
				}
				names[v.Name] = true
			}
		}
	})
}

func FuzzParseEntryPoints(f *testing.F) {
	f.Add(head(f, entryPointsFile, 30))
	f.Add([]byte("cuX_v2_ptds cuX 7000 ptds CUresult\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseEntryPoints(data)
		if err != nil {
			return
		}
		for _, e := range entries {
			if !isIdent(e.Symbol) || (e.API == "") != (e.Since == 0) || (e.Stream != "" && !strings.HasSuffix(e.Symbol, "_"+e.Stream)) {
				t.Fatalf("bad entry %+v accepted", e)
			}
		}
	})
}
