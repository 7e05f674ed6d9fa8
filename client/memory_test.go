package client_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	membench "github.com/gpuos/gpuos/bench/mem"
	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/testenv"
)

// fourTenants is a configuration of four token tenants t0..t3.
func fourTenants(t *testing.T) *config.Config {
	var b strings.Builder
	b.WriteString("tenants:\n")
	for i := 0; i < 4; i++ {
		fmt.Fprintf(&b, "  - name: t%d\n    token: token-%d\n", i, i)
	}
	cfg, err := config.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Four tenants whose data together is twice the device's memory each make
// checked passes over it: every pass finds what the last one left, so all
// finish with correct results although their memory was swapped out and
// back between passes; the evictions are counted and audited.
func TestFourTenantsOversubscribed(t *testing.T) {
	const (
		device = 16 << 20
		each   = device / 2 // 4 × 8 MiB = twice the device
	)
	// The software GPU is larger than the limit: module variables live in
	// device memory outside what the memory manager hands out.
	env := testenv.Start(t, testenv.Options{Config: fourTenants(t), SimMemory: "64MiB",
		DriverArgs: []string{"--device-memory", fmt.Sprint(device)}})
	if raceBuild {
		// Under the race detector the interpreter takes minutes for this;
		// internal/mem and internal/driver race-test swapping directly.
		t.Skip("too slow under the race detector")
	}
	const passes = 3
	c, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	results := make([]membench.PassesResult, 4)
	errs := make([]error, 4)
	sessions := make([]*client.Session, 4)
	for i := range 4 {
		cl := env.Dial(t, client.Options{Token: fmt.Sprint("token-", i)})
		sessions[i] = env.Session(t, cl, client.SessionOptions{Label: fmt.Sprint("passes-", i)})
	}
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := membench.Load(c, s)
			if err != nil {
				errs[i] = err
				return
			}
			results[i], errs[i] = membench.Passes(c, s, k, membench.PassesConfig{
				Bytes: each, Buffer: 2 << 20, Passes: passes, Seed: uint32(i) * 1000})
		}()
	}
	wg.Wait()
	var evictions uint64
	for i := range 4 {
		if errs[i] != nil {
			t.Errorf("tenant t%d: %v", i, errs[i])
			continue
		}
		if results[i].Errors != 0 {
			t.Errorf("tenant t%d: %d elements wrong over its passes", i, results[i].Errors)
		}
		st, err := sessions[i].Stat(c)
		if err != nil {
			t.Fatal(err)
		}
		evictions += st.Evictions
	}
	if evictions == 0 {
		t.Error("no evictions counted: the device was not oversubscribed")
	}
	cl := env.Dial(t, client.Options{Token: "token-0"})
	lines, err := cl.Audit(c, 0, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var evictLines, swapInLines int
	for _, l := range lines {
		if strings.Contains(l, `"kind":"mem.evict"`) {
			evictLines++
		}
		if strings.Contains(l, `"kind":"mem.swap-in"`) {
			swapInLines++
		}
	}
	if evictLines == 0 || swapInLines == 0 {
		t.Errorf("audit log has %d evictions and %d swap-ins, want both", evictLines, swapInLines)
	}
}
