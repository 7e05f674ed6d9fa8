// Special registers and warp votes: tid/ntid/ctaid/nctaid/laneid, ballot, any/all.
extern "C" __global__ void special_regs(unsigned *out) {
    unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    unsigned b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    unsigned per = blockDim.x * blockDim.y * blockDim.z;
    unsigned *o = out + 8 * (b * per + t);
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    o[0] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z;
    o[1] = blockIdx.x + 10 * blockIdx.y + 100 * blockIdx.z;
    o[2] = blockDim.x + 10 * blockDim.y + 100 * blockDim.z;
    o[3] = gridDim.x + 10 * gridDim.y + 100 * gridDim.z;
    o[4] = lane;
    o[5] = __ballot_sync(0xffffffff, (t & 3) == 0);
    o[6] = __any_sync(0xffffffff, t == 5) + 2 * __all_sync(0xffffffff, t < 1000);
    o[7] = __shfl_sync(0xffffffff, t * 3, 0) + __shfl_xor_sync(0xffffffff, t, 1);
}
