package v1

import "fmt"

// TrustTier is what code a session may run, from its tenant's configuration
// (config: trust). AttachSession carries it to the driver.
type TrustTier uint8

// Trust tiers.
const (
	// TrustGuarded: PTX (or the PTX of a fatbin) runs through the memory
	// guard; machine code only is refused. The default.
	TrustGuarded TrustTier = iota
	// TrustTrusted: as guarded, and machine-code modules whose SHA-256 is on
	// the operator's allowlist (AttachSession.TrustedModules) run as they
	// are, their pointer-sized launch arguments checked against the window.
	TrustTrusted
	// TrustIsolated: unguarded code in a driver process of the tenant's own.
	TrustIsolated
	numTrustTiers
)

var trustNames = [...]string{TrustGuarded: "guarded", TrustTrusted: "trusted", TrustIsolated: "isolated"}

func (t TrustTier) String() string {
	if t < numTrustTiers {
		return trustNames[t]
	}
	return fmt.Sprintf("trust(%d)", uint8(t))
}

// ParseTrustTier parses a tier's name as the configuration writes it; "" is
// guarded.
func ParseTrustTier(s string) (TrustTier, error) {
	if s == "" {
		return TrustGuarded, nil
	}
	for t, n := range trustNames {
		if n == s {
			return TrustTier(t), nil
		}
	}
	return 0, Errorf(CodeInvalidArgument, "unknown trust tier %q (want guarded, trusted or isolated)", s)
}

func (d *Decoder) trustTier() TrustTier {
	t := TrustTier(d.Uint8())
	if t >= numTrustTiers {
		d.Failf("unknown trust tier %d", uint8(t))
	}
	return t
}

// putHashes appends a count and 32-byte hashes.
func (e *Encoder) putHashes(hs [][32]byte) {
	e.PutUint32(uint32(len(hs)))
	for _, h := range hs {
		e.buf = append(e.buf, h[:]...)
	}
}

func (d *Decoder) hashes() [][32]byte {
	n := d.Count(32)
	if n == 0 {
		return nil
	}
	hs := make([][32]byte, n)
	for i := range hs {
		a, b := d.Bytes16(), d.Bytes16()
		copy(hs[i][:16], a[:])
		copy(hs[i][16:], b[:])
	}
	return hs
}
