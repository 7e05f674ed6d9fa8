package shim

import (
	"testing"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// The primary context as the driver API documents it: the runtime's
// interface hands out its handle before anything retains it; work in it
// while it is not retained is CUDA_ERROR_CONTEXT_IS_DESTROYED, its
// properties can be read; retaining activates it, the last release
// deactivates it and the handle stays the same.
func TestPrimaryContextLifecycle(t *testing.T) {
	d, _ := newDriver(t)
	const th = Thread(11)

	h, r := d.PrimaryCtx(0) // the runtime interface's slot 2: not retained
	must(t, "PrimaryCtx", r)
	_, active, r := d.PrimaryCtxGetState(0)
	must(t, "PrimaryCtxGetState", r)
	if active {
		t.Error("the primary context is active before any retain")
	}
	must(t, "CtxSetCurrent", d.CtxSetCurrent(th, h))
	cur, r := d.CtxGetCurrent(th)
	must(t, "CtxGetCurrent", r)
	if cur != h {
		t.Errorf("current %#x, want %#x", cur, h)
	}
	dev, r := d.CtxGetDevice(th, 0)
	must(t, "CtxGetDevice of the inactive primary context", r)
	if dev != 0 {
		t.Errorf("device %d", dev)
	}
	must(t, "CLSPut in the inactive primary context", d.CLSPut(th, 0, 0x10, 0x20, 0))
	_, r = d.MemAlloc(th, 4096)
	want(t, "MemAlloc in the inactive primary context", r, cu.CUDA_ERROR_CONTEXT_IS_DESTROYED)
	want(t, "CtxSynchronize in the inactive primary context", d.CtxSynchronize(th, 0), cu.CUDA_ERROR_CONTEXT_IS_DESTROYED)

	h2, r := d.PrimaryCtxRetain(0)
	must(t, "PrimaryCtxRetain", r)
	if h2 != h {
		t.Errorf("retain returned %#x, the runtime interface %#x", h2, h)
	}
	p, r := d.MemAlloc(th, 4096)
	must(t, "MemAlloc in the retained primary context", r)
	must(t, "CtxSynchronize", d.CtxSynchronize(th, 0))
	must(t, "MemFree", d.MemFree(th, p))

	must(t, "PrimaryCtxRelease", d.PrimaryCtxRelease(0))
	_, r = d.MemAlloc(th, 4096)
	want(t, "MemAlloc after the last release", r, cu.CUDA_ERROR_CONTEXT_IS_DESTROYED)
	want(t, "another release", d.PrimaryCtxRelease(0), cu.CUDA_ERROR_INVALID_CONTEXT)
	_, r = d.PrimaryCtxRetain(0)
	must(t, "PrimaryCtxRetain again", r)
	_, r = d.MemAlloc(th, 4096)
	must(t, "MemAlloc after retaining again", r)
	must(t, "PrimaryCtxReset", d.PrimaryCtxReset(0))
	_, r = d.MemAlloc(th, 4096)
	want(t, "MemAlloc after a reset", r, cu.CUDA_ERROR_CONTEXT_IS_DESTROYED)
}

// A context destroyed by one thread while current on another: the other's
// work is CUDA_ERROR_CONTEXT_IS_DESTROYED; with no context at all it is
// CUDA_ERROR_INVALID_CONTEXT.
func TestDestroyedCurrentContext(t *testing.T) {
	d, _ := newDriver(t)
	const a, b = Thread(21), Thread(22)
	_, r := d.MemAlloc(b, 16)
	want(t, "MemAlloc with no context", r, cu.CUDA_ERROR_INVALID_CONTEXT)
	h, r := d.CtxCreate(a, 0, 0)
	must(t, "CtxCreate", r)
	must(t, "CtxPush on b", d.CtxPush(b, h))
	must(t, "CtxDestroy on a", d.CtxDestroy(a, h))
	_, r = d.MemAlloc(b, 16)
	want(t, "MemAlloc in a destroyed context", r, cu.CUDA_ERROR_CONTEXT_IS_DESTROYED)
	_, r = d.CtxGetDevice(b, 0)
	want(t, "CtxGetDevice of a destroyed context", r, cu.CUDA_ERROR_CONTEXT_IS_DESTROYED)
	want(t, "CtxSetCurrent to the destroyed handle", d.CtxSetCurrent(a, h), cu.CUDA_ERROR_INVALID_CONTEXT)
	popped, r := d.CtxPop(b)
	must(t, "CtxPop of the destroyed context", r)
	if popped != h {
		t.Errorf("popped %#x, want %#x", popped, h)
	}
	_, r = d.CtxPop(b)
	want(t, "CtxPop of an empty stack", r, cu.CUDA_ERROR_INVALID_CONTEXT)
}
