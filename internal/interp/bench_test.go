package interp

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gpuos/gpuos/internal/ptx"
)

func readKernelFile(b *testing.B, name string) []byte {
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "kernels", name))
	if err != nil {
		b.Fatal(err)
	}
	return src
}

// cpuTime is the process's user+system CPU time: benchmarks report
// instructions per CPU second too, which stays meaningful on a loaded machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Benchmarks report thread-instructions per second on one worker (one core):
// the figure the interpreter's performance target (≥ 50 M/s on vecadd-like
// code) is stated in.

func benchKernel(b *testing.B, file, name string, grid, block [3]uint32, dyn uint32, setup func(mem *devMem, k *Kernel) []byte) {
	p := compileFile(b, file)
	k, err := p.Kernel(name)
	if err != nil {
		b.Fatal(err)
	}
	mem := newDevMem()
	params := setup(mem, k)
	l := Launch{Grid: grid, Block: block, DynamicShared: dyn, Params: params, Global: mem, Workers: 1}
	var instr uint64
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		res, err := k.Run(context.Background(), l)
		if err != nil {
			b.Fatal(err)
		}
		instr += res.Instructions
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(instr)/b.Elapsed().Seconds()/1e6, "Minstr/s")
	if cpu > 0 {
		b.ReportMetric(float64(instr)/cpu.Seconds()/1e6, "Minstr/cpu-s")
	}
}

func BenchmarkVecadd(b *testing.B) {
	n := 1 << 18
	benchKernel(b, "vecadd.ptx", "vecadd", dim(uint32(n/256), 1, 1), dim(256, 1, 1), 0, func(mem *devMem, k *Kernel) []byte {
		a, _ := mem.alloc(4 * n)
		bb, _ := mem.alloc(4 * n)
		c, _ := mem.alloc(4 * n)
		return packParams(b, k, a, bb, c, n)
	})
}

func BenchmarkSaxpy(b *testing.B) {
	n := 1 << 16
	benchKernel(b, "saxpy.ptx", "saxpy", dim(64, 1, 1), dim(256, 1, 1), 0, func(mem *devMem, k *Kernel) []byte {
		x, _ := mem.alloc(4 * n)
		y, _ := mem.alloc(4 * n)
		return packParams(b, k, n, float32(2), x, y)
	})
}

func BenchmarkFmaLoop(b *testing.B) {
	benchKernel(b, "bench.ptx", "fma_loop", dim(16, 1, 1), dim(256, 1, 1), 0, func(mem *devMem, k *Kernel) []byte {
		o, _ := mem.alloc(4 * 16 * 256)
		return packParams(b, k, o, 64)
	})
}

func BenchmarkMatmulTiled(b *testing.B) {
	n := 64
	benchKernel(b, "matmul.ptx", "matmul_tiled", dim(uint32(n/16), uint32(n/16), 1), dim(16, 16, 1), 0, func(mem *devMem, k *Kernel) []byte {
		a, _ := mem.alloc(4 * n * n)
		bb, _ := mem.alloc(4 * n * n)
		c, _ := mem.alloc(4 * n * n)
		return packParams(b, k, a, bb, c, n, n, n)
	})
}

func BenchmarkReduceShfl(b *testing.B) {
	n := 1 << 16
	benchKernel(b, "reduce.ptx", "reduce_shfl", dim(32, 1, 1), dim(256, 1, 1), 0, func(mem *devMem, k *Kernel) []byte {
		in, _ := mem.alloc(4 * n)
		out, _ := mem.alloc(4)
		return packParams(b, k, in, out, n)
	})
}

// BenchmarkCompile measures loading a 500-line nvcc module (libm.ptx).
func BenchmarkCompile(b *testing.B) {
	src := readKernelFile(b, "libm.ptx")
	m, err := ptx.Parse(src)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Compile(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSmallLaunch measures the fixed cost of a launch: one warp of vecadd.
func BenchmarkSmallLaunch(b *testing.B) {
	p := compileFile(b, "vecadd.ptx")
	k, _ := p.Kernel("vecadd")
	mem := newDevMem()
	a, _ := mem.alloc(128)
	bb, _ := mem.alloc(128)
	c, _ := mem.alloc(128)
	l := Launch{Grid: dim(1, 1, 1), Block: dim(32, 1, 1), Params: packParams(b, k, a, bb, c, 32), Global: mem}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := k.Run(context.Background(), l); err != nil {
			b.Fatal(err)
		}
	}
}
