package main

/*
#include "shim.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"time"
	"unsafe"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/shim"
)

// Errors, entry points and the private export tables.

//export gpuos_cuGetErrorName
func gpuos_cuGetErrorName(r uint32, out **C.char) int32 {
	if out == nil {
		return invalidValue
	}
	name := cu.CUresult(r).Name()
	if name == "" {
		*out = nil
		return invalidValue
	}
	*out = cstring(name)
	return success
}

//export gpuos_cuGetErrorString
func gpuos_cuGetErrorString(r uint32, out **C.char) int32 {
	if out == nil {
		return invalidValue
	}
	if cu.CUresult(r).Name() == "" {
		*out = nil
		return invalidValue
	}
	*out = cstring(cu.CUresult(r).Description())
	return success
}

// procAddress answers cuGetProcAddress with this library's own functions.
func procAddress(symbol *C.char, pfn *unsafe.Pointer, version int32, flags uint64, status *uint32, v2 bool) int32 {
	name, ok := goString(symbol)
	if !ok || pfn == nil {
		return invalidValue
	}
	*pfn = nil
	sym, st, r := drv.ProcAddress(name, int(version), flags)
	if status != nil && r == cu.CUDA_SUCCESS {
		*status = uint32(st)
	}
	if r != cu.CUDA_SUCCESS {
		return ret("cuGetProcAddress", r)
	}
	if st != cu.CU_GET_PROC_ADDRESS_SUCCESS {
		if !v2 {
			return int32(cu.CUDA_ERROR_NOT_FOUND)
		}
		return success // the driver's answer: success, no function, and the status
	}
	fn, ok := symbols()[sym]
	if !ok {
		return ret("cuGetProcAddress", cu.CUDA_ERROR_UNKNOWN) // the tables disagree: a bug
	}
	*pfn = fn
	return success
}

//export gpuos_cuGetProcAddress
func gpuos_cuGetProcAddress(symbol *C.char, pfn *unsafe.Pointer, version int32, flags uint64) int32 {
	return procAddress(symbol, pfn, version, flags, nil, false)
}

//export gpuos_cuGetProcAddress_v2
func gpuos_cuGetProcAddress_v2(symbol *C.char, pfn *unsafe.Pointer, version int32, flags uint64, status *uint32) int32 {
	return procAddress(symbol, pfn, version, flags, status, true)
}

//export gpuos_cuGetExportTable
func gpuos_cuGetExportTable(table *unsafe.Pointer, id unsafe.Pointer) int32 {
	if table == nil || id == nil {
		return invalidValue
	}
	var u [16]byte
	copy(u[:], unsafe.Slice((*byte)(id), 16))
	i := drv.ExportTableIndex(u)
	if i < 0 {
		*table = nil
		if shim.Denied(u) {
			return int32(shim.RefusedTableResult())
		}
		return invalidValue
	}
	*table = unsafe.Pointer(C.gpuos_export_table(C.int(i)))
	return success
}

// ---- export-table slots (see internal/shim/exporttable.go) ------------------------

//export gpuosETStub
func gpuosETStub(table, slot int32, a, b, c, d, e, f uint64) uint64 {
	return drv.ExportSlotStub(int(table), int(slot), [6]uint64{a, b, c, d, e, f})
}

//export gpuosTraceC
func gpuosTraceC(what *C.char, a, b uint64) {
	drv.Log().Printf("export %s(%#x %#x)", C.GoString(what), a, b)
}

func u64(p unsafe.Pointer) uint64 { return uint64(uintptr(p)) }

func moduleOut(name string, module *uint64, image unsafe.Pointer, args ...uint64) int32 {
	var r shim.Result
	var h uint64
	if module == nil || image == nil {
		r = cu.CUDA_ERROR_INVALID_VALUE
	} else {
		h, r = drv.ModuleFromImage(thread(), uintptr(image))
		if r == cu.CUDA_SUCCESS {
			*module = h
		}
	}
	drv.TraceSlot(name, r, append(args, h)...)
	return ret(name, r)
}

//export gpuosETModuleFromWrapper
func gpuosETModuleFromWrapper(module *uint64, wrapper unsafe.Pointer) int32 {
	return moduleOut("cudart_interface slot 1", module, wrapper, u64(unsafe.Pointer(module)), u64(wrapper))
}

//export gpuosETModuleFromWrapperEx
func gpuosETModuleFromWrapperEx(module *uint64, wrapper, a3, a4 unsafe.Pointer, a5 uint32) int32 {
	return moduleOut("cudart_interface slot 6", module, wrapper, u64(unsafe.Pointer(module)), u64(wrapper), u64(a3), u64(a4), uint64(a5))
}

//export gpuosETModuleFromFatbin
func gpuosETModuleFromFatbin(header unsafe.Pointer, module *uint64, a3, a4 unsafe.Pointer, a5 uint32) int32 {
	return moduleOut("cudart_interface slot 8", module, header, u64(header), u64(unsafe.Pointer(module)), u64(a3), u64(a4), uint64(a5))
}

//export gpuosETPrimaryContext
func gpuosETPrimaryContext(pctx *uint64, dev int32) int32 {
	var h uint64
	r := shim.Result(cu.CUDA_ERROR_INVALID_VALUE)
	if pctx != nil {
		if h, r = drv.PrimaryCtx(dev); r == cu.CUDA_SUCCESS {
			*pctx = h
		}
	}
	drv.TraceSlot("cudart_interface slot 2", r, u64(unsafe.Pointer(pctx)), uint64(dev), h)
	return ret("cudart_interface slot 2", r)
}

//export gpuosETCudartFn7
func gpuosETCudartFn7(a uint64) int32 {
	drv.TraceSlot("cudart_interface slot 7", cu.CUDA_SUCCESS, a)
	return success
}

//export gpuosETLoadCompilers
func gpuosETLoadCompilers() int32 {
	drv.TraceSlot("cudart_interface slot 12", cu.CUDA_SUCCESS)
	return success
}

//export gpuosETCLSPut
func gpuosETCLSPut(ctx uint64, key, value, dtor unsafe.Pointer) int32 {
	r := drv.CLSPut(thread(), ctx, uintptr(key), uintptr(value), uintptr(dtor))
	drv.TraceSlot("context_local_storage slot 0", r, ctx, u64(key), u64(value), u64(dtor))
	return int32(r)
}

//export gpuosETCLSDelete
func gpuosETCLSDelete(ctx uint64, key unsafe.Pointer) int32 {
	r := drv.CLSDelete(thread(), ctx, uintptr(key))
	drv.TraceSlot("context_local_storage slot 1", r, ctx, u64(key))
	return int32(r)
}

//export gpuosETCLSGet
func gpuosETCLSGet(value *unsafe.Pointer, ctx uint64, key unsafe.Pointer) int32 {
	if value == nil {
		return invalidValue
	}
	v, r := drv.CLSGet(thread(), ctx, uintptr(key))
	if r == cu.CUDA_SUCCESS {
		*value = ptr(v)
	}
	drv.TraceSlot("context_local_storage slot 2", r, ctx, u64(key), uint64(v))
	return int32(r)
}

//export gpuosETContextCheck
func gpuosETContextCheck(ctx uint64, r1 *uint32, r2 *unsafe.Pointer) int32 {
	if r1 != nil {
		*r1 = 0
	}
	drv.TraceSlot("context_checks slot 2", cu.CUDA_SUCCESS, ctx, u64(unsafe.Pointer(r1)), u64(unsafe.Pointer(r2)))
	return success
}

//export gpuosETIntegrityCheck
func gpuosETIntegrityCheck(version uint32, secs uint64, out *uint64) int32 {
	if out == nil {
		return invalidValue
	}
	cudart := C.gpuos_export_table(C.int(tableIndex("cudart_interface")))
	check := C.gpuos_export_table(C.int(tableIndex("integrity_check")))
	in := shim.IntegrityInput{
		DriverVersion: uint32(drv.DriverVersion()),
		PID:           uint32(os.Getpid()),
		TID:           uint32(C.gpuos_pthread_self()),
		CudartTable:   uint64(uintptr(unsafe.Pointer(cudart))),
		CheckTable:    uint64(uintptr(unsafe.Pointer(check))),
		CheckFunc:     uint64(uintptr(unsafe.Slice(check, 2)[1])),
		Devices:       drv.IntegrityDevices(),
	}
	v := shim.IntegrityValue(version, secs, in)
	o := unsafe.Slice(out, 2)
	o[0], o[1] = v[0], v[1]
	drv.TraceSlot("integrity_check slot 1", cu.CUDA_SUCCESS, uint64(version), secs, v[0], v[1])
	if drv.Log().Tracing(shim.TraceTables) && version%10 >= 2 {
		drv.Log().Printf("integrity check inputs: driver version %d, pid %d, thread %#x, tables %#x %#x, function %#x, devices %s; runtime clock %v, ours %v",
			in.DriverVersion, in.PID, in.TID, in.CudartTable, in.CheckTable, in.CheckFunc, devicesString(in.Devices),
			time.Unix(int64(secs), 0).UTC(), time.Now().UTC().Truncate(time.Second))
	}
	return success
}

func devicesString(ds []shim.IntegrityDevice) string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%x@%04x:%02x:%02x", d.UUID, d.PCIDomain, d.PCIBus, d.PCIDev)
	}
	return b.String()
}

// gpuos_shim_integrity computes the integrity value from inputs given
// explicitly, for testdata/cudart/exporttables.c: on a machine with the real
// driver it compares the driver's answer with this one for the same inputs.
// devices points at ndev records of the runtime's layout (a 16-byte UUID,
// then PCI domain, bus and device as 32-bit integers).
//
//export gpuos_shim_integrity
func gpuos_shim_integrity(version uint32, secs uint64, driverVersion, pid, tid uint32, cudart, check, fn uint64,
	devices unsafe.Pointer, ndev int32, out *uint64) int32 {
	if out == nil || ndev < 0 || ndev > 64 || (ndev > 0 && devices == nil) {
		return invalidValue
	}
	in := shim.IntegrityInput{DriverVersion: driverVersion, PID: pid, TID: tid, CudartTable: cudart, CheckTable: check, CheckFunc: fn}
	raw := unsafe.Slice((*byte)(devices), 28*int(ndev))
	for i := 0; i < int(ndev); i++ {
		r := raw[28*i:]
		var d shim.IntegrityDevice
		copy(d.UUID[:], r[:16])
		d.PCIDomain = int32(binary.LittleEndian.Uint32(r[16:]))
		d.PCIBus = int32(binary.LittleEndian.Uint32(r[20:]))
		d.PCIDev = int32(binary.LittleEndian.Uint32(r[24:]))
		in.Devices = append(in.Devices, d)
	}
	v := shim.IntegrityValue(version, secs, in)
	o := unsafe.Slice(out, 2)
	o[0], o[1] = v[0], v[1]
	return success
}

// tableIndex is the C index of a served export table.
func tableIndex(name string) int {
	for i, t := range shim.ExportTables() {
		if t.Name == name {
			return i
		}
	}
	return -1
}
