package guard

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpuos/gpuos/internal/ptx"
)

func TestPointerParams(t *testing.T) {
	for _, tt := range []struct {
		file, kernel string
		want         []bool
	}{
		{"vecadd.ptx", "vecadd", []bool{true, true, true, false}},
		{"saxpy.ptx", "saxpy", []bool{false, false, true, true}},      // n, a (f32), x, y
		{"saxpy.ptx", "daxpy", []bool{false, false, true, true}},      // n, a (f64: an 8-byte scalar), x, y
		{"bench.ptx", "scale_copy", []bool{true, true, false, false}}, // in, out, n (u64), s
		{"bench.ptx", "spin", []bool{false, true}},                    // ns (u64), done
		{"bench.ptx", "fma_loop", []bool{true, false}},
		{"generic.ptx", "generic_mix", []bool{true, true, true, false}},
		{"matmul.ptx", "dgemm_naive", []bool{true, true, true, false, false, false}},
	} {
		src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "kernels", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		m, err := ptx.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := PointerParams(m)[tt.kernel]; !slices.Equal(got, tt.want) {
			t.Errorf("%s %s: pointer parameters %v, want %v", tt.file, tt.kernel, got, tt.want)
		}
	}
}

// Conservative cases: a parameter whose value escapes or whose address is
// taken counts as a pointer.
func TestPointerParamsConservative(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       []bool
	}{
		{"stored: escapes", `ld.param.u64 %rd1, [k_p0]; ld.param.u64 %rd2, [k_p1]; cvta.to.global.u64 %rd3, %rd2; st.global.u64 [%rd3], %rd1;`, []bool{true, true}},
		{"address of a parameter", `mov.u64 %rd1, k_p0; ld.param.u64 %rd2, [k_p1];`, []bool{true, true}},
		{"generic pointer used directly", `ld.param.u64 %rd1, [k_p0]; ld.u32 %r1, [%rd1+4];`, []bool{true, false}},
		{"pointer through arithmetic", `ld.param.u64 %rd1, [k_p0]; add.s64 %rd2, %rd1, 16; and.b64 %rd3, %rd2, -16; ld.global.u32 %r1, [%rd3];`, []bool{true, false}},
		{"scalar compared only", `ld.param.u64 %rd1, [k_p1]; setp.lt.u64 %p1, %rd1, 7;`, []bool{false, false}},
		{"scalar as a multiplier", `ld.param.u64 %rd1, [k_p0]; ld.param.u64 %rd2, [k_p1]; cvta.to.global.u64 %rd3, %rd1; mad.lo.s64 %rd4, %rd2, 8, %rd3; ld.global.u64 %rd5, [%rd4];`, []bool{true, false}},
	} {
		src := `.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_p0, .param .u64 k_p1)
{
	.reg .pred %p<2>;
	.reg .b32 %r<2>;
	.reg .b64 %rd<6>;
	` + tt.body + `
	ret;
}`
		m, err := ptx.Parse([]byte(src))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := PointerParams(m)["k"]; !slices.Equal(got, tt.want) {
			t.Errorf("%s: pointer parameters %v, want %v", tt.name, got, tt.want)
		}
	}
}
