#!/usr/bin/env python3
"""Generate real-world PTX for the guard's corpus: Triton kernels (the PTX
Triton emits for this GPU) and CuPy-style kernels compiled by NVRTC.

    python3 realworld_ptx.py OUT_DIR

Each kernel that compiles is written as OUT_DIR/<source>_<name>.ptx; failures
are reported and skipped (APIs differ between versions)."""
import os
import sys
import traceback

out = sys.argv[1] if len(sys.argv) > 1 else "ptx"
os.makedirs(out, exist_ok=True)
written = 0


def save(name, ptx):
    global written
    if isinstance(ptx, tuple):  # some CuPy versions return (ptx, name mapping)
        ptx = ptx[0]
    if isinstance(ptx, bytes):
        ptx = ptx.decode()
    with open(os.path.join(out, name + ".ptx"), "w") as f:
        f.write(ptx)
    written += 1
    print("wrote", name)


# ---- Triton -------------------------------------------------------------------
try:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x, y, z, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(z + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

    @triton.jit
    def softmax_kernel(out, inp, stride, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        x = tl.load(inp + row * stride + offs, mask=offs < cols, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(out + row * stride + offs, e / tl.sum(e, axis=0), mask=offs < cols)

    @triton.jit
    def layernorm_kernel(x, y, w, b, stride, n, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x + row * stride + offs, mask=m, other=0.0).to(tl.float32)
        mean = tl.sum(v, axis=0) / n
        d = tl.where(m, v - mean, 0.0)
        var = tl.sum(d * d, axis=0) / n
        r = d / tl.sqrt(var + eps)
        tl.store(y + row * stride + offs, r * tl.load(w + offs, mask=m) + tl.load(b + offs, mask=m), mask=m)

    @triton.jit
    def matmul_kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            x = tl.load(a + rm[:, None] * sam + (k + rk)[None, :] * sak)
            y = tl.load(b + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16))

    dev = "cuda"
    n = 1 << 20
    x = torch.randn(n, device=dev)
    y = torch.randn(n, device=dev)
    z = torch.empty_like(x)
    runs = [
        ("add", lambda: add_kernel[(n // 1024,)](x, y, z, n, BLOCK=1024)),
        ("softmax", lambda: softmax_kernel[(256,)](z, x, 1024, 1000, BLOCK=1024)),
        ("layernorm", lambda: layernorm_kernel[(256,)](x, z, x, y, 1024, 1000, 1e-5, BLOCK=1024)),
    ]
    A = torch.randn(512, 512, device=dev, dtype=torch.float16)
    B = torch.randn(512, 512, device=dev, dtype=torch.float16)
    C = torch.empty(512, 512, device=dev, dtype=torch.float16)
    for bm, bn, bk in [(64, 64, 32), (128, 128, 32)]:
        runs.append((f"matmul_{bm}x{bn}x{bk}", lambda bm=bm, bn=bn, bk=bk: matmul_kernel[(512 // bm, 512 // bn)](
            A, B, C, 512, 512, 512, A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1),
            BM=bm, BN=bn, BK=bk)))
    for name, run in runs:
        try:
            k = run()
            torch.cuda.synchronize()
            save("triton_" + name, k.asm["ptx"])
        except Exception:
            print("triton", name, "failed:", traceback.format_exc().splitlines()[-1])
except Exception:
    print("triton not usable:", traceback.format_exc().splitlines()[-1])

# ---- CuPy-style kernels through NVRTC -------------------------------------------
CUPY_KERNELS = {
    "elementwise": r'''
extern "C" __global__ void axpby(const float* x, const float* y, float* z, float a, float b, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x)
        z[i] = a * x[i] + b * y[i];
}''',
    "reduction": r'''
extern "C" __global__ void rowsum(const double* x, double* out, int cols) {
    __shared__ double s[256];
    double v = 0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) v += x[(long long)blockIdx.x * cols + c];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) { if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k]; __syncthreads(); }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}''',
    "complex": r'''
#include <cuComplex.h>
extern "C" __global__ void cmul(const cuFloatComplex* a, const cuFloatComplex* b, cuFloatComplex* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = cuCmulf(a[i], b[i]);
}''',
}
try:
    import cupy
    from cupy.cuda import compiler
    cc = cupy.cuda.Device().compute_capability
    def nvrtc_ptx(src, name):
        # CuPy's compile_using_nvrtc takes arch as an int in some versions and
        # as "compute_XX" in others; NVRTC's own binding takes options as str.
        errors = []
        for arch in (int(cc), "compute_%s" % cc):
            try:
                return compiler.compile_using_nvrtc(src, options=(), arch=arch, filename=name + ".cu")
            except Exception as e:
                errors.append(repr(e))
        from cupy_backends.cuda.libs import nvrtc  # the raw NVRTC binding CuPy uses
        prog = nvrtc.createProgram(src, name + ".cu", [], [])
        nvrtc.compileProgram(prog, ["--gpu-architecture=compute_%s" % cc])
        return nvrtc.getPTX(prog)

    for name, src in CUPY_KERNELS.items():
        try:
            save("cupy_" + name, nvrtc_ptx(src, name))
        except Exception:
            print("cupy", name, "failed:", traceback.format_exc().splitlines()[-1])
except Exception:
    print("cupy not usable:", traceback.format_exc().splitlines()[-1])

print("%d PTX files in %s" % (written, out))
