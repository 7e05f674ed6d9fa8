package interp

import (
	"context"
	"math"
	"math/bits"
	"sort"
	"testing"
)

// Multi-threaded have/want tests: atomics, barriers, warp collectives, calls.

// runThreads compiles src (a kernel "t" taking one pointer) and runs it on
// grid×block threads with an output buffer of words 64-bit words, returning
// the words.
func runThreads(t *testing.T, src string, grid, block [3]uint32, words int, init ...uint64) []uint64 {
	t.Helper()
	p := compileSrc(t, instHeader+src)
	k := kernel(t, p, "t")
	mem := newDevMem()
	oa, ob := mem.alloc(8 * words)
	putU64s(ob, init)
	_, err := k.Run(context.Background(), Launch{Grid: grid, Block: block, Params: packParams(t, k, oa), Global: mem, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	return u64s(ob)
}

// tidPrologue loads %io and the thread's linear index (%r0) and its output
// slot pointer (%rd0 = %io + 8*K*%r0, K = stride words).
const tidPrologue = `
	ld.param.u64 %io, [out];
	mov.u32 %r0, %tid.x;
	mov.u32 %r29, %ctaid.x;
	mov.u32 %r30, %ntid.x;
	mad.lo.u32 %r0, %r29, %r30, %r0;
`

func TestAtomicsGlobal(t *testing.T) {
	const n = 256 // 4 blocks of 64
	src := `.visible .entry t(.param .u64 out)
{` + instRegs + tidPrologue + `
	// words: 0 add.u32, 1 add.u64, 2 add.f32, 3 add.f64, 4 inc, 5 dec, 6 cas, 7 exch,
	// 8 min.s32, 9 max.s32, 10 min.u64, 11 max.u64, 12 or.b32, 13 and.b64, 14 xor.b32,
	// 15 red.add.s32, 16.. per-thread olds (3 words each)
	mul.wide.u32 %rd0, %r0, 24;
	add.u64 %rd0, %rd0, %io;
	add.u64 %rd0, %rd0, 128;
	atom.global.add.u32 %r1, [%io], 1;
	st.global.u32 [%rd0], %r1;
	cvt.u64.u32 %rd1, %r0;
	atom.global.add.u64 %rd2, [%io+8], %rd1;
	atom.global.add.f32 %f1, [%io+16], 0f3F800000;
	atom.global.add.f64 %fd1, [%io+24], 0d4000000000000000;
	atom.global.inc.u32 %r2, [%io+32], 9;
	atom.global.dec.u32 %r3, [%io+40], 9;
	add.u32 %r4, %r0, 1;
	atom.global.cas.b32 %r5, [%io+48], 0, %r4;
	st.global.u32 [%rd0+4], %r5;
	atom.global.exch.b32 %r6, [%io+56], %r4;
	st.global.u32 [%rd0+8], %r6;
	sub.s32 %r7, 100, %r0;
	atom.global.min.s32 %r8, [%io+64], %r7;
	atom.global.max.s32 %r8, [%io+72], %r7;
	mul.wide.u32 %rd3, %r0, 0x1000001;
	atom.global.min.u64 %rd4, [%io+80], %rd3;
	atom.global.max.u64 %rd4, [%io+88], %rd3;
	and.b32 %r9, %r0, 31;
	shl.b32 %r10, 1, %r9;
	atom.global.or.b32 %r11, [%io+96], %r10;
	cvt.u64.u32 %rd5, %r10;
	not.b64 %rd5, %rd5;
	atom.global.and.b64 %rd6, [%io+104], %rd5;
	atom.global.xor.b32 %r12, [%io+112], %r10;
	red.global.add.s32 [%io+120], -2;
	atom.cas.b64 %rd7, [%io+16], 0, 0;
	ret;
}`
	init := make([]uint64, 16+3*n)
	init[5] = 0 // dec from 0 wraps to the bound
	init[8] = uint64(uint32(math.MaxInt32))
	init[9] = uint64(uint32(0x80000000))
	init[10] = math.MaxUint64
	init[13] = math.MaxUint64
	got := runThreads(t, src, dim(4, 1, 1), dim(64, 1, 1), len(init), init...)
	lo := func(w uint64) uint32 { return uint32(w) }
	want := map[int]uint64{
		0: n, 1: n * (n - 1) / 2, 2: F(n), 3: D(2 * n), 4: n % 10, 5: (1000*10 - n) % 10,
		8: neg32(100 - (n - 1)), 9: 100, 10: 0, 11: (n - 1) * 0x1000001,
		12: 0xffffffff, 13: 0xffffffff00000000, 14: 0, 15: neg32(-2 * n),
	}
	for w, v := range want {
		mask := uint64(math.MaxUint64)
		if w == 0 || w == 2 || w == 4 || w == 5 || w == 8 || w == 9 || w == 12 || w == 14 || w == 15 {
			mask = math.MaxUint32
		}
		if got[w]&mask != v {
			t.Errorf("word %d = %#x, want %#x", w, got[w]&mask, v)
		}
	}
	// atom.add returned every old value exactly once; one CAS won.
	var olds []int
	winners := 0
	casVal := lo(got[6])
	exch := map[uint32]int{lo(got[7]): 1}
	for i := 0; i < n; i++ {
		olds = append(olds, int(lo(got[16+3*i])))
		if got[16+3*i]>>32 == 0 {
			winners++
			if casVal != uint32(i+1) {
				t.Errorf("CAS winner %d but memory holds %d", i, casVal)
			}
		}
		exch[lo(got[16+3*i+1])]++
	}
	sort.Ints(olds)
	for i, o := range olds {
		if o != i {
			t.Fatalf("atom.add olds are not a permutation: %v", olds[:i+1])
		}
	}
	if winners != 1 {
		t.Errorf("%d CAS winners, want 1", winners)
	}
	// exch: the olds and the final value are the initial 0 and every thread's value.
	for v := uint32(0); v <= n; v++ {
		if exch[v] != 1 {
			t.Fatalf("exch value %d seen %d times", v, exch[v])
		}
	}
}

func TestAtomicsShared(t *testing.T) {
	src := `.visible .entry t(.param .u64 out)
{` + instRegs + `
	.shared .align 8 .b8 s[64];
	ld.param.u64 %io, [out];
	mov.u32 %r0, %tid.x;
	setp.ne.u32 %p1, %r0, 0;
	@%p1 bra INIT_DONE;
	st.shared.u32 [s+8], 0x7fffffff;
	st.shared.u64 [s+16], 0;
INIT_DONE:
	bar.sync 0;
	atom.shared.add.u32 %r1, [s], 1;
	atom.shared.min.s32 %r2, [s+8], %r0;
	atom.shared.add.u64 %rd1, [s+16], 3;
	red.shared.add.u32 [s+24], 2;
	atom.shared.add.f32 %f1, [s+28], 0f3F000000;
	// generic atomics into shared and global memory
	mov.u64 %rd2, s;
	cvta.shared.u64 %rd3, %rd2;
	atom.add.u32 %r3, [%rd3+32], 5;
	atom.exch.b32 %r4, [%rd3+36], 9;
	atom.add.u32 %r5, [%io+64], 1;
	red.add.u32 [%io+68], 1;
	bar.sync 0;
	@%p1 bra DONE;
	ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [s];
	st.global.v4.u32 [%io], {%r10, %r11, %r12, %r13};
	ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [s+16];
	st.global.v4.u32 [%io+16], {%r10, %r11, %r12, %r13};
	ld.shared.v2.u32 {%r10, %r11}, [s+32];
	st.global.v2.u32 [%io+32], {%r10, %r11};
DONE:
	ret;
}`
	got := runThreads(t, src, dim(1, 1, 1), dim(100, 1, 1), 10)
	w32 := func(i int) uint32 { return uint32(got[i/2] >> (32 * (i % 2))) }
	want := []uint32{100, 0, 0, 0, 300, 0, 200, math.Float32bits(50), 500, 9}
	for i, v := range want {
		if i == 1 || i == 3 || i == 5 {
			continue
		}
		if w32(i) != v {
			t.Errorf("word %d = %d, want %d", i, w32(i), v)
		}
	}
	if w32(2) != 0 {
		t.Errorf("shared min = %d, want 0", w32(2))
	}
	if w32(16) != 100 || w32(17) != 100 {
		t.Errorf("generic global atomics: %d %d, want 100 100", w32(16), w32(17))
	}
}

// shflRef is the PTX specification of shfl.sync for one lane.
func shflRef(mode string, vals []uint32, lane int, b, c uint32) (uint32, bool) {
	bval, cval, seg := b&31, c&31, c>>8&31
	maxLane := uint32(lane)&seg | cval&^seg
	minLane := uint32(lane) & seg
	var j int
	var p bool
	switch mode {
	case "up":
		j = lane - int(bval)
		p = j >= int(maxLane)
	case "down":
		j = lane + int(bval)
		p = j <= int(maxLane)
	case "bfly":
		j = lane ^ int(bval)
		p = j <= int(maxLane)
	case "idx":
		j = int(minLane | bval&^seg)
		p = j <= int(maxLane)
	}
	if !p {
		j = lane
	}
	return vals[j], p
}

func TestShfl(t *testing.T) {
	for _, tc := range []struct {
		mode string
		b, c uint32
	}{
		{"up", 1, 0}, {"up", 3, 0}, {"up", 2, 24 << 8}, {"down", 1, 0x1f}, {"down", 5, 0x1f}, {"down", 1, 24<<8 | 0x1f},
		{"down", 3, 0x0f}, {"bfly", 1, 0x1f}, {"bfly", 16, 0x1f}, {"bfly", 2, 28<<8 | 0x1f}, {"idx", 0, 0x1f},
		{"idx", 7, 0x1f}, {"idx", 3, 24<<8 | 0x1f}, {"idx", 40, 0x1f}, {"idx", 20, 0x0f},
	} {
		src := `.visible .entry t(.param .u64 out)
{` + instRegs + tidPrologue + `
	mul.lo.u32 %r1, %r0, 7;
	add.u32 %r1, %r1, 1000;
	shfl.sync.` + tc.mode + `.b32 %r2|%p1, %r1, %r3, %r4, 0xffffffff;
	selp.u32 %r5, 1, 0, %p1;
	mul.wide.u32 %rd0, %r0, 8;
	add.u64 %rd0, %rd0, %io;
	st.global.v2.u32 [%rd0], {%r2, %r5};
	ret;
}`
		src = replaceAll(src, "%r3, %r4", itoa(tc.b)+", "+itoa(tc.c))
		got := runThreads(t, src, dim(1, 1, 1), dim(64, 1, 1), 64)
		for w := 0; w < 2; w++ {
			vals := make([]uint32, 32)
			for l := range vals {
				vals[l] = uint32(32*w+l)*7 + 1000
			}
			for l := 0; l < 32; l++ {
				wv, wp := shflRef(tc.mode, vals, l, tc.b, tc.c)
				g := got[32*w+l]
				if uint32(g) != wv || (g>>32 != 0) != wp {
					t.Errorf("shfl.%s b=%d c=%#x lane %d: got (%d, %v), want (%d, %v)", tc.mode, tc.b, tc.c, l, uint32(g), g>>32 != 0, wv, wp)
				}
			}
		}
	}
}

func itoa(v uint32) string {
	const digits = "0123456789"
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{digits[v%10]}, b...)
	}
	return string(b)
}

func replaceAll(s, old, new string) string {
	for {
		i := indexOf(s, old)
		if i < 0 {
			return s
		}
		s = s[:i] + new + s[i+len(old):]
	}
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// Votes, matches and reductions: warp 0 full, warp 1 partial (40 threads).
func TestWarpVotesMatchRedux(t *testing.T) {
	src := `.visible .entry t(.param .u64 out)
{` + instRegs + tidPrologue + `
	mul.wide.u32 %rd0, %r0, 64;
	add.u64 %rd0, %rd0, %io;
	and.b32 %r1, %r0, 3;
	setp.eq.u32 %p1, %r1, 0;
	vote.sync.ballot.b32 %r2, %p1, 0xffffffff;
	vote.sync.ballot.b32 %r3, !%p1, 0xffffffff;
	vote.sync.any.pred %p2, %p1, 0xffffffff;
	vote.sync.all.pred %p3, %p1, 0xffffffff;
	setp.lt.u32 %p4, %r0, 1000;
	vote.sync.all.pred %p5, %p4, 0xffffffff;
	vote.sync.uni.pred %p6, %p4, 0xffffffff;
	vote.sync.uni.pred %p7, %p1, 0xffffffff;
	selp.u32 %r4, 1, 0, %p2;
	selp.u32 %r5, 1, 0, %p3;
	selp.u32 %r6, 1, 0, %p5;
	selp.u32 %r7, 1, 0, %p6;
	selp.u32 %r8, 1, 0, %p7;
	st.global.v4.u32 [%rd0], {%r2, %r3, %r4, %r5};
	st.global.v4.u32 [%rd0+16], {%r6, %r7, %r8, %r1};
	match.any.sync.b32 %r9, %r1, 0xffffffff;
	cvt.u64.u32 %rd1, %r1;
	match.any.sync.b64 %r10, %rd1, 0xffffffff;
	match.all.sync.b32 %r11|%p8, %r1, 0xffffffff;
	selp.u32 %r12, 1, 0, %p8;
	st.global.v4.u32 [%rd0+32], {%r9, %r10, %r11, %r12};
	mov.u32 %r13, 5;
	match.all.sync.b32 %r14|%p9, %r13, 0xffffffff;
	redux.sync.add.u32 %r15, %r0, 0xffffffff;
	sub.s32 %r16, 20, %r0;
	redux.sync.min.s32 %r17, %r16, 0xffffffff;
	redux.sync.max.u32 %r18, %r0, 0xffffffff;
	redux.sync.or.b32 %r19, %r0, 0xffffffff;
	redux.sync.and.b32 %r20, %r0, 0xffffffff;
	redux.sync.xor.b32 %r21, %r0, 0xffffffff;
	redux.sync.max.s32 %r22, %r16, 0xffffffff;
	redux.sync.min.u32 %r23, %r0, 0xffffffff;
	st.global.v4.u32 [%rd0+48], {%r14, %r15, %r17, %r18};
	ret;
}`
	n := 40
	got := runThreads(t, src, dim(1, 1, 1), dim(uint32(n), 1, 1), 8*n)
	for tid := 0; tid < n; tid++ {
		w := tid / 32
		lo, hi := 32*w, min(32*w+32, n)
		var ballot, match uint32
		sum, minS, maxU, orv := uint32(0), int32(math.MaxInt32), uint32(0), uint32(0)
		allSame := true
		for u := lo; u < hi; u++ {
			if u&3 == 0 {
				ballot |= 1 << (u - lo)
			}
			if u&3 == tid&3 {
				match |= 1 << (u - lo)
			}
			if u&3 != lo&3 {
				allSame = false
			}
			sum += uint32(u)
			minS = min(minS, int32(20-u))
			maxU = max(maxU, uint32(u))
			orv |= uint32(u)
		}
		live := uint32(1<<(hi-lo) - 1)
		if hi-lo == 32 {
			live = math.MaxUint32
		}
		matchAll := uint32(0)
		if allSame {
			matchAll = live
		}
		word := func(i int) uint32 { return uint32(got[8*tid+i/2] >> (32 * (i % 2))) }
		want := []uint32{ballot, live &^ ballot, b2w(ballot != 0), b2w(ballot == live), 1, 1, b2w(ballot == 0 || ballot == live), uint32(tid & 3),
			match, match, matchAll, b2w(allSame), live, sum, uint32(minS), maxU}
		for i, v := range want {
			if word(i) != v {
				t.Errorf("thread %d: word %d = %#x, want %#x", tid, i, word(i), v)
			}
		}
		_ = orv
	}
}

func neg32(v int) uint64 { return uint64(uint32(int32(v))) }

func b2w(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// Divergent collectives: membermasks naming subsets, shuffles from lanes that
// take another path, activemask and bar.warp.sync.
func TestWarpDivergence(t *testing.T) {
	src := `.visible .entry t(.param .u64 out)
{` + instRegs + tidPrologue + `
	mul.wide.u32 %rd0, %r0, 16;
	add.u64 %rd0, %rd0, %io;
	and.b32 %r1, %r0, 1;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 bra EVEN;
	// odd lanes: broadcast lane 1's value among themselves
	mul.lo.u32 %r2, %r0, 3;
	shfl.sync.idx.b32 %r3, %r2, 1, 0x1f, 0xaaaaaaaa;
	activemask.b32 %r4;
	bar.warp.sync 0xaaaaaaaa;
	bra JOIN;
EVEN:
	mul.lo.u32 %r2, %r0, 5;
	shfl.sync.idx.b32 %r3, %r2, 2, 0x1f, 0x55555555;
	activemask.b32 %r4;
	vote.sync.ballot.b32 %r5, 1, 0x55555555;
JOIN:
	activemask.b32 %r6;
	st.global.v4.u32 [%rd0], {%r3, %r4, %r6, %r5};
	ret;
}`
	got := runThreads(t, src, dim(1, 1, 1), dim(32, 1, 1), 64)
	for l := 0; l < 32; l++ {
		w0, w1 := uint32(got[2*l]), uint32(got[2*l]>>32)
		w2 := uint32(got[2*l+1])
		var want0, want1 uint32
		if l%2 == 1 {
			want0, want1 = 3, 0xaaaaaaaa
		} else {
			want0, want1 = 10, 0x55555555
		}
		if w0 != want0 || w1 != want1 || w2 != 0xffffffff {
			t.Errorf("lane %d: (%d, %#x, %#x), want (%d, %#x, 0xffffffff)", l, w0, w1, w2, want0, want1)
		}
		if l%2 == 0 && uint32(got[2*l+1]>>32) != 0x55555555 {
			t.Errorf("lane %d: ballot %#x", l, uint32(got[2*l+1]>>32))
		}
	}
}

func TestBarriers(t *testing.T) {
	// A shared-memory rotation needs bar.sync; bar.red gives popc/and/or;
	// threads that exit early release a barrier for all threads.
	src := `.visible .entry t(.param .u64 out)
{` + instRegs + `
	.shared .align 4 .b8 s[1024];
	ld.param.u64 %io, [out];
	mov.u32 %r0, %tid.x;
	mov.u32 %r1, %ntid.x;
	shl.b32 %r2, %r0, 2;
	st.shared.u32 [%r2], %r0;
	barrier.sync.aligned 0;
	add.u32 %r3, %r0, 1;
	rem.u32 %r3, %r3, %r1;
	shl.b32 %r3, %r3, 2;
	ld.shared.u32 %r4, [%r3];
	bar.sync 0;
	and.b32 %r5, %r0, 1;
	setp.eq.u32 %p1, %r5, 1;
	bar.red.popc.u32 %r6, 0, %p1;
	bar.red.and.pred %p2, 1, %p1;
	bar.red.or.pred %p3, 2, !%p1;
	selp.u32 %r7, 1, 0, %p2;
	selp.u32 %r8, 1, 0, %p3;
	mul.wide.u32 %rd0, %r0, 16;
	add.u64 %rd0, %rd0, %io;
	st.global.v4.u32 [%rd0], {%r4, %r6, %r7, %r8};
	// the upper half exits; the lower half still passes a full barrier
	shr.u32 %r9, %r1, 1;
	setp.ge.u32 %p4, %r0, %r9;
	@%p4 exit;
	bar.sync 0;
	bar.sync 1;
	ret;
}`
	n := 96
	got := runThreads(t, src, dim(2, 1, 1), dim(uint32(n), 1, 1), 2*n)
	for tid := 0; tid < n; tid++ {
		w := []uint32{uint32(got[2*tid]), uint32(got[2*tid] >> 32), uint32(got[2*tid+1]), uint32(got[2*tid+1] >> 32)}
		want := []uint32{uint32((tid + 1) % n), uint32(n / 2), 0, 1}
		for i := range w {
			if w[i] != want[i] {
				t.Errorf("thread %d word %d = %d, want %d", tid, i, w[i], want[i])
			}
		}
	}
}

// Producer-consumer with named barriers: warp 0 produces, bar.arrive's;
// warps 1-2 consume after bar.sync with a thread count.
func TestNamedBarriers(t *testing.T) {
	src := `.visible .entry t(.param .u64 out)
{` + instRegs + `
	.shared .align 4 .b8 s[128];
	ld.param.u64 %io, [out];
	mov.u32 %r0, %tid.x;
	setp.ge.u32 %p1, %r0, 32;
	@%p1 bra CONSUMER;
	shl.b32 %r2, %r0, 2;
	add.u32 %r3, %r0, 100;
	st.shared.u32 [%r2], %r3;
	bar.arrive 3, 96;
	ret;
CONSUMER:
	bar.sync 3, 96;
	sub.u32 %r4, %r0, 32;
	and.b32 %r4, %r4, 31;
	shl.b32 %r5, %r4, 2;
	ld.shared.u32 %r6, [%r5];
	mul.wide.u32 %rd0, %r0, 8;
	add.u64 %rd0, %rd0, %io;
	st.global.u32 [%rd0], %r6;
	ret;
}`
	got := runThreads(t, src, dim(1, 1, 1), dim(96, 1, 1), 96)
	for tid := 32; tid < 96; tid++ {
		if want := uint64(100 + (tid-32)%32); got[tid] != want {
			t.Errorf("consumer %d read %d, want %d", tid, got[tid], want)
		}
	}
}

func TestDeviceCalls(t *testing.T) {
	// Recursion with a local frame per activation, a struct parameter, two
	// results through one .param return, and a function using shared memory.
	src := `
.shared .align 4 .b32 counter;

.func (.param .b32 ret) fact(.param .b32 n)
{
	.local .align 4 .b8 depot[8];
	.reg .b32 %a<6>;
	.reg .pred %q;
	.reg .b64 %l;
	ld.param.b32 %a0, [n];
	mov.u64 %l, depot;
	st.local.u32 [%l], %a0;
	setp.le.u32 %q, %a0, 1;
	@%q bra BASE;
	sub.u32 %a1, %a0, 1;
	{
		.param .b32 p0;
		.param .b32 r0;
		st.param.b32 [p0], %a1;
		call.uni (r0), fact, (p0);
		ld.param.b32 %a2, [r0];
	}
	ld.local.u32 %a3, [%l];
	mul.lo.u32 %a4, %a2, %a3;
	st.param.b32 [ret], %a4;
	ret;
BASE:
	st.param.b32 [ret], 1;
	ret;
}

.func (.param .align 8 .b8 res[16]) pairsum(.param .align 8 .b8 pr[16], .param .b32 k)
{
	.reg .b64 %x<4>;
	.reg .b32 %k;
	ld.param.u64 %x0, [pr];
	ld.param.u64 %x1, [pr+8];
	ld.param.b32 %k, [k];
	cvt.u64.u32 %x3, %k;
	add.u64 %x2, %x0, %x1;
	mul.lo.u64 %x2, %x2, %x3;
	st.param.u64 [res], %x2;
	sub.u64 %x2, %x0, %x1;
	st.param.u64 [res+8], %x2;
	ret;
}

.func bump()
{
	.reg .b32 %c;
	atom.shared.add.u32 %c, [counter], 1;
	ret;
}

.visible .entry t(.param .u64 out)
{` + instRegs + tidPrologue + `
	mul.wide.u32 %rd0, %r0, 24;
	add.u64 %rd0, %rd0, %io;
	setp.ne.u32 %p1, %r0, 0;
	@%p1 bra SKIP;
	st.shared.u32 [counter], 0;
SKIP:
	bar.sync 0;
	rem.u32 %r1, %r0, 12;
	{
		.param .b32 a;
		.param .b32 r;
		st.param.b32 [a], %r1;
		call (r), fact, (a);
		ld.param.b32 %r2, [r];
	}
	st.global.u32 [%rd0], %r2;
	{
		.param .align 8 .b8 pa[16];
		.param .b32 pk;
		.param .align 8 .b8 pr[16];
		cvt.u64.u32 %rd1, %r0;
		st.param.u64 [pa], %rd1;
		st.param.u64 [pa+8], 1000;
		st.param.b32 [pk], 3;
		call.uni (pr), pairsum, (pa, pk);
		ld.param.v2.u64 {%rd2, %rd3}, [pr];
	}
	st.global.u64 [%rd0+8], %rd2;
	st.global.u64 [%rd0+16], %rd3;
	call.uni bump, ();
	bar.sync 0;
	@%p1 bra DONE;
	ld.shared.u32 %r3, [counter];
	st.global.u32 [%rd0+4], %r3;
DONE:
	ret;
}`
	n := 40
	got := runThreads(t, src, dim(1, 1, 1), dim(uint32(n), 1, 1), 3*n)
	fact := func(k int) uint32 {
		f := uint32(1)
		for i := 2; i <= k; i++ {
			f *= uint32(i)
		}
		return f
	}
	for tid := 0; tid < n; tid++ {
		if got := uint32(got[3*tid]); got != fact(tid%12) {
			t.Errorf("fact(%d) = %d, want %d", tid%12, got, fact(tid%12))
		}
		if a, b := got[3*tid+1], got[3*tid+2]; a != uint64(tid+1000)*3 || b != uint64(tid)-1000 {
			t.Errorf("pairsum(%d) = %d, %d", tid, a, b)
		}
	}
	if c := uint32(got[0] >> 32); c != uint32(n) {
		t.Errorf("counter = %d, want %d", c, n)
	}
}

var _ = bits.OnesCount

// cp.async copies global to shared memory (src-size zero-fills, ignore-src
// skips the read); wait_group/wait_all and a barrier make it visible.
func TestCpAsync(t *testing.T) {
	src := `.visible .entry t(.param .u64 out)
{` + instRegs + `
	.shared .align 16 .b8 s[512];
	ld.param.u64 %io, [out];
	mov.u32 %r0, %tid.x;
	mul.wide.u32 %rd1, %r0, 16;
	add.u64 %rd2, %io, %rd1;
	mov.u32 %r1, s;
	mul.lo.u32 %r2, %r0, 16;
	add.u32 %r3, %r1, %r2;
	cp.async.cg.shared.global [%r3], [%rd2], 16;
	cp.async.ca.shared.global [%r3+256], [%rd2+4], 4, 2;
	setp.eq.u32 %p1, %r0, 3;
	cp.async.ca.shared.global [%r3+264], [%rd2], 8, %p1;
	cp.async.commit_group;
	cp.async.wait_group 0;
	cp.async.wait_all;
	bar.sync 0;
	xor.b32 %r4, %r0, 1;
	mul.lo.u32 %r5, %r4, 16;
	add.u32 %r6, %r1, %r5;
	ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r6];
	ld.shared.v4.u32 {%r14, %r15, %r16, %r17}, [%r6+256];
	bar.sync 0;
	st.global.v4.u32 [%rd2], {%r10, %r11, %r12, %r13};
	st.global.v4.u32 [%rd2+256], {%r14, %r15, %r16, %r17};
	ret;
}`
	n := 16
	init := make([]uint64, 64)
	for i := 0; i < 2*n; i++ {
		init[i] = uint64(i+1)<<32 | uint64(1000+i)
	}
	want := append([]uint64(nil), init...)
	got := runThreads(t, src, dim(1, 1, 1), dim(uint32(n), 1, 1), 64, init...)
	w32 := func(v []uint64, i int) uint32 { return uint32(v[i/2] >> (32 * (i % 2))) }
	for tid := 0; tid < n; tid++ {
		p := tid ^ 1
		for j := 0; j < 4; j++ {
			if g, w := w32(got, 4*tid+j), w32(want, 4*p+j); g != w {
				t.Errorf("thread %d copy word %d = %d, want %d", tid, j, g, w)
			}
		}
		lo := w32(want, 4*p+1) & 0xffff // src-size 2 of 4 bytes
		tail := [3]uint32{0, w32(want, 4*p), w32(want, 4*p+1)}
		if p == 3 {
			tail = [3]uint32{}
		}
		if g := w32(got, 64+4*tid); g != lo {
			t.Errorf("thread %d: partial copy %#x, want %#x", tid, g, lo)
		}
		for j := 0; j < 3; j++ {
			if g := w32(got, 64+4*tid+1+j); g != tail[j] {
				t.Errorf("thread %d: ignore-src word %d = %#x, want %#x", tid, j, g, tail[j])
			}
		}
	}
}

func TestSpecialRegisterValues(t *testing.T) {
	src := `.visible .entry t(.param .u64 out)
{` + instRegs + `
	.shared .align 4 .b8 s[100];
	ld.param.u64 %io, [out];
	mov.u32 %r0, %tid.x;
	mov.u32 %r1, %tid.y;
	mov.u32 %r2, %ntid.x;
	mad.lo.u32 %r3, %r1, %r2, %r0;
	mov.u32 %r4, %ctaid.x;
	mad.lo.u32 %r3, %r4, 40, %r3;
	mul.wide.u32 %rd0, %r3, 48;
	add.u64 %rd0, %rd0, %io;
	mov.u32 %r6, %laneid;
	mov.u32 %r7, %warpid;
	mov.u32 %r8, %lanemask_eq;
	mov.u32 %r9, %lanemask_le;
	st.global.v4.u32 [%rd0], {%r6, %r7, %r8, %r9};
	mov.u32 %r10, %lanemask_lt;
	mov.u32 %r11, %lanemask_ge;
	mov.u32 %r12, %lanemask_gt;
	mov.u32 %r13, %smid;
	st.global.v4.u32 [%rd0+16], {%r10, %r11, %r12, %r13};
	mov.u32 %r14, %nsmid;
	mov.u32 %r15, %dynamic_smem_size;
	mov.u32 %r16, %total_smem_size;
	mov.u32 %r17, %nctaid.x;
	st.global.v4.u32 [%rd0+32], {%r14, %r15, %r16, %r17};
	ret;
}`
	p := compileSrc(t, instHeader+src)
	k := kernel(t, p, "t")
	mem := newDevMem()
	blocks, per := 5, 40
	oa, ob := mem.alloc(48 * blocks * per)
	_, err := k.Run(context.Background(), Launch{Grid: dim(uint32(blocks), 1, 1), Block: dim(8, 5, 1), DynamicShared: 60,
		Params: packParams(t, k, oa), Global: mem, SMs: 4})
	if err != nil {
		t.Fatal(err)
	}
	got := u32s(ob)
	for b := 0; b < blocks; b++ {
		for tl := 0; tl < per; tl++ {
			lane := uint32(tl % 32)
			want := []uint32{lane, uint32(tl / 32), 1 << lane, uint32(uint64(1)<<(lane+1) - 1), 1<<lane - 1, ^uint32(1<<lane - 1),
				^uint32(uint64(1)<<(lane+1) - 1), uint32(b % 4), 4, 60, 100 + 60 + 12, uint32(blocks)}
			row := got[12*(b*per+tl) : 12*(b*per+tl)+12]
			for j := range want {
				if row[j] != want[j] {
					t.Errorf("block %d thread %d register %d = %#x, want %#x", b, tl, j, row[j], want[j])
				}
			}
		}
	}
}

// A lane that exits no longer takes part in warp collectives.
func TestExitedLanesLeaveCollectives(t *testing.T) {
	src := `.visible .entry t(.param .u64 out)
{` + instRegs + tidPrologue + `
	setp.ge.u32 %p1, %r0, 24;
	@%p1 exit;
	mul.wide.u32 %rd0, %r0, 8;
	add.u64 %rd0, %rd0, %io;
	shfl.sync.idx.b32 %r1, %r0, 30, 0x1f, 0xffffffff;
	vote.sync.ballot.b32 %r2, 1, 0xffffffff;
	st.global.v2.u32 [%rd0], {%r1, %r2};
	ret;
}`
	got := runThreads(t, src, dim(1, 1, 1), dim(32, 1, 1), 32)
	for l := 0; l < 24; l++ {
		// Lane 30 has exited: each lane gets its own value.
		if v, b := uint32(got[l]), uint32(got[l]>>32); v != uint32(l) || b != 0x00ffffff {
			t.Errorf("lane %d: shfl %d ballot %#x, want %d 0xffffff", l, v, b, l)
		}
	}
}

// Labels are scoped by blocks, as inline assembly repeated by inlining needs.
func TestScopedLabels(t *testing.T) {
	src := `.visible .entry t(.param .u64 out)
{` + instRegs + `
	ld.param.u64 %io, [out];
	mov.u32 %r1, 0;
	{
	.reg .pred p;
	setp.eq.u32 p, %r1, 0;
	@p bra SKIP;
	add.u32 %r1, %r1, 100;
SKIP:
	add.u32 %r1, %r1, 1;
	}
	{
	.reg .pred p;
	setp.eq.u32 p, %r1, 0;
	@p bra SKIP;
	add.u32 %r1, %r1, 10;
SKIP:
	add.u32 %r1, %r1, 1;
	}
	st.global.u32 [%io], %r1;
	ret;
}`
	if got := runThreads(t, src, dim(1, 1, 1), dim(1, 1, 1), 1); uint32(got[0]) != 12 {
		t.Errorf("got %d, want 12", uint32(got[0]))
	}
}
