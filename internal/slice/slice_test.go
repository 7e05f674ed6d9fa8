package slice_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/ptx"
	"github.com/gpuos/gpuos/internal/slice"
)

func kernelsDir() string { return filepath.Join("..", "..", "testdata", "kernels") }

func parseFile(t testing.TB, name string) *ptx.Module {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(kernelsDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ptx.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const small = `
.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u64 k_out)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [k_out];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %nctaid.x;
	mad.lo.u32 %r3, %r1, 1000, %r2;
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd2, %rd2, %rd3;
	st.global.u32 [%rd2], %r3;
	ret;
}
`

// text prints one function of m.
func text(m *ptx.Module, f *ptx.Function) string {
	return (&ptx.Module{Version: m.Version, Target: m.Target, AddressSize: m.AddressSize, Items: []ptx.Item{f}}).String()
}

func TestTransformAddsTwin(t *testing.T) {
	m, err := ptx.Parse([]byte(small))
	if err != nil {
		t.Fatal(err)
	}
	before := text(m, m.Function("k"))
	res, err := slice.Transform(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sliced) != 1 || res.Sliced[0] != "k" || len(res.Refused) != 0 {
		t.Fatalf("result %+v, want k sliced", res)
	}
	if after := text(m, m.Function("k")); after != before {
		t.Errorf("the original kernel changed:\n%s\nwant\n%s", after, before)
	}
	twin := m.Function(slice.Twin("k"))
	if twin == nil || !twin.Entry {
		t.Fatalf("no twin entry in\n%s", m)
	}
	if n := len(twin.Params); n != 1+slice.NumParams {
		t.Errorf("twin has %d parameters, want %d", n, 1+slice.NumParams)
	}
	tt := text(m, twin)
	for _, want := range []string{"%ctaid.x", "__gpuos_slice_ox", "__gpuos_slice_nz"} {
		if !strings.Contains(tt, want) {
			t.Errorf("twin lacks %q:\n%s", want, tt)
		}
	}
	if strings.Count(tt, "%nctaid.") != 0 {
		t.Errorf("twin still reads %%nctaid:\n%s", tt)
	}
	if _, err := ptx.Parse(m.Bytes()); err != nil {
		t.Errorf("transformed module does not parse: %v\n%s", err, m)
	}
	if !slice.IsTwin(slice.Twin("k")) || slice.IsTwin("k") {
		t.Error("IsTwin")
	}
}

func TestRefusals(t *testing.T) {
	wrap := func(body string) string {
		return ".version 8.0\n.target sm_90\n.address_size 64\n" + body
	}
	for _, tc := range []struct {
		name, src, why string
	}{
		{"cluster register", wrap(`.visible .entry k() { .reg .b32 %r; mov.u32 %r, %clusterid.x; ret; }`), "%clusterid"},
		{"grid id", wrap(`.visible .entry k() { .reg .b64 %r; mov.u64 %r, %gridid; ret; }`), "%gridid"},
		{"cluster directive", wrap(`.visible .entry k() .reqnctapercluster 2, 1, 1 { ret; }`), "cluster"},
		{"cluster barrier", wrap(`.visible .entry k() { barrier.cluster.arrive; barrier.cluster.wait; ret; }`), "barrier.cluster"},
		{"device function reads the block index", wrap(`
.func (.reg .b32 r) blk() { mov.u32 r, %ctaid.x; ret; }
.visible .entry k() { .reg .b32 %r; call (%r), blk, (); ret; }`), "device function blk"},
		{"spin on a flag", wrap(`
.visible .entry k(.param .u64 p) {
	.reg .b64 %rd; .reg .b32 %r; .reg .pred %p;
	ld.param.u64 %rd, [p];
$L_wait:
	ld.volatile.global.u32 %r, [%rd];
	setp.eq.u32 %p, %r, 0;
	@%p bra $L_wait;
	ret;
}`), "waits on global memory"},
		{"atomic spin", wrap(`
.visible .entry k(.param .u64 p) {
	.reg .b64 %rd; .reg .b32 %r; .reg .pred %p;
	ld.param.u64 %rd, [p];
$L_wait:
	atom.global.cas.b32 %r, [%rd], 0, 1;
	setp.ne.u32 %p, %r, 0;
	@%p bra $L_wait;
	ret;
}`), "waits on global memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ptx.Parse([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			res, err := slice.Transform(m)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Sliced) != 0 || !strings.Contains(res.Refused["k"], tc.why) {
				t.Errorf("result %+v, want k refused for %q", res, tc.why)
			}
			if m.Function(slice.Twin("k")) != nil {
				t.Error("a refused kernel got a twin")
			}
		})
	}
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		grid       [3]uint32
		lo, hi     uint32
		sliceGrid  [3]uint32
		offset     [3]uint32
		units, dim uint32
		wantErr    bool
	}{
		{[3]uint32{100, 1, 1}, 10, 30, [3]uint32{20, 1, 1}, [3]uint32{10, 0, 0}, 100, 0, false},
		{[3]uint32{8, 6, 1}, 2, 6, [3]uint32{8, 4, 1}, [3]uint32{0, 2, 0}, 6, 1, false},
		{[3]uint32{4, 4, 5}, 4, 5, [3]uint32{4, 4, 1}, [3]uint32{0, 0, 4}, 5, 2, false},
		{[3]uint32{100, 1, 1}, 30, 30, [3]uint32{}, [3]uint32{}, 100, 0, true},
		{[3]uint32{100, 1, 1}, 90, 101, [3]uint32{}, [3]uint32{}, 100, 0, true},
	} {
		if u := slice.Units(tc.grid); u != tc.units || uint32(slice.Dim(tc.grid)) != tc.dim {
			t.Errorf("grid %v: %d units along %d, want %d along %d", tc.grid, u, slice.Dim(tc.grid), tc.units, tc.dim)
		}
		g, off, err := slice.Plan(tc.grid, tc.lo, tc.hi)
		if (err != nil) != tc.wantErr {
			t.Errorf("Plan(%v, %d, %d): %v", tc.grid, tc.lo, tc.hi, err)
			continue
		}
		if err == nil && (g != tc.sliceGrid || off != tc.offset) {
			t.Errorf("Plan(%v, %d, %d) = %v %v, want %v %v", tc.grid, tc.lo, tc.hi, g, off, tc.sliceGrid, tc.offset)
		}
	}
}

// ---- sliced equals unsliced, on the software GPU --------------------------

// gpu is a software GPU with one mapped arena to carve buffers from.
type gpu struct {
	dev   backend.Device
	base  backend.DevicePtr
	size  uint64
	next  uint64
	st    backend.Stream
	image []byte
}

func newGPU(t *testing.T) *gpu {
	t.Helper()
	// One worker: blocks run in index order, so float atomics add in the
	// same order sliced or not.
	d, err := sim.New(sim.Options{Memory: 256 << 20, Workers: 1}).Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	const size = 64 << 20
	base, err := d.Reserve(size, d.Granularity())
	if err != nil {
		t.Fatal(err)
	}
	ch, err := d.CreateChunk(size)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Map(base, size, ch, 0); err != nil {
		t.Fatal(err)
	}
	if err := d.SetAccess(base, size); err != nil {
		t.Fatal(err)
	}
	st, err := d.NewStream(0)
	if err != nil {
		t.Fatal(err)
	}
	return &gpu{dev: d, base: base, size: size, st: st}
}

func (g *gpu) alloc(t *testing.T, data []byte) backend.DevicePtr {
	t.Helper()
	n := (uint64(len(data)) + 255) &^ 255
	if g.next+n > g.size {
		t.Fatal("arena full")
	}
	p := g.base + backend.DevicePtr(g.next)
	g.next += n
	if err := g.st.CopyHtoD(p, data); err != nil {
		t.Fatal(err)
	}
	return p
}

func (g *gpu) arena(t *testing.T) []byte {
	t.Helper()
	out := make([]byte, g.next)
	if err := g.st.CopyDtoH(out, g.base); err != nil {
		t.Fatal(err)
	}
	if err := g.st.Synchronize(); err != nil {
		t.Fatal(err)
	}
	return out
}

// arg is a kernel argument: a buffer (initial contents) or a scalar.
type arg struct {
	buf    []byte
	scalar any // int32, uint32 or float32, float64
}

func buffer(b []byte) arg { return arg{buf: b} }
func val(v any) arg       { return arg{scalar: v} }

func randFloats(r *rand.Rand, n int) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(r.Float32()*2-1))
	}
	return b
}

func randDoubles(r *rand.Rand, n int) []byte {
	b := make([]byte, 8*n)
	for i := range n {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(r.Float64()*2-1))
	}
	return b
}

func randInts(r *rand.Rand, n int) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(r.Int32N(2000)-1000))
	}
	return b
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// run loads the module and launches kernel over grid — whole, or as the
// twin in the given cuts along the sliced dimension — and returns the arena.
func run(t *testing.T, image []byte, kernel string, grid, block [3]uint32, shared uint32, args []arg, cuts []uint32) []byte {
	t.Helper()
	g := newGPU(t)
	mod, err := g.dev.LoadModule(image)
	if err != nil {
		t.Fatal(err)
	}
	var ptrs []uint64
	var scalars []any
	for _, a := range args {
		if a.buf != nil {
			ptrs = append(ptrs, uint64(g.alloc(t, a.buf)))
			scalars = append(scalars, nil)
		} else {
			ptrs = append(ptrs, 0)
			scalars = append(scalars, a.scalar)
		}
	}
	fn, err := mod.Function(kernel)
	if err != nil {
		t.Fatal(err)
	}
	pack := func(f backend.Function) []byte {
		ps := f.Params()
		var size uint32
		for _, p := range ps[:len(args)] {
			size = max(size, p.Offset+p.Size)
		}
		buf := make([]byte, size)
		for i, p := range ps[:len(args)] {
			switch v := scalars[i].(type) {
			case nil:
				binary.LittleEndian.PutUint64(buf[p.Offset:], ptrs[i])
			case int32:
				binary.LittleEndian.PutUint32(buf[p.Offset:], uint32(v))
			case uint32:
				binary.LittleEndian.PutUint32(buf[p.Offset:], v)
			case float32:
				binary.LittleEndian.PutUint32(buf[p.Offset:], math.Float32bits(v))
			case float64:
				binary.LittleEndian.PutUint64(buf[p.Offset:], math.Float64bits(v))
			default:
				t.Fatalf("argument %d: %T", i, v)
			}
		}
		return buf
	}
	cfg := backend.LaunchConfig{Grid: grid, Block: block, SharedMem: shared}
	if cuts == nil {
		if err := g.st.Launch(fn, cfg, pack(fn)); err != nil {
			t.Fatal(err)
		}
		return g.arena(t)
	}
	twin, err := mod.Function(slice.Twin(kernel))
	if err != nil {
		t.Fatalf("no twin: %v", err)
	}
	ps := twin.Params()
	var extra [slice.NumParams]uint32
	for i := range extra {
		extra[i] = ps[len(ps)-slice.NumParams+i].Offset
	}
	base := pack(twin)
	lo := uint32(0)
	for _, hi := range append(cuts, slice.Units(grid)) {
		sg, off, err := slice.Plan(grid, lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		c := cfg
		c.Grid = sg
		if err := g.st.Launch(twin, c, slice.Params(base, extra, off, grid)); err != nil {
			t.Fatal(err)
		}
		lo = hi
	}
	return g.arena(t)
}

// TestSlicedEqualsUnsliced runs real nvcc kernels whole and as slices of
// uneven sizes along their outermost grid dimension, from the same inputs,
// and requires the memory afterwards to be identical byte for byte.
func TestSlicedEqualsUnsliced(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 5000
	cases := []struct {
		file, kernel string
		grid, block  [3]uint32
		shared       uint32
		args         []arg
	}{
		{"vecadd.ptx", "vecadd", [3]uint32{20, 1, 1}, [3]uint32{256, 1, 1}, 0,
			[]arg{buffer(randFloats(r, n)), buffer(randFloats(r, n)), buffer(make([]byte, 4*n)), val(int32(n))}},
		{"matmul.ptx", "matmul_tiled", [3]uint32{3, 5, 1}, [3]uint32{16, 16, 1}, 0,
			[]arg{buffer(randFloats(r, 70*40)), buffer(randFloats(r, 40*45)), buffer(make([]byte, 4*70*45)), val(int32(70)), val(int32(45)), val(int32(40))}},
		{"matmul.ptx", "dgemm_naive", [3]uint32{4, 9, 1}, [3]uint32{8, 8, 1}, 0,
			[]arg{buffer(randDoubles(r, 70*20)), buffer(randDoubles(r, 20*30)), buffer(make([]byte, 8*70*30)), val(int32(70)), val(int32(30)), val(int32(20))}},
		{"reduce.ptx", "reduce_shared", [3]uint32{10, 1, 1}, [3]uint32{256, 1, 1}, 256 * 4,
			[]arg{buffer(randFloats(r, n)), buffer(make([]byte, 4*10)), val(int32(n))}},
		{"reduce.ptx", "reduce_shfl", [3]uint32{7, 1, 1}, [3]uint32{128, 1, 1}, 0,
			[]arg{buffer(randFloats(r, n)), buffer(make([]byte, 4)), val(int32(n))}},
		{"reduce.ptx", "reduce_int_atomic", [3]uint32{20, 1, 1}, [3]uint32{256, 1, 1}, 0,
			[]arg{buffer(randInts(r, n)), buffer(make([]byte, 8)), buffer(make([]byte, 4)), buffer(make([]byte, 4)), val(int32(n))}},
		{"scan.ptx", "scan_block", [3]uint32{40, 1, 1}, [3]uint32{128, 1, 1}, 128 * 4,
			[]arg{buffer(randInts(r, n)), buffer(make([]byte, 4*n)), val(int32(n))}},
		{"stencil.ptx", "stencil1d", [3]uint32{20, 1, 1}, [3]uint32{256, 1, 1}, (256 + 4) * 4,
			[]arg{buffer(randFloats(r, n)), buffer(make([]byte, 4*n)), val(int32(n))}},
		{"stencil.ptx", "jacobi2d", [3]uint32{4, 6, 1}, [3]uint32{16, 16, 1}, 0,
			[]arg{buffer(randFloats(r, 60*90)), buffer(make([]byte, 4*60*90)), val(int32(60)), val(int32(90))}},
		{"transpose.ptx", "transpose", [3]uint32{3, 4, 1}, [3]uint32{32, 8, 1}, 0,
			[]arg{buffer(randFloats(r, 90*120)), buffer(make([]byte, 4*90*120)), val(int32(90)), val(int32(120))}},
		{"histogram.ptx", "histogram256", [3]uint32{9, 1, 1}, [3]uint32{128, 1, 1}, 0,
			[]arg{buffer(randBytes(r, n)), buffer(make([]byte, 4*256)), val(int32(n))}},
		{"saxpy.ptx", "saxpy", [3]uint32{6, 1, 1}, [3]uint32{128, 1, 1}, 0,
			[]arg{val(int32(n)), val(float32(1.5)), buffer(randFloats(r, n)), buffer(randFloats(r, n))}},
		{"special.ptx", "special_regs", [3]uint32{2, 3, 4}, [3]uint32{8, 2, 2}, 0,
			[]arg{buffer(make([]byte, 4*8*2*3*4*8*2*2))}},
	}
	for _, tc := range cases {
		t.Run(tc.kernel, func(t *testing.T) {
			m := parseFile(t, tc.file)
			res, err := slice.Transform(m)
			if err != nil {
				t.Fatal(err)
			}
			if why, refused := res.Refused[tc.kernel]; refused {
				t.Fatalf("%s refused: %s", tc.kernel, why)
			}
			image := m.Bytes()
			whole := run(t, image, tc.kernel, tc.grid, tc.block, tc.shared, tc.args, nil)
			u := slice.Units(tc.grid)
			if u < 3 {
				t.Fatalf("grid %v has %d units, want >= 3 for the test", tc.grid, u)
			}
			for _, cuts := range [][]uint32{{1}, {1, u / 2}, {u - 1}} {
				sliced := run(t, image, tc.kernel, tc.grid, tc.block, tc.shared, tc.args, cuts)
				if !bytes.Equal(whole, sliced) {
					t.Errorf("cut at %v: memory differs from the whole launch", cuts)
				}
			}
			// And the original image, untransformed, gives the same result.
			plain := run(t, parseFile(t, tc.file).Bytes(), tc.kernel, tc.grid, tc.block, tc.shared, tc.args, nil)
			if !bytes.Equal(whole, plain) {
				t.Error("the transformed module's kernel differs from the original's")
			}
		})
	}
}

// TestEveryTestdataKernel: every kernel of testdata either gets a twin that
// parses, or a reason.
func TestEveryTestdataKernel(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(kernelsDir(), "*.ptx"))
	if len(files) == 0 {
		t.Fatal("no testdata kernels")
	}
	for _, f := range files {
		m := parseFile(t, filepath.Base(f))
		res, err := slice.Transform(m)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := ptx.Parse(m.Bytes()); err != nil {
			t.Errorf("%s: transformed module does not parse: %v", f, err)
		}
		for k, why := range res.Refused {
			t.Logf("%s: %s left whole: %s", filepath.Base(f), k, why)
		}
		t.Logf("%s: sliced %v", filepath.Base(f), res.Sliced)
	}
}

func FuzzTransform(f *testing.F) {
	f.Add([]byte(small))
	for _, name := range []string{"vecadd.ptx", "reduce.ptx", "special.ptx"} {
		b, err := os.ReadFile(filepath.Join(kernelsDir(), name))
		if err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := ptx.Parse(src)
		if err != nil {
			return
		}
		res, err := slice.Transform(m)
		if err != nil {
			return
		}
		if len(res.Sliced) == 0 {
			return
		}
		if _, err := ptx.Parse(m.Bytes()); err != nil {
			t.Fatalf("sliced module does not parse: %v\n%s", err, m)
		}
		for _, k := range res.Sliced {
			if m.Function(slice.Twin(k)) == nil {
				t.Fatalf("%s reported sliced, no twin", k)
			}
		}
	})
}
