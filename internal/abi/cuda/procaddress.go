package cuda

import (
	"sort"
	"sync"
)

// ValidProcAddressFlags reports whether cuGetProcAddress accepts flags: exactly one of
// CU_GET_PROC_ADDRESS_DEFAULT, _LEGACY_STREAM or _PER_THREAD_DEFAULT_STREAM. A drop-in
// driver answers CUDA_ERROR_INVALID_VALUE for anything else; [Lookup] finds nothing.
func ValidProcAddressFlags(flags uint64) bool {
	// DEFAULT, LEGACY_STREAM and PER_THREAD_DEFAULT_STREAM are 0, 1 and 2. Both
	// stream bits at once (3) are accepted: driver 580 answers the per-thread
	// variant (probed on the H100).
	return flags <= uint64(CU_GET_PROC_ADDRESS_LEGACY_STREAM|CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
}

// Lookup returns the exported function that cuGetProcAddress(name, cudaVersion, flags)
// hands out, with the status the driver reports through symbolStatus:
//
//   - name is an API base name ("cuMemAlloc", not "cuMemAlloc_v2"); the answer is its
//     newest variant whose Since is <= cudaVersion;
//   - with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the newest per-thread (_ptds or
//     _ptsz) variant <= cudaVersion wins if there is one; functions without one, and
//     versions before any (per-thread variants start at 7.0), get the default variant;
//   - CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND for an unknown name, the empty name or flags
//     that [ValidProcAddressFlags] rejects; CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT when
//     every variant is newer than cudaVersion.
//
// The real driver returns CUDA_SUCCESS with a NULL function in both not-found cases, and
// CUDA_ERROR_INVALID_VALUE when cudaVersion is newer than the driver (CUDA_VERSION here):
// that is the caller's to check.
func Lookup(name string, cudaVersion int, flags uint64) (Symbol, CUdriverProcAddressQueryResult) {
	idx := procIndex()[name]
	if len(idx) == 0 || !ValidProcAddressFlags(flags) {
		return Symbol{}, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
	}
	perThread := CUdriverProcAddress_flags(flags)&CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM != 0
	var def, pt *Symbol
	hasPerThread := false
	for _, i := range idx { // ascending Since: the last match is the newest
		s := &symbols[i]
		if s.Stream == StreamPTDS || s.Stream == StreamPTSZ {
			hasPerThread = true
		}
		if s.Since > cudaVersion {
			continue
		}
		switch s.Stream {
		case StreamLegacy:
			def = s
		case StreamPTDS, StreamPTSZ:
			if perThread {
				pt = s
			}
		}
	}
	switch {
	case pt != nil:
		return *pt, CU_GET_PROC_ADDRESS_SUCCESS
	case perThread && hasPerThread:
		// Asked for the per-thread form of a function that has one, at a version
		// older than it: driver 580 hands out nothing (probed on the H100).
		return Symbol{}, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
	case def != nil:
		return *def, CU_GET_PROC_ADDRESS_SUCCESS
	}
	return Symbol{}, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
}

// Resolve returns the name of the exported function cuGetProcAddress(name, cudaVersion,
// flags) hands out, or ok false if it hands out none. See [Lookup].
func Resolve(name string, cudaVersion int, flags uint64) (symbol string, ok bool) {
	s, status := Lookup(name, cudaVersion, flags)
	if status != CU_GET_PROC_ADDRESS_SUCCESS {
		return "", false
	}
	return s.Name, true
}

// procIndex maps each API name to the indices of its symbols, by ascending Since. It is
// built once and never changed.
var procIndex = sync.OnceValue(func() map[string][]int {
	m := make(map[string][]int, len(symbols))
	for i := range symbols {
		if api := symbols[i].API; api != "" {
			m[api] = append(m[api], i)
		}
	}
	for _, idx := range m {
		sort.SliceStable(idx, func(a, b int) bool { return symbols[idx[a]].Since < symbols[idx[b]].Since })
	}
	return m
})
