package manager

import (
	"crypto/subtle"
	"slices"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/config"
)

// Errors returned by the manager.
var (
	ErrUnknownClient = v1.Errorf(v1.CodePermissionDenied, "no tenant matches this client's credentials")
	ErrNotTenant     = v1.Errorf(v1.CodePermissionDenied, "client may not act as the requested tenant")
)

// authenticate finds the tenant a client acts as, from its kernel-verified uid
// (SO_PEERCRED), the token it presented (GPUOS_TOKEN) and the tenant it asked for
// (GPUOS_TENANT, may be empty). self is the daemon's own uid.
//
// A tenant with a token admits only clients that present it (and, if it lists
// uids, run as one of them). A tenant without a token admits the uids it lists.
// With no tenant requested, the first admitting tenant in configuration order wins.
func authenticate(cfg *config.Config, self, uid uint32, token, want string) (*config.Tenant, error) {
	admits := func(t *config.Tenant) bool {
		if t.Token != "" {
			if subtle.ConstantTimeCompare([]byte(t.Token), []byte(token)) != 1 {
				return false
			}
			return len(t.UIDs) == 0 || hasUID(t, self, uid)
		}
		return hasUID(t, self, uid)
	}
	if want != "" {
		t, ok := cfg.Tenant(want)
		if !ok || !admits(t) {
			// The same error whether or not the tenant exists: names are not disclosed.
			return nil, ErrNotTenant
		}
		return t, nil
	}
	for i := range cfg.Tenants {
		if t := &cfg.Tenants[i]; admits(t) {
			return t, nil
		}
	}
	return nil, ErrUnknownClient
}

func hasUID(t *config.Tenant, self, uid uint32) bool {
	return slices.ContainsFunc(t.UIDs, func(u config.UID) bool { return u.Resolve(self) == uid })
}
