// rt_vecadd: the runtime API's basics — device query, cudaMalloc, cudaMemcpy,
// cudaMemset, <<<>>> launches of a few kernels, synchronization, and errors
// reported by the runtime — printing checksums of every result.
//
//   nvcc -O2 -o rt_vecadd rt_vecadd.cu        (static cudart, the default)
//   ./rt_vecadd > native.txt && gpuos run -- ./rt_vecadd > gpuos.txt && diff native.txt gpuos.txt
#include "common.h"
#include <vector>

__global__ void vecadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

__global__ void scale(float *x, float s, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) x[i] *= s;
}

__global__ void iota(int *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = i * 3 - 7;
}

__device__ int counter;

__global__ void count(int n) {
    if (blockIdx.x * blockDim.x + threadIdx.x < n) atomicAdd(&counter, 1);
}

int main() {
    int devices = 0;
    CHECK(cudaGetDeviceCount(&devices));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int rt = 0, drv = 0;
    CHECK(cudaRuntimeGetVersion(&rt));
    CHECK(cudaDriverGetVersion(&drv));
    std::printf("devices: %d, device 0: sm_%d%d\n", devices, prop.major, prop.minor);
    std::fprintf(stderr, "device 0: %s, %d SMs, runtime %d, driver %d\n", prop.name, prop.multiProcessorCount, rt, drv);

    const int n = 1 << 20;
    std::vector<float> a(n), b(n), c(n);
    for (int i = 0; i < n; i++) {
        a[i] = 0.5f * (float)(i % 1000);
        b[i] = (float)(i % 77) - 3.0f;
    }
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, n * sizeof(float)));
    CHECK(cudaMalloc(&db, n * sizeof(float)));
    CHECK(cudaMalloc(&dc, n * sizeof(float)));
    CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    vecadd<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    CHECK(cudaGetLastError());
    scale<<<120, 512>>>(dc, 1.25f, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (c[i] != (a[i] + b[i]) * 1.25f) {
            std::fprintf(stderr, "FAIL c[%d] = %g, want %g\n", i, c[i], (a[i] + b[i]) * 1.25f);
            return 1;
        }
    checksum("vecadd+scale", c.data(), n * sizeof(float));

    // cudaMemset, device-to-device copies, cudaMemcpyDefault (unified addressing).
    CHECK(cudaMemset(db, 0, n * sizeof(float)));
    CHECK(cudaMemcpy(db, dc, n / 2 * sizeof(float), cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(c.data(), db, n * sizeof(float), cudaMemcpyDefault));
    checksum("memset+dtod", c.data(), n * sizeof(float));

    int *di;
    std::vector<int> hi(n);
    CHECK(cudaMalloc(&di, n * sizeof(int)));
    iota<<<(n + 1023) / 1024, 1024>>>(di, n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(hi.data(), di, n * sizeof(int), cudaMemcpyDeviceToHost));
    checksum("iota", hi.data(), n * sizeof(int));

    // A __device__ variable through cudaMemcpyToSymbol / FromSymbol.
    int zero = 0, got = -1;
    CHECK(cudaMemcpyToSymbol(counter, &zero, sizeof zero));
    count<<<40, 256>>>(10000);
    CHECK(cudaMemcpyFromSymbol(&got, counter, sizeof got));
    std::printf("counter: %d\n", got);

    // Errors the runtime reports: an invalid launch, and an invalid copy.
    vecadd<<<1, 4096>>>(da, db, dc, n);
    cudaError_t e = cudaGetLastError();
    std::printf("launch of 4096 threads: %s\n", cudaGetErrorName(e));
    e = cudaMemcpy(c.data(), (float *)16, 64, cudaMemcpyDeviceToHost);
    std::printf("copy from an invalid pointer: %s\n", e == cudaSuccess ? "cudaSuccess" : "error");
    cudaGetLastError();

    cudaFuncAttributes fa;
    CHECK(cudaFuncGetAttributes(&fa, vecadd));
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, vecadd, 256, 0));
    std::fprintf(stderr, "vecadd: %d registers, %d blocks of 256 per SM\n", fa.numRegs, blocks);

    size_t freeb, totalb;
    CHECK(cudaMemGetInfo(&freeb, &totalb));
    std::fprintf(stderr, "memory: %zu MiB free of %zu MiB\n", freeb >> 20, totalb >> 20);
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    CHECK(cudaFree(di));
    CHECK(cudaDeviceReset());
    std::printf("PASS rt_vecadd\n");
    return 0;
}
