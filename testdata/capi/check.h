/*
 * check.h - helpers for gpuos's C API tests: each program prints what it
 * checks and exits non-zero at the first mismatch.
 */
#ifndef GPUOS_CAPI_CHECK_H
#define GPUOS_CAPI_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

static inline const char *result_name(CUresult r)
{
    const char *s = NULL;
    if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == NULL)
        return "(unknown CUresult)";
    return s;
}

/* CHECK fails the program unless call returns CUDA_SUCCESS. */
#define CHECK(call)                                                                      \
    do {                                                                                 \
        CUresult r_ = (call);                                                            \
        if (r_ != CUDA_SUCCESS) {                                                        \
            fprintf(stderr, "FAIL %s:%d: %s = %s (%d)\n", __FILE__, __LINE__, #call,     \
                    result_name(r_), (int)r_);                                           \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* EXPECT fails the program unless call returns exactly want, and says so. */
#define EXPECT(call, want)                                                               \
    do {                                                                                 \
        CUresult r_ = (call);                                                            \
        if (r_ != (want)) {                                                              \
            fprintf(stderr, "FAIL %s:%d: %s = %s (%d), want %s (%d)\n", __FILE__,        \
                    __LINE__, #call, result_name(r_), (int)r_, result_name(want),        \
                    (int)(want));                                                        \
            exit(1);                                                                     \
        }                                                                                \
        printf("ok   %s = %s\n", #call, result_name(r_));                                \
    } while (0)

/* ASSERT fails the program unless cond holds. */
#define ASSERT(cond, ...)                                                                \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);              \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* read_file returns the NUL-terminated contents of dir/name. */
static inline char *read_file(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    ASSERT(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ASSERT(buf != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n, "cannot read %s", path);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* kernels_dir is where the PTX the tests load lives: argv[1], else
 * $GPUOS_KERNELS, else testdata/kernels. */
static inline const char *kernels_dir(int argc, char **argv)
{
    if (argc > 1)
        return argv[1];
    const char *e = getenv("GPUOS_KERNELS");
    return e ? e : "testdata/kernels";
}

/* setup initializes the driver and makes a new context current. */
static inline CUcontext setup(void)
{
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
    return ctx;
}

#endif
