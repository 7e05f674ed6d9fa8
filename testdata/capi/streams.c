/*
 * streams: stream ordering, events (record, query, synchronize, elapsed time,
 * cross-stream waits), host functions and stream callbacks in stream order,
 * and later work waiting for a host function to return.
 */
#include <unistd.h>

#include "check.h"

static int order[8];
static int norder;

static void CUDA_CB note(void *user) { order[norder++] = (int)(long)user; }

static void CUDA_CB note_status(CUstream s, CUresult status, void *user)
{
    ASSERT(status == CUDA_SUCCESS, "callback status %d", (int)status);
    order[norder++] = (int)(long)user;
}

/* slow_set sleeps, then writes the value later work must see. */
static void CUDA_CB slow_set(void *user)
{
    usleep(100 * 1000);
    *(int *)user = 42;
    order[norder++] = 3;
}

int main(int argc, char **argv)
{
    enum { N = 1 << 14 };
    CUcontext ctx = setup();
    char *ptx = read_file(kernels_dir(argc, argv), "saxpy.ptx");
    CUmodule mod;
    CUfunction saxpy;
    CHECK(cuModuleLoadData(&mod, ptx));
    CHECK(cuModuleGetFunction(&saxpy, mod, "saxpy"));

    CUstream blocking, nonblocking, prio;
    unsigned flags;
    int p, least, greatest;
    CHECK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    CHECK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
    CHECK(cuCtxGetStreamPriorityRange(&least, &greatest));
    CHECK(cuStreamCreateWithPriority(&prio, CU_STREAM_NON_BLOCKING, greatest));
    CHECK(cuStreamGetFlags(nonblocking, &flags));
    ASSERT(flags == CU_STREAM_NON_BLOCKING, "flags %u", flags);
    CHECK(cuStreamGetPriority(prio, &p));
    ASSERT(p == greatest, "priority %d, want %d", p, greatest);
    printf("ok   streams: flags and priorities (range %d..%d)\n", least, greatest);

    /* Stream order: x = 1, y = 2, then y = 3x + y twice, then read back, all
     * asynchronous on one non-blocking stream. */
    static float x[N], y[N], out[N];
    for (int i = 0; i < N; i++) {
        x[i] = 1;
        y[i] = 2;
    }
    CUdeviceptr dx, dy;
    CHECK(cuMemAlloc(&dx, sizeof x));
    CHECK(cuMemAlloc(&dy, sizeof y));
    CUevent start, stop, mid;
    CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&mid, CU_EVENT_DISABLE_TIMING));
    EXPECT(cuEventQuery(start), CUDA_SUCCESS); /* never recorded */
    CHECK(cuEventRecord(start, nonblocking));
    CHECK(cuMemcpyHtoDAsync(dx, x, sizeof x, nonblocking));
    CHECK(cuMemcpyHtoDAsync(dy, y, sizeof y, nonblocking));
    float a = 3;
    int n = N;
    void *args[] = {&n, &a, &dx, &dy};
    for (int k = 0; k < 2; k++)
        CHECK(cuLaunchKernel(saxpy, N / 256, 1, 1, 256, 1, 1, 0, nonblocking, args, NULL));
    CHECK(cuEventRecord(stop, nonblocking));
    CHECK(cuMemcpyDtoHAsync(out, dy, sizeof out, nonblocking));
    CHECK(cuStreamSynchronize(nonblocking));
    for (int i = 0; i < N; i++)
        ASSERT(out[i] == 8, "y[%d] = %g, want 8", i, out[i]);
    EXPECT(cuEventQuery(stop), CUDA_SUCCESS);
    EXPECT(cuStreamQuery(nonblocking), CUDA_SUCCESS);
    float ms = -1;
    CHECK(cuEventElapsedTime(&ms, start, stop));
    ASSERT(ms >= 0, "elapsed %g ms", ms);
    printf("ok   stream order: copies and two launches, %.3f ms between the events\n", ms);

    /* A wait across streams: the blocking stream computes y = 3x + y after
     * the non-blocking stream's copy, through an event. */
    for (int i = 0; i < N; i++)
        y[i] = 10;
    CHECK(cuMemcpyHtoDAsync(dy, y, sizeof y, nonblocking));
    CHECK(cuEventRecord(mid, nonblocking));
    CHECK(cuStreamWaitEvent(blocking, mid, 0));
    CHECK(cuLaunchKernel(saxpy, N / 256, 1, 1, 256, 1, 1, 0, blocking, args, NULL));
    CHECK(cuStreamSynchronize(blocking));
    CHECK(cuMemcpyDtoH(out, dy, sizeof out));
    for (int i = 0; i < N; i++)
        ASSERT(out[i] == 13, "y[%d] = %g, want 13", i, out[i]);
    EXPECT(cuEventElapsedTime(&ms, start, mid), CUDA_ERROR_INVALID_HANDLE); /* timing disabled */
    printf("ok   cross-stream wait on an event\n");

    /* Host functions run in stream order, after the work before them. */
    CHECK(cuLaunchKernel(saxpy, N / 256, 1, 1, 256, 1, 1, 0, nonblocking, args, NULL));
    CHECK(cuLaunchHostFunc(nonblocking, note, (void *)1));
    CHECK(cuStreamAddCallback(nonblocking, note_status, (void *)2, 0));
    /* Later work waits for a host function to return: the copy below must
     * see the value the slow host function writes into pinned memory. */
    int *pinned;
    CHECK(cuMemAllocHost((void **)&pinned, sizeof(int)));
    *pinned = 7;
    CHECK(cuLaunchHostFunc(nonblocking, slow_set, pinned));
    CUdeviceptr dv;
    CHECK(cuMemAlloc(&dv, sizeof(int)));
    CHECK(cuMemcpyHtoDAsync(dv, pinned, sizeof(int), nonblocking));
    CHECK(cuStreamAddCallback(nonblocking, note_status, (void *)4, 0));
    CHECK(cuStreamSynchronize(nonblocking));
    int v = 0;
    CHECK(cuMemcpyDtoH(&v, dv, sizeof v));
    ASSERT(v == 42, "the copy after the host function saw %d, want 42", v);
    ASSERT(norder == 4 && order[0] == 1 && order[1] == 2 && order[2] == 3 && order[3] == 4,
           "host functions ran as %d %d %d %d (%d of them)", order[0], order[1], order[2], order[3], norder);
    printf("ok   host functions and callbacks in stream order; later work waited for them\n");

    /* The legacy default stream orders with blocking streams. */
    for (int i = 0; i < N; i++)
        y[i] = 1;
    CHECK(cuMemcpyHtoDAsync(dy, y, sizeof y, blocking));
    CHECK(cuLaunchKernel(saxpy, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CHECK(cuMemcpyDtoHAsync(out, dy, sizeof out, blocking));
    CHECK(cuCtxSynchronize());
    for (int i = 0; i < N; i++)
        ASSERT(out[i] == 4, "legacy: y[%d] = %g, want 4", i, out[i]);
    printf("ok   legacy default stream synchronizes with blocking streams\n");

    CHECK(cuEventDestroy(start));
    CHECK(cuEventDestroy(stop));
    CHECK(cuEventDestroy(mid));
    EXPECT(cuEventQuery(start), CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuStreamDestroy(blocking));
    CHECK(cuStreamDestroy(nonblocking));
    CHECK(cuStreamDestroy(prio));
    CHECK(cuMemFreeHost(pinned));
    CHECK(cuCtxDestroy(ctx));
    printf("PASS streams\n");
    return 0;
}
