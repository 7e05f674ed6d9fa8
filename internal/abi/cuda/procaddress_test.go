package cuda_test

import (
	"os"
	"strings"
	"testing"

	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/abi/cuda/internal/abitest"
)

func readCases(t testing.TB) []abitest.Case {
	t.Helper()
	data, err := os.ReadFile("testdata/procaddress.txt")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := abitest.ParseCases(data)
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestResolveTrace replays every cuGetProcAddress lookup traced through driver 580 (and
// the rule-derived edge cases after them).
func TestResolveTrace(t *testing.T) {
	cases := readCases(t)
	traced := 0
	for _, c := range cases {
		if c.Traced {
			traced++
		}
		have, ok := cuda.Resolve(c.Name, c.CUDAVersion, c.Flags)
		if !ok {
			have = abitest.NotFound
		}
		if have != c.Symbol {
			t.Errorf("procaddress.txt:%d: Resolve(%q, %d, %d) = %s, want %s", c.Line, c.Name, c.CUDAVersion, c.Flags, have, c.Symbol)
		}
	}
	if traced < 450 {
		t.Errorf("only %d traced lookups", traced)
	}
}

func TestLookupStatus(t *testing.T) {
	tests := []struct {
		name    string
		version int
		flags   uint64
		symbol  string
		status  cuda.CUdriverProcAddressQueryResult
	}{
		{"cuMemAlloc", 13000, 0, "cuMemAlloc_v2", cuda.CU_GET_PROC_ADDRESS_SUCCESS},
		{"cuMemAllocAsync", 11000, 0, "", cuda.CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT},
		{"cuMemAllocAsync", 11000, 2, "", cuda.CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT},
		{"cuNoSuchThing", 13000, 0, "", cuda.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND},
		{"", 13000, 0, "", cuda.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND},
		{"cuInit", 13000, 8, "", cuda.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND},
		{"cuLaunchKernel", 13000, 2, "cuLaunchKernel_ptsz", cuda.CU_GET_PROC_ADDRESS_SUCCESS},
		{"cuLaunchKernel", 13000, 1, "cuLaunchKernel", cuda.CU_GET_PROC_ADDRESS_SUCCESS},
	}
	for _, tt := range tests {
		s, status := cuda.Lookup(tt.name, tt.version, tt.flags)
		if s.Name != tt.symbol || status != tt.status {
			t.Errorf("Lookup(%q, %d, %d) = %q, %v; want %q, %v", tt.name, tt.version, tt.flags, s.Name, status, tt.symbol, tt.status)
		}
	}
}

func TestValidProcAddressFlags(t *testing.T) {
	for flags, want := range map[uint64]bool{0: true, 1: true, 2: true, 3: true, 4: false, 1 << 63: false} {
		if have := cuda.ValidProcAddressFlags(flags); have != want {
			t.Errorf("ValidProcAddressFlags(%d) = %v, want %v", flags, have, want)
		}
	}
}

// TestEveryEntryReachable makes sure each entry of the table is what its own (API, Since)
// request resolves to, so no entry is shadowed by another.
func TestEveryEntryReachable(t *testing.T) {
	for _, s := range cuda.Symbols() {
		if s.API == "" {
			if _, ok := cuda.Resolve(s.Name, cuda.CUDA_VERSION, 0); ok {
				t.Errorf("%s resolves though it is never handed out", s.Name)
			}
			continue
		}
		flags := uint64(cuda.CU_GET_PROC_ADDRESS_DEFAULT)
		if s.Stream == cuda.StreamPTDS || s.Stream == cuda.StreamPTSZ {
			flags = uint64(cuda.CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
		}
		if have, _ := cuda.Resolve(s.API, s.Since, flags); have != s.Name {
			t.Errorf("Resolve(%s, %d, %d) = %q, want %q", s.API, s.Since, flags, have, s.Name)
		}
	}
}

// TestPerThreadVariantsShareABI checks that whenever a per-thread lookup finds a _ptds or
// _ptsz variant, it is the variant of the very symbol a default lookup at that version
// finds: the two must have the same prototype.
func TestPerThreadVariantsShareABI(t *testing.T) {
	versions := map[string][]int{}
	for _, s := range cuda.Symbols() {
		if s.API != "" {
			versions[s.API] = append(versions[s.API], s.Since)
		}
	}
	for api, vs := range versions {
		for _, v := range vs {
			def, _ := cuda.Resolve(api, v, 0)
			pt, ok := cuda.Resolve(api, v, uint64(cuda.CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
			if !ok {
				continue // the per-thread form is newer than v: nothing is handed out
			}
			if pt != def && strings.TrimSuffix(strings.TrimSuffix(pt, "_ptds"), "_ptsz") != def {
				t.Errorf("%s at %d: per-thread %s is not a variant of %s", api, v, pt, def)
			}
		}
	}
}

// FuzzLookup checks that any request gets a consistent answer and never a panic: a found
// symbol belongs to the name asked, is no newer than the version asked, and is a
// per-thread variant only when asked for one.
func FuzzLookup(f *testing.F) {
	for _, c := range readCases(f) {
		f.Add(c.Name, c.CUDAVersion, c.Flags)
	}
	f.Fuzz(func(t *testing.T, name string, version int, flags uint64) {
		s, status := cuda.Lookup(name, version, flags)
		switch status {
		case cuda.CU_GET_PROC_ADDRESS_SUCCESS:
			if s.API != name || s.Since > version {
				t.Fatalf("Lookup(%q, %d, %d) = %+v", name, version, flags, s)
			}
			perThread := s.Stream == cuda.StreamPTDS || s.Stream == cuda.StreamPTSZ
			if perThread && flags&uint64(cuda.CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) == 0 {
				t.Fatalf("Lookup(%q, %d, %d) = per-thread %s", name, version, flags, s.Name)
			}
		case cuda.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, cuda.CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT:
			if s != (cuda.Symbol{}) {
				t.Fatalf("Lookup(%q, %d, %d) = %+v with status %v", name, version, flags, s, status)
			}
		default:
			t.Fatalf("Lookup(%q, %d, %d): status %v", name, version, flags, status)
		}
		sym, ok := cuda.Resolve(name, version, flags)
		if ok != (status == cuda.CU_GET_PROC_ADDRESS_SUCCESS) || sym != s.Name {
			t.Fatalf("Resolve(%q, %d, %d) = %q, %v; Lookup gave %q, %v", name, version, flags, sym, ok, s.Name, status)
		}
	})
}
