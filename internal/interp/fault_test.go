package interp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/ptx"
)

// faultKernel is a kernel "t" whose body is given, run on 2 blocks of 64
// threads with a pointer to a 256-byte buffer.
func runFault(t *testing.T, body string, mutate func(l *Launch)) (*Fault, uint64) {
	t.Helper()
	src := instHeader + `.visible .entry t(.param .u64 out)
{` + instRegs + `
	.shared .align 4 .b8 s[64];
	.local .align 4 .b8 l[16];
	ld.param.u64 %io, [out];
	mov.u32 %r0, %tid.x;
	mov.u32 %r1, %ctaid.x;
` + body + `
	ret;
}`
	p := compileSrc(t, src)
	k := kernel(t, p, "t")
	mem := newDevMem()
	oa, _ := mem.alloc(256)
	l := Launch{Grid: dim(2, 1, 1), Block: dim(64, 1, 1), Params: packParams(t, k, oa), Global: mem, Workers: 1}
	if mutate != nil {
		mutate(&l)
	}
	_, err := k.Run(context.Background(), l)
	if err == nil {
		t.Fatal("kernel ran without a fault")
	}
	if !errors.Is(err, v1.ErrLaunchFailed) || !errors.Is(err, ErrLaunchFailed) || v1.CodeOf(err) != v1.CodeInternal && v1.CodeOf(err) != v1.CodeLaunchFailed {
		t.Errorf("error %v does not match ErrLaunchFailed", err)
	}
	var f *Fault
	if !errors.As(err, &f) {
		t.Fatalf("error %T is not a *Fault: %v", err, err)
	}
	return f, oa
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		kind   FaultKind
		block  [3]uint32
		thread [3]uint32
		line   int // PTX line of the faulting instruction, 0 to skip
		addr   func(out uint64) uint64
	}{
		{name: "unmapped global read", body: `
	setp.ne.u32 %p1, %r0, 5;
	@%p1 bra OK;
	ld.global.u32 %r2, [%io+4096];
OK:`, kind: FaultIllegalAddress, thread: dim(5, 0, 0), line: 22, addr: func(o uint64) uint64 { return o + 4096 }},
		{name: "global write past the end", body: `
	setp.ne.u32 %p1, %r1, 1;
	@%p1 bra OK;
	st.global.u32 [%io+256], %r0;
OK:`, kind: FaultIllegalAddress, block: dim(1, 0, 0), addr: func(o uint64) uint64 { return o + 256 }},
		{name: "null pointer", body: `
	mov.u64 %rd1, 0;
	ld.u32 %r2, [%rd1];`, kind: FaultIllegalAddress, addr: func(uint64) uint64 { return 0 }},
		{name: "misaligned", body: `
	ld.global.u32 %r2, [%io+2];`, kind: FaultMisaligned, addr: func(o uint64) uint64 { return o + 2 }},
		{name: "misaligned vector", body: `
	ld.global.v2.u32 {%r2, %r3}, [%io+4];`, kind: FaultMisaligned},
		{name: "shared out of bounds", body: `
	st.shared.u32 [s+64], %r0;`, kind: FaultIllegalAddress, addr: func(uint64) uint64 { return 64 }},
		{name: "shared through a generic pointer", body: `
	mov.u64 %rd1, s;
	cvta.shared.u64 %rd2, %rd1;
	ld.u32 %r2, [%rd2+1024];`, kind: FaultIllegalAddress},
		{name: "local out of bounds", body: `
	mov.u64 %rd1, l;
	ld.local.u32 %r2, [%rd1+16];`, kind: FaultIllegalAddress},
		{name: "misaligned atomic", body: `
	atom.global.add.u32 %r2, [%io+1], 1;`, kind: FaultMisaligned},
		{name: "atomic on unmapped memory", body: `
	atom.global.add.u64 %rd2, [%io+8192], 1;`, kind: FaultIllegalAddress},
		{name: "trap", body: `
	setp.eq.u32 %p1, %r0, 9;
	@%p1 trap;`, kind: FaultTrap, thread: dim(9, 0, 0), line: 21},
		{name: "brkpt", body: `
	brkpt;`, kind: FaultTrap},
		{name: "barrier deadlock: two barriers", body: `
	setp.lt.u32 %p1, %r0, 32;
	@%p1 bra A;
	bar.sync 1;
	bra.uni DONE;
A:
	bar.sync 0;
DONE:`, kind: FaultDeadlock},
		{name: "barrier deadlock: count never reached", body: `
	setp.lt.u32 %p1, %r0, 32;
	@%p1 exit;
	bar.sync 2, 64;`, kind: FaultDeadlock, thread: dim(32, 0, 0)},
		{name: "warp collective waits for a lane at a barrier", body: `
	setp.eq.u32 %p1, %r0, 0;
	@%p1 bra A;
	shfl.sync.idx.b32 %r2, %r0, 0, 0x1f, 0xffffffff;
	bra.uni DONE;
A:
	bar.sync 0;
DONE:`, kind: FaultDeadlock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, out := runFault(t, tt.body, nil)
			if f.Kind != tt.kind {
				t.Fatalf("kind %v, want %v: %v", f.Kind, tt.kind, f)
			}
			if f.Kernel != "t" {
				t.Errorf("kernel %q", f.Kernel)
			}
			if f.Block != tt.block && tt.kind != FaultDeadlock {
				t.Errorf("block %v, want %v", f.Block, tt.block)
			}
			if tt.thread != ([3]uint32{}) && f.Thread != tt.thread {
				t.Errorf("thread %v, want %v", f.Thread, tt.thread)
			}
			if tt.line != 0 && f.Line != tt.line {
				t.Errorf("line %d, want %d", f.Line, tt.line)
			}
			if tt.addr != nil && f.Addr != tt.addr(out) {
				t.Errorf("addr %#x, want %#x", f.Addr, tt.addr(out))
			}
			if !strings.Contains(f.Error(), tt.kind.String()) {
				t.Errorf("message %q does not name %v", f.Error(), tt.kind)
			}
		})
	}
}

func TestWatchdog(t *testing.T) {
	f, _ := runFault(t, `
LOOP:
	add.u32 %r2, %r2, 1;
	bra.uni LOOP;`, func(l *Launch) { l.MaxInstructions = 1_000_000; l.Workers = 2 })
	if f.Kind != FaultWatchdog {
		t.Fatalf("kind %v: %v", f.Kind, f)
	}
}

func TestCancel(t *testing.T) {
	src := instHeader + `.visible .entry t()
{
	.reg .b32 %r;
LOOP:
	add.u32 %r, %r, 1;
	bra.uni LOOP;
}`
	k := kernel(t, compileSrc(t, src), "t")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := k.Run(ctx, Launch{Grid: dim(4, 1, 1), Block: dim(32, 1, 1), Global: newDevMem()})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != FaultCanceled || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a canceled fault wrapping the deadline", err)
	}
}

func TestStackOverflow(t *testing.T) {
	src := instHeader + `
.func r()
{
	call.uni r, ();
	ret;
}
.visible .entry t()
{
	call.uni r, ();
	ret;
}`
	k := kernel(t, compileSrc(t, src), "t")
	_, err := k.Run(context.Background(), Launch{Grid: dim(1, 1, 1), Block: dim(1, 1, 1), Global: newDevMem()})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != FaultStackOverflow {
		t.Fatalf("err = %v, want a stack overflow", err)
	}
}

func TestInvalidLaunch(t *testing.T) {
	src := instHeader + `.visible .entry t(.param .u64 p) .maxntid 128, 1, 1
{
	.reg .b32 %r;
	.shared .align 4 .b8 s[1024];
	ret;
}`
	k := kernel(t, compileSrc(t, src), "t")
	if a := k.Attributes(); a.MaxThreadsPerBlock != 128 || a.StaticShared != 1024 {
		t.Errorf("attributes %+v", a)
	}
	ok := Launch{Grid: dim(1, 1, 1), Block: dim(128, 1, 1), Params: make([]byte, 8), Global: newDevMem()}
	if _, err := k.Run(context.Background(), ok); err != nil {
		t.Fatalf("valid launch: %v", err)
	}
	for name, mutate := range map[string]func(l *Launch){
		"zero grid":             func(l *Launch) { l.Grid[1] = 0 },
		"zero block":            func(l *Launch) { l.Block[2] = 0 },
		"block above maxntid":   func(l *Launch) { l.Block = dim(64, 4, 1) },
		"grid y too large":      func(l *Launch) { l.Grid[1] = 70000 },
		"too much shared":       func(l *Launch) { l.DynamicShared = 300 << 10 },
		"short parameters":      func(l *Launch) { l.Params = l.Params[:4] },
		"no memory":             func(l *Launch) { l.Global = nil },
		"block z above 64":      func(l *Launch) { l.Block = dim(1, 1, 65) },
		"block x above 1024":    func(l *Launch) { l.Block = dim(1025, 1, 1) },
		"grid x above 2^31 - 1": func(l *Launch) { l.Grid[0] = 1 << 31 },
	} {
		l := ok
		mutate(&l)
		_, err := k.Run(context.Background(), l)
		var f *Fault
		if !errors.As(err, &f) || f.Kind != FaultInvalidLaunch || !errors.Is(err, v1.ErrLaunchFailed) {
			t.Errorf("%s: err = %v, want an invalid launch", name, err)
		}
	}
}

func TestUnboundGlobals(t *testing.T) {
	src := instHeader + `.global .align 4 .u32 g[4] = {1, 2, 3, 4};
.global .align 8 .u64 gp = generic(g)+8;
.visible .entry t()
{
	ret;
}`
	p := compileSrc(t, src)
	k := kernel(t, p, "t")
	_, err := k.Run(context.Background(), Launch{Grid: dim(1, 1, 1), Block: dim(1, 1, 1), Global: newDevMem()})
	if !errors.Is(err, ErrUnbound) || !errors.Is(err, v1.ErrInvalidArgument) {
		t.Fatalf("err = %v, want ErrUnbound", err)
	}
	gs := p.Globals()
	if len(gs) != 2 || gs[0].Name != "g" || gs[0].Size != 16 || gs[0].Init[4] != 2 || gs[1].Relocs[0] != (Reloc{Offset: 0, Symbol: "g", Addend: 8}) {
		t.Fatalf("globals %+v", gs)
	}
	if err := p.Bind(map[string]uint64{"g": devBase}); err == nil {
		t.Error("Bind with a missing global succeeded")
	}
	if err := p.Bind(map[string]uint64{"g": devBase + 2, "gp": devBase + 64}); err == nil {
		t.Error("Bind with a misaligned address succeeded")
	}
	if err := p.Bind(map[string]uint64{"g": devBase, "gp": devBase + 64, "x": 1}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Bind of an unknown name: %v", err)
	}
	if _, err := p.Kernel("nope"); !errors.Is(err, v1.ErrNotFound) {
		t.Errorf("Kernel(nope): %v", err)
	}
}

// Constructs the interpreter does not implement fail at load time with a
// typed error naming them and their line.
func TestUnsupported(t *testing.T) {
	tests := []struct{ name, body, mention string }{
		{"texture", "tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [tx, {%r1}];", "tex"},
		{"mma", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,%r4}, {%r5,%r6}, {%f5,%f6,%f7,%f8};", "mma"},
		{"f16 transcendental", "ex2.approx.f16 %rs1, %rs2;", "ex2.approx.f16"},
		{"packed f16 compare", "setp.lt.f16x2 %p1|%p2, %r1, %r2;", "setp.lt.f16x2"},
		{"cvta.param", "cvta.param.u64 %rd1, %rd2;", "cvta.param"},
		{"indirect call", "call %rd1, ();", "indirect call"},
		{"brx.idx", "brx.idx %r1, T;", "brx.idx"},
		{"unknown modifier", "add.u32.foo %r1, %r2, %r3;", ".foo"},
		{"cp.async.bulk", "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2];", "cp.async.bulk"},
		{"shfl without sync", "shfl.idx.b32 %r1, %r2, 0, 0x1f;", "shfl"},
		{"vector atomic", "atom.global.v2.f32.add {%f1, %f2}, [%rd1], {%f3, %f4};", ".v2"},
		{"red.add.noftz.f16", "red.global.add.noftz.f16 [%rd1], %rs1;", "red"},
		{"tf32 conversion", "cvt.rna.tf32.f32 %r1, %f1;", "cvt"},
		{"alloca", "alloca.u64 %rd1, 16;", "alloca"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := instHeader + ".visible .entry t()\n{\n" + instRegs + "\t" + tt.body + "\n\tret;\n}\n"
			m, err := ptx.Parse([]byte(src))
			if err != nil {
				t.Skipf("the parser rejects it: %v", err)
			}
			_, err = Compile(m)
			if !errors.Is(err, ErrUnsupported) || !errors.Is(err, v1.ErrUnsupported) {
				t.Fatalf("err = %v, want ErrUnsupported", err)
			}
			if !strings.Contains(err.Error(), "line 14") || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("message %q should name %q and line 14", err, tt.mention)
			}
		})
	}
	for name, src := range map[string]string{
		"32-bit addressing": ".version 9.0\n.target sm_90\n.address_size 32\n.visible .entry t() { ret; }",
		"extern global":     instHeader + ".extern .global .u32 g;\n.visible .entry t() { ret; }",
		"clusters":          instHeader + ".visible .entry t() .reqnctapercluster 2, 1, 1 { ret; }",
		"undefined callee":  instHeader + ".func f();\n.visible .entry t() { call.uni f, (); ret; }",
	} {
		m, err := ptx.Parse([]byte(src))
		if err != nil {
			t.Fatalf("%s: parse: %v", name, err)
		}
		if _, err := Compile(m); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: err = %v, want ErrUnsupported", name, err)
		}
	}
}

func TestInvalid(t *testing.T) {
	for name, body := range map[string]string{
		"undeclared register": "add.u32 %zz1, %r1, %r2;",
		"undefined label":     "bra NOWHERE;",
		"wrong operand count": "add.u32 %r1, %r2;",
		"missing type":        "add %r1, %r2, %r3;",
		"missing rounding":    "fma.f32 %f1, %f2, %f3, %f4;",
		"param overrun":       "ld.param.u64 %rd1, [p+4];",
	} {
		src := instHeader + ".visible .entry t(.param .u32 p)\n{\n" + instRegs + "\t" + body + "\n\tret;\n}\n"
		m, err := ptx.Parse([]byte(src))
		if err != nil {
			t.Fatalf("%s: parse: %v", name, err)
		}
		_, err = Compile(m)
		if err == nil || v1.CodeOf(err) != v1.CodeInvalidArgument {
			t.Errorf("%s: err = %v, want an invalid-argument error", name, err)
		}
	}
}

// assert() in device code compiles to a call of the external __assertfail:
// the kernel traps and the fault carries the message.
func TestDeviceAssert(t *testing.T) {
	src := instHeader + `
.extern .func __assertfail
(
	.param .b64 __assertfail_param_0,
	.param .b64 __assertfail_param_1,
	.param .b32 __assertfail_param_2,
	.param .b64 __assertfail_param_3,
	.param .b64 __assertfail_param_4
)
;
.global .align 1 .b8 $str[6] = {120, 32, 62, 32, 48, 0};
.global .align 1 .b8 $str$1[5] = {97, 46, 99, 117, 0};
.global .align 1 .b8 __unnamed_1[2] = {107, 0};
.visible .entry k(.param .u32 x)
{
	.reg .pred %p;
	.reg .b32 %r;
	.reg .b64 %rd<4>;
	ld.param.u32 %r, [x];
	setp.gt.s32 %p, %r, 0;
	@%p bra OK;
	mov.u64 %rd1, $str;
	cvta.global.u64 %rd2, %rd1;
	mov.u64 %rd3, $str$1;
	{ // callseq 0, 0
	.param .b64 param0;
	st.param.b64 [param0], %rd2;
	.param .b64 param1;
	st.param.b64 [param1], %rd3;
	.param .b32 param2;
	st.param.b32 [param2], 7;
	.param .b64 param3;
	mov.u64 %rd1, __unnamed_1;
	st.param.b64 [param3], %rd1;
	.param .b64 param4;
	st.param.b64 [param4], 1;
	call.uni __assertfail, (param0, param1, param2, param3, param4);
	} // callseq 0
	trap;
OK:
	ret;
}`
	p := compileSrc(t, src)
	mem := newDevMem()
	if err := bindGlobals(p, mem); err != nil {
		t.Fatal(err)
	}
	k := kernel(t, p, "k")
	if _, err := k.Run(context.Background(), Launch{Grid: dim(1, 1, 1), Block: dim(2, 1, 1), Params: packParams(t, k, 5), Global: mem}); err != nil {
		t.Fatalf("passing assert: %v", err)
	}
	_, err := k.Run(context.Background(), Launch{Grid: dim(1, 1, 1), Block: dim(2, 1, 1), Params: packParams(t, k, 0), Global: mem})
	var f *Fault
	if !errors.As(err, &f) || f.Kind != FaultTrap {
		t.Fatalf("err = %v, want a trap", err)
	}
	if want := `assertion "x > 0" failed at a.cu:7 in k`; f.Detail != want {
		t.Errorf("detail %q, want %q", f.Detail, want)
	}
}
