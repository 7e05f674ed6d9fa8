package interp

import (
	"math/rand/v2"
	"testing"
)

func TestVecadd(t *testing.T) {
	for _, file := range []string{"vecadd.ptx", "vecadd.sm_90.ptx"} {
		p := compileFile(t, file)
		k, err := p.Kernel("vecadd")
		if err != nil {
			t.Fatal(err)
		}
		mem := newDevMem()
		n := 1000
		r := rand.New(rand.NewPCG(1, 1))
		a, ab := mem.alloc(4 * n)
		b, bb := mem.alloc(4 * n)
		c, cb := mem.alloc(4 * n)
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		putF32s(ab, x)
		putF32s(bb, y)
		run(t, k, mem, dim(uint32((n+127)/128), 1, 1), dim(128, 1, 1), 0, a, b, c, n)
		got := f32s(cb)
		for i := range got {
			if got[i] != x[i]+y[i] {
				t.Fatalf("%s: c[%d] = %v, want %v", file, i, got[i], x[i]+y[i])
			}
		}
	}
}
