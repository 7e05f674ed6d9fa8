package interp

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuos/gpuos/internal/ptx"
)

// compileSrc parses and compiles PTX text.
func compileSrc(t testing.TB, src string) *Program {
	t.Helper()
	m, err := ptx.Parse([]byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	p, err := Compile(m)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return p
}

func compileFile(t testing.TB, name string) *Program {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "kernels", name))
	if err != nil {
		t.Fatal(err)
	}
	return compileSrc(t, string(src))
}

// devMem is a test device: a MapMemory with a bump allocator.
type devMem struct {
	mapMemory
	next uint64
}

const devBase = 0x0000_1000_0000_0000

func newDevMem() *devMem { return &devMem{next: devBase} }

// alloc maps n zero bytes and returns their address and backing slice.
func (d *devMem) alloc(n int) (uint64, []byte) {
	b := make([]byte, n)
	a := d.next
	d.Map(a, b)
	d.next += uint64((n+4095)&^4095) + 4096 // a guard gap between buffers
	return a, b
}

// params packs kernel arguments by the kernel's layout.
func packParams(t testing.TB, k *Kernel, args ...any) []byte {
	t.Helper()
	ps := k.Params()
	if len(ps) != len(args) {
		t.Fatalf("%s takes %d params, got %d", k.Name(), len(ps), len(args))
	}
	buf := make([]byte, k.ParamSize())
	for i, a := range args {
		p := ps[i]
		switch v := a.(type) {
		case uint64:
			binary.LittleEndian.PutUint64(buf[p.Offset:], v)
		case int64:
			binary.LittleEndian.PutUint64(buf[p.Offset:], uint64(v))
		case int:
			if p.Size == 8 {
				binary.LittleEndian.PutUint64(buf[p.Offset:], uint64(v))
			} else {
				binary.LittleEndian.PutUint32(buf[p.Offset:], uint32(v))
			}
		case uint32:
			binary.LittleEndian.PutUint32(buf[p.Offset:], v)
		case int32:
			binary.LittleEndian.PutUint32(buf[p.Offset:], uint32(v))
		case float32:
			binary.LittleEndian.PutUint32(buf[p.Offset:], math.Float32bits(v))
		case float64:
			binary.LittleEndian.PutUint64(buf[p.Offset:], math.Float64bits(v))
		default:
			t.Fatalf("param %d: unsupported %T", i, a)
		}
	}
	return buf
}

func run(t testing.TB, k *Kernel, mem Memory, grid, block [3]uint32, dyn uint32, args ...any) Result {
	t.Helper()
	res, err := k.Run(context.Background(), Launch{Grid: grid, Block: block, DynamicShared: dyn,
		Params: packParams(t, k, args...), Global: mem})
	if err != nil {
		t.Fatalf("run %s: %v", k.Name(), err)
	}
	return res
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func putF32s(b []byte, v []float32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
}

func u32s(b []byte) []uint32 {
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

func putU32s(b []byte, v []uint32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
}

func u64s(b []byte) []uint64 {
	out := make([]uint64, len(b)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out
}

func putU64s(b []byte, v []uint64) {
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], x)
	}
}

func f64s(b []byte) []float64 {
	out := make([]float64, len(b)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

func putF64s(b []byte, v []float64) {
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
}

func dim(x, y, z uint32) [3]uint32 { return [3]uint32{x, y, z} }
