/*
 * victim: one tenant of a shared GPU, run unchanged through gpuos's
 * libcuda.so.1. It fills a 1 MiB buffer with a pattern, publishes the
 * buffer's device address (CTL/victim.addr), then keeps working — a vector
 * add checked against the CPU, and its buffer read back and compared with
 * the pattern — until CTL/stop appears. Another tenant (attacker.c) aims
 * kernels at that address meanwhile. It exits 0 only if every round was
 * correct and the buffer never changed.
 *
 *   victim KERNELS_DIR CTL_DIR
 */
#include <stdint.h>
#include <unistd.h>

#include "../capi/check.h"

enum { BUF = 1 << 20, N = 4096 };

static uint32_t pattern(size_t i) { return (uint32_t)(i * 2654435761u) ^ 0x5eed5eedu; }

static int exists(const char *dir, const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

int main(int argc, char **argv)
{
    ASSERT(argc == 3, "usage: victim KERNELS_DIR CTL_DIR");
    const char *ctl = argv[2];
    CUcontext ctx = setup();
    CUmodule mod;
    CUfunction vecadd;
    CHECK(cuModuleLoadData(&mod, read_file(argv[1], "vecadd.ptx")));
    CHECK(cuModuleGetFunction(&vecadd, mod, "vecadd"));

    uint32_t *want = malloc(BUF), *got = malloc(BUF);
    for (size_t i = 0; i < BUF / 4; i++)
        want[i] = pattern(i);
    CUdeviceptr secret, a, b, c;
    CHECK(cuMemAlloc(&secret, BUF));
    CHECK(cuMemcpyHtoD(secret, want, BUF));
    CHECK(cuMemAlloc(&a, 4 * N));
    CHECK(cuMemAlloc(&b, 4 * N));
    CHECK(cuMemAlloc(&c, 4 * N));
    float *x = malloc(4 * N), *y = malloc(4 * N), *z = malloc(4 * N);
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = (float)(2 * i);
    }
    CHECK(cuMemcpyHtoD(a, x, 4 * N));
    CHECK(cuMemcpyHtoD(b, y, 4 * N));

    char path[4096];
    snprintf(path, sizeof path, "%s/victim.addr.tmp", ctl);
    FILE *f = fopen(path, "w");
    ASSERT(f != NULL, "cannot write %s", path);
    fprintf(f, "%#llx\n", (unsigned long long)secret);
    fclose(f);
    char final[4096];
    snprintf(final, sizeof final, "%s/victim.addr", ctl);
    ASSERT(rename(path, final) == 0, "cannot publish %s", final);
    printf("victim: secret at %#llx (%d bytes), working\n", (unsigned long long)secret, BUF);
    fflush(stdout);

    long rounds = 0;
    for (int last = 0; !last; rounds++) {
        last = exists(ctl, "stop"); /* one more full round after the stop */
        int n = N;
        void *args[] = {&a, &b, &c, &n};
        CHECK(cuLaunchKernel(vecadd, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
        CHECK(cuCtxSynchronize());
        CHECK(cuMemcpyDtoH(z, c, 4 * N));
        for (int i = 0; i < N; i++)
            ASSERT(z[i] == (float)(3 * i), "round %ld: c[%d] = %g, want %d", rounds, i, z[i], 3 * i);
        CHECK(cuMemcpyDtoH(got, secret, BUF));
        for (size_t i = 0; i < BUF / 4; i++)
            ASSERT(got[i] == want[i], "round %ld: the secret changed at byte %zu: %#x, want %#x", rounds, 4 * i, got[i], want[i]);
        usleep(2000);
    }
    printf("victim: %ld rounds, every vector add correct, the secret unchanged\n", rounds);
    (void)ctx;
    printf("PASS victim\n");
    return 0;
}
