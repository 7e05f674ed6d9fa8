/*
 * pointers: cuPointerGetAttribute(s) and cuMemGetAddressRange on device
 * memory, an interior pointer, pinned host memory and an unknown address.
 */
#include "check.h"

int main(void)
{
    CUcontext ctx = setup();
    CUdeviceptr d;
    CHECK(cuMemAlloc(&d, 1 << 20));

    unsigned type = 0;
    CUcontext owner = NULL;
    int ordinal = -1;
    CUdeviceptr start = 0, dp = 0;
    size_t size = 0;
    unsigned long long id1 = 0, id2 = 0;
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 4096));
    CHECK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, d));
    CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d));
    CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 100));
    CHECK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 100));
    CHECK(cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, d + 8));
    CHECK(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, d));
    ASSERT(type == CU_MEMORYTYPE_DEVICE, "memory type %u", type);
    ASSERT(owner == ctx, "owning context %p, want %p", (void *)owner, (void *)ctx);
    ASSERT(ordinal == 0, "ordinal %d", ordinal);
    ASSERT(start == d && size == 1 << 20, "range %#llx + %zu", (unsigned long long)start, size);
    ASSERT(dp == d + 8, "device pointer %#llx", (unsigned long long)dp);
    printf("ok   device pointer: type, context, ordinal, range, device pointer\n");

    CUdeviceptr base;
    size_t rsize;
    CHECK(cuMemGetAddressRange(&base, &rsize, d + 12345));
    ASSERT(base == d && rsize == 1 << 20, "address range %#llx + %zu", (unsigned long long)base, rsize);
    printf("ok   cuMemGetAddressRange of an interior pointer\n");

    CUdeviceptr d2;
    CHECK(cuMemAlloc(&d2, 256));
    CHECK(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, d2));
    ASSERT(id1 != id2, "buffer ids %llu and %llu", id1, id2);

    /* Several at once. */
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
    unsigned t2 = 0;
    size_t s2 = 0;
    unsigned char managed = 7;
    void *data[] = {&t2, &s2, &managed};
    CHECK(cuPointerGetAttributes(3, attrs, data, d2));
    ASSERT(t2 == CU_MEMORYTYPE_DEVICE && s2 == 256 && managed == 0, "attributes %u %zu %u", t2, s2, managed);
    printf("ok   cuPointerGetAttributes\n");

    /* Pinned host memory. */
    void *h;
    void *hp = NULL;
    CHECK(cuMemAllocHost(&h, 8192));
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)h + 100));
    CHECK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, (CUdeviceptr)h));
    ASSERT(type == CU_MEMORYTYPE_HOST && hp == h, "host memory type %u pointer %p", type, hp);
    printf("ok   pinned host memory: type and host pointer\n");

    /* An address nobody allocated. */
    int local;
    EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)&local), CUDA_ERROR_INVALID_VALUE);
    t2 = 99;
    CHECK(cuPointerGetAttributes(3, attrs, data, (CUdeviceptr)&local));
    ASSERT(t2 == 0, "unknown memory type %u", t2);
    EXPECT(cuMemGetAddressRange(&base, &rsize, (CUdeviceptr)&local), CUDA_ERROR_NOT_FOUND);
    printf("ok   unknown address: no attributes\n");

    CHECK(cuMemFreeHost(h));
    CHECK(cuCtxDestroy(ctx));
    printf("PASS pointers\n");
    return 0;
}
