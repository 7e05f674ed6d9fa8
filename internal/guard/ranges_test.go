package guard_test

import (
	"bytes"
	"testing"
)

// sharedKernel is a kernel k(.param .u64 p, .param .u32 n) with directives
// dirs, module-scope declarations decls and body.
func sharedKernel(decls, dirs, body string) string {
	return `.version 8.0
.target sm_90
.address_size 64
` + decls + `
.visible .entry k(.param .u64 p, .param .u32 n)` + dirs + `
{
	.reg .pred 	%p<8>;
	.reg .b16 	%rs<8>;
	.reg .b32 	%r<32>;
	.reg .b64 	%rd<8>;
	ld.param.u64 	%rd1, [p];
	ld.param.u32 	%r1, [n];
	mov.u32 	%r2, %tid.x;
	mov.u32 	%r3, %ntid.x;
` + body + `
	ret;
}
`
}

// TestSharedProofs: which shared accesses the range analysis proves, and
// how (statically, or in a fast variant behind the entry check), and which
// stay checked. Proofs must never cover an access that can leave shared
// memory; the attacks in testdata/guard/attacks run the unsafe ones.
func TestSharedProofs(t *testing.T) {
	tests := []struct {
		name, decls, dirs, body string
		proven, variants        int
		checked                 int // run-time checks left (in both variants)
		want                    []string
	}{
		{name: "s[tid], a block of at most 64 threads, 256 bytes: proven statically",
			decls: ".shared .align 4 .b8 s[256];", dirs: " .reqntid 64, 1, 1",
			body:   "mov.u32 %r4, s;\nshl.b32 %r5, %r2, 2;\nadd.s32 %r6, %r4, %r5;\nst.shared.u32 [%r6], %r2;",
			proven: 1, checked: 0},
		{name: "s[tid] with .maxntid: the product bounds every dimension",
			decls: ".shared .align 4 .b8 s[1024];", dirs: " .maxntid 128, 2, 1",
			body:   "mov.u32 %r4, s;\nshl.b32 %r5, %r2, 2;\nadd.s32 %r6, %r4, %r5;\nst.shared.u32 [%r6], %r2;",
			proven: 1, checked: 0},
		{name: "s[tid] past the array for the largest block .reqntid allows: checked",
			decls: ".shared .align 4 .b8 s[256];", dirs: " .reqntid 128, 1, 1",
			body:   "mov.u32 %r4, s;\nshl.b32 %r5, %r2, 2;\nadd.s32 %r6, %r4, %r5;\nst.shared.u32 [%r6], %r2;",
			proven: 0, checked: 1},
		{name: "s[tid+32] under tid < 32: the branch bounds tid",
			decls: ".shared .align 4 .b8 s[256];",
			body: "setp.gt.u32 %p1, %r2, 31;\n@%p1 bra $L_end;\nmov.u32 %r4, s;\nshl.b32 %r5, %r2, 2;\nadd.s32 %r6, %r4, %r5;\n" +
				"ld.shared.u32 %r7, [%r6+128];\nst.shared.u32 [%r6], %r7;\n$L_end:",
			proven: 2, checked: 0},
		{name: "an address computed before the branch that bounds its index",
			decls: ".shared .align 4 .b8 s[64];",
			body: "mov.u32 %r4, s;\nshl.b32 %r5, %r2, 2;\nadd.s32 %r6, %r4, %r5;\nsetp.gt.u32 %p1, %r2, 7;\n@%p1 bra $L_end;\n" +
				"st.shared.u32 [%r6+32], %r2;\n$L_end:",
			proven: 1, checked: 0},
		{name: "a signed bound does not bound a negative index: checked",
			decls: ".shared .align 4 .b8 s[256];",
			body: "add.s32 %r4, %r2, -64;\nsetp.ge.s32 %p1, %r4, 8;\n@%p1 bra $L_end;\nmov.u32 %r5, s;\nshl.b32 %r6, %r4, 2;\nadd.s32 %r7, %r5, %r6;\n" +
				"st.shared.u32 [%r7], %r2;\n$L_end:",
			proven: 0, checked: 1},
		{name: "an unsigned bound on the same index does",
			decls: ".shared .align 4 .b8 s[256];",
			body: "add.s32 %r4, %r2, -64;\nsetp.ge.u32 %p1, %r4, 8;\n@%p1 bra $L_end;\nmov.u32 %r5, s;\nshl.b32 %r6, %r4, 2;\nadd.s32 %r7, %r5, %r6;\n" +
				"st.shared.u32 [%r7], %r2;\n$L_end:",
			proven: 1, checked: 0},
		{name: "a wrapped index shifted right: checked",
			decls:  ".shared .align 4 .b8 s[256];",
			body:   "add.u32 %r4, %r2, -16;\nshr.u32 %r5, %r4, 2;\nshl.b32 %r6, %r5, 2;\nmov.u32 %r7, s;\nadd.s32 %r8, %r7, %r6;\nst.shared.u32 [%r8], %r2;",
			proven: 0, checked: 1},
		{name: "a byte read from memory indexes 256 words",
			decls: ".shared .align 4 .b8 s[1024];",
			body: "ld.global.u8 %rs1, [%rd1];\nmul.wide.u16 %r4, %rs1, 4;\nmov.u32 %r5, s;\nadd.s32 %r6, %r5, %r4;\n" +
				"atom.shared.add.u32 %r7, [%r6], 1;",
			proven: 1, checked: 1 /* the global load */},
		{name: "a strided loop bounded by its own test: for (i = tid; i < 256; i += ntid) s[i]",
			decls: ".shared .align 4 .b8 s[1024];",
			body: "mov.u32 %r4, %r2;\nsetp.gt.u32 %p1, %r4, 255;\n@%p1 bra $L_end;\nmov.u32 %r5, s;\n$L_loop:\nshl.b32 %r6, %r4, 2;\nadd.s32 %r7, %r5, %r6;\n" +
				"st.shared.u32 [%r7], %r2;\nadd.s32 %r4, %r4, %r3;\nsetp.lt.u32 %p2, %r4, 256;\n@%p2 bra $L_loop;\n$L_end:",
			proven: 1, checked: 0},
		{name: "the block shape decides: a loop over buf[tid + k*ntid] gets a fast and a checked variant",
			decls: ".extern .shared .align 16 .b8 buf[];",
			body: "mov.u32 %r4, buf;\nshl.b32 %r5, %r2, 2;\nadd.s32 %r6, %r4, %r5;\nshl.b32 %r7, %r3, 2;\nmov.u32 %r8, 0;\n$L_loop:\n" +
				"st.shared.u32 [%r6], %r2;\nadd.s32 %r6, %r6, %r7;\nadd.s32 %r8, %r8, 1;\nsetp.lt.u32 %p1, %r8, 4;\n@%p1 bra $L_loop;",
			proven: 1, variants: 1, checked: 1 /* in the checked variant */, want: []string{"%ntid.x", "@!%gdp", "bra", "checked"}},
		{name: "a register redefined on another path is not one value: checked",
			decls:  ".shared .align 4 .b8 s[64];",
			body:   "mov.u32 %r4, s;\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 bra $L_a;\nadd.s32 %r4, %r4, 4096;\n$L_a:\nst.shared.u32 [%r4], %r2;",
			proven: 0, checked: 1},
		{name: "tid % 16 and tid / 16 of a signed tid, as nvcc writes them: s[tid%16][tid/16], proven statically",
			decls: ".shared .align 4 .b8 s[4096];", dirs: " .reqntid 256, 1, 1",
			body:   signedModBody("and.b32 %r7, %r6, -16;", "sub.s32 %r8, %r2, %r7;"),
			proven: 1, checked: 0},
		{name: "x - (x & -16) of x itself",
			decls: ".shared .align 4 .b8 s[4096];", dirs: " .reqntid 256, 1, 1",
			body:   signedModBody("and.b32 %r7, %r2, -16;", "sub.s32 %r8, %r2, %r7;"),
			proven: 1, checked: 0},
		{name: "the and of another register: checked",
			decls: ".shared .align 4 .b8 s[4096];", dirs: " .reqntid 256, 1, 1",
			body:   signedModBody("and.b32 %r7, %r1, -16;", "sub.s32 %r8, %r2, %r7;"),
			proven: 0, checked: 1},
		{name: "a mask that is not -2^j: checked",
			decls: ".shared .align 4 .b8 s[4096];", dirs: " .reqntid 256, 1, 1",
			body:   signedModBody("and.b32 %r7, %r6, -17;", "sub.s32 %r8, %r2, %r7;"),
			proven: 0, checked: 1},
		{name: "the index redefined between the and and the sub: checked",
			decls: ".shared .align 4 .b8 s[4096];", dirs: " .reqntid 256, 1, 1",
			body: "mov.u32 %r20, %r2;\n" + signedModBody("and.b32 %r7, %r20, -16;",
				"setp.eq.u32 %p1, %r1, 7;\n@%p1 add.s32 %r20, %r20, 4096;\nsub.s32 %r8, %r20, %r7;"),
			proven: 0, checked: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, res, err := guardedLines(t, sharedKernel(tt.decls, tt.dirs, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			st := res.Stats
			if st.ProvenShape != tt.proven || st.Variants != tt.variants || st.Checked != tt.checked {
				t.Errorf("proven %d, variants %d, checked %d; want %d, %d, %d (stats %+v)\n%s",
					st.ProvenShape, st.Variants, st.Checked, tt.proven, tt.variants, tt.checked, st, out)
			}
			wantInOrder(t, out, tt.want)
		})
	}
}

// signedModBody stores to s + 256*(tid%16) + 4*(tid/16) as nvcc computes
// them for a signed tid: x = tid + (tid >> 31 >>> 28); x/16 = x >> 4;
// tid%16 = tid - (x & -16). and and sub compute %r8, the remainder.
func signedModBody(and, sub string) string {
	return "shr.s32 %r4, %r2, 31;\nshr.u32 %r5, %r4, 28;\nadd.s32 %r6, %r2, %r5;\n" + and + "\n" + sub + "\n" +
		"shl.b32 %r9, %r8, 8;\nshr.s32 %r10, %r6, 4;\nshl.b32 %r11, %r10, 2;\nmov.u32 %r12, s;\n" +
		"add.s32 %r13, %r12, %r9;\nadd.s32 %r14, %r13, %r11;\nst.shared.u32 [%r14], %r2;"
}

// blockShapeKernel writes buf[tid + k*ntid] for k < 16 from the threads
// below m, then sums them back into out: its shared accesses are proven
// for blocks whose dynamic shared memory holds 16*ntid words.
const blockShapeKernel = `.version 8.0
.target sm_90
.address_size 64
.extern .shared .align 16 .b8 buf[];
.visible .entry k(.param .u64 out, .param .u32 m)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<32>;
	.reg .b64 	%rd<8>;
	ld.param.u64 	%rd1, [out];
	ld.param.u32 	%r1, [m];
	mov.u32 	%r2, %tid.x;
	mov.u32 	%r3, %ntid.x;
	setp.ge.u32 	%p1, %r2, %r1;
	@%p1 bra 	$L_end;
	mov.u32 	%r4, buf;
	shl.b32 	%r5, %r2, 2;
	add.s32 	%r6, %r4, %r5;
	shl.b32 	%r7, %r3, 2;
	mov.u32 	%r8, 0;
	mov.u32 	%r9, %r6;
$L_fill:
	add.s32 	%r10, %r2, %r8;
	st.shared.u32 	[%r9], %r10;
	add.s32 	%r9, %r9, %r7;
	add.s32 	%r8, %r8, 1;
	setp.lt.u32 	%p2, %r8, 16;
	@%p2 bra 	$L_fill;
	mov.u32 	%r8, 0;
	mov.u32 	%r9, %r6;
	mov.u32 	%r11, 0;
$L_sum:
	ld.shared.u32 	%r12, [%r9];
	add.s32 	%r11, %r11, %r12;
	add.s32 	%r9, %r9, %r7;
	add.s32 	%r8, %r8, 1;
	setp.lt.u32 	%p3, %r8, 16;
	@%p3 bra 	$L_sum;
	mov.u32 	%r13, %ctaid.x;
	mad.lo.s32 	%r14, %r13, %r3, %r2;
	mul.wide.u32 	%rd2, %r14, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r11;
$L_end:
	ret;
}
`

// TestVariantPerLaunch: the same guarded kernel runs its fast variant when
// the launch gives the dynamic shared memory the proofs need (16*ntid words:
// the proof bounds tid by ntid, not by the parameter m), and its checked
// variant when it gives less — here still enough for the m threads that
// run, whose last word is 15*ntid + m - 1, so the kernel is benign either
// way: identical results, nothing recorded, and the fast launch pays less
// for the guard.
func TestVariantPerLaunch(t *testing.T) {
	src := []byte(blockShapeKernel)
	gm, res := guardText(t, src)
	if res.Stats.Variants != 1 {
		t.Fatalf("want a kernel with two variants; stats %+v", res.Stats)
	}
	const ntid, m = 64, 16
	added := map[string]float64{}
	for _, tc := range []struct {
		name   string
		shared uint32
	}{
		{"fast: 16*ntid words", 16 * 4 * ntid},
		{"checked: 15*ntid + m words", 4 * (15*ntid + m)},
	} {
		spec := kspec{grid: d3(2), block: d3(ntid), shared: tc.shared, args: []arg{zeros(4 * 2 * ntid), s32(m)}}
		br := newBenignRun(spec, 1)
		want, _ := br.run(t, parse(t, src), nil, "k")
		plain := br.instructions
		got, d := br.run(t, gm, res, "k")
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("%s: argument %d differs guarded vs unguarded", tc.name, i)
			}
		}
		if r := d.record(t); r.Violated() {
			t.Errorf("%s: recorded a violation: %+v", tc.name, r)
		}
		added[tc.name] = float64(br.instructions-plain) / float64(2*ntid)
		t.Logf("%s: %.1f instructions per thread added by the guard", tc.name, added[tc.name])
	}
	if added["fast: 16*ntid words"] >= added["checked: 15*ntid + m words"] {
		t.Errorf("the fast variant added %.1f instructions per thread, the checked one %.1f: the launch with enough shared memory did not take the fast variant",
			added["fast: 16*ntid words"], added["checked: 15*ntid + m words"])
	}
}
