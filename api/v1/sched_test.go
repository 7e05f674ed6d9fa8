package v1_test

import (
	"encoding/binary"
	"errors"
	"testing"

	v1 "github.com/gpuos/gpuos/api/v1"
)

func TestSetShareFieldsChecked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields uint32
		ok     bool
	}{
		{"none", 0, true},
		{"all", uint32(v1.ShareCompute | v1.ShareCopy | v1.ShareMemory | v1.ShareClass), true},
		{"unknown bit", 1 << 4, false},
		{"high bit", 1 << 31, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := patch(&v1.SetShare{Tenant: "a"}, func(b []byte) []byte {
				binary.LittleEndian.PutUint32(b[4+1:], tc.fields) // after the tenant string
				return b
			})
			err := v1.Unmarshal(payload, new(v1.SetShare))
			if have := err == nil; have != tc.ok {
				t.Errorf("fields %#x: %v, want ok=%v", tc.fields, err, tc.ok)
			}
			if err != nil && !errors.Is(err, v1.ErrMalformed) {
				t.Errorf("fields %#x: %v is not Malformed", tc.fields, err)
			}
		})
	}
}

func TestPoliciesAndTenantsCountsBounded(t *testing.T) {
	// A count that the rest of the payload cannot hold is refused before
	// anything is allocated for it.
	for _, m := range []v1.Message{&v1.Policies{}, &v1.Tenants{}} {
		payload := v1.Marshal(m)
		off := len(payload) - 4 // the count is last in an empty list
		binary.LittleEndian.PutUint32(payload[off:], 1<<30)
		if err := v1.Unmarshal(payload, m); !errors.Is(err, v1.ErrMalformed) {
			t.Errorf("%v with a huge count: %v, want Malformed", m.Type(), err)
		}
	}
}

func TestPolicyMapValuesChecked(t *testing.T) {
	// A count that the rest of the payload cannot hold is refused before
	// anything is allocated for it, and a map kind outside 1..3 is Malformed.
	payload := v1.Marshal(&v1.PolicyMapValues{})
	binary.LittleEndian.PutUint32(payload, 1<<30)
	if err := v1.Unmarshal(payload, new(v1.PolicyMapValues)); !errors.Is(err, v1.ErrMalformed) {
		t.Errorf("huge map count: %v, want Malformed", err)
	}
	for _, tc := range []struct {
		kind uint8
		ok   bool
	}{{0, false}, {1, true}, {2, true}, {3, true}, {4, false}, {255, false}} {
		m := &v1.PolicyMapValues{Maps: []v1.MapInfo{{Name: "m", Kind: v1.MapOfHost}}}
		payload := v1.Marshal(m)
		payload[4+4+4+1] = tc.kind // after the count, the device and the name "m"
		err := v1.Unmarshal(payload, new(v1.PolicyMapValues))
		if have := err == nil; have != tc.ok {
			t.Errorf("kind %d: %v, want ok=%v", tc.kind, err, tc.ok)
		}
		if err != nil && !errors.Is(err, v1.ErrMalformed) {
			t.Errorf("kind %d: %v is not Malformed", tc.kind, err)
		}
	}
}
