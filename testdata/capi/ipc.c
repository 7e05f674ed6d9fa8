/*
 * ipc: CUDA IPC between two processes. The parent allocates device memory,
 * writes a pattern and exports it with cuIpcGetMemHandle; the child (a new
 * program: fork and exec, since a driver library may run threads that a
 * plain fork does not carry over) opens the handle, reads the pattern,
 * writes a block back and closes it; the parent then reads the child's
 * write. Under gpuos the processes are two sessions (possibly of two
 * tenants): the handle carries a grant, the child's mapping is the same
 * device memory at an address of its own.
 */
#include "check.h"

#include <sys/wait.h>
#include <unistd.h>

enum { N = 4 << 20, BACK = 4096 }; /* N: at least the device's granularity */

static unsigned char pattern(size_t i) { return (unsigned char)(i * 7 + 3); }

static int child(int rfd, int wfd)
{
    CUipcMemHandle h;
    ASSERT(read(rfd, &h, sizeof h) == (ssize_t)sizeof h, "child: no handle from the parent");
    CUcontext ctx = setup();
    CUdeviceptr p, p2;
    CHECK(cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    CHECK(cuIpcOpenMemHandle(&p2, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    ASSERT(p2 == p, "opening a handle twice gave %#llx and %#llx", (unsigned long long)p, (unsigned long long)p2);
    CHECK(cuIpcCloseMemHandle(p2));
    unsigned char *buf = malloc(N);
    ASSERT(buf != NULL, "out of host memory");
    CHECK(cuMemcpyDtoH(buf, p, N));
    for (size_t i = 0; i < N; i++)
        ASSERT(buf[i] == pattern(i), "child: byte %zu is %u, want %u", i, buf[i], pattern(i));
    printf("ok   child read the parent's %d bytes through the handle\n", N);
    memset(buf, 0xEE, BACK);
    CHECK(cuMemcpyHtoD(p, buf, BACK));
    CHECK(cuCtxSynchronize());
    CHECK(cuIpcCloseMemHandle(p));
    EXPECT(cuIpcCloseMemHandle(p), CUDA_ERROR_INVALID_VALUE);
    char done = 1;
    ASSERT(write(wfd, &done, 1) == 1, "child: cannot tell the parent");
    CHECK(cuCtxDestroy(ctx));
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--child") == 0)
        return child(atoi(argv[2]), atoi(argv[3]));
    int down[2], up[2];
    ASSERT(pipe(down) == 0 && pipe(up) == 0, "pipe");
    pid_t pid = fork();
    ASSERT(pid >= 0, "fork");
    if (pid == 0) {
        char rfd[16], wfd[16];
        snprintf(rfd, sizeof rfd, "%d", down[0]);
        snprintf(wfd, sizeof wfd, "%d", up[1]);
        execl("/proc/self/exe", argv[0], "--child", rfd, wfd, (char *)NULL);
        perror("exec");
        _exit(1);
    }

    CUcontext ctx = setup();
    CUdeviceptr d;
    CHECK(cuMemAlloc(&d, N));
    unsigned char *buf = malloc(N);
    ASSERT(buf != NULL, "out of host memory");
    for (size_t i = 0; i < N; i++)
        buf[i] = pattern(i);
    CHECK(cuMemcpyHtoD(d, buf, N));
    CUipcMemHandle h, h2;
    CHECK(cuIpcGetMemHandle(&h, d));
    CHECK(cuIpcGetMemHandle(&h2, d));
    ASSERT(memcmp(&h, &h2, sizeof h) == 0, "two handles for one allocation differ");
    EXPECT(cuIpcGetMemHandle(&h2, d + 256), CUDA_ERROR_INVALID_VALUE);
    ASSERT(write(down[1], &h, sizeof h) == (ssize_t)sizeof h, "cannot send the handle");
    char done = 0;
    ASSERT(read(up[0], &done, 1) == 1 && done == 1, "the child did not finish");
    int status = 0;
    ASSERT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "the child failed (status %#x)", status);
    CHECK(cuMemcpyDtoH(buf, d, BACK));
    for (size_t i = 0; i < BACK; i++)
        ASSERT(buf[i] == 0xEE, "parent: byte %zu is %u: the child's write is not there", i, buf[i]);
    printf("ok   parent reads what the child wrote\n");
    CHECK(cuMemFree(d));
    CHECK(cuCtxDestroy(ctx));
    free(buf);
    printf("PASS ipc\n");
    return 0;
}
