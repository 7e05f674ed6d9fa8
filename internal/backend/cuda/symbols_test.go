package cuda

import (
	"testing"

	"github.com/gpuos/gpuos/internal/abi/cuda"
)

// Every entry point the backend resolves is a function the 580 driver
// exports, and it is the variant cuGetProcAddress hands out for CUDA 13.0
// (the versioned one: cuMemGetInfo_v2, not cuMemGetInfo), except the older
// twins kept as fallbacks.
func TestEntryPointsMatchTheDriver(t *testing.T) {
	if !haveCgo {
		t.Skip("built without cgo")
	}
	exported := map[string]cuda.Symbol{}
	for _, s := range cuda.Symbols() {
		exported[s.Name] = s
	}
	seen := map[string]bool{}
	for i := range symbolCount {
		name := symbolName(i)
		if seen[name] {
			t.Errorf("%s resolved twice", name)
		}
		seen[name] = true
		s, ok := exported[name]
		if !ok {
			t.Errorf("%s: not exported by the 580 driver", name)
			continue
		}
		if s.Returns != "CUresult" {
			t.Errorf("%s returns %q; the C side calls it as returning CUresult", name, s.Returns)
		}
		want, ok := cuda.Resolve(s.API, cuda.CUDA_VERSION, uint64(cuda.CU_GET_PROC_ADDRESS_DEFAULT))
		if !ok {
			t.Errorf("%s: cuGetProcAddress(%q) finds nothing", name, s.API)
			continue
		}
		if want != name && !isFallback[name] {
			t.Errorf("%s: CUDA 13.0 resolves %s to %s; use that variant", name, s.API, want)
		}
		if isFallback[name] && !seen[fallbackOf(name)] && symbolIndex(fallbackOf(name)) < 0 {
			t.Errorf("%s is a fallback of %s, which the backend does not resolve", name, fallbackOf(name))
		}
	}
	for newer, older := range fallbacks {
		if symbolIndex(newer) < 0 || symbolIndex(older) < 0 {
			t.Errorf("fallback %s → %s: not both resolved", newer, older)
		}
	}
}

func fallbackOf(older string) string {
	for n, o := range fallbacks {
		if o == older {
			return n
		}
	}
	return ""
}

func symbolIndex(name string) int {
	for i := range symbolCount {
		if symbolName(i) == name {
			return i
		}
	}
	return -1
}

// The numbers the C side spells itself are the ABI's.
func TestCConstantsMatchTheABI(t *testing.T) {
	if !haveCgo {
		t.Skip("built without cgo")
	}
	tests := []struct {
		name string
		c    int
		want int64
	}{
		{"CU_JIT_ERROR_LOG_BUFFER", 0, int64(cuda.CU_JIT_ERROR_LOG_BUFFER)},
		{"CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES", 1, int64(cuda.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)},
		{"CU_LAUNCH_PARAM_END", 2, cuda.CU_LAUNCH_PARAM_END},
		{"CU_LAUNCH_PARAM_BUFFER_POINTER", 3, cuda.CU_LAUNCH_PARAM_BUFFER_POINTER},
		{"CU_LAUNCH_PARAM_BUFFER_SIZE", 4, cuda.CU_LAUNCH_PARAM_BUFFER_SIZE},
		{"CU_STREAM_NON_BLOCKING", 5, int64(cuda.CU_STREAM_NON_BLOCKING)},
		{"CU_MEMHOSTALLOC_PORTABLE", 6, cuda.CU_MEMHOSTALLOC_PORTABLE},
		{"CU_MEMHOSTREGISTER_PORTABLE", 7, cuda.CU_MEMHOSTREGISTER_PORTABLE},
		{"CUDA_ERROR_INVALID_VALUE", 8, int64(cuda.CUDA_ERROR_INVALID_VALUE)},
		{"CUDA_ERROR_NOT_READY", 9, int64(cuda.CUDA_ERROR_NOT_READY)},
		{"sizeof(CUmemAllocationProp)", 10, cuda.SizeofCUmemAllocationProp},
		{"sizeof(CUmemAccessDesc)", 11, cuda.SizeofCUmemAccessDesc},
		{"sizeof(CUuuid)", 12, cuda.SizeofCUuuid},
		{"CU_MEMHOSTREGISTER_DEVICEMAP", 13, cuda.CU_MEMHOSTREGISTER_DEVICEMAP},
	}
	for _, tt := range tests {
		if got := cConstant(tt.c); got != tt.want {
			t.Errorf("%s: C has %d, the ABI %d", tt.name, got, tt.want)
		}
	}
}
