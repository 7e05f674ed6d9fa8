// Generic-address traffic: a device function that takes pointers which may be global,
// shared or local, a local array indexed at run time, and a 64-bit CAS loop.
__device__ __noinline__ float sum3(const float *p) { return p[0] + p[1] + p[2]; }

extern "C" __global__ void generic_mix(const float *in, float *out, unsigned long long *flags, int n) {
    __shared__ float sh[128 * 3];
    float loc[8];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int k = 0; k < 8; k++) loc[k] = in[i] * (float)k;
    int t = threadIdx.x;
    sh[3 * t] = in[i]; sh[3 * t + 1] = 1.0f; sh[3 * t + 2] = 2.0f;
    int idx = (int)in[i] & 5;
    float r = sum3(in + (i / 3) * 3) + sum3(&sh[3 * t]) + sum3(&loc[idx]);
    out[i] = r;
    unsigned long long old = flags[i % 4], assumed;
    do {
        assumed = old;
        old = atomicCAS(&flags[i % 4], assumed, assumed + 1);
    } while (old != assumed);
    atomicExch((unsigned *)&out[n + (i % 2)], 7u);
}
