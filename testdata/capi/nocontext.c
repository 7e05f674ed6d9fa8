/*
 * nocontext: libraries before any context, as the CUDA runtime (12 and
 * later) uses them. At start-up the runtime loads each fat binary it
 * registered with cuLibraryLoadData, passing CU_LIBRARY_BINARY_IS_PRESERVED,
 * while no context exists, and looks its kernels up; later, with the primary
 * context current, it launches the CUkernels and reads and writes __device__
 * variables through cuLibraryGetGlobal. On the H100 (gpu-check run 4) the
 * shim answered the load with CUDA_ERROR_INVALID_CONTEXT and every runtime
 * call then failed with cudaErrorDeviceUninitialized.
 */
#include <pthread.h>

#include "check.h"

/* A module-scope counter and a kernel that adds to it. */
static const char counter_ptx[] =
    ".version 9.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .global .align 4 .u32 counter;\n"
    "// .entry commented_out(\n"
    ".visible .entry bump(.param .u32 n)\n"
    "{\n"
    "    .reg .b32 %r<3>;\n"
    "    .reg .b64 %rd<2>;\n"
    "    ld.param.u32 %r1, [n];\n"
    "    mov.u64 %rd1, counter;\n"
    "    atom.global.add.u32 %r2, [%rd1], %r1;\n"
    "    ret;\n"
    "}\n";

/* What nvcc embeds and the runtime registers: a wrapper naming the fat binary. */
struct fatbin_wrapper {
    unsigned magic, version;
    const void *data;
    const void *prelinked;
};

static void vecadd_check(CUfunction f, CUstream s, const char *how)
{
    enum { N = 1024 };
    static float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = 2.0f;
        c[i] = 0;
    }
    CUdeviceptr da, db, dc;
    CHECK(cuMemAlloc(&da, sizeof a));
    CHECK(cuMemAlloc(&db, sizeof b));
    CHECK(cuMemAlloc(&dc, sizeof c));
    CHECK(cuMemcpyHtoD(da, a, sizeof a));
    CHECK(cuMemcpyHtoD(db, b, sizeof b));
    int n = N;
    void *args[] = {&da, &db, &dc, &n};
    CHECK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemcpyDtoH(c, dc, sizeof c));
    for (int i = 0; i < N; i++)
        ASSERT(c[i] == a[i] + 2, "%s: c[%d] = %g", how, i, c[i]);
    CHECK(cuMemFree(da));
    CHECK(cuMemFree(db));
    CHECK(cuMemFree(dc));
    printf("ok   vecadd %s\n", how);
}

/* A thread that never had a context launches the CUkernel on a created
 * stream (whose device says where it runs) and waits for it. */
struct launch_args {
    CUkernel k;
    CUstream s;
    void **args;
    CUresult launch, sync;
};

static void *launch_elsewhere(void *p)
{
    struct launch_args *la = p;
    CUcontext cur = (CUcontext)1;
    CHECK(cuCtxGetCurrent(&cur));
    ASSERT(cur == NULL, "a new thread has context %p", (void *)cur);
    la->launch = cuLaunchKernel((CUfunction)la->k, 4, 1, 1, 256, 1, 1, 0, la->s, la->args, NULL);
    la->sync = cuStreamSynchronize(la->s);
    return NULL;
}

int main(int argc, char **argv)
{
    char dir[2048], path[4096];
    snprintf(dir, sizeof dir, "%s/../fatbin", kernels_dir(argc, argv));
    char *fat = read_file(dir, "vecadd.fatbin");

    CHECK(cuInit(0));
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, 0));
    CUcontext cur = (CUcontext)1;
    CHECK(cuCtxGetCurrent(&cur));
    ASSERT(cur == NULL, "context %p before any was made", (void *)cur);

    /* Loading and looking up need no context, with the runtime's option. */
    struct fatbin_wrapper w = {0x466243B1, 1, fat, NULL};
    CUlibraryOption opt = CU_LIBRARY_BINARY_IS_PRESERVED;
    void *val = (void *)(size_t)1;
    CUlibrary lib, glib;
    CHECK(cuLibraryLoadData(&lib, &w, NULL, NULL, 0, &opt, &val, 1));
    CHECK(cuLibraryLoadData(&glib, counter_ptx, NULL, NULL, 0, &opt, &val, 1));
    CUkernel k, bump;
    CHECK(cuLibraryGetKernel(&k, lib, "vecadd"));
    CHECK(cuLibraryGetKernel(&bump, glib, "bump"));
    EXPECT(cuLibraryGetKernel(&bump, glib, "commented_out"), CUDA_ERROR_NOT_FOUND);
    EXPECT(cuLibraryGetKernel(&k, lib, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    const char *name = NULL;
    CHECK(cuKernelGetName(&name, k));
    ASSERT(name && strcmp(name, "vecadd") == 0, "kernel name %s", name ? name : "(null)");
    unsigned count = 0;
    CHECK(cuLibraryGetKernelCount(&count, lib));
    ASSERT(count == 1, "%u kernels", count);
    CUdeviceptr early;
    size_t esize;
    CHECK(cuLibraryGetGlobal(&early, &esize, glib, "counter"));
    ASSERT(esize == 4, "counter of %zu bytes", esize);
    CHECK(cuCtxGetCurrent(&cur));
    ASSERT(cur == NULL, "loading made context %p current", (void *)cur);
    printf("ok   cuLibraryLoadData, cuLibraryGetKernel and cuLibraryGetGlobal with no context\n");

    /* Options: unknown ones are refused; a file cannot be "preserved". */
    CUlibraryOption bad = (CUlibraryOption)7;
    CUlibrary nolib;
    EXPECT(cuLibraryLoadData(&nolib, &w, NULL, NULL, 0, &bad, &val, 1), CUDA_ERROR_INVALID_VALUE);
    snprintf(path, sizeof path, "%s/vecadd.ptx", kernels_dir(argc, argv));
    EXPECT(cuLibraryLoadFromFile(&nolib, path, NULL, NULL, 0, &opt, &val, 1), CUDA_ERROR_INVALID_VALUE);

    /* Work needs a context: the runtime makes the primary one current. */
    CUcontext ctx;
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    vecadd_check((CUfunction)k, NULL, "as a CUkernel on the default stream");
    CUfunction f;
    CHECK(cuKernelGetFunction(&f, k));
    vecadd_check(f, NULL, "through cuKernelGetFunction");
    int regs = -1, threads = -1;
    CHECK(cuKernelGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k, dev));
    CHECK(cuKernelGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, dev));
    ASSERT(regs >= 0 && threads > 0, "attributes: %d registers, %d threads", regs, threads);
    int blocks = 0;
    CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, (CUfunction)k, 256, 0));
    ASSERT(blocks > 0, "%d blocks per SM", blocks);
    printf("ok   kernel attributes and occupancy\n");

    /* The global found before the context is the one kernels use. */
    CUdeviceptr counter;
    size_t csize;
    CHECK(cuLibraryGetGlobal(&counter, &csize, glib, "counter"));
    ASSERT(counter == early && csize == esize, "counter at %#llx, before the context at %#llx",
           (unsigned long long)counter, (unsigned long long)early);
    unsigned zero = 0, got = 0, by = 3;
    CHECK(cuMemcpyHtoD(counter, &zero, sizeof zero));
    void *bargs[] = {&by};
    CHECK(cuLaunchKernel((CUfunction)bump, 4, 1, 1, 64, 1, 1, 0, NULL, bargs, NULL));
    CHECK(cuMemcpyDtoH(&got, counter, sizeof got));
    ASSERT(got == 768, "counter %u, want 768", got);
    CUmodule gmod;
    CHECK(cuLibraryGetModule(&gmod, glib));
    EXPECT(cuModuleUnload(gmod), CUDA_ERROR_INVALID_HANDLE);
    printf("ok   a library global written by a CUkernel and read back\n");

    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    enum { M = 1024 };
    static float ha[M], hc[M];
    for (int i = 0; i < M; i++)
        ha[i] = (float)i;
    CUdeviceptr da, dc;
    CHECK(cuMemAlloc(&da, sizeof ha));
    CHECK(cuMemAlloc(&dc, sizeof hc));
    CHECK(cuMemcpyHtoD(da, ha, sizeof ha));
    int m = M;
    void *vargs[] = {&da, &da, &dc, &m};
    struct launch_args la = {k, s, vargs, CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN};
    pthread_t tid;
    ASSERT(pthread_create(&tid, NULL, launch_elsewhere, &la) == 0, "pthread_create");
    pthread_join(tid, NULL);
    ASSERT(la.launch == CUDA_SUCCESS && la.sync == CUDA_SUCCESS, "from another thread: launch %s, synchronize %s",
           result_name(la.launch), result_name(la.sync));
    CHECK(cuMemcpyDtoH(hc, dc, sizeof hc));
    for (int i = 0; i < M; i++)
        ASSERT(hc[i] == 2 * ha[i], "c[%d] = %g", i, hc[i]);
    CHECK(cuMemFree(da));
    CHECK(cuMemFree(dc));
    CHECK(cuStreamDestroy(s));
    printf("ok   vecadd as a CUkernel on a created stream, launched from a thread with no context\n");

    /* The libraries outlive the context: released and retained again, the
     * same kernel still runs. */
    CHECK(cuDevicePrimaryCtxRelease(dev));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    vecadd_check((CUfunction)k, NULL, "after the primary context was released and retained");

    CHECK(cuLibraryUnload(lib));
    CHECK(cuLibraryUnload(glib));
    EXPECT(cuKernelGetFunction(&f, k), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cuLaunchKernel((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuDevicePrimaryCtxRelease(dev));
    printf("PASS nocontext\n");
    return 0;
}
