/*
 * exporttables - what the REAL driver's private export tables hold and
 * answer, so that gpuos's shim can serve the same. Run it with the NVIDIA
 * driver (not under gpuos run); it needs gcc only, no CUDA headers:
 *
 *   gcc -O1 -o exporttables testdata/cudart/exporttables.c -ldl -lpthread
 *   ./exporttables tables [path/to/gpuos/libcuda.so.1]
 *   ./exporttables calls
 *
 * tables: the driver's version and devices; for each table the runtime asks
 * for (and one made-up UUID), the answer and the first 48 words (NULL, a
 * number, fn+offset into the driver, or another pointer); the integrity
 * check's answers for several runtime versions, and — given gpuos's
 * libcuda.so.1 — gpuos's answers for the same inputs (gpuos_shim_integrity):
 * MATCH, or MISMATCH with the variant of the inputs that matches, if any.
 * calls: what some slots return and do (the primary context from the runtime
 * interface, tools TLS, context id, context checks, context-local storage)
 * and how the driver treats a primary context that is not retained. Each
 * probe is printed before it runs, so a crash shows which one.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef void *CUcontext;
typedef struct {
    unsigned char b[16];
} CUuuid;

static void *lib;
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

#define CALL(fn, ...) ((CUresult(*)())sym(fn))(__VA_ARGS__)

static int safe_pipe[2];
static int readable(const void *p, void *out, size_t n)
{
    if ((uintptr_t)p < 4096)
        return 0;
    ssize_t w = write(safe_pipe[1], p, n);
    return w == (ssize_t)n && read(safe_pipe[0], out, n) == (ssize_t)n;
}

static uintptr_t text_lo, text_hi, base;
static const char *libpath = "?";

static void find_driver(void)
{
    Dl_info di;
    if (dladdr(sym("cuInit"), &di)) {
        base = (uintptr_t)di.dli_fbase;
        libpath = di.dli_fname;
    }
    char real[4096];
    const char *want = realpath(libpath, real) ? real : libpath;
    FILE *m = fopen("/proc/self/maps", "r");
    char line[4600];
    while (m && fgets(line, sizeof line, m)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && strchr(perms, 'x') && strstr(line, want)) {
            if (!text_lo || lo < text_lo)
                text_lo = lo;
            if (hi > text_hi)
                text_hi = hi;
        }
    }
    if (m)
        fclose(m);
}

static CUuuid uuid(const char *hex)
{
    CUuuid u;
    for (int i = 0; i < 16; i++)
        sscanf(hex + 2 * i, "%2hhx", &u.b[i]);
    return u;
}

static const struct {
    const char *uuid, *name;
} tables[] = {
    {"6bd5fb6c5bf4e74a8987d93912fd9df9", "cudart_interface"},
    {"a094798c2e742e7493f20800200c0a66", "tools_runtime_hooks"},
    {"42d85a8123f6cb478298f6e78a3aecdc", "tools_tls"},
    {"c693336e1121df11a8c368f355d89593", "context_local_storage"},
    {"263e88607cd2614392f6bbd5006dfa7e", "context_checks"},
    {"d4082055bde6704b8d34ba123c66e1f2", "integrity_check"},
    {"f8cff95121468b4eb9e2fb469e7c0dd9", "unknown_f8cff951"},
    {"21318c60971432488ca641ff7324c8f2", "unknown_21318c60"},
    {"69a28e9f24498b47b030c5da330ea4e9", "unknown_69a28e9f"},
    {"da9151d33ae6cc41a5c04f26d533e328", "unknown_da9151d3"},
    {"0ca50b8c1004929a89a7d0df10e77286", "ctx_create_bypass (ZLUDA)"},
    {"195bcbf4d67d024aacc51d29cea631ae", "heap_access (ZLUDA)"},
    {"b10541e1f7c7c74a9f64f223be99f1e2", "device_extended_rt (ZLUDA)"},
    {"00112233445566778899aabbccddeeff", "made up"},
};

static const void *table(const char *hex, CUresult *r)
{
    CUuuid id = uuid(hex);
    const void *t = (const void *)0x1;
    *r = CALL("cuGetExportTable", &t, &id);
    return *r == 0 ? t : NULL;
}

static void dump(const char *name, const char *hex)
{
    CUresult r;
    const void *t = table(hex, &r);
    printf("table %-28s %s: %s", name, hex, rname(r));
    if (!t) {
        printf("\n");
        return;
    }
    printf(" at driver+%#lx:", (unsigned long)((uintptr_t)t - base));
    for (int i = 0; i < 48; i++) {
        uint64_t v;
        if (!readable((const uint64_t *)t + i, &v, 8))
            break;
        if (v == 0)
            printf(" [%d]NULL", i);
        else if (v >= text_lo && v < text_hi)
            printf(" [%d]fn+%#lx", i, (unsigned long)(v - base));
        else if (v < (1u << 20))
            printf(" [%d]%llu", i, (unsigned long long)v);
        else if (v >= base && v < base + (256u << 20))
            printf(" [%d]driver+%#lx", i, (unsigned long)(v - base));
        else
            printf(" [%d]%#llx", i, (unsigned long long)v);
    }
    printf("\n");
}

struct device_record {
    unsigned char uuid[16];
    int32_t domain, bus, dev;
};

typedef CUresult (*check_fn)(uint32_t version, uint64_t secs, uint64_t out[2]);
typedef CUresult (*shim_fn)(uint32_t version, uint64_t secs, uint32_t driver, uint32_t pid, uint32_t tid, uint64_t cudart,
                            uint64_t check, uint64_t fn, const void *devices, int32_t ndev, uint64_t out[2]);

static void integrity(const char *shim_path)
{
    CUresult r;
    const void *cudart = table("6bd5fb6c5bf4e74a8987d93912fd9df9", &r);
    const void *const *check = table("d4082055bde6704b8d34ba123c66e1f2", &r);
    if (!cudart || !check) {
        printf("integrity: tables missing\n");
        return;
    }
    int driver = 0, n = 0;
    CALL("cuDriverGetVersion", &driver);
    CALL("cuDeviceGetCount", &n);
    if (n > 16)
        n = 16;
    struct device_record v1[16], v2[16];
    for (int i = 0; i < n; i++) {
        int dev = 0;
        CALL("cuDeviceGet", &dev, i);
        CALL("cuDeviceGetUuid", v1[i].uuid, dev);
        CALL("cuDeviceGetAttribute", &v1[i].domain, 50, dev);
        CALL("cuDeviceGetAttribute", &v1[i].bus, 33, dev);
        CALL("cuDeviceGetAttribute", &v1[i].dev, 34, dev);
        v2[i] = v1[i];
        CALL("cuDeviceGetUuid_v2", v2[i].uuid, dev);
    }
    shim_fn shim = NULL;
    if (shim_path) {
        void *h = dlopen(shim_path, RTLD_NOW | RTLD_LOCAL);
        shim = h ? (shim_fn)dlsym(h, "gpuos_shim_integrity") : NULL;
        if (!shim)
            printf("integrity: cannot use gpuos's %s: %s\n", shim_path, h ? "no gpuos_shim_integrity" : dlerror());
    }
    uint32_t pid = (uint32_t)getpid();
    uint32_t tid = (uint32_t)(uintptr_t)pthread_self();
    uint32_t ktid = (uint32_t)syscall(SYS_gettid);
    printf("integrity inputs: driver %d, pid %u, pthread_self %#x (gettid %u), tables driver+%#lx driver+%#lx, fn fn+%#lx, %d device(s)",
           driver, pid, tid, ktid, (unsigned long)((uintptr_t)cudart - base), (unsigned long)((uintptr_t)check - base),
           (unsigned long)((uintptr_t)check[1] - base), n);
    for (int i = 0; i < n; i++) {
        printf(" ");
        for (int k = 0; k < 16; k++)
            printf("%02x", v1[i].uuid[k]);
        printf("@%04x:%02x:%02x", v1[i].domain, v1[i].bus, v1[i].dev);
        if (memcmp(v1[i].uuid, v2[i].uuid, 16))
            printf(" (v2 uuid differs)");
    }
    printf("\n");
    static const uint32_t versions[] = {13000, 13001, 13002, 13012, 13022, 12082, 12092, 11042};
    uint64_t secs = (uint64_t)time(NULL);
    for (size_t k = 0; k < sizeof versions / sizeof versions[0]; k++) {
        uint64_t out[2] = {0, 0};
        r = ((check_fn)check[1])(versions[k], secs, out);
        printf("integrity %u at %llu: driver %s %016llx %016llx", versions[k], (unsigned long long)secs, rname(r),
               (unsigned long long)out[0], (unsigned long long)out[1]);
        if (shim) {
            /* gpuos's algorithm with the driver's inputs, then variants. */
            struct {
                const char *what;
                uint32_t driver, tid;
                const struct device_record *devs;
                int ndev;
            } variants[] = {
                {"as the runtime's inputs", (uint32_t)driver, tid, v1, n},
                {"with cuDeviceGetUuid_v2", (uint32_t)driver, tid, v2, n},
                {"with gettid", (uint32_t)driver, ktid, v1, n},
                {"with no devices", (uint32_t)driver, tid, v1, 0},
                {"with driver version 13000", 13000, tid, v1, n},
            };
            for (size_t j = 0; j < sizeof variants / sizeof variants[0]; j++) {
                uint64_t mine[2] = {0, 0};
                shim(versions[k], secs, variants[j].driver, pid, variants[j].tid, (uint64_t)(uintptr_t)cudart,
                     (uint64_t)(uintptr_t)check, (uint64_t)(uintptr_t)check[1], variants[j].devs, variants[j].ndev, mine);
                int same = mine[0] == out[0] && mine[1] == out[1];
                if (j == 0)
                    printf(" gpuos %016llx %016llx %s", (unsigned long long)mine[0], (unsigned long long)mine[1],
                           same ? "MATCH" : "MISMATCH");
                else if (same)
                    printf(" (matches %s)", variants[j].what);
                if (j == 0 && same)
                    break;
            }
        }
        printf("\n");
    }
}

static void probe(const char *what) { printf("probe: %s: ", what), fflush(stdout); }

static void calls(void)
{
    CUresult r;
    int dev = 0;
    CALL("cuDeviceGet", &dev, 0);
    void *const *cudart = table("6bd5fb6c5bf4e74a8987d93912fd9df9", &r);
    void *const *tls = table("42d85a8123f6cb478298f6e78a3aecdc", &r);
    void *const *ident = table("21318c60971432488ca641ff7324c8f2", &r);
    void *const *checks = table("263e88607cd2614392f6bbd5006dfa7e", &r);
    void *const *cls = table("c693336e1121df11a8c368f355d89593", &r);
    unsigned flags = 0;
    int active = 0;
    CUcontext cur = (CUcontext)1, p = NULL, q = NULL;

    probe("cuCtxGetCurrent before any context");
    r = CALL("cuCtxGetCurrent", &cur);
    printf("%s, %p\n", rname(r), cur);
    if (tls && tls[2]) {
        probe("tools_tls[2](&ctx) before any context");
        CUcontext c = (CUcontext)1;
        r = ((CUresult(*)(CUcontext *))tls[2])(&c);
        printf("%s, %p\n", rname(r), c);
    }
    if (cudart && cudart[2]) {
        probe("cudart_interface[2](&ctx, 0) before any retain");
        r = ((CUresult(*)(CUcontext *, int))cudart[2])(&p, dev);
        printf("%s, %p\n", rname(r), p);
        probe("cuDevicePrimaryCtxGetState after it");
        r = CALL("cuDevicePrimaryCtxGetState", dev, &flags, &active);
        printf("%s, flags %#x, active %d\n", rname(r), flags, active);
    }
    if (p) {
        probe("cuCtxSetCurrent(that context)");
        printf("%s\n", rname(CALL("cuCtxSetCurrent", p)));
        probe("cuCtxGetDevice in it, not retained");
        int d = -1;
        r = CALL("cuCtxGetDevice", &d);
        printf("%s, %d\n", rname(r), d);
        probe("cuCtxGetApiVersion of it");
        unsigned v = 0;
        r = CALL("cuCtxGetApiVersion", p, &v);
        printf("%s, %u\n", rname(r), v);
        probe("cuCtxGetFlags in it");
        r = CALL("cuCtxGetFlags", &flags);
        printf("%s, %#x\n", rname(r), flags);
        probe("cuMemAlloc_v2 in it, not retained");
        unsigned long long d_ptr = 0;
        printf("%s\n", rname(CALL("cuMemAlloc_v2", &d_ptr, (size_t)4096)));
        probe("cuCtxSynchronize in it, not retained");
        printf("%s\n", rname(CALL("cuCtxSynchronize")));
        if (cls && cls[2]) {
            probe("context_local_storage[2] (get) in it, no key");
            void *v2 = (void *)1;
            int key;
            r = ((CUresult(*)(void **, CUcontext, void *))cls[2])(&v2, NULL, &key);
            printf("%s, %p\n", rname(r), v2);
        }
        if (checks && checks[2]) {
            probe("context_checks[2](ctx, &flag, &p) on it");
            unsigned f = 0xdead;
            const void *x = (const void *)1;
            r = ((CUresult(*)(CUcontext, unsigned *, const void **))checks[2])(p, &f, &x);
            printf("%s, flag %#x, %p\n", rname(r), f, x);
        }
        probe("cuCtxSetCurrent(NULL)");
        printf("%s\n", rname(CALL("cuCtxSetCurrent", NULL)));
    }
    probe("cuDevicePrimaryCtxRetain");
    r = CALL("cuDevicePrimaryCtxRetain", &q, dev);
    printf("%s, %p (%s the runtime interface's)\n", rname(r), q, q == p ? "the same as" : "NOT");
    CALL("cuCtxSetCurrent", q);
    if (tls && tls[2]) {
        probe("tools_tls[2](&ctx) with it current");
        CUcontext c = NULL;
        r = ((CUresult(*)(CUcontext *))tls[2])(&c);
        printf("%s, %p (%s the current context)\n", rname(r), c, c == q ? "is" : "is NOT");
    }
    if (ident && ident[4]) {
        unsigned long long id = 0, want = 0;
        CALL("cuCtxGetId", q, &want);
        probe("unknown_21318c60[4](ctx, &id)");
        r = ((CUresult(*)(CUcontext, unsigned long long *))ident[4])(q, &id);
        printf("%s, %llu (cuCtxGetId says %llu)\n", rname(r), id, want);
    }
    if (checks && checks[3]) {
        probe("context_checks[3]()");
        printf("%#x\n", ((unsigned (*)(void))checks[3])());
    }
    probe("cuCtxGetApiVersion of the retained primary context");
    unsigned v = 0;
    r = CALL("cuCtxGetApiVersion", q, &v);
    printf("%s, %u\n", rname(r), v);
    probe("cuDevicePrimaryCtxRelease_v2");
    printf("%s\n", rname(CALL("cuDevicePrimaryCtxRelease_v2", dev)));
    probe("cuMemAlloc_v2 in it after the last release");
    unsigned long long d_ptr = 0;
    printf("%s\n", rname(CALL("cuMemAlloc_v2", &d_ptr, (size_t)4096)));
    probe("cuDevicePrimaryCtxRelease_v2 once more");
    printf("%s\n", rname(CALL("cuDevicePrimaryCtxRelease_v2", dev)));
    probe("cuCtxPopCurrent_v2 of an empty stack");
    CALL("cuCtxSetCurrent", NULL);
    CUcontext popped = NULL;
    printf("%s\n", rname(CALL("cuCtxPopCurrent_v2", &popped)));
    probe("cuGetProcAddress_v2(\"\", ...)");
    void *fn = (void *)1;
    int st = -1;
    r = CALL("cuGetProcAddress_v2", "", &fn, 0, 0ull, &st);
    printf("%s, %p, status %d\n", rname(r), fn, st);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "tables";
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("dlopen libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    if (pipe2(safe_pipe, O_CLOEXEC) != 0)
        return 1;
    find_driver();
    if (dlsym(lib, "gpuos_shim_version"))
        printf("WARNING: this is gpuos's shim, not the NVIDIA driver\n");
    int driver = 0, n = 0;
    CUresult r = CALL("cuInit", 0u);
    CALL("cuDriverGetVersion", &driver);
    CALL("cuDeviceGetCount", &n);
    printf("driver %s: cuInit %s, version %d, %d device(s)\n", libpath, rname(r), driver, n);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(mode, "calls")) {
        calls();
        return 0;
    }
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        dump(tables[i].name, tables[i].uuid);
    integrity(argc > 2 ? argv[2] : NULL);
    return 0;
}
