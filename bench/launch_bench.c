/*
 * launch_bench: the cost of an asynchronous kernel launch through whatever
 * libcuda.so.1 the program loads — the NVIDIA driver natively, gpuos's shim
 * under `gpuos run`. It launches an empty kernel N times (default 100000,
 * 1 block of 1 thread) on one stream without waiting, then synchronizes, and
 * prints the time per launch including that final wait.
 *
 *   gcc -O2 -Iinclude bench/launch_bench.c -o launch_bench -lcuda
 *   ./launch_bench [N] [path/to/bench.ptx]                  # native
 *   gpuos run -- ./launch_bench [N] [path/to/bench.ptx]     # through gpuos
 *
 * Built against gpuos's include/cuda.h only; it runs on either driver.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        CUresult r_ = (call);                                                            \
        if (r_ != CUDA_SUCCESS) {                                                        \
            const char *s_ = "?";                                                        \
            cuGetErrorName(r_, &s_);                                                     \
            fprintf(stderr, "launch_bench: %s = %s\n", #call, s_);                       \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "launch_bench: cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "launch_bench: cannot read %s\n", path);
        exit(1);
    }
    b[n] = 0;
    fclose(f);
    return b;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    const char *ptx = argc > 2 ? argv[2] : "testdata/kernels/bench.ptx";
    if (n <= 0) {
        fprintf(stderr, "usage: launch_bench [N] [bench.ptx]\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction empty;
    CUstream s;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, read_file(ptx)));
    CHECK(cuModuleGetFunction(&empty, mod, "empty"));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    /* Warm up: the first launches pay for lazy setup on either driver. */
    long warm = n < 1000 ? n : 1000;
    for (long i = 0; i < warm; i++)
        CHECK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CHECK(cuStreamSynchronize(s));

    double t0 = now_us();
    for (long i = 0; i < n; i++)
        CHECK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    double t1 = now_us();
    CHECK(cuStreamSynchronize(s));
    double t2 = now_us();

    /* One launch followed by its synchronization, for the round trip. */
    int trips = 1000;
    double t3 = now_us();
    for (int i = 0; i < trips; i++) {
        CHECK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
        CHECK(cuStreamSynchronize(s));
    }
    double t4 = now_us();

    printf("launch_bench: %ld async empty launches: %.3f us/launch (submit %.3f us/launch, final sync %.0f us); "
           "launch+sync round trip %.2f us\n",
           n, (t2 - t0) / n, (t1 - t0) / n, t2 - t1, (t4 - t3) / trips);
    CHECK(cuStreamDestroy(s));
    CHECK(cuModuleUnload(mod));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
