// rt_managed: managed memory is refused cleanly through gpuos. The program
// asks for cudaMallocManaged; natively it gets it, through gpuos it gets
// cudaErrorNotSupported, clears the error and does the same work with
// explicit copies. The checksums must match; only the "managed memory" line
// differs (it goes to stderr, so stdout compares equal).
//
//   nvcc -O2 -o rt_managed rt_managed.cu
//   ./rt_managed > native.txt && gpuos run -- ./rt_managed > gpuos.txt && diff native.txt gpuos.txt
#include "common.h"
#include <vector>

__global__ void square(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * x[i] + 1.0f;
}

int main() {
    const int n = 1 << 18;
    float *m = nullptr;
    cudaError_t e = cudaMallocManaged(&m, n * sizeof(float));
    std::vector<float> out(n);
    if (e == cudaSuccess) {
        std::fprintf(stderr, "managed memory: available\n");
        for (int i = 0; i < n; i++) m[i] = (float)(i % 100) / 8;
        square<<<n / 256, 256>>>(m, n);
        CHECK(cudaDeviceSynchronize());
        for (int i = 0; i < n; i++) out[i] = m[i];
        CHECK(cudaFree(m));
    } else {
        std::fprintf(stderr, "managed memory: refused (%s)\n", cudaGetErrorName(e));
        if (cudaGetLastError() != e) {  // the runtime records it; clear it
            std::fprintf(stderr, "FAIL the refusal was not the last error\n");
            return 1;
        }
        float *d;
        for (int i = 0; i < n; i++) out[i] = (float)(i % 100) / 8;
        CHECK(cudaMalloc(&d, n * sizeof(float)));
        CHECK(cudaMemcpy(d, out.data(), n * sizeof(float), cudaMemcpyHostToDevice));
        square<<<n / 256, 256>>>(d, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(out.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK(cudaFree(d));
    }
    checksum("square", out.data(), n * sizeof(float));
    int attr = -1;
    CHECK(cudaDeviceGetAttribute(&attr, cudaDevAttrManagedMemory, 0));
    std::fprintf(stderr, "cudaDevAttrManagedMemory: %d\n", attr);
    std::printf("PASS rt_managed\n");
    return 0;
}
