package config_test

import (
	"testing"

	"github.com/gpuos/gpuos/internal/config"
)

func TestPrioritySet(t *testing.T) {
	c, err := config.Parse([]byte(`
tenants:
  - {name: a, token: a, priority: high}
  - {name: b, token: b}
  - {name: c, token: c, priority: normal}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  bool
		prio config.Priority
	}{{"a", true, config.PriorityHigh}, {"b", false, config.PriorityNormal}, {"c", true, config.PriorityNormal}} {
		tn, _ := c.Tenant(tc.name)
		if tn.PrioritySet != tc.set || tn.Priority != tc.prio {
			t.Errorf("tenant %s: priority %v set %v, want %v set %v", tc.name, tn.Priority, tn.PrioritySet, tc.prio, tc.set)
		}
	}
}
