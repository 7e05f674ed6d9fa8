package ptx_test

import (
	"fmt"

	"github.com/gpuos/gpuos/internal/ptx"
)

const saxpy = `
.version 9.0
.target sm_80
.address_size 64

.visible .entry saxpy(
	.param .u64 saxpy_param_0,
	.param .f32 saxpy_param_1,
	.param .align 8 .b8 saxpy_param_2[16]
)
{
	.reg .b64 	%rd<3>;
	.reg .f32 	%f<3>;

	ld.param.u64 	%rd1, [saxpy_param_0];
	ld.global.f32 	%f1, [%rd1+4];
	st.global.f32 	[%rd1], %f1;
	ret;
}
`

func ExampleParse() {
	m, err := ptx.Parse([]byte(saxpy))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range m.Function("saxpy").Body.Stmts {
		if in, ok := s.(*ptx.Instruction); ok && in.StateSpace() == ptx.SpaceGlobal {
			fmt.Printf("line %d: %s accesses %d bytes at %s\n", in.Line, in.Opcode, in.AccessSize(), in.Operands[len(in.Operands)-1])
		}
	}
	// Output:
	// line 16: ld accesses 4 bytes at [%rd1+4]
	// line 17: st accesses 4 bytes at %f1
}

func ExampleFunction_ParamLayout() {
	m, _ := ptx.Parse([]byte(saxpy))
	slots, _ := m.Function("saxpy").ParamLayout()
	for _, s := range slots {
		fmt.Printf("%s: offset %d size %d align %d\n", s.Name, s.Offset, s.Size, s.Align)
	}
	// Output:
	// saxpy_param_0: offset 0 size 8 align 8
	// saxpy_param_1: offset 8 size 4 align 4
	// saxpy_param_2: offset 16 size 16 align 8
}

func ExampleBlock_Rewrite() {
	m, _ := ptx.Parse([]byte(saxpy))
	f := m.Function("saxpy")
	flag, _ := f.NewReg("guard", ptx.TypePred)
	// Guard every global store with a fresh predicate.
	f.Body.Rewrite(func(s ptx.Stmt) []ptx.Stmt {
		in, ok := s.(*ptx.Instruction)
		if !ok || in.Opcode != "st" || in.StateSpace() != ptx.SpaceGlobal {
			return []ptx.Stmt{s}
		}
		addr := in.Operands[0].(*ptx.Address)
		check := ptx.NewInstruction("setp.ne.u64", flag, addr.Base, &ptx.Int{Value: 0})
		in.Guard = &ptx.Guard{Reg: flag}
		return []ptx.Stmt{check, in}
	})
	for _, s := range f.Body.Stmts[len(f.Body.Stmts)-3:] {
		fmt.Println(s.(*ptx.Instruction))
	}
	// Output:
	// setp.ne.u64 	%guard0, %rd1, 0;
	// @%guard0 st.global.f32 	[%rd1], %f1;
	// ret;
}
