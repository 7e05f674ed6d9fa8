// Benchmark corpus for the PTX memory guard: real kernels in CUDA C, compiled
// to PTX by nvcc and run guarded and unguarded in the same process by
// bench.c. Every kernel is deterministic (no floating-point atomics), so the
// two variants' outputs are compared bit for bit.
#include <cuda_runtime.h>

// Memory-bound: a grid-stride copy, 16 bytes per thread per step.
extern "C" __global__ void copy_f4(const float4 *__restrict__ in, float4 *__restrict__ out, unsigned long long n4) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
         i += (unsigned long long)blockDim.x * gridDim.x)
        out[i] = in[i];
}

// Memory-bound, scalar: y = a*x + y.
extern "C" __global__ void saxpy(int n, float a, const float *__restrict__ x, float *__restrict__ y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

// Compute-bound: a long chain of FMAs in registers, one store per thread.
extern "C" __global__ void fma_loop(float *out, int iters) {
    float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f, d = blockIdx.x * 0.5f;
    for (int k = 0; k < iters; k++) {
        a = fmaf(a, b, c);
        d = fmaf(d, c, b);
        b = fmaf(b, 0.999f, 1e-4f);
        c = fmaf(c, 1.0001f, -1e-4f);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + b + c + d;
}

// Reduction: each block sums 2*blockDim elements per step through shared
// memory and warp shuffles; one partial sum per block.
extern "C" __global__ void reduce_sum(const float *__restrict__ in, float *__restrict__ partial, int n) {
    extern __shared__ float sdata[];
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x * 2 + threadIdx.x; i < n; i += blockDim.x * gridDim.x * 2) {
        v += in[i];
        if (i + blockDim.x < n) v += in[i + blockDim.x];
    }
    sdata[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x < 32) {
        v = sdata[threadIdx.x] + sdata[threadIdx.x + 32];
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffff, v, off);
        if (threadIdx.x == 0) partial[blockIdx.x] = v;
    }
}

// Stencil: one Jacobi step of the 2-D five-point Laplacian.
extern "C" __global__ void jacobi2d(const float *__restrict__ in, float *__restrict__ out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x <= 0 || y <= 0 || x >= w - 1 || y >= h - 1) return;
    out[y * w + x] = 0.25f * (in[y * w + x - 1] + in[y * w + x + 1] + in[(y - 1) * w + x] + in[(y + 1) * w + x]);
}

// Stencil with a shared-memory halo: a 1-D 9-point filter.
#define R 4
extern "C" __global__ void stencil1d(const float *__restrict__ in, float *__restrict__ out, int n) {
    extern __shared__ float s[];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int l = threadIdx.x + R;
    s[l] = g < n ? in[g] : 0.0f;
    if (threadIdx.x < R) {
        s[l - R] = g >= R ? in[g - R] : 0.0f;
        s[l + blockDim.x] = g + (int)blockDim.x < n ? in[g + blockDim.x] : 0.0f;
    }
    __syncthreads();
    if (g < n) {
        float v = 0.0f;
#pragma unroll
        for (int o = -R; o <= R; o++) v += s[l + o] * (1.0f / (2 * R + 1));
        out[g] = v;
    }
}

// Scan: each block's inclusive prefix sum (Hillis-Steele, double-buffered).
extern "C" __global__ void scan_block(const int *__restrict__ in, int *__restrict__ out, int n) {
    extern __shared__ int buf[];
    int tid = threadIdx.x, i = blockIdx.x * blockDim.x + tid;
    int *a = buf, *b = buf + blockDim.x;
    a[tid] = i < n ? in[i] : 0;
    __syncthreads();
    for (int off = 1; off < blockDim.x; off <<= 1) {
        b[tid] = tid >= off ? a[tid] + a[tid - off] : a[tid];
        __syncthreads();
        int *t = a; a = b; b = t;
    }
    if (i < n) out[i] = a[tid];
}

// Tiled GEMM: C = A*B with 32x32 shared tiles (n a multiple of 32).
#define T 32
extern "C" __global__ void gemm_tiled(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int n) {
    __shared__ float As[T][T], Bs[T][T + 1];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n; t += T) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * n + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < T; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * n + col] = acc;
}

// Register-blocked GEMM: 64x64 tiles, each thread computes 4x4 outputs
// (the shape real GEMMs have: more FMAs per shared load).
#define BT 64
#define TK 16
extern "C" __global__ void gemm_reg(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int n) {
    __shared__ float As[TK][BT], Bs[TK][BT];
    int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    int row0 = blockIdx.y * BT, col0 = blockIdx.x * BT;
    float acc[4][4] = {};
    for (int t = 0; t < n; t += TK) {
        for (int e = threadIdx.x; e < TK * BT; e += 256) {
            int r = e / TK, k = e % TK;
            As[k][r] = A[(row0 + r) * n + t + k];
            int kb = e / BT, c = e % BT;
            Bs[kb][c] = B[(t + kb) * n + col0 + c];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TK; k++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = As[k][ty * 4 + i];
#pragma unroll
            for (int j = 0; j < 4; j++) b[j] = Bs[k][tx * 4 + j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) C[(row0 + ty * 4 + i) * n + col0 + tx * 4 + j] = acc[i][j];
}

// Softmax over rows: one block per row, max and sum reduced in shared memory.
extern "C" __global__ void softmax_rows(const float *__restrict__ in, float *__restrict__ out, int cols) {
    extern __shared__ float red[];
    const float *x = in + (size_t)blockIdx.x * cols;
    float *y = out + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, x[c]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += __expf(x[c] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float inv = 1.0f / red[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[c] = __expf(x[c] - m) * inv;
}

// Transpose through a padded shared tile.
#define TD 32
#define BR 8
extern "C" __global__ void transpose(const float *__restrict__ in, float *__restrict__ out, int w, int h) {
    __shared__ float tile[TD][TD + 1];
    int x = blockIdx.x * TD + threadIdx.x, y = blockIdx.y * TD + threadIdx.y;
    for (int j = 0; j < TD; j += BR)
        if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];
    __syncthreads();
    x = blockIdx.y * TD + threadIdx.x;
    y = blockIdx.x * TD + threadIdx.y;
    for (int j = 0; j < TD; j += BR)
        if (x < h && y + j < w) out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Histogram: shared-memory integer atomics, then global atomics per block.
extern "C" __global__ void histogram256(const unsigned char *__restrict__ data, unsigned *bins, int n) {
    __shared__ unsigned local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}
