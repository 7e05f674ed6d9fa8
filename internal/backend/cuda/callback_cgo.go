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
	defer h.Delete()
	h.Value().(*callback).fire(cuda.CUresult(status))
}

// newCallbackHandle returns the value the C trampoline hands back for cb.
func newCallbackHandle(cb *callback) uintptr { return uintptr(cgo.NewHandle(cb)) }

// deleteCallbackHandle forgets a handle the driver will never hand back.
func deleteCallbackHandle(h uintptr) { cgo.Handle(h).Delete() }
