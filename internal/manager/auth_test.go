package manager

import (
	"errors"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/config"
)

func TestAuthenticate(t *testing.T) {
	cfg, err := config.Parse([]byte(`
tenants:
  - name: ops
    uids: [self]
  - name: alice
    uids: [1000]
  - name: bob
    token: bobtoken
  - name: carol
    uids: [1002]
    token: caroltoken
`))
	if err != nil {
		t.Fatal(err)
	}
	const self = 500
	for _, tc := range []struct {
		name       string
		uid        uint32
		token      string
		want       string
		haveTenant string // "" = denied
	}{
		{"daemon's own user", self, "", "", "ops"},
		{"uid tenant", 1000, "", "", "alice"},
		{"uid tenant asked by name", 1000, "", "alice", "alice"},
		{"token tenant from any uid", 4242, "bobtoken", "", "bob"},
		{"token tenant asked by name", 1000, "bobtoken", "bob", "bob"},
		{"token plus uid", 1002, "caroltoken", "", "carol"},
		{"token from the wrong uid", 1003, "caroltoken", "", ""},
		{"uid of a token tenant without the token", 1002, "", "", ""},
		{"unknown uid", 4242, "", "", ""},
		{"wrong token", 4242, "guess", "", ""},
		{"asking for another tenant", 1000, "", "ops", ""},
		{"asking for a missing tenant", 1000, "", "nobody", ""},
		{"empty token never matches", 4242, "", "bob", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := authenticate(cfg, self, tc.uid, tc.token, tc.want)
			if tc.haveTenant == "" {
				if err == nil {
					t.Fatalf("authenticated as %s; want denied", got.Name)
				}
				if !errors.Is(err, v1.ErrPermissionDenied) {
					t.Fatalf("err = %v, want permission denied", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("denied: %v", err)
			}
			if got.Name != tc.haveTenant {
				t.Fatalf("tenant = %s, want %s", got.Name, tc.haveTenant)
			}
		})
	}
}
