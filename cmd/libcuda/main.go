// Command libcuda is gpuos's drop-in libcuda.so.1: the CUDA driver API over the
// gpuos protocol, so that unmodified CUDA programs — driver-API programs,
// nvcc-built runtime programs, CuPy, PyTorch — run through the daemon.
//
//	go build -buildmode=c-shared -o libcuda.so.1 ./cmd/libcuda
//
// It exports every function the real driver (580, CUDA 13.0) exports, each
// as a generated trampoline (zlibcuda.c) that jumps through an entry table.
// The entry points it implements are the Go functions exported here as
// gpuos_<name> (gpuos_cuMemAlloc_v2 implements cuMemAlloc_v2); each converts
// its C arguments and calls internal/shim, which owns the semantics. Every
// other entry point's table entry is a generated stub that returns
// CUDA_ERROR_NOT_SUPPORTED and reports its name once. cuGetProcAddress hands out these same functions, including
// itself; cuGetExportTable serves the private tables of internal/shim's list.
//
// The environment: GPUOS_SOCKET, GPUOS_TOKEN and GPUOS_TENANT name the daemon
// and the credentials (cuInit connects); GPUOS_SHIM_LOG sends reports to a file
// instead of stderr; GPUOS_SHIM_TRACE=1 logs export-table lookups and every
// slot call with its arguments, =2 also every call of every exported entry
// point with its arguments and result (trace.c), =3 also each call as it
// starts; GPUOS_SHIM_DENY_TABLES refuses the export tables it names.
//
// Each OS thread's current context is kept under a token from C thread-local
// storage (runtime.c). The package holds the process's one shim.Driver.
package main

/*
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/shim"
)

//go:generate go run ./internal/gen

func main() {}

// drv is the process's driver.
var drv = shim.New(shim.Config{CLSDestructor: callCLSDestructor})

// symbols maps every exported function's name to its address, for
// cuGetProcAddress.
var symbols = sync.OnceValue(func() map[string]unsafe.Pointer {
	n := int(C.gpuos_symbol_count)
	table := unsafe.Slice((*C.struct_gpuos_symbol)(unsafe.Pointer(&C.gpuos_symbols)), n)
	m := make(map[string]unsafe.Pointer, n)
	for _, s := range table {
		m[C.GoString(s.name)] = s.fn
	}
	return m
})

func init() {
	if drv.Log().Tracing(shim.TraceTables) {
		C.gpuos_trace_tables = 1
	}
}

// thread is the calling OS thread's token.
func thread() shim.Thread { return shim.Thread(C.gpuos_thread()) }

const (
	success      = int32(cu.CUDA_SUCCESS)
	invalidValue = int32(cu.CUDA_ERROR_INVALID_VALUE)
)

// ret returns r to C, logging failures when tracing calls (unless the call
// trace logs every call anyway).
func ret(name string, r shim.Result) int32 {
	if r != cu.CUDA_SUCCESS && drv.Log().Tracing(shim.TraceCalls) && !callTraced() {
		drv.Log().Printf("%s = %s", name, r.Name())
	}
	return int32(r)
}

// cstrings interns the C strings handed to the application (error names,
// kernel names): they must stay valid for the life of the process.
var cstrings sync.Map // string -> *C.char

func cstring(s string) *C.char {
	if v, ok := cstrings.Load(s); ok {
		return v.(*C.char)
	}
	v, _ := cstrings.LoadOrStore(s, C.CString(s))
	return v.(*C.char)
}

// goString reads a name the application passed, refusing NULL and absurd
// lengths.
func goString(p *C.char) (string, bool) {
	if p == nil {
		return "", false
	}
	n := C.strnlen(p, 1<<16)
	if n >= 1<<16 {
		return "", false
	}
	return C.GoStringN(p, C.int(n)), true
}

// putString copies s into the C buffer buf of n bytes, NUL-terminated and
// truncated as needed.
func putString(buf *C.char, n int32, s string) bool {
	if buf == nil || n <= 0 {
		return false
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), n)
	k := copy(b[:n-1], s)
	b[k] = 0
	return true
}

func callCLSDestructor(fn, ctx, key, value uintptr) {
	C.gpuos_call_cls_dtor(ptr(fn), C.uint64_t(ctx), ptr(key), ptr(value))
}

// ptr turns an address of the application back into a C pointer.
func ptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

//export gpuosStubCalled
func gpuosStubCalled(index int32) {
	syms := cu.Symbols()
	if index >= 0 && int(index) < len(syms) {
		drv.Log().Unsupported(syms[index].Name)
	}
}
