// common.h - helpers for the runtime-API programs gpuos runs on the GPU and
// compares with native runs: fail loudly, and print results as checksums
// that must be identical through gpuos and natively.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cuda_runtime.h>

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            std::fprintf(stderr, "FAIL %s:%d: %s = %s (%d)\n", __FILE__, __LINE__, #call,    \
                         cudaGetErrorName(e_), (int)e_);                                     \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)

// fnv1a hashes bytes: a checksum of results, bit for bit.
static inline uint64_t fnv1a(const void *p, size_t n, uint64_t h = 1469598103934665603ull) {
    const unsigned char *b = static_cast<const unsigned char *>(p);
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static inline void checksum(const char *what, const void *p, size_t n) {
    std::printf("checksum %s: %016llx\n", what, (unsigned long long)fnv1a(p, n));
}
