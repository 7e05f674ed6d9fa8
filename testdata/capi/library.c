/*
 * library: module and library loading — fat binaries (plain and compressed)
 * through cuModuleLoadFatBinary and cuLibraryLoadData, kernels looked up as
 * CUkernels and launched as such or through cuKernelGetFunction, kernel
 * names, counts and parameter layouts, JIT log buffers, and module-scope
 * variables through cuModuleGetGlobal and cuLibraryGetGlobal. Also what
 * cuBLAS and cuRAND do with their libraries: a CUkernel where a CUfunction
 * goes (attributes, occupancy, cuLaunchKernelEx), cluster occupancy probes,
 * and a fat binary larger than gpuos sends at once (cuRAND's is 29 MB).
 */
#include "check.h"

/* A kernel that adds its argument to a module-scope counter. */
static const char counter_ptx[] =
    ".version 9.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .global .align 4 .u32 counter;\n"
    ".visible .global .align 8 .u64 seeds[4];\n"
    ".visible .entry bump(.param .u32 n)\n"
    "{\n"
    "    .reg .b32 %r<3>;\n"
    "    .reg .b64 %rd<2>;\n"
    "    ld.param.u32 %r1, [n];\n"
    "    mov.u64 %rd1, counter;\n"
    "    atom.global.add.u32 %r2, [%rd1], %r1;\n"
    "    ret;\n"
    "}\n";

static void vecadd_check(CUfunction f, const char *how)
{
    enum { N = 512 };
    static float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = 1.0f;
    }
    CUdeviceptr da, db, dc;
    CHECK(cuMemAlloc(&da, sizeof a));
    CHECK(cuMemAlloc(&db, sizeof b));
    CHECK(cuMemAlloc(&dc, sizeof c));
    CHECK(cuMemcpyHtoD(da, a, sizeof a));
    CHECK(cuMemcpyHtoD(db, b, sizeof b));
    int n = N;
    void *args[] = {&da, &db, &dc, &n};
    CHECK(cuLaunchKernel(f, N / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
    CHECK(cuMemcpyDtoH(c, dc, sizeof c));
    for (int i = 0; i < N; i++)
        ASSERT(c[i] == a[i] + 1, "%s: c[%d] = %g", how, i, c[i]);
    CHECK(cuMemFree(da));
    CHECK(cuMemFree(db));
    CHECK(cuMemFree(dc));
    printf("ok   vecadd %s\n", how);
}

/* big_fatbin returns vecadd's fat binary with a cubin for sm_100 of extra
 * bytes added to its container, as NVIDIA's libraries carry one per
 * architecture. */
static char *big_fatbin(const char *fat, size_t extra)
{
    unsigned long long body;
    memcpy(&body, fat + 8, sizeof body);
    size_t n = 16 + (size_t)body;
    char *big = calloc(1, n + 64 + extra);
    ASSERT(big != NULL, "cannot allocate %zu bytes", n + 64 + extra);
    memcpy(big, fat, n);
    unsigned char *h = (unsigned char *)big + n; /* the entry's header */
    unsigned short kind = 2;                     /* ELF */
    unsigned hsize = 64, arch = 100;
    unsigned long long padded = extra, flags = 0x11;
    memcpy(h, &kind, 2);
    memcpy(h + 4, &hsize, 4);
    memcpy(h + 8, &padded, 8);
    memcpy(h + 0x1c, &arch, 4);
    memcpy(h + 0x28, &flags, 8);
    body += 64 + extra;
    memcpy(big + 8, &body, sizeof body);
    return big;
}

/* cublas_like probes and launches kernel k the way cuBLAS and cuRAND do. */
static void cublas_like(CUkernel k)
{
    CUfunction f = (CUfunction)k;
    CUdevice dev;
    CHECK(cuCtxGetDevice(&dev));
    int optin = 0, regs = -1, smem = -1, maxdyn = -1;
    CHECK(cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
    CHECK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
    CHECK(cuKernelGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k, dev));
    CHECK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin - smem, k, dev));
    CHECK(cuFuncGetAttribute(&maxdyn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
    ASSERT(maxdyn == optin - smem, "maximum dynamic shared memory %d after setting %d", maxdyn, optin - smem);
    size_t avail = 0;
    CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&avail, f, 1, 1));
    ASSERT(avail > 0 && avail <= (size_t)optin, "available dynamic shared memory %zu", avail);
    CHECK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1, k, dev));
    int perSM = 0, sms = 0;
    CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, f, 128, 0));
    CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));

    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimY = cfg.gridDimZ = cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.blockDimX = 128;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    for (unsigned size = 1; size <= 32; size++) {
        attr.value.clusterDim.x = size;
        attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
        cfg.gridDimX = size;
        int n = -1;
        CHECK(cuOccupancyMaxActiveClusters(&n, f, &cfg));
        int want = size == 1 ? perSM * sms : 0; /* gpuos launches no larger clusters */
        ASSERT(n == want, "%d active clusters of %u blocks, want %d", n, size, want);
    }
    int csize = -1;
    CHECK(cuOccupancyMaxPotentialClusterSize(&csize, f, &cfg));
    ASSERT(csize == 1, "potential cluster size %d", csize);
    attr.value.clusterDim.x = 3;
    cfg.gridDimX = 4;
    int n = -1;
    EXPECT(cuOccupancyMaxActiveClusters(&n, f, &cfg), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    EXPECT(cuOccupancyMaxActiveClusters(NULL, f, &cfg), CUDA_ERROR_INVALID_VALUE);
    printf("ok   a CUkernel as a function: attributes, occupancy, clusters of one block (%d per SM, %d SMs)\n", perSM, sms);

    /* Launched by cuLaunchKernelEx with a 1x1x1 cluster, as cuBLAS does. */
    enum { N = 512 };
    static float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = 2.0f;
    }
    CUdeviceptr da, db, dc;
    CHECK(cuMemAlloc(&da, sizeof a));
    CHECK(cuMemAlloc(&db, sizeof b));
    CHECK(cuMemAlloc(&dc, sizeof c));
    CHECK(cuMemcpyHtoD(da, a, sizeof a));
    CHECK(cuMemcpyHtoD(db, b, sizeof b));
    int count = N;
    void *args[] = {&da, &db, &dc, &count};
    attr.value.clusterDim.x = 1;
    cfg.gridDimX = N / 128;
    CHECK(cuLaunchKernelEx(&cfg, f, args, NULL));
    CHECK(cuMemcpyDtoH(c, dc, sizeof c));
    for (int i = 0; i < N; i++)
        ASSERT(c[i] == a[i] + 2, "cuLaunchKernelEx of a CUkernel: c[%d] = %g", i, c[i]);
    CHECK(cuMemFree(da));
    CHECK(cuMemFree(db));
    CHECK(cuMemFree(dc));
    printf("ok   cuLaunchKernelEx of a CUkernel\n");
}

int main(int argc, char **argv)
{
    CUcontext ctx = setup();
    char path[4096];
    snprintf(path, sizeof path, "%s/../fatbin", kernels_dir(argc, argv));
    char *fat = read_file(path, "vecadd.fatbin");
    char *zfat = read_file(path, "vecadd.compressed.fatbin");

    /* A fat binary as a module. */
    CUmodule mod;
    CUfunction f;
    unsigned count = 0;
    CHECK(cuModuleLoadFatBinary(&mod, fat));
    CHECK(cuModuleGetFunction(&f, mod, "vecadd"));
    vecadd_check(f, "from cuModuleLoadFatBinary");
    CUmodule zmod;
    CHECK(cuModuleLoadData(&zmod, zfat));
    CHECK(cuModuleGetFunction(&f, zmod, "vecadd"));
    vecadd_check(f, "from a compressed fat binary");

    /* The same as a library: kernels, their names, counts and layouts. */
    CUlibrary lib;
    CUkernel k, k2;
    CHECK(cuLibraryLoadData(&lib, fat, NULL, NULL, 0, NULL, NULL, 0));
    CHECK(cuLibraryGetKernel(&k, lib, "vecadd"));
    CHECK(cuLibraryGetKernel(&k2, lib, "vecadd"));
    ASSERT(k == k2, "two lookups gave %p and %p", (void *)k, (void *)k2);
    EXPECT(cuLibraryGetKernel(&k2, lib, "nope"), CUDA_ERROR_NOT_FOUND);
    /* One library option and no value array, as cuBLAS 13 loads its kernels. */
    CUlibrary lib2;
    CUlibraryOption preserved = CU_LIBRARY_BINARY_IS_PRESERVED;
    EXPECT(cuLibraryLoadData(&lib2, fat, NULL, NULL, 0, &preserved, NULL, 1), CUDA_SUCCESS);
    CHECK(cuLibraryUnload(lib2));
    vecadd_check((CUfunction)k, "launched as a CUkernel");
    CHECK(cuKernelGetFunction(&f, k));
    vecadd_check(f, "through cuKernelGetFunction");
    const char *name = NULL;
    CHECK(cuKernelGetName(&name, k));
    ASSERT(name && strcmp(name, "vecadd") == 0, "kernel name %s", name ? name : "(null)");
    size_t off, size;
    CHECK(cuKernelGetParamInfo(k, 2, &off, &size));
    ASSERT(off == 16 && size == 8, "parameter 2 at %zu, %zu bytes", off, size);
    CUlibrary owner;
    CHECK(cuKernelGetLibrary(&owner, k));
    ASSERT(owner == lib, "kernel's library %p", (void *)owner);
    CUmodule lmod;
    CHECK(cuLibraryGetModule(&lmod, lib));
    CHECK(cuModuleGetFunction(&f, lmod, "vecadd"));
    printf("ok   library: kernel lookups, name, parameter layout, module\n");
    cublas_like(k);

    /* A fat binary larger than one request to the daemon, kept in place. */
    char *big = big_fatbin(fat, (size_t)17 << 20);
    CUlibrary blib;
    CUkernel bk;
    CUlibraryOption lopt = CU_LIBRARY_BINARY_IS_PRESERVED;
    void *lval = (void *)1;
    CHECK(cuLibraryLoadData(&blib, big, NULL, NULL, 0, &lopt, &lval, 1));
    CHECK(cuLibraryGetKernel(&bk, blib, "vecadd"));
    vecadd_check((CUfunction)bk, "from a 17 MiB fat binary");
    CHECK(cuLibraryUnload(blib));
    free(big);

    /* Module-scope variables of a PTX module loaded with JIT options. */
    char info[256] = "unset", err[256] = "unset";
    CUjit_option opts[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                           CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_OPTIMIZATION_LEVEL};
    void *vals[] = {info, (void *)(size_t)sizeof info, err, (void *)(size_t)sizeof err, (void *)(size_t)3};
    CUmodule gmod;
    CHECK(cuModuleLoadDataEx(&gmod, counter_ptx, 5, opts, vals));
    ASSERT(info[0] == 0 && err[0] == 0, "log buffers '%s' '%s'", info, err);
    CHECK(cuModuleGetFunctionCount(&count, gmod));
    ASSERT(count == 1, "%u functions", count);
    CUdeviceptr counter, seeds;
    size_t csize, ssize;
    CHECK(cuModuleGetGlobal(&counter, &csize, gmod, "counter"));
    CHECK(cuModuleGetGlobal(&seeds, &ssize, gmod, "seeds"));
    ASSERT(csize == 4 && ssize == 32, "global sizes %zu %zu", csize, ssize);
    unsigned zero = 0, got = 0;
    CHECK(cuMemcpyHtoD(counter, &zero, sizeof zero));
    CUfunction bump;
    CHECK(cuModuleGetFunction(&bump, gmod, "bump"));
    unsigned by = 5;
    void *args[] = {&by};
    CHECK(cuLaunchKernel(bump, 10, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    CHECK(cuMemcpy((CUdeviceptr)&got, counter, sizeof got)); /* unified addressing knows globals */
    ASSERT(got == 1600, "counter %u, want 1600", got);
    unsigned long long s[4] = {1, 2, 3, 4}, back[4] = {0};
    CHECK(cuMemcpyHtoD(seeds, s, sizeof s));
    CHECK(cuMemcpyDtoH(back, seeds, sizeof back));
    ASSERT(back[3] == 4, "seeds[3] = %llu", back[3]);
    printf("ok   module globals: a kernel's atomics on one, copies both ways\n");

    CUlibrary glib;
    CUdeviceptr lp;
    CHECK(cuLibraryLoadData(&glib, counter_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CHECK(cuLibraryGetKernelCount(&count, glib));
    CUkernel ks[4];
    CHECK(cuLibraryEnumerateKernels(ks, count, glib));
    CHECK(cuLibraryGetGlobal(&lp, &csize, glib, "counter"));
    ASSERT(count == 1 && csize == 4, "library: %u kernels, counter of %zu bytes", count, csize);
    printf("ok   library globals and kernel enumeration\n");

    CHECK(cuLibraryUnload(glib));
    CHECK(cuLibraryUnload(lib));
    EXPECT(cuKernelGetFunction(&f, k), CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuModuleUnload(gmod));
    EXPECT(cuModuleGetGlobal(&counter, &csize, gmod, "counter"), CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuModuleUnload(mod));
    CHECK(cuModuleUnload(zmod));
    CHECK(cuCtxDestroy(ctx));
    printf("PASS library\n");
    return 0;
}
