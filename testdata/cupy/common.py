"""Helpers for the CuPy scripts gpuos runs on the GPU and compares with native
runs: results are printed as checksums of their bytes, which must be
identical through gpuos and natively."""
import hashlib

import cupy as cp


def checksum(name, arr):
    """Print a checksum of a device or host array's bytes, with its shape."""
    host = cp.asnumpy(arr)
    digest = hashlib.sha256(host.tobytes()).hexdigest()[:16]
    print(f"checksum {name} {host.dtype}{list(host.shape)}: {digest}")


def header():
    dev = cp.cuda.Device(0)
    cc = dev.compute_capability
    print(f"device 0: sm_{cc}")
