/* refprog.c - what the test of reftrace.sh runs: entry points found through
 * cuGetProcAddress, as the CUDA runtime finds them. */
#include <stdint.h>
#include <stdio.h>

int cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, int *status);

int main(void)
{
    int (*gpa)(const char *, void **, int, uint64_t, int *);
    int (*init)(unsigned);
    int (*version)(int *);
    if (cuGetProcAddress_v2("cuGetProcAddress", (void **)&gpa, 12000, 0, NULL) || !gpa)
        return 1;
    if (gpa("cuInit", (void **)&init, 2000, 0, NULL) || gpa("cuDriverGetVersion", (void **)&version, 2020, 0, NULL))
        return 1;
    int v = 0;
    int r1 = init(0), r2 = init(1), r3 = version(&v);
    /* A private table, as the runtime asks for them: tools_tls's UUID. */
    int (*get_table)(const void **, const unsigned char *);
    static const unsigned char tls[16] = {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
                                          0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc};
    const void *const *t = NULL;
    if (gpa("cuGetExportTable", (void **)&get_table, 3000, 0, NULL) || get_table((const void **)&t, tls) || !t)
        return 1;
    uint64_t sum = ((uint64_t(*)(uint64_t, uint64_t))t[1])(2, 3), prod = ((uint64_t(*)(uint64_t, uint64_t))t[2])(4, 5);
    printf("%d %d %d %d %llu %llu\n", r1, r2, r3, v, (unsigned long long)sum, (unsigned long long)prod);
    return r1 || r2 != 1 || r3 || v != 13000 || sum != 5 || prod != 20;
}
