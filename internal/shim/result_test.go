package shim

import (
	"errors"
	"fmt"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

func TestResultOf(t *testing.T) {
	tests := []struct {
		name string
		op   op
		err  error
		want Result
	}{
		{"nil", opAny, nil, cu.CUDA_SUCCESS},
		{"not found", opAny, v1.Errorf(v1.CodeNotFound, "kernel %q", "x"), cu.CUDA_ERROR_NOT_FOUND},
		{"wrapped not found", opAny, fmt.Errorf("kernel x: %w", v1.ErrNotFound), cu.CUDA_ERROR_NOT_FOUND},
		{"quota", opAny, v1.ErrQuotaExceeded, cu.CUDA_ERROR_OUT_OF_MEMORY},
		{"out of memory", opAny, v1.ErrOutOfMemory, cu.CUDA_ERROR_OUT_OF_MEMORY},
		{"invalid handle", opAny, v1.ErrInvalidHandle, cu.CUDA_ERROR_INVALID_HANDLE},
		{"revoked", opAny, v1.ErrRevoked, cu.CUDA_ERROR_INVALID_HANDLE},
		{"denied", opAny, v1.ErrPermissionDenied, cu.CUDA_ERROR_NOT_PERMITTED},
		{"unsupported", opAny, v1.ErrUnsupported, cu.CUDA_ERROR_NOT_SUPPORTED},
		{"invalid argument", opAny, v1.ErrInvalidArgument, cu.CUDA_ERROR_INVALID_VALUE},
		{"invalid argument loading", opLoad, v1.ErrInvalidArgument, cu.CUDA_ERROR_INVALID_IMAGE},
		{"malformed loading", opLoad, v1.ErrMalformed, cu.CUDA_ERROR_INVALID_IMAGE},
		{"not found loading", opLoad, v1.ErrNotFound, cu.CUDA_ERROR_NOT_FOUND},
		{"guard", opAny, v1.ErrGuardViolation, cu.CUDA_ERROR_ILLEGAL_ADDRESS},
		{"device lost", opAny, v1.ErrDeviceLost, cu.CUDA_ERROR_DEVICE_UNAVAILABLE},
		{"timeout", opAny, v1.ErrTimeout, cu.CUDA_ERROR_TIMEOUT},
		{"not ready", opAny, v1.ErrNotReady, cu.CUDA_ERROR_NOT_READY},
		{"launch failed", opAny, v1.ErrLaunchFailed, cu.CUDA_ERROR_LAUNCH_FAILED},
		{"internal", opAny, v1.ErrInternal, cu.CUDA_ERROR_UNKNOWN},
		{"unclassified", opAny, errors.New("boom"), cu.CUDA_ERROR_UNKNOWN},
		{"unknown code", opAny, &v1.Error{Code: 999}, cu.CUDA_ERROR_UNKNOWN},
		{"driver's own result wins", opAny, &v1.Error{Code: v1.CodeLaunchFailed, Result: int32(cu.CUDA_ERROR_ILLEGAL_INSTRUCTION)}, cu.CUDA_ERROR_ILLEGAL_INSTRUCTION},
		{"wrapped driver result", opLoad, fmt.Errorf("load: %w", &v1.Error{Code: v1.CodeInvalidArgument, Result: int32(cu.CUDA_ERROR_NO_BINARY_FOR_GPU)}), cu.CUDA_ERROR_NO_BINARY_FOR_GPU},
	}
	for _, tt := range tests {
		if got := resultOf(tt.op, tt.err); got != tt.want {
			t.Errorf("%s: resultOf(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// Every code the protocol defines has a row.
func TestResultTableCoversEveryCode(t *testing.T) {
	for c := v1.Code(1); c.Valid(); c++ {
		if int(c) >= len(results) || results[c].any == 0 {
			t.Errorf("no CUresult for %v", c)
		}
	}
}
