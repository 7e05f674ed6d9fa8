package interp

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// Every kernel in testdata/kernels, compiled by nvcc 13.0 for sm_80 (.ptx) and
// sm_90 (.sm_90.ptx), runs on random inputs and is compared with a CPU
// reference written in Go: bit-exact wherever the kernel's operations are
// exactly rounded, within a stated tolerance where it uses .approx
// instructions or libm polynomials.

var variants = []string{".ptx", ".sm_90.ptx"}

func forVariants(t *testing.T, base string, f func(t *testing.T, p *Program)) {
	for _, v := range variants {
		t.Run(base+v, func(t *testing.T) { f(t, compileFile(t, base+v)) })
	}
}

func kernel(t *testing.T, p *Program, name string) *Kernel {
	t.Helper()
	k, err := p.Kernel(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Independent references for exactly rounded operations, via math/big.

func refFma32(a, b, c float32) float32 {
	if !finite32(a) || !finite32(b) || !finite32(c) {
		return float32(math.FMA(float64(a), float64(b), float64(c))) // no rounding involved
	}
	x := new(big.Float).SetPrec(1000).Mul(big.NewFloat(float64(a)), big.NewFloat(float64(b)))
	x.Add(x, big.NewFloat(float64(c)))
	if x.Sign() == 0 {
		return a*b + c // the exact zero's sign: IEEE's rule, as the hardware sum gives it
	}
	f, _ := x.Float32()
	return f
}

func refFma64(a, b, c float64) float64 { return math.FMA(a, b, c) }

// refCvtInt32 is C's conversion with PTX's saturation (cvt.rzi.s32.f32).
func refCvtInt32(x float32) int32 {
	switch {
	case x != x:
		return 0
	case x >= 2147483648:
		return math.MaxInt32
	case x <= -2147483649:
		return math.MinInt32
	}
	return int32(math.Trunc(float64(x)))
}

func refCvtUint32(x float32) uint32 {
	switch {
	case x != x || x <= -1:
		return 0
	case x >= 4294967296:
		return math.MaxUint32
	}
	return uint32(math.Trunc(float64(x)))
}

func refMin32(a, b float32) float32 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == b && math.Signbit(float64(a)):
		return a
	case a == b:
		return b
	case a < b:
		return a
	}
	return b
}

func refMax32(a, b float32) float32 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == b && math.Signbit(float64(a)):
		return b
	case a == b:
		return a
	case a > b:
		return a
	}
	return b
}

// ulps is the distance between two floats in units in the last place.
func ulps32(a, b float32) float64 {
	if a == b || a != a && b != b {
		return 0
	}
	ia, ib := int64(math.Float32bits(a)), int64(math.Float32bits(b))
	if ia < 0x80000000 != (ib < 0x80000000) {
		return math.Inf(1)
	}
	return math.Abs(float64(ia - ib))
}

// near reports whether got is within tolUlp ulps or absTol of want.
func near32(got, want float32, tolUlp float64, absTol float64) bool {
	if got == want || got != got && want != want {
		return true
	}
	if math.Abs(float64(got)-float64(want)) <= absTol {
		return true
	}
	return ulps32(got, want) <= tolUlp
}

func same32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

func same64f(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b
}

func randF32s(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return v
}

// --- kernels ---

func TestKernelSaxpy(t *testing.T) {
	forVariants(t, "saxpy", func(t *testing.T, p *Program) {
		r := rand.New(rand.NewPCG(2, 1))
		n := 3000
		mem := newDevMem()
		xa, xb := mem.alloc(4 * n)
		ya, yb := mem.alloc(4 * n)
		x, y := randF32s(r, n, 10), randF32s(r, n, 10)
		putF32s(xb, x)
		putF32s(yb, y)
		a := float32(1.7)
		run(t, kernel(t, p, "saxpy"), mem, dim(5, 1, 1), dim(128, 1, 1), 0, n, a, xa, ya)
		for i, got := range f32s(yb) {
			if want := refFma32(x[i], a, y[i]); !same32(got, want) {
				t.Fatalf("y[%d] = %v, want %v", i, got, want)
			}
		}
		// daxpy
		xa, xb = mem.alloc(8 * n)
		ya, yb = mem.alloc(8 * n)
		xd, yd := make([]float64, n), make([]float64, n)
		for i := range xd {
			xd[i], yd[i] = r.NormFloat64(), r.NormFloat64()
		}
		putF64s(xb, xd)
		putF64s(yb, yd)
		run(t, kernel(t, p, "daxpy"), mem, dim(3, 1, 1), dim(256, 1, 1), 0, n, 2.5, xa, ya)
		for i, got := range f64s(yb) {
			if want := refFma64(xd[i], 2.5, yd[i]); !same64f(got, want) {
				t.Fatalf("daxpy y[%d] = %v, want %v", i, got, want)
			}
		}
	})
}

func TestKernelBench(t *testing.T) {
	forVariants(t, "bench", func(t *testing.T, p *Program) {
		mem := newDevMem()
		res := run(t, kernel(t, p, "empty"), mem, dim(4, 1, 1), dim(64, 1, 1), 0)
		if res.Blocks != 4 || res.Instructions != 4*64 {
			t.Errorf("empty: %+v, want 4 blocks of 64 one-instruction threads", res)
		}

		r := rand.New(rand.NewPCG(3, 1))
		n := 5000
		ia, ib := mem.alloc(4 * n)
		oa, ob := mem.alloc(4 * n)
		in := randF32s(r, n, 100)
		putF32s(ib, in)
		run(t, kernel(t, p, "scale_copy"), mem, dim(7, 1, 1), dim(96, 1, 1), 0, ia, oa, uint64(n), float32(0.37))
		for i, got := range f32s(ob) {
			if want := in[i] * 0.37; !same32(got, want) {
				t.Fatalf("scale_copy out[%d] = %v, want %v", i, got, want)
			}
		}

		const iters = 37
		blocks, threads := 3, 64
		oa, ob = mem.alloc(4 * blocks * threads)
		run(t, kernel(t, p, "fma_loop"), mem, dim(uint32(blocks), 1, 1), dim(uint32(threads), 1, 1), 0, oa, iters)
		out := f32s(ob)
		for bi := 0; bi < blocks; bi++ {
			for ti := 0; ti < threads; ti++ {
				a, b, c, d := float32(ti)*0.001, float32(1.0001), float32(0.9999), float32(bi)*0.5
				for k := 0; k < iters; k++ {
					a = refFma32(a, b, c)
					d = refFma32(d, c, b)
				}
				if got, want := out[bi*threads+ti], a+d; !same32(got, want) {
					t.Fatalf("fma_loop out[%d,%d] = %v, want %v", bi, ti, got, want)
				}
			}
		}

		// spin: %globaltimer advances with the instructions executed.
		da, db := mem.alloc(4)
		k := kernel(t, p, "spin")
		_, err := k.Run(context.Background(), Launch{Grid: dim(3, 1, 1), Block: dim(32, 1, 1),
			Params: packParams(t, k, uint64(2000), da), Global: mem, StartNs: 1 << 40, NsPerInstruction: 1.5})
		if err != nil {
			t.Fatal(err)
		}
		if got := u32s(db)[0]; got != 3 {
			t.Errorf("spin: done = %d, want 3", got)
		}
	})
}

func TestKernelFloatops(t *testing.T) {
	forVariants(t, "floatops", func(t *testing.T, p *Program) {
		r := rand.New(rand.NewPCG(4, 1))
		n := 2000
		x, y := randF32s(r, n, 20), randF32s(r, n, 20)
		specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -2.5, 3.5, 1e-40, -1e-40,
			float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3e9, -3e9, 16777217}
		for i, s := range specials {
			x[i] = s
			y[len(specials)-1-i] = s
			x[100+i], y[100+i] = s, s
		}
		mem := newDevMem()
		aa, ab := mem.alloc(4 * n)
		ba, bb := mem.alloc(4 * n)
		oa, ob := mem.alloc(4 * 12 * n)
		putF32s(ab, x)
		putF32s(bb, y)
		run(t, kernel(t, p, "floatops"), mem, dim(uint32((n+255)/256), 1, 1), dim(256, 1, 1), 0, aa, ba, oa, n)
		out := f32s(ob)
		for i := 0; i < n; i++ {
			xi, yi := x[i], y[i]
			o := out[12*i : 12*i+12]
			ay := float32(math.Abs(float64(yi)))
			sel := float32(-1)
			if xi > yi {
				sel = 1
			}
			yd := yi
			if yd == 0 {
				yd = 1
			}
			exact := map[int]float32{
				0:  xi / yi,
				1:  float32(math.Sqrt(math.Abs(float64(xi)))),
				3:  refMin32(xi, yi) + refMax32(xi, yi),
				4:  refFma32(xi, yi, 1.5),
				5:  float32(refCvtInt32(xi)) + float32(refCvtUint32(ay)),
				9:  float32(math.Floor(float64(xi))) + float32(math.Ceil(float64(yi))) + float32(math.Trunc(float64(xi*yi))) + float32(math.RoundToEven(float64(yi))),
				10: float32(math.Copysign(float64(xi), float64(yi))) * sel,
				11: float32(math.FMA(float64(xi), float64(yi), 1/float64(yd))),
			}
			for j, want := range exact {
				if !same32(o[j], want) {
					t.Fatalf("x=%v y=%v: o[%d] = %v (%#x), want %v (%#x)", xi, yi, j, o[j], math.Float32bits(o[j]), want, math.Float32bits(want))
				}
			}
			// Approximate outputs: within the .approx bounds.
			if xi != xi || yi != yi || math.IsInf(float64(xi), 0) || math.IsInf(float64(yi), 0) {
				continue
			}
			approx := []struct {
				j        int
				want     float64
				ulp, abs float64
			}{
				{2, 1 / math.Sqrt(float64(ay)+1), 2, 0},
				{6, float64(xi) / float64(yi), 2, 0},
				{7, math.Exp(float64(xi)*0.1) + math.Log(float64(ay)+1), 64, 1e-5},
				{8, math.Sin(float64(xi)) + math.Cos(float64(yi)), 0, 1e-5},
			}
			for _, a := range approx {
				if math.Abs(float64(yi)) > 0x1p126 && a.j == 6 {
					continue
				}
				if !near32(o[a.j], float32(a.want), a.ulp, a.abs*math.Max(1, math.Abs(a.want))) {
					t.Fatalf("x=%v y=%v: o[%d] = %v, want about %v", xi, yi, a.j, o[a.j], a.want)
				}
			}
		}

		// doubleops
		xd, yd := make([]float64, n), make([]float64, n)
		for i := range xd {
			xd[i], yd[i] = r.NormFloat64()*1e3, r.NormFloat64()*1e3
		}
		for i, s := range []float64{0, math.Copysign(0, -1), math.Inf(1), math.NaN(), 1e300, -1e-310, 9.3e18, -9.3e18} {
			xd[i], yd[i+10], xd[20+i], yd[20+i] = s, s, s, s
		}
		aa, ab = mem.alloc(8 * n)
		ba, bb = mem.alloc(8 * n)
		oa, ob = mem.alloc(8 * 6 * n)
		putF64s(ab, xd)
		putF64s(bb, yd)
		run(t, kernel(t, p, "doubleops"), mem, dim(uint32((n+127)/128), 1, 1), dim(128, 1, 1), 0, aa, ba, oa, n)
		outd := f64s(ob)
		for i := 0; i < n; i++ {
			a, b := xd[i], yd[i]
			want := []float64{
				a / b,
				math.Sqrt(math.Abs(a)),
				refMin64(a, b) * refMax64(a, b),
				math.FMA(a, b, -a),
				float64(refCvtInt64(a)) + float64(float32(b)),
				math.Floor(a) - math.Ceil(b),
			}
			for j, w := range want {
				if got := outd[6*i+j]; !same64f(got, w) {
					t.Fatalf("doubleops x=%v y=%v: o[%d] = %v, want %v", a, b, j, got, w)
				}
			}
		}
	})
}

func refMin64(a, b float64) float64 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == b && math.Signbit(a):
		return a
	case a == b:
		return b
	}
	return math.Min(a, b)
}

func refMax64(a, b float64) float64 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == b && math.Signbit(a):
		return b
	case a == b:
		return a
	}
	return math.Max(a, b)
}

func refCvtInt64(x float64) int64 {
	switch {
	case x != x:
		return 0
	case x >= 0x1p63:
		return math.MaxInt64
	case x < -0x1p63:
		return math.MinInt64
	}
	return int64(math.Trunc(x))
}

func TestKernelIntops(t *testing.T) {
	forVariants(t, "intops", func(t *testing.T, p *Program) {
		r := rand.New(rand.NewPCG(5, 1))
		n := 3000
		a, b := make([]uint32, n), make([]uint32, n)
		for i := range a {
			a[i], b[i] = r.Uint32()>>r.IntN(32), r.Uint32()>>r.IntN(32)
		}
		for i, s := range []uint32{0, 1, 0x80000000, 0xffffffff, 0x7fffffff} {
			a[i], b[i+5], a[10+i], b[10+i] = s, s, s, s
		}
		mem := newDevMem()
		aa, ab := mem.alloc(4 * n)
		ba, bb := mem.alloc(4 * n)
		oa, ob := mem.alloc(4 * 12 * n)
		putU32s(ab, a)
		putU32s(bb, b)
		run(t, kernel(t, p, "intops"), mem, dim(uint32((n+127)/128), 1, 1), dim(128, 1, 1), 0, aa, ba, oa, n)
		out := u32s(ob)
		for i := 0; i < n; i++ {
			x, y := a[i], b[i]|1
			sx, sy := int32(x), int32(y)
			hi, _ := bits.Mul32(x, y)
			var o10 uint32
			if sx < 0 {
				o10 = ^x
			} else {
				o10 = (x & y) | (x ^ 0x5a5a5a5a)
			}
			want := []uint32{
				x<<(y&31) ^ x>>3,
				uint32(bits.OnesCount32(x) + bits.LeadingZeros32(y)),
				bits.Reverse32(x),
				hi,
				x / y,
				x % y,
				uint32(sx / sy),
				uint32(sx % sy),
				uint32(max(sx, sy)) - min(x, y),
				uint32(int64(sx) * int64(sy) >> 17),
				o10,
				refBytePerm(x, y, 0x5140) + uint32(sx>>5),
			}
			for j, w := range want {
				if got := out[12*i+j]; got != w {
					t.Fatalf("intops x=%#x y=%#x: o[%d] = %#x, want %#x", x, y, j, got, w)
				}
			}
		}

		a64, b64 := make([]uint64, n), make([]uint64, n)
		for i := range a64 {
			a64[i], b64[i] = r.Uint64()>>r.IntN(64), r.Uint64()>>r.IntN(64)
		}
		for i, s := range []uint64{0, 1, 1 << 63, math.MaxUint64, math.MaxInt64} {
			a64[i], b64[i+5], a64[10+i], b64[10+i] = s, s, s, s
		}
		aa, ab = mem.alloc(8 * n)
		ba, bb = mem.alloc(8 * n)
		oa, ob = mem.alloc(8 * 6 * n)
		putU64s(ab, a64)
		putU64s(bb, b64)
		run(t, kernel(t, p, "int64ops"), mem, dim(uint32((n+63)/64), 1, 1), dim(64, 1, 1), 0, aa, ba, oa, n)
		out64 := u64s(ob)
		for i := 0; i < n; i++ {
			x, y := a64[i], b64[i]|1
			sx, sy := int64(x), int64(y)
			hi, _ := bits.Mul64(x, y)
			want := []uint64{
				x*y + x>>7,
				x / y,
				uint64(sx / sy),
				uint64(bits.OnesCount64(x) + bits.LeadingZeros64(y)),
				hi,
				uint64(sx%sy) ^ x<<(y&63),
			}
			for j, w := range want {
				if got := out64[6*i+j]; got != w {
					t.Fatalf("int64ops x=%#x y=%#x: o[%d] = %#x, want %#x", x, y, j, got, w)
				}
			}
		}
	})
}

// refBytePerm is CUDA's __byte_perm: byte k of the result is byte s[4k+2:4k]
// of the eight bytes {y, x} (x the low four).
func refBytePerm(x, y, s uint32) uint32 {
	v := uint64(y)<<32 | uint64(x)
	var d uint32
	for k := 0; k < 4; k++ {
		sel := s >> (4 * k) & 7
		d |= uint32(v>>(8*sel)&0xff) << (8 * k)
	}
	return d
}

func TestKernelHistogram(t *testing.T) {
	forVariants(t, "histogram", func(t *testing.T, p *Program) {
		r := rand.New(rand.NewPCG(6, 1))
		n := 20000
		mem := newDevMem()
		da, db := mem.alloc(n)
		ba, bb := mem.alloc(4 * 256)
		want := make([]uint32, 256)
		for i := range db {
			db[i] = byte(r.IntN(256) & r.IntN(256))
			want[db[i]]++
		}
		run(t, kernel(t, p, "histogram256"), mem, dim(9, 1, 1), dim(192, 1, 1), 0, da, ba, n)
		for i, got := range u32s(bb) {
			if got != want[i] {
				t.Fatalf("bin %d = %d, want %d", i, got, want[i])
			}
		}
	})
}

func TestKernelMatmul(t *testing.T) {
	forVariants(t, "matmul", func(t *testing.T, p *Program) {
		r := rand.New(rand.NewPCG(7, 1))
		M, N, K := 37, 45, 53
		A, B := randF32s(r, M*K, 1), randF32s(r, K*N, 1)
		mem := newDevMem()
		aa, ab := mem.alloc(4 * M * K)
		ba, bb := mem.alloc(4 * K * N)
		ca, cb := mem.alloc(4 * M * N)
		putF32s(ab, A)
		putF32s(bb, B)
		run(t, kernel(t, p, "matmul_tiled"), mem, dim(uint32((N+15)/16), uint32((M+15)/16), 1), dim(16, 16, 1), 0, aa, ba, ca, M, N, K)
		C := f32s(cb)
		for i := 0; i < M; i++ {
			for j := 0; j < N; j++ {
				acc := float32(0)
				for k := 0; k < (K+15)/16*16; k++ {
					var a, b float32
					if k < K {
						a, b = A[i*K+k], B[k*N+j]
					}
					acc = refFma32(a, b, acc)
				}
				if got := C[i*N+j]; !same32(got, acc) {
					t.Fatalf("C[%d][%d] = %v, want %v", i, j, got, acc)
				}
			}
		}

		Ad, Bd := make([]float64, M*K), make([]float64, K*N)
		for i := range Ad {
			Ad[i] = r.NormFloat64()
		}
		for i := range Bd {
			Bd[i] = r.NormFloat64()
		}
		aa, ab = mem.alloc(8 * M * K)
		ba, bb = mem.alloc(8 * K * N)
		ca, cb = mem.alloc(8 * M * N)
		putF64s(ab, Ad)
		putF64s(bb, Bd)
		run(t, kernel(t, p, "dgemm_naive"), mem, dim(uint32((N+7)/8), uint32((M+7)/8), 1), dim(8, 8, 1), 0, aa, ba, ca, M, N, K)
		Cd := f64s(cb)
		for i := 0; i < M; i++ {
			for j := 0; j < N; j++ {
				acc := 0.0
				for k := 0; k < K; k++ {
					acc = math.FMA(Ad[i*K+k], Bd[k*N+j], acc)
				}
				if got := Cd[i*N+j]; !same64f(got, acc) {
					t.Fatalf("dgemm C[%d][%d] = %v, want %v", i, j, got, acc)
				}
			}
		}
	})
}

// warpSumDown is the shfl.down tree of reduce_shfl: lanes whose source is out
// of range add their own value.
func warpSumDown(v [32]float32) float32 {
	for off := 16; off > 0; off >>= 1 {
		var nv [32]float32
		for l := range v {
			src := v[l]
			if l+off < 32 {
				src = v[l+off]
			}
			nv[l] = v[l] + src
		}
		v = nv
	}
	return v[0]
}

func TestKernelReduce(t *testing.T) {
	forVariants(t, "reduce", func(t *testing.T, p *Program) {
		r := rand.New(rand.NewPCG(8, 1))
		n := 10000
		in := randF32s(r, n, 1)
		mem := newDevMem()
		ia, ib := mem.alloc(4 * n)
		putF32s(ib, in)

		// reduce_shared: a tree in dynamic shared memory.
		bd, blocks := 128, (n+255)/256
		oa, ob := mem.alloc(4 * blocks)
		run(t, kernel(t, p, "reduce_shared"), mem, dim(uint32(blocks), 1, 1), dim(uint32(bd), 1, 1), uint32(4*bd), ia, oa, n)
		for b := 0; b < blocks; b++ {
			s := make([]float32, bd)
			for tid := 0; tid < bd; tid++ {
				i := b*bd*2 + tid
				var v float32
				if i < n {
					v = in[i]
				}
				if i+bd < n {
					v += in[i+bd]
				}
				s[tid] = v
			}
			for st := bd / 2; st > 0; st >>= 1 {
				for tid := 0; tid < st; tid++ {
					s[tid] += s[tid+st]
				}
			}
			if got := f32s(ob)[b]; !same32(got, s[0]) {
				t.Fatalf("reduce_shared block %d = %v, want %v", b, got, s[0])
			}
		}

		// reduce_shfl: warp shuffles, then one float atomic per block. With one
		// worker the blocks (and so the atomics) run in order: bit-exact.
		bd, blocks = 256, 5
		k := kernel(t, p, "reduce_shfl")
		for _, workers := range []int{1, 4} {
			oa, ob = mem.alloc(4)
			_, err := k.Run(context.Background(), Launch{Grid: dim(uint32(blocks), 1, 1), Block: dim(uint32(bd), 1, 1),
				Params: packParams(t, k, ia, oa, n), Global: mem, Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			var total float32
			var exact float64
			for b := 0; b < blocks; b++ {
				var warpsums [32]float32
				for w := 0; w < bd/32; w++ {
					var lanes [32]float32
					for l := 0; l < 32; l++ {
						for i := b*bd + w*32 + l; i < n; i += bd * blocks {
							lanes[l] += in[i]
							exact += float64(in[i])
						}
					}
					warpsums[w] = warpSumDown(lanes)
				}
				var lanes [32]float32
				copy(lanes[:bd/32], warpsums[:bd/32])
				total += warpSumDown(lanes)
			}
			got := f32s(ob)[0]
			if workers == 1 && !same32(got, total) {
				t.Fatalf("reduce_shfl = %v, want %v", got, total)
			}
			if math.Abs(float64(got)-exact) > 1e-3 {
				t.Fatalf("reduce_shfl with %d workers = %v, want about %v", workers, got, exact)
			}
		}

		// reduce_int_atomic
		ints := make([]int32, n)
		var sum uint64
		mx, mn := int32(math.MinInt32), int32(math.MaxInt32)
		for i := range ints {
			ints[i] = int32(r.Uint32())
			sum += uint64(int64(ints[i]))
			mx, mn = max(mx, ints[i]), min(mn, ints[i])
		}
		ia, ib = mem.alloc(4 * n)
		putU32s(ib, func() []uint32 {
			u := make([]uint32, n)
			for i, v := range ints {
				u[i] = uint32(v)
			}
			return u
		}())
		sa, sb := mem.alloc(8)
		xa, xb := mem.alloc(4)
		na, nb := mem.alloc(4)
		putU32s(xb, []uint32{uint32(0x80000000)})
		putU32s(nb, []uint32{0x7fffffff})
		run(t, kernel(t, p, "reduce_int_atomic"), mem, dim(uint32((n+255)/256), 1, 1), dim(256, 1, 1), 0, ia, sa, xa, na, n)
		if got := u64s(sb)[0]; got != sum {
			t.Errorf("sum = %d, want %d", got, sum)
		}
		if got := int32(u32s(xb)[0]); got != mx {
			t.Errorf("max = %d, want %d", got, mx)
		}
		if got := int32(u32s(nb)[0]); got != mn {
			t.Errorf("min = %d, want %d", got, mn)
		}
	})
}

func TestKernelScan(t *testing.T) {
	forVariants(t, "scan", func(t *testing.T, p *Program) {
		r := rand.New(rand.NewPCG(9, 1))
		n, bd := 1000, 256
		in := make([]uint32, n)
		for i := range in {
			in[i] = r.Uint32()
		}
		mem := newDevMem()
		ia, ib := mem.alloc(4 * n)
		oa, ob := mem.alloc(4 * n)
		putU32s(ib, in)
		run(t, kernel(t, p, "scan_block"), mem, dim(uint32((n+bd-1)/bd), 1, 1), dim(uint32(bd), 1, 1), uint32(4*bd), ia, oa, n)
		out := u32s(ob)
		var acc uint32
		for i := 0; i < n; i++ {
			if i%bd == 0 {
				acc = 0
			}
			acc += in[i]
			if out[i] != acc {
				t.Fatalf("out[%d] = %d, want %d", i, out[i], acc)
			}
		}
	})
}

func TestKernelSoftmax(t *testing.T) {
	forVariants(t, "softmax", func(t *testing.T, p *Program) {
		r := rand.New(rand.NewPCG(10, 1))
		rows, cols, bd := 7, 300, 64
		in := randF32s(r, rows*cols, 3)
		mem := newDevMem()
		ia, ib := mem.alloc(4 * rows * cols)
		oa, ob := mem.alloc(4 * rows * cols)
		putF32s(ib, in)
		run(t, kernel(t, p, "softmax_rows"), mem, dim(uint32(rows), 1, 1), dim(uint32(bd), 1, 1), uint32(4*bd), ia, oa, cols)
		out := f32s(ob)
		for i := 0; i < rows; i++ {
			m := math.Inf(-1)
			for c := 0; c < cols; c++ {
				m = math.Max(m, float64(in[i*cols+c]))
			}
			var s float64
			for c := 0; c < cols; c++ {
				s += math.Exp(float64(in[i*cols+c]) - m)
			}
			for c := 0; c < cols; c++ {
				want := math.Exp(float64(in[i*cols+c])-m) / s
				if got := out[i*cols+c]; math.Abs(float64(got)-want) > 1e-5*want+1e-9 {
					t.Fatalf("softmax[%d][%d] = %v, want %v", i, c, got, want)
				}
			}
		}
	})
}

func TestKernelStencil(t *testing.T) {
	forVariants(t, "stencil", func(t *testing.T, p *Program) {
		r := rand.New(rand.NewPCG(11, 1))
		n, bd := 1000, 128
		in := randF32s(r, n, 5)
		mem := newDevMem()
		ia, ib := mem.alloc(4 * n)
		oa, ob := mem.alloc(4 * n)
		putF32s(ib, in)
		run(t, kernel(t, p, "stencil1d"), mem, dim(uint32((n+bd-1)/bd), 1, 1), dim(uint32(bd), 1, 1), uint32(4*(bd+4)), ia, oa, n)
		at := func(i int) float32 {
			if i < 0 || i >= n {
				return 0
			}
			return in[i]
		}
		out := f32s(ob)
		for g := 0; g < n; g++ {
			v := float32(0)
			for o := -2; o <= 2; o++ {
				w := float32(0.125)
				if o == 0 {
					w = 0.5
				}
				v = refFma32(at(g+o), w, v)
			}
			if !same32(out[g], v) {
				t.Fatalf("stencil1d out[%d] = %v, want %v", g, out[g], v)
			}
		}

		w, h := 45, 33
		grid := randF32s(r, w*h, 1)
		ia, ib = mem.alloc(4 * w * h)
		oa, ob = mem.alloc(4 * w * h)
		putF32s(ib, grid)
		run(t, kernel(t, p, "jacobi2d"), mem, dim(uint32((w+15)/16), uint32((h+7)/8), 1), dim(16, 8, 1), 0, ia, oa, w, h)
		out = f32s(ob)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				var want float32
				if x > 0 && y > 0 && x < w-1 && y < h-1 {
					want = (grid[y*w+x-1] + grid[y*w+x+1] + grid[(y-1)*w+x] + grid[(y+1)*w+x]) * 0.25
				}
				if !same32(out[y*w+x], want) {
					t.Fatalf("jacobi2d (%d,%d) = %v, want %v", x, y, out[y*w+x], want)
				}
			}
		}
	})
}

func TestKernelTranspose(t *testing.T) {
	forVariants(t, "transpose", func(t *testing.T, p *Program) {
		r := rand.New(rand.NewPCG(12, 1))
		w, h := 70, 45
		in := randF32s(r, w*h, 1)
		mem := newDevMem()
		ia, ib := mem.alloc(4 * w * h)
		oa, ob := mem.alloc(4 * w * h)
		putF32s(ib, in)
		run(t, kernel(t, p, "transpose"), mem, dim(uint32((w+31)/32), uint32((h+31)/32), 1), dim(32, 8, 1), 0, ia, oa, w, h)
		out := f32s(ob)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				if out[x*h+y] != in[y*w+x] {
					t.Fatalf("out[%d][%d] = %v, want %v", x, y, out[x*h+y], in[y*w+x])
				}
			}
		}
	})
}

func TestKernelSpecial(t *testing.T) {
	forVariants(t, "special", func(t *testing.T, p *Program) {
		for _, tc := range []struct{ grid, block [3]uint32 }{
			{dim(3, 2, 2), dim(8, 4, 2)},
			{dim(2, 1, 3), dim(5, 3, 2)}, // 30 threads: a partial warp
			{dim(1, 1, 1), dim(33, 1, 1)},
		} {
			per := tc.block[0] * tc.block[1] * tc.block[2]
			nb := tc.grid[0] * tc.grid[1] * tc.grid[2]
			mem := newDevMem()
			oa, ob := mem.alloc(int(4 * 8 * per * nb))
			run(t, kernel(t, p, "special_regs"), mem, tc.grid, tc.block, 0, oa)
			out := u32s(ob)
			for bz := uint32(0); bz < tc.grid[2]; bz++ {
				for by := uint32(0); by < tc.grid[1]; by++ {
					for bx := uint32(0); bx < tc.grid[0]; bx++ {
						b := (bz*tc.grid[1]+by)*tc.grid[0] + bx
						for tz := uint32(0); tz < tc.block[2]; tz++ {
							for ty := uint32(0); ty < tc.block[1]; ty++ {
								for tx := uint32(0); tx < tc.block[0]; tx++ {
									tl := (tz*tc.block[1]+ty)*tc.block[0] + tx
									warp := tl / 32
									lo, hi := warp*32, min(warp*32+32, per)
									var ballot uint32
									anyT, allT := uint32(0), uint32(1)
									for u := lo; u < hi; u++ {
										if u&3 == 0 {
											ballot |= 1 << (u - lo)
										}
										if u == 5 {
											anyT = 1
										}
										if u >= 1000 {
											allT = 0
										}
									}
									x := tl ^ 1
									if x >= hi { // the partner lane does not exist
										x = tl
									}
									want := []uint32{
										tx + 10*ty + 100*tz,
										bx + 10*by + 100*bz,
										tc.block[0] + 10*tc.block[1] + 100*tc.block[2],
										tc.grid[0] + 10*tc.grid[1] + 100*tc.grid[2],
										tl % 32,
										ballot,
										anyT + 2*allT,
										lo*3 + x,
									}
									got := out[8*(b*per+tl) : 8*(b*per+tl)+8]
									for j := range want {
										if got[j] != want[j] {
											t.Fatalf("%v×%v block %d thread %d: o[%d] = %d, want %d", tc.grid, tc.block, b, tl, j, got[j], want[j])
										}
									}
								}
							}
						}
					}
				}
			}
		}
	})
}

func TestKernelGeneric(t *testing.T) {
	forVariants(t, "generic", func(t *testing.T, p *Program) {
		r := rand.New(rand.NewPCG(13, 1))
		n := 500
		in := randF32s(r, n, 4)
		mem := newDevMem()
		ia, ib := mem.alloc(4 * (n + 2)) // sum3 reads up to two past the last element
		oa, ob := mem.alloc(4 * (n + 2))
		fa, fb := mem.alloc(8 * 4)
		putF32s(ib, in)
		putU64s(fb, []uint64{10, 1 << 40, math.MaxUint64, 7})
		run(t, kernel(t, p, "generic_mix"), mem, dim(uint32((n+127)/128), 1, 1), dim(128, 1, 1), 0, ia, oa, fa, n)
		out := f32s(ob)
		pad := append(in[:n:n], 0, 0)
		for i := 0; i < n; i++ {
			x := in[i]
			var loc [8]float32
			for k := range loc {
				loc[k] = x * float32(k)
			}
			j := (i / 3) * 3
			idx := refCvtInt32(x) & 5
			g := pad[j] + pad[j+1] + pad[j+2]
			s := x + 1 + 2
			l := loc[idx] + loc[idx+1] + loc[idx+2]
			want := g + s + l
			if !same32(out[i], want) {
				t.Fatalf("out[%d] = %v, want %v", i, out[i], want)
			}
		}
		if got := u32s(ob[4*n:]); got[0] != 7 || got[1] != 7 {
			t.Errorf("exchanged words = %v, want [7 7]", got)
		}
		flags := u64s(fb)
		want := []uint64{10 + 125, 1<<40 + 125, 124, 7 + 125}
		for i := range want {
			if flags[i] != want[i] {
				t.Errorf("flags[%d] = %d, want %d", i, flags[i], want[i])
			}
		}
	})
}

func TestKernelLibm(t *testing.T) {
	forVariants(t, "libm", func(t *testing.T, p *Program) {
		r := rand.New(rand.NewPCG(14, 1))
		n := 4000
		in := make([]float32, n)
		for i := range in {
			switch i % 4 {
			case 0:
				in[i] = float32(r.NormFloat64() * 4)
			case 1:
				in[i] = float32(r.NormFloat64() * 1000)
			case 2: // large arguments take sinf's Payne-Hanek path (a global table, local memory)
				in[i] = float32(math.Ldexp(r.Float64()+0.5, r.IntN(100)+17)) * float32(1-2*r.IntN(2))
			default:
				in[i] = float32(r.Float64()*20 - 10)
			}
		}
		for i, s := range []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-30, 105615, 105616, 1e38} {
			in[i] = s
		}
		mem := newDevMem()
		ia, ib := mem.alloc(4 * n)
		oa, ob := mem.alloc(4 * 6 * n)
		putF32s(ib, in)
		if err := bindGlobals(p, mem); err != nil {
			t.Fatal(err)
		}
		run(t, kernel(t, p, "libm_f32"), mem, dim(uint32((n+255)/256), 1, 1), dim(256, 1, 1), 0, ia, oa, n)
		out := f32s(ob)
		for i, x := range in {
			xf := float64(x)
			want := []float64{
				math.Sin(xf), math.Cos(xf), math.Exp(float64(x * 0.01)), math.Log(math.Abs(xf) + 1),
				math.Pow(float64(float32(math.Abs(xf))+0.5), float64(float32(1.7))), math.Tanh(float64(x * 0.001)),
			}
			tol := []float64{2, 2, 2, 1, 8, 2}
			for j, w := range want {
				got := out[6*i+j]
				// CUDA's documented bounds are 1-2 ulp; the interpreter's
				// .approx instructions are more accurate than the hardware's,
				// so the kernel's results stay within them (plus a tiny
				// absolute slack at zeros of sin and cos).
				if !near32(got, float32(w), tol[j], 1e-7) {
					t.Fatalf("libm o[%d](%v) = %v (%#x), want %v (ulps %v)", j, x, got, math.Float32bits(got), float32(w), ulps32(got, float32(w)))
				}
			}
		}
	})
}

// bindGlobals places a program's globals in mem, as the sim device would.
func bindGlobals(p *Program, mem *devMem) error {
	addrs := map[string]uint64{}
	bufs := map[string][]byte{}
	for _, g := range p.Globals() {
		a, b := mem.alloc(int(g.Size))
		copy(b, g.Init)
		addrs[g.Name], bufs[g.Name] = a, b
	}
	for _, g := range p.Globals() {
		for _, rl := range g.Relocs {
			v := addrs[rl.Symbol] + uint64(rl.Addend)
			putU64s(bufs[g.Name][rl.Offset:], []uint64{v})
		}
	}
	if err := p.Bind(addrs); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}
