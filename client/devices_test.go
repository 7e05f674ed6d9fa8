package client_test

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/testenv"
)

func TestDevices(t *testing.T) {
	env := testenv.Start(t, testenv.Options{SimMemory: "3GiB"})
	cl := env.Dial(t, client.Options{})
	devs, err := cl.Devices(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) < 1 || devs[0].TotalMemory == 0 || devs[0].ComputeMajor == 0 || devs[0].SMCount == 0 {
		t.Fatalf("devices = %+v", devs)
	}
	if cl.Backend() == "sim" && (len(devs) != 1 || devs[0].TotalMemory != 3<<30 || devs[0].ComputeMajor != 9) {
		t.Fatalf("sim devices = %+v, want one sm_90 device with the 3 GiB asked for", devs)
	}
	if a := devs[0].Attributes; len(a) < 100 || a[1] != 1024 { // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
		t.Errorf("attributes: %d entries, max threads per block %v", len(a), a[1:2])
	}
	if want := os.Getenv("GPUOS_TEST_BACKEND"); cl.Backend() != want && !(want == "" && cl.Backend() == "sim") {
		t.Errorf("backend = %q, want %q", cl.Backend(), want)
	}
	if _, err := cl.OpenSession(ctx(t), client.SessionOptions{Device: 5}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("session on a missing device: %v, want ErrNotFound", err)
	}
}

// counterPTX has a module-scope variable that a kernel increments.
const counterPTX = `
.version 8.0
.target sm_80
.address_size 64

.visible .global .align 4 .u32 counter = 5;

.visible .entry bump(.param .u32 by)
{
	.reg .b32 %r<3>;
	ld.param.u32 %r1, [by];
	atom.global.add.u32 %r2, [counter], %r1;
	ret;
}
`

func TestModuleGlobal(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, client.Options{}), client.SessionOptions{})
	c := ctx(t)
	p, err := s.LoadProgram(c, []byte(counterPTX), "counter")
	if err != nil {
		t.Fatal(err)
	}
	addr, size, err := p.Global(c, "counter")
	if err != nil || size != 4 {
		t.Fatalf("global = %#x, %d, %v", addr, size, err)
	}
	k, err := p.Kernel(c, "bump")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Launch(k, client.LaunchConfig{Grid: client.Dim3{X: 4}, Block: client.Dim3{X: 64}}, uint32(2)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if err := s.CopyFromDevice(c, got, client.Addr(addr), nil); err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(got); v != 5+4*64*2 {
		t.Errorf("counter = %d, want %d", v, 5+4*64*2)
	}
	if err := s.CopyToDevice(client.Addr(addr), []byte{9, 0, 0, 0}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyFromDevice(c, got, client.Addr(addr), nil); err != nil || got[0] != 9 {
		t.Errorf("after writing the global: % x, %v", got, err)
	}
	if _, _, err := p.Global(c, "nope"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("missing global: %v", err)
	}
	// Past the end of the global is not addressable.
	if err := s.CopyFromDevice(c, make([]byte, 8), client.Addr(addr), nil); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("read past the global: %v", err)
	}
}
