package client_test

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/testenv"
)

func TestHostBufferCopies(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, client.Options{Transport: client.TransportRing}), client.SessionOptions{})
	c := ctx(t)
	const n = 3<<20 + 17
	in, err := s.AllocHost(c, n)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := s.AllocHost(c, n)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if len(in.Bytes()) != n {
		t.Fatalf("Bytes() is %d bytes, want %d", len(in.Bytes()), n)
	}
	copy(in.Bytes(), randBytes(n, 5))
	buf, err := s.CreateBuffer(c, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CopyToDevice(buf.At(0), in.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(c); err != nil { // the copy reads in when it runs
		t.Fatal(err)
	}
	if err := s.CopyFromDevice(c, out.Bytes(), buf.At(0), nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in.Bytes(), out.Bytes()) {
		t.Fatal("a copy through host buffers came back different")
	}
	// Parts of a host buffer, and Buffer.Write/Read.
	if err := buf.Write(c, 100, in.Bytes()[1000:5000]); err != nil {
		t.Fatal(err)
	}
	part := out.Bytes()[7 : 7+4000]
	if err := buf.Read(c, 100, part); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(part, in.Bytes()[1000:5000]) {
		t.Fatal("a part of a host buffer came back different")
	}
	// Copies that run past the device buffer are refused.
	if err := buf.Read(c, n-10, out.Bytes()[:100]); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("read past the buffer into host memory: %v", err)
	}
	if st, err := s.Stat(c); err != nil || st.CopyBytes < 2*n {
		t.Fatalf("stat: %+v, %v", st, err)
	}
}

func TestHostBufferNeedsRings(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, client.Options{Transport: client.TransportSocket}), client.SessionOptions{})
	if _, err := s.AllocHost(ctx(t), 4096); !errors.Is(err, client.ErrUnsupported) {
		t.Fatalf("AllocHost on the socket transport: %v, want ErrUnsupported", err)
	}
}

// Host memory handles and ranges are checked like any other.
func TestHostMemoryAttacks(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s, _ := rawSession(t, env, true)
	c := ctx(t)
	var bc v1.BufferCreated
	if err := s.Call(c, &v1.CreateBuffer{Size: 1 << 20}, &bc); err != nil {
		t.Fatal(err)
	}
	var hm v1.HostMapped
	fds, err := s.CallFDs(c, &v1.MapHost{Bytes: 5000}, &hm, nil)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(fds[0])
	if hm.Bytes != 8192 {
		t.Errorf("5000 bytes mapped as %d, want whole pages", hm.Bytes)
	}
	dev := v1.Ref{Buffer: bc.Handle}
	for _, tc := range []struct {
		name string
		m    v1.Message
		want error
	}{
		{"unknown handle", &v1.HostCopy{Dir: v1.DirHtoD, Dev: dev, Host: hm.Handle + 1, Size: 8}, v1.ErrInvalidHandle},
		{"a buffer's handle", &v1.HostCopy{Dir: v1.DirHtoD, Dev: dev, Host: bc.Handle, Size: 8}, v1.ErrInvalidHandle},
		{"past the end", &v1.HostCopy{Dir: v1.DirDtoH, Dev: dev, Host: hm.Handle, Offset: 8000, Size: 200}, v1.ErrInvalidArgument},
		{"offset past the end", &v1.HostCopy{Dir: v1.DirDtoH, Dev: dev, Host: hm.Handle, Offset: 1 << 40, Size: 1}, v1.ErrInvalidArgument},
		{"wrapping", &v1.HostCopy{Dir: v1.DirHtoD, Dev: dev, Host: hm.Handle, Offset: 8, Size: ^uint64(0)}, v1.ErrInvalidArgument},
		{"past the device buffer", &v1.HostCopy{Dir: v1.DirHtoD, Dev: v1.Ref{Buffer: bc.Handle, Offset: 1<<20 - 4}, Host: hm.Handle, Size: 8}, v1.ErrInvalidArgument},
		{"nothing mapped", &v1.MapHost{}, v1.ErrInvalidArgument},
		{"too much at once", &v1.MapHost{Bytes: 1 << 40}, v1.ErrInvalidArgument},
		{"unmap unknown", &v1.UnmapHost{Handle: 77}, v1.ErrInvalidHandle},
	} {
		if _, err := s.CallFDs(c, tc.m, nil, nil); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// What one session may map is bounded.
	var quota error
	for range 8 {
		var r v1.HostMapped
		fds, err := s.CallFDs(c, &v1.MapHost{Bytes: 1 << 30}, &r, nil)
		if err != nil {
			quota = err
			break
		}
		syscall.Close(fds[0])
	}
	if !errors.Is(quota, v1.ErrQuotaExceeded) {
		t.Errorf("mapping 8 GiB: %v, want QuotaExceeded", quota)
	}
	if err := s.Call(c, &v1.UnmapHost{Handle: hm.Handle}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Call(c, &v1.UnmapHost{Handle: hm.Handle}, nil); !errors.Is(err, v1.ErrInvalidHandle) {
		t.Errorf("second unmap: %v", err)
	}
	if err := s.Call(c, &v1.HostCopy{Dir: v1.DirHtoD, Dev: dev, Host: hm.Handle, Size: 8}, nil); !errors.Is(err, v1.ErrInvalidHandle) {
		t.Errorf("copy from unmapped host memory: %v", err)
	}
}
