/*
 * fakecuda.c - a stand-in for the NVIDIA driver in the test of
 * testdata/cudart/reftrace.sh: like driver 580, its cuGetProcAddress hands
 * out entry points that are not the exported functions.
 */
#include <stdint.h>
#include <string.h>

static int version(int *v)
{
    *v = 13000;
    return 0;
}

static int init(unsigned flags) { return flags ? 1 : 0; }

/* A private table: its size word, then two functions. */
static uint64_t add(uint64_t a, uint64_t b) { return a + b; }
static uint64_t mul(uint64_t a, uint64_t b) { return a * b; }
static const void *table[] = {(void *)(uintptr_t)24, (void *)add, (void *)mul};

static int export_table(const void **pt, const unsigned char *uuid)
{
    (void)uuid;
    *pt = table;
    return 0;
}

static int lookup(const char *sym, void **pfn, int ver, uint64_t flags, int *status)
{
    (void)ver;
    (void)flags;
    if (status)
        *status = 0;
    if (!strcmp(sym, "cuDriverGetVersion"))
        *pfn = (void *)version;
    else if (!strcmp(sym, "cuInit"))
        *pfn = (void *)init;
    else if (!strcmp(sym, "cuGetProcAddress"))
        *pfn = (void *)lookup;
    else if (!strcmp(sym, "cuGetExportTable"))
        *pfn = (void *)export_table;
    else {
        *pfn = 0;
        return 500;
    }
    return 0;
}

int cuInit(unsigned flags) { return init(flags); }
int cuDriverGetVersion(int *v) { return version(v); }
int cuGetExportTable(const void **pt, const unsigned char *uuid) { return export_table(pt, uuid); }
int cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, int *status)
{
    return lookup(sym, pfn, ver, flags, status);
}
int cuGetErrorName(int r, const char **s)
{
    *s = r == 0 ? "CUDA_SUCCESS" : r == 1 ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_NOT_FOUND";
    return 0;
}
