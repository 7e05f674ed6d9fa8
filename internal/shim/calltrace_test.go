package shim

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// fakeMemory is application memory for the call trace's tests: bytes at
// addresses, nothing readable elsewhere.
type fakeMemory map[uint64]byte

func (m fakeMemory) Read(addr uint64, p []byte) bool {
	for i := range p {
		b, ok := m[addr+uint64(i)]
		if !ok {
			return false
		}
		p[i] = b
	}
	return true
}

func (m fakeMemory) put(addr uint64, b []byte) {
	for i, v := range b {
		m[addr+uint64(i)] = v
	}
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func TestFormatCall(t *testing.T) {
	mem := fakeMemory{}
	mem.put(0x1000, le32(132))
	mem.put(0x2000, le64(0xc701000000000000))
	mem.put(0x3000, []byte("vecadd\x00"))
	mem.put(0x4000, []byte{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9})
	mem.put(0x5000, le64(0x3000))
	mem.put(0x6000, le32(math.Float32bits(1.5)))
	mem.put(0x7000, []byte(strings.Repeat("x", 200)))
	mem.put(0x8000, le64(1<<30))
	mem.put(0x9ffe, []byte("ab")) // a string that runs into unreadable memory

	tests := []struct {
		name, sig string
		known     bool
		args      CallArgs
		result    uint64
		want      string
	}{
		{"cuDeviceGetAttribute", "I pi,i attrib,i dev", true, CallArgs{GP: [6]uint64{0x1000, 16, 0}}, 0,
			"cuDeviceGetAttribute(pi=&132, attrib=16, dev=0) = CUDA_SUCCESS"},
		{"output not shown after a failure", "I pi,i attrib,i dev", true, CallArgs{GP: [6]uint64{0x1000, 100000, 0}}, 1,
			"output not shown after a failure(pi=0x1000, attrib=100000, dev=0) = CUDA_ERROR_INVALID_VALUE"},
		{"cuCtxGetCurrent", "X pctx", true, CallArgs{GP: [6]uint64{0x2000}}, 0,
			"cuCtxGetCurrent(pctx=&0xc701000000000000) = CUDA_SUCCESS"},
		{"cuCtxGetCurrent", "X pctx", true, CallArgs{}, 1, "cuCtxGetCurrent(pctx=NULL) = CUDA_ERROR_INVALID_VALUE"},
		{"cuModuleGetFunction", "X hfunc,x hmod,s name", true, CallArgs{GP: [6]uint64{0x2000, 0xc704000000000000, 0x3000}}, 500,
			`cuModuleGetFunction(hfunc=0x2000, hmod=0xc704000000000000, name="vecadd") = CUDA_ERROR_NOT_FOUND`},
		{"cuGetExportTable", "X ppExportTable,U pExportTableId", true, CallArgs{GP: [6]uint64{0x2000, 0x4000}}, 0,
			"cuGetExportTable(ppExportTable=&0xc701000000000000, pExportTableId=6bd5fb6c5bf4e74a8987d93912fd9df9) = CUDA_SUCCESS"},
		{"cuGetErrorString", "i error,T pStr", true, CallArgs{GP: [6]uint64{2, 0x5000}}, 0,
			`cuGetErrorString(error=2, pStr=&"vecadd") = CUDA_SUCCESS`},
		{"cuEventElapsedTime_v2", "F ms,x a,x b", true, CallArgs{GP: [6]uint64{0x6000, 1, 2}}, 0,
			"cuEventElapsedTime_v2(ms=&1.5, a=0x1, b=0x2) = CUDA_SUCCESS"},
		{"cuMemGetInfo_v2", "Z free,Z total", true, CallArgs{GP: [6]uint64{0x8000, 0x8000}}, 0,
			"cuMemGetInfo_v2(free=&1073741824, total=&1073741824) = CUDA_SUCCESS"},
		{"floats come from vector registers", "x h,f a,d b,i n", true,
			CallArgs{GP: [6]uint64{7, 3}, XMM: [8]uint64{uint64(math.Float32bits(0.25)), math.Float64bits(-2)}}, 0,
			"floats come from vector registers(h=0x7, a=0.25, b=-2, n=3) = CUDA_SUCCESS"},
		{"cuLaunchKernel", "x f,u gx,u gy,u gz,u bx,u by,u bz,u shared,x stream,p params,p extra", true,
			CallArgs{GP: [6]uint64{0xf, 40, 1, 1, 256, 1}, Stack: [6]uint64{1, 0, 0, 0x7ffc0000, 0}}, 0,
			"cuLaunchKernel(f=0xf, gx=40, gy=1, gz=1, bx=256, by=1, bz=1, shared=0, stream=0x0, params=0x7ffc0000, extra=0x0) = CUDA_SUCCESS"},
		{"cuCtxSynchronize", "", true, CallArgs{GP: [6]uint64{1, 2}}, 0, "cuCtxSynchronize() = CUDA_SUCCESS"},
		{"cuGraphCreate", "", false, CallArgs{GP: [6]uint64{0x10, 0, 3, 4, 5, 6}}, 801,
			"cuGraphCreate(0x10, 0x0, 0x3, 0x4, 0x5, 0x6) = CUDA_ERROR_NOT_SUPPORTED"},
		{"a negative int and an unknown result", "i v", true, CallArgs{GP: [6]uint64{0xffffffff}}, 12345,
			"a negative int and an unknown result(v=-1) = 0x3039"},
		{"long string", "s s", true, CallArgs{GP: [6]uint64{0x7000}}, 0,
			`long string(s="` + strings.Repeat("x", maxTraceString) + `"...) = CUDA_SUCCESS`},
		{"unreadable string", "s s", true, CallArgs{GP: [6]uint64{0xdead}}, 0, "unreadable string(s=?0xdead) = CUDA_SUCCESS"},
		{"string into unreadable memory", "s s", true, CallArgs{GP: [6]uint64{0x9ffe}}, 0,
			`string into unreadable memory(s="ab"...) = CUDA_SUCCESS`},
		{"unreadable output", "I p", true, CallArgs{GP: [6]uint64{0xdead}}, 0, "unreadable output(p=&?) = CUDA_SUCCESS"},
		{"malformed parameter", "bogus,,I pi", true, CallArgs{GP: [6]uint64{5, 0x1000}}, 0,
			"malformed parameter(bogus=0x5, pi=&132) = CUDA_SUCCESS"},
	}
	for _, tt := range tests {
		a := tt.args
		if got := string(FormatCall(nil, tt.name, tt.sig, tt.known, &a, tt.result, mem)); got != tt.want {
			t.Errorf("have %s\nwant %s", got, tt.want)
		}
	}
}

// FormatCall shows whatever parameter list and registers it is given
// without panicking or reading memory it was not allowed to.
func FuzzFormatCall(f *testing.F) {
	f.Add("I pi,i attrib,i dev", uint64(0x1000), uint64(16), uint64(0))
	f.Add("x f,u gx,u gy,u gz,u bx,u by,u bz,u shared,x stream,p params,p extra", uint64(1), uint64(2), uint64(0))
	f.Add("s a,C b,T c,U d,V e,F g,Z h,X i,f j,d k,z l", uint64(0x3000), uint64(0x5000), uint64(1))
	f.Add(",,, ,x", uint64(0), uint64(0), uint64(0))
	mem := fakeMemory{}
	mem.put(0x1000, le64(0x5000))
	mem.put(0x3000, []byte("abc\x00"))
	mem.put(0x5000, le64(0x3000))
	f.Fuzz(func(t *testing.T, sig string, a, b, r uint64) {
		args := CallArgs{GP: [6]uint64{a, b, a, b, a, b}, XMM: [8]uint64{a, b}, Stack: [6]uint64{b, a}}
		out := FormatCall(nil, "fn", sig, true, &args, r, mem)
		if !strings.HasPrefix(string(out), "fn(") {
			t.Fatalf("%q", out)
		}
	})
}
