package shim

import (
	"encoding/binary"
	"testing"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// cuLaunchKernelEx's events (launch completion, programmatic) are recorded
// after the kernel; refused attributes stay refused.
func TestDriverLaunchKernelExEvents(t *testing.T) {
	d, _ := newDriver(t)
	const th = Thread(41)
	_, r := d.CtxCreate(th, 0, 0)
	must(t, "CtxCreate", r)
	f := loadVecadd(t, d, th)
	const n = 256
	host := newCmem(t, 4096)
	var dev [3]uint64
	for i := range dev {
		dev[i], r = d.MemAlloc(th, 4*n)
		must(t, "MemAlloc", r)
	}
	args := host.args(0, dev[0], dev[1], dev[2], int32(n))
	attr := func(id cu.CUlaunchAttributeID, v uint64) cu.CUlaunchAttribute {
		a := cu.CUlaunchAttribute{ID: id}
		binary.LittleEndian.PutUint64(a.Value[:], v)
		return a
	}
	cfg := func(attrs ...cu.CUlaunchAttribute) LaunchConfig {
		return LaunchConfig{Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{128, 1, 1}, Attrs: attrs}
	}
	start, r := d.EventCreate(th, 0)
	must(t, "EventCreate", r)
	for _, id := range []cu.CUlaunchAttributeID{cu.CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT, cu.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT} {
		ev, r := d.EventCreate(th, 0)
		must(t, "EventCreate", r)
		must(t, "record start", d.EventRecord(th, start, 0))
		must(t, id.String(), d.LaunchKernelEx(th, cfg(attr(id, ev)), f, args, 0))
		must(t, "synchronize the event", d.EventSynchronize(ev))
		if _, r := d.EventElapsedTime(start, ev); r != cu.CUDA_SUCCESS {
			t.Errorf("%v: the event was not recorded: elapsed time %v", id, r)
		}
		want(t, id.String()+" without an event", d.LaunchKernelEx(th, cfg(attr(id, 0)), f, args, 0), cu.CUDA_ERROR_INVALID_VALUE)
	}
	want(t, "a cooperative launch", d.LaunchKernelEx(th, cfg(attr(cu.CU_LAUNCH_ATTRIBUTE_COOPERATIVE, 1)), f, args, 0),
		cu.CUDA_ERROR_NOT_SUPPORTED)
	want(t, "an unknown attribute", d.LaunchKernelEx(th, cfg(attr(1000, 1)), f, args, 0), cu.CUDA_ERROR_INVALID_VALUE)
}
