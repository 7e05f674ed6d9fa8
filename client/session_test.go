package client_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/testenv"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// vecadd loads testdata/kernels/vecadd.ptx into s and returns its kernel.
func vecadd(t *testing.T, s *client.Session) *client.Kernel {
	t.Helper()
	c := ctx(t)
	prog, err := s.LoadProgram(c, readFile(t, "../testdata/kernels/vecadd.ptx"), "vecadd")
	if err != nil {
		t.Fatal(err)
	}
	k, err := prog.Kernel(c, "vecadd")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesf32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func TestBufferWriteRead(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, client.Options{}), client.SessionOptions{Label: "rw"})
	c := ctx(t)
	b, err := s.CreateBuffer(c, 10<<20)
	if err != nil {
		t.Fatal(err)
	}
	base, size := s.Window()
	if b.Addr() < base || b.Addr()+b.Size() > base+size {
		t.Errorf("buffer [%#x,+%d) outside window [%#x,+%#x)", b.Addr(), b.Size(), base, size)
	}
	data := make([]byte, 10<<20)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	if err := b.Write(c, 0, data); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if err := b.Read(c, 0, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("read back differs from what was written")
	}
	// Address-based copies reach the same memory.
	part := make([]byte, 100)
	if err := s.CopyFromDevice(c, part, client.Addr(b.Addr()+1000), nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(part, data[1000:1100]) {
		t.Fatal("address-based read differs")
	}
	if err := b.Read(c, b.Size()-10, make([]byte, 20)); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("read past the end: %v, want ErrInvalidArgument", err)
	}
}

func TestVectorAdd(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, client.Options{}), client.SessionOptions{})
	c := ctx(t)
	prog, err := s.LoadProgram(c, readFile(t, "../testdata/kernels/vecadd.ptx"), "vecadd")
	if err != nil {
		t.Fatal(err)
	}
	if k := prog.Kernels(); len(k) != 1 || k[0] != "vecadd" {
		t.Errorf("kernels = %v, want [vecadd]", k)
	}
	k, err := prog.Kernel(c, "vecadd")
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	a, b := make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], b[i] = rand.Float32()*100-50, rand.Float32()*100-50
	}
	da, _ := s.CreateBuffer(c, 4*n)
	db, _ := s.CreateBuffer(c, 4*n)
	dc, err := s.CreateBuffer(c, 4*n)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CopyToDevice(da.At(0), f32bytes(a), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyToDevice(db.At(0), f32bytes(b), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Launch(k, client.LaunchConfig{Grid: client.Dim3{X: (n + 255) / 256}, Block: client.Dim3{X: 256}}, da, db, dc, int32(n)); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4*n)
	if err := s.CopyFromDevice(c, out, dc.At(0), nil); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesf32(out) {
		if v != a[i]+b[i] {
			t.Fatalf("c[%d] = %v, want %v", i, v, a[i]+b[i])
		}
	}
	if err := s.Synchronize(c); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stat(c)
	if err != nil {
		t.Fatal(err)
	}
	if st.Launches != 1 || st.Buffers != 3 {
		t.Errorf("stat launches=%d buffers=%d, want 1 and 3", st.Launches, st.Buffers)
	}
}
