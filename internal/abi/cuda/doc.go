// Package cuda mirrors the ABI of the CUDA 13.0 driver API (libcuda.so.1 of driver 580):
// CUresult and the other enumerations, the integer and pointer #define constants, the
// memory layout of the structures the supported calls take, the list of symbols the real
// driver exports, and the table cuGetProcAddress answers from. It is data, not logic: the
// real-GPU backend (internal/backend/cuda, which dlopens libcuda.so.1 without CUDA
// headers), the drop-in libcuda.so.1 (internal/shim, cmd/libcuda) and the C test programs
// (through include/cuda.h) share it, so every one of them spells a value the same way.
//
// # Naming
//
// Types and constants keep their C names (CUresult, CUDA_ERROR_INVALID_VALUE,
// CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CUDA_MEMCPY2D): a mirror is read side by side
// with cuda.h and the driver documentation, and a name that differs would have to be
// translated at every use. Struct fields are the C field names with the first letter upper
// case. Pointers inside structures are uint64 addresses; the layouts are those of 64-bit
// Linux (amd64, arm64), the only targets of the driver.
//
// # Entry points
//
// cuGetProcAddress(name, cudaVersion, flags) hands out, for a base name such as
// "cuMemAlloc", the newest variant whose version is <= cudaVersion ("cuMemAlloc" from 2.0,
// "cuMemAlloc_v2" from 3.2); CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM selects the
// _ptds/_ptsz variant of functions that use the default stream. [Lookup] and [Resolve]
// reproduce that from the table in entrypoints.txt, which covers every function of
// [Symbols]; testdata/procaddress.txt holds the lookups traced through the real driver that
// the tests replay.
//
// # Generated files and checks against the real header
//
// zenums.go (from enums.txt) and zsymbols.go (from entrypoints.txt and the symbol lists in
// testdata/) are written by
//
//	go generate ./internal/abi/cuda
//
// and a test fails when they are stale. The tests compile a C program against the
// project's include/cuda.h and compare every constant and structure layout with this
// package. To check both against NVIDIA's own header and driver, run on a machine with
// the CUDA toolkit and a GPU:
//
//	go run ./internal/abi/cuda/internal/verify > verify.c
//	gcc -std=gnu11 -I/usr/local/cuda/include verify.c -o verify && ./verify
//	gcc -std=gnu11 -I/usr/local/cuda/include -DCUDA_API_PER_THREAD_DEFAULT_STREAM verify.c -o verify && ./verify
//	go run ./internal/abi/cuda/internal/verify -probe > probe.c
//	gcc -std=gnu11 probe.c -o probe -ldl && ./probe
//
// verify.c fails to compile if any value, size, offset or prototype differs from the real
// cuda.h (each _Static_assert names what differs) and its main checks the pointer-valued
// constants and which versioned symbol each API name of include/cuda.h expands to. probe.c
// asks the real libcuda.so.1 for every entry of the table through cuGetProcAddress_v2 and
// prints each answer that differs.
//
// The package has no mutable state and no locks: the tables are constant, and the index
// Lookup builds on first use is never changed.
package cuda

//go:generate go run ./internal/gen
