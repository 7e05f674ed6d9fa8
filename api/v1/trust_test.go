package v1_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
)

func TestAttachSessionTrustRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		give v1.AttachSession
	}{
		{"default tier, no allowlist", v1.AttachSession{SessionID: 1, Tenant: "a"}},
		{"trusted with two hashes", v1.AttachSession{SessionID: 2, Tenant: "b", Trust: v1.TrustTrusted,
			TrustedModules: [][32]byte{{0: 0xaa, 31: 0xbb}, {15: 1, 16: 2}}}},
		{"isolated", v1.AttachSession{SessionID: 3, Tenant: "c", Trust: v1.TrustIsolated}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got v1.AttachSession
			if err := v1.Unmarshal(v1.Marshal(&tt.give), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.give) {
				t.Errorf("got %+v, want %+v", got, tt.give)
			}
		})
	}
}

func TestAttachSessionBadTrust(t *testing.T) {
	b := v1.Marshal(&v1.AttachSession{Tenant: "a"})
	b[len(b)-5] = 3 // the tier byte, before the hash count
	err := v1.Unmarshal(b, &v1.AttachSession{})
	if !errors.Is(err, v1.ErrMalformed) || !strings.Contains(err.Error(), "trust tier") {
		t.Fatalf("Unmarshal = %v, want Malformed about the trust tier", err)
	}
	b = v1.Marshal(&v1.AttachSession{Tenant: "a"})
	b[len(b)-4] = 0xff // a hash count that cannot fit
	if err := v1.Unmarshal(b, &v1.AttachSession{}); !errors.Is(err, v1.ErrMalformed) {
		t.Fatalf("Unmarshal = %v, want Malformed", err)
	}
}

func TestParseTrustTier(t *testing.T) {
	for _, tt := range []struct {
		give string
		want v1.TrustTier
		ok   bool
	}{{"", v1.TrustGuarded, true}, {"guarded", v1.TrustGuarded, true}, {"trusted", v1.TrustTrusted, true},
		{"isolated", v1.TrustIsolated, true}, {"maybe", 0, false}} {
		got, err := v1.ParseTrustTier(tt.give)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("ParseTrustTier(%q) = %v, %v", tt.give, got, err)
		}
		if tt.ok && tt.give != "" && got.String() != tt.give {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
}
