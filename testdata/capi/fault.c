/*
 * fault: an error of asynchronous work surfaces at the next synchronizing
 * call. A kernel writes through an address nobody allocated: the launch
 * itself succeeds, cuCtxSynchronize reports the failure. (Run last: on an
 * unguarded device the fault takes the device's driver process down, as it
 * would take a real CUDA context down.)
 */
#include "check.h"

int main(int argc, char **argv)
{
    CUcontext ctx = setup();
    char *ptx = read_file(kernels_dir(argc, argv), "vecadd.ptx");
    CUmodule mod;
    CUfunction f;
    CHECK(cuModuleLoadData(&mod, ptx));
    CHECK(cuModuleGetFunction(&f, mod, "vecadd"));
    CUdeviceptr a, wild = 0x1000;
    CHECK(cuMemAlloc(&a, 1024));
    int count = 256;
    void *args[] = {&a, &a, &wild, &count};
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
    CUresult r = cuCtxSynchronize();
    ASSERT(r != CUDA_SUCCESS, "a wild write synchronized without an error");
    printf("ok   the wild write surfaced at cuCtxSynchronize as %s\n", result_name(r));
    (void)ctx;
    printf("PASS fault\n");
    return 0;
}
