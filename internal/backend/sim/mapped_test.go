package sim

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/gpuos/gpuos/internal/backend"
)

const mappedPTX = `
.version 8.0
.target sm_90
.address_size 64
.visible .entry bump(.param .u64 p)
{
	.reg .b64 %rd<2>;
	.reg .b32 %r<2>;
	ld.param.u64 %rd1, [p];
	atom.global.add.u32 %r1, [%rd1], 1;
	st.global.u32 [%rd1+4], 7;
	ret;
}
`

// Kernels write mapped host memory at its device address; the host sees the
// writes once the launch completed, without a copy.
func TestAllocMappedHost(t *testing.T) {
	dev, err := New(Options{Memory: 64 << 20}).Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ma, ok := dev.(backend.MappedHostAllocator)
	if !ok {
		t.Fatal("the sim device is not a MappedHostAllocator")
	}
	free0, _, _ := dev.MemoryInfo()
	hm, ptr, err := ma.AllocMappedHost(64)
	if err != nil {
		t.Fatal(err)
	}
	if free, _, _ := dev.MemoryInfo(); free != free0 {
		t.Errorf("mapped host memory was counted as device memory: free %d -> %d", free0, free)
	}
	if len(hm.Bytes()) != 64 || ptr == 0 {
		t.Fatalf("got %d bytes at %#x", len(hm.Bytes()), uint64(ptr))
	}
	mod, err := dev.LoadModule([]byte(mappedPTX))
	if err != nil {
		t.Fatal(err)
	}
	fn, err := mod.Function("bump")
	if err != nil {
		t.Fatal(err)
	}
	st, err := dev.NewStream(0)
	if err != nil {
		t.Fatal(err)
	}
	params := binary.LittleEndian.AppendUint64(nil, uint64(ptr))
	if err := st.Launch(fn, backend.LaunchConfig{Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{32, 1, 1}}, params); err != nil {
		t.Fatal(err)
	}
	if err := st.Synchronize(); err != nil {
		t.Fatal(err)
	}
	b := hm.Bytes()
	if got, want := binary.LittleEndian.Uint32(b), uint32(64); got != want {
		t.Errorf("count = %d, want %d", got, want)
	}
	if got := binary.LittleEndian.Uint32(b[4:]); got != 7 {
		t.Errorf("stored %d, want 7", got)
	}
	// Pinned: a copy into it is asynchronous and lands.
	if err := st.CopyDtoH(b[8:16], ptr); err != nil {
		t.Fatal(err)
	}
	if err := st.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(b[8:]) != 64 {
		t.Errorf("copy from the device address into the same memory: %x", b[8:16])
	}
	if err := hm.Free(); err != nil {
		t.Fatal(err)
	}
	if err := hm.Free(); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("second Free = %v", err)
	}
	if _, _, err := ma.AllocMappedHost(0); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Errorf("AllocMappedHost(0) = %v", err)
	}
}
