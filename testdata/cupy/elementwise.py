"""Elementwise work through CuPy: arithmetic, ufuncs, a user ElementwiseKernel
and a RawKernel (compiled to PTX by NVRTC, loaded with cuModuleLoadData).

    python elementwise.py > native.txt
    gpuos run -- python elementwise.py > gpuos.txt && diff native.txt gpuos.txt
"""
import cupy as cp

from common import checksum, header

header()
n = 1 << 20
x = cp.arange(n, dtype=cp.float32) / 1024
y = cp.linspace(-1, 1, n, dtype=cp.float32)
checksum("axpy", 2.5 * x + y)
checksum("ufuncs", cp.sin(x) * cp.exp(-cp.abs(y)) + cp.sqrt(x))
checksum("int ops", (cp.arange(n, dtype=cp.int64) * 7919) % 65521)
checksum("where", cp.where(y > 0, x, -x))

poly = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * x - 3 * x * y + y", "poly")
checksum("ElementwiseKernel", poly(x, y))

raw = cp.RawKernel(r'''
extern "C" __global__ void fma3(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = fmaf(a[i], b[i], 1.0f);
}''', "fma3")
z = cp.empty_like(x)
raw(((n + 255) // 256,), (256,), (x, y, z, cp.int32(n)))
checksum("RawKernel", z)

s = cp.cuda.Stream(non_blocking=True)
with s:
    w = cp.cos(x) + 1
s.synchronize()
checksum("on a stream", w)
print("PASS elementwise")
