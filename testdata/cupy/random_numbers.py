"""Random numbers through CuPy: cuRAND's generators (cupy.random), whose
kernels are SASS inside cuRAND, so that they run only as a trusted tenant.

    python random_numbers.py > native.txt
    gpuos run -- python random_numbers.py > gpuos.txt && diff native.txt gpuos.txt
"""
import cupy as cp

from common import checksum, header

header()
rng = cp.random.RandomState(seed=7)
checksum("standard_normal", rng.standard_normal((512, 384), dtype=cp.float32))
checksum("uniform", rng.uniform(-1, 1, size=(1 << 16,), dtype=cp.float64))
checksum("randint", rng.randint(0, 1000, size=(4096,), dtype=cp.int32))
gen = cp.random.default_rng(11)
checksum("default_rng random", gen.random((1024,), dtype=cp.float32))
print("PASS random_numbers")
