/*
 * slot51 - what slots 51 and 39 of the private export table 21318c60 do on
 * a driver: cuBLASLt calls slot 51 as (CUcontext, CUstream, void **out, int)
 * before its first launch, then slot 39 as (CUcontext, out, unsigned long
 * long *) (run 11a's trace of CuPy's matmul on the real driver 580). A
 * public reading says slot 51 turns a stream as the application names it
 * (NULL: the default stream, the last argument choosing the per-thread one)
 * into the driver's stream object, and slot 39 gives that object's id, as
 * cuStreamGetId. This checks both against cuStreamGetId, for the default
 * streams and a created one, and what the slots answer to bad arguments.
 *
 *   gcc -std=gnu11 -O1 -Iinclude -o slot51 testdata/cudart/slot51.c -ldl
 *   ./slot51                              # the real driver (/usr/local/nvidia/lib64/libcuda.so.1)
 *   ./slot51 /path/to/libcuda.so.1        # another one, e.g. gpuos's, under `gpuos run`
 *
 * Each probe is printed before it runs; probes that may crash run in a
 * child process, or in this one with SLOT51_IN_PROCESS=1 (TestCAPI, on the
 * shim: a forked child of a process with the shim's Go runtime and its
 * session's threads left behind may hang in its first call). Output lines
 * are comparable between drivers except for pointer values.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda.h"

typedef CUresult (*slot51_t)(CUcontext, CUstream, void **, int, uint64_t, uint64_t);
typedef CUresult (*slot39_t)(CUcontext, void *, unsigned long long *);

static void *lib;
static const void **table;

static void *sym(const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        printf("no %s in the driver\n", name);
        exit(1);
    }
    return p;
}

static const char *rname(CUresult r)
{
    static char buf[32];
    const char *s = NULL;
    static CUresult (*name)(CUresult, const char **);
    if (!name)
        name = (CUresult(*)(CUresult, const char **))sym("cuGetErrorName");
    if (name(r, &s) == 0 && s)
        return s;
    snprintf(buf, sizeof buf, "CUresult %d", r);
    return buf;
}

static CUresult (*streamGetId)(CUstream, unsigned long long *);

static const char *what(const void *p, CUstream s)
{
    static char buf[64];
    if (p == NULL)
        return "NULL";
    if (p == (void *)CU_STREAM_LEGACY)
        return "CU_STREAM_LEGACY";
    if (p == (void *)CU_STREAM_PER_THREAD)
        return "CU_STREAM_PER_THREAD";
    if (s && p == (void *)s)
        return "the stream itself";
    snprintf(buf, sizeof buf, "another pointer %p", p);
    return buf;
}

/* one slot 51 call: the result, what it wrote (16 bytes around *out, which
 * start filled with 0xa5), and slot 39's id of it against cuStreamGetId. */
static void *probe51(const char *label, CUcontext ctx, CUstream s, int perThread, CUstream publicForId)
{
    slot51_t f51 = (slot51_t)table[51];
    slot39_t f39 = (slot39_t)table[39];
    unsigned char buf[24];
    memset(buf, 0xa5, sizeof buf);
    printf("probe: slot51(%s) ...\n", label);
    fflush(stdout);
    CUresult r = f51(ctx, s, (void **)(buf + 8), perThread, 0, 3);
    void *out;
    memcpy(&out, buf + 8, 8);
    printf("slot51(%s) = %s, out %s; bytes before/after untouched: %s/%s\n", label, rname(r),
           r == CUDA_SUCCESS ? what(out, s) : "-",
           buf[0] == 0xa5 && buf[7] == 0xa5 ? "yes" : "NO", buf[16] == 0xa5 && buf[23] == 0xa5 ? "yes" : "NO");
    if (r != CUDA_SUCCESS)
        return NULL;
    unsigned long long id = 0xdeadbeef, want = 0xdeadbeef;
    CUresult r39 = f39(ctx, out, &id);
    CUresult rid = streamGetId(publicForId, &want);
    printf("slot39(%s's object) = %s, id %llu; cuStreamGetId(%s) = %s, %llu: %s\n", label, rname(r39), id,
           what(publicForId, s), rname(rid), want, r39 == 0 && rid == 0 && id == want ? "SAME" : "DIFFERENT");
    return out;
}

/* run fn in a child: probes that may crash on a driver that does not check. */
static void guarded(const char *label, void (*fn)(void *), void *arg)
{
    const char *in = getenv("SLOT51_IN_PROCESS");
    if (in && strcmp(in, "1") == 0) {
        printf("probe (in this process): %s ...\n", label);
        fflush(stdout);
        fn(arg);
        return;
    }
    printf("probe (in a child): %s ...\n", label);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        fn(arg);
        fflush(stdout);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st))
        printf("%s: the child died of signal %d\n", label, WTERMSIG(st));
}

static CUcontext gctx;

static void nullOut(void *arg)
{
    (void)arg;
    CUresult r = ((slot51_t)table[51])(gctx, NULL, NULL, 0, 0, 0);
    printf("slot51(ctx, NULL, out=NULL, 0) = %s\n", rname(r));
}

static void bogusStream(void *arg)
{
    (void)arg;
    void *out = (void *)0x1234;
    CUresult r = ((slot51_t)table[51])(gctx, (CUstream)(uintptr_t)0x1000, &out, 0, 0, 0);
    printf("slot51(ctx, stream 0x1000, &out, 0) = %s, out %p\n", rname(r), out);
}

static void objectAsStream(void *arg)
{
    unsigned long long id = 0;
    CUresult r = streamGetId((CUstream)arg, &id);
    printf("cuStreamGetId(the NULL stream's object %p) = %s, %llu\n", arg, rname(r), id);
}

static void null39(void *arg)
{
    unsigned long long id = 0;
    CUresult r = ((slot39_t)table[39])(gctx, NULL, &id);
    printf("slot39(ctx, NULL, &id) = %s, %llu\n", rname(r), id);
    (void)arg;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/usr/local/nvidia/lib64/libcuda.so.1";
    lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        printf("dlopen %s: %s\n", path, dlerror());
        return 1;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))sym("cuInit");
    CUresult (*getExportTable)(const void **, const CUuuid *) =
        (CUresult(*)(const void **, const CUuuid *))sym("cuGetExportTable");
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))sym("cuDevicePrimaryCtxRetain");
    CUresult (*setCurrent)(CUcontext) = (CUresult(*)(CUcontext))sym("cuCtxSetCurrent");
    CUresult (*streamCreate)(CUstream *, unsigned) = (CUresult(*)(CUstream *, unsigned))sym("cuStreamCreate");
    CUresult (*ctxCreate)(CUcontext *, unsigned, CUdevice) =
        (CUresult(*)(CUcontext *, unsigned, CUdevice))sym("cuCtxCreate_v2");
    CUresult (*popCurrent)(CUcontext *) = (CUresult(*)(CUcontext *))sym("cuCtxPopCurrent_v2");
    streamGetId = (CUresult(*)(CUstream, unsigned long long *))sym("cuStreamGetId");

    CUresult r = init(0);
    printf("driver %s: cuInit %s\n", path, rname(r));
    if (r != CUDA_SUCCESS)
        return 1;
    static const CUuuid id = {{0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24,
                               0xc8, 0xf2}};
    r = getExportTable((const void **)&table, &id);
    printf("cuGetExportTable(21318c60) = %s, size word %lu\n", rname(r), r == 0 ? (unsigned long)(uintptr_t)table[0] : 0);
    if (r != CUDA_SUCCESS || (uintptr_t)table[0] < 52 * 8)
        return 1;

    /* before any context */
    void *out = (void *)0x1234;
    printf("probe: slot51(NULL ctx, NULL, &out, 0) with no context ...\n");
    fflush(stdout);
    r = ((slot51_t)table[51])(NULL, NULL, &out, 0, 0, 0);
    printf("slot51(NULL ctx, NULL, &out, 0) with no context = %s, out %p\n", rname(r), out);

    r = retain(&gctx, 0);
    printf("cuDevicePrimaryCtxRetain = %s\n", rname(r));
    if (r != CUDA_SUCCESS)
        return 1;
    setCurrent(gctx);

    void *legacy = probe51("ctx, NULL, perThread 0", gctx, NULL, 0, CU_STREAM_LEGACY);
    void *legacy2 = probe51("ctx, NULL, perThread 0, again", gctx, NULL, 0, CU_STREAM_LEGACY);
    printf("the NULL stream's object is the same each time: %s\n", legacy == legacy2 ? "yes" : "NO");
    void *pt = probe51("ctx, NULL, perThread 1", gctx, NULL, 1, CU_STREAM_PER_THREAD);
    printf("the per-thread object differs from the legacy one: %s\n", pt != legacy ? "yes" : "NO");
    probe51("ctx, CU_STREAM_LEGACY, 0", gctx, CU_STREAM_LEGACY, 0, CU_STREAM_LEGACY);
    probe51("ctx, CU_STREAM_PER_THREAD, 0", gctx, CU_STREAM_PER_THREAD, 0, CU_STREAM_PER_THREAD);
    probe51("NULL ctx (current), NULL, 0", NULL, NULL, 0, CU_STREAM_LEGACY);

    CUstream s = NULL;
    r = streamCreate(&s, 1 /* non-blocking */);
    printf("cuStreamCreate = %s\n", rname(r));
    if (r == CUDA_SUCCESS) {
        probe51("ctx, a created stream, 0", gctx, s, 0, s);
        probe51("ctx, a created stream, 1", gctx, s, 1, s);
        unsigned long long sid = 0, id39 = 0;
        CUresult a = ((slot39_t)table[39])(gctx, (void *)s, &id39);
        streamGetId(s, &sid);
        printf("slot39(ctx, the public stream handle) = %s, %llu (cuStreamGetId %llu)\n", rname(a), id39, sid);
    }

    /* another context: is the stream checked against the context? */
    CUcontext other = NULL;
    r = ctxCreate(&other, 0, 0);
    printf("cuCtxCreate (another context) = %s\n", rname(r));
    if (r == CUDA_SUCCESS) {
        if (s)
            probe51("other ctx, the primary context's stream, 0", other, s, 0, s);
        probe51("other ctx, NULL, 0", other, NULL, 0, CU_STREAM_LEGACY);
        CUcontext popped;
        popCurrent(&popped);
        setCurrent(gctx);
        probe51("primary ctx current, other ctx named, NULL, 0", other, NULL, 0, CU_STREAM_LEGACY);
    }

    guarded("slot51 with out NULL", nullOut, NULL);
    guarded("slot51 with a bogus stream", bogusStream, NULL);
    if (legacy)
        guarded("cuStreamGetId of the NULL stream's object", objectAsStream, legacy);
    guarded("slot39 of NULL", null39, NULL);
    printf("done\n");
    return 0;
}
