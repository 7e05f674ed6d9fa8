package shim

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/fatbin"
)

// machineOnlyFatbin returns the fat binary data with its PTX entries left
// out: what nvcc makes with code=sm_XX only, or CUB's kernels in CuPy.
func machineOnlyFatbin(t testing.TB, data []byte) []byte {
	t.Helper()
	entries, err := fatbin.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	out := make([]byte, fatbin.HeaderSize)
	for i := range entries {
		e := &entries[i]
		if e.Kind != fatbin.KindELF {
			continue
		}
		h := data[e.Offset:]
		out = append(out, h[:uint64(le.Uint32(h[4:]))+le.Uint64(h[8:])]...)
	}
	le.PutUint32(out, fatbin.Magic)
	le.PutUint16(out[4:], 1)
	le.PutUint16(out[6:], fatbin.HeaderSize)
	le.PutUint64(out[8:], uint64(len(out)-fatbin.HeaderSize))
	return out
}

// trustDriver is a driver whose sessions say the tenant has the given tier,
// as the manager's SessionOpened will.
func trustDriver(t *testing.T, tier v1.TrustTier) (*Driver, *bytes.Buffer) {
	d, log := newDriver(t)
	d.log.trace.Store(TraceOff)
	d.sessionTrust = func(*client.Session) v1.TrustTier { return tier }
	return d, log
}

func TestMachineCodeOnly(t *testing.T) {
	d, _ := newDriver(t)
	fat := readTestdata(t, "fatbin/vecadd.fatbin")
	for _, c := range []struct {
		name string
		data []byte
		want bool
	}{
		{"cubin", readTestdata(t, "fatbin/vecadd.sm_90.cubin"), true},
		{"fat binary of cubins only", machineOnlyFatbin(t, fat), true},
		{"fat binary with PTX", fat, false},
		{"fat binary with compressed PTX only", readTestdata(t, "fatbin/vecadd.compressed.fatbin"), false},
		{"PTX", readTestdata(t, "kernels/vecadd.ptx"), false},
		{"not an image", []byte("not an image"), false},
		{"a cut fat binary", fat[:fatbin.HeaderSize+8], false},
	} {
		if got := d.machineCodeOnly(c.data); got != c.want {
			t.Errorf("%s: machineCodeOnly = %v, want %v", c.name, got, c.want)
		}
	}
}

// A guarded tenant's machine-code-only image is refused at cuLibraryLoadData
// once a session has told the tier; images with PTX still load lazily.
func TestGuardedRefusesMachineCodeAtLoad(t *testing.T) {
	d, log := trustDriver(t, v1.TrustGuarded)
	const th = Thread(31)
	cubin := inCmem(t, readTestdata(t, "fatbin/vecadd.sm_90.cubin"))
	sassFat := inCmem(t, machineOnlyFatbin(t, readTestdata(t, "fatbin/vecadd.fatbin")))
	fat := inCmem(t, readTestdata(t, "fatbin/vecadd.fatbin"))

	// Before any session the tier is unknown: the refusal stays lazy.
	lib, r := d.LibraryLoadData(th, cubin.addr(0), LibraryOptions{})
	must(t, "LibraryLoadData of a cubin before any session", r)
	must(t, "LibraryUnload", d.LibraryUnload(lib))

	_, r = d.CtxCreate(th, 0, 0) // opens device 0's session, which tells the tier
	must(t, "CtxCreate", r)
	for _, c := range []struct {
		name string
		m    *cmem
	}{{"a cubin", cubin}, {"a fat binary of cubins", sassFat}} {
		_, r := d.LibraryLoadData(th, c.m.addr(0), LibraryOptions{Preserved: true})
		want(t, "LibraryLoadData of "+c.name, r, cu.CUDA_ERROR_NOT_SUPPORTED)
	}
	if !strings.Contains(log.String(), "refused by gpuos") || !strings.Contains(log.String(), "trust tier is guarded") {
		t.Errorf("the refusal is not explained in the log:\n%s", log)
	}

	// An image with PTX is accepted and loaded when first needed.
	lib, r = d.LibraryLoadData(th, fat.addr(0), LibraryOptions{Preserved: true})
	must(t, "LibraryLoadData of a fat binary with PTX", r)
	l := d.libraries.get(lib)
	if l.loads[0].mod != nil {
		t.Error("the fat binary with PTX was loaded at cuLibraryLoadData, not lazily")
	}
	k, r := d.LibraryGetKernel(th, lib, "vecadd")
	must(t, "LibraryGetKernel", r)
	f, r := d.KernelGetFunction(th, k)
	must(t, "KernelGetFunction", r)
	runVecadd(t, d, th, f)
	must(t, "LibraryUnload", d.LibraryUnload(lib))
}

// Other tiers keep every image lazy: a trusted tenant's allowlist names the
// libraries it uses, not every one a runtime registers.
func TestTrustedKeepsMachineCodeLazy(t *testing.T) {
	for _, tier := range []v1.TrustTier{v1.TrustTrusted, v1.TrustIsolated} {
		t.Run(tier.String(), func(t *testing.T) {
			d, _ := trustDriver(t, tier)
			const th = Thread(32)
			_, r := d.CtxCreate(th, 0, 0)
			must(t, "CtxCreate", r)
			cubin := inCmem(t, readTestdata(t, "fatbin/vecadd.sm_90.cubin"))
			lib, r := d.LibraryLoadData(th, cubin.addr(0), LibraryOptions{})
			must(t, "LibraryLoadData of a cubin", r)
			must(t, "LibraryUnload", d.LibraryUnload(lib))
		})
	}
}
