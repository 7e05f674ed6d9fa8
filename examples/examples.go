package examples

import (
	"context"
	_ "embed"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gpuos/gpuos/client"
)

// PTX of the example kernels.
var (
	//go:embed vecadd.ptx
	VecAddPTX []byte
	//go:embed reduce.ptx
	ReducePTX []byte
	//go:embed matmul.ptx
	MatmulPTX []byte
)

// Result is what a workload computed and how it compared with its CPU reference.
type Result struct {
	Workload string
	Size     string  // the problem size, for display
	MaxErr   float64 // largest relative error against the CPU reference
	OK       bool
}

func (r Result) String() string {
	verdict := "ok"
	if !r.OK {
		verdict = "WRONG"
	}
	return fmt.Sprintf("%s %s: max relative error %.2g, %s", r.Workload, r.Size, r.MaxErr, verdict)
}

// kernel loads a program and looks up one of its kernels.
func kernel(ctx context.Context, s *client.Session, ptx []byte, progName, name string) (*client.Kernel, error) {
	p, err := s.LoadProgram(ctx, ptx, progName)
	if err != nil {
		return nil, err
	}
	return p.Kernel(ctx, name)
}

func randomF32(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = rng.Float32()*2 - 1
	}
	return v
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesF32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// upload creates a buffer holding v.
func upload(ctx context.Context, s *client.Session, v []float32) (*client.Buffer, error) {
	b, err := s.CreateBuffer(ctx, uint64(4*len(v)))
	if err != nil {
		return nil, err
	}
	return b, s.CopyToDevice(b.At(0), f32Bytes(v), nil)
}

func download(ctx context.Context, s *client.Session, b *client.Buffer, n int) ([]float32, error) {
	out := make([]byte, 4*n)
	if err := s.CopyFromDevice(ctx, out, b.At(0), nil); err != nil {
		return nil, err
	}
	return bytesF32(out), nil
}

func relErr(got, want float64) float64 {
	d := math.Abs(got - want)
	if m := math.Abs(want); m > 1 {
		d /= m
	}
	if math.IsNaN(got) {
		return math.Inf(1)
	}
	return d
}

// VectorAdd adds two random vectors of n floats on the device: c = a + b,
// which must match the CPU exactly.
func VectorAdd(ctx context.Context, s *client.Session, rng *rand.Rand, n int) (Result, error) {
	res := Result{Workload: "vector add", Size: fmt.Sprintf("n=%d", n)}
	k, err := kernel(ctx, s, VecAddPTX, "vecadd", "vecadd")
	if err != nil {
		return res, err
	}
	a, b := randomF32(rng, n), randomF32(rng, n)
	da, err := upload(ctx, s, a)
	if err != nil {
		return res, err
	}
	db, err := upload(ctx, s, b)
	if err != nil {
		return res, err
	}
	dc, err := s.CreateBuffer(ctx, uint64(4*n))
	if err != nil {
		return res, err
	}
	cfg := client.LaunchConfig{Grid: client.Dim3{X: uint32((n + 255) / 256)}, Block: client.Dim3{X: 256}}
	if err := s.Launch(k, cfg, da, db, dc, int32(n)); err != nil {
		return res, err
	}
	c, err := download(ctx, s, dc, n)
	if err != nil {
		return res, err
	}
	res.OK = true
	for i := range c {
		if e := relErr(float64(c[i]), float64(a[i]+b[i])); e > res.MaxErr {
			res.MaxErr = e
		}
		if c[i] != a[i]+b[i] {
			res.OK = false
		}
	}
	return res, s.Synchronize(ctx)
}

// Reduce sums n random floats with a shared-memory tree reduction (one partial
// sum per block, added up on the host) and compares with a float64 CPU sum.
func Reduce(ctx context.Context, s *client.Session, rng *rand.Rand, n int) (Result, error) {
	res := Result{Workload: "reduction", Size: fmt.Sprintf("n=%d", n)}
	k, err := kernel(ctx, s, ReducePTX, "reduce", "reduce_shared")
	if err != nil {
		return res, err
	}
	const block = 256
	blocks := (n + 2*block - 1) / (2 * block)
	in := randomF32(rng, n)
	din, err := upload(ctx, s, in)
	if err != nil {
		return res, err
	}
	dout, err := s.CreateBuffer(ctx, uint64(4*blocks))
	if err != nil {
		return res, err
	}
	cfg := client.LaunchConfig{Grid: client.Dim3{X: uint32(blocks)}, Block: client.Dim3{X: block}, SharedMem: 4 * block}
	if err := s.Launch(k, cfg, din, dout, int32(n)); err != nil {
		return res, err
	}
	partial, err := download(ctx, s, dout, blocks)
	if err != nil {
		return res, err
	}
	var got, want float64
	for _, p := range partial {
		got += float64(p)
	}
	for _, x := range in {
		want += float64(x)
	}
	// Each block sums 512 values in float32: allow float32 rounding of the terms.
	res.MaxErr = math.Abs(got-want) / math.Max(1, math.Sqrt(float64(n)))
	res.OK = res.MaxErr < 1e-4
	return res, s.Synchronize(ctx)
}

// Matmul multiplies random m×k and k×n matrices with the 16×16 tiled kernel and
// compares with a float64 CPU product.
func Matmul(ctx context.Context, s *client.Session, rng *rand.Rand, m, n, kk int) (Result, error) {
	res := Result{Workload: "tiled matmul", Size: fmt.Sprintf("%dx%dx%d", m, n, kk)}
	k, err := kernel(ctx, s, MatmulPTX, "matmul", "matmul_tiled")
	if err != nil {
		return res, err
	}
	a, b := randomF32(rng, m*kk), randomF32(rng, kk*n)
	da, err := upload(ctx, s, a)
	if err != nil {
		return res, err
	}
	db, err := upload(ctx, s, b)
	if err != nil {
		return res, err
	}
	dc, err := s.CreateBuffer(ctx, uint64(4*m*n))
	if err != nil {
		return res, err
	}
	cfg := client.LaunchConfig{Grid: client.Dim3{X: uint32((n + 15) / 16), Y: uint32((m + 15) / 16)}, Block: client.Dim3{X: 16, Y: 16}}
	if err := s.Launch(k, cfg, da, db, dc, int32(m), int32(n), int32(kk)); err != nil {
		return res, err
	}
	c, err := download(ctx, s, dc, m*n)
	if err != nil {
		return res, err
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var want float64
			for x := 0; x < kk; x++ {
				want += float64(a[i*kk+x]) * float64(b[x*n+j])
			}
			if e := relErr(float64(c[i*n+j]), want); e > res.MaxErr {
				res.MaxErr = e
			}
		}
	}
	res.OK = res.MaxErr < 1e-4*math.Sqrt(float64(kk))
	return res, s.Synchronize(ctx)
}
