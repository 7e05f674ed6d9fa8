package interp

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"testing"
)

func cstr(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(itoa(uint32(s[i])))
	}
	return b.String() + ", 0"
}

// Device printf, as nvcc emits it: vprintf(format, packed arguments).
func TestPrintf(t *testing.T) {
	format := "t%d/%u: [%5.2f] [%-4s] %#x %lld %c %e %g %% %p\n"
	src := instHeader + `
.extern .func (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.global .align 1 .b8 $str[` + itoa(uint32(len(format)+1)) + `] = {` + cstr(format) + `};
.global .align 1 .b8 $str$1[3] = {104, 105, 0};
.visible .entry k(.param .u64 out)
{
	.local .align 8 .b8 __local_depot0[72];
	.reg .b64 %SP;
	.reg .b64 %SPL;
	.reg .b32 %r<6>;
	.reg .b64 %rd<10>;
	.reg .f64 %fd<4>;
	mov.u64 %SPL, __local_depot0;
	cvta.local.u64 %SP, %SPL;
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, 7;
	st.local.v2.u32 [%SPL], {%r1, %r2};
	mov.f64 %fd1, 0d400921FB54442D18;
	st.local.f64 [%SPL+8], %fd1;
	mov.u64 %rd1, $str$1;
	cvta.global.u64 %rd2, %rd1;
	st.local.u64 [%SPL+16], %rd2;
	st.local.u32 [%SPL+24], 255;
	st.local.u64 [%SPL+32], -5;
	st.local.u32 [%SPL+40], 65;
	mov.f64 %fd2, 0d3F50624DD2F1A9FC;
	st.local.f64 [%SPL+48], %fd2;
	st.local.f64 [%SPL+56], %fd2;
	st.local.u64 [%SPL+64], 4096;
	mov.u64 %rd3, $str;
	cvta.global.u64 %rd4, %rd3;
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd4;
	.param .b64 param1;
	st.param.b64 [param1], %SP;
	.param .b32 retval0;
	call.uni (retval0), vprintf, (param0, param1);
	ld.param.b32 %r3, [retval0];
	}
	ld.param.u64 %rd5, [out];
	mul.wide.u32 %rd6, %r1, 4;
	add.u64 %rd7, %rd5, %rd6;
	st.global.u32 [%rd7], %r3;
	ret;
}`
	p := compileSrc(t, src)
	mem := newDevMem()
	if err := bindGlobals(p, mem); err != nil {
		t.Fatal(err)
	}
	k := kernel(t, p, "k")
	oa, ob := mem.alloc(4 * 3)
	var out bytes.Buffer
	_, err := k.Run(context.Background(), Launch{Grid: dim(1, 1, 1), Block: dim(3, 1, 1), Params: packParams(t, k, oa), Global: mem, Printf: &out})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	sort.Strings(lines)
	for i, l := range lines {
		want := "t" + itoa(uint32(i)) + "/7: [ 3.14] [hi  ] 0xff -5 A 1.000000e-03 0.001 % 0x1000"
		if l != want {
			t.Errorf("line %d = %q, want %q", i, l, want)
		}
	}
	for i, n := range u32s(ob) {
		if n != 10 {
			t.Errorf("thread %d: vprintf returned %d, want 10", i, n)
		}
	}
}
