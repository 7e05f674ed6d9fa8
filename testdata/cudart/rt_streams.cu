// rt_streams: streams, events, pinned memory, asynchronous copies, host
// functions and cross-stream waits through the runtime API, with a
// shared-memory reduction; prints checksums (event timings go to stderr).
//
//   nvcc -O2 -o rt_streams rt_streams.cu
//   ./rt_streams > native.txt && gpuos run -- ./rt_streams > gpuos.txt && diff native.txt gpuos.txt
#include "common.h"
#include <vector>

__global__ void saxpy(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void reduce(const float *in, float *out, int n) {
    extern __shared__ float s[];
    unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x * 2 + t;
    float v = 0;
    if (i < n) v = in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    s[t] = v;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

static int order[4], norder;
static void CUDART_CB note(void *p) { order[norder++] = (int)(long)p; }

int main() {
    const int n = 1 << 22, parts = 4, chunk = n / parts;
    float *hx, *hy;
    CHECK(cudaMallocHost(&hx, n * sizeof(float)));
    CHECK(cudaHostAlloc(&hy, n * sizeof(float), cudaHostAllocDefault));
    for (int i = 0; i < n; i++) {
        hx[i] = (float)(i % 511) * 0.25f;
        hy[i] = 1.0f;
    }
    float *dx, *dy;
    CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CHECK(cudaMalloc(&dy, n * sizeof(float)));

    // Pipelined: each stream copies in its chunk, computes, copies out.
    cudaStream_t s[parts];
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (int k = 0; k < parts; k++) CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
    CHECK(cudaEventRecord(start, s[0]));
    for (int k = 0; k < parts; k++) {
        size_t off = (size_t)k * chunk;
        CHECK(cudaMemcpyAsync(dx + off, hx + off, chunk * sizeof(float), cudaMemcpyHostToDevice, s[k]));
        CHECK(cudaMemcpyAsync(dy + off, hy + off, chunk * sizeof(float), cudaMemcpyHostToDevice, s[k]));
        saxpy<<<chunk / 256, 256, 0, s[k]>>>(chunk, 2.0f, dx + off, dy + off);
        CHECK(cudaMemcpyAsync(hy + off, dy + off, chunk * sizeof(float), cudaMemcpyDeviceToHost, s[k]));
    }
    for (int k = 1; k < parts; k++) {
        cudaEvent_t e;
        CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        CHECK(cudaEventRecord(e, s[k]));
        CHECK(cudaStreamWaitEvent(s[0], e, 0));
        CHECK(cudaEventDestroy(e));
    }
    CHECK(cudaEventRecord(stop, s[0]));
    CHECK(cudaLaunchHostFunc(s[0], note, (void *)1));
    CHECK(cudaLaunchHostFunc(s[0], note, (void *)2));
    CHECK(cudaStreamSynchronize(s[0]));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    std::fprintf(stderr, "pipelined saxpy: %.3f ms\n", ms);
    std::printf("host functions ran: %d then %d\n", order[0], order[1]);
    checksum("pipelined saxpy", hy, n * sizeof(float));

    // A shared-memory reduction on the default stream.
    const int threads = 256, blocks = n / (2 * threads);
    float *dpart;
    std::vector<float> part(blocks);
    CHECK(cudaMalloc(&dpart, blocks * sizeof(float)));
    reduce<<<blocks, threads, threads * sizeof(float)>>>(dx, dpart, n);
    CHECK(cudaMemcpy(part.data(), dpart, blocks * sizeof(float), cudaMemcpyDeviceToHost));
    double sum = 0;
    for (float p : part) sum += p;
    std::printf("reduction: %.1f\n", sum);
    checksum("reduction partials", part.data(), blocks * sizeof(float));

    // Query a stream that has work and one that has finished.
    saxpy<<<n / 256, 256, 0, s[1]>>>(n, 1.0f, dx, dy);
    CHECK(cudaStreamSynchronize(s[1]));
    std::printf("idle stream query: %s\n", cudaGetErrorName(cudaStreamQuery(s[1])));
    CHECK(cudaEventQuery(stop));

    int lo, hi;
    CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    cudaStream_t urgent;
    CHECK(cudaStreamCreateWithPriority(&urgent, cudaStreamNonBlocking, hi));
    CHECK(cudaMemsetAsync(dy, 0, n * sizeof(float), urgent));
    CHECK(cudaStreamSynchronize(urgent));
    CHECK(cudaMemcpy(hy, dy, 64, cudaMemcpyDeviceToHost));
    std::printf("after memset: %g\n", hy[0]);

    for (int k = 0; k < parts; k++) CHECK(cudaStreamDestroy(s[k]));
    CHECK(cudaStreamDestroy(urgent));
    CHECK(cudaFreeHost(hx));
    CHECK(cudaFreeHost(hy));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    CHECK(cudaFree(dpart));
    std::printf("PASS rt_streams\n");
    return 0;
}
