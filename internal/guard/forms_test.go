package guard_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/guard"
	"github.com/gpuos/gpuos/internal/ptx"
)

// kernelWith wraps body in a kernel with the usual registers.
func kernelWith(decls, body string) string {
	return `.version 8.0
.target sm_90
.address_size 64
` + decls + `
.visible .entry k(.param .u64 p, .param .u32 n)
{
	.reg .pred 	%p<4>;
	.reg .b16 	%rs<4>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<16>;
	.reg .f32 	%f<8>;
	ld.param.u64 	%rd1, [p];
	ld.param.u32 	%r1, [n];
` + body + `
	ret;
}
`
}

// guardedLines guards src and returns the printed instructions of kernel k.
func guardedLines(t *testing.T, src string) (string, *guard.Result, error) {
	t.Helper()
	m, err := ptx.Parse([]byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	res, err := guard.Guard(m, guard.Options{})
	if err != nil {
		return "", nil, err
	}
	out := m.Bytes()
	if _, err := ptx.Parse(out); err != nil {
		t.Fatalf("guarded output does not parse: %v\n%s", err, out)
	}
	return string(out), res, nil
}

// TestFormsChecked: every memory form is checked, the whole width and the
// alignment, and the access predicated on the check.
func TestFormsChecked(t *testing.T) {
	tests := []struct {
		name, decls, body string
		want              []string // substrings of the guarded text, in order
		checked           int
	}{
		{name: "global store", body: "st.global.u32 [%rd1+8], %r1;",
			want: []string{"add.s64 \t%gdq", "%rd1, 8", "and.b64", "setp.eq.u64 \t%gdp", "st.global.u32"}, checked: 1},
		{name: "32-byte vector load checks 32 bytes", body: "ld.global.v8.f32 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, [%rd1];",
			want: []string{"[__gpuos_guard+72]", "and.b64", "ld.global.v8.f32"}, checked: 1},
		{name: "non-coherent and ldu: one check of the range both cover", body: "ld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];\nldu.global.u64 %rd2, [%rd1+64];",
			want: []string{"[__gpuos_guard+64]", "add.s64 \t%gdq", ", 71;", "ld.global.nc.v4.u32", "ldu.global.u64"}, checked: 1},
		{name: "128-bit CAS", body: "atom.global.cas.b128 %rd2, [%rd1], %rd3, %rd4;",
			want: []string{"[__gpuos_guard+64]", "atom.global.cas.b128"}, checked: 1},
		{name: "vector atomic", body: "red.global.v4.f32.add [%rd1], {%f0, %f1, %f2, %f3};",
			want: []string{"[__gpuos_guard+64]", "red.global.v4.f32.add"}, checked: 1},
		{name: "guard predicate folded in", body: "@!%p1 st.global.u32 [%rd1], %r1;",
			want: []string{"setp.eq.u64", "setp.ne.and.u32", "!%p1", "st.global.u32"}, checked: 1},
		{name: "cp.async from global to shared", decls: ".shared .align 16 .b8 s[256];",
			body: "mov.u32 %r2, s;\ncp.async.cg.shared.global [%r2], [%rd1], 16;",
			want: []string{"%total_smem_size", "shf.r.wrap.b32", "cp.async.cg.shared.global"}, checked: 2},
		{name: "bulk copy global to shared", decls: ".shared .align 128 .b8 s[1024];\n.shared .align 8 .b64 bar;",
			body: "mov.u32 %r2, s;\nmov.u32 %r3, bar;\ncp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1], %r1, [%r3];",
			want: []string{"and.b32", ", 15;", "cp.async.bulk.shared::cluster.global"}, checked: 3},
		{name: "bulk copy shared to global", decls: ".shared .align 128 .b8 s[1024];",
			body: "mov.u32 %r2, s;\ncp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 512;",
			want: []string{"cp.async.bulk.global.shared::cta.bulk_group"}, checked: 2},
		{name: "bulk reduction", decls: ".shared .align 128 .b8 s[1024];",
			body: "mov.u32 %r2, s;\ncp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%rd1], [%r2], %r1;",
			want: []string{"cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32"}, checked: 2},
		{name: "bulk prefetch is a hint", body: "cp.async.bulk.prefetch.L2.global [%rd1], %r1;",
			want: []string{"cp.async.bulk.prefetch.L2.global"}, checked: 1},
		{name: "prefetch, discard, applypriority", body: "prefetch.global.L2 [%rd1];\ndiscard.global.L2 [%rd1], 128;\napplypriority.global.L2::evict_normal [%rd1], 128;",
			want: []string{"[__gpuos_guard+88]", "prefetch.global.L2", "discard.global.L2", "applypriority.global.L2::evict_normal"}, checked: 3},
		{name: "mbarrier", decls: ".shared .align 8 .b64 bar;",
			body: "mov.u32 %r2, bar;\nmbarrier.init.shared::cta.b64 [%r2], 32;\nmbarrier.arrive.shared::cta.b64 %rd2, [%r2];",
			want: []string{"mbarrier.init.shared::cta.b64", "mbarrier.arrive.shared::cta.b64"}, checked: 1},
		{name: "ldmatrix", decls: ".shared .align 16 .b8 s[4096];",
			body: "mov.u32 %r2, s;\nldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r3, %r4, %r5, %r6}, [%r2];",
			want: []string{"ldmatrix.sync.aligned.m8n8.x4.shared.b16"}, checked: 1},
		{name: "named shared variable, in bounds: no check", decls: ".shared .align 4 .b8 s[64];",
			body: "st.shared.u32 [s+60], %r1;", want: []string{"st.shared.u32 \t[s+60]"}, checked: 0},
		{name: "named shared variable, past its end", decls: ".shared .align 4 .b8 s[64];",
			body: "st.shared.u32 [s+64], %r1;", want: []string{"mov.u32 \t%gdr", ", s;", "st.shared.u32 \t[s+64]"}, checked: 1},
		{name: "dynamic shared memory", decls: ".extern .shared .align 16 .b8 dyn[];",
			body: "st.shared.u32 [dyn+4], %r1;", want: []string{"%total_smem_size", "st.shared.u32"}, checked: 1},
		{name: "same address twice in a block: one check", body: "ld.global.u32 %r2, [%rd1];\nadd.s32 %r2, %r2, 1;\nst.global.u32 [%rd1], %r2;",
			want: []string{"ld.global.u32", "st.global.u32"}, checked: 1},
		{name: "generic", body: "st.u32 [%rd1], %r1;", want: []string{"and.b64", "st.u32"}, checked: 1},
		{name: "generic address of a parameter: the window or the kernel's parameters", body: "mov.u64 %rd2, p;\ncvta.param.u64 %rd3, %rd2;\nld.u32 %r2, [%rd3+4];",
			want: []string{"min.u64", "max.u64", "cvta.param.u64 \t%gdq", "and.b64", "or.pred", "ld.u32"}, checked: 1},
		{name: "shared loads of one register at several offsets: one hoisted check", decls: ".shared .align 4 .b8 s[1024];",
			body: "ld.global.u32 %r2, [%rd1];\nmov.u32 %r3, s;\nmad.lo.s32 %r4, %r2, 4, %r3;\nld.shared.u32 %r5, [%r4+4];\nld.shared.u32 %r6, [%r4+8];\nadd.s32 %r7, %r5, %r6;\nst.global.u32 [%rd1+4], %r7;",
			want: []string{"shf.r.wrap.b32", "setp.lt.u32 \t%gdp", "ld.shared.u32 \t%r5, [%r4+4]", "ld.shared.u32 \t%r6, [%r4+8]"}, checked: 2},
		{name: "a load in a loop: a global one reads its address or the sink, unpredicated; a shared one is zeroed, then predicated", decls: ".shared .align 4 .b8 s[1024];",
			body: "mov.u32 %r3, s;\nL1:\nld.global.u32 %r2, [%rd1];\nadd.s32 %r4, %r3, %r2;\nld.shared.u32 %r5, [%r4];\nsetp.ne.u32 %p1, %r5, 0;\n@%p1 bra L1;",
			want: []string{".global .align 32 .b8 __gpuos_sink[32];", "mov.u64 \t%gdq", ", __gpuos_sink;", "selp.b64 \t%gdq", ", %rd1, %gdq", "\tld.global.u32 \t%r2, [%gdq", "\tmov.b32 \t%r5, 0;", "ld.shared.u32 \t%r5, [%r4]"}, checked: 2},
		{name: "a parameter's address moved through registers, loaded at a constant offset inside it: no check", body: "mov.b64 %rd2, p;\nmov.u64 %rd3, %rd2;\nadd.s64 %rd4, %rd3, 4;\nld.param.u32 %r2, [%rd4];",
			want: []string{"ld.param.u32 \t%r2, [p+4]"}, checked: 0},
		{name: "parameter through a register: inside the kernel's parameters", body: "mov.u64 %rd2, p;\nmul.wide.u32 %rd3, %r1, 4;\nadd.s64 %rd4, %rd2, %rd3;\nld.param.u32 %r2, [%rd4+4];",
			want: []string{"mov.u64 \t%gdq", ", p;", "min.u64", "max.u64", "sub.u64", "setp.lt.u64", "selp.b64", "ld.param.u32 \t%r2, [%gdq"}, checked: 1},
		{name: "computed in a loop: checked per access", body: "mov.u64 %rd2, %rd1;\nL1:\nst.global.u32 [%rd2], %r1;\nadd.s64 %rd2, %rd2, 4;\nsetp.lt.u64 %p1, %rd2, 100;\n@%p1 bra L1;",
			want: []string{"and.b64", "setp.eq.u64 \t%gdp0|%gdp1", "@%gdp0 st.global.u32"}, checked: 1},
		{name: "generic with shared in use", decls: ".shared .align 4 .b8 s[64];",
			body: "mov.u64 %rd2, s;\ncvta.shared.u64 %rd3, %rd2;\nst.u32 [%rd3], %r1;\nld.u32 %r2, [%rd1];",
			want: []string{"cvta.shared.u64 \t%gdq", "or.pred", "st.u32"}, checked: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, res, err := guardedLines(t, kernelWith(tt.decls, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			wantInOrder(t, out, tt.want)
			if res.Stats.Checked != tt.checked {
				t.Errorf("checked %d accesses, want %d (stats %+v)", res.Stats.Checked, tt.checked, res.Stats)
			}
		})
	}
}

// TestFormsRefused: forms the guard cannot make safe are refused with a
// typed error naming the instruction and its line.
func TestFormsRefused(t *testing.T) {
	tests := []struct {
		name, src, form string
		line            int
	}{
		{"32-bit addresses", strings.Replace(kernelWith("", ""), ".address_size 64", ".address_size 32", 1), ".address_size", 0},
		{"no address size", strings.Replace(kernelWith("", ""), ".address_size 64", "", 1), ".address_size", 0},
		{"multimem", kernelWith("", "multimem.ld_reduce.global.add.u32 %r2, [%rd1];"), "multimem.ld_reduce.global.add.u32", 14},
		{"tensormap.replace", kernelWith("", "tensormap.replace.tile.global_address.global.b1024.b64 [%rd1], %rd2;"), "tensormap.replace.tile.global_address.global.b1024.b64", 14},
		{"tensor copy", kernelWith(".shared .align 128 .b8 s[1024];\n.shared .align 8 .b64 bar;", "mov.u32 %r2, s;\ncp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1, {%r1, %r1}], [%r2];"), "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes", 16},
		{"texture", kernelWith("", "tex.2d.v4.f32.f32 {%f0, %f1, %f2, %f3}, [%rd1, {%f4, %f5}];"), "tex.2d.v4.f32.f32", 14},
		{"surface store", kernelWith("", "sust.b.1d.b32.trap [%rd1, {%r1}], {%r2};"), "sust.b.1d.b32.trap", 14},
		{"wgmma", kernelWith("", "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f0, %f1, %f2, %f3}, %rd1, %rd2, 1, 1, 1, 0, 0;"), "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16", 14},
		{"mapa", kernelWith("", "mapa.shared::cluster.u32 %r2, %r1, 1;"), "mapa.shared::cluster.u32", 14},
		{"alloca", kernelWith("", "alloca.u64 %rd2, 64;"), "alloca.u64", 14},
		{"parameter store through a register", kernelWith("", "mov.u64 %rd2, p;\nst.param.u32 [%rd2], %r1;"), "st.param.u32", 15},
		{"parameter through a register in a device function", `.version 8.0
.target sm_90
.address_size 64
.func f(.param .u64 a)
{
	.reg .b64 	%rd<4>;
	mov.u64 	%rd1, a;
	ld.param.u64 	%rd2, [%rd1];
	ret;
}
`, "ld.param.u64", 8},
		{"parameter past its end", kernelWith("", "ld.param.u64 %rd2, [p+8];"), "ld.param.u64", 14},
		{"a 32-bit global address", kernelWith("", "ld.global.u32 %r2, [%r1];"), "ld.global.u32", 14},
		{"device malloc", strings.Replace(kernelWith("", "{\n.param .b64 a;\nst.param.b64 [a], 64;\n.param .b64 r;\ncall.uni (r), malloc, (a);\n}"),
			".visible .entry", ".extern .func (.param .b64 r) malloc (.param .b64 a);\n.visible .entry", 1), "call.uni", 19},
		{"managed variable", kernelWith(".global .attribute(.managed) .align 4 .u32 m;", ""), "m", 0},
		{"function pointer table", strings.Replace(kernelWith(".global .align 8 .u64 vt[1] = {f};", ""), ".global", ".func f()\n{\n\tret;\n}\n.global", 1), "vt", 0},
		{"reserved name", kernelWith(".global .align 8 .u64 __gpuos_guard;", ""), "__gpuos_guard", 0},
		{"unknown memory instruction", kernelWith("", "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%rd1], %r1, [%rd2];"), "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32", 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := guardedLines(t, tt.src)
			var fe *guard.FormError
			if !errors.As(err, &fe) {
				t.Fatalf("Guard = %v, want a *FormError", err)
			}
			if fe.Form != tt.form || fe.Line != tt.line {
				t.Errorf("refused %q at line %d, want %q at line %d: %v", fe.Form, fe.Line, tt.form, tt.line, err)
			}
			if c := v1.CodeOf(err); c != v1.CodeUnsupported && c != v1.CodeInvalidArgument {
				t.Errorf("code %v, want Unsupported or InvalidArgument", c)
			}
			if tt.form != "__gpuos_guard" && !errors.Is(err, guard.ErrUnsupported) {
				t.Errorf("%v does not match ErrUnsupported", err)
			}
		})
	}
}

// TestIndirectControl: indirect calls may reach only the module's own
// address-taken functions, and brx.idx only its target list.
func TestIndirectControl(t *testing.T) {
	src := `.version 8.0
.target sm_90
.address_size 64
.func (.param .b32 r) f(.param .b32 a)
{
	.reg .b32 %r<2>;
	ld.param.b32 %r1, [a];
	st.param.b32 [r], %r1;
	ret;
}
.visible .entry k(.param .u64 p, .param .u32 n)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	ld.param.u32 %r1, [n];
	mov.u64 %rd2, f;
	{
	.param .b32 a;
	st.param.b32 [a], %r1;
	.param .b32 r;
	proto: .callprototype (.param .b32 _) _ (.param .b32 _);
	call (r), %rd1, (a), proto;
	ld.param.b32 %r2, [r];
	}
	ts: .branchtargets L0, L1;
	brx.idx %r1, ts;
L0:
	ret;
L1:
	ret;
}
`
	out, res, err := guardedLines(t, src)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"mov.u64 \t%gdq", ", f;", "setp.eq.u64", "call \t(r), %rd1", "setp.lt.u32", ", 2;", "brx.idx"} {
		if !strings.Contains(out, w) {
			t.Errorf("guarded text lacks %q:\n%s", w, out)
		}
	}
	if len(res.Functions) != 2 || res.Kernels[0] != "k" {
		t.Errorf("functions %v kernels %v", res.Functions, res.Kernels)
	}
}

// TestStripped: trap, brkpt and __assertfail record and exit; vprintf is dropped.
func TestStripped(t *testing.T) {
	src := strings.Replace(kernelWith("", `trap;
brkpt;
{
.param .b64 fmt;
st.param.b64 [fmt], 0;
.param .b64 args;
st.param.b64 [args], 0;
.param .b32 rv;
call.uni (rv), vprintf, (fmt, args);
ld.param.b32 %r2, [rv];
}`), ".visible .entry", ".extern .func (.param .b32 r) vprintf (.param .b64 f, .param .b64 a);\n.visible .entry", 1)
	out, res, err := guardedLines(t, src)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "\ttrap") || strings.Contains(out, "brkpt") || strings.Contains(out, "call.uni") {
		t.Errorf("trap, brkpt or the vprintf call survived:\n%s", out)
	}
	if res.Stats.Stripped != 3 || !strings.Contains(out, "st.param.b32 \t[rv], 0;") || strings.Count(out, "exit;") < 2 {
		t.Errorf("stripped %d, want 3 with the return value set and exits:\n%s", res.Stats.Stripped, out)
	}
}

// Guarding is deterministic: the same input gives the same text.
func TestDeterministic(t *testing.T) {
	for _, f := range kernelFiles(t) {
		src := readPTX(t, f)
		a, _, err := guardedLines(t, string(src))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			b, _, _ := guardedLines(t, string(src))
			if a != b {
				t.Fatalf("%s: two guards of the same module differ", f)
			}
		}
	}
}

// TestDynamicSharedLimit: with dynamic shared memory (an unsized extern
// .shared array), the shared limit is the end of that memory, exactly,
// not %total_smem_size, which the hardware rounds up to its allocation
// granularity (shared_halving_rounded_up read a word past a 132-byte array
// inside the rounding on the H100).
func TestDynamicSharedLimit(t *testing.T) {
	tests := []struct {
		name, decl string
		exact      bool
	}{
		{"extern array", ".extern .shared .align 4 .b8 dyn[];", true},
		{"sized array only", ".shared .align 4 .b8 dyn[256];", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := `.version 8.0
.target sm_80
.address_size 64
` + tt.decl + `
.visible .entry k(.param .u32 i)
{
	.reg .b32 %r<4>;
	ld.param.u32 %r1, [i];
	mov.u32 %r2, dyn;
	add.s32 %r3, %r2, %r1;
	st.shared.u32 [%r3], %r1;
	ret;
}
`
			m, _ := guardText(t, []byte(src))
			out := string(m.Bytes())
			if !strings.Contains(out, "%total_smem_size") {
				t.Fatalf("no shared limit in the guarded kernel:\n%s", out)
			}
			if got := strings.Contains(out, "%dynamic_smem_size") && strings.Contains(out, "min.u32"); got != tt.exact {
				t.Errorf("limit bounded by the dynamic array's end: have %v, want %v\n%s", got, tt.exact, out)
			}
		})
	}
}

// TestRangeWorkBudget: a function whose range analysis runs past its budget
// gets no proofs, so every shared access stays checked (the largest library
// kernels took minutes to analyze) and no fast variant is made.
func TestRangeWorkBudget(t *testing.T) {
	src := readPTX(t, filepath.Join("..", "..", "testdata", "kernels", "reduce.ptx"))
	_, full := guardText(t, src)
	if full.Stats.ProvenShape == 0 {
		t.Fatalf("reduce.ptx: no shared access proven with the default budget; the test needs one: %+v", full.Stats)
	}
	restore := guard.SetRangeWorkBudget(10)
	defer restore()
	_, cut := guardText(t, src)
	if cut.Stats.ProvenShape != 0 {
		t.Errorf("over budget: ProvenShape = %d, want 0 (nothing proven)", cut.Stats.ProvenShape)
	}
	if full.Stats.Variants == 0 || cut.Stats.Variants != 0 {
		t.Errorf("fast variants: %d with the default budget, %d over it; want some, then none", full.Stats.Variants, cut.Stats.Variants)
	}
}
