package client_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	membench "github.com/gpuos/gpuos/bench/mem"
	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/testenv"
)

// shareTenants: a owns, b is let in, c is not; q has a small quota.
func shareTenants(t *testing.T) *config.Config {
	cfg, err := config.Parse([]byte(`
tenants:
  - name: a
    token: a-token
  - name: b
    token: b-token
  - name: c
    token: c-token
  - name: q
    token: q-token
    memory: 8MiB
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func words(n int, base uint32) []byte {
	b := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], base+uint32(i))
	}
	return b
}

// A buffer tenant a wrote is read by tenant b through a grant; b cannot
// write through a read-only grant; revoking the grant takes b's mapping away.
func TestGrantAcrossTenants(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: shareTenants(t)})
	c := ctx(t)
	sa := env.Session(t, env.Dial(t, client.Options{Token: "a-token"}), client.SessionOptions{})
	sb := env.Session(t, env.Dial(t, client.Options{Token: "b-token"}), client.SessionOptions{})
	buf, err := sa.CreateBuffer(c, 1<<20, client.Shareable)
	if err != nil {
		t.Fatal(err)
	}
	data := words(1<<18, 0xa000)
	if err := buf.Write(c, 0, data); err != nil {
		t.Fatal(err)
	}
	g, err := sa.Grant(c, buf, client.BufferRead)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sb.Attach(c, g.Token())
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if err := m.Read(c, 0, got); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("b reads a's buffer through the grant: %v, equal %v", err, bytes.Equal(got, data))
	}
	if m.Addr() == buf.Addr() {
		t.Error("the mapping has the owner's address: it should be in b's own window")
	}
	if err := m.Write(c, 0, []byte{1, 2, 3, 4}); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("write through a read-only grant: %v, want permission denied", err)
	}
	if err := g.Revoke(c); err != nil {
		t.Fatal(err)
	}
	if err := m.Read(c, 0, got[:4]); !errors.Is(err, client.ErrRevoked) {
		t.Errorf("read after the grant was revoked: %v, want revoked", err)
	}
	if _, err := sb.Attach(c, g.Token()); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("attach of a revoked grant: %v, want not found", err)
	}
}

// The shm-like API: a makes a named segment and lets b read it; b finds it
// by name and reads what a wrote, and its kernels work on it at b's own
// address; narrowing, revoking and removing behave as documented; c and a
// quota-bound tenant get typed errors.
func TestSegmentsAcrossTenants(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: shareTenants(t)})
	c := ctx(t)
	sa := env.Session(t, env.Dial(t, client.Options{Token: "a-token"}), client.SessionOptions{})
	sa2 := env.Session(t, env.Dial(t, client.Options{Token: "a-token"}), client.SessionOptions{})
	sb := env.Session(t, env.Dial(t, client.Options{Token: "b-token"}), client.SessionOptions{})
	sc := env.Session(t, env.Dial(t, client.Options{Token: "c-token"}), client.SessionOptions{})
	sq := env.Session(t, env.Dial(t, client.Options{Token: "q-token"}), client.SessionOptions{})
	const n = 1 << 18 // words
	key := client.ShmKey{Owner: "a", Name: "frames"}

	if _, err := sa.ShmGet(c, client.Shm("frames"), 0, 0); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("get before create: %v, want not found", err)
	}
	seg, err := sa.ShmGet(c, client.Shm("frames"), 4*n, client.ShmCreate|client.ShmExclusive)
	if err != nil {
		t.Fatal(err)
	}
	if !seg.Created() || seg.Size() < 4*n || seg.Owner() != "a" {
		t.Errorf("segment %+v: want created by a, at least %d bytes", seg, 4*n)
	}
	if _, err := sa.ShmGet(c, client.Shm("frames"), 4*n, client.ShmCreate|client.ShmExclusive); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("exclusive create of an existing segment: %v, want invalid argument", err)
	}
	wa, err := seg.Attach(c, false)
	if err != nil {
		t.Fatal(err)
	}
	data := words(n, 0x5000)
	if err := wa.Write(c, 0, data); err != nil {
		t.Fatal(err)
	}

	// Another session of the owner finds it by name and sees the data.
	seg2, err := sa2.ShmGet(c, client.Shm("frames"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := seg2.Attach(c, true)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4096)
	if err := m2.Read(c, 0, got); err != nil || !bytes.Equal(got, data[:4096]) {
		t.Errorf("owner's second session reads the segment: %v", err)
	}

	// b is not let in yet; c never is, and cannot create in a's name.
	if _, err := sb.ShmGet(c, key, 0, 0); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("b before Allow: %v, want permission denied", err)
	}
	if _, err := sc.ShmGet(c, client.ShmKey{Owner: "a", Name: "x"}, 4096, client.ShmCreate); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("c creating in a's name: %v, want permission denied", err)
	}
	if err := seg.Allow(c, "b", client.BufferRead|client.BufferWrite); err != nil {
		t.Fatal(err)
	}
	segB, err := sb.ShmGet(c, key, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := segB.Allow(c, "c", client.BufferRead); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("b sharing a's segment: %v, want permission denied", err)
	}
	mb, err := segB.Attach(c, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := mb.Read(c, 0, got); err != nil || !bytes.Equal(got, data[:4096]) {
		t.Fatalf("b reads a's segment: %v", err)
	}
	// b's kernels work on the segment at b's address; a sees the result.
	k, err := membench.Load(c, sb)
	if err != nil {
		t.Fatal(err)
	}
	errs, err := sb.CreateBuffer(c, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Memset(errs.At(0), 0, 4, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := sb.Launch(k.PassCheck, membench.Grid, mb, uint64(n), uint32(0x5000), errs); err != nil {
		t.Fatal(err)
	}
	if err := sb.Synchronize(c); err != nil {
		t.Fatal(err)
	}
	var cnt [4]byte
	if err := errs.Read(c, 0, cnt[:]); err != nil || binary.LittleEndian.Uint32(cnt[:]) != 0 {
		t.Errorf("b's kernel found %d wrong words in a's data (%v)", binary.LittleEndian.Uint32(cnt[:]), err)
	}
	if err := wa.Read(c, 0, got); err != nil || !bytes.Equal(got, words(1024, 0x5001)) {
		t.Errorf("a does not see b's kernel's writes: %v", err)
	}

	st, err := seg.Stat(c)
	if err != nil {
		t.Fatal(err)
	}
	if st.Handles != 3 || st.Mappings != 3 || len(st.Allowed) != 1 || st.Allowed[0].Tenant != "b" || st.Removed {
		t.Errorf("stat %+v: want 3 handles, 3 mappings, b allowed, not removed", st)
	}

	// Narrowing b to read-only narrows what b holds; no rights revokes it.
	if err := seg.Allow(c, "b", client.BufferRead); err != nil {
		t.Fatal(err)
	}
	if err := mb.Write(c, 0, []byte{1, 2, 3, 4}); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("b writes after being narrowed to read: %v, want permission denied", err)
	}
	if err := mb.Read(c, 0, got); err != nil {
		t.Errorf("b reads after being narrowed to read: %v", err)
	}
	if err := seg.Allow(c, "b", 0); err != nil {
		t.Fatal(err)
	}
	if err := mb.Read(c, 0, got); !errors.Is(err, client.ErrRevoked) {
		t.Errorf("b reads after its access was revoked: %v, want revoked", err)
	}
	if _, err := sb.ShmGet(c, key, 0, 0); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("b gets after its access was revoked: %v, want permission denied", err)
	}

	// Removing takes the name; the memory stays while a handle holds it.
	if err := seg.Remove(c); err != nil {
		t.Fatal(err)
	}
	if _, err := sa2.ShmGet(c, client.Shm("frames"), 0, 0); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("get after remove: %v, want not found", err)
	}
	if err := m2.Read(c, 0, got); err != nil {
		t.Errorf("a mapping of a removed segment still held: %v", err)
	}
	if err := seg2.Detach(m2); err != nil {
		t.Fatal(err)
	}
	if err := seg.Close(); err != nil { // unmaps wa
		t.Fatal(err)
	}
	if err := wa.Read(c, 0, got[:4]); !errors.Is(err, client.ErrRevoked) {
		t.Errorf("mapping after its segment handle was closed: %v, want revoked", err)
	}

	// Quotas: a segment is charged to its owner.
	if _, err := sq.ShmGet(c, client.Shm("big"), 16<<20, client.ShmCreate); !errors.Is(err, client.ErrQuotaExceeded) {
		t.Errorf("segment past the quota: %v, want quota exceeded", err)
	}
	if _, err := sq.ShmGet(c, client.Shm(""), 4096, client.ShmCreate); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("segment with an empty name: %v, want invalid argument", err)
	}
}

// A tenant's segments go when its last session does: other tenants lose
// their handles and mappings.
func TestSegmentsGoWithTheirTenant(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: shareTenants(t)})
	c := ctx(t)
	cla := env.Dial(t, client.Options{Token: "a-token"})
	sa, err := cla.OpenSession(c, client.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sb := env.Session(t, env.Dial(t, client.Options{Token: "b-token"}), client.SessionOptions{})
	seg, err := sa.ShmGet(c, client.Shm("s"), 1<<20, client.ShmCreate)
	if err != nil {
		t.Fatal(err)
	}
	if err := seg.Allow(c, "b", client.BufferRead); err != nil {
		t.Fatal(err)
	}
	segB, err := sb.ShmGet(c, client.ShmKey{Owner: "a", Name: "s"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := segB.Attach(c, true)
	if err != nil {
		t.Fatal(err)
	}
	sa.Close()
	<-sa.Done()
	var got [4]byte
	for {
		err := mb.Read(c, 0, got[:])
		if errors.Is(err, client.ErrRevoked) {
			break
		}
		if err != nil {
			t.Fatalf("b's mapping after a left: %v, want revoked", err)
		}
		// a's session is still being torn down.
	}
	if _, err := sb.ShmGet(c, client.ShmKey{Owner: "a", Name: "s"}, 0, 0); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("a's segment after a left: %v, want not found", err)
	}
}

// The two-stage pipeline of the GPU benchmark (bench/mem) hands data from
// one tenant to another both ways, and the consumer finds it intact.
func TestPipelineModes(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: shareTenants(t)})
	c := ctx(t)
	sa := env.Session(t, env.Dial(t, client.Options{Token: "a-token"}), client.SessionOptions{})
	sb := env.Session(t, env.Dial(t, client.Options{Token: "b-token"}), client.SessionOptions{})
	p, err := membench.NewPipeline(c, sa, sb, "b", 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, mode := range []membench.Mode{membench.ThroughSegment, membench.ThroughHost} {
		if _, err := p.Run(c, mode, 2); err != nil {
			t.Errorf("%v: %v", mode, err)
		}
	}
}
