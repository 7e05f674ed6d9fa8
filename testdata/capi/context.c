/*
 * context: devices, primary and created contexts, the per-thread context
 * stack, limits, and the private export tables the CUDA runtime uses
 * (context-local storage, the integrity check, the tools tables).
 */
#include <pthread.h>

#include "check.h"

static CUcontext seen_by_thread = (CUcontext)1;

static void *other_thread(void *arg)
{
    CHECK(cuCtxGetCurrent(&seen_by_thread)); /* a new thread has no context */
    CHECK(cuCtxSetCurrent((CUcontext)arg));
    CUdeviceptr d;
    CHECK(cuMemAlloc(&d, 64));
    CHECK(cuMemFree(d));
    return NULL;
}

typedef CUresult (*cls_put_fn)(CUcontext, void *, void *, void *);
typedef CUresult (*cls_del_fn)(CUcontext, void *);
typedef CUresult (*cls_get_fn)(void **, CUcontext, void *);
typedef CUresult (*check_fn)(unsigned, unsigned long long, unsigned long long *);

static CUuuid uuid(const char *hex)
{
    CUuuid u;
    for (int i = 0; i < 16; i++) {
        unsigned b;
        sscanf(hex + 2 * i, "%2x", &b);
        u.bytes[i] = (char)b;
    }
    return u;
}

int main(void)
{
    int count, major, minor, sms;
    char name[256], bus[32];
    CUdevice dev, again;
    CHECK(cuInit(0));
    CHECK(cuDeviceGetCount(&count));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDeviceGetName(name, sizeof name, dev));
    CHECK(cuDeviceComputeCapability(&major, &minor, dev));
    CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    CHECK(cuDeviceGetPCIBusId(bus, sizeof bus, dev));
    CHECK(cuDeviceGetByPCIBusId(&again, bus));
    size_t total;
    CHECK(cuDeviceTotalMem(&total, dev));
    int managed = -1, uva = -1;
    CHECK(cuDeviceGetAttribute(&managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, dev));
    CHECK(cuDeviceGetAttribute(&uva, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, dev));
    ASSERT(count >= 1 && major >= 7 && sms > 0 && again == dev && total > 0, "device %d %d.%d %d SMs %s", count, major, minor, sms, bus);
    ASSERT(managed == 0 && uva == 1, "managed memory %d, unified addressing %d", managed, uva);
    printf("ok   %d device(s): %s, sm_%d%d, %d SMs, %s, %zu MiB\n", count, name, major, minor, sms, bus, total >> 20);

    /* The primary context: retained twice, the same handle, active until the
     * last release. */
    CUcontext p1, p2, cur;
    unsigned flags;
    int active;
    CHECK(cuDevicePrimaryCtxRetain(&p1, dev));
    CHECK(cuDevicePrimaryCtxRetain(&p2, dev));
    ASSERT(p1 == p2, "primary contexts %p and %p", (void *)p1, (void *)p2);
    CHECK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
    ASSERT(active, "primary context inactive after retain");
    CHECK(cuCtxGetCurrent(&cur));
    ASSERT(cur == NULL, "a context is current before any was made current");

    /* The stack: push, create (pushes), pop, set. */
    CUcontext c, popped;
    CHECK(cuCtxPushCurrent(p1));
    CHECK(cuCtxCreate(&c, NULL, CU_CTX_SCHED_BLOCKING_SYNC, dev));
    CHECK(cuCtxGetCurrent(&cur));
    ASSERT(cur == c, "current %p, want the created %p", (void *)cur, (void *)c);
    CHECK(cuCtxGetFlags(&flags));
    ASSERT(flags == CU_CTX_SCHED_BLOCKING_SYNC, "flags %u", flags);
    CHECK(cuCtxPopCurrent(&popped));
    ASSERT(popped == c, "popped %p, want %p", (void *)popped, (void *)c);
    CHECK(cuCtxGetCurrent(&cur));
    ASSERT(cur == p1, "after pop %p, want the primary %p", (void *)cur, (void *)p1);
    unsigned long long id1, id2;
    CHECK(cuCtxGetId(p1, &id1));
    CHECK(cuCtxGetId(c, &id2));
    ASSERT(id1 != id2, "context ids %llu %llu", id1, id2);
    printf("ok   context stack: push, create, pop, ids\n");

    /* Another thread starts with no context and may use any. */
    pthread_t th;
    pthread_create(&th, NULL, other_thread, c);
    pthread_join(th, NULL);
    ASSERT(seen_by_thread == NULL, "a new thread saw context %p", (void *)seen_by_thread);
    CHECK(cuCtxGetCurrent(&cur));
    ASSERT(cur == p1, "the other thread changed this thread's context");
    printf("ok   per-thread current context\n");

    /* Limits and stream priorities. */
    size_t stack;
    CHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096));
    CHECK(cuCtxGetLimit(&stack, CU_LIMIT_STACK_SIZE));
    ASSERT(stack == 4096, "stack limit %zu", stack);
    EXPECT(cuCtxSetLimit((CUlimit)42, 1), CUDA_ERROR_UNSUPPORTED_LIMIT);

    /* Context-local storage through the runtime's private table. */
    CUuuid clsID = uuid("c693336e1121df11a8c368f355d89593");
    const void *table;
    CHECK(cuGetExportTable(&table, &clsID));
    void *const *cls = table;
    int key, value;
    void *got = NULL;
    EXPECT(((cls_get_fn)cls[2])(&got, NULL, &key), CUDA_ERROR_INVALID_HANDLE);
    CHECK(((cls_put_fn)cls[0])(NULL, &key, &value, NULL));
    CHECK(((cls_get_fn)cls[2])(&got, p1, &key));
    ASSERT(got == &value, "stored %p, read %p", (void *)&value, got);
    EXPECT(((cls_get_fn)cls[2])(&got, c, &key), CUDA_ERROR_INVALID_HANDLE); /* another context */
    CHECK(((cls_del_fn)cls[1])(p1, &key));
    EXPECT(((cls_get_fn)cls[2])(&got, NULL, &key), CUDA_ERROR_INVALID_HANDLE);
    printf("ok   context-local storage: put, get, delete, per context\n");

    /* The integrity check: its fixed answers for versions ending in 0 and 1. */
    CUuuid icID = uuid("d4082055bde6704b8d34ba123c66e1f2");
    CHECK(cuGetExportTable(&table, &icID));
    void *const *ic = table;
    ASSERT((size_t)ic[0] == 3 * sizeof(void *), "integrity table size %zu", (size_t)ic[0]);
    unsigned long long out[2];
    CHECK(((check_fn)ic[1])(13000, 1700000000ull, out));
    ASSERT(out[0] == 0x3341181C03CB675Cull && out[1] == 0x8ED383AA1F4CD1E8ull, "version 13000: %llx %llx", out[0], out[1]);
    CHECK(((check_fn)ic[1])(13002, 1700000000ull, out));
    printf("ok   integrity check\n");

    /* The tables the runtime cannot start without are there. */
    const char *required[] = {"6bd5fb6c5bf4e74a8987d93912fd9df9", "42d85a8123f6cb478298f6e78a3aecdc",
                              "263e88607cd2614392f6bbd5006dfa7e", "a094798c2e742e7493f20800200c0a66"};
    for (int i = 0; i < 4; i++) {
        CUuuid id = uuid(required[i]);
        table = NULL;
        CHECK(cuGetExportTable(&table, &id));
        ASSERT(table != NULL && *(const size_t *)table >= 2 * sizeof(void *), "table %s", required[i]);
    }
    printf("ok   runtime interface, tools and context-check tables\n");

    CHECK(cuCtxDestroy(c));
    EXPECT(cuCtxPushCurrent(c), CUDA_ERROR_INVALID_CONTEXT);
    CHECK(cuDevicePrimaryCtxRelease(dev));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    CHECK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
    ASSERT(!active, "primary context active after the last release");
    printf("PASS context\n");
    return 0;
}
