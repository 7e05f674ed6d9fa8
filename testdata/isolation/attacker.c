/*
 * attacker: another tenant of the same GPU, run through gpuos's
 * libcuda.so.1, launching one kernel of testdata/guard/attacks at the
 * victim's buffer. The attack kernels take (own, own_size, win_base,
 * win_end, victim); here every address they aim at is the victim's: own[0]
 * holds the victim's address, win_end is the victim's address and win_base
 * a page into it, so that "past the window end" and "below the window
 * base" both land in the victim's data, not in the attacker's own memory.
 *
 * It prints how gpuos stopped the attack (refused at load or launch, or
 * failed at the next synchronizing call) and exits 0 if it was stopped, 1
 * if the kernel ran to completion unhindered.
 *
 *   attacker ATTACK.ptx VICTIM_ADDR
 */
#include <stdint.h>

#include "../capi/check.h"

/* header reads "// launch: grid=N block=N [shared=N]" from the kernel's comments. */
static void header(const char *src, unsigned *grid, unsigned *block, unsigned *shared)
{
    *grid = *block = 1;
    *shared = 0;
    const char *l = strstr(src, "// launch:");
    if (l == NULL)
        return;
    const char *g = strstr(l, "grid="), *b = strstr(l, "block="), *s = strstr(l, "shared=");
    const char *eol = strchr(l, '\n');
    if (g && (!eol || g < eol))
        *grid = (unsigned)strtoul(g + 5, NULL, 0);
    if (b && (!eol || b < eol))
        *block = (unsigned)strtoul(b + 6, NULL, 0);
    if (s && (!eol || s < eol))
        *shared = (unsigned)strtoul(s + 7, NULL, 0);
}

int main(int argc, char **argv)
{
    ASSERT(argc == 3, "usage: attacker ATTACK.ptx VICTIM_ADDR");
    char dir[2048];
    snprintf(dir, sizeof dir, "%s", argv[1]);
    char *slash = strrchr(dir, '/');
    const char *base = argv[1];
    if (slash != NULL) {
        *slash = 0;
        base = slash + 1;
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    char *src = read_file(dir, base);
    CUdeviceptr victim = (CUdeviceptr)strtoull(argv[2], NULL, 0);
    setup();
    CUdeviceptr own;
    unsigned long long own_size = 1 << 16;
    CHECK(cuMemAlloc(&own, own_size));
    CHECK(cuMemsetD8(own, 0, own_size));
    CHECK(cuMemcpyHtoD(own, &victim, sizeof victim));

    CUmodule mod;
    CUresult r = cuModuleLoadData(&mod, src);
    if (r != CUDA_SUCCESS) {
        printf("attacker: %s: stopped: load refused: %s\n", argv[1], result_name(r));
        return 0;
    }
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, mod, "attack"));
    unsigned grid, block, shared;
    header(src, &grid, &block, &shared);
    CUdeviceptr win_base = victim + 4096, win_end = victim;
    void *args[] = {&own, &own_size, &win_base, &win_end, &victim};
    r = cuLaunchKernel(f, grid, 1, 1, block, 1, 1, shared, NULL, args, NULL);
    if (r != CUDA_SUCCESS) {
        printf("attacker: %s: stopped: launch refused: %s\n", argv[1], result_name(r));
        return 0;
    }
    r = cuCtxSynchronize();
    if (r != CUDA_SUCCESS) {
        printf("attacker: %s: stopped: cuCtxSynchronize = %s\n", argv[1], result_name(r));
        return 0;
    }
    printf("attacker: %s: NOT STOPPED: the kernel completed\n", argv[1]);
    return 1;
}
