package cuda

import (
	"errors"
	"strings"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
)

func TestResultError(t *testing.T) {
	tests := []struct {
		r    cuda.CUresult
		want error
	}{
		{cuda.CUDA_ERROR_OUT_OF_MEMORY, backend.ErrOutOfMemory},
		{cuda.CUDA_ERROR_NOT_FOUND, backend.ErrNotFound},
		{cuda.CUDA_ERROR_NO_DEVICE, backend.ErrNoDevice},
		{cuda.CUDA_ERROR_INVALID_VALUE, backend.ErrInvalidArgument},
		{cuda.CUDA_ERROR_INVALID_HANDLE, backend.ErrInvalidArgument},
		{cuda.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, backend.ErrInvalidArgument},
		{cuda.CUDA_ERROR_NOT_SUPPORTED, backend.ErrUnsupported},
		{cuda.CUDA_ERROR_NO_BINARY_FOR_GPU, backend.ErrUnsupported},
		{cuda.CUDA_ERROR_STUB_LIBRARY, backend.ErrUnsupported},
		{cuda.CUDA_ERROR_INVALID_PTX, v1.ErrMalformed},
		{cuda.CUDA_ERROR_INVALID_IMAGE, v1.ErrMalformed},
		{cuda.CUDA_ERROR_NOT_READY, v1.ErrNotReady},
		{cuda.CUDA_ERROR_NOT_PERMITTED, v1.ErrPermissionDenied},
		{cuda.CUDA_ERROR_TIMEOUT, v1.ErrTimeout},
		{cuda.CUDA_ERROR_INVALID_CONTEXT, v1.ErrInternal},
		// The sticky ones: the context is gone, the driver process must go.
		{cuda.CUDA_ERROR_ILLEGAL_ADDRESS, backend.ErrContextLost},
		{cuda.CUDA_ERROR_LAUNCH_FAILED, backend.ErrContextLost},
		{cuda.CUDA_ERROR_MISALIGNED_ADDRESS, backend.ErrContextLost},
		{cuda.CUDA_ERROR_ILLEGAL_INSTRUCTION, backend.ErrContextLost},
		{cuda.CUDA_ERROR_HARDWARE_STACK_ERROR, backend.ErrContextLost},
		{cuda.CUDA_ERROR_INVALID_PC, backend.ErrContextLost},
		{cuda.CUDA_ERROR_INVALID_ADDRESS_SPACE, backend.ErrContextLost},
		{cuda.CUDA_ERROR_ASSERT, backend.ErrContextLost},
		{cuda.CUDA_ERROR_LAUNCH_TIMEOUT, backend.ErrContextLost},
		{cuda.CUDA_ERROR_ECC_UNCORRECTABLE, backend.ErrContextLost},
		{cuda.CUDA_ERROR_CONTAINED, backend.ErrContextLost},
		{cuda.CUDA_ERROR_CONTEXT_IS_DESTROYED, backend.ErrContextLost},
		{cuda.CUDA_ERROR_UNKNOWN, backend.ErrContextLost},
	}
	for _, tt := range tests {
		err := resultError("do something", tt.r)
		var e *v1.Error
		if !errors.As(err, &e) || e.Result != int32(tt.r) {
			t.Errorf("%v: %#v is not a *v1.Error carrying the result", tt.r, err)
			continue
		}
		if !errors.Is(err, tt.want) || v1.CodeOf(err) != v1.CodeOf(tt.want) {
			t.Errorf("%v: code %v, want %v", tt.r, v1.CodeOf(err), v1.CodeOf(tt.want))
		}
		for _, s := range []string{"do something", tt.r.Name(), tt.r.Description(), v1.CodeOf(tt.want).String()} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%v: message %q does not say %q", tt.r, err, s)
			}
		}
		if got := isLost(tt.r); got != (tt.want == backend.ErrContextLost) {
			t.Errorf("%v: isLost = %v", tt.r, got)
		}
	}
	if resultError("x", cuda.CUDA_SUCCESS) != nil {
		t.Fatal("CUDA_SUCCESS is an error")
	}
	// Every CUresult gets a code; no value is left unclassified by accident.
	for _, c := range cuda.Constants() {
		if c.Type != "CUresult" || c.Value == 0 {
			continue
		}
		if code := codeOf(cuda.CUresult(c.Value)); !code.Valid() {
			t.Errorf("%s: code %v", c.Name, code)
		}
	}
	for r := range lostResults {
		if r.Name() == "" {
			t.Errorf("lostResults holds %d, not a CUresult of the ABI", r)
		}
	}
}

// A missing entry point is Unsupported and names the symbol.
func TestMissingEntryPointError(t *testing.T) {
	if symbolCount == 0 {
		t.Skip("built without cgo")
	}
	err := resultError("map", missingBase+1)
	if !errors.Is(err, ErrMissingSymbol) || !errors.Is(err, backend.ErrUnsupported) || v1.ResultOf(err) != 0 ||
		!strings.Contains(err.Error(), symbolName(1)) || symbolName(1) == "" {
		t.Fatalf("missing entry point 1: %v", err)
	}
}

// The device latches the first lost result; later results don't replace it.
func TestLoseLatchesFirst(t *testing.T) {
	d := &Device{ordinal: 3, info: backendInfoForTest()}
	if err := d.fail("copy", cuda.CUDA_ERROR_INVALID_VALUE); !errors.Is(err, backend.ErrInvalidArgument) || d.Lost() != nil {
		t.Fatalf("a non-sticky error: %v, Lost %v", err, d.Lost())
	}
	first := d.fail("launch", cuda.CUDA_ERROR_ILLEGAL_ADDRESS)
	second := d.fail("synchronize", cuda.CUDA_ERROR_LAUNCH_FAILED)
	if first != second || first != d.Lost() || !errors.Is(first, backend.ErrContextLost) ||
		v1.ResultOf(first) != int32(cuda.CUDA_ERROR_ILLEGAL_ADDRESS) || !strings.Contains(first.Error(), "device 3") {
		t.Fatalf("first %v, second %v, Lost %v", first, second, d.Lost())
	}
	if err := d.enter(); err != first {
		t.Fatalf("enter on a lost device = %v, want %v", err, first)
	}
}

func backendInfoForTest() backend.DeviceInfo {
	return backend.DeviceInfo{UUID: [16]byte{'t', 'e', 's', 't', 'l', 'a', 't', 'c', 'h'}}
}
