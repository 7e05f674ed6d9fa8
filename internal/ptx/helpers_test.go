package ptx

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestTypes(t *testing.T) {
	tests := []struct {
		t                        Type
		size, bits               int
		float, signed, isInteger bool
	}{
		{TypeB8, 1, 8, false, false, true},
		{TypeU16, 2, 16, false, false, true},
		{TypeS32, 4, 32, false, true, true},
		{TypeS64, 8, 64, false, true, true},
		{TypeB128, 16, 128, false, false, true},
		{TypeF16, 2, 16, true, true, false},
		{TypeF16x2, 4, 32, true, true, false},
		{TypeBF16, 2, 16, true, true, false},
		{TypeBF16x2, 4, 32, true, true, false},
		{TypeTF32, 4, 32, true, true, false},
		{TypeF32, 4, 32, true, true, false},
		{TypeF64, 8, 64, true, true, false},
		{TypePred, 0, 1, false, false, false},
		{TypeE4M3, 1, 8, true, true, false},
		{TypeE5M2x2, 2, 16, true, true, false},
		{TypeU4, 0, 4, false, false, true},
		{TypeNone, 0, 0, false, false, false},
	}
	for _, tt := range tests {
		if tt.t.Size() != tt.size || tt.t.Bits() != tt.bits || tt.t.IsFloat() != tt.float || tt.t.IsSigned() != tt.signed || tt.t.IsInteger() != tt.isInteger {
			t.Errorf("%q: have size %d bits %d float %v signed %v integer %v", tt.t, tt.t.Size(), tt.t.Bits(), tt.t.IsFloat(), tt.t.IsSigned(), tt.t.IsInteger())
		}
	}
	for ty := TypeB8; ty < typeMax; ty++ {
		if back, ok := ParseType(ty.String()); !ok || back != ty {
			t.Errorf("ParseType(%q) = %v, %v", ty.String(), back, ok)
		}
	}
	if _, ok := ParseType(".f33"); ok {
		t.Error("ParseType accepted .f33")
	}
	for s := SpaceReg; s < spaceMax; s++ {
		if back, ok := ParseStateSpace(s.String()); !ok || back != s {
			t.Errorf("ParseStateSpace(%q) = %v, %v", s.String(), back, ok)
		}
	}
}

func TestInstructionHelpers(t *testing.T) {
	tests := []struct {
		src    string
		typ    Type
		types  []Type
		space  StateSpace
		spaces []StateSpace
		vec    int
		access int
	}{
		{"ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];", TypeF32, []Type{TypeF32}, SpaceGlobal, []StateSpace{SpaceGlobal}, 4, 16},
		{"ld.u8 %rs1, [%rd1];", TypeU8, []Type{TypeU8}, SpaceNone, nil, 1, 1},
		{"st.shared::cta.v2.b64 [%r1], {%rd1, %rd2};", TypeB64, []Type{TypeB64}, SpaceShared, []StateSpace{SpaceShared}, 2, 16},
		{"ld.shared::cluster.u32 %r1, [%r2];", TypeU32, []Type{TypeU32}, SpaceSharedCluster, []StateSpace{SpaceSharedCluster}, 1, 4},
		{"st.global.v8.f32 [%rd1], {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8};", TypeF32, []Type{TypeF32}, SpaceGlobal, []StateSpace{SpaceGlobal}, 8, 32},
		{"atom.global.cas.b128 %rd1, [%rd2], %rd3, %rd4;", TypeB128, []Type{TypeB128}, SpaceGlobal, []StateSpace{SpaceGlobal}, 1, 16},
		{"red.global.add.f32 [%rd1], %f1;", TypeF32, []Type{TypeF32}, SpaceGlobal, []StateSpace{SpaceGlobal}, 1, 4},
		{"ldu.global.v2.f64 {%fd1, %fd2}, [%rd1];", TypeF64, []Type{TypeF64}, SpaceGlobal, []StateSpace{SpaceGlobal}, 2, 16},
		{"ld.param::entry.u32 %r1, [p];", TypeU32, []Type{TypeU32}, SpaceParam, []StateSpace{SpaceParam}, 1, 4},
		{"cvt.rn.f32.s32 %f1, %r1;", TypeF32, []Type{TypeF32, TypeS32}, SpaceNone, nil, 1, 0},
		{"cvta.to.global.u64 %rd1, %rd2;", TypeU64, []Type{TypeU64}, SpaceGlobal, []StateSpace{SpaceGlobal}, 1, 0},
		{"cp.async.ca.shared.global [%r1], [%rd1], 8;", TypeNone, nil, SpaceShared, []StateSpace{SpaceShared, SpaceGlobal}, 1, 8},
		{"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], %r2, [%r3];", TypeNone, nil, SpaceSharedCluster, []StateSpace{SpaceSharedCluster, SpaceGlobal}, 1, 0},
		{"setp.ge.s32 %p1, %r1, %r2;", TypeS32, []Type{TypeS32}, SpaceNone, nil, 1, 0},
		{"vote.sync.any.pred %p1, %p2, -1;", TypePred, []Type{TypePred}, SpaceNone, nil, 1, 0},
		{"bar.sync 0;", TypeNone, nil, SpaceNone, nil, 1, 0},
	}
	for _, tt := range tests {
		in := parseBody(t, tt.src)[0].(*Instruction)
		if in.Type() != tt.typ || !reflect.DeepEqual(in.Types(), tt.types) || in.StateSpace() != tt.space ||
			!reflect.DeepEqual(in.Spaces(), tt.spaces) || in.VectorWidth() != tt.vec || in.AccessSize() != tt.access {
			t.Errorf("%q: have type %v types %v space %v spaces %v vec %d access %d",
				tt.src, in.Type(), in.Types(), in.StateSpace(), in.Spaces(), in.VectorWidth(), in.AccessSize())
		}
	}
}

func TestNewInstruction(t *testing.T) {
	in := NewInstruction("ld.global.nc.v2.u32", &Vector{Elems: []Operand{&Reg{Name: "%r1"}, &Sink{}}}, &Address{Base: &Reg{Name: "%rd1"}, Offset: -8})
	in.Guard = &Guard{Reg: &Reg{Name: "%p1"}, Negated: true}
	if in.Opcode != "ld" || !reflect.DeepEqual(in.Mods, []string{".global", ".nc", ".v2", ".u32"}) {
		t.Errorf("have opcode %q mods %q", in.Opcode, in.Mods)
	}
	if have, want := in.Name(), "ld.global.nc.v2.u32"; have != want {
		t.Errorf("Name: have %q, want %q", have, want)
	}
	if have, want := in.String(), "@!%p1 ld.global.nc.v2.u32 \t{%r1, _}, [%rd1+-8];"; have != want {
		t.Errorf("String: have %q, want %q", have, want)
	}
	if !in.HasMod(".nc") || in.HasMod(".ca") {
		t.Error("HasMod")
	}
	if have := in.AddressOperands(); !reflect.DeepEqual(have, []int{1}) {
		t.Errorf("AddressOperands: have %v, want [1]", have)
	}
	cp := parseBody(t, "cp.async.ca.shared.global [%r1], [%rd1], 16;")[0].(*Instruction)
	if have := cp.AddressOperands(); !reflect.DeepEqual(have, []int{0, 1}) {
		t.Errorf("cp.async AddressOperands: have %v, want [0 1]", have)
	}
	if ret := NewInstruction("ret"); ret.Opcode != "ret" || ret.Mods != nil || ret.String() != "ret;" {
		t.Errorf("ret: have %+v %q", ret, ret.String())
	}
}

func TestOperandStrings(t *testing.T) {
	tests := []struct {
		o    Operand
		want string
	}{
		{&Reg{Name: "%tid.x"}, "%tid.x"},
		{&Sink{}, "_"},
		{&Int{Value: 42}, "42"},
		{&Int{Value: -42}, "-42"},
		{&Int{Value: 255, Hex: true}, "0xFF"},
		{&Int{Value: -16, Hex: true}, "-0x10"},
		{&Int{Value: -1, Hex: true, Unsigned: true}, "0xFFFFFFFFFFFFFFFFU"},
		{&Int{Value: -1, Unsigned: true}, "18446744073709551615U"},
		{Float32Imm(1), "0f3F800000"},
		{Float64Imm(-2), "0dC000000000000000"},
		{&Float{Bits: 0x3FF8000000000000, Decimal: true}, "1.5"},
		{&Float{Bits: 0x4059000000000000, Decimal: true}, "100.0"},
		{&String{Value: `a\"b`}, `"a\"b"`},
		{&Symbol{Name: "s", Generic: true, Offset: 8}, "generic(s)+8"},
		{&Symbol{Name: "s", Offset: -8}, "s+-8"},
		{&Address{Base: &Symbol{Name: "p"}}, "[p]"},
		{&Address{Offset: 16}, "[16]"},
		{&Bracket{Elems: []Operand{&Reg{Name: "%rd1"}, &Vector{Elems: []Operand{&Reg{Name: "%r1"}}}}}, "[%rd1, {%r1}]"},
		{&Paren{}, "()"},
		{&Pair{First: &Reg{Name: "%p1"}, Second: &Reg{Name: "%p2"}}, "%p1|%p2"},
		{&Not{X: &Reg{Name: "%p1"}}, "!%p1"},
		{&Expr{Op: "-", X: &Symbol{Name: "a"}, Y: &Symbol{Name: "b"}}, "a - b"},
		{&Expr{Op: "%", X: &Reg{Name: "%r1"}, Y: &Int{Value: 3}}, "%r1 % 3"},
		{&Expr{Op: "~", X: &Int{Value: 0}}, "~0"},
	}
	for _, tt := range tests {
		if have := tt.o.String(); have != tt.want {
			t.Errorf("%#v: have %q, want %q", tt.o, have, tt.want)
		}
	}
	if f := Float32Imm(1.5); f.Float64() != 1.5 {
		t.Errorf("Float32Imm(1.5).Float64() = %v", f.Float64())
	}
	if f := Float64Imm(-0.25); f.Float64() != -0.25 {
		t.Errorf("Float64Imm(-0.25).Float64() = %v", f.Float64())
	}
}

func TestParamLayout(t *testing.T) {
	src, err := os.ReadFile("../../testdata/kernels/vecadd.ptx")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		src  string // a kernel declaration, or "" for vecadd from testdata
		want []ParamSlot
	}{
		{"vecadd", "", []ParamSlot{
			{"vecadd_param_0", 8, 8, 0}, {"vecadd_param_1", 8, 8, 8}, {"vecadd_param_2", 8, 8, 16}, {"vecadd_param_3", 4, 4, 24},
		}},
		{"struct", ".entry k(.param .u32 a, .param .align 8 .b8 s[12], .param .u8 c, .param .f64 d);", []ParamSlot{
			{"a", 4, 4, 0}, {"s", 12, 8, 8}, {"c", 1, 1, 20}, {"d", 8, 8, 24},
		}},
		{"unaligned array", ".entry k(.param .u8 a, .param .b8 s[3], .param .u16 h);", []ParamSlot{
			{"a", 1, 1, 0}, {"s", 3, 1, 1}, {"h", 2, 2, 4},
		}},
		{"tensor map", ".entry k(.param .u32 n, .param .align 64 .b8 tmap[128], .param .u64 .ptr .global .align 16 p);", []ParamSlot{
			{"n", 4, 4, 0}, {"tmap", 128, 64, 64}, {"p", 8, 8, 192},
		}},
		{"vector", ".entry k(.param .u8 a, .param .v2 .f32 v);", []ParamSlot{
			{"a", 1, 1, 0}, {"v", 8, 8, 8},
		}},
		{"none", ".entry k();", []ParamSlot{}},
	}
	for _, tt := range tests {
		f := m.Function("vecadd")
		if tt.src != "" {
			f = parseModule(t, header+tt.src).Functions()[0]
		}
		have, err := f.ParamLayout()
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(have, tt.want) {
			t.Errorf("%s:\nhave %+v\nwant %+v", tt.name, have, tt.want)
		}
	}
	bad := parseModule(t, header+".entry k(.param .u32 a, .param .b8 s[]);").Functions()[0]
	if _, err := bad.ParamLayout(); !errors.Is(err, ErrInvalid) {
		t.Errorf("unsized parameter: have %v, want ErrInvalid", err)
	}
}

func TestInspect(t *testing.T) {
	m := parseModule(t, header+".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<3>;\n@%p1 ld.global.v2.u32 {%r1, %r2}, [%rd1+4];\n{\nst.global.u32 [%rd1], %r1;\n}\n}\n")
	var regs []string
	var kinds []string
	Inspect(m, func(n Node) bool {
		switch n := n.(type) {
		case *Reg:
			regs = append(regs, n.Name)
		case *Instruction:
			kinds = append(kinds, n.Opcode)
		}
		return true
	})
	if want := []string{"%p1", "%r1", "%r2", "%rd1", "%rd1", "%r1"}; !reflect.DeepEqual(regs, want) {
		t.Errorf("registers: have %v, want %v", regs, want)
	}
	if want := []string{"ld", "st"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("instructions: have %v, want %v", kinds, want)
	}
	// Returning false prunes.
	n := 0
	Inspect(m, func(nd Node) bool {
		n++
		_, isFunc := nd.(*Function)
		return !isFunc
	})
	if n != 2 { // the module and the function
		t.Errorf("pruned walk visited %d nodes, want 2", n)
	}
}

func TestRewrite(t *testing.T) {
	m := parseModule(t, header+".visible .entry k()\n{\n.reg .b64 %rd<3>;\nld.global.u32 %r1, [%rd1];\n{\nst.global.u32 [%rd2+4], %r1;\n}\ntrap;\nret;\n}\n")
	f := m.Function("k")
	// Insert a marker before every global access and delete trap.
	f.Body.Rewrite(func(s Stmt) []Stmt {
		in, ok := s.(*Instruction)
		if !ok {
			return []Stmt{s}
		}
		if in.Opcode == "trap" {
			return nil
		}
		if in.StateSpace() == SpaceGlobal {
			return []Stmt{NewInstruction("add.u64", &Reg{Name: "%rd0"}, &Reg{Name: "%rd0"}, &Int{Value: int64(in.AccessSize())}), s}
		}
		return []Stmt{s}
	})
	want := `.visible .entry k()
{
	.reg .b64 	%rd<3>;

	add.u64 	%rd0, %rd0, 4;
	ld.global.u32 	%r1, [%rd1];
	{
		add.u64 	%rd0, %rd0, 4;
		st.global.u32 	[%rd2+4], %r1;
	}
	ret;
}
`
	if have := m.String(); !strings.HasSuffix(have, want) {
		t.Errorf("have\n%s\nwant suffix\n%s", have, want)
	}
	checkRoundTrip(t, m.Bytes())
}

func TestNewReg(t *testing.T) {
	m := parseModule(t, header+".visible .entry k()\n{\n.reg .pred %p<3>;\n.reg .b64 %rd<5>;\n.reg .b64 %rd7;\n.reg .pred %pg<2>;\nret;\n}\n.extern .func f();\n")
	f := m.Function("k")
	r, err := f.NewReg("rd", TypeB64)
	if err != nil || r.Name != "%rd8" {
		t.Fatalf("NewReg(rd) = %v, %v; want %%rd8", r, err)
	}
	p, err := f.NewReg("p", TypePred)
	if err != nil || p.Name != "%p3" {
		t.Fatalf("NewReg(p) = %v, %v; want %%p3", p, err)
	}
	g, err := f.NewReg("guard", TypeB32)
	if err != nil || g.Name != "%guard0" {
		t.Fatalf("NewReg(guard) = %v, %v; want %%guard0", g, err)
	}
	wantDecls := []string{".reg .pred \t%p<3>;", ".reg .b64 \t%rd<5>;", ".reg .b64 \t%rd7;", ".reg .pred \t%pg<2>;",
		".reg .b64 \t%rd8;", ".reg .pred \t%p3;", ".reg .b32 \t%guard0;"}
	for i, w := range wantDecls {
		if have := f.Body.Stmts[i].(*Var).String(); have != w {
			t.Errorf("declaration %d: have %q, want %q", i, have, w)
		}
	}
	if _, err := m.Function("f").NewReg("r", TypeB32); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewReg on a declaration: have %v, want ErrInvalid", err)
	}
}

func TestDeclareGlobal(t *testing.T) {
	m := parseModule(t, header+".global .u32 a;\n.visible .entry k()\n{\nret;\n}\n")
	bounds := &Var{Linkage: LinkVisible, Space: SpaceGlobal, Align: 8, Type: TypeU64, Name: "__gpuos_window", Dims: []int{2}}
	if err := m.DeclareGlobal(bounds); err != nil {
		t.Fatal(err)
	}
	if m.Items[1] != bounds || m.Global("__gpuos_window") != bounds {
		t.Errorf("global not placed before the first function: %v", m.Items)
	}
	if err := m.DeclareGlobal(&Var{Space: SpaceGlobal, Type: TypeU32, Name: "a"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("duplicate global: have %v, want ErrInvalid", err)
	}
	if err := m.DeclareGlobal(&Var{Space: SpaceGlobal, Type: TypeU32, Name: "k"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("global named like a function: have %v, want ErrInvalid", err)
	}
	checkRoundTrip(t, m.Bytes())
}
