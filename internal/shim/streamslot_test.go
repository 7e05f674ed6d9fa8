package shim

import (
	"testing"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// Slots 51 and 39 of the 21318c60 table, which cuBLASLt calls before its
// first launch: a stream's object (NULL naming a default stream) and its id.
func TestStreamOfContext(t *testing.T) {
	d, _ := newDriver(t)
	const th = Thread(21)
	ctx, r := d.CtxCreate(th, 0, 0)
	must(t, "CtxCreate", r)
	s, r := d.StreamCreate(th, uint32(cu.CU_STREAM_NON_BLOCKING), 0)
	must(t, "StreamCreate", r)
	sid, r := d.StreamGetID(th, s)
	must(t, "StreamGetID", r)

	legacy, perThread := uint64(cu.CU_STREAM_LEGACY), uint64(cu.CU_STREAM_PER_THREAD)
	for _, c := range []struct {
		name      string
		ctx, h    uint64
		perThread bool
		want      uint64
		wantID    uint64
	}{
		{"NULL", ctx, 0, false, legacy, 0},
		{"NULL, current context", 0, 0, false, legacy, 0},
		{"NULL, per-thread default", ctx, 0, true, perThread, 1},
		{"CU_STREAM_LEGACY", ctx, legacy, true, legacy, 0},
		{"CU_STREAM_PER_THREAD", ctx, perThread, false, perThread, 1},
		{"created stream", ctx, s, false, s, sid},
	} {
		got, r := d.StreamOfContext(th, c.ctx, c.h, c.perThread)
		if r != cu.CUDA_SUCCESS || got != c.want {
			t.Errorf("%s: StreamOfContext = %#x, %v; want %#x", c.name, got, r, c.want)
			continue
		}
		// The object works wherever a stream does.
		must(t, c.name+": StreamSynchronize of the object", d.StreamSynchronize(th, got))
		id, r := d.StreamIDOfContext(th, c.ctx, got)
		if r != cu.CUDA_SUCCESS || id != c.wantID {
			t.Errorf("%s: StreamIDOfContext = %d, %v; want %d", c.name, id, r, c.wantID)
		}
	}

	for _, c := range []struct {
		name   string
		ctx, h uint64
		want   Result
	}{
		{"not a stream", ctx, 0xc702000000fffff0, cu.CUDA_ERROR_INVALID_HANDLE},
		{"not a context", 0xc701000000fffff0, 0, cu.CUDA_ERROR_INVALID_CONTEXT},
	} {
		_, r := d.StreamOfContext(th, c.ctx, c.h, false)
		want(t, c.name+": StreamOfContext", r, c.want)
	}

	// A stream of another context is not the context's.
	other, r := d.CtxCreate(th, 0, 0)
	must(t, "CtxCreate", r)
	_, r = d.StreamOfContext(th, other, s, false)
	want(t, "stream of another context", r, cu.CUDA_ERROR_INVALID_CONTEXT)
	must(t, "CtxDestroy", d.CtxDestroy(th, other))
	_, r = d.StreamOfContext(th, other, 0, false)
	want(t, "destroyed context", r, cu.CUDA_ERROR_INVALID_CONTEXT)
	_, r = d.StreamIDOfContext(th, other, 0)
	want(t, "StreamIDOfContext in a destroyed context", r, cu.CUDA_ERROR_INVALID_CONTEXT)
}
