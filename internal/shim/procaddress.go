package shim

import (
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// ProcAddress is the lookup of cuGetProcAddress (it needs no cuInit): the
// name of the exported function to hand out for name at cudaVersion with
// flags, and the symbol status. Invalid flags and versions newer than the
// driver are CUDA_ERROR_INVALID_VALUE; an unknown name (the empty name cuBLAS
// probes with included) or a version older than every variant succeeds with
// no function, as the real driver does.
func (d *Driver) ProcAddress(name string, version int, flags uint64) (string, cu.CUdriverProcAddressQueryResult, Result) {
	if !cu.ValidProcAddressFlags(flags) || version < 0 || version > d.cfg.DriverVersion {
		return "", cu.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, cu.CUDA_ERROR_INVALID_VALUE
	}
	s, status := cu.Lookup(name, version, flags)
	if d.log.Tracing(TraceCalls) {
		d.log.Printf("cuGetProcAddress(%q, %d, %d) = %s %s", name, version, flags, s.Name, status.Name())
	}
	return s.Name, status, cu.CUDA_SUCCESS
}
