package client_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/testenv"
)

// twoTenants is a configuration with two token tenants, alice with a small
// memory quota and bob without rights to launch.
func twoTenants(t *testing.T) *config.Config {
	cfg, err := config.Parse([]byte(`
tenants:
  - name: alice
    token: alice-token
    memory: 64MiB
  - name: bob
    token: bob-token
    rights: [alloc, copy, stream, grant, load]
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestUnknownClientDenied(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: twoTenants(t)})
	c := ctx(t)
	for _, o := range []client.Options{
		{Socket: env.Socket},                                      // our uid is no tenant's
		{Socket: env.Socket, Token: "guess"},                      // unknown token
		{Socket: env.Socket, Token: "alice-token", Tenant: "bob"}, // someone else's tenant
	} {
		if cl, err := client.Dial(c, o); !errors.Is(err, client.ErrPermissionDenied) {
			if cl != nil {
				cl.Close()
			}
			t.Errorf("dial with %+v: %v, want ErrPermissionDenied", o, err)
		}
	}
	cl := env.Dial(t, client.Options{Token: "alice-token"})
	s := env.Session(t, cl, client.SessionOptions{})
	if s.Tenant() != "alice" {
		t.Errorf("tenant = %q, want alice", s.Tenant())
	}
}

func TestQuotaExceeded(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: twoTenants(t)})
	cl := env.Dial(t, client.Options{Token: "alice-token"})
	s1 := env.Session(t, cl, client.SessionOptions{})
	s2 := env.Session(t, cl, client.SessionOptions{})
	c := ctx(t)
	free, total, err := s1.MemInfo(c)
	if err != nil || total != 64<<20 || free != total {
		t.Fatalf("MemInfo = %d, %d, %v; want the 64 MiB quota, all free", free, total, err)
	}
	b, err := s1.CreateBuffer(c, 48<<20)
	if err != nil {
		t.Fatal(err)
	}
	// The quota spans the tenant's sessions.
	if _, err := s2.CreateBuffer(c, 32<<20); !errors.Is(err, client.ErrQuotaExceeded) {
		t.Fatalf("second session over quota: %v, want ErrQuotaExceeded", err)
	}
	if free, _, _ := s2.MemInfo(c); free != 16<<20 {
		t.Errorf("free after 48 MiB = %d, want 16 MiB", free)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.CreateBuffer(c, 32<<20); err != nil {
		t.Fatalf("after freeing: %v", err)
	}
}

func TestRestrictedSessionCannotLaunch(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: twoTenants(t)})
	c := ctx(t)
	check := func(s *client.Session) {
		t.Helper()
		k := vecadd(t, s)
		buf, _ := s.CreateBuffer(c, 1024)
		// Launch is asynchronous: the refusal surfaces at the next synchronizing call.
		if err := s.Launch(k, client.LaunchConfig{Grid: client.Dim3{X: 1}, Block: client.Dim3{X: 32}}, buf, buf, buf, int32(1)); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(c); !errors.Is(err, client.ErrPermissionDenied) {
			t.Fatalf("synchronize after a forbidden launch: %v, want ErrPermissionDenied", err)
		}
		if st, _ := s.Stat(c); st.Launches != 0 {
			t.Errorf("launches = %d, want 0", st.Launches)
		}
	}
	// bob's tenant has no launch right at all.
	check(env.Session(t, env.Dial(t, client.Options{Token: "bob-token"}), client.SessionOptions{}))
	// alice restricts her own session; rights never widen again.
	s := env.Session(t, env.Dial(t, client.Options{Token: "alice-token"}), client.SessionOptions{})
	r, err := s.Restrict(c, client.AllSessionRights&^client.RightLaunch)
	if err != nil || r.Has(client.RightLaunch) {
		t.Fatalf("restrict = %v, %v", r, err)
	}
	if r, _ := s.Restrict(c, client.AllSessionRights); r.Has(client.RightLaunch) {
		t.Fatal("restrict widened the rights again")
	}
	check(s)
	// A copy-only session cannot even allocate.
	s3 := env.Session(t, env.Dial(t, client.Options{Token: "alice-token"}), client.SessionOptions{Rights: client.RightCopy})
	if _, err := s3.CreateBuffer(c, 16); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("copy-only session allocated: %v", err)
	}
}

func TestRevokedBufferRefused(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, client.Options{}), client.SessionOptions{})
	c := ctx(t)
	b, err := s.CreateBuffer(c, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Revoke(c); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(c, 0, []byte{1}); !errors.Is(err, client.ErrRevoked) {
		t.Errorf("write after revoke: %v, want ErrRevoked", err)
	}
	if err := s.CopyFromDevice(c, make([]byte, 4), client.Addr(b.Addr()), nil); err == nil {
		t.Error("address of a revoked buffer still readable")
	}
	if err := b.Close(); err != nil {
		t.Errorf("close after revoke: %v", err)
	}
	if err := b.Write(c, 0, []byte{1}); !errors.Is(err, client.ErrInvalidHandle) {
		t.Errorf("write after close: %v, want ErrInvalidHandle", err)
	}
	if st, _ := s.Stat(c); st.Buffers != 0 || st.MemoryBytes != 0 {
		t.Errorf("after revoke and close: %d buffers, %d bytes", st.Buffers, st.MemoryBytes)
	}
}

func TestGrantAttachRevoke(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: twoTenants(t)})
	c := ctx(t)
	a := env.Session(t, env.Dial(t, client.Options{Token: "alice-token"}), client.SessionOptions{})
	b := env.Session(t, env.Dial(t, client.Options{Token: "bob-token"}), client.SessionOptions{})
	buf, err := a.CreateBuffer(c, 1<<20, client.Shareable)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("gpuos!"), 1000)
	if err := buf.Write(c, 0, want); err != nil {
		t.Fatal(err)
	}
	g, err := a.Grant(c, buf, client.BufferRead)
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.Attach(c, g.Token())
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if err := m.Read(c, 0, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the receiver reads different bytes")
	}
	if err := m.Write(c, 0, []byte("x")); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("write to a read-only grant: %v, want ErrPermissionDenied", err)
	}
	// A small buffer shares its chunk with neighbours and cannot be granted.
	small, _ := a.CreateBuffer(c, 64)
	if _, err := a.Grant(c, small, client.BufferRead); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("grant of a sub-allocated buffer: %v, want ErrInvalidArgument", err)
	}
	if err := g.Revoke(c); err != nil {
		t.Fatal(err)
	}
	if err := m.Read(c, 0, got[:8]); !errors.Is(err, client.ErrRevoked) {
		t.Errorf("read after the grant was revoked: %v, want ErrRevoked", err)
	}
	if _, err := b.Attach(c, g.Token()); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("attach with a revoked token: %v, want ErrNotFound", err)
	}
	// The owner still has its buffer.
	if err := buf.Read(c, 0, got); err != nil || !bytes.Equal(got, want) {
		t.Errorf("owner's read after revoke: %v", err)
	}
}

func TestStreamsAndFences(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, client.Options{}), client.SessionOptions{})
	c := ctx(t)
	st1, err := s.CreateStream(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := s.CreateStream(c, -100) // clamped into the device's range
	if err != nil {
		t.Fatal(err)
	}
	buf, _ := s.CreateBuffer(c, 1<<20)
	start, err := s.Record(c, st1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Memset(buf.At(0), 0x01020304, 4, 1<<18, st1); err != nil {
		t.Fatal(err)
	}
	end, err := s.Record(c, st1)
	if err != nil {
		t.Fatal(err)
	}
	// st2 waits for st1's memset before copying.
	if err := st2.WaitFence(end); err != nil {
		t.Fatal(err)
	}
	dst, _ := s.CreateBuffer(c, 1<<20)
	if err := s.CopyDevice(dst.At(0), buf.At(0), 1<<20, st2); err != nil {
		t.Fatal(err)
	}
	if err := end.Wait(c, time.Minute); err != nil {
		t.Fatal(err)
	}
	if done, err := end.Poll(c); !done || err != nil {
		t.Errorf("poll after wait = %v, %v", done, err)
	}
	d, err := client.Elapsed(c, start, end)
	if err != nil || d <= 0 {
		t.Errorf("elapsed = %v, %v; want a positive device time", d, err)
	}
	if err := st2.Synchronize(c); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 8)
	if err := dst.Read(c, (1<<20)-8, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte{4, 3, 2, 1, 4, 3, 2, 1}) {
		t.Errorf("tail of the copied memset = % x", got)
	}
	for _, obj := range []interface{ Close() error }{start, end, st1, st2} {
		if err := obj.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	if _, err := s.Record(c, st1); !errors.Is(err, client.ErrInvalidHandle) {
		t.Errorf("record on a closed stream: %v, want ErrInvalidHandle", err)
	}
}

func TestMemcpyAllDirections(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, client.Options{}), client.SessionOptions{})
	c := ctx(t)
	a, _ := s.CreateBuffer(c, 9<<20) // larger than one request: copies are split
	b, _ := s.CreateBuffer(c, 9<<20)
	src := make([]byte, 9<<20)
	for i := range src {
		src[i] = byte(i * 7)
	}
	if err := s.CopyToDevice(a.At(0), src, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyDevice(b.At(0), a.At(0), uint64(len(src)), nil); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(src))
	if err := s.CopyFromDevice(c, got, b.At(0), nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("HtoD, DtoD, DtoH round trip differs")
	}
	if err := s.Memset(b.At(3), 0xab, 1, 5, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Memset(b.At(2), 0xabcd, 2, 5, nil); err != nil { // 2-byte aligned
		t.Fatal(err)
	}
	if err := s.Memset(b.At(1), 0xabcd, 2, 1, nil); err != nil { // misaligned: refused, reported at sync
		t.Fatal(err)
	}
	if err := s.Synchronize(c); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("misaligned memset: %v, want ErrInvalidArgument at synchronize", err)
	}
	if err := s.Synchronize(c); err != nil {
		t.Errorf("the deferred error was reported twice: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, client.Options{}), client.SessionOptions{})
	c := ctx(t)
	if _, err := s.LoadProgram(c, []byte(".version 9.0\n.target sm_90\n.address_size 64\n.entry f( { bogus; }"), "bad"); !errors.Is(err, client.ErrMalformed) {
		t.Errorf("load of bad PTX: %v, want ErrMalformed", err)
	}
	if _, err := s.LoadProgram(c, nil, "empty"); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("load of nothing: %v", err)
	}
	prog, err := s.LoadProgram(c, readFile(t, "../testdata/kernels/vecadd.ptx"), "vecadd")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prog.Kernel(c, "nope"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("unknown kernel: %v, want ErrNotFound", err)
	}
	k, _ := prog.Kernel(c, "vecadd")
	if _, err := k.Pack(uint64(1)); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("too few arguments: %v", err)
	}
	if _, err := k.Pack(uint64(1), uint64(2), uint64(3), uint64(4)); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("an 8-byte value for a 4-byte parameter: %v", err)
	}
	// A block larger than the kernel allows is refused (at the next synchronize).
	if err := s.LaunchRaw(k, client.LaunchConfig{Grid: client.Dim3{X: 1}, Block: client.Dim3{X: 2048}}, make([]byte, 28)); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(c); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("oversized block: %v, want ErrInvalidArgument", err)
	}
	if err := prog.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.LaunchRaw(k, client.LaunchConfig{Grid: client.Dim3{X: 1}, Block: client.Dim3{X: 1}}, make([]byte, 28)); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(c); !errors.Is(err, client.ErrRevoked) {
		t.Errorf("kernel of a closed program: %v, want ErrRevoked", err)
	}
}
