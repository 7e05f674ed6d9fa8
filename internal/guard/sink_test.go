package guard_test

import (
	"strings"
	"testing"

	"github.com/gpuos/gpuos/internal/guard"
	"github.com/gpuos/gpuos/internal/ptx"
)

// attackKernel is an attack kernel (the corpus's parameters) around body.
func attackKernel(regs, body string) []byte {
	return []byte(`.version 8.0
.target sm_80
.address_size 64

.visible .entry attack(
	.param .u64 own,
	.param .u64 own_size,
	.param .u64 win_base,
	.param .u64 win_end,
	.param .u64 victim
)
{
	.reg .pred 	%p<8>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<24>;
` + regs + `
	ld.param.u64 	%rd1, [own];
	ld.param.u64 	%rd2, [victim];
	ld.param.u64 	%rd3, [win_end];
	ld.param.u64 	%rd4, [win_base];
	mov.u32 	%r1, %tid.x;
` + body + `
	ret;
}
`)
}

// TestSinkAttacks: global loads that read the sink instead of being
// predicated (check.go toSink, hoist.go sinkBase) are still caught: the
// victim is never read, nothing of it reaches the attacker's buffer, the
// violation is recorded. Each attack is in the form the sink handles: a load
// under a branch, hoisted loads at several offsets that leave the window at
// either end, a vector load, a load with a guard of its own.
func TestSinkAttacks(t *testing.T) {
	tests := []struct{ name, what, regs, body string }{
		{name: "conditional_load", what: "loads of the victim inside an if-block, copied into own",
			body: `
	setp.ge.u32 	%p1, %r1, 64;
	@%p1 bra 	SKIP;
	mul.wide.u32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd2, %rd5;
	ld.global.nc.u32 	%r2, [%rd6];
	add.s64 	%rd7, %rd1, %rd5;
	st.global.u32 	[%rd7+64], %r2;
SKIP:`},
		{name: "hoisted_outside", what: "one register read at four offsets in a loop, outside the window",
			body: `
	add.s64 	%rd5, %rd2, -8;
	mov.u32 	%r3, 0;
LOOP:
	ld.global.u32 	%r4, [%rd5];
	ld.global.u32 	%r5, [%rd5+4];
	ld.global.u32 	%r6, [%rd5+8];
	ld.global.u32 	%r7, [%rd5+12];
	mul.wide.u32 	%rd6, %r3, 16;
	add.s64 	%rd7, %rd1, %rd6;
	st.global.v4.u32 	[%rd7+64], {%r4, %r5, %r6, %r7};
	add.s32 	%r3, %r3, 1;
	setp.lt.u32 	%p1, %r3, 4;
	@%p1 bra 	LOOP;`},
		{name: "hoisted_below_base", what: "one register read below the window's base and at it: a negative offset moves the sink base",
			body: `
	add.s64 	%rd5, %rd4, 8;
	ld.global.u32 	%r4, [%rd5+-16];
	ld.global.u32 	%r5, [%rd5+-8];
	st.global.v2.u32 	[%rd1+64], {%r4, %r5};`},
		{name: "vector_load", what: "a 16-byte vector load of the victim in a loop, copied into own",
			regs: ".reg .f32 %f<8>;",
			body: `
	mov.u64 	%rd5, %rd2;
	mov.u32 	%r3, 0;
LOOP:
	ld.global.v4.f32 	{%f1, %f2, %f3, %f4}, [%rd5];
	mul.wide.u32 	%rd6, %r3, 16;
	add.s64 	%rd7, %rd1, %rd6;
	st.global.v4.f32 	[%rd7+64], {%f1, %f2, %f3, %f4};
	add.s64 	%rd5, %rd5, 16;
	add.s32 	%r3, %r3, 1;
	setp.lt.u32 	%p1, %r3, 4;
	@%p1 bra 	LOOP;`},
		{name: "guarded_load", what: "a load with a guard of its own, of the victim",
			body: `
	setp.lt.u32 	%p2, %r1, 64;
	@%p2 ld.global.u32 	%r2, [%rd2];
	st.global.u32 	[%rd1+64], %r2;`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := attackKernel(tt.regs, tt.body)
			_, res := guardText(t, src)
			if res == nil {
				t.Fatal("not guarded")
			}
			m, _ := guardText(t, src)
			if !strings.Contains(string(m.Bytes()), guard.SinkVar) {
				t.Fatalf("the attack does not use the sink: it tests the old form\n%s", m.Bytes())
			}
			checkCaught(t, attackSpec{name: tt.name, what: tt.what, src: src, kinds: guard.KindAccess, grid: 1, block: 32})
		})
	}
}

// TestSinkForms: which loads read the sink, and at which base.
func TestSinkForms(t *testing.T) {
	tests := []struct {
		name, body string
		opts       guard.Options
		want       []string // substrings of the guarded text, in order
		not        []string // substrings it must not have
	}{
		{name: "hoisted loads at offsets -16 to 12: the sink covers them, based 32 below",
			body: "add.s64 %rd2, %rd1, 64;\nld.global.u32 %r2, [%rd2+-16];\nld.global.u32 %r3, [%rd2+12];\nadd.s32 %r4, %r2, %r3;\nst.global.u32 [%rd1], %r4;",
			want: []string{".global .align 32 .b8 __gpuos_sink[48];", "mov.u64 \t%gdq", ", __gpuos_sink;",
				"add.s64 \t%rd2, %rd1, 64;", ", 32;", "selp.b64 \t%gdq", ", %rd2, %gdq", "ld.global.u32 \t%r2, [%gdq", "+-16];", "ld.global.u32 \t%r3, [%gdq", "+12];"},
			not: []string{"ld.global.u32 \t%r2, [%rd2"}},
		{name: "a store keeps its predicate",
			body: "st.global.u32 [%rd1], %r1;", want: []string{"st.global.u32 \t[%rd1]"}, not: []string{"__gpuos_sink"}},
		{name: "a load with a guard keeps it and reads the sink when its check fails",
			body: "setp.eq.u32 %p1, %r1, 0;\n@%p1 ld.global.u32 %r2, [%rd1+8];\nst.global.u32 [%rd1], %r2;",
			want: []string{"selp.b64 \t%gdq", "@%p1 ld.global.u32 \t%r2, [%gdq"}},
		{name: "PredicateLoads: the old form", opts: guard.Options{PredicateLoads: true},
			body: "mov.u64 %rd2, %rd1;\nL1:\nld.global.u32 %r2, [%rd2];\nadd.s64 %rd2, %rd2, 4;\nsetp.ne.u32 %p1, %r2, 0;\n@%p1 bra L1;",
			want: []string{"mov.b32 \t%r2, 0;", "@%gdp"}, not: []string{"__gpuos_sink"}},
		{name: "a generic load is predicated",
			body: "ld.u32 %r2, [%rd1];\nst.global.u32 [%rd1+4], %r2;", not: []string{"__gpuos_sink"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ptx.Parse([]byte(kernelWith("", tt.body)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := guard.Guard(m, tt.opts); err != nil {
				t.Fatal(err)
			}
			out := string(m.Bytes())
			wantInOrder(t, out, tt.want)
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("guarded text has %q:\n%s", n, out)
				}
			}
		})
	}
}

// TestLowBitsAttack: x - (x & -16) is proven in [0, 15] only when x is one
// value at the and and at the sub; a thread that changes x in between must
// be caught (ranges.go, lowBits).
func TestLowBitsAttack(t *testing.T) {
	src := attackKernel(".shared .align 4 .b8 s[4096];", `
	mov.u32 	%r2, %r1;
	shr.s32 	%r4, %r2, 31;
	shr.u32 	%r5, %r4, 28;
	add.s32 	%r6, %r2, %r5;
	and.b32 	%r7, %r6, -16;
	setp.eq.u32 	%p1, %r1, 0;
	@%p1 add.s32 	%r2, %r2, 100000;
	sub.s32 	%r8, %r2, %r7;
	shl.b32 	%r9, %r8, 8;
	mov.u32 	%r12, s;
	add.s32 	%r13, %r12, %r9;
	st.shared.u32 	[%r13], %r1;`)
	checkCaught(t, attackSpec{name: "lowbits_redefined", what: "x % 16 with x changed between the and and the sub: a shared store far past the block's memory",
		src: src, kinds: guard.KindAccess, grid: 1, block: 32})
}
