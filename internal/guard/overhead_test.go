package guard_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// benchCorpus is bench/guard/kernels.cu as nvcc 13.0 compiled it for sm_90
// (-O3) on the lent GPU machine, and each kernel's launch there scaled down:
// the same block shape and dynamic shared memory, fewer blocks, and the
// same work per thread (loop trip counts) where it fits the test window.
var benchCorpus = map[string]kspec{
	"copy_f4":      {grid: d3(4), block: d3(256), args: []arg{f32buf(4 * 4 * 256 * 16), zeros(16 * 4 * 256 * 16), u64v(4 * 256 * 16)}},
	"saxpy":        {grid: d3(2), block: d3(256), args: []arg{s32(2 * 256 * 64), f32v(2.5), f32buf(2 * 256 * 64), f32buf(2 * 256 * 64)}},
	"fma_loop":     {grid: d3(1), block: d3(256), args: []arg{zeros(4 * 256), s32(1024)}},
	"reduce_sum":   {grid: d3(2), block: d3(256), shared: 256 * 4, args: []arg{f32buf(2 * 256 * 2 * 64), zeros(2 * 4), s32(2 * 256 * 2 * 64)}},
	"jacobi2d":     {grid: d2(2, 8), block: d2(32, 8), args: []arg{f32buf(64 * 64), zeros(4 * 64 * 64), s32(64), s32(64)}},
	"stencil1d":    {grid: d3(4), block: d3(256), shared: (256 + 8) * 4, args: []arg{f32buf(1024), zeros(4 * 1024), s32(1024)}},
	"scan_block":   {grid: d3(2), block: d3(512), shared: 2 * 512 * 4, args: []arg{i32buf(1024), zeros(4 * 1024), s32(1024)}},
	"gemm_tiled":   {grid: d2(1, 1), block: d2(32, 32), args: []arg{f32buf(256 * 256), f32buf(256 * 256), zeros(4 * 256 * 256), s32(256)}},
	"gemm_reg":     {grid: d2(1, 1), block: d3(256), args: []arg{f32buf(256 * 256), f32buf(256 * 256), zeros(4 * 256 * 256), s32(256)}},
	"softmax_rows": {grid: d3(2), block: d3(256), shared: 256 * 4, args: []arg{f32buf(2 * 4096), zeros(4 * 2 * 4096), s32(4096)}},
	"transpose":    {grid: d2(2, 2), block: d2(32, 8), args: []arg{f32buf(64 * 64), zeros(4 * 64 * 64), s32(64), s32(64)}},
	"histogram256": {grid: d3(2), block: d3(256), args: []arg{{buf: 2 * 256 * 64, fill: "bytes"}, zeros(4 * 256), s32(2 * 256 * 64)}},
}

// TestBenchCorpusOnInterpreter runs the GPU benchmark's kernels plain and
// guarded on the interpreter: outputs must be identical and nothing
// recorded. It logs the thread-instructions each executes (predicated-off
// ones included), the model the overhead predictions in bench/guard/README.md
// come from: run with -v to see the table.
func TestBenchCorpusOnInterpreter(t *testing.T) {
	src := readPTX(t, filepath.Join("..", "..", "testdata", "guard", "bench", "kernels.sm_90.ptx"))
	plain := parse(t, src)
	gm, res := guardText(t, src)
	var names []string
	for _, k := range entries(plain) {
		if _, ok := benchCorpus[k]; !ok {
			t.Errorf("kernel %s has no launch in benchCorpus", k)
			continue
		}
		names = append(names, k)
	}
	type row struct {
		name          string
		plain, guard  uint64
		threads       uint64
		overheadRatio float64
	}
	var rows []row
	for _, k := range names {
		spec := benchCorpus[k]
		br := newBenignRun(spec, 1)
		want, _ := br.run(t, plain, nil, k)
		pi := br.instructions
		got, d := br.run(t, gm, res, k)
		gi := br.instructions
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("%s: argument %d differs guarded vs unguarded", k, i)
			}
		}
		if r := d.record(t); r.Violated() {
			t.Errorf("%s: benign kernel recorded a violation: %+v", k, r)
		}
		n := uint64(spec.grid[0]*spec.grid[1]*spec.grid[2]) * uint64(spec.block[0]*spec.block[1]*spec.block[2])
		rows = append(rows, row{k, pi, gi, n, float64(gi)/float64(pi) - 1})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-14s %14s %14s %10s\n", "kernel", "plain/thread", "guarded/thread", "added")
	var ov []float64
	for _, r := range rows {
		fmt.Fprintf(&b, "%-14s %14.1f %14.1f %+9.1f%%\n", r.name, float64(r.plain)/float64(r.threads),
			float64(r.guard)/float64(r.threads), 100*r.overheadRatio)
		ov = append(ov, 100*r.overheadRatio)
	}
	sort.Float64s(ov)
	if n := len(ov); n > 0 {
		med := ov[n/2]
		if n%2 == 0 {
			med = (ov[n/2-1] + ov[n/2]) / 2
		}
		fmt.Fprintf(&b, "median added instructions %+.1f%%", med)
	}
	t.Log(b.String())
	t.Logf("guard stats: %+v", res.Stats)
}
