// Inclusive prefix sum of each block's segment (Hillis-Steele in shared memory).
extern "C" __global__ void scan_block(const int *in, int *out, int n) {
    extern __shared__ int buf[];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    buf[tid] = i < n ? in[i] : 0;
    __syncthreads();
    for (int off = 1; off < blockDim.x; off <<= 1) {
        int t = tid >= off ? buf[tid - off] : 0;
        __syncthreads();
        buf[tid] += t;
        __syncthreads();
    }
    if (i < n) out[i] = buf[tid];
}
