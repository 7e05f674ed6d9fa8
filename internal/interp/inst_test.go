package interp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/gpuos/gpuos/internal/ptx"
)

// Have/want tests, one or more per supported instruction: each case is a
// snippet of handwritten PTX run by one thread, with its input registers set by
// mov immediates and its output registers stored to global memory.

type kv = map[string]uint64

type instCase struct {
	name string
	ptx  string // instructions; registers %r, %rd, %rs, %f, %fd, %p (0..31)
	in   kv
	want kv
}

func F(x float32) uint64 { return uint64(math.Float32bits(x)) }
func D(x float64) uint64 { return math.Float64bits(x) }

const (
	nan32  = 0x7fffffff
	nan64  = 0x7fffffffffffffff
	inf32  = 0x7f800000
	ninf32 = 0xff800000
	inf64  = 0x7ff0000000000000
	neg0   = 0x80000000
	sub32  = 0x00000001 // the smallest subnormal
	max32  = 0x7f7fffff
)

// regWidth returns the register's width in bits (1 for predicates).
func regWidth(name string) int {
	switch {
	case strings.HasPrefix(name, "%rd"), strings.HasPrefix(name, "%fd"):
		return 64
	case strings.HasPrefix(name, "%rs"):
		return 16
	case strings.HasPrefix(name, "%r"), strings.HasPrefix(name, "%f"):
		return 32
	case strings.HasPrefix(name, "%p"):
		return 1
	}
	panic("register " + name)
}

const instHeader = `.version 9.0
.target sm_90
.address_size 64
`

const instRegs = `	.reg .b64 %io;
	.reg .b32 %tmp;
	.reg .pred %p<16>;
	.reg .b16 %rs<32>;
	.reg .b32 %r<32>;
	.reg .b64 %rd<32>;
	.reg .f32 %f<32>;
	.reg .f64 %fd<32>;
`

func sortedRegs(m kv) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// instKernel wraps a case in a kernel that takes a pointer to its output.
func instKernel(c instCase) (string, []string) {
	var b strings.Builder
	b.WriteString(instHeader)
	b.WriteString(".visible .entry t(.param .u64 out)\n{\n")
	b.WriteString(instRegs)
	b.WriteString("\tld.param.u64 %io, [out];\n")
	for _, r := range sortedRegs(c.in) {
		v := c.in[r]
		switch regWidth(r) {
		case 1:
			fmt.Fprintf(&b, "\tsetp.ne.u32 %s, %d, 0;\n", r, v)
		default:
			fmt.Fprintf(&b, "\tmov.b%d %s, %#x;\n", regWidth(r), r, v)
		}
	}
	b.WriteString(c.ptx + "\n")
	outs := sortedRegs(c.want)
	for i, r := range outs {
		switch w := regWidth(r); w {
		case 1:
			fmt.Fprintf(&b, "\tselp.u32 %%tmp, 1, 0, %s;\n\tst.global.u32 [%%io+%d], %%tmp;\n", r, 8*i)
		default:
			fmt.Fprintf(&b, "\tst.global.b%d [%%io+%d], %s;\n", w, 8*i, r)
		}
	}
	b.WriteString("\tret;\n}\n")
	return b.String(), outs
}

func runInstCase(t *testing.T, c instCase) {
	t.Helper()
	src, outs := instKernel(c)
	p := compileSrc(t, src)
	k, err := p.Kernel("t")
	if err != nil {
		t.Fatal(err)
	}
	mem := newDevMem()
	oa, ob := mem.alloc(8 * (len(outs) + 1))
	_, err = k.Run(context.Background(), Launch{Grid: dim(1, 1, 1), Block: dim(1, 1, 1), Params: packParams(t, k, oa), Global: mem})
	if err != nil {
		t.Fatalf("%s: %v\n%s", c.name, err, src)
	}
	got := u64s(ob)
	for i, r := range outs {
		w := regWidth(r)
		mask := uint64(math.MaxUint64)
		if w < 64 {
			mask = 1<<max(w, 32) - 1
			if w == 16 {
				mask = 0xffff
			}
		}
		have, want := got[i]&mask, c.want[r]&mask
		if have != want {
			t.Errorf("%s: %s = %#x, want %#x\n%s", c.name, r, have, want, c.ptx)
		}
	}
}

func runInstCases(t *testing.T, cases []instCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runInstCase(t, c) })
	}
}

func TestIntegerArithmetic(t *testing.T) {
	runInstCases(t, []instCase{
		{"add.s32 wraps", "add.s32 %r3, %r1, %r2;", kv{"%r1": 0x7fffffff, "%r2": 1}, kv{"%r3": 0x80000000}},
		{"add.u32 imm", "add.u32 %r3, %r1, -1;", kv{"%r1": 5}, kv{"%r3": 4}},
		{"add.u16", "add.u16 %rs3, %rs1, %rs2;", kv{"%rs1": 0xffff, "%rs2": 2}, kv{"%rs3": 1}},
		{"add.s64", "add.s64 %rd3, %rd1, %rd2;", kv{"%rd1": 1 << 40, "%rd2": math.MaxUint64}, kv{"%rd3": 1<<40 - 1}},
		{"add.sat.s32 high", "add.sat.s32 %r3, %r1, %r2;", kv{"%r1": 0x7ffffff0, "%r2": 0x100}, kv{"%r3": 0x7fffffff}},
		{"add.sat.s32 low", "add.sat.s32 %r3, %r1, %r2;", kv{"%r1": 0x80000010, "%r2": 0xffffff00}, kv{"%r3": 0x80000000}},
		{"sub.s32", "sub.s32 %r3, %r1, %r2;", kv{"%r1": 3, "%r2": 5}, kv{"%r3": 0xfffffffe}},
		{"sub.u64", "sub.u64 %rd3, %rd1, %rd2;", kv{"%rd1": 0, "%rd2": 1}, kv{"%rd3": math.MaxUint64}},
		{"sub.sat.s32", "sub.sat.s32 %r3, %r1, %r2;", kv{"%r1": 0x80000000, "%r2": 1}, kv{"%r3": 0x80000000}},
		{"sub.s16", "sub.s16 %rs3, %rs1, %rs2;", kv{"%rs1": 0, "%rs2": 1}, kv{"%rs3": 0xffff}},
		// 64-bit add and subtract through 32-bit carry chains.
		{"add.cc addc", "add.cc.u32 %r5, %r1, %r3;\naddc.u32 %r6, %r2, %r4;",
			kv{"%r1": 0xffffffff, "%r2": 1, "%r3": 1, "%r4": 2}, kv{"%r5": 0, "%r6": 4}},
		{"addc.cc chain", "add.cc.u32 %r5, %r1, %r1;\naddc.cc.u32 %r6, %r1, %r1;\naddc.u32 %r7, %r2, %r2;",
			kv{"%r1": 0xffffffff, "%r2": 0}, kv{"%r5": 0xfffffffe, "%r6": 0xffffffff, "%r7": 1}},
		{"sub.cc subc borrow", "sub.cc.u32 %r5, %r1, %r3;\nsubc.u32 %r6, %r2, %r4;",
			kv{"%r1": 0, "%r2": 5, "%r3": 1, "%r4": 2}, kv{"%r5": 0xffffffff, "%r6": 2}},
		{"add.cc.u64 addc.u64", "add.cc.u64 %rd5, %rd1, %rd3;\naddc.u64 %rd6, %rd2, %rd4;",
			kv{"%rd1": math.MaxUint64, "%rd2": 7, "%rd3": 2, "%rd4": 1}, kv{"%rd5": 1, "%rd6": 9}},
		{"mad.lo.cc madc.hi", "mad.lo.cc.u32 %r5, %r1, %r2, %r3;\nmadc.hi.u32 %r6, %r1, %r2, %r4;",
			kv{"%r1": 0x80000000, "%r2": 4, "%r3": 1, "%r4": 0}, kv{"%r5": 1, "%r6": 2}},
		{"madc.lo carry in", "add.cc.u32 %r9, %r1, %r1;\nmadc.lo.u32 %r6, %r2, %r2, %r3;",
			kv{"%r1": 0x80000000, "%r2": 3, "%r3": 10}, kv{"%r6": 20}},
		{"mul.lo.s32", "mul.lo.s32 %r3, %r1, %r2;", kv{"%r1": 0x10000, "%r2": 0x10001}, kv{"%r3": 0x10000}},
		{"mul.lo.u16", "mul.lo.u16 %rs3, %rs1, %rs2;", kv{"%rs1": 0x100, "%rs2": 0x101}, kv{"%rs3": 0x100}},
		{"mul.lo.u64", "mul.lo.u64 %rd3, %rd1, %rd2;", kv{"%rd1": 1 << 63, "%rd2": 3}, kv{"%rd3": 1 << 63}},
		{"mul.hi.u32", "mul.hi.u32 %r3, %r1, %r2;", kv{"%r1": 0xffffffff, "%r2": 0xffffffff}, kv{"%r3": 0xfffffffe}},
		{"mul.hi.s32", "mul.hi.s32 %r3, %r1, %r2;", kv{"%r1": 0xffffffff, "%r2": 5}, kv{"%r3": 0xffffffff}},
		{"mul.hi.s16", "mul.hi.s16 %rs3, %rs1, %rs2;", kv{"%rs1": 0x8000, "%rs2": 2}, kv{"%rs3": 0xffff}},
		{"mul.hi.u64", "mul.hi.u64 %rd3, %rd1, %rd2;", kv{"%rd1": math.MaxUint64, "%rd2": 3}, kv{"%rd3": 2}},
		{"mul.hi.s64", "mul.hi.s64 %rd3, %rd1, %rd2;", kv{"%rd1": math.MaxUint64, "%rd2": 3}, kv{"%rd3": math.MaxUint64}},
		{"mul.hi.s64 both negative", "mul.hi.s64 %rd3, %rd1, %rd2;", kv{"%rd1": 1 << 63, "%rd2": 1 << 63}, kv{"%rd3": 1 << 62}},
		{"mul.wide.s32", "mul.wide.s32 %rd3, %r1, %r2;", kv{"%r1": 0xfffffffe, "%r2": 0x40000000}, kv{"%rd3": 0xffffffff80000000}},
		{"mul.wide.u32", "mul.wide.u32 %rd3, %r1, %r2;", kv{"%r1": 0xffffffff, "%r2": 0xffffffff}, kv{"%rd3": 0xfffffffe00000001}},
		{"mul.wide.u16", "mul.wide.u16 %r3, %rs1, %rs2;", kv{"%rs1": 0xffff, "%rs2": 0xffff}, kv{"%r3": 0xfffe0001}},
		{"mul.wide.s16", "mul.wide.s16 %r3, %rs1, %rs2;", kv{"%rs1": 0xffff, "%rs2": 3}, kv{"%r3": 0xfffffffd}},
		{"mad.lo.s32", "mad.lo.s32 %r4, %r1, %r2, %r3;", kv{"%r1": 7, "%r2": 0xfffffffd, "%r3": 100}, kv{"%r4": 79}},
		{"mad.lo.u64", "mad.lo.u64 %rd4, %rd1, %rd2, %rd3;", kv{"%rd1": 1 << 32, "%rd2": 1 << 32, "%rd3": 5}, kv{"%rd4": 5}},
		{"mad.hi.u32", "mad.hi.u32 %r4, %r1, %r2, %r3;", kv{"%r1": 0x80000000, "%r2": 6, "%r3": 0xffffffff}, kv{"%r4": 2}},
		{"mad.hi.sat.s32", "mad.hi.sat.s32 %r4, %r1, %r2, %r3;", kv{"%r1": 0x40000000, "%r2": 4, "%r3": 0x7fffffff}, kv{"%r4": 0x7fffffff}},
		{"mad.wide.s32", "mad.wide.s32 %rd4, %r1, %r2, %rd3;", kv{"%r1": 0xffffffff, "%r2": 2, "%rd3": 10}, kv{"%rd4": 8}},
		{"mad.wide.u32", "mad.wide.u32 %rd4, %r1, %r2, %rd3;", kv{"%r1": 0x80000000, "%r2": 4, "%rd3": 1}, kv{"%rd4": 0x200000001}},
		{"mad.wide.u16", "mad.wide.u16 %r4, %rs1, %rs2, %r3;", kv{"%rs1": 0x100, "%rs2": 0x100, "%r3": 1}, kv{"%r4": 0x10001}},
		{"mul24.lo.u32", "mul24.lo.u32 %r3, %r1, %r2;", kv{"%r1": 0xff000003, "%r2": 5}, kv{"%r3": 15}},
		{"mul24.hi.u32", "mul24.hi.u32 %r3, %r1, %r2;", kv{"%r1": 0xffffff, "%r2": 0xffffff}, kv{"%r3": 0xfffffe00}},
		{"mul24.lo.s32", "mul24.lo.s32 %r3, %r1, %r2;", kv{"%r1": 0xffffff, "%r2": 3}, kv{"%r3": 0xfffffffd}},
		{"mad24.lo.u32", "mad24.lo.u32 %r4, %r1, %r2, %r3;", kv{"%r1": 1000, "%r2": 1000, "%r3": 1}, kv{"%r4": 1000001}},
		{"sad.u32", "sad.u32 %r4, %r1, %r2, %r3;", kv{"%r1": 3, "%r2": 10, "%r3": 100}, kv{"%r4": 107}},
		{"sad.s32", "sad.s32 %r4, %r1, %r2, %r3;", kv{"%r1": 0xfffffffd, "%r2": 2, "%r3": 1}, kv{"%r4": 6}},
		{"div.u32", "div.u32 %r3, %r1, %r2;", kv{"%r1": 100, "%r2": 7}, kv{"%r3": 14}},
		{"div.u32 by zero", "div.u32 %r3, %r1, %r2;", kv{"%r1": 100, "%r2": 0}, kv{"%r3": 0xffffffff}},
		{"div.s32 truncates", "div.s32 %r3, %r1, %r2;", kv{"%r1": 0xfffffff9, "%r2": 2}, kv{"%r3": 0xfffffffd}},
		{"div.s32 overflow", "div.s32 %r3, %r1, %r2;", kv{"%r1": 0x80000000, "%r2": 0xffffffff}, kv{"%r3": 0x80000000}},
		{"div.u16", "div.u16 %rs3, %rs1, %rs2;", kv{"%rs1": 0xffff, "%rs2": 0x100}, kv{"%rs3": 0xff}},
		{"div.s64", "div.s64 %rd3, %rd1, %rd2;", kv{"%rd1": 0xfffffffffffffff9, "%rd2": 2}, kv{"%rd3": 0xfffffffffffffffd}},
		{"div.u64", "div.u64 %rd3, %rd1, %rd2;", kv{"%rd1": math.MaxUint64, "%rd2": 1 << 32}, kv{"%rd3": 0xffffffff}},
		{"rem.s32 sign of dividend", "rem.s32 %r3, %r1, %r2;", kv{"%r1": 0xfffffff9, "%r2": 2}, kv{"%r3": 0xffffffff}},
		{"rem.u32", "rem.u32 %r3, %r1, %r2;", kv{"%r1": 100, "%r2": 7}, kv{"%r3": 2}},
		{"rem.u32 by zero", "rem.u32 %r3, %r1, %r2;", kv{"%r1": 100, "%r2": 0}, kv{"%r3": 100}},
		{"rem.s64", "rem.s64 %rd3, %rd1, %rd2;", kv{"%rd1": 1 << 63, "%rd2": math.MaxUint64}, kv{"%rd3": 0}},
		{"rem.u16", "rem.u16 %rs3, %rs1, %rs2;", kv{"%rs1": 1000, "%rs2": 7}, kv{"%rs3": 6}},
		{"abs.s32", "abs.s32 %r2, %r1;", kv{"%r1": 0xfffffffb}, kv{"%r2": 5}},
		{"abs.s32 min", "abs.s32 %r2, %r1;", kv{"%r1": 0x80000000}, kv{"%r2": 0x80000000}},
		{"abs.s16", "abs.s16 %rs2, %rs1;", kv{"%rs1": 0xfff0}, kv{"%rs2": 16}},
		{"abs.s64", "abs.s64 %rd2, %rd1;", kv{"%rd1": math.MaxUint64}, kv{"%rd2": 1}},
		{"neg.s32", "neg.s32 %r2, %r1;", kv{"%r1": 5}, kv{"%r2": 0xfffffffb}},
		{"neg.s64", "neg.s64 %rd2, %rd1;", kv{"%rd1": 1}, kv{"%rd2": math.MaxUint64}},
		{"min.s32", "min.s32 %r3, %r1, %r2;", kv{"%r1": 0xffffffff, "%r2": 1}, kv{"%r3": 0xffffffff}},
		{"min.u32", "min.u32 %r3, %r1, %r2;", kv{"%r1": 0xffffffff, "%r2": 1}, kv{"%r3": 1}},
		{"max.s32", "max.s32 %r3, %r1, %r2;", kv{"%r1": 0xffffffff, "%r2": 1}, kv{"%r3": 1}},
		{"max.u64", "max.u64 %rd3, %rd1, %rd2;", kv{"%rd1": math.MaxUint64, "%rd2": 1}, kv{"%rd3": math.MaxUint64}},
		{"min.s64", "min.s64 %rd3, %rd1, %rd2;", kv{"%rd1": math.MaxUint64, "%rd2": 1}, kv{"%rd3": math.MaxUint64}},
		{"max.s16", "max.s16 %rs3, %rs1, %rs2;", kv{"%rs1": 0x8000, "%rs2": 0x7fff}, kv{"%rs3": 0x7fff}},
		{"min.u16", "min.u16 %rs3, %rs1, %rs2;", kv{"%rs1": 0x8000, "%rs2": 0x7fff}, kv{"%rs3": 0x7fff}},
		{"max.relu.s32", "max.relu.s32 %r3, %r1, %r2;", kv{"%r1": 0xfffffff0, "%r2": 0xfffffff5}, kv{"%r3": 0}},
	})
}

func TestBitOperations(t *testing.T) {
	runInstCases(t, []instCase{
		{"and.b32", "and.b32 %r3, %r1, %r2;", kv{"%r1": 0xff00ff00, "%r2": 0x0ff00ff0}, kv{"%r3": 0x0f000f00}},
		{"or.b64", "or.b64 %rd3, %rd1, %rd2;", kv{"%rd1": 1 << 63, "%rd2": 1}, kv{"%rd3": 1<<63 | 1}},
		{"xor.b16", "xor.b16 %rs3, %rs1, %rs2;", kv{"%rs1": 0xffff, "%rs2": 0x0f0f}, kv{"%rs3": 0xf0f0}},
		{"not.b32", "not.b32 %r2, %r1;", kv{"%r1": 0x0f0f0f0f}, kv{"%r2": 0xf0f0f0f0}},
		{"cnot.b32 zero", "cnot.b32 %r2, %r1;", kv{"%r1": 0}, kv{"%r2": 1}},
		{"cnot.b32 nonzero", "cnot.b32 %r2, %r1;", kv{"%r1": 0x100}, kv{"%r2": 0}},
		{"cnot.b16 truncates", "cnot.b16 %rs2, %rs1;", kv{"%rs1": 0}, kv{"%rs2": 1}},
		{"and.pred", "and.pred %p3, %p1, %p2;", kv{"%p1": 1, "%p2": 0}, kv{"%p3": 0}},
		{"or.pred", "or.pred %p3, %p1, %p2;", kv{"%p1": 1, "%p2": 0}, kv{"%p3": 1}},
		{"xor.pred", "xor.pred %p3, %p1, %p2;", kv{"%p1": 1, "%p2": 1}, kv{"%p3": 0}},
		{"not.pred", "not.pred %p3, %p1;", kv{"%p1": 1}, kv{"%p3": 0}},
		{"shl.b32", "shl.b32 %r3, %r1, %r2;", kv{"%r1": 0x80000001, "%r2": 1}, kv{"%r3": 2}},
		{"shl.b32 clamps", "shl.b32 %r3, %r1, %r2;", kv{"%r1": 1, "%r2": 32}, kv{"%r3": 0}},
		{"shl.b32 huge", "shl.b32 %r3, %r1, %r2;", kv{"%r1": 1, "%r2": 0xffffffff}, kv{"%r3": 0}},
		{"shl.b64", "shl.b64 %rd3, %rd1, %r2;", kv{"%rd1": 1, "%r2": 63}, kv{"%rd3": 1 << 63}},
		{"shl.b64 clamps", "shl.b64 %rd3, %rd1, %r2;", kv{"%rd1": 1, "%r2": 64}, kv{"%rd3": 0}},
		{"shl.b16", "shl.b16 %rs3, %rs1, %r2;", kv{"%rs1": 0x8001, "%r2": 1}, kv{"%rs3": 2}},
		{"shr.u32", "shr.u32 %r3, %r1, %r2;", kv{"%r1": 0x80000000, "%r2": 31}, kv{"%r3": 1}},
		{"shr.u32 clamps", "shr.u32 %r3, %r1, %r2;", kv{"%r1": 0x80000000, "%r2": 40}, kv{"%r3": 0}},
		{"shr.s32", "shr.s32 %r3, %r1, %r2;", kv{"%r1": 0x80000000, "%r2": 4}, kv{"%r3": 0xf8000000}},
		{"shr.s32 clamps to sign", "shr.s32 %r3, %r1, %r2;", kv{"%r1": 0x80000000, "%r2": 100}, kv{"%r3": 0xffffffff}},
		{"shr.b32 is logical", "shr.b32 %r3, %r1, %r2;", kv{"%r1": 0x80000000, "%r2": 4}, kv{"%r3": 0x08000000}},
		{"shr.s64", "shr.s64 %rd3, %rd1, %r2;", kv{"%rd1": 1 << 63, "%r2": 63}, kv{"%rd3": math.MaxUint64}},
		{"shr.u64", "shr.u64 %rd3, %rd1, %r2;", kv{"%rd1": 1 << 63, "%r2": 64}, kv{"%rd3": 0}},
		{"shr.s16", "shr.s16 %rs3, %rs1, %r2;", kv{"%rs1": 0x8000, "%r2": 15}, kv{"%rs3": 0xffff}},
		{"popc.b32", "popc.b32 %r2, %r1;", kv{"%r1": 0xf0f0f0f1}, kv{"%r2": 17}},
		{"popc.b64", "popc.b64 %r2, %rd1;", kv{"%rd1": math.MaxUint64}, kv{"%r2": 64}},
		{"clz.b32", "clz.b32 %r2, %r1;", kv{"%r1": 0x00010000}, kv{"%r2": 15}},
		{"clz.b32 zero", "clz.b32 %r2, %r1;", kv{"%r1": 0}, kv{"%r2": 32}},
		{"clz.b64", "clz.b64 %r2, %rd1;", kv{"%rd1": 1}, kv{"%r2": 63}},
		{"clz.b64 zero", "clz.b64 %r2, %rd1;", kv{"%rd1": 0}, kv{"%r2": 64}},
		{"brev.b32", "brev.b32 %r2, %r1;", kv{"%r1": 0x00000001}, kv{"%r2": 0x80000000}},
		{"brev.b64", "brev.b64 %rd2, %rd1;", kv{"%rd1": 0x3}, kv{"%rd2": 0xc000000000000000}},
		{"bfind.u32", "bfind.u32 %r2, %r1;", kv{"%r1": 0x00010001}, kv{"%r2": 16}},
		{"bfind.u32 zero", "bfind.u32 %r2, %r1;", kv{"%r1": 0}, kv{"%r2": 0xffffffff}},
		{"bfind.s32 negative", "bfind.s32 %r2, %r1;", kv{"%r1": 0xfffffff0}, kv{"%r2": 3}},
		{"bfind.s32 minus one", "bfind.s32 %r2, %r1;", kv{"%r1": 0xffffffff}, kv{"%r2": 0xffffffff}},
		{"bfind.shiftamt.u32", "bfind.shiftamt.u32 %r2, %r1;", kv{"%r1": 0x00010001}, kv{"%r2": 15}},
		{"bfind.u64", "bfind.u64 %r2, %rd1;", kv{"%rd1": 1 << 40}, kv{"%r2": 40}},
		{"bfind.s64", "bfind.s64 %r2, %rd1;", kv{"%rd1": 1 << 63}, kv{"%r2": 62}},
		{"bfe.u32", "bfe.u32 %r4, %r1, %r2, %r3;", kv{"%r1": 0x12345678, "%r2": 8, "%r3": 12}, kv{"%r4": 0x456}},
		{"bfe.s32 sign", "bfe.s32 %r4, %r1, %r2, %r3;", kv{"%r1": 0x0000f000, "%r2": 12, "%r3": 4}, kv{"%r4": 0xffffffff}},
		{"bfe.s32 len 0", "bfe.s32 %r4, %r1, %r2, %r3;", kv{"%r1": 0xffffffff, "%r2": 4, "%r3": 0}, kv{"%r4": 0}},
		{"bfe.u32 past the end", "bfe.u32 %r4, %r1, %r2, %r3;", kv{"%r1": 0xf0000000, "%r2": 28, "%r3": 8}, kv{"%r4": 0xf}},
		{"bfe.s32 past the end", "bfe.s32 %r4, %r1, %r2, %r3;", kv{"%r1": 0x80000000, "%r2": 30, "%r3": 8}, kv{"%r4": 0xfffffffe}},
		{"bfe.u32 pos beyond", "bfe.u32 %r4, %r1, %r2, %r3;", kv{"%r1": 0xffffffff, "%r2": 40, "%r3": 8}, kv{"%r4": 0}},
		{"bfe.s32 pos beyond", "bfe.s32 %r4, %r1, %r2, %r3;", kv{"%r1": 0xffffffff, "%r2": 40, "%r3": 8}, kv{"%r4": 0xffffffff}},
		{"bfe.s64", "bfe.s64 %rd4, %rd1, %r2, %r3;", kv{"%rd1": 0x8000000000000000, "%r2": 60, "%r3": 4}, kv{"%rd4": math.MaxUint64 - 7}},
		{"bfe.u64 uses low byte", "bfe.u64 %rd4, %rd1, %r2, %r3;", kv{"%rd1": 0xff00, "%r2": 0x108, "%r3": 4}, kv{"%rd4": 0xf}},
		{"bfi.b32", "bfi.b32 %r5, %r1, %r2, %r3, %r4;", kv{"%r1": 0xab, "%r2": 0xffffffff, "%r3": 8, "%r4": 8}, kv{"%r5": 0xffffabff}},
		{"bfi.b32 past the end", "bfi.b32 %r5, %r1, %r2, %r3, %r4;", kv{"%r1": 0xff, "%r2": 0, "%r3": 28, "%r4": 8}, kv{"%r5": 0xf0000000}},
		{"bfi.b64", "bfi.b64 %rd5, %rd1, %rd2, 32, 32;", kv{"%rd1": 0x12345678, "%rd2": 0xaabbccdd}, kv{"%rd5": 0x12345678aabbccdd}},
		{"prmt default", "prmt.b32 %r4, %r1, %r2, %r3;", kv{"%r1": 0x44332211, "%r2": 0x88776655, "%r3": 0x5140}, kv{"%r4": 0x66225511}},
		{"prmt sign replicate", "prmt.b32 %r4, %r1, %r2, %r3;", kv{"%r1": 0x00800080, "%r2": 0, "%r3": 0x8820}, kv{"%r4": 0xffff8080}},
		{"prmt.f4e", "prmt.b32.f4e %r4, %r1, %r2, %r3;", kv{"%r1": 0x44332211, "%r2": 0x88776655, "%r3": 1}, kv{"%r4": 0x55443322}},
		{"prmt.b4e", "prmt.b32.b4e %r4, %r1, %r2, %r3;", kv{"%r1": 0x44332211, "%r2": 0x88776655, "%r3": 1}, kv{"%r4": 0x77881122}},
		{"prmt.rc8", "prmt.b32.rc8 %r4, %r1, %r2, %r3;", kv{"%r1": 0x44332211, "%r2": 0, "%r3": 2}, kv{"%r4": 0x33333333}},
		{"prmt.ecl", "prmt.b32.ecl %r4, %r1, %r2, %r3;", kv{"%r1": 0x44332211, "%r2": 0, "%r3": 1}, kv{"%r4": 0x44332222}},
		{"prmt.ecr", "prmt.b32.ecr %r4, %r1, %r2, %r3;", kv{"%r1": 0x44332211, "%r2": 0, "%r3": 2}, kv{"%r4": 0x33332211}},
		{"prmt.rc16", "prmt.b32.rc16 %r4, %r1, %r2, %r3;", kv{"%r1": 0x44332211, "%r2": 0, "%r3": 1}, kv{"%r4": 0x44334433}},
		{"lop3 a", "lop3.b32 %r4, %r1, %r2, %r3, 0xF0;", kv{"%r1": 0x1234, "%r2": 0xff, "%r3": 0}, kv{"%r4": 0x1234}},
		{"lop3 xor3", "lop3.b32 %r4, %r1, %r2, %r3, 0x96;", kv{"%r1": 0xf0, "%r2": 0xcc, "%r3": 0xaa}, kv{"%r4": 0xf0 ^ 0xcc ^ 0xaa}},
		{"lop3 majority", "lop3.b32 %r4, %r1, %r2, %r3, 0xE8;", kv{"%r1": 0xf0, "%r2": 0xcc, "%r3": 0xaa}, kv{"%r4": 0xe8}},
		{"lop3 a&~b|c", "lop3.b32 %r4, %r1, %r2, %r3, 0xBA;", kv{"%r1": 0xf0, "%r2": 0xcc, "%r3": 0xaa}, kv{"%r4": 0xf0&^0xcc | 0xaa}},
		{"shf.l.wrap", "shf.l.wrap.b32 %r4, %r1, %r2, %r3;", kv{"%r1": 0x80000000, "%r2": 0x00000001, "%r3": 33}, kv{"%r4": 0x00000003}},
		{"shf.r.wrap", "shf.r.wrap.b32 %r4, %r1, %r2, %r3;", kv{"%r1": 0x00000010, "%r2": 0x00000001, "%r3": 4}, kv{"%r4": 0x10000001}},
		{"shf.l.clamp", "shf.l.clamp.b32 %r4, %r1, %r2, %r3;", kv{"%r1": 0xaaaa, "%r2": 0xbbbb, "%r3": 40}, kv{"%r4": 0xaaaa}},
		{"shf.r.clamp", "shf.r.clamp.b32 %r4, %r1, %r2, %r3;", kv{"%r1": 0xaaaa, "%r2": 0xbbbb, "%r3": 32}, kv{"%r4": 0xbbbb}},
		{"dp4a.u32.u32", "dp4a.u32.u32 %r4, %r1, %r2, %r3;", kv{"%r1": 0x01020304, "%r2": 0x01010101, "%r3": 100}, kv{"%r4": 110}},
		{"dp4a.s32.s32", "dp4a.s32.s32 %r4, %r1, %r2, %r3;", kv{"%r1": 0xff000002, "%r2": 0x02000003, "%r3": 0}, kv{"%r4": 4}},
		{"dp2a.lo.s32.u32", "dp2a.lo.s32.u32 %r4, %r1, %r2, %r3;", kv{"%r1": 0xffff0002, "%r2": 0x00000403, "%r3": 1}, kv{"%r4": 3}},
		{"dp2a.hi.u32.u32", "dp2a.hi.u32.u32 %r4, %r1, %r2, %r3;", kv{"%r1": 0x00020003, "%r2": 0x05040000, "%r3": 0}, kv{"%r4": 22}},
		{"bmsk.wrap", "bmsk.wrap.b32 %r3, %r1, %r2;", kv{"%r1": 4, "%r2": 8}, kv{"%r3": 0xff0}},
		{"bmsk.clamp", "bmsk.clamp.b32 %r3, %r1, %r2;", kv{"%r1": 28, "%r2": 40}, kv{"%r3": 0xf0000000}},
		{"szext.s32", "szext.wrap.s32 %r3, %r1, %r2;", kv{"%r1": 0x80, "%r2": 8}, kv{"%r3": 0xffffff80}},
		{"szext.u32", "szext.clamp.u32 %r3, %r1, %r2;", kv{"%r1": 0xfff, "%r2": 8}, kv{"%r3": 0xff}},
	})
}

func TestCompareSelect(t *testing.T) {
	runInstCases(t, []instCase{
		{"setp.lt.s32", "setp.lt.s32 %p1, %r1, %r2;", kv{"%r1": 0xffffffff, "%r2": 0}, kv{"%p1": 1}},
		{"setp.lt.u32", "setp.lt.u32 %p1, %r1, %r2;", kv{"%r1": 0xffffffff, "%r2": 0}, kv{"%p1": 0}},
		{"setp.lo.u32", "setp.lo.u32 %p1, %r1, %r2;", kv{"%r1": 1, "%r2": 2}, kv{"%p1": 1}},
		{"setp.ls.u64", "setp.ls.u64 %p1, %rd1, %rd2;", kv{"%rd1": 2, "%rd2": 2}, kv{"%p1": 1}},
		{"setp.hi.u16", "setp.hi.u16 %p1, %rs1, %rs2;", kv{"%rs1": 0x8000, "%rs2": 1}, kv{"%p1": 1}},
		{"setp.hs.u32", "setp.hs.u32 %p1, %r1, %r2;", kv{"%r1": 1, "%r2": 2}, kv{"%p1": 0}},
		{"setp.ge.s64", "setp.ge.s64 %p1, %rd1, %rd2;", kv{"%rd1": 1 << 63, "%rd2": 0}, kv{"%p1": 0}},
		{"setp.gt.s16", "setp.gt.s16 %p1, %rs1, %rs2;", kv{"%rs1": 1, "%rs2": 0xffff}, kv{"%p1": 1}},
		{"setp.le.s32", "setp.le.s32 %p1, %r1, %r2;", kv{"%r1": 5, "%r2": 5}, kv{"%p1": 1}},
		{"setp.eq.b32", "setp.eq.b32 %p1, %r1, %r2;", kv{"%r1": 5, "%r2": 5}, kv{"%p1": 1}},
		{"setp.ne.b64", "setp.ne.b64 %p1, %rd1, %rd2;", kv{"%rd1": 5, "%rd2": 1<<32 | 5}, kv{"%p1": 1}},
		{"setp p|q", "setp.lt.s32 %p1|%p2, %r1, %r2;", kv{"%r1": 1, "%r2": 2}, kv{"%p1": 1, "%p2": 0}},
		{"setp.and", "setp.lt.s32.and %p1, %r1, %r2, %p3;", kv{"%r1": 1, "%r2": 2, "%p3": 0}, kv{"%p1": 0}},
		{"setp.or negated", "setp.gt.s32.or %p1|%p2, %r1, %r2, !%p3;", kv{"%r1": 1, "%r2": 2, "%p3": 0}, kv{"%p1": 1, "%p2": 1}},
		{"setp.xor", "setp.eq.u32.xor %p1|%p2, %r1, %r2, %p3;", kv{"%r1": 1, "%r2": 1, "%p3": 1}, kv{"%p1": 0, "%p2": 1}},
		{"setp.eq.f32", "setp.eq.f32 %p1, %f1, %f2;", kv{"%f1": F(0), "%f2": neg0}, kv{"%p1": 1}},
		{"setp.ne.f32 NaN", "setp.ne.f32 %p1|%p2, %f1, %f2;", kv{"%f1": nan32, "%f2": F(1)}, kv{"%p1": 0, "%p2": 1}},
		{"setp.neu.f32 NaN", "setp.neu.f32 %p1, %f1, %f2;", kv{"%f1": nan32, "%f2": F(1)}, kv{"%p1": 1}},
		{"setp.lt.f32 NaN", "setp.lt.f32 %p1, %f1, %f2;", kv{"%f1": nan32, "%f2": F(1)}, kv{"%p1": 0}},
		{"setp.ltu.f32 NaN", "setp.ltu.f32 %p1, %f1, %f2;", kv{"%f1": nan32, "%f2": F(1)}, kv{"%p1": 1}},
		{"setp.equ.f32", "setp.equ.f32 %p1, %f1, %f2;", kv{"%f1": F(2), "%f2": F(2)}, kv{"%p1": 1}},
		{"setp.leu.f32", "setp.leu.f32 %p1, %f1, %f2;", kv{"%f1": F(3), "%f2": F(2)}, kv{"%p1": 0}},
		{"setp.gtu.f64", "setp.gtu.f64 %p1, %fd1, %fd2;", kv{"%fd1": D(1), "%fd2": nan64}, kv{"%p1": 1}},
		{"setp.geu.f64", "setp.geu.f64 %p1, %fd1, %fd2;", kv{"%fd1": D(1), "%fd2": D(2)}, kv{"%p1": 0}},
		{"setp.ge.f64", "setp.ge.f64 %p1, %fd1, %fd2;", kv{"%fd1": D(2), "%fd2": D(2)}, kv{"%p1": 1}},
		{"setp.gt.f32", "setp.gt.f32 %p1, %f1, %f2;", kv{"%f1": inf32, "%f2": max32}, kv{"%p1": 1}},
		{"setp.le.f32", "setp.le.f32 %p1, %f1, %f2;", kv{"%f1": F(-1), "%f2": F(-1)}, kv{"%p1": 1}},
		{"setp.num.f32", "setp.num.f32 %p1, %f1, %f2;", kv{"%f1": F(1), "%f2": F(2)}, kv{"%p1": 1}},
		{"setp.nan.f32", "setp.nan.f32 %p1, %f1, %f2;", kv{"%f1": F(1), "%f2": nan32}, kv{"%p1": 1}},
		{"setp.ftz.f32", "setp.eq.ftz.f32 %p1, %f1, %f2;", kv{"%f1": sub32, "%f2": F(0)}, kv{"%p1": 1}},
		{"setp.eq.f32 subnormal", "setp.eq.f32 %p1, %f1, %f2;", kv{"%f1": sub32, "%f2": F(0)}, kv{"%p1": 0}},
		{"set.lt.u32.s32", "set.lt.u32.s32 %r3, %r1, %r2;", kv{"%r1": 0xffffffff, "%r2": 0}, kv{"%r3": 0xffffffff}},
		{"set.gt.f32.f32", "set.gt.f32.f32 %f3, %f1, %f2;", kv{"%f1": F(1), "%f2": F(2)}, kv{"%f3": 0}},
		{"set.eq.f32.u32", "set.eq.f32.u32 %f3, %r1, %r2;", kv{"%r1": 7, "%r2": 7}, kv{"%f3": F(1)}},
		{"selp.b32", "selp.b32 %r3, %r1, %r2, %p1;", kv{"%r1": 1, "%r2": 2, "%p1": 0}, kv{"%r3": 2}},
		{"selp.f64", "selp.f64 %fd3, %fd1, %fd2, %p1;", kv{"%fd1": D(1), "%fd2": D(2), "%p1": 1}, kv{"%fd3": D(1)}},
		{"selp.u16 imm", "selp.u16 %rs3, 7, 9, %p1;", kv{"%p1": 1}, kv{"%rs3": 7}},
		{"slct.s32", "slct.u32.s32 %r4, %r1, %r2, %r3;", kv{"%r1": 1, "%r2": 2, "%r3": 0xffffffff}, kv{"%r4": 2}},
		{"slct.f32 zero", "slct.b32.f32 %r4, %r1, %r2, %f3;", kv{"%r1": 1, "%r2": 2, "%f3": neg0}, kv{"%r4": 1}},
		{"slct.f32 NaN", "slct.b32.f32 %r4, %r1, %r2, %f3;", kv{"%r1": 1, "%r2": 2, "%f3": nan32}, kv{"%r4": 2}},
	})
}

func TestFloatArithmetic(t *testing.T) {
	one := F(1)
	ulp := F(0x1p-24) // half an ulp of 1
	runInstCases(t, []instCase{
		{"add.f32", "add.f32 %f3, %f1, %f2;", kv{"%f1": F(1.5), "%f2": F(2.25)}, kv{"%f3": F(3.75)}},
		{"add.rn ties to even", "add.rn.f32 %f3, %f1, %f2;", kv{"%f1": one, "%f2": ulp}, kv{"%f3": one}},
		{"add.rp", "add.rp.f32 %f3, %f1, %f2;", kv{"%f1": one, "%f2": ulp}, kv{"%f3": F(1 + 0x1p-23)}},
		{"add.rm negative", "add.rm.f32 %f3, %f1, %f2;", kv{"%f1": F(-1), "%f2": F(-0x1p-24)}, kv{"%f3": F(-1 - 0x1p-23)}},
		{"add.rz", "add.rz.f32 %f3, %f1, %f2;", kv{"%f1": F(-1), "%f2": F(-0x1p-24)}, kv{"%f3": F(-1)}},
		{"add.rm exact zero is -0", "add.rm.f32 %f3, %f1, %f2;", kv{"%f1": one, "%f2": F(-1)}, kv{"%f3": neg0}},
		{"add.rz overflow", "add.rz.f32 %f3, %f1, %f2;", kv{"%f1": max32, "%f2": max32}, kv{"%f3": max32}},
		{"add.f32 overflow", "add.f32 %f3, %f1, %f2;", kv{"%f1": max32, "%f2": max32}, kv{"%f3": inf32}},
		{"add.f32 inf-inf", "add.f32 %f3, %f1, %f2;", kv{"%f1": inf32, "%f2": ninf32}, kv{"%f3": nan32}},
		{"add.f32 NaN canonical", "add.f32 %f3, %f1, %f2;", kv{"%f1": 0xffc00001, "%f2": one}, kv{"%f3": nan32}},
		{"add.f32 subnormal", "add.f32 %f3, %f1, %f2;", kv{"%f1": sub32, "%f2": sub32}, kv{"%f3": 2}},
		{"add.ftz.f32", "add.ftz.f32 %f3, %f1, %f2;", kv{"%f1": sub32, "%f2": sub32}, kv{"%f3": 0}},
		{"add.ftz.f32 result", "add.ftz.f32 %f3, %f1, %f2;", kv{"%f1": F(0x1.8p-126), "%f2": F(-0x1p-126)}, kv{"%f3": 0}},
		{"add.sat.f32", "add.sat.f32 %f3, %f1, %f2;", kv{"%f1": F(0.75), "%f2": F(0.5)}, kv{"%f3": one}},
		{"add.sat.f32 negative", "add.sat.f32 %f3, %f1, %f2;", kv{"%f1": F(-0.75), "%f2": F(0.5)}, kv{"%f3": 0}},
		{"add.sat.f32 NaN", "add.sat.f32 %f3, %f1, %f2;", kv{"%f1": nan32, "%f2": F(0.5)}, kv{"%f3": 0}},
		{"sub.f32", "sub.f32 %f3, %f1, %f2;", kv{"%f1": F(1), "%f2": F(3)}, kv{"%f3": F(-2)}},
		{"sub.rm.f32 x-x", "sub.rm.f32 %f3, %f1, %f1;", kv{"%f1": F(5)}, kv{"%f3": neg0}},
		{"sub.rn.f32 x-x", "sub.rn.f32 %f3, %f1, %f1;", kv{"%f1": F(5)}, kv{"%f3": 0}},
		{"mul.f32", "mul.f32 %f3, %f1, %f2;", kv{"%f1": F(1.5), "%f2": F(-4)}, kv{"%f3": F(-6)}},
		{"mul.rz.f32", "mul.rz.f32 %f3, %f1, %f2;", kv{"%f1": F(1 + 0x1p-23), "%f2": F(1 + 0x1p-23)}, kv{"%f3": F(1 + 0x1p-22)}},
		{"mul.rp.f32", "mul.rp.f32 %f3, %f1, %f2;", kv{"%f1": F(1 + 0x1p-23), "%f2": F(1 + 0x1p-23)}, kv{"%f3": F(1 + 0x3p-23)}},
		{"mul.rm.f32 underflow", "mul.rm.f32 %f3, %f1, %f2;", kv{"%f1": F(-0x1p-100), "%f2": F(0x1p-100)}, kv{"%f3": 0x80000001}},
		{"mul.rp.f32 underflow", "mul.rp.f32 %f3, %f1, %f2;", kv{"%f1": F(-0x1p-100), "%f2": F(0x1p-100)}, kv{"%f3": neg0}},
		{"mul.f32 0*inf", "mul.f32 %f3, %f1, %f2;", kv{"%f1": F(0), "%f2": inf32}, kv{"%f3": nan32}},
		{"mul.ftz.f32", "mul.ftz.f32 %f3, %f1, %f2;", kv{"%f1": F(0x1p-70), "%f2": F(0x1p-70)}, kv{"%f3": 0}},
		{"mul.sat.f32", "mul.sat.f32 %f3, %f1, %f2;", kv{"%f1": F(3), "%f2": F(0.25)}, kv{"%f3": F(0.75)}},
		// (1+2^-12)^2 = 1 + 2^-11 + 2^-24: fused keeps the 2^-24.
		{"fma.rn.f32 is fused", "fma.rn.f32 %f4, %f1, %f1, %f2;", kv{"%f1": F(1 + 0x1p-12), "%f2": F(-1 - 0x1p-11)}, kv{"%f4": F(0x1p-24)}},
		{"mad.f32 is fused", "mad.f32 %f4, %f1, %f1, %f2;", kv{"%f1": F(1 + 0x1p-12), "%f2": F(-1 - 0x1p-11)}, kv{"%f4": F(0x1p-24)}},
		{"mul then add is not", "mul.rn.f32 %f3, %f1, %f1;\nadd.rn.f32 %f4, %f3, %f2;", kv{"%f1": F(1 + 0x1p-12), "%f2": F(-1 - 0x1p-11)}, kv{"%f4": 0}},
		{"fma.rz.f32", "fma.rz.f32 %f4, %f1, %f2, %f3;", kv{"%f1": F(1.5), "%f2": F(1.5), "%f3": F(0x1p-30)}, kv{"%f4": F(2.25)}},
		{"fma.rp.f32", "fma.rp.f32 %f4, %f1, %f2, %f3;", kv{"%f1": F(1.5), "%f2": F(1.5), "%f3": F(0x1p-30)}, kv{"%f4": F(2.25 + 0x1p-22)}},
		{"fma.rm.f32", "fma.rm.f32 %f4, %f1, %f2, %f3;", kv{"%f1": F(1.5), "%f2": F(1.5), "%f3": F(-0x1p-30)}, kv{"%f4": F(2.25 - 0x1p-22)}},
		{"fma.rn.ftz.sat.f32", "fma.rn.ftz.sat.f32 %f4, %f1, %f2, %f3;", kv{"%f1": F(2), "%f2": F(2), "%f3": sub32}, kv{"%f4": one}},
		{"fma.rn.f32 NaN", "fma.rn.f32 %f4, %f1, %f2, %f3;", kv{"%f1": inf32, "%f2": F(0), "%f3": F(1)}, kv{"%f4": nan32}},
		{"add.f64", "add.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(0.1), "%fd2": D(0.2)}, kv{"%fd3": D(0.30000000000000004)}},
		{"add.rz.f64", "add.rz.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(1), "%fd2": D(0x1p-60)}, kv{"%fd3": D(1)}},
		{"add.rp.f64", "add.rp.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(1), "%fd2": D(0x1p-60)}, kv{"%fd3": D(1 + 0x1p-52)}},
		{"add.rm.f64", "add.rm.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(1), "%fd2": D(-0x1p-60)}, kv{"%fd3": D(1 - 0x1p-53)}},
		{"sub.f64", "sub.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(1), "%fd2": D(3)}, kv{"%fd3": D(-2)}},
		{"sub.rp.f64", "sub.rp.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(1), "%fd2": D(-0x1p-60)}, kv{"%fd3": D(1 + 0x1p-52)}},
		{"mul.f64", "mul.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(3), "%fd2": D(-0.5)}, kv{"%fd3": D(-1.5)}},
		{"mul.rp.f64", "mul.rp.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(1 + 0x1p-52), "%fd2": D(1 + 0x1p-52)}, kv{"%fd3": D(1 + 0x3p-52)}},
		{"mul.rz.f64", "mul.rz.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(1 + 0x1p-52), "%fd2": D(1 + 0x1p-52)}, kv{"%fd3": D(1 + 0x1p-51)}},
		{"fma.rn.f64", "fma.rn.f64 %fd4, %fd1, %fd1, %fd2;", kv{"%fd1": D(1 + 0x1p-30), "%fd2": D(-1 - 0x1p-29)}, kv{"%fd4": D(0x1p-60)}},
		{"fma.rz.f64", "fma.rz.f64 %fd4, %fd1, %fd2, %fd3;", kv{"%fd1": D(1.5), "%fd2": D(1.5), "%fd3": D(0x1p-70)}, kv{"%fd4": D(2.25)}},
		{"fma.rp.f64", "fma.rp.f64 %fd4, %fd1, %fd2, %fd3;", kv{"%fd1": D(1.5), "%fd2": D(1.5), "%fd3": D(0x1p-70)}, kv{"%fd4": D(2.25 + 0x1p-51)}},
		{"mad.rn.f64", "mad.rn.f64 %fd4, %fd1, %fd2, %fd3;", kv{"%fd1": D(2), "%fd2": D(3), "%fd3": D(1)}, kv{"%fd4": D(7)}},
		{"div.rn.f32", "div.rn.f32 %f3, %f1, %f2;", kv{"%f1": one, "%f2": F(3)}, kv{"%f3": F(float32(1) / 3)}},
		{"div.rz.f32", "div.rz.f32 %f3, %f1, %f2;", kv{"%f1": F(2), "%f2": F(3)}, kv{"%f3": 0x3f2aaaaa}},
		{"div.rn.f32 2/3", "div.rn.f32 %f3, %f1, %f2;", kv{"%f1": F(2), "%f2": F(3)}, kv{"%f3": 0x3f2aaaab}},
		{"div.rm.f32", "div.rm.f32 %f3, %f1, %f2;", kv{"%f1": F(-2), "%f2": F(3)}, kv{"%f3": 0xbf2aaaab}},
		{"div.rp.f32", "div.rp.f32 %f3, %f1, %f2;", kv{"%f1": F(1), "%f2": F(3)}, kv{"%f3": 0x3eaaaaab}},
		{"div.rn.f32 by zero", "div.rn.f32 %f3, %f1, %f2;", kv{"%f1": F(-1), "%f2": F(0)}, kv{"%f3": ninf32}},
		{"div.rn.ftz.f32", "div.rn.ftz.f32 %f3, %f1, %f2;", kv{"%f1": F(0x1p-120), "%f2": F(0x1p10)}, kv{"%f3": 0}},
		{"div.full.f32", "div.full.f32 %f3, %f1, %f2;", kv{"%f1": F(6), "%f2": F(3)}, kv{"%f3": F(2)}},
		{"div.approx.f32", "div.approx.f32 %f3, %f1, %f2;", kv{"%f1": F(6), "%f2": F(3)}, kv{"%f3": F(2)}},
		{"div.approx.f32 huge divisor", "div.approx.f32 %f3, %f1, %f2;", kv{"%f1": F(1e30), "%f2": F(0x1p127)}, kv{"%f3": 0}},
		{"div.approx.f32 inf/huge", "div.approx.ftz.f32 %f3, %f1, %f2;", kv{"%f1": inf32, "%f2": F(0x1p127)}, kv{"%f3": nan32}},
		{"div.rn.f64", "div.rn.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(1), "%fd2": D(3)}, kv{"%fd3": D(1.0 / 3)}},
		{"div.rz.f64", "div.rz.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(2), "%fd2": D(3)}, kv{"%fd3": 0x3fe5555555555555}},
		{"div.rp.f64", "div.rp.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(1), "%fd2": D(3)}, kv{"%fd3": 0x3fd5555555555556}},
		{"div.rm.f64", "div.rm.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(1), "%fd2": D(3)}, kv{"%fd3": 0x3fd5555555555555}},
		{"rcp.rn.f32", "rcp.rn.f32 %f2, %f1;", kv{"%f1": F(4)}, kv{"%f2": F(0.25)}},
		{"rcp.rz.f32", "rcp.rz.f32 %f2, %f1;", kv{"%f1": F(3)}, kv{"%f2": 0x3eaaaaaa}},
		{"rcp.approx.f32", "rcp.approx.f32 %f2, %f1;", kv{"%f1": F(-8)}, kv{"%f2": F(-0.125)}},
		{"rcp.approx.ftz.f32 zero", "rcp.approx.ftz.f32 %f2, %f1;", kv{"%f1": 0x80000001}, kv{"%f2": ninf32}},
		{"rcp.rn.f64", "rcp.rn.f64 %fd2, %fd1;", kv{"%fd1": D(10)}, kv{"%fd2": D(0.1)}},
		{"rcp.rp.f64", "rcp.rp.f64 %fd2, %fd1;", kv{"%fd1": D(3)}, kv{"%fd2": 0x3fd5555555555556}},
		{"rcp.approx.ftz.f64", "rcp.approx.ftz.f64 %fd2, %fd1;", kv{"%fd1": D(0.5)}, kv{"%fd2": D(2)}},
		{"sqrt.rn.f32", "sqrt.rn.f32 %f2, %f1;", kv{"%f1": F(2)}, kv{"%f2": 0x3fb504f3}},
		{"sqrt.rz.f32", "sqrt.rz.f32 %f2, %f1;", kv{"%f1": F(2)}, kv{"%f2": 0x3fb504f3}},
		{"sqrt.rp.f32", "sqrt.rp.f32 %f2, %f1;", kv{"%f1": F(2)}, kv{"%f2": 0x3fb504f4}},
		{"sqrt.rn.f32 negative", "sqrt.rn.f32 %f2, %f1;", kv{"%f1": F(-1)}, kv{"%f2": nan32}},
		{"sqrt.rn.f32 -0", "sqrt.rn.f32 %f2, %f1;", kv{"%f1": neg0}, kv{"%f2": neg0}},
		{"sqrt.approx.f32", "sqrt.approx.f32 %f2, %f1;", kv{"%f1": F(16)}, kv{"%f2": F(4)}},
		{"sqrt.rn.f64", "sqrt.rn.f64 %fd2, %fd1;", kv{"%fd1": D(2)}, kv{"%fd2": D(math.Sqrt2)}},
		{"sqrt.rm.f64", "sqrt.rm.f64 %fd2, %fd1;", kv{"%fd1": D(2)}, kv{"%fd2": D(math.Sqrt2) - 1}},
		{"sqrt.rp.f64", "sqrt.rp.f64 %fd2, %fd1;", kv{"%fd1": D(2)}, kv{"%fd2": D(math.Sqrt2)}},
		{"rsqrt.approx.f32", "rsqrt.approx.f32 %f2, %f1;", kv{"%f1": F(4)}, kv{"%f2": F(0.5)}},
		{"rsqrt.approx.f32 -0", "rsqrt.approx.f32 %f2, %f1;", kv{"%f1": neg0}, kv{"%f2": ninf32}},
		{"rsqrt.approx.ftz.f32 inf", "rsqrt.approx.ftz.f32 %f2, %f1;", kv{"%f1": inf32}, kv{"%f2": 0}},
		{"rsqrt.approx.f64", "rsqrt.approx.f64 %fd2, %fd1;", kv{"%fd1": D(0.25)}, kv{"%fd2": D(2)}},
		{"ex2.approx.f32", "ex2.approx.f32 %f2, %f1;", kv{"%f1": F(10)}, kv{"%f2": F(1024)}},
		{"ex2.approx.ftz.f32 -inf", "ex2.approx.ftz.f32 %f2, %f1;", kv{"%f1": ninf32}, kv{"%f2": 0}},
		{"ex2.approx.f32 subnormal result", "ex2.approx.f32 %f2, %f1;", kv{"%f1": F(-140)}, kv{"%f2": F(0x1p-140)}},
		{"ex2.approx.ftz.f32 flushes", "ex2.approx.ftz.f32 %f2, %f1;", kv{"%f1": F(-140)}, kv{"%f2": 0}},
		{"lg2.approx.f32", "lg2.approx.f32 %f2, %f1;", kv{"%f1": F(0.125)}, kv{"%f2": F(-3)}},
		{"lg2.approx.f32 zero", "lg2.approx.f32 %f2, %f1;", kv{"%f1": F(0)}, kv{"%f2": ninf32}},
		{"lg2.approx.f32 negative", "lg2.approx.f32 %f2, %f1;", kv{"%f1": F(-1)}, kv{"%f2": nan32}},
		{"sin.approx.f32", "sin.approx.f32 %f2, %f1;", kv{"%f1": neg0}, kv{"%f2": neg0}},
		{"sin.approx.f32 inf", "sin.approx.ftz.f32 %f2, %f1;", kv{"%f1": inf32}, kv{"%f2": nan32}},
		{"cos.approx.f32", "cos.approx.f32 %f2, %f1;", kv{"%f1": F(0)}, kv{"%f2": one}},
		{"tanh.approx.f32", "tanh.approx.f32 %f2, %f1;", kv{"%f1": inf32}, kv{"%f2": one}},
		{"min.f32", "min.f32 %f3, %f1, %f2;", kv{"%f1": F(1), "%f2": F(-2)}, kv{"%f3": F(-2)}},
		{"min.f32 NaN", "min.f32 %f3, %f1, %f2;", kv{"%f1": nan32, "%f2": F(-2)}, kv{"%f3": F(-2)}},
		{"min.f32 both NaN", "min.f32 %f3, %f1, %f2;", kv{"%f1": 0xffc00000, "%f2": 0x7fc00001}, kv{"%f3": nan32}},
		{"min.f32 zeros", "min.f32 %f3, %f1, %f2;", kv{"%f1": F(0), "%f2": neg0}, kv{"%f3": neg0}},
		{"max.f32 zeros", "max.f32 %f3, %f1, %f2;", kv{"%f1": neg0, "%f2": F(0)}, kv{"%f3": 0}},
		{"max.NaN.f32", "max.NaN.f32 %f3, %f1, %f2;", kv{"%f1": nan32, "%f2": F(1)}, kv{"%f3": nan32}},
		{"min.ftz.f32", "min.ftz.f32 %f3, %f1, %f2;", kv{"%f1": 0x80000001, "%f2": F(0)}, kv{"%f3": neg0}},
		{"max.f64", "max.f64 %fd3, %fd1, %fd2;", kv{"%fd1": nan64, "%fd2": D(3)}, kv{"%fd3": D(3)}},
		{"min.f64", "min.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(-1), "%fd2": D(3)}, kv{"%fd3": D(-1)}},
		{"abs.f32", "abs.f32 %f2, %f1;", kv{"%f1": F(-3)}, kv{"%f2": F(3)}},
		{"abs.ftz.f32", "abs.ftz.f32 %f2, %f1;", kv{"%f1": 0x80000001}, kv{"%f2": 0}},
		{"neg.f32", "neg.f32 %f2, %f1;", kv{"%f1": F(0)}, kv{"%f2": neg0}},
		{"neg.f64", "neg.f64 %fd2, %fd1;", kv{"%fd1": D(2)}, kv{"%fd2": D(-2)}},
		{"abs.f64", "abs.f64 %fd2, %fd1;", kv{"%fd1": D(math.Inf(-1))}, kv{"%fd2": inf64}},
		{"copysign.f32", "copysign.f32 %f3, %f1, %f2;", kv{"%f1": F(-1), "%f2": F(2)}, kv{"%f3": F(-2)}},
		{"copysign.f64", "copysign.f64 %fd3, %fd1, %fd2;", kv{"%fd1": D(1), "%fd2": D(-2)}, kv{"%fd3": D(2)}},
		{"testp.finite", "testp.finite.f32 %p1, %f1;", kv{"%f1": max32}, kv{"%p1": 1}},
		{"testp.infinite", "testp.infinite.f64 %p1, %fd1;", kv{"%fd1": inf64}, kv{"%p1": 1}},
		{"testp.number", "testp.number.f32 %p1, %f1;", kv{"%f1": nan32}, kv{"%p1": 0}},
		{"testp.notanumber", "testp.notanumber.f32 %p1, %f1;", kv{"%f1": nan32}, kv{"%p1": 1}},
		{"testp.normal", "testp.normal.f32 %p1, %f1;", kv{"%f1": sub32}, kv{"%p1": 0}},
		{"testp.subnormal", "testp.subnormal.f32 %p1, %f1;", kv{"%f1": sub32}, kv{"%p1": 1}},
		{"testp.subnormal.f64", "testp.subnormal.f64 %p1, %fd1;", kv{"%fd1": 1}, kv{"%p1": 1}},
	})
}

func TestConversions(t *testing.T) {
	runInstCases(t, []instCase{
		{"cvt.rni.s32.f32", "cvt.rni.s32.f32 %r2, %f1;", kv{"%f1": F(2.5)}, kv{"%r2": 2}},
		{"cvt.rni.s32.f32 odd", "cvt.rni.s32.f32 %r2, %f1;", kv{"%f1": F(3.5)}, kv{"%r2": 4}},
		{"cvt.rzi.s32.f32", "cvt.rzi.s32.f32 %r2, %f1;", kv{"%f1": F(-2.7)}, kv{"%r2": 0xfffffffe}},
		{"cvt.rmi.s32.f32", "cvt.rmi.s32.f32 %r2, %f1;", kv{"%f1": F(-2.2)}, kv{"%r2": 0xfffffffd}},
		{"cvt.rpi.s32.f32", "cvt.rpi.s32.f32 %r2, %f1;", kv{"%f1": F(2.2)}, kv{"%r2": 3}},
		{"cvt.rzi.s32.f32 saturates", "cvt.rzi.s32.f32 %r2, %f1;", kv{"%f1": F(1e10)}, kv{"%r2": 0x7fffffff}},
		{"cvt.rzi.s32.f32 saturates low", "cvt.rzi.s32.f32 %r2, %f1;", kv{"%f1": ninf32}, kv{"%r2": 0x80000000}},
		{"cvt.rzi.s32.f32 NaN", "cvt.rzi.s32.f32 %r2, %f1;", kv{"%f1": nan32}, kv{"%r2": 0}},
		{"cvt.rzi.u32.f32 negative", "cvt.rzi.u32.f32 %r2, %f1;", kv{"%f1": F(-5)}, kv{"%r2": 0}},
		{"cvt.rni.u32.f32 large", "cvt.rni.u32.f32 %r2, %f1;", kv{"%f1": F(4e9)}, kv{"%r2": 4000000000}},
		{"cvt.rzi.s64.f64", "cvt.rzi.s64.f64 %rd2, %fd1;", kv{"%fd1": D(-1e15)}, kv{"%rd2": uint64(1<<64 - 1e15)}},
		{"cvt.rzi.s64.f64 saturates", "cvt.rzi.s64.f64 %rd2, %fd1;", kv{"%fd1": D(1e19)}, kv{"%rd2": math.MaxInt64}},
		{"cvt.rzi.u64.f32", "cvt.rzi.u64.f32 %rd2, %f1;", kv{"%f1": F(1e19)}, kv{"%rd2": 9999999980506447872}},
		{"cvt.rni.s16.f32 saturates", "cvt.rni.s16.f32 %rs2, %f1;", kv{"%f1": F(-40000)}, kv{"%rs2": 0x8000}},
		{"cvt.rzi.u8.f64", "cvt.rzi.u8.f64 %rs2, %fd1;", kv{"%fd1": D(300)}, kv{"%rs2": 255}},
		{"cvt.rzi.ftz.s32.f32", "cvt.rzi.ftz.s32.f32 %r2, %f1;", kv{"%f1": 0x80000001}, kv{"%r2": 0}},
		{"cvt.rn.f32.s32", "cvt.rn.f32.s32 %f2, %r1;", kv{"%r1": 16777217}, kv{"%f2": F(16777216)}},
		{"cvt.rp.f32.s32", "cvt.rp.f32.s32 %f2, %r1;", kv{"%r1": 16777217}, kv{"%f2": F(16777218)}},
		{"cvt.rz.f32.s32 negative", "cvt.rz.f32.s32 %f2, %r1;", kv{"%r1": uint64(uint32(0xfeffffff))}, kv{"%f2": F(-16777216)}},
		{"cvt.rm.f32.s32 negative", "cvt.rm.f32.s32 %f2, %r1;", kv{"%r1": uint64(uint32(0xfeffffff))}, kv{"%f2": F(-16777218)}},
		{"cvt.rn.f32.u32", "cvt.rn.f32.u32 %f2, %r1;", kv{"%r1": 0xffffffff}, kv{"%f2": F(4294967296)}},
		{"cvt.rn.f32.u64", "cvt.rn.f32.u64 %f2, %rd1;", kv{"%rd1": math.MaxUint64}, kv{"%f2": F(0x1p64)}},
		{"cvt.rz.f32.u64", "cvt.rz.f32.u64 %f2, %rd1;", kv{"%rd1": math.MaxUint64}, kv{"%f2": F(0x1p64 - 0x1p40)}},
		{"cvt.rn.f64.s64", "cvt.rn.f64.s64 %fd2, %rd1;", kv{"%rd1": 1<<53 + 1}, kv{"%fd2": D(0x1p53)}},
		{"cvt.rp.f64.u64", "cvt.rp.f64.u64 %fd2, %rd1;", kv{"%rd1": 1<<53 + 1}, kv{"%fd2": D(0x1p53 + 2)}},
		{"cvt.rn.f64.s16", "cvt.rn.f64.s16 %fd2, %rs1;", kv{"%rs1": 0xffff}, kv{"%fd2": D(-1)}},
		{"cvt.rn.sat.f32.s32", "cvt.rn.sat.f32.s32 %f2, %r1;", kv{"%r1": 7}, kv{"%f2": F(1)}},
		{"cvt.rn.f32.f64", "cvt.rn.f32.f64 %f2, %fd1;", kv{"%fd1": D(0.1)}, kv{"%f2": F(0.1)}},
		{"cvt.rz.f32.f64", "cvt.rz.f32.f64 %f2, %fd1;", kv{"%fd1": D(0.1)}, kv{"%f2": 0x3dcccccc}},
		{"cvt.rp.f32.f64", "cvt.rp.f32.f64 %f2, %fd1;", kv{"%fd1": D(1 + 0x1p-40)}, kv{"%f2": F(1 + 0x1p-23)}},
		{"cvt.rm.f32.f64 overflow", "cvt.rm.f32.f64 %f2, %fd1;", kv{"%fd1": D(1e300)}, kv{"%f2": max32}},
		{"cvt.rn.f32.f64 overflow", "cvt.rn.f32.f64 %f2, %fd1;", kv{"%fd1": D(1e300)}, kv{"%f2": inf32}},
		{"cvt.rn.ftz.f32.f64", "cvt.rn.ftz.f32.f64 %f2, %fd1;", kv{"%fd1": D(1e-40)}, kv{"%f2": 0}},
		{"cvt.rn.f32.f64 subnormal", "cvt.rn.f32.f64 %f2, %fd1;", kv{"%fd1": D(0x1p-149)}, kv{"%f2": 1}},
		{"cvt.f64.f32", "cvt.f64.f32 %fd2, %f1;", kv{"%f1": F(0.1)}, kv{"%fd2": D(float64(float32(0.1)))}},
		{"cvt.ftz.f64.f32", "cvt.ftz.f64.f32 %fd2, %f1;", kv{"%f1": 0x80000001}, kv{"%fd2": 1 << 63}},
		{"cvt.f64.f32 NaN", "cvt.f64.f32 %fd2, %f1;", kv{"%f1": nan32}, kv{"%fd2": nan64}},
		{"cvt.rni.f32.f32", "cvt.rni.f32.f32 %f2, %f1;", kv{"%f1": F(-2.5)}, kv{"%f2": F(-2)}},
		{"cvt.rzi.f32.f32", "cvt.rzi.f32.f32 %f2, %f1;", kv{"%f1": F(-2.5)}, kv{"%f2": F(-2)}},
		{"cvt.rmi.f32.f32", "cvt.rmi.f32.f32 %f2, %f1;", kv{"%f1": F(-2.5)}, kv{"%f2": F(-3)}},
		{"cvt.rpi.f32.f32 -0", "cvt.rpi.f32.f32 %f2, %f1;", kv{"%f1": F(-0.5)}, kv{"%f2": neg0}},
		{"cvt.rni.f64.f64", "cvt.rni.f64.f64 %fd2, %fd1;", kv{"%fd1": D(0.5)}, kv{"%fd2": 0}},
		{"cvt.sat.f32.f32", "cvt.sat.f32.f32 %f2, %f1;", kv{"%f1": F(1.5)}, kv{"%f2": F(1)}},
		{"cvt.ftz.f32.f32", "cvt.ftz.f32.f32 %f2, %f1;", kv{"%f1": sub32}, kv{"%f2": 0}},
		{"cvt.s64.s32", "cvt.s64.s32 %rd2, %r1;", kv{"%r1": 0xffffffff}, kv{"%rd2": math.MaxUint64}},
		{"cvt.u64.u32", "cvt.u64.u32 %rd2, %r1;", kv{"%r1": 0xffffffff}, kv{"%rd2": 0xffffffff}},
		{"cvt.u64.s32 sign-extends", "cvt.u64.s32 %rd2, %r1;", kv{"%r1": 0xfffffffe}, kv{"%rd2": math.MaxUint64 - 1}},
		{"cvt.u32.u64 truncates", "cvt.u32.u64 %r2, %rd1;", kv{"%rd1": 0x123456789}, kv{"%r2": 0x23456789}},
		{"cvt.s32.s8", "cvt.s32.s8 %r2, %rs1;", kv{"%rs1": 0x80}, kv{"%r2": 0xffffff80}},
		{"cvt.u16.u32", "cvt.u16.u32 %rs2, %r1;", kv{"%r1": 0x12345}, kv{"%rs2": 0x2345}},
		{"cvt.sat.s16.s32", "cvt.sat.s16.s32 %rs2, %r1;", kv{"%r1": 0x12345}, kv{"%rs2": 0x7fff}},
		{"cvt.sat.u8.s32", "cvt.sat.u8.s32 %rs2, %r1;", kv{"%r1": 0xffffffff}, kv{"%rs2": 0}},
		{"cvt.sat.s32.u32", "cvt.sat.s32.u32 %r2, %r1;", kv{"%r1": 0x80000000}, kv{"%r2": 0x7fffffff}},
		{"cvt.sat.u32.s64", "cvt.sat.u32.s64 %r2, %rd1;", kv{"%rd1": 1 << 40}, kv{"%r2": 0xffffffff}},
		{"cvt.sat.u64.s64", "cvt.sat.u64.s64 %rd2, %rd1;", kv{"%rd1": math.MaxUint64}, kv{"%rd2": 0}},
		{"cvt.rn.f16.f32", "cvt.rn.f16.f32 %rs2, %f1;", kv{"%f1": F(1.5)}, kv{"%rs2": 0x3e00}},
		{"cvt.rn.f16.f32 overflow", "cvt.rn.f16.f32 %rs2, %f1;", kv{"%f1": F(70000)}, kv{"%rs2": 0x7c00}},
		{"cvt.rz.f16.f32 overflow", "cvt.rz.f16.f32 %rs2, %f1;", kv{"%f1": F(70000)}, kv{"%rs2": 0x7bff}},
		{"cvt.rn.f16.f32 subnormal", "cvt.rn.f16.f32 %rs2, %f1;", kv{"%f1": F(0x1p-24)}, kv{"%rs2": 1}},
		{"cvt.f32.f16", "cvt.f32.f16 %f2, %rs1;", kv{"%rs1": 0xc000}, kv{"%f2": F(-2)}},
		{"cvt.f32.f16 subnormal", "cvt.f32.f16 %f2, %rs1;", kv{"%rs1": 0x0001}, kv{"%f2": F(0x1p-24)}},
		{"cvt.f64.f16 inf", "cvt.f64.f16 %fd2, %rs1;", kv{"%rs1": 0xfc00}, kv{"%fd2": 0xfff0000000000000}},
		{"cvt.rn.f16.f64", "cvt.rn.f16.f64 %rs2, %fd1;", kv{"%fd1": D(0.1)}, kv{"%rs2": 0x2e66}},
		{"cvt.rn.f16.s32", "cvt.rn.f16.s32 %rs2, %r1;", kv{"%r1": 2049}, kv{"%rs2": 0x6800}},
		{"cvt.rzi.s32.f16", "cvt.rzi.s32.f16 %r2, %rs1;", kv{"%rs1": 0xc500}, kv{"%r2": 0xfffffffb}},
		{"cvt.rn.bf16.f32", "cvt.rn.bf16.f32 %rs2, %f1;", kv{"%f1": 0x3f808000}, kv{"%rs2": 0x3f80}},
		{"cvt.rn.bf16.f32 up", "cvt.rn.bf16.f32 %rs2, %f1;", kv{"%f1": 0x3f818000}, kv{"%rs2": 0x3f82}},
		{"cvt.f32.bf16", "cvt.f32.bf16 %f2, %rs1;", kv{"%rs1": 0x4049}, kv{"%f2": 0x40490000}},
		{"cvt.rn.relu.f16.f32", "cvt.rn.relu.f16.f32 %rs2, %f1;", kv{"%f1": F(-3)}, kv{"%rs2": 0}},
		{"cvt.rn.relu.f16.f32 NaN", "cvt.rn.relu.f16.f32 %rs2, %f1;", kv{"%f1": nan32}, kv{"%rs2": 0x7fff}},
		{"add.f16", "add.f16 %rs3, %rs1, %rs2;", kv{"%rs1": 0x3c00, "%rs2": 0x3800}, kv{"%rs3": 0x3e00}},
		{"add.rn.f16 ties to even", "add.rn.f16 %rs3, %rs1, %rs2;", kv{"%rs1": 0x3c00, "%rs2": 0x1000}, kv{"%rs3": 0x3c00}},
		{"add.ftz.f16", "add.ftz.f16 %rs3, %rs1, %rs2;", kv{"%rs1": 0x0001, "%rs2": 0x0001}, kv{"%rs3": 0}},
		{"add.f16 subnormal", "add.f16 %rs3, %rs1, %rs2;", kv{"%rs1": 0x0001, "%rs2": 0x0001}, kv{"%rs3": 2}},
		{"add.sat.f16", "add.sat.f16 %rs3, %rs1, %rs2;", kv{"%rs1": 0x3c00, "%rs2": 0x3c00}, kv{"%rs3": 0x3c00}},
		{"sub.f16x2", "sub.f16x2 %r3, %r1, %r2;", kv{"%r1": 0x40003c00, "%r2": 0x3c003c00}, kv{"%r3": 0x3c000000}},
		{"mul.f16 overflow", "mul.f16 %rs3, %rs1, %rs2;", kv{"%rs1": 0x7800, "%rs2": 0x7800}, kv{"%rs3": 0x7c00}},
		{"fma.rn.f16 is fused", "fma.rn.f16 %rs4, %rs1, %rs1, %rs2;", kv{"%rs1": 0x3c01, "%rs2": 0xbc02}, kv{"%rs4": 0x0010}},
		{"fma.rn.f16x2", "fma.rn.f16x2 %r4, %r1, %r2, %r3;", kv{"%r1": 0x40004000, "%r2": 0x42003c00, "%r3": 0x3c003c00}, kv{"%r4": 0x47004200}},
		{"fma.rn.relu.bf16", "fma.rn.relu.bf16 %rs4, %rs1, %rs2, %rs3;", kv{"%rs1": 0x3f80, "%rs2": 0xbf80, "%rs3": 0x3f00}, kv{"%rs4": 0}},
		{"mul.rn.bf16x2", "mul.rn.bf16x2 %r3, %r1, %r2;", kv{"%r1": 0x40003f80, "%r2": 0x40404000}, kv{"%r3": 0x40c04000}},
		{"add.rn.bf16 rounds", "add.rn.bf16 %rs3, %rs1, %rs2;", kv{"%rs1": 0x3f80, "%rs2": 0x3b80}, kv{"%rs3": 0x3f80}},
		{"neg.f16x2", "neg.f16x2 %r2, %r1;", kv{"%r1": 0x3c00bc00}, kv{"%r2": 0xbc003c00}},
		{"abs.bf16", "abs.bf16 %rs2, %rs1;", kv{"%rs1": 0xbf80}, kv{"%rs2": 0x3f80}},
		{"min.f16 NaN", "min.f16 %rs3, %rs1, %rs2;", kv{"%rs1": 0x7e00, "%rs2": 0x3c00}, kv{"%rs3": 0x3c00}},
		{"max.NaN.f16x2", "max.NaN.f16x2 %r3, %r1, %r2;", kv{"%r1": 0x7e003c00, "%r2": 0x3c004000}, kv{"%r3": 0x7fff4000}},
		{"setp.lt.f16", "setp.lt.f16 %p1, %rs1, %rs2;", kv{"%rs1": 0xbc00, "%rs2": 0x0000}, kv{"%p1": 1}},
		{"setp.gtu.bf16 NaN", "setp.gtu.bf16 %p1, %rs1, %rs2;", kv{"%rs1": 0x7fc0, "%rs2": 0x0000}, kv{"%p1": 1}},
		{"cvt.rn.f16x2.f32", "cvt.rn.f16x2.f32 %r3, %f1, %f2;", kv{"%f1": F(1), "%f2": F(-2)}, kv{"%r3": 0x3c00c000}},
		{"cvt.rn.bf16x2.f32", "cvt.rn.bf16x2.f32 %r3, %f1, %f2;", kv{"%f1": F(1), "%f2": F(-2)}, kv{"%r3": 0x3f80c000}},
	})
}

func TestMoves(t *testing.T) {
	runInstCases(t, []instCase{
		{"mov.u32 imm", "mov.u32 %r1, 42;", nil, kv{"%r1": 42}},
		{"mov.u32 negative imm", "mov.u32 %r1, -1;", nil, kv{"%r1": 0xffffffff}},
		{"mov.f32 imm", "mov.f32 %f1, 0f3F800000;", nil, kv{"%f1": F(1)}},
		{"mov.f64 imm", "mov.f64 %fd1, 0d4000000000000000;", nil, kv{"%fd1": D(2)}},
		{"mov.f32 decimal", "mov.f32 %f1, 0.5;", nil, kv{"%f1": F(0.5)}},
		{"mov.b64 reg", "mov.b64 %rd2, %rd1;", kv{"%rd1": 1 << 60}, kv{"%rd2": 1 << 60}},
		{"mov.pred", "mov.pred %p2, %p1;", kv{"%p1": 1}, kv{"%p2": 1}},
		{"mov.b64 pack", "mov.b64 %rd1, {%r1, %r2};", kv{"%r1": 0x11111111, "%r2": 0x22222222}, kv{"%rd1": 0x2222222211111111}},
		{"mov.b64 unpack", "mov.b64 {%r1, %r2}, %rd1;", kv{"%rd1": 0x2222222211111111}, kv{"%r1": 0x11111111, "%r2": 0x22222222}},
		{"mov.b32 pack halves", "mov.b32 %r1, {%rs1, %rs2};", kv{"%rs1": 0x1111, "%rs2": 0x2222}, kv{"%r1": 0x22221111}},
		{"mov.b32 unpack halves", "mov.b32 {%rs1, %rs2}, %r1;", kv{"%r1": 0x22221111}, kv{"%rs1": 0x1111, "%rs2": 0x2222}},
		{"mov.b64 unpack to sink", "mov.b64 {_, %r2}, %rd1;", kv{"%rd1": 0x2222222211111111}, kv{"%r2": 0x22222222}},
		{"mov special registers", "mov.u32 %r1, %tid.x;\nmov.u32 %r2, %ntid.x;\nmov.u32 %r3, %laneid;\nmov.u32 %r4, %warpid;\nmov.u32 %r5, %nctaid.y;\nmov.u32 %r6, %lanemask_lt;\nmov.u32 %r7, %lanemask_ge;\nmov.u32 %r8, %smid;",
			nil, kv{"%r1": 0, "%r2": 1, "%r3": 0, "%r4": 0, "%r5": 1, "%r6": 0, "%r7": 0xffffffff, "%r8": 0}},
		{"WARP_SZ", "mov.u32 %r1, WARP_SZ;", nil, kv{"%r1": 32}},
		{"predicated off", "mov.u32 %r1, 1;\n@%p1 mov.u32 %r1, 2;", kv{"%p1": 0}, kv{"%r1": 1}},
		{"predicated on", "mov.u32 %r1, 1;\n@%p1 mov.u32 %r1, 2;", kv{"%p1": 1}, kv{"%r1": 2}},
		{"negated guard", "mov.u32 %r1, 1;\n@!%p1 mov.u32 %r1, 2;", kv{"%p1": 0}, kv{"%r1": 2}},
		{"bra", "mov.u32 %r1, 1;\nbra.uni L1;\nmov.u32 %r1, 2;\nL1:\nadd.u32 %r1, %r1, 10;", nil, kv{"%r1": 11}},
		{"loop", "mov.u32 %r1, 0;\nmov.u32 %r2, 0;\nL1:\nadd.u32 %r2, %r2, %r1;\nadd.u32 %r1, %r1, 1;\nsetp.lt.u32 %p1, %r1, 10;\n@%p1 bra L1;", nil, kv{"%r2": 45}},
		{"cvta.shared", "cvta.shared.u64 %rd2, %rd1;", kv{"%rd1": 16}, kv{"%rd2": SharedWindow + 16}},
		{"cvta.to.shared", "cvta.to.shared.u64 %rd2, %rd1;", kv{"%rd1": SharedWindow + 16}, kv{"%rd2": 16}},
		{"cvta.local", "cvta.local.u64 %rd2, %rd1;", kv{"%rd1": 8}, kv{"%rd2": LocalWindow + 8}},
		{"cvta.to.local", "cvta.to.local.u64 %rd2, %rd1;", kv{"%rd1": LocalWindow + 8}, kv{"%rd2": 8}},
		{"cvta.global", "cvta.global.u64 %rd2, %rd1;", kv{"%rd1": devBase}, kv{"%rd2": devBase}},
		{"cvta.to.global", "cvta.to.global.u64 %rd2, %rd1;", kv{"%rd1": devBase}, kv{"%rd2": devBase}},
		{"isspacep.shared", "isspacep.shared %p1, %rd1;\nisspacep.global %p2, %rd1;\nisspacep.local %p3, %rd1;", kv{"%rd1": SharedWindow + 4}, kv{"%p1": 1, "%p2": 0, "%p3": 0}},
		{"isspacep.global", "isspacep.shared %p1, %rd1;\nisspacep.global %p2, %rd1;\nisspacep.local %p3, %rd1;", kv{"%rd1": devBase}, kv{"%p1": 0, "%p2": 1, "%p3": 0}},
		{"isspacep.local", "isspacep.local %p1, %rd1;\nisspacep.const %p2, %rd1;", kv{"%rd1": LocalWindow}, kv{"%p1": 1, "%p2": 0}},
		{"nanosleep advances the clock", "mov.u64 %rd1, %globaltimer;\nnanosleep.u32 1000;\nmov.u64 %rd2, %globaltimer;\nsub.u64 %rd3, %rd2, %rd1;\nsetp.ge.u64 %p1, %rd3, 1000;", nil, kv{"%p1": 1}},
		{"clock64 advances", "mov.u64 %rd1, %clock64;\nmov.u64 %rd2, %clock64;\nsetp.gt.u64 %p1, %rd2, %rd1;\nmov.u32 %r1, %clock;", nil, kv{"%p1": 1}},
		{"membar fence prefetch", "membar.gl;\nfence.acq_rel.gpu;\nfence.sc.sys;\nmembar.cta;\nprefetch.global.L2 [%rd1];\nmov.u32 %r1, 3;", kv{"%rd1": devBase}, kv{"%r1": 3}},
	})
}

// Memory instructions in every state space, with vectors and extensions.
func TestMemoryInstructions(t *testing.T) {
	src := instHeader + `
.global .align 8 .b8 gbuf[64];
.const .align 4 .u32 ctab[4] = {10, 20, 30, 40};
.visible .entry t(.param .u64 out, .param .align 8 .b8 blob[16])
{
` + instRegs + `
	.shared .align 16 .b8 sbuf[64];
	.local .align 16 .b8 lbuf[32];
	ld.param.u64 %io, [out];
	// local: v4 store, scalar reloads, sign extension
	mov.u32 %r1, 0x80;
	mov.u32 %r2, 0xfffe;
	mov.u32 %r3, 3;
	mov.u32 %r4, 4;
	st.local.v4.u32 [lbuf], {%r1, %r2, %r3, %r4};
	ld.local.s8 %r5, [lbuf];
	ld.local.u8 %r6, [lbuf];
	ld.local.s16 %r7, [lbuf+4];
	ld.local.v2.u32 {%r8, %r9}, [lbuf+8];
	st.global.u32 [%io], %r5;
	st.global.u32 [%io+8], %r6;
	st.global.u32 [%io+16], %r7;
	st.global.u32 [%io+24], %r8;
	st.global.u32 [%io+32], %r9;
	// shared through a generic pointer and back
	mov.u64 %rd1, sbuf;
	cvta.shared.u64 %rd2, %rd1;
	st.u64 [%rd2+8], 0x1122334455667788;
	ld.shared.u64 %rd3, [sbuf+8];
	st.global.u64 [%io+40], %rd3;
	ld.shared.v2.u32 {%r10, %r11}, [%rd1+8];
	st.global.u32 [%io+48], %r11;
	// local through a generic pointer
	mov.u64 %rd4, lbuf;
	cvta.local.u64 %rd5, %rd4;
	ld.u32 %r12, [%rd5+12];
	st.global.u32 [%io+56], %r12;
	// a module global and the constant bank
	st.global.u32 [gbuf+4], 77;
	ld.global.u32 %r13, [gbuf+4];
	st.global.u32 [%io+64], %r13;
	ld.const.u32 %r14, [ctab+8];
	st.global.u32 [%io+72], %r14;
	mov.u64 %rd6, ctab;
	ld.const.u32 %r15, [%rd6+12];
	st.global.u32 [%io+80], %r15;
	// a by-value struct parameter, also through its address
	ld.param.u32 %r16, [blob+4];
	st.global.u32 [%io+88], %r16;
	mov.u64 %rd7, blob;
	ld.param.u64 %rd8, [%rd7+8];
	st.global.u64 [%io+96], %rd8;
	// ldu, .nc and cache hints, volatile, relaxed/acquire/release
	ld.global.nc.u32 %r17, [gbuf+4];
	ldu.global.u32 %r18, [gbuf+4];
	ld.global.ca.u32 %r19, [gbuf+4];
	ld.volatile.global.u32 %r20, [gbuf+4];
	ld.relaxed.gpu.global.u32 %r21, [gbuf+4];
	ld.acquire.sys.global.u32 %r22, [gbuf+4];
	st.release.gpu.global.u32 [gbuf+8], 5;
	st.global.wb.u32 [gbuf+12], 6;
	st.global.cs.v2.u32 [gbuf+16], {%r17, %r18};
	ld.global.L1::no_allocate.v2.u32 {%r23, %r24}, [gbuf+16];
	add.u32 %r25, %r19, %r20;
	add.u32 %r25, %r25, %r21;
	add.u32 %r25, %r25, %r22;
	add.u32 %r25, %r25, %r23;
	add.u32 %r25, %r25, %r24;
	st.global.u32 [%io+104], %r25;
	// f64 and vector f32
	mov.f64 %fd1, 0d3FF8000000000000;
	st.local.f64 [lbuf+16], %fd1;
	ld.local.f64 %fd2, [lbuf+16];
	st.global.f64 [%io+112], %fd2;
	mov.f32 %f1, 0f40000000;
	st.shared.v4.f32 [sbuf+16], {%f1, %f1, %f1, %f1};
	ld.shared.v4.f32 {%f2, %f3, %f4, %f5}, [sbuf+16];
	add.f32 %f6, %f2, %f5;
	st.global.f32 [%io+120], %f6;
	ld.shared.v4.f32 {%f7, _, _, %f8}, [sbuf+16];
	st.global.f32 [%io+128], %f8;
	ret;
}`
	p := compileSrc(t, src)
	k := kernel(t, p, "t")
	mem := newDevMem()
	if err := bindGlobals(p, mem); err != nil {
		t.Fatal(err)
	}
	oa, ob := mem.alloc(8 * 20)
	params := make([]byte, k.ParamSize())
	putU64s(params, []uint64{oa})
	putU32s(params[8:], []uint32{0, 0xabcdef})
	putU64s(params[16:], []uint64{0x1234567890})
	if _, err := k.Run(context.Background(), Launch{Grid: dim(1, 1, 1), Block: dim(1, 1, 1), Params: params, Global: mem}); err != nil {
		t.Fatal(err)
	}
	got := u64s(ob)
	want := []uint64{0xffffff80, 0x80, 0xfffffffe, 3, 4, 0x1122334455667788, 0x11223344, 4, 77, 30, 40, 0xabcdef, 0x1234567890,
		6 * 77, D(1.5), F(4), F(2)}
	for i, w := range want {
		mask := uint64(math.MaxUint64)
		if w <= math.MaxUint32 {
			mask = math.MaxUint32
		}
		if got[i]&mask != w {
			t.Errorf("word %d = %#x, want %#x", i, got[i]&mask, w)
		}
	}
	if ps := k.Params(); len(ps) != 2 || ps[1].Offset != 8 || ps[1].Size != 16 || k.ParamSize() != 24 {
		t.Errorf("params %+v, size %d", ps, k.ParamSize())
	}
	if a := k.Attributes(); a.StaticShared != 64 || a.LocalPerThread != 32 || a.PTXVersion != 90 || a.MaxThreadsPerBlock != 1024 {
		t.Errorf("attributes %+v", a)
	}
}

// ptxas reads special registers only through mov ("Special register argument
// not allowed for instruction 'add'", seen on the H100): the interpreter
// refuses the same PTX at load, so such code is caught in CI.
func TestSpecialRegisterOnlyThroughMov(t *testing.T) {
	src := `.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
	.reg .b32 %r<2>;
	add.u32 %r1, %tid.x, 5;
	ret;
}`
	m, err := ptx.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(m); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "only by mov") {
		t.Fatalf("Compile = %v, want an invalid-argument error naming mov", err)
	}
}
