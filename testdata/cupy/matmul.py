"""Matrix products through CuPy: cuBLAS SGEMM and DGEMM (cupy.matmul), a
batched product, and a tiled RawKernel matmul. The inputs come from CuPy's
own elementwise kernels, not cuRAND, so that cuBLAS is all this exercises
beyond CuPy (random_numbers.py has cuRAND).

    python matmul.py > native.txt
    gpuos run -- python matmul.py > gpuos.txt && diff native.txt gpuos.txt
"""
import cupy as cp

from common import checksum, header


def inputs(shape, phase):
    """Deterministic values in [-1, 1] from a sine of the element index."""
    n = 1
    for d in shape:
        n *= d
    return cp.sin(cp.arange(n, dtype=cp.float32) * cp.float32(0.37) + cp.float32(phase)).reshape(shape)


header()
a = inputs((512, 384), 0.1)
b = inputs((384, 256), 0.7)
checksum("inputs", cp.concatenate([a.ravel(), b.ravel()]))
checksum("sgemm", a @ b)
checksum("dgemm", a.astype(cp.float64) @ b.astype(cp.float64))
batch = inputs((8, 64, 64), 1.3)
checksum("batched", cp.matmul(batch, batch))

tiled = cp.RawKernel(r'''
#define T 16
extern "C" __global__ void matmul(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float a[T][T], b[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0;
    for (int k0 = 0; k0 < K; k0 += T) {
        a[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0;
        b[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0;
        __syncthreads();
        for (int k = 0; k < T; k++) acc += a[threadIdx.y][k] * b[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}''', "matmul")
M, K = a.shape
N = b.shape[1]
c = cp.empty((M, N), dtype=cp.float32)
tiled(((N + 15) // 16, (M + 15) // 16), (16, 16), (a, b, c, cp.int32(M), cp.int32(N), cp.int32(K)))
checksum("tiled RawKernel", c)
print("max |tiled - sgemm|:", float(cp.abs(c - a @ b).max()) < 1e-3)
print("PASS matmul")
