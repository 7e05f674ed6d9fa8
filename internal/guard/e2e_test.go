package guard_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/testenv"
)

// The test binary is also the driver process the daemon starts.
func TestMain(m *testing.M) { testenv.Main(m) }

// twoTenants is a daemon configuration with a victim, an attacker, a trusted
// tenant and an isolated one, all of the test's own user.
func twoTenants(t *testing.T, trusted ...string) *config.Config {
	t.Helper()
	y := `
tenants:
  - {name: victim, uids: [self], memory: 256MiB}
  - {name: attacker, uids: [self], memory: 256MiB}
  - {name: vendor, uids: [self], memory: 64MiB, trust: trusted}
  - {name: loner, uids: [self], memory: 64MiB, trust: isolated}
  - {name: service, uids: [self], memory: 64MiB, priority: high}
`
	if len(trusted) > 0 {
		y += "trusted_modules: [" + strings.Join(trusted, ", ") + "]\n"
	}
	c, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func session(t *testing.T, env *testenv.Env, tenant string) (*client.Client, *client.Session) {
	t.Helper()
	c := env.Dial(t, client.Options{Tenant: tenant})
	return c, env.Session(t, c, client.SessionOptions{Label: tenant})
}

// vecaddCheck runs testdata's vecadd in s and checks the result: the victim
// keeps running.
func vecaddCheck(t *testing.T, ctx context.Context, s *client.Session) {
	t.Helper()
	prog, err := s.LoadProgram(ctx, readPTX(t, filepath.Join("..", "..", "testdata", "kernels", "vecadd.ptx")), "vecadd")
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	k, err := prog.Kernel(ctx, "vecadd")
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	a, b := make([]byte, 4*n), make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(a[4*i:], math.Float32bits(float32(i)))
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(2*i)))
	}
	var bufs [3]*client.Buffer
	for i := range bufs {
		if bufs[i], err = s.CreateBuffer(ctx, 4*n); err != nil {
			t.Fatal(err)
		}
		defer bufs[i].Close()
	}
	if err := bufs[0].Write(ctx, 0, a); err != nil {
		t.Fatal(err)
	}
	if err := bufs[1].Write(ctx, 0, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Launch(k, client.LaunchConfig{Grid: client.Dim3{X: 4}, Block: client.Dim3{X: 256}}, bufs[0], bufs[1], bufs[2], int32(n)); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(ctx); err != nil {
		t.Fatalf("victim's vecadd: %v", err)
	}
	out := make([]byte, 4*n)
	if err := bufs[2].Read(ctx, 0, out); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])); got != float32(3*i) {
			t.Fatalf("victim's vecadd: c[%d] = %v, want %d", i, got, 3*i)
		}
	}
}

// TestDaemonAttacks runs every attack kernel in an attacker's session next to
// a victim's, through the real daemon and the client API: each is caught.
// The attacker is of the normal class, then of the high class ("service"),
// whose session waits for its kernels on its completion page, where the
// guard's fault records are too (the driver completes their events itself:
// sched.Queue.SetOwnCompletions).
func TestDaemonAttacks(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: twoTenants(t)})
	ctx := ctxT(t)
	_, victim := session(t, env, "victim")
	vbuf, err := victim.CreateBuffer(ctx, victimSize)
	if err != nil {
		t.Fatal(err)
	}
	if err := vbuf.Write(ctx, 0, secret(victimSize)); err != nil {
		t.Fatal(err)
	}
	vecaddCheck(t, ctx, victim)
	// The service waits on its completion page: asking for the words
	// (GPUOS_SYNC_CLIENT=1), and watching its launches (the default), where
	// the attack's synchronize follows nothing but the launch.
	for _, mode := range []string{"1", "watch"} {
		t.Setenv(client.ClientCompletionEnv, mode)
		for _, attacker := range []string{"attacker", "service"} {
			if attacker == "attacker" && mode != "1" {
				continue // a normal-class tenant has no page either way
			}
			for _, a := range attackFiles(t) {
				t.Run(attacker+"/"+mode+"/"+a.name, func(t *testing.T) {
					attack(t, ctx, env, attacker, a, victim, vbuf)
				})
			}
		}
	}
}

// attack runs attack kernel a in a session of tenant attacker, aimed at
// vbuf, the victim's buffer, and checks that it is caught and changes
// nothing of the victim's.
func attack(t *testing.T, ctx context.Context, env *testenv.Env, attacker string, a attackSpec, victim *client.Session, vbuf *client.Buffer) {
	c, s := session(t, env, attacker)
	// The service waits for its kernels on its completion page: a
	// violation is still reported by its synchronize.
	if have, want := s.ClientCompletion(), attacker == "service" && s.Transport() == client.TransportRing; have != want {
		t.Errorf("%s: client completion %v, want %v", attacker, have, want)
	}
	own, err := s.CreateBuffer(ctx, ownSize)
	if err != nil {
		t.Fatal(err)
	}
	ptr := make([]byte, 8)
	binary.LittleEndian.PutUint64(ptr, vbuf.Addr())
	if err := own.Write(ctx, 0, ptr); err != nil {
		t.Fatal(err)
	}
	prog, err := s.LoadProgram(ctx, a.src, a.name)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	k, err := prog.Kernel(ctx, "attack")
	if err != nil {
		t.Fatal(err)
	}
	// Settled, so that a watching session's next synchronize follows the
	// attack's launch alone and waits on its page.
	if err := s.Synchronize(ctx); err != nil {
		t.Fatal(err)
	}
	watched0, _ := s.WatchCounts()
	base, size := s.Window()
	err = s.Launch(k, client.LaunchConfig{Grid: client.Dim3{X: a.grid}, Block: client.Dim3{X: a.block}, SharedMem: a.shared},
		own, uint64(ownSize), base, base+size, vbuf.Addr())
	if err != nil {
		t.Fatal(err)
	}
	err = s.Synchronize(ctx)
	if !errors.Is(err, client.ErrGuardViolation) {
		t.Fatalf("attacker's synchronize = %v, want GuardViolation", err)
	}
	if watched, _ := s.WatchCounts(); watched != watched0 {
		t.Errorf("the attack's synchronize returned from the page (%d waits there), not from the driver", watched-watched0)
	}
	t.Logf("attacker got: %v", err)
	if _, err := s.CreateBuffer(ctx, 64); !errors.Is(err, client.ErrGuardViolation) {
		t.Errorf("a revoked session's next request = %v, want GuardViolation", err)
	}
	got := make([]byte, victimSize)
	if err := vbuf.Read(ctx, 0, got); err != nil {
		t.Fatalf("victim read after the attack: %v", err)
	}
	if !bytes.Equal(got, secret(victimSize)) {
		t.Fatalf("the victim's data changed")
	}
	vecaddCheck(t, ctx, victim)
	stats, err := c.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, st := range stats {
		if st.ID == s.ID() {
			found = true
			if st.Violations != 1 || st.State != "revoked" {
				t.Errorf("attacker's stat: %d violations, state %q; want 1, revoked", st.Violations, st.State)
			}
		}
	}
	if !found {
		t.Errorf("attacker's session missing from ps")
	}
	assertAudit(t, env, s.ID(), "violation")
}

// assertAudit finds an audit record of the kind for the session.
func assertAudit(t *testing.T, env *testenv.Env, session uint64, kind string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(env.Audit)
		for _, line := range strings.Split(string(b), "\n") {
			var e struct {
				Kind    string         `json:"kind"`
				Session uint64         `json:"session"`
				Detail  map[string]any `json:"detail"`
			}
			if json.Unmarshal([]byte(line), &e) == nil && e.Kind == kind && e.Session == session {
				if kind == "violation" && (e.Detail["kernel"] == nil || e.Detail["addr"] == nil || e.Detail["count"] == nil) {
					t.Errorf("violation record lacks kernel, address or count: %s", line)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("no %s audit record for session %d", kind, session)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
