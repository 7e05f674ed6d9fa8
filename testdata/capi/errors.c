/*
 * errors: the exact CUresult of calls that must fail — before cuInit, without
 * a context, unknown kernel names, absurd allocations, foreign pointers,
 * invalid handles and launches, refused features, entry points gpuos does not
 * implement — and cuGetProcAddress answering with the library's own
 * functions, itself included.
 */
#include "check.h"

/* Symbols cuda.h does not name under these spellings. */
#undef cuGetProcAddress
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);

int main(int argc, char **argv)
{
    int n, version;
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr d;

    /* Before cuInit only versions and names work. */
    CHECK(cuDriverGetVersion(&version));
    ASSERT(version >= 13000, "driver version %d", version);
    EXPECT(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuInit(0));
    EXPECT(cuDeviceGet(&dev, 99), CUDA_ERROR_INVALID_DEVICE);
    CHECK(cuDeviceGet(&dev, 0));
    EXPECT(cuDeviceGetAttribute(&n, (CUdevice_attribute)100000, dev), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemAlloc(&d, 256), CUDA_ERROR_INVALID_CONTEXT); /* no context yet */

    /* cuGetProcAddress hands out this library's own functions. */
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = 99;
    CHECK(cuGetProcAddress_v2("cuGetProcAddress", &fn, 12000, 0, &st));
    ASSERT(fn == (void *)cuGetProcAddress_v2 && st == CU_GET_PROC_ADDRESS_SUCCESS, "cuGetProcAddress at 12000: %p status %d", fn, (int)st);
    CHECK(cuGetProcAddress_v2("cuGetProcAddress", &fn, 11030, 0, &st));
    ASSERT(fn == (void *)cuGetProcAddress, "cuGetProcAddress at 11030: %p", fn);
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) = cuGetProcAddress_v2;
    CHECK(gpa("cuMemAlloc", &fn, 13000, 0, &st));
    ASSERT(fn == (void *)cuMemAlloc_v2, "cuMemAlloc: %p, want cuMemAlloc_v2 %p", fn, (void *)cuMemAlloc_v2);
    CHECK(gpa("cuMemcpy", &fn, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
    ASSERT(fn == (void *)cuMemcpy_ptds, "cuMemcpy per-thread: %p", fn);
    printf("ok   cuGetProcAddress returns its own functions (itself, cuMemAlloc_v2, cuMemcpy_ptds)\n");
    fn = (void *)1;
    EXPECT(gpa("", &fn, 0, 0, &st), CUDA_SUCCESS);
    ASSERT(fn == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "empty name: %p status %d", fn, (int)st);
    EXPECT(gpa("cuMemAllocAsync", &fn, 11010, 0, &st), CUDA_SUCCESS);
    ASSERT(fn == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, "too old: %p status %d", fn, (int)st);
    EXPECT(gpa("cuLaunchKernel", &fn, 13000, 4, &st), CUDA_ERROR_INVALID_VALUE);
    EXPECT(gpa("cuInit", &fn, 99999, 0, &st), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuGetProcAddress("noSuchFunction", &fn, 12000, 0), CUDA_ERROR_NOT_FOUND);

    /* Entry points gpuos does not implement answer CUDA_ERROR_NOT_SUPPORTED. */
    CUgraph g;
    EXPECT(cuGraphCreate(&g, 0), CUDA_ERROR_NOT_SUPPORTED);
    CHECK(gpa("cuArrayCreate", &fn, 13000, 0, &st));
    ASSERT(fn != NULL, "cuArrayCreate has a function");
    EXPECT(((CUresult(*)(void *, const void *))fn)(NULL, NULL), CUDA_ERROR_NOT_SUPPORTED);

    CHECK(cuCtxCreate(&ctx, NULL, 0, dev));

    /* Managed memory and interprocess events are refused. */
    EXPECT(cuMemAllocManaged(&d, 1 << 20, 1), CUDA_ERROR_NOT_SUPPORTED);
    CUevent ev;
    EXPECT(cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING), CUDA_ERROR_NOT_SUPPORTED);
    CUstream s;
    CHECK(cuStreamCreate(&s, 0));
    EXPECT(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_NOT_SUPPORTED);
    CUstreamCaptureStatus cs = 9;
    CHECK(cuStreamIsCapturing(s, &cs));
    ASSERT(cs == CU_STREAM_CAPTURE_STATUS_NONE, "capture status %d", (int)cs);

    /* Memory. */
    EXPECT(cuMemAlloc(&d, (size_t)1 << 50), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(cuMemAlloc(&d, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemAlloc(&d, 4096));
    int local[4];
    EXPECT(cuMemFree((CUdeviceptr)local), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemFree(d + 64), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemFree(d));
    EXPECT(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemcpyHtoD(d, local, sizeof local), CUDA_ERROR_INVALID_VALUE); /* freed */

    /* Modules and functions. */
    char *ptx = read_file(kernels_dir(argc, argv), "vecadd.ptx");
    CUmodule mod;
    CUfunction f;
    CHECK(cuModuleLoadData(&mod, ptx));
    EXPECT(cuModuleGetFunction(&f, mod, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    CUdeviceptr gp;
    size_t gsize;
    EXPECT(cuModuleGetGlobal(&gp, &gsize, mod, "no_such_global"), CUDA_ERROR_NOT_FOUND);
    EXPECT(cuModuleGetFunction(&f, (CUmodule)0x1234, "vecadd"), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cuModuleLoadData(&mod, "this is not a module image"), CUDA_ERROR_INVALID_IMAGE);
    CHECK(cuModuleGetFunction(&f, mod, "vecadd"));

    /* Launches the real driver refuses at the call. */
    CUdeviceptr a;
    CHECK(cuMemAlloc(&a, 1024));
    int count = 256;
    void *args[] = {&a, &a, &a, &count};
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuLaunchKernel(f, 0, 1, 1, 256, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuLaunchKernel((CUfunction)0x42, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, (CUstream)0x77, args, NULL), CUDA_ERROR_INVALID_HANDLE);

    /* Handles of the wrong kind or already destroyed. */
    EXPECT(cuStreamSynchronize((CUstream)f), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cuCtxPushCurrent((CUcontext)s), CUDA_ERROR_INVALID_CONTEXT);
    CHECK(cuEventCreate(&ev, 0));
    CHECK(cuEventDestroy(ev));
    EXPECT(cuEventRecord(ev, NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuStreamDestroy(s));
    EXPECT(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);

    /* Names and descriptions of results. */
    const char *name = NULL, *desc = NULL;
    CHECK(cuGetErrorName(CUDA_ERROR_NOT_FOUND, &name));
    CHECK(cuGetErrorString(CUDA_ERROR_NOT_FOUND, &desc));
    ASSERT(strcmp(name, "CUDA_ERROR_NOT_FOUND") == 0 && strlen(desc) > 0, "name %s desc %s", name, desc);
    EXPECT(cuGetErrorName((CUresult)123456, &name), CUDA_ERROR_INVALID_VALUE);

    /* An unknown export table. */
    const void *table;
    CUuuid bogus = {{1, 2, 3}};
    EXPECT(cuGetExportTable(&table, &bogus), CUDA_ERROR_INVALID_VALUE);

    printf("PASS errors\n");
    return 0;
}
