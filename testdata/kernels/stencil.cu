// 1-D 5-point stencil with a shared-memory halo, and a 2-D Jacobi step.
#define R 2
extern "C" __global__ void stencil1d(const float *in, float *out, int n) {
    extern __shared__ float s[];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int l = threadIdx.x + R;
    s[l] = g < n ? in[g] : 0.0f;
    if (threadIdx.x < R) {
        s[l - R] = (g - R >= 0 && g - R < n) ? in[g - R] : 0.0f;
        int h = g + blockDim.x;
        s[l + blockDim.x] = h < n ? in[h] : 0.0f;
    }
    __syncthreads();
    if (g < n) {
        float v = 0.0f;
        for (int o = -R; o <= R; o++) v += s[l + o] * (o == 0 ? 0.5f : 0.125f);
        out[g] = v;
    }
}

extern "C" __global__ void jacobi2d(const float *in, float *out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x <= 0 || y <= 0 || x >= w - 1 || y >= h - 1) return;
    out[y * w + x] = 0.25f * (in[y * w + x - 1] + in[y * w + x + 1] + in[(y - 1) * w + x] + in[(y + 1) * w + x]);
}
