"""Reductions through CuPy: sums, extrema, arg-reductions, a user
ReductionKernel and cumulative sums.

    python reduction.py > native.txt
    gpuos run -- python reduction.py > gpuos.txt && diff native.txt gpuos.txt
"""
import cupy as cp

from common import checksum, header

header()
n = 1 << 22
x = (cp.arange(n, dtype=cp.int64) * 2654435761 % 1000003).astype(cp.float32) / 1000
print("sum int:", int(cp.arange(n, dtype=cp.int64).sum()))
checksum("sum", x.sum())
checksum("max/min", cp.stack([x.max(), x.min()]))
print("argmax:", int(x.argmax()), "argmin:", int(x.argmin()))
m = x.reshape(1024, -1)
checksum("row sums", m.sum(axis=1))
checksum("column means", m.mean(axis=0))

l2 = cp.ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
checksum("ReductionKernel", l2(m, axis=1))
checksum("cumsum", cp.cumsum(cp.arange(1 << 16, dtype=cp.int32)))
print("PASS reduction")
