package shim

import (
	"bytes"
	"slices"
	"testing"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// inCmem copies b (NUL-terminated) into memory outside the Go heap.
func inCmem(t testing.TB, b []byte) *cmem {
	t.Helper()
	m := newCmem(t, len(b)+1)
	copy(m.b, b)
	return m
}

// A library needs no context: it is loaded into a device's session when its
// code is first needed, and its kernels are named from the image itself.
func TestDriverLibraryWithoutContext(t *testing.T) {
	d, _ := newDriver(t)
	const th = Thread(21)
	fat := inCmem(t, readTestdata(t, "fatbin/vecadd.fatbin"))
	lib, r := d.LibraryLoadData(th, fat.addr(0), LibraryOptions{Preserved: true})
	must(t, "LibraryLoadData without a context", r)
	k, r := d.LibraryGetKernel(th, lib, "vecadd")
	must(t, "LibraryGetKernel without a context", r)
	_, r = d.LibraryGetKernel(th, lib, "nope")
	want(t, "LibraryGetKernel of an unknown name", r, cu.CUDA_ERROR_NOT_FOUND)
	ks, r := d.LibraryKernels(th, lib)
	must(t, "LibraryKernels", r)
	if !slices.Equal(ks, []uint64{k}) {
		t.Errorf("LibraryKernels = %x, want [%x]", ks, k)
	}
	if name, r := d.FuncGetName(th, k); r != cu.CUDA_SUCCESS || name != "vecadd" {
		t.Errorf("FuncGetName = %q, %v", name, r)
	}
	if d.devices[0].opened() {
		t.Fatal("loading a library and naming its kernels opened a session: it should load nothing yet")
	}

	// The first use that needs code loads it, into device 0's session.
	f, r := d.KernelGetFunction(th, k)
	must(t, "KernelGetFunction without a context", r)
	if !d.devices[0].opened() {
		t.Fatal("KernelGetFunction did not load the library")
	}
	f2, r := d.function(th, k, 0)
	must(t, "function of the kernel on device 0", r)
	if f2.h != f {
		t.Errorf("the kernel's function on device 0 is %x, KernelGetFunction said %x", f2.h, f)
	}
	mh, r := d.LibraryGetModule(th, lib)
	must(t, "LibraryGetModule", r)
	want(t, "ModuleUnload of a library's module", d.ModuleUnload(mh), cu.CUDA_ERROR_INVALID_HANDLE)

	// A context made later runs the kernel; destroying it keeps the library.
	c, r := d.CtxCreate(th, 0, 0)
	must(t, "CtxCreate", r)
	must(t, "CtxDestroy", d.CtxDestroy(th, c))
	if _, r := d.KernelGetFunction(th, k); r != cu.CUDA_SUCCESS {
		t.Errorf("KernelGetFunction after the context went: %v", r)
	}

	must(t, "LibraryUnload", d.LibraryUnload(lib))
	_, r = d.KernelGetFunction(th, k)
	want(t, "KernelGetFunction after unload", r, cu.CUDA_ERROR_INVALID_HANDLE)
	want(t, "LibraryUnload twice", d.LibraryUnload(lib), cu.CUDA_ERROR_INVALID_HANDLE)
	_, r = d.LibraryLoadData(th, inCmem(t, []byte("not an image")).addr(0), LibraryOptions{})
	want(t, "LibraryLoadData of text that is not PTX", r, cu.CUDA_ERROR_INVALID_IMAGE)
}

// An image the daemon refuses (machine code for a guarded tenant) fails
// where its code is first needed, is sent once, and the refusal is logged
// even untraced.
func TestDriverLibraryRefusedOnce(t *testing.T) {
	d, log := newDriver(t)
	d.log.trace.Store(TraceOff)
	const th = Thread(22)
	cubin := inCmem(t, readTestdata(t, "fatbin/vecadd.sm_90.cubin"))
	lib, r := d.LibraryLoadData(th, cubin.addr(0), LibraryOptions{})
	must(t, "LibraryLoadData of a cubin", r)
	k, r := d.LibraryGetKernel(th, lib, "vecadd")
	must(t, "LibraryGetKernel", r)
	_, r = d.KernelGetFunction(th, k)
	want(t, "KernelGetFunction of refused code", r, cu.CUDA_ERROR_NOT_SUPPORTED)
	_, r = d.KernelGetFunction(th, k)
	want(t, "KernelGetFunction again", r, cu.CUDA_ERROR_NOT_SUPPORTED)
	if n := bytes.Count(log.Bytes(), []byte("refused by gpuos")); n != 1 {
		t.Errorf("the refusal was logged %d times, want once:\n%s", n, log.String())
	}
	must(t, "LibraryUnload", d.LibraryUnload(lib))
}

func TestParseLibraryOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []cu.CUlibraryOption
		vals []uintptr
		have LibraryOptions
		r    Result
	}{
		{"none", nil, nil, LibraryOptions{}, cu.CUDA_SUCCESS},
		{"preserved", []cu.CUlibraryOption{cu.CU_LIBRARY_BINARY_IS_PRESERVED}, []uintptr{1}, LibraryOptions{Preserved: true}, cu.CUDA_SUCCESS},
		{"not preserved", []cu.CUlibraryOption{cu.CU_LIBRARY_BINARY_IS_PRESERVED}, []uintptr{0}, LibraryOptions{}, cu.CUDA_SUCCESS},
		{"universal table", []cu.CUlibraryOption{cu.CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE}, []uintptr{0x1000}, LibraryOptions{}, cu.CUDA_SUCCESS},
		{"unknown", []cu.CUlibraryOption{cu.CU_LIBRARY_NUM_OPTIONS}, []uintptr{1}, LibraryOptions{}, cu.CUDA_ERROR_INVALID_VALUE},
		{"lengths differ", []cu.CUlibraryOption{cu.CU_LIBRARY_BINARY_IS_PRESERVED}, nil, LibraryOptions{}, cu.CUDA_ERROR_INVALID_VALUE},
	} {
		have, r := ParseLibraryOptions(tc.opts, tc.vals)
		if r != tc.r || (r == cu.CUDA_SUCCESS && have != tc.have) {
			t.Errorf("%s: %+v, %v; want %+v, %v", tc.name, have, r, tc.have, tc.r)
		}
	}
}

// Threads that first use a library's kernel at the same time load it once
// and get the same function.
func TestDriverLibraryConcurrentFirstUse(t *testing.T) {
	d, _ := newDriver(t)
	fat := inCmem(t, readTestdata(t, "fatbin/vecadd.fatbin"))
	lib, r := d.LibraryLoadData(Thread(30), fat.addr(0), LibraryOptions{})
	must(t, "LibraryLoadData", r)
	k, r := d.LibraryGetKernel(Thread(30), lib, "vecadd")
	must(t, "LibraryGetKernel", r)
	const n = 8
	got := make(chan uint64, n)
	for i := range n {
		go func() {
			f, r := d.KernelGetFunction(Thread(31+i), k)
			if r != cu.CUDA_SUCCESS {
				t.Errorf("KernelGetFunction: %v", r)
			}
			got <- f
		}()
	}
	first := <-got
	for range n - 1 {
		if f := <-got; f != first {
			t.Errorf("functions %x and %x for one kernel", f, first)
		}
	}
	if mods := d.modules.each(); len(mods) != 1 {
		t.Errorf("%d modules loaded, want 1", len(mods))
	}
}
