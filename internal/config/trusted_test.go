package config

import (
	"errors"
	"strings"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
)

const hashA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func TestTrustedModules(t *testing.T) {
	c, err := Parse([]byte(`
tenants: [{name: a, uids: [self], trust: trusted}]
trusted_modules:
  - ` + hashA + `
  - sha256:` + strings.ToUpper(strings.Repeat("ab", 32)) + `
`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{hashA, strings.Repeat("ab", 32)}; strings.Join(c.TrustedModules, ",") != strings.Join(want, ",") {
		t.Errorf("TrustedModules = %v, want normalised %v", c.TrustedModules, want)
	}
	hs := c.TrustedModuleHashes()
	if len(hs) != 2 || hs[0][0] != 0x9f || hs[0][31] != 0x08 || hs[1][5] != 0xab {
		t.Errorf("TrustedModuleHashes = %x", hs)
	}
	tier, err := v1.ParseTrustTier(c.Tenants[0].Trust)
	if err != nil || tier != v1.TrustTrusted {
		t.Errorf("tenant tier %q parses to %v, %v", c.Tenants[0].Trust, tier, err)
	}
}

func TestTrustedModulesInvalid(t *testing.T) {
	for _, tt := range []struct{ name, list, want string }{
		{"short", "[abcd]", "not a SHA-256"},
		{"not hex", "[" + strings.Repeat("zz", 32) + "]", "not a SHA-256"},
		{"twice", "[" + hashA + ", " + strings.ToUpper(hashA) + "]", "twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("tenants: [{name: a, uids: [self]}]\ntrusted_modules: " + tt.list + "\n"))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse = %v, want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
}

// Every tier the configuration accepts is one the wire protocol carries.
func TestTrustTiersOnTheWire(t *testing.T) {
	for _, name := range TrustTiers {
		if _, err := v1.ParseTrustTier(name); err != nil {
			t.Errorf("tier %q: %v", name, err)
		}
	}
}
