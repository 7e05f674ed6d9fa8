/*
 * memset: cuMemsetD8/D16/D32, their Async forms and the 2D forms on a
 * pitched allocation, checked by reading the memory back (including the bytes
 * around what was set, which must not change).
 */
#include <stdint.h>

#include "check.h"

enum { N = 4096 };

int main(void)
{
    CUcontext ctx = setup();
    CUdeviceptr d;
    CUstream s;
    static uint8_t b[N];
    CHECK(cuMemAlloc(&d, N));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    CHECK(cuMemsetD8(d, 0xAB, N));
    CHECK(cuMemsetD16(d + 16, 0x1234, 8));
    CHECK(cuMemsetD32(d + 64, 0xDEADBEEF, 4));
    CHECK(cuMemcpyDtoH(b, d, N));
    for (int i = 0; i < N; i++) {
        uint8_t want = 0xAB;
        if (i >= 16 && i < 32)
            want = (i % 2) ? 0x12 : 0x34;
        else if (i >= 64 && i < 80)
            want = ((const uint8_t[]){0xEF, 0xBE, 0xAD, 0xDE})[i % 4];
        ASSERT(b[i] == want, "byte %d is %#x, want %#x", i, b[i], want);
    }
    printf("ok   cuMemsetD8, cuMemsetD16, cuMemsetD32\n");

    CHECK(cuMemsetD8Async(d, 1, N, s));
    CHECK(cuMemsetD16Async(d + 2, 0x0202, 1, s));
    CHECK(cuMemsetD32Async(d + 4, 0x03030303, 1, s));
    CHECK(cuMemcpyDtoHAsync(b, d, N, s));
    CHECK(cuStreamSynchronize(s));
    for (int i = 0; i < N; i++) {
        uint8_t want = i < 2 ? 1 : i < 4 ? 2 : i < 8 ? 3 : 1;
        ASSERT(b[i] == want, "async: byte %d is %u, want %u", i, b[i], want);
    }
    printf("ok   the Async forms, in stream order\n");

    /* 2D: 10 rows of 24 elements in a pitched allocation; the padding between
     * rows keeps its value. */
    enum { W = 24, H = 10 };
    CUdeviceptr p;
    size_t pitch;
    CHECK(cuMemAllocPitch(&p, &pitch, W * 4, H, 4));
    CHECK(cuMemsetD8(p, 0xEE, pitch * H));
    CHECK(cuMemsetD2D32(p, pitch, 0x11223344, W, H));
    uint8_t *img = malloc(pitch * H);
    CHECK(cuMemcpyDtoH(img, p, pitch * H));
    for (size_t y = 0; y < H; y++)
        for (size_t x = 0; x < pitch; x++) {
            uint8_t want = x < W * 4 ? ((const uint8_t[]){0x44, 0x33, 0x22, 0x11})[x % 4] : 0xEE;
            ASSERT(img[y * pitch + x] == want, "2D32: (%zu, %zu) is %#x, want %#x", x, y, img[y * pitch + x], want);
        }
    CHECK(cuMemsetD2D8Async(p, pitch, 0x5A, 3, 2, s));
    CHECK(cuMemsetD2D16Async(p + pitch * 4, pitch, 0x7777, 2, 1, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemcpyDtoH(img, p, pitch * H));
    ASSERT(img[0] == 0x5A && img[2] == 0x5A && img[3] == 0x11 && img[pitch] == 0x5A && img[2 * pitch] == 0x44,
           "2D8 rows: %#x %#x %#x %#x %#x", img[0], img[2], img[3], img[pitch], img[2 * pitch]);
    ASSERT(img[4 * pitch] == 0x77 && img[4 * pitch + 3] == 0x77 && img[4 * pitch + 4] == 0x44, "2D16 row");
    printf("ok   cuMemsetD2D32 (padding untouched), cuMemsetD2D8Async, cuMemsetD2D16Async\n");

    /* Pinned host memory can be set too; misaligned and out-of-range sets are
     * refused. */
    uint32_t *h;
    CHECK(cuMemAllocHost((void **)&h, 64));
    CHECK(cuMemsetD32((CUdeviceptr)h, 0xCAFEF00D, 16));
    ASSERT(h[0] == 0xCAFEF00D && h[15] == 0xCAFEF00D, "pinned memset %#x", h[0]);
    EXPECT(cuMemsetD32(d + 2, 0, 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemsetD8(d + N - 4, 0, 8), CUDA_ERROR_INVALID_VALUE);
    printf("ok   pinned host memory, misaligned and out-of-range sets\n");

    free(img);
    CHECK(cuMemFreeHost(h));
    CHECK(cuCtxDestroy(ctx));
    printf("PASS memset\n");
    return 0;
}
