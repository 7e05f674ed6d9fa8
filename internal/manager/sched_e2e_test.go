package manager_test

import (
	"errors"
	"syscall"
	"testing"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/testenv"
	"github.com/gpuos/gpuos/internal/wire"
)

// managerClient is a raw connection to the manager, greeted as a tenant.
func managerClient(t *testing.T, env *testenv.Env, token string) *wire.Client {
	t.Helper()
	conn, err := wire.Dial(tctx(t), env.Socket)
	if err != nil {
		t.Fatal(err)
	}
	mgr := wire.NewClient(conn)
	t.Cleanup(func() { mgr.Close() })
	if err := mgr.Call(tctx(t), v1.NewHello(v1.RoleClient, token, "policy-test"), nil); err != nil {
		t.Fatal(err)
	}
	return mgr
}

func activePolicy(t *testing.T, mgr *wire.Client) string {
	t.Helper()
	var p v1.Policies
	if err := mgr.Call(tctx(t), &v1.PolicyList{}, &p); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, pi := range p.Policies {
		if pi.Active {
			n++
			if pi.Name != p.Active {
				t.Errorf("policy %s marked active, but Active is %s", pi.Name, p.Active)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d policies marked active: %+v", n, p.Policies)
	}
	return p.Active
}

func tenantStat(t *testing.T, mgr *wire.Client, name string) v1.TenantStat {
	t.Helper()
	var ts v1.Tenants
	if err := mgr.Call(tctx(t), &v1.TenantStats{}, &ts); err != nil {
		t.Fatal(err)
	}
	for _, s := range ts.Tenants {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("tenant %s not in %+v", name, ts.Tenants)
	return v1.TenantStat{}
}

// TestPolicyAndSharesLive: the configured policy is active on the drivers;
// switching and changing shares work on a live daemon, survive a driver
// restart, and bad requests are refused with typed errors.
func TestPolicyAndSharesLive(t *testing.T) {
	cfg, err := config.Parse([]byte(`
policy: band
tenants:
  - {name: t, token: t, weight: 2, copy_weight: 5, priority: high}
  - {name: u, token: u}
`))
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.Start(t, testenv.Options{Config: cfg})
	mgr := managerClient(t, env, "t")
	c := tctx(t)
	if p := activePolicy(t, mgr); p != "band" {
		t.Errorf("active policy %q, want the configured band", p)
	}
	st := tenantStat(t, mgr, "t")
	if st.Compute != 2 || st.Copy != 5 || st.Class != 1 || !st.ClassSet {
		t.Errorf("tenant t: %+v, want weights 2/5, class high (configured)", st)
	}

	if err := mgr.Call(c, &v1.PolicyUse{Name: "priority"}, nil); err != nil {
		t.Fatal(err)
	}
	if p := activePolicy(t, mgr); p != "priority" {
		t.Errorf("active policy %q after use priority", p)
	}
	if err := mgr.Call(c, &v1.PolicyUse{Name: "nonesuch"}, nil); !errors.Is(err, v1.ErrNotFound) {
		t.Errorf("use nonesuch: %v, want NotFound", err)
	}
	if p := activePolicy(t, mgr); p != "priority" {
		t.Errorf("active policy %q after a failed use, want priority still", p)
	}

	set := &v1.SetShare{Tenant: "u", Fields: v1.ShareCompute | v1.ShareClass, Compute: 3, Class: -1}
	if err := mgr.Call(c, set, nil); err != nil {
		t.Fatal(err)
	}
	if st := tenantStat(t, mgr, "u"); st.Compute != 3 || st.Class != -1 || !st.ClassSet || st.Copy != 1 {
		t.Errorf("tenant u after set-share compute=3 class=low: %+v", st)
	}
	for _, bad := range []struct {
		m    *v1.SetShare
		code error
	}{
		{&v1.SetShare{Tenant: "nobody", Fields: v1.ShareCompute, Compute: 1}, v1.ErrNotFound},
		{&v1.SetShare{Tenant: "u", Fields: v1.ShareCompute, Compute: 0}, v1.ErrInvalidArgument},
		{&v1.SetShare{Tenant: "u", Fields: v1.ShareClass, Class: 7}, v1.ErrInvalidArgument},
	} {
		if err := mgr.Call(c, bad.m, nil); !errors.Is(err, bad.code) {
			t.Errorf("set-share %+v: %v, want %v", bad.m, err, bad.code)
		}
	}

	// A restarted driver gets the same policy and shares.
	pid := env.Manager.Drivers()[0]
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p := env.Manager.Drivers()[0]; p != 0 && p != pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the driver was not restarted")
		}
	}
	s, err := env.Dial(t, client.Options{Token: "u"}).OpenSession(c, client.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p := activePolicy(t, mgr); p != "priority" {
		t.Errorf("active policy %q after a driver restart, want priority", p)
	}
	if st := tenantStat(t, mgr, "u"); st.Compute != 3 || st.Class != -1 || st.Sessions != 1 {
		t.Errorf("tenant u after a driver restart: %+v", st)
	}
}

// TestSessionClassFromNice: a tenant whose class is not configured takes it
// from its sessions' processes (this test process runs at nice 0: normal).
func TestSessionClassFromNice(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: tokenConfig(t)})
	mgr := managerClient(t, env, "t")
	s, err := env.Dial(t, client.Options{Token: "t"}).OpenSession(tctx(t), client.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st := tenantStat(t, mgr, "t")
	if st.ClassSet || st.Class != 0 || st.Sessions != 1 {
		t.Errorf("tenant t: %+v, want the class of a nice-0 process (normal), not configured", st)
	}
}
