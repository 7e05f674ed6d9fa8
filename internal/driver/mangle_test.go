package driver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/wire"
)

// sassImage stands for an allowlisted machine-code module: the software GPU
// cannot load SASS, so sassBackend loads the PTX behind it, and the driver,
// seeing no PTX, has only the kernels' names to tell which parameters may be
// addresses.
var sassImage = []byte("\x7fELF gpuos test cubin")

const sassPTX = `.version 8.0
.target sm_80
.address_size 64
// float*, long, double, std::nullptr_t
.visible .entry _Z6kernelPfldDn(.param .u64 p0, .param .u64 p1, .param .f64 p2, .param .u64 p3) { ret; }
// the same, extern "C"
.visible .entry kernel_c(.param .u64 p0, .param .u64 p1, .param .f64 p2, .param .u64 p3) { ret; }
// a name that says two parameters, of a kernel that has four
.visible .entry _Z6kernelPfd(.param .u64 p0, .param .u64 p1, .param .f64 p2, .param .u64 p3) { ret; }
// CuPy's: init_curand(intptr_t state, uint64_t seed, ssize_t size)
.visible .entry _Z11init_curandI19curand_pseudo_stateI17curandStateXORWOWEEvlml(.param .u64 p0, .param .u64 p1, .param .u64 p2) { ret; }
`

type sassBackend struct{ backend.Backend }

type sassDevice struct{ backend.Device }

func (b sassBackend) Open(ordinal int) (backend.Device, error) {
	dev, err := b.Backend.Open(ordinal)
	if err != nil {
		return nil, err
	}
	return sassDevice{dev}, nil
}

func (d sassDevice) LoadModule(image []byte) (backend.Module, error) {
	if string(image) == string(sassImage) {
		image = []byte(sassPTX)
	}
	return d.Device.LoadModule(image)
}

// TestTrustedSASSArgsByMangledName: for allowlisted machine code, an 8-byte
// argument outside the session's window that looks like an address is
// accepted where the kernel's mangled name gives it a floating-point or
// nullptr_t type, and refused where it is a pointer, an integer (intptr_t
// carries addresses), or where the name does not say (extern "C", a count
// that disagrees).
func TestTrustedSASSArgsByMangledName(t *testing.T) {
	td := newDriverOn(t, sassBackend{sim.New(sim.Options{Memory: 64 << 20})}, Options{})
	c0, c1, err := wire.Pair()
	if err != nil {
		t.Fatal(err)
	}
	s, err := td.d.Attach(&v1.AttachSession{SessionID: nextTestSession.Add(1), Tenant: "vendor", Rights: v1.AllSessionRights,
		Weight: 1, Trust: v1.TrustTrusted, TrustedModules: [][32]byte{sha256.Sum256(sassImage)}}, c1)
	if err != nil {
		t.Fatal(err)
	}
	rpc := wire.NewClient(c0)
	t.Cleanup(func() {
		rpc.Close()
		<-s.Done()
	})
	ts := &testSession{t: t, rpc: rpc, s: s}
	var hr v1.HelloReply
	if err := rpc.Call(context.Background(), v1.NewHello(v1.RoleClient, "", "test"), &hr); err != nil {
		t.Fatal(err)
	}
	var p v1.ProgramLoaded
	ts.must(&v1.LoadProgram{Image: sassImage, Name: "vendor.cubin"}, &p)
	buf := ts.buffer(4096, 0)
	lo, hi := s.window.GuardRange()
	in, out := buf.Addr, uint64(hi)+1<<30
	if in < uint64(lo) || in >= uint64(hi) || out >= noAddressFrom {
		t.Fatalf("buffer %#x, window %#x..%#x: no address outside it to try", in, uint64(lo), uint64(hi))
	}
	half := math.Float64bits(0.5)
	tests := []struct {
		name    string
		kernel  string
		args    []uint64
		wantArg int // -1: accepted
	}{
		{"arguments inside the window", "_Z6kernelPfldDn", []uint64{in, in, half, 0}, -1},
		{"a double whose bits look like an address", "_Z6kernelPfldDn", []uint64{in, in, out, 0}, -1},
		{"a nullptr_t whose bits look like an address", "_Z6kernelPfldDn", []uint64{in, in, half, out}, -1},
		{"a pointer outside", "_Z6kernelPfldDn", []uint64{out, in, half, 0}, 0},
		{"a long outside: it may be an intptr_t", "_Z6kernelPfldDn", []uint64{in, out, half, 0}, 1},
		{"extern C: every 8-byte argument is checked", "kernel_c", []uint64{in, in, out, 0}, 2},
		{"the name's parameters are not the kernel's: all checked", "_Z6kernelPfd", []uint64{in, in, out, 0}, 2},
		{"init_curand's state pointer outside", "_Z11init_curandI19curand_pseudo_stateI17curandStateXORWOWEEvlml", []uint64{out, 7, 1024}, 0},
		{"init_curand inside", "_Z11init_curandI19curand_pseudo_stateI17curandStateXORWOWEEvlml", []uint64{in, 7, 1024}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var k v1.KernelInfo
			ts.must(&v1.GetKernel{Program: p.Handle, Name: tt.kernel}, &k)
			err := ts.call(&v1.Launch{Kernel: k.Handle, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, Params: pack(k, tt.args...)}, nil)
			if err == nil {
				err = ts.call(&v1.Synchronize{}, nil)
			}
			if tt.wantArg < 0 {
				if err != nil {
					t.Fatalf("launch refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrTrustedArgument) || !strings.Contains(err.Error(), fmt.Sprintf("argument %d ", tt.wantArg)) {
				t.Fatalf("launch: %v, want %v for argument %d", err, ErrTrustedArgument, tt.wantArg)
			}
		})
	}
}

func TestMangledPointers(t *testing.T) {
	tests := []struct {
		name string
		n    int
		want []bool // nil: every parameter is checked
	}{
		{"_Z6kernelPfldDn", 4, []bool{true, true, false, false}},
		{"_Z11init_curandI19curand_pseudo_stateI17curandStateXORWOWEEvlml", 3, []bool{true, true, true}},
		{"_Z5scalePffi", 3, []bool{true, false, true}},
		{"_Z1fIJdfEEvPiDpT_", 3, []bool{true, true, true}},
		{"_Z1fRKd", 1, []bool{true}},
		{"_Z1fKd", 1, []bool{false}},
		{"_Z6kernelPfd", 4, nil},
		{"kernel_c", 4, nil},
		{"_Z1fz", 1, nil},
	}
	for _, tt := range tests {
		got := mangledPointers(tt.name, tt.n)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) || (got == nil) != (tt.want == nil) {
			t.Errorf("mangledPointers(%s, %d) = %v, want %v", tt.name, tt.n, got, tt.want)
		}
	}
}
