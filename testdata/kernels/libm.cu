// Full-precision libm calls: nvcc inlines long polynomial code, and sinf/cosf use a
// local-memory table for large-argument range reduction.
extern "C" __global__ void libm_f32(const float *a, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i];
    float *o = out + 6 * i;
    o[0] = sinf(x);
    o[1] = cosf(x);
    o[2] = expf(x * 0.01f);
    o[3] = logf(fabsf(x) + 1.0f);
    o[4] = powf(fabsf(x) + 0.5f, 1.7f);
    o[5] = tanhf(x * 0.001f);
}
