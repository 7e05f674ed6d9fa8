package client_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/config"
	"github.com/gpuos/gpuos/internal/testenv"
)

func serviceTenants(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(`
tenants:
  - {name: svc, uids: [self], memory: 256MiB, priority: high}
  - {name: batch, uids: [self], memory: 256MiB}
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A high-class session on rings, told to ($GPUOS_SYNC_CLIENT=1), waits for
// its work on its completion page (ClientCompletion); the others, and one
// not told to, wait in the driver. Either way a synchronize
// returns once the work is done: session-wide and per stream, for kernels
// short enough for the page and long enough that the client gives up
// watching and asks the driver.
func TestClientCompletion(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: serviceTenants(t)})
	image, err := os.ReadFile(filepath.Join("..", "testdata", "kernels", "vecadd.ptx"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, tenant string, wantPage bool) {
		c := ctx(t)
		cl := env.Dial(t, client.Options{Tenant: tenant})
		s := env.Session(t, cl, client.SessionOptions{Label: tenant})
		if s.Transport() != client.TransportRing {
			t.Skip("no rings here")
		}
		if have := s.ClientCompletion(); have != wantPage {
			t.Fatalf("%s: client completion %v, want %v", tenant, have, wantPage)
		}
		prog, err := s.LoadProgram(c, image, "vecadd.ptx")
		if err != nil {
			t.Fatal(err)
		}
		k, err := prog.Kernel(c, "vecadd")
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.CreateStream(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		for round, n := range []int{256, 4096, 256, 1 << 17, 1024, 256} {
			a, b := make([]byte, 4*n), make([]byte, 4*n)
			for i := range n {
				binary.LittleEndian.PutUint32(a[4*i:], math.Float32bits(float32(i)))
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(round)))
			}
			buf, err := s.CreateBuffer(c, uint64(12*n))
			if err != nil {
				t.Fatal(err)
			}
			if err := buf.Write(c, 0, append(a, b...)); err != nil {
				t.Fatal(err)
			}
			cfg := client.LaunchConfig{Grid: client.Dim3{X: uint32((n + 255) / 256)}, Block: client.Dim3{X: 256}}
			sync := s.Synchronize
			if round%2 == 1 {
				cfg.Stream, sync = st, st.Synchronize
			}
			if err := s.Launch(k, cfg, buf.Addr(), buf.Addr()+uint64(4*n), buf.Addr()+uint64(8*n), n); err != nil {
				t.Fatal(err)
			}
			if err := sync(c); err != nil {
				t.Fatalf("round %d: synchronize: %v", round, err)
			}
			out := make([]byte, 4*n)
			if err := buf.Read(c, uint64(8*n), out); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if got, want := math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])), float32(i+round); got != want {
					t.Fatalf("round %d (n %d): c[%d] = %v, want %v", round, n, i, got, want)
				}
			}
			if err := buf.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("service", func(t *testing.T) {
		t.Setenv(client.ClientCompletionEnv, "1")
		run(t, "svc", true)
	})
	t.Run("batch", func(t *testing.T) {
		t.Setenv(client.ClientCompletionEnv, "1")
		run(t, "batch", false)
	})
	t.Run("service by default", func(t *testing.T) { run(t, "svc", false) })
}
