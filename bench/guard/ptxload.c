/*
 * ptxload: load PTX modules with the real driver (ptxas through the JIT) and
 * report, per file, whether it loaded. A JIT error does not harm the context,
 * so one process loads them all.
 *
 *   ptxload FILE...      prints "ok FILE MS" or "FAIL FILE ERROR: first log line"
 *
 * Build: nvcc -O2 -o ptxload ptxload.c -lcuda
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "ptxload: no CUDA device\n");
        return 2;
    }
    static char log[1 << 16];
    int ok = 0, n = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            printf("FAIL %s open\n", argv[i]);
            continue;
        }
        fseek(f, 0, SEEK_END);
        long sz = ftell(f);
        fseek(f, 0, SEEK_SET);
        char *src = malloc(sz + 1);
        size_t got = fread(src, 1, sz, f);
        fclose(f);
        src[got] = 0;
        log[0] = 0;
        CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void *vals[] = {log, (void *)(uintptr_t)sizeof log};
        CUmodule m;
        double t0 = now_ms();
        CUresult r = cuModuleLoadDataEx(&m, src, 2, opts, vals);
        double ms = now_ms() - t0;
        n++;
        if (r == CUDA_SUCCESS) {
            ok++;
            printf("ok %s %.1f\n", argv[i], ms);
            cuModuleUnload(m);
        } else {
            const char *name = "?";
            cuGetErrorName(r, &name);
            char *nl = strchr(log, '\n');
            if (nl) *nl = 0;
            printf("FAIL %s %s: %s\n", argv[i], name, log);
        }
        fflush(stdout);
        free(src);
    }
    fprintf(stderr, "ptxload: %d/%d loaded\n", ok, n);
    return 0;
}
