/*
 * entry_bench: what one call of a few driver entry points costs, through
 * whatever libcuda.so.1 the program loads — the NVIDIA driver natively, the
 * gpuos shim under `gpuos run`. It splits the shim's launch cost: the
 * C-to-Go crossing (cuDriverGetVersion does nothing else), the calling
 * thread's lookup (cuCtxGetCurrent), a launch refused at once (a NULL
 * function: crossing, handle check, result), and an asynchronous launch of
 * an empty kernel (all of it, with the client's send and the daemon's pace).
 *
 *   gcc -O2 -Iinclude testdata/cudart/entry_bench.c -o entry_bench -lcuda
 *   ./entry_bench [N] [path/to/bench.ptx]
 *   gpuos run -- ./entry_bench [N] [path/to/bench.ptx]
 *
 * One line per entry point: "name: X ns/call".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        CUresult r_ = (call);                                                            \
        if (r_ != CUDA_SUCCESS) {                                                        \
            fprintf(stderr, "entry_bench: %s = %d\n", #call, (int)r_);                   \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "entry_bench: cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "entry_bench: cannot read %s\n", path);
        exit(1);
    }
    b[n] = 0;
    fclose(f);
    return b;
}

#define TIME(label, n, stmt)                                                             \
    do {                                                                                 \
        double t0_ = now_ns();                                                           \
        for (long i_ = 0; i_ < (n); i_++)                                                \
            stmt;                                                                        \
        printf("%s: %.1f ns/call\n", label, (now_ns() - t0_) / (double)(n));             \
    } while (0)

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    const char *ptx = argc > 2 ? argv[2] : "testdata/kernels/bench.ptx";
    if (n <= 0) {
        fprintf(stderr, "usage: entry_bench [N] [bench.ptx]\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx, cur;
    CUmodule mod;
    CUfunction empty;
    CUstream s;
    int v;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, read_file(ptx)));
    CHECK(cuModuleGetFunction(&empty, mod, "empty"));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    TIME("cuDriverGetVersion", n, cuDriverGetVersion(&v));
    TIME("cuCtxGetCurrent", n, cuCtxGetCurrent(&cur));
    TIME("cuCtxGetDevice", n, cuCtxGetDevice(&dev));
    TIME("cuDeviceGetAttribute", n, cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
    TIME("cuLaunchKernel(NULL function)", n, cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CHECK(cuStreamSynchronize(s));
    TIME("cuStreamQuery(idle stream)", n, cuStreamQuery(s));
    long launches = n < 100000 ? n : 100000;
    double t0 = now_ns();
    for (long i = 0; i < launches; i++)
        CHECK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    double t1 = now_ns();
    CHECK(cuStreamSynchronize(s));
    double t2 = now_ns();
    printf("cuLaunchKernel(empty, async): %.1f ns/call, then %.0f us to synchronize\n", (t1 - t0) / launches, (t2 - t1) / 1e3);
    CHECK(cuStreamDestroy(s));
    CHECK(cuModuleUnload(mod));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
