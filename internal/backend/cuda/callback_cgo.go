//go:build cgo

package cuda

/*
#include <stdint.h>
*/
import "C"

import (
	"runtime/cgo"

	"github.com/gpuos/gpuos/internal/abi/cuda"
)

// gpuosStreamCallback runs on a driver thread when a stream reaches a
// callback enqueued by Stream.Callback. It must not call CUDA.
//
//export gpuosStreamCallback
func gpuosStreamCallback(handle C.uintptr_t, status C.int) {
	h := cgo.Handle(handle)
	cb := h.Value().(*callback)
	cb.fire(cuda.CUresult(status), h)
}
