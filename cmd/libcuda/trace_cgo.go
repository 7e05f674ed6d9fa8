package main

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/shim"
)

// The full call trace (GPUOS_SHIM_TRACE=2): trace.c calls gpuosTraceCall
// after every call of an exported entry point, with the call's saved
// argument registers; =3 also logs each call as it starts (gpuosTraceEnter),
// for calls that never return.

// appMemory reads the application's memory through gpuos_safe_read, so that
// a bad pointer in a traced call never crashes the program.
type appMemory struct{}

func (appMemory) Read(addr uint64, p []byte) bool {
	if len(p) == 0 {
		return true
	}
	return C.gpuos_safe_read(C.uint64_t(addr), unsafe.Pointer(&p[0]), C.size_t(len(p))) != 0
}

// traceSymbol is what the trace needs of an entry point.
type traceSymbol struct {
	name, sig string
	known     bool // sig is its parameter list
}

var traceSymbols = sync.OnceValue(func() []traceSymbol {
	n := int(C.gpuos_symbol_count)
	table := unsafe.Slice((*C.struct_gpuos_symbol)(unsafe.Pointer(&C.gpuos_symbols)), n)
	out := make([]traceSymbol, n)
	for i, s := range table {
		out[i] = traceSymbol{name: C.GoString(s.name), known: s.sig != nil}
		if s.sig != nil {
			out[i].sig = C.GoString(s.sig)
		}
	}
	return out
})

func frameArgs(f *C.struct_gpuos_frame) *shim.CallArgs {
	var a shim.CallArgs
	for i := range a.GP {
		a.GP[i] = uint64(f.gp[i])
	}
	for i := range a.XMM {
		a.XMM[i] = uint64(f.xmm[i])
	}
	for i := range a.Stack {
		a.Stack[i] = uint64(f.stack[i])
	}
	return &a
}

func traceLine(f *C.struct_gpuos_frame, depth int32, enter bool, result uint64) {
	syms := traceSymbols()
	i := int(f.index)
	if i < 0 || i >= len(syms) {
		return
	}
	s := syms[i]
	b := make([]byte, 0, 160)
	b = append(b, 'T')
	b = appendInt(b, syscall.Gettid())
	b = append(b, ' ')
	if depth > 1 {
		b = append(b, strings.Repeat("  ", int(depth-1))...)
	}
	if enter {
		b = append(b, "-> "...)
		b = append(b, s.name...)
		b = append(b, " ..."...)
	} else {
		b = shim.FormatCall(b, s.name, s.sig, s.known, frameArgs(f), result, appMemory{})
	}
	drv.Log().Printf("%s", b)
}

func appendInt(b []byte, v int) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, d[i:]...)
}

//export gpuosTraceCall
func gpuosTraceCall(f *C.struct_gpuos_frame, result uint64, depth int32) {
	traceLine(f, depth, false, result)
}

//export gpuosTraceEnter
func gpuosTraceEnter(f *C.struct_gpuos_frame, depth int32) {
	traceLine(f, depth, true, 0)
}

// callTraced reports whether the tracing trampolines log every call, so that
// failures need not be logged again.
func callTraced() bool { return C.gpuos_call_trace != 0 }

// ---- export-table slots added for the runtime and cuBLASLt -------------------

//export gpuosETToolsCurrentContext
func gpuosETToolsCurrentContext(pctx *uint64) int32 {
	if pctx == nil {
		return invalidValue
	}
	h, r := drv.CtxGetCurrent(thread())
	if r == cu.CUDA_SUCCESS {
		*pctx = h
	}
	drv.TraceSlot("tools_tls slot 2", r, u64(unsafe.Pointer(pctx)), h)
	return int32(r)
}

//export gpuosETContextID
func gpuosETContextID(ctx uint64, id *uint64) int32 {
	if id == nil {
		return invalidValue
	}
	v, r := drv.CtxGetID(thread(), ctx)
	if r == cu.CUDA_SUCCESS {
		*id = v
	}
	drv.TraceSlot("unknown_21318c60 slot 4", r, ctx, u64(unsafe.Pointer(id)), v)
	return int32(r)
}

// gpuosETStreamOfContext is slot 51 of the 21318c60 table (cuBLASLt, before
// its first launch): the driver's object of a stream, NULL meaning a default
// stream (Driver.StreamOfContext).
//
//export gpuosETStreamOfContext
func gpuosETStreamOfContext(ctx, stream uint64, out *uint64, perThread uint32) int32 {
	if out == nil {
		return invalidValue
	}
	v, r := drv.StreamOfContext(thread(), ctx, stream, perThread != 0)
	if r == cu.CUDA_SUCCESS {
		*out = v
	}
	drv.TraceSlot("unknown_21318c60 slot 51", r, ctx, stream, u64(unsafe.Pointer(out)), uint64(perThread), v)
	return int32(r)
}

// gpuosETStreamID is slot 39 of the 21318c60 table: the id of a stream object
// slot 51 returned (Driver.StreamIDOfContext).
//
//export gpuosETStreamID
func gpuosETStreamID(ctx, stream uint64, id *uint64) int32 {
	if id == nil {
		return invalidValue
	}
	v, r := drv.StreamIDOfContext(thread(), ctx, stream)
	if r == cu.CUDA_SUCCESS {
		*id = v
	}
	drv.TraceSlot("unknown_21318c60 slot 39", r, ctx, stream, u64(unsafe.Pointer(id)), v)
	return int32(r)
}

// gpuosETLogMessage is slot 1 of the f8cff951 table, through which libraries
// report messages (a domain, a severity, a printf format and its va_list).
// The arguments are not trusted to be that: the message is logged with its
// format unexpanded, read only if it is readable memory.
//
//export gpuosETLogMessage
func gpuosETLogMessage(a, b, c, d uint64) uint64 {
	var buf []byte
	buf = append(buf, "unknown_f8cff951 slot 1 (message): "...)
	var args shim.CallArgs
	args.GP = [6]uint64{a, b, c, d}
	buf = shim.FormatCall(buf, "message", "s domain,i severity,s format,p args", true, &args, 0, appMemory{})
	line := strings.TrimSuffix(string(buf), " = CUDA_SUCCESS")
	if drv.Log().Tracing(shim.TraceTables) {
		drv.Log().Printf("%s", line)
	} else {
		drv.Log().Once(fmt.Sprintf("message:%#x", c), "%s", line)
	}
	return 0
}
