/*
 * reduce: sum reductions on the device, one with a shared-memory tree and
 * dynamic shared memory, one with warp shuffles and an atomic, checked
 * against the host's sum.
 */
#include "check.h"

int main(int argc, char **argv)
{
    enum { N = 1 << 16, BLOCK = 256 };
    CUcontext ctx = setup();
    char *ptx = read_file(kernels_dir(argc, argv), "reduce.ptx");
    CUmodule mod;
    CUfunction shared, shfl;
    CHECK(cuModuleLoadData(&mod, ptx));
    CHECK(cuModuleGetFunction(&shared, mod, "reduce_shared"));
    CHECK(cuModuleGetFunction(&shfl, mod, "reduce_shfl"));

    static float in[N];
    double want = 0;
    for (int i = 0; i < N; i++) {
        in[i] = (float)(i % 97) * 0.5f;
        want += in[i];
    }
    CUdeviceptr din, dpart, dsum;
    int blocks = N / (2 * BLOCK);
    CHECK(cuMemAlloc(&din, sizeof in));
    CHECK(cuMemAlloc(&dpart, blocks * sizeof(float)));
    CHECK(cuMemAlloc(&dsum, sizeof(float)));
    CHECK(cuMemcpyHtoD(din, in, sizeof in));

    /* Shared-memory tree: one partial sum per block, BLOCK floats of dynamic
     * shared memory each. */
    int n = N;
    void *args[] = {&din, &dpart, &n};
    CHECK(cuLaunchKernel(shared, blocks, 1, 1, BLOCK, 1, 1, BLOCK * sizeof(float), NULL, args, NULL));
    float *part = malloc(blocks * sizeof(float));
    CHECK(cuMemcpyDtoH(part, dpart, blocks * sizeof(float)));
    double got = 0;
    for (int i = 0; i < blocks; i++)
        got += part[i];
    ASSERT(got == want, "shared-memory sum %.1f, want %.1f", got, want);
    printf("ok   reduce_shared: %d blocks of %d threads, sum %.1f\n", blocks, BLOCK, got);

    /* Warp shuffles and one atomicAdd per block into a zeroed result. */
    CHECK(cuMemsetD32(dsum, 0, 1));
    void *args2[] = {&din, &dsum, &n};
    CHECK(cuLaunchKernel(shfl, 64, 1, 1, BLOCK, 1, 1, 0, NULL, args2, NULL));
    float sum;
    CHECK(cuMemcpyDtoH(&sum, dsum, sizeof sum));
    ASSERT(sum == (float)want, "shuffle sum %.1f, want %.1f", sum, want);
    printf("ok   reduce_shfl: sum %.1f\n", sum);

    /* More dynamic shared memory than a block may have by default is refused
     * at the launch, until the function allows it. */
    int maxDyn;
    CHECK(cuFuncGetAttribute(&maxDyn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared));
    EXPECT(cuLaunchKernel(shared, blocks, 1, 1, BLOCK, 1, 1, maxDyn + 1024, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    printf("ok   %d bytes of dynamic shared memory by default\n", maxDyn);

    free(part);
    CHECK(cuCtxDestroy(ctx));
    printf("PASS reduce\n");
    return 0;
}
