/*
 * vecadd: c = a + b on the device, with the arguments passed both ways
 * (kernelParams and the extra buffer), checked element by element.
 */
#include "check.h"

int main(int argc, char **argv)
{
    enum { N = 10000 };
    CUcontext ctx = setup();
    char *ptx = read_file(kernels_dir(argc, argv), "vecadd.ptx");
    CUmodule mod;
    CUfunction fn;
    CHECK(cuModuleLoadData(&mod, ptx));
    CHECK(cuModuleGetFunction(&fn, mod, "vecadd"));

    static float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = 2.0f * (float)i + 1.0f;
    }
    CUdeviceptr da, db, dc;
    CHECK(cuMemAlloc(&da, sizeof a));
    CHECK(cuMemAlloc(&db, sizeof b));
    CHECK(cuMemAlloc(&dc, sizeof c));
    CHECK(cuMemcpyHtoD(da, a, sizeof a));
    CHECK(cuMemcpyHtoD(db, b, sizeof b));

    int n = N;
    void *args[] = {&da, &db, &dc, &n};
    unsigned block = 256, grid = (N + block - 1) / block;
    CHECK(cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, NULL, args, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(c, dc, sizeof c));
    for (int i = 0; i < N; i++)
        ASSERT(c[i] == a[i] + b[i], "c[%d] = %g, want %g", i, c[i], a[i] + b[i]);
    printf("ok   vecadd of %d elements with kernelParams\n", N);

    /* The same launch with one packed buffer (CU_LAUNCH_PARAM_BUFFER_POINTER). */
    CHECK(cuMemsetD32(dc, 0, N));
    struct {
        CUdeviceptr a, b, c;
        int n;
    } packed = {da, db, dc, N};
    size_t size = sizeof packed;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    CHECK(cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, NULL, NULL, extra));
    CHECK(cuMemcpyDtoH(c, dc, sizeof c));
    for (int i = 0; i < N; i++)
        ASSERT(c[i] == a[i] + b[i], "extra: c[%d] = %g, want %g", i, c[i], a[i] + b[i]);
    printf("ok   vecadd of %d elements with extra\n", N);

    /* Function attributes and the parameter layout the daemon returned. */
    int threads, regs;
    CHECK(cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn));
    CHECK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn));
    ASSERT(threads >= 256, "max threads per block %d", threads);
    size_t off, sz;
    CHECK(cuFuncGetParamInfo(fn, 3, &off, &sz));
    ASSERT(off == 24 && sz == 4, "parameter 3 at %zu size %zu, want 24 and 4", off, sz);
    printf("ok   function attributes: %d threads, %d registers, parameter 3 at %zu\n", threads, regs, off);

    int blocks, minGrid, bestBlock;
    CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, 256, 0));
    CHECK(cuOccupancyMaxPotentialBlockSize(&minGrid, &bestBlock, fn, NULL, 0, 0));
    ASSERT(blocks > 0 && bestBlock > 0 && minGrid > 0, "occupancy %d blocks, block %d, grid %d", blocks, bestBlock, minGrid);
    printf("ok   occupancy: %d blocks of 256 per SM, best block %d\n", blocks, bestBlock);

    CHECK(cuMemFree(da));
    CHECK(cuMemFree(db));
    CHECK(cuMemFree(dc));
    CHECK(cuModuleUnload(mod));
    CHECK(cuCtxDestroy(ctx));
    printf("PASS vecadd\n");
    return 0;
}
