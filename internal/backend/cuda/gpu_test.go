package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/backendtest"
)

// Tests on a real NVIDIA GPU. They skip without one (see main_test.go and
// GPUTEST.md); GPUOS_REQUIRE_GPU=1 turns the skip into a failure.

// The conformance suite on the GPU: VMM, copies, host memory, streams,
// events, callbacks, and every testdata kernel (PTX for sm_80 and sm_90,
// fatbins, the sm_90 cubin) against its CPU reference.
func TestGPUConformance(t *testing.T) {
	backendtest.Run(t, gpu(t), backendtest.Options{SASS: true})
}

// A fence enqueued behind a running kernel is not reached before the kernel
// ends, and once it is, the kernel's write to mapped host memory is there
// to read, with no copy and no synchronization in between.
func TestGPUFenceWaitsForKernel(t *testing.T) {
	_, d := gpuDevice(t)
	m, err := d.LoadModule(readTestdata(t, "kernels/bench.ptx"))
	must(t, err)
	defer m.Unload()
	spin, err := m.Function("spin") // spin(ns, counter): spins ns on %globaltimer, then counts itself
	must(t, err)
	hm, counter, err := d.AllocMappedHost(4)
	must(t, err)
	defer hm.Free()
	st, err := d.NewStream(0)
	must(t, err)
	defer st.Destroy()
	for round := range 3 {
		must(t, st.Synchronize())
		clear(hm.Bytes())
		params := binary.LittleEndian.AppendUint64(nil, uint64(200*time.Millisecond))
		params = binary.LittleEndian.AppendUint64(params, uint64(counter))
		must(t, st.Launch(spin, backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 1, 1}}, params))
		f, err := st.(backend.Fencer).Fence()
		must(t, err)
		if f.Reached() {
			t.Fatalf("round %d: fence reached while a 200 ms kernel runs", round)
		}
		polls := 0
		for deadline := time.Now().Add(10 * time.Second); !f.Reached(); polls++ {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: fence not reached in 10 s", round)
			}
		}
		if got := binary.LittleEndian.Uint32(hm.Bytes()); got != 1 {
			t.Fatalf("round %d: the kernel's count in mapped host memory is %d once the fence was reached, want 1", round, got)
		}
		done, err := st.Query()
		t.Logf("round %d: %d polls; Query right after: %v, %v", round, polls, done, err)
	}
}

// What the driver reports, for the record, and the facts gpuos relies on.
func TestGPUDevice(t *testing.T) {
	b := gpu(t)
	t.Logf("driver %d from %s", b.DriverVersion(), b.LibraryPath())
	if m := b.MissingEntryPoints(); len(m) > 0 {
		t.Errorf("the driver lacks entry points the backend uses: %v", m)
	}
	infos, err := b.Devices()
	must(t, err)
	for _, info := range infos {
		t.Logf("device %d: %q sm_%d%d, %d SMs, %d MiB, bus %s, UUID %x",
			info.Ordinal, info.Name, info.ComputeMajor, info.ComputeMinor, info.SMCount, info.TotalMemory>>20, info.PCIBusID, info.UUID)
		var attrs []string
		for a := 1; a < len(info.Attributes); a++ {
			if v := info.Attributes[a]; v != 0 {
				attrs = append(attrs, fmt.Sprintf("%s=%d", strings.TrimPrefix(cuda.CUdevice_attribute(a).String(), "CU_DEVICE_ATTRIBUTE_"), v))
			}
		}
		t.Logf("device %d: %d nonzero attributes: %s", info.Ordinal, len(attrs), strings.Join(attrs, " "))
		a := info.Attributes
		for _, want := range []struct {
			attr cuda.CUdevice_attribute
			v    int32
		}{
			{cuda.CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
			{cuda.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
			{cuda.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
		} {
			if a[want.attr] != want.v {
				t.Errorf("device %d: %v = %d, want %d", info.Ordinal, want.attr, a[want.attr], want.v)
			}
		}
		if a[cuda.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] <= 0 || a[cuda.CU_DEVICE_ATTRIBUTE_CLOCK_RATE] <= 0 {
			t.Errorf("device %d: implausible attributes", info.Ordinal)
		}
		if strings.Contains(info.Name, "H100") && (info.ComputeMajor != 9 || info.SMCount < 114) {
			t.Errorf("an H100 reporting sm_%d%d with %d SMs", info.ComputeMajor, info.ComputeMinor, info.SMCount)
		}
	}
	_, d := gpuDevice(t)
	free, total, err := d.MemoryInfo()
	must(t, err)
	least, greatest := d.StreamPriorityRange()
	t.Logf("granularity %d KiB, %d of %d MiB free, stream priorities %d..%d", d.Granularity()>>10, free>>20, total>>20, least, greatest)
}

// PTX that does not compile: the error carries CUDA_ERROR_INVALID_PTX and
// ptxas's log.
func TestGPUJITLog(t *testing.T) {
	_, d := gpuDevice(t)
	bad := ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tmov.u32 %r1, 1;\n\tret;\n}\n" // %r1 never declared
	_, err := d.LoadModule([]byte(bad))
	t.Logf("LoadModule(bad PTX) = %v", err)
	if !errors.Is(err, v1.ErrMalformed) || v1.ResultOf(err) != int32(cuda.CUDA_ERROR_INVALID_PTX) {
		t.Fatalf("want a malformed-image error carrying CUDA_ERROR_INVALID_PTX, got result %d", v1.ResultOf(err))
	}
	if !strings.Contains(err.Error(), "JIT error log") || !strings.Contains(err.Error(), "%r1") {
		t.Fatal("the error does not carry the JIT log naming the undeclared register")
	}
}

// Every thread that calls has the context current, many of them new.
func TestGPUContextOnEveryThread(t *testing.T) {
	_, d := gpuDevice(t)
	p := allocFake(t, d, 1) // allocFake uses only the backend: it works on the GPU too
	checkThreads(t, d, p)
}

// The hot path allocates nothing: launches, copies, memsets, records, queries.
func TestGPUHotPathAllocatesNothing(t *testing.T) {
	_, d := gpuDevice(t)
	checkHotPathAllocs(t, d, string(readTestdata(t, "kernels/bench.ptx")), "empty")
}

// faultPTX stores a word through its pointer argument: at address 8 it
// faults (illegal address), which on an H100 poisons the whole process.
const faultPTX = `.version 8.0
.target sm_80
.address_size 64

.visible .entry poke(.param .u64 p)
{
	.reg .u64 %rd<2>;
	.reg .u32 %r<2>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, 42;
	st.global.u32 [%rd1], %r1;
	ret;
}
`

// A kernel storing to address 8 loses the context: the error surfaces with
// the driver's CUresult, a callback enqueued after the launch receives it,
// and every later call — and every later Open of the device in this process
// — returns it. It runs in a child process, since it poisons the process.
func TestGPUFault(t *testing.T) {
	gpu(t)
	runChild(t, "TestGPUFaultChild")
}

func TestGPUFaultChild(t *testing.T) {
	if !isChild("TestGPUFaultChild") {
		t.Skip("runs in its own process, started by TestGPUFault")
	}
	checkFault(t, gpu(t), faultPTX, "poke")
	t.Logf("pid %d: the context is lost, as expected; the process would now exit and be restarted", os.Getpid())
}

// Launch, copy and memset refuse memory the backend did not map, on the real
// driver too, so a wild pointer from a caller never reaches the hardware.
func TestGPURefusesUnmappedCopies(t *testing.T) {
	_, d := gpuDevice(t)
	s, err := d.NewStream(0)
	must(t, err)
	defer s.Destroy()
	for name, err := range map[string]error{
		"CopyHtoD": s.CopyHtoD(8, []byte{1}),
		"CopyDtoH": s.CopyDtoH(make([]byte, 1), 8),
		"CopyDtoD": s.CopyDtoD(8, 16, 1),
		"Memset":   s.Memset(8, 0, 1, 1),
	} {
		if !errors.Is(err, backend.ErrInvalidArgument) {
			t.Errorf("%s at address 8 = %v, want ErrInvalidArgument", name, err)
		}
	}
	must(t, s.Synchronize())
	if d.Lost() != nil {
		t.Fatal(d.Lost())
	}
}
