// Kernels for benchmarks: empty launch, memory-bound copy-scale, FMA-bound loop.
extern "C" __global__ void empty() {}

extern "C" __global__ void scale_copy(const float *in, float *out, unsigned long long n, float s) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)blockDim.x * gridDim.x)
        out[i] = in[i] * s;
}

extern "C" __global__ void fma_loop(float *out, int iters) {
    float a = threadIdx.x * 0.001f, b = 1.0001f, c = 0.9999f, d = blockIdx.x * 0.5f;
    for (int k = 0; k < iters; k++) {
        a = fmaf(a, b, c);
        d = fmaf(d, c, b);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + d;
}

// A kernel that spins for about `ns` nanoseconds of GPU time (scheduling experiments).
extern "C" __global__ void spin(unsigned long long ns, unsigned *done) {
    unsigned long long start;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    unsigned long long now = start;
    while (now - start < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (threadIdx.x == 0) atomicAdd(done, 1u);
}
