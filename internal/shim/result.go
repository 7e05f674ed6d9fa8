package shim

import (
	"errors"
	"strings"

	v1 "github.com/gpuos/gpuos/api/v1"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// Result is a CUresult, what every entry point returns.
type Result = cu.CUresult

// op says what kind of call an error came from, where CUDA's answer for the
// same gpuos error differs by call.
type op uint8

const (
	opAny  op = iota // any call
	opLoad           // loading a module or library image
)

// resultRow is how one gpuos error code reads as a CUresult.
type resultRow struct {
	any  Result // for any call
	load Result // for image loads (0: as any)
}

// results is the one table that turns gpuos error codes into CUresult values.
// Errors that came from the NVIDIA driver carry its own CUresult, which wins
// (see resultOf).
var results = [...]resultRow{
	v1.CodeInvalidHandle:    {any: cu.CUDA_ERROR_INVALID_HANDLE},
	v1.CodeRevoked:          {any: cu.CUDA_ERROR_INVALID_HANDLE},
	v1.CodePermissionDenied: {any: cu.CUDA_ERROR_NOT_PERMITTED},
	v1.CodeQuotaExceeded:    {any: cu.CUDA_ERROR_OUT_OF_MEMORY},
	v1.CodeMalformed:        {any: cu.CUDA_ERROR_INVALID_VALUE, load: cu.CUDA_ERROR_INVALID_IMAGE},
	v1.CodeUnsupported:      {any: cu.CUDA_ERROR_NOT_SUPPORTED},
	v1.CodeDeviceLost:       {any: cu.CUDA_ERROR_DEVICE_UNAVAILABLE},
	v1.CodeTimeout:          {any: cu.CUDA_ERROR_TIMEOUT},
	v1.CodeGuardViolation:   {any: cu.CUDA_ERROR_ILLEGAL_ADDRESS},
	v1.CodeNotFound:         {any: cu.CUDA_ERROR_NOT_FOUND},
	v1.CodeInvalidArgument:  {any: cu.CUDA_ERROR_INVALID_VALUE, load: cu.CUDA_ERROR_INVALID_IMAGE},
	v1.CodeOutOfMemory:      {any: cu.CUDA_ERROR_OUT_OF_MEMORY},
	v1.CodeNotReady:         {any: cu.CUDA_ERROR_NOT_READY},
	v1.CodeVersionMismatch:  {any: cu.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH},
	v1.CodeInternal:         {any: cu.CUDA_ERROR_UNKNOWN},
	v1.CodeBusy:             {any: cu.CUDA_ERROR_DEVICE_UNAVAILABLE},
	v1.CodeLaunchFailed:     {any: cu.CUDA_ERROR_LAUNCH_FAILED},
}

// ResultOf converts an error from the gpuos client into the CUresult CUDA
// would return: nil is CUDA_SUCCESS, a *v1.Error with a non-zero Result carries
// the real driver's answer, and otherwise its code decides through results.
func ResultOf(err error) Result { return resultOf(opAny, err) }

func resultOf(o op, err error) Result {
	if err == nil {
		return cu.CUDA_SUCCESS
	}
	var e *v1.Error
	if errors.As(err, &e) && e.Result != 0 {
		return Result(e.Result)
	}
	code := v1.CodeOf(err)
	if int(code) >= len(results) || results[code].any == 0 {
		return cu.CUDA_ERROR_UNKNOWN
	}
	row := results[code]
	if o == opLoad && row.load != 0 {
		return row.load
	}
	return row.any
}

// fail is resultOf for the daemon's answer to any call, with its reason
// reported (see explain).
func (d *Driver) fail(err error) Result { return d.report(opAny, err) }

// report converts err into a CUresult and explains it in the log.
func (d *Driver) report(o op, err error) Result {
	r := resultOf(o, err)
	if r != cu.CUDA_SUCCESS {
		d.explain(err, r)
	}
	return r
}

// explain logs why the daemon refused something. A CUresult alone does not
// say that gpuos, not the program, is the cause (CuPy reports a refused
// launch argument as "cudaErrorInvalidValue: invalid argument", and ignores
// CUB's errors altogether), so refusals are logged untraced, once per
// message (numbers left out, so that addresses do not make each one new);
// other errors when tracing calls.
func (d *Driver) explain(err error, r Result) {
	switch v1.CodeOf(err) {
	case v1.CodeUnsupported, v1.CodePermissionDenied, v1.CodeGuardViolation, v1.CodeQuotaExceeded,
		v1.CodeRevoked, v1.CodeDeviceLost, v1.CodeInvalidArgument:
		key := strings.Map(func(c rune) rune {
			if c >= '0' && c <= '9' {
				return -1
			}
			return c
		}, err.Error())
		d.log.Once("explain:"+key, "refused by gpuos, returning %s: %v", r.Name(), err)
	default:
		if d.log.Tracing(TraceCalls) {
			d.log.Printf("%s: %v", r.Name(), err)
		}
	}
}
