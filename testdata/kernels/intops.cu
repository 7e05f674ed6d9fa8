// Integer and bit operations: shifts, logic, popc, clz, brev, mul.hi, div/rem, min/max, selects.
extern "C" __global__ void intops(const unsigned *a, const unsigned *b, unsigned *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i] | 1u;
    int sx = (int)x, sy = (int)y;
    unsigned *o = out + 12 * i;
    o[0] = (x << (y & 31)) ^ (x >> 3);
    o[1] = __popc(x) + __clz(y);
    o[2] = __brev(x);
    o[3] = __umulhi(x, y);
    o[4] = x / y;
    o[5] = x % y;
    o[6] = (unsigned)(sx / sy);
    o[7] = (unsigned)(sx % sy);
    o[8] = max(sx, sy) - min(x, y);
    o[9] = (unsigned)((long long)sx * (long long)sy >> 17);
    o[10] = sx < 0 ? ~x : (x & y) | (x ^ 0x5a5a5a5au);
    o[11] = __byte_perm(x, y, 0x5140) + (unsigned)(sx >> 5);
}

// 64-bit integer arithmetic.
extern "C" __global__ void int64ops(const unsigned long long *a, const unsigned long long *b, unsigned long long *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long x = a[i], y = b[i] | 1ull;
    long long sx = (long long)x, sy = (long long)y;
    unsigned long long *o = out + 6 * i;
    o[0] = x * y + (x >> 7);
    o[1] = x / y;
    o[2] = (unsigned long long)(sx / sy);
    o[3] = __popcll(x) + __clzll(y);
    o[4] = __umul64hi(x, y);
    o[5] = (unsigned long long)(sx % sy) ^ (x << (y & 63));
}
