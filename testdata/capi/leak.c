/*
 * leak: allocates memory, loads a module, makes a stream and an event, and
 * exits without freeing anything. The daemon must be left with nothing of it:
 * the test checks that the session is gone once the process has exited.
 */
#include "check.h"

int main(int argc, char **argv)
{
    setup();
    CUdeviceptr d;
    CUstream s;
    CUevent e;
    CUmodule mod;
    CHECK(cuMemAlloc(&d, 8 << 20));
    CHECK(cuMemsetD32Async(d, 1, 1 << 20, NULL));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&e, 0));
    CHECK(cuEventRecord(e, s));
    CHECK(cuModuleLoadData(&mod, read_file(kernels_dir(argc, argv), "vecadd.ptx")));
    void *h;
    CHECK(cuMemAllocHost(&h, 1 << 20));
    printf("PASS leak (exiting without freeing 8 MiB)\n");
    return 0;
}
