package cuda_test

import (
	"fmt"

	"github.com/gpuos/gpuos/internal/abi/cuda"
)

// The CUDA runtime asks for cuMemcpyHtoD by base name and the version it was built
// against; the answer is the exported function with that ABI.
func ExampleResolve() {
	fmt.Println(cuda.Resolve("cuMemcpyHtoD", 2000, 0))
	fmt.Println(cuda.Resolve("cuMemcpyHtoD", 13000, 0))
	fmt.Println(cuda.Resolve("cuMemcpyHtoD", 13000, uint64(cuda.CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
	fmt.Println(cuda.Resolve("cuMemAllocAsync", 11000, 0))
	// Output:
	// cuMemcpyHtoD true
	// cuMemcpyHtoD_v2 true
	// cuMemcpyHtoD_v2_ptds true
	//  false
}

// A drop-in cuGetProcAddress_v2 reports why a lookup found nothing through symbolStatus.
func ExampleLookup() {
	for _, name := range []string{"cuGetProcAddress", "cuMemAllocAsync", "cuNoSuchFunction"} {
		s, status := cuda.Lookup(name, 11000, 0)
		fmt.Printf("%s: %q %v\n", name, s.Name, status)
	}
	// Output:
	// cuGetProcAddress: "" CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
	// cuMemAllocAsync: "" CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
	// cuNoSuchFunction: "" CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
}

// cuGetErrorName and cuGetErrorString answer from the CUresult table.
func ExampleCUresult_Description() {
	r := cuda.CUDA_ERROR_OUT_OF_MEMORY
	fmt.Printf("%d %s: %s\n", r, r.Name(), r.Description())
	// Output: 2 CUDA_ERROR_OUT_OF_MEMORY: out of memory
}

// The driver exports every symbol of this list; the drop-in library must too.
func ExampleSymbols() {
	n, perThread := 0, 0
	for _, s := range cuda.Symbols() {
		n++
		if s.Stream == cuda.StreamPTDS || s.Stream == cuda.StreamPTSZ {
			perThread++
		}
	}
	fmt.Println(n, "functions,", perThread, "per-thread default stream variants,", len(cuda.DataSymbols()), "data objects")
	// Output: 682 functions, 99 per-thread default stream variants, 25 data objects
}
