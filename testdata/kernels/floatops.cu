// Floating-point coverage: division, sqrt, rsqrt, min/max, conversions, fast intrinsics, f64.
extern "C" __global__ void floatops(const float *a, const float *b, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i];
    float *o = out + 12 * i;
    o[0] = x / y;
    o[1] = sqrtf(fabsf(x));
    o[2] = rsqrtf(fabsf(y) + 1.0f);
    o[3] = fminf(x, y) + fmaxf(x, y);
    o[4] = fmaf(x, y, 1.5f);
    o[5] = (float)(int)x + (float)(unsigned)fabsf(y);
    o[6] = __fdividef(x, y);
    o[7] = __expf(x * 0.1f) + __logf(fabsf(y) + 1.0f);
    o[8] = __sinf(x) + __cosf(y);
    o[9] = floorf(x) + ceilf(y) + truncf(x * y) + rintf(y);
    o[10] = copysignf(x, y) * (x > y ? 1.0f : -1.0f);
    o[11] = (float)((double)x * (double)y + 1.0 / (double)(y == 0.0f ? 1.0f : y));
}

extern "C" __global__ void doubleops(const double *a, const double *b, double *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = a[i], y = b[i];
    double *o = out + 6 * i;
    o[0] = x / y;
    o[1] = sqrt(fabs(x));
    o[2] = fmin(x, y) * fmax(x, y);
    o[3] = fma(x, y, -x);
    o[4] = (double)(long long)x + (double)(float)y;
    o[5] = floor(x) - ceil(y);
}
