package interp_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/gpuos/gpuos/internal/interp"
	"github.com/gpuos/gpuos/internal/ptx"
)

// sliceMemory maps one host slice at a device address.
type sliceMemory struct {
	base uint64
	mem  []byte
}

func (m *sliceMemory) Slice(addr uint64, n int, write bool) ([]byte, error) {
	if addr < m.base || addr-m.base+uint64(n) > uint64(len(m.mem)) {
		return nil, errors.New("unmapped")
	}
	off := addr - m.base
	return m.mem[off : off+uint64(n)], nil
}

const vecadd = `
.version 9.0
.target sm_90
.address_size 64
.visible .entry vecadd(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
	.reg .pred %p;
	.reg .b32 %r<5>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [a];
	ld.param.u64 %rd2, [b];
	ld.param.u64 %rd3, [c];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r4, %r2, %r3, %r4;
	setp.ge.s32 %p, %r4, %r1;
	@%p bra DONE;
	mul.wide.s32 %rd4, %r4, 4;
	add.s64 %rd5, %rd1, %rd4;
	add.s64 %rd6, %rd2, %rd4;
	add.s64 %rd7, %rd3, %rd4;
	ld.global.f32 %f1, [%rd5];
	ld.global.f32 %f2, [%rd6];
	add.f32 %f3, %f1, %f2;
	st.global.f32 [%rd7], %f3;
DONE:
	ret;
}`

// Compile a module, lay out a kernel's parameters and run it on the CPU.
func Example() {
	m, err := ptx.Parse([]byte(vecadd))
	if err != nil {
		panic(err)
	}
	prog, err := interp.Compile(m)
	if err != nil {
		panic(err)
	}
	k, err := prog.Kernel("vecadd")
	if err != nil {
		panic(err)
	}

	const n = 5
	mem := &sliceMemory{base: 0x1000_0000_0000, mem: make([]byte, 3*4*n)}
	a, b, c := mem.base, mem.base+4*n, mem.base+8*n
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(mem.mem[4*i:], math.Float32bits(float32(i)))
		binary.LittleEndian.PutUint32(mem.mem[4*n+4*i:], math.Float32bits(0.5))
	}

	params := make([]byte, k.ParamSize())
	for i, v := range []uint64{a, b, c, n} {
		p := k.Params()[i]
		if p.Size == 8 {
			binary.LittleEndian.PutUint64(params[p.Offset:], v)
		} else {
			binary.LittleEndian.PutUint32(params[p.Offset:], uint32(v))
		}
	}
	res, err := k.Run(context.Background(), interp.Launch{
		Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{4, 1, 1}, Params: params, Global: mem,
	})
	if err != nil {
		panic(err)
	}
	var sum []float32
	for i := 0; i < n; i++ {
		sum = append(sum, math.Float32frombits(binary.LittleEndian.Uint32(mem.mem[8*n+4*i:])))
	}
	fmt.Println(sum)
	fmt.Println(res.Blocks, "blocks,", res.GlobalBytesWritten, "bytes written")
	// Output:
	// [0.5 1.5 2.5 3.5 4.5]
	// 2 blocks, 20 bytes written
}

// A kernel that touches memory the device has not mapped stops with a Fault.
func ExampleFault() {
	m, _ := ptx.Parse([]byte(`
.version 9.0
.target sm_90
.address_size 64
.visible .entry bad()
{
	.reg .b64 %rd;
	.reg .b32 %r;
	mov.u64 %rd, 64;
	ld.global.u32 %r, [%rd];
	ret;
}`))
	prog, _ := interp.Compile(m)
	k, _ := prog.Kernel("bad")
	_, err := k.Run(context.Background(), interp.Launch{
		Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, Global: &sliceMemory{},
	})
	var f *interp.Fault
	if errors.As(err, &f) {
		fmt.Println(f.Kind, f.Addr, f.Line)
	}
	// Output: illegal address 64 10
}
