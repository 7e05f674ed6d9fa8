package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
)

func TestDefault(t *testing.T) {
	c := Default()
	if len(c.Tenants) != 1 {
		t.Fatalf("default has %d tenants, want 1", len(c.Tenants))
	}
	d := c.Tenants[0]
	if d.Name != "default" || len(d.UIDs) != 1 || !d.UIDs[0].Self || d.Weight != 1 || d.Trust != "guarded" {
		t.Errorf("default tenant = %+v", d)
	}
	if got := d.UIDs[0].Resolve(1234); got != 1234 {
		t.Errorf("self resolves to %d, want 1234", got)
	}
}

func TestParse(t *testing.T) {
	c, err := Parse([]byte(`
socket: /tmp/g.sock
backend: sim
device_memory: 16GiB
reserve_sms: 8
limits: {in_flight: 8}
tenants:
  - name: alice
    uids: [1000, self]
    memory: 512MiB
    weight: 3
    priority: high
    rights: [alloc, copy]
  - name: bob
    token: s3cret
    memory: 1.5GB
`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Tenant("alice")
	b, _ := c.Tenant("bob")
	for _, tc := range []struct {
		name       string
		have, want any
	}{
		{"device memory", c.DeviceMemory, Size(16 << 30)},
		{"reserved SMs", c.ReserveSMs, 8},
		{"alice memory", a.Memory, Size(512 << 20)},
		{"alice weight", a.Weight, 3},
		{"alice copy weight defaults to weight", a.CopyShare, 3},
		{"alice priority", a.Priority, PriorityHigh},
		{"alice uid", a.UIDs[0].ID, uint32(1000)},
		{"alice self", a.UIDs[1].Self, true},
		{"bob memory", b.Memory, Size(1_500_000_000)},
		{"bob weight default", b.Weight, 1},
		{"bob token", b.Token, "s3cret"},
		{"in-flight limit", c.SessionLimitsOrDefault().InFlight, 8},
		{"queue depth default", c.SessionLimitsOrDefault().QueueDepth, DefaultQueueDepth},
	} {
		if tc.have != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.have, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc string }{
		{"empty", ``},
		{"no tenants", `backend: sim`},
		{"unknown key", "tenants: [{name: a, uids: [1]}]\nbakcend: sim"},
		{"bad backend", "backend: gpu\ntenants: [{name: a, uids: [1]}]"},
		{"duplicate tenant", "tenants: [{name: a, uids: [1]}, {name: a, uids: [2]}]"},
		{"nobody can authenticate", "tenants: [{name: a}]"},
		{"bad uid", "tenants: [{name: a, uids: [bob]}]"},
		{"bad size", "tenants: [{name: a, uids: [1], memory: lots}]"},
		{"negative weight", "tenants: [{name: a, uids: [1], weight: -2}]"},
		{"bad priority", "tenants: [{name: a, uids: [1], priority: urgent}]"},
		{"bad right", "tenants: [{name: a, uids: [1], rights: [root]}]"},
		{"bad trust", "tenants: [{name: a, uids: [1], trust: maybe}]"},
		{"shared token", "tenants: [{name: a, token: x}, {name: b, token: x}]"},
		{"token and file", "tenants: [{name: a, token: x, token_file: f}]"},
		{"name with slash", "tenants: [{name: a/b, uids: [1]}]"},
		{"negative limit", "limits: {buffers: -1}\ntenants: [{name: a, uids: [1]}]"},
		{"negative reserve", "reserve_sms: -8\ntenants: [{name: a, uids: [1]}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil {
				t.Fatal("parsed; want an error")
			}
			if !errors.Is(err, ErrInvalid) || !errors.Is(err, v1.ErrInvalidArgument) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Size
		ok   bool
	}{
		{"0", 0, true}, {"4096", 4096, true}, {"2MiB", 2 << 20, true}, {"8 GiB", 8 << 30, true},
		{"1.5GB", 1_500_000_000, true}, {"3K", 3 << 10, true}, {"10B", 10, true},
		{"", 0, false}, {"GiB", 0, false}, {"-1", 0, false}, {"1e30GiB", 0, false},
		{"99999999999999999999", 0, false}, {"20000000000TiB", 0, false}, {"NaN", 0, false},
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, s := range []Size{0, 1, 1 << 20, 3 << 30, 1<<30 + 1} {
		back, err := ParseSize(s.String())
		if err != nil || back != s {
			t.Errorf("round trip of %d via %q gave %d, %v", s, s.String(), back, err)
		}
	}
}

func TestLoadTokenFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bob.token"), []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "gpuos.yaml")
	if err := os.WriteFile(cfg, []byte("tenants: [{name: bob, token_file: bob.token}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tenants[0].Token != "tok" {
		t.Errorf("token = %q, want tok", c.Tenants[0].Token)
	}
	if err := os.WriteFile(filepath.Join(dir, "bob.token"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(cfg); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty token file: err = %v, want ErrInvalid", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file loaded")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(defaultYAML))
	f.Add([]byte("tenants: [{name: a, uids: [1, self], memory: 1GiB, weight: 2, priority: high, rights: [alloc]}]"))
	f.Add([]byte("backend: sim\ndevice_memory: 1.5GB\ntenants:\n  - name: b\n    token: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if len(c.Tenants) == 0 {
			t.Fatal("valid config without tenants")
		}
		for _, tn := range c.Tenants {
			if tn.Weight < 1 || tn.Name == "" {
				t.Fatalf("validated tenant %+v", tn)
			}
		}
	})
}

func TestSizeHuman(t *testing.T) {
	for _, tc := range []struct {
		in   Size
		want string
	}{{0, "0B"}, {1023, "1023B"}, {1024, "1.0KiB"}, {12293 << 10, "12.0MiB"}, {3 << 30, "3.0GiB"}, {1 << 50, "1024.0TiB"}} {
		if got := tc.in.Human(); got != tc.want {
			t.Errorf("Size(%d).Human() = %q, want %q", uint64(tc.in), got, tc.want)
		}
	}
}
