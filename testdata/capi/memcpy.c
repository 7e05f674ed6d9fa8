/*
 * memcpy: every copy programs commonly use — synchronous and asynchronous
 * host-to-device, device-to-host and device-to-device, cuMemcpy with unified
 * addressing in all four directions, pitched 2D copies in every direction,
 * a 3D copy, copies from pinned and registered host memory, and a copy
 * between contexts of one device — each checked byte for byte.
 */
#include "check.h"

enum { N = 1 << 16 };

static unsigned char pattern(int i, int salt) { return (unsigned char)(i * 7 + salt); }

static void fill(unsigned char *p, size_t n, int salt)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pattern((int)i, salt);
}

static void same(const unsigned char *got, size_t n, int salt, const char *what)
{
    for (size_t i = 0; i < n; i++)
        ASSERT(got[i] == pattern((int)i, salt), "%s: byte %zu is %u, want %u", what, i, got[i], pattern((int)i, salt));
    printf("ok   %s (%zu bytes)\n", what, n);
}

int main(void)
{
    CUcontext ctx = setup();
    static unsigned char h1[N], h2[N];
    CUdeviceptr d1, d2;
    CUstream s;
    CHECK(cuMemAlloc(&d1, N));
    CHECK(cuMemAlloc(&d2, N));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    fill(h1, N, 1);
    CHECK(cuMemcpyHtoD(d1, h1, N));
    CHECK(cuMemcpyDtoD(d2, d1, N));
    memset(h2, 0, N);
    CHECK(cuMemcpyDtoH(h2, d2, N));
    same(h2, N, 1, "cuMemcpyHtoD, cuMemcpyDtoD, cuMemcpyDtoH");

    fill(h1, N, 2);
    CHECK(cuMemcpyHtoDAsync(d1, h1, N, s));
    CHECK(cuMemcpyDtoDAsync(d2, d1, N, s));
    memset(h2, 0, N);
    CHECK(cuMemcpyDtoHAsync(h2, d2, N, s));
    CHECK(cuStreamSynchronize(s));
    same(h2, N, 2, "the Async forms on a stream");

    /* Unified addressing: cuMemcpy works out each side itself. */
    fill(h1, N, 3);
    CHECK(cuMemcpy(d1, (CUdeviceptr)h1, N));
    CHECK(cuMemcpy(d2, d1, N));
    memset(h2, 0, N);
    CHECK(cuMemcpy((CUdeviceptr)h2, d2, N));
    same(h2, N, 3, "cuMemcpy host->device->device->host");
    memset(h2, 0, N);
    CHECK(cuMemcpyAsync((CUdeviceptr)h2, (CUdeviceptr)h1, N, s));
    CHECK(cuStreamSynchronize(s));
    same(h2, N, 3, "cuMemcpyAsync host->host");

    /* Pinned and registered host memory. */
    unsigned char *pinned, *mapped;
    CHECK(cuMemAllocHost((void **)&pinned, N));
    CHECK(cuMemHostAlloc((void **)&mapped, N, CU_MEMHOSTALLOC_PORTABLE));
    unsigned hflags = 99;
    CHECK(cuMemHostGetFlags(&hflags, mapped));
    ASSERT(hflags == CU_MEMHOSTALLOC_PORTABLE, "host flags %u", hflags);
    fill(pinned, N, 4);
    CHECK(cuMemcpyHtoDAsync(d1, pinned, N, s));
    CHECK(cuMemcpyDtoHAsync(mapped, d1, N, s));
    CHECK(cuStreamSynchronize(s));
    same(mapped, N, 4, "pinned host memory both ways");
    CHECK(cuMemHostRegister(h2, N, 0));
    EXPECT(cuMemHostRegister(h2 + 16, 64, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    memset(h2, 0, N);
    CHECK(cuMemcpy((CUdeviceptr)h2, d1, N));
    same(h2, N, 4, "cuMemcpy into registered memory");
    CHECK(cuMemHostUnregister(h2));
    EXPECT(cuMemHostUnregister(h2), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);

    /* Pitched 2D: a 100x37 rectangle at (8, 3) of a 160-byte-wide host image,
     * into a pitched allocation, across to another, and back. */
    enum { W = 100, H = 37, HW = 160, HH = 48 };
    static unsigned char img[HW * HH], back[HW * HH];
    fill(img, sizeof img, 5);
    CUdeviceptr p1, p2;
    size_t pitch1, pitch2;
    CHECK(cuMemAllocPitch(&p1, &pitch1, W, H, 4));
    CHECK(cuMemAllocPitch(&p2, &pitch2, W, H, 4));
    ASSERT(pitch1 >= W && pitch1 % 256 == 0, "pitch %zu", pitch1);
    CUDA_MEMCPY2D c = {0};
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = img;
    c.srcXInBytes = 8;
    c.srcY = 3;
    c.srcPitch = HW;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = p1;
    c.dstPitch = pitch1;
    c.WidthInBytes = W;
    c.Height = H;
    CHECK(cuMemcpy2D(&c));
    CUDA_MEMCPY2D dd = {0};
    dd.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    dd.srcDevice = p1;
    dd.srcPitch = pitch1;
    dd.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    dd.dstDevice = p2;
    dd.dstPitch = pitch2;
    dd.WidthInBytes = W;
    dd.Height = H;
    CHECK(cuMemcpy2DAsync(&dd, s));
    CUDA_MEMCPY2D r = {0};
    r.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    r.srcDevice = p2;
    r.srcPitch = pitch2;
    r.dstMemoryType = CU_MEMORYTYPE_HOST;
    r.dstHost = back;
    r.dstXInBytes = 8;
    r.dstY = 3;
    r.dstPitch = HW;
    r.WidthInBytes = W;
    r.Height = H;
    memset(back, 0, sizeof back);
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemcpy2DUnaligned(&r));
    for (int y = 0; y < HH; y++)
        for (int x = 0; x < HW; x++) {
            int inside = y >= 3 && y < 3 + H && x >= 8 && x < 8 + W;
            unsigned char want = inside ? img[y * HW + x] : 0;
            ASSERT(back[y * HW + x] == want, "2D: (%d, %d) is %u, want %u", x, y, back[y * HW + x], want);
        }
    printf("ok   cuMemcpy2D host->pitched device, cuMemcpy2DAsync device->device, cuMemcpy2DUnaligned back\n");

    /* 3D: two slices of 4 rows of 16 bytes out of a host volume. */
    enum { X = 16, Y = 4, Z = 2 };
    static unsigned char vol[X * Y * Z], vback[X * Y * Z];
    fill(vol, sizeof vol, 6);
    CUdeviceptr dvol;
    CHECK(cuMemAlloc(&dvol, sizeof vol));
    CUDA_MEMCPY3D m = {0};
    m.srcMemoryType = CU_MEMORYTYPE_HOST;
    m.srcHost = vol;
    m.srcPitch = X;
    m.srcHeight = Y;
    m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    m.dstDevice = dvol;
    m.dstPitch = X;
    m.dstHeight = Y;
    m.WidthInBytes = X;
    m.Height = Y;
    m.Depth = Z;
    CHECK(cuMemcpy3D(&m));
    CHECK(cuMemcpyDtoH(vback, dvol, sizeof vback));
    same(vback, sizeof vback, 6, "cuMemcpy3D host->device");

    /* A copy between two contexts of the device. */
    CUcontext other;
    CUdevice dev;
    CHECK(cuCtxGetDevice(&dev));
    CHECK(cuCtxCreate(&other, NULL, 0, dev));
    CUdeviceptr od;
    CHECK(cuMemAlloc(&od, N));
    CHECK(cuMemcpyPeer(od, other, d1, ctx, N));
    memset(h2, 0, N);
    CHECK(cuMemcpyDtoH(h2, od, N));
    same(h2, N, 4, "cuMemcpyPeer between contexts of one device");
    CHECK(cuCtxDestroy(other));
    CHECK(cuCtxSetCurrent(ctx));

    /* Out of range: a copy past the end of an allocation. */
    EXPECT(cuMemcpyHtoD(d1 + N - 8, h1, 16), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemcpyDtoH(h1, d1 + 8, N), CUDA_ERROR_INVALID_VALUE);

    CHECK(cuMemFreeHost(pinned));
    CHECK(cuMemFreeHost(mapped));
    CHECK(cuCtxDestroy(ctx));
    printf("PASS memcpy\n");
    return 0;
}
