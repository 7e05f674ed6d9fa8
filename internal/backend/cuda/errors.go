package cuda

import (
	"fmt"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/abi/cuda"
)

// Errors returned by the cuda backend, besides the backend.ErrX sentinels. Each
// is a *v1.Error, so errors.Is matches it against these sentinels and against
// the v1.ErrX (and backend.ErrX) of the same code. Errors that come from the
// driver are *v1.Error values carrying the CUresult (v1.ResultOf).
var (
	// ErrNoDriver: no NVIDIA driver library could be loaded.
	ErrNoDriver = v1.Errorf(v1.CodeUnsupported, "no usable NVIDIA driver library (libcuda.so.1)")
	// ErrShim: the library found is gpuos's own drop-in libcuda.so.1, which
	// would forward the driver process's calls back to gpuos.
	ErrShim = v1.Errorf(v1.CodeUnsupported, "refusing to drive the GPU through gpuos's own libcuda shim")
	// ErrMissingSymbol: the driver library lacks an entry point the operation
	// needs (an older driver); the error names it.
	ErrMissingSymbol = v1.Errorf(v1.CodeUnsupported, "the driver library lacks an entry point")
	// ErrNoCgo: this build has no cgo, so it cannot load the driver.
	ErrNoCgo = v1.Errorf(v1.CodeUnsupported, "gpuos was built without cgo and cannot load the NVIDIA driver")
	// ErrInvalidHandle: a stream, event, module, chunk or host buffer that was
	// destroyed, or that belongs to another device or backend.
	ErrInvalidHandle = v1.Errorf(v1.CodeInvalidHandle, "destroyed or foreign object")
	// ErrClosed: the device was closed.
	ErrClosed = v1.Errorf(v1.CodeInvalidHandle, "device closed")
	// ErrInvalidImage: LoadModule got bytes that are neither PTX text, a fatbin
	// nor an ELF cubin.
	ErrInvalidImage = v1.Errorf(v1.CodeMalformed, "not a PTX, cubin or fatbin image")
)

// lostResults are the CUresults after which the context is unusable: every
// later call in the process fails, and on an H100 only a new process
// recovers (see RESEARCH.md, "Faults").
var lostResults = map[cuda.CUresult]bool{
	cuda.CUDA_ERROR_DEINITIALIZED:         true,
	cuda.CUDA_ERROR_ECC_UNCORRECTABLE:     true,
	cuda.CUDA_ERROR_NVLINK_UNCORRECTABLE:  true,
	cuda.CUDA_ERROR_CONTAINED:             true,
	cuda.CUDA_ERROR_ILLEGAL_ADDRESS:       true,
	cuda.CUDA_ERROR_LAUNCH_TIMEOUT:        true,
	cuda.CUDA_ERROR_CONTEXT_IS_DESTROYED:  true,
	cuda.CUDA_ERROR_ASSERT:                true,
	cuda.CUDA_ERROR_HARDWARE_STACK_ERROR:  true,
	cuda.CUDA_ERROR_ILLEGAL_INSTRUCTION:   true,
	cuda.CUDA_ERROR_MISALIGNED_ADDRESS:    true,
	cuda.CUDA_ERROR_INVALID_ADDRESS_SPACE: true,
	cuda.CUDA_ERROR_INVALID_PC:            true,
	cuda.CUDA_ERROR_LAUNCH_FAILED:         true,
	cuda.CUDA_ERROR_TENSOR_MEMORY_LEAK:    true,
	cuda.CUDA_ERROR_EXTERNAL_DEVICE:       true,
	cuda.CUDA_ERROR_UNKNOWN:               true,
}

// isLost reports whether r leaves the context unusable.
func isLost(r cuda.CUresult) bool { return lostResults[r] }

// codeOf is the gpuos error code of a CUresult.
func codeOf(r cuda.CUresult) v1.Code {
	switch {
	case r == cuda.CUDA_SUCCESS:
		return v1.CodeOK
	case isLost(r):
		return v1.CodeDeviceLost
	case r >= missingBase:
		return v1.CodeUnsupported
	}
	switch r {
	case cuda.CUDA_ERROR_OUT_OF_MEMORY:
		return v1.CodeOutOfMemory
	case cuda.CUDA_ERROR_NOT_FOUND, cuda.CUDA_ERROR_NO_DEVICE, cuda.CUDA_ERROR_INVALID_DEVICE,
		cuda.CUDA_ERROR_FILE_NOT_FOUND, cuda.CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
		return v1.CodeNotFound
	case cuda.CUDA_ERROR_INVALID_VALUE, cuda.CUDA_ERROR_INVALID_HANDLE,
		cuda.CUDA_ERROR_ALREADY_MAPPED, cuda.CUDA_ERROR_NOT_MAPPED,
		cuda.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, cuda.CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
		cuda.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, cuda.CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
		cuda.CUDA_ERROR_INVALID_CLUSTER_SIZE:
		return v1.CodeInvalidArgument
	case cuda.CUDA_ERROR_NOT_SUPPORTED, cuda.CUDA_ERROR_STUB_LIBRARY, cuda.CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER,
		cuda.CUDA_ERROR_NO_BINARY_FOR_GPU, cuda.CUDA_ERROR_JIT_COMPILER_NOT_FOUND,
		cuda.CUDA_ERROR_UNSUPPORTED_PTX_VERSION, cuda.CUDA_ERROR_JIT_COMPILATION_DISABLED,
		cuda.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, cuda.CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
		cuda.CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, cuda.CUDA_ERROR_CDP_NOT_SUPPORTED:
		return v1.CodeUnsupported
	case cuda.CUDA_ERROR_INVALID_IMAGE, cuda.CUDA_ERROR_INVALID_PTX, cuda.CUDA_ERROR_INVALID_SOURCE:
		return v1.CodeMalformed
	case cuda.CUDA_ERROR_NOT_READY:
		return v1.CodeNotReady
	case cuda.CUDA_ERROR_NOT_PERMITTED:
		return v1.CodePermissionDenied
	case cuda.CUDA_ERROR_TIMEOUT:
		return v1.CodeTimeout
	case cuda.CUDA_ERROR_DEVICE_UNAVAILABLE, cuda.CUDA_ERROR_SYSTEM_NOT_READY:
		return v1.CodeBusy
	}
	return v1.CodeInternal
}

// resultName names r: its C name, or the missing entry point it stands for.
func resultName(r cuda.CUresult) string {
	if r >= missingBase {
		return fmt.Sprintf("entry point %s missing from the driver library", symbolName(int(r-missingBase)))
	}
	return r.String()
}

// resultError converts a failed CUresult into the error every caller gets: a
// *v1.Error with the matching code (see codeOf), Result set to r, and a
// message naming the operation, the result and the driver's description. A
// result that loses the context matches backend.ErrContextLost. It returns
// nil for CUDA_SUCCESS.
func resultError(op string, r cuda.CUresult) error {
	if r == cuda.CUDA_SUCCESS {
		return nil
	}
	code := codeOf(r)
	msg := code.String() + ": " + op + ": " + resultName(r)
	if d := r.Description(); d != "" {
		msg += " (" + d + ")"
	}
	if r >= missingBase {
		// Matches ErrMissingSymbol by code; Result stays 0: no driver said it.
		return &v1.Error{Code: code, Message: msg}
	}
	return &v1.Error{Code: code, Message: msg, Result: int32(r)}
}
