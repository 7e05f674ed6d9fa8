package config

import (
	"encoding/hex"
	"fmt"
	"strings"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// validateTrustedModules checks that every allowlist entry is a SHA-256
// digest in hex (64 digits; upper case and a "sha256:" prefix are accepted)
// and normalises it to lower case without the prefix.
func (c *Config) validateTrustedModules() error {
	seen := map[string]bool{}
	for i, h := range c.TrustedModules {
		n := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(h), "sha256:"))
		if b, err := hex.DecodeString(n); err != nil || len(b) != 32 {
			return fmt.Errorf("%w: trusted_modules[%d] %q is not a SHA-256 digest in hex (64 digits)", ErrInvalid, i, h)
		}
		if seen[n] {
			return fmt.Errorf("%w: trusted_modules lists %s twice", ErrInvalid, n)
		}
		seen[n] = true
		c.TrustedModules[i] = n
	}
	return nil
}

// TrustedModuleHashes returns the allowlist as raw digests. Call it on a
// validated configuration (entries that do not decode are skipped).
func (c *Config) TrustedModuleHashes() [][32]byte {
	var out [][32]byte
	for _, h := range c.TrustedModules {
		var d [32]byte
		if b, err := hex.DecodeString(strings.ToLower(strings.TrimPrefix(h, "sha256:"))); err == nil && len(b) == 32 {
			copy(d[:], b)
			out = append(out, d)
		}
	}
	return out
}

// TrustTier returns the tenant's tier as the wire protocol carries it
// (guarded when the configuration was not validated).
func (t *Tenant) TrustTier() v1.TrustTier {
	tier, err := v1.ParseTrustTier(t.Trust)
	if err != nil {
		return v1.TrustGuarded
	}
	return tier
}
