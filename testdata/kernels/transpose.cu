// Matrix transpose through a padded shared tile (bank-conflict-free), 2-D grid.
#define TD 32
#define BR 8
extern "C" __global__ void transpose(const float *in, float *out, int w, int h) {
    __shared__ float tile[TD][TD + 1];
    int x = blockIdx.x * TD + threadIdx.x;
    int y = blockIdx.y * TD + threadIdx.y;
    for (int j = 0; j < TD; j += BR)
        if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];
    __syncthreads();
    x = blockIdx.y * TD + threadIdx.x;
    y = blockIdx.x * TD + threadIdx.y;
    for (int j = 0; j < TD; j += BR)
        if (x < h && y + j < w) out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}
