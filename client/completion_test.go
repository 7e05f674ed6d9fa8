package client_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
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

// watchingService opens a session of the service tenant on env, on rings
// (else the test is skipped) and watching its launches ($GPUOS_SYNC_CLIENT
// is the caller's), and loads the vecadd kernel into it.
func watchingService(t *testing.T, env *testenv.Env) (*client.Session, *client.Kernel) {
	t.Helper()
	s := env.Session(t, env.Dial(t, client.Options{Tenant: "svc"}), client.SessionOptions{Label: "svc"})
	if s.Transport() != client.TransportRing {
		t.Skip("no rings here")
	}
	if !s.WatchesLaunches() || !s.ClientCompletion() {
		t.Fatalf("the service: watches %v, client completion %v; want both", s.WatchesLaunches(), s.ClientCompletion())
	}
	return s, vecadd(t, s)
}

// A high-class session on rings waits for its work on its completion page
// (ClientCompletion), by default and asking for its words
// ($GPUOS_SYNC_CLIENT=1); the others, and one told not to
// ($GPUOS_SYNC_CLIENT=0), wait in the driver. Either way a synchronize
// returns once the work is done: session-wide and per stream, for kernels
// short enough for the page and long enough that the client gives up
// watching and asks the driver.
func TestClientCompletion(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: serviceTenants(t)})
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
		k := vecadd(t, s)
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
	t.Run("service by default", func(t *testing.T) { run(t, "svc", true) })
	t.Run("service told not to", func(t *testing.T) {
		t.Setenv(client.ClientCompletionEnv, "0")
		run(t, "svc", false)
	})
}

// A watching session ($GPUOS_SYNC_CLIENT=watch) waits for its launches on
// its completion page with no request when only launches were written
// since its last synchronize in the driver, and asks the driver otherwise:
// after a read, after a launch that failed (whose error the synchronize
// returns), and with a kernel too long for the page's time. Each launch
// here reads what the one before it wrote, and results are read back after
// synchronizes of both kinds: a synchronize that returned before its
// kernel ended would show in them.
func TestWatchLaunches(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: serviceTenants(t)})
	t.Setenv(client.ClientCompletionEnv, "watch")
	c := ctx(t)
	if s := env.Session(t, env.Dial(t, client.Options{Tenant: "batch"}), client.SessionOptions{Label: "batch"}); s.WatchesLaunches() {
		t.Fatal("a session of the normal class watches its launches")
	}
	s, k := watchingService(t, env)
	st, err := s.CreateStream(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Regions x, y, one of n floats each: x starts as i, one as 1.
	chain := func(n int) (buf *client.Buffer, x, y, one uint64) {
		init := make([]byte, 12*n)
		for i := range n {
			binary.LittleEndian.PutUint32(init[4*i:], math.Float32bits(float32(i)))
			binary.LittleEndian.PutUint32(init[8*n+4*i:], math.Float32bits(1))
		}
		buf, err := s.CreateBuffer(c, uint64(12*n))
		if err != nil {
			t.Fatal(err)
		}
		if err := buf.Write(c, 0, init); err != nil {
			t.Fatal(err)
		}
		return buf, buf.Addr(), buf.Addr() + uint64(4*n), buf.Addr() + uint64(8*n)
	}
	check := func(buf *client.Buffer, n int, want func(i int) float32, what string) {
		out := make([]byte, 4*n)
		if err := buf.Read(c, 0, out); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])); got != want(i) {
				t.Fatalf("%s: x[%d] = %v, want %v", what, i, got, want(i))
			}
		}
	}
	for _, n := range []int{256, 4096} {
		buf, x, y, one := chain(n)
		cfg := client.LaunchConfig{Grid: client.Dim3{X: uint32(n / 256)}, Block: client.Dim3{X: 256}, Stream: st}
		watched0, asked0 := s.WatchCounts()
		const rounds = 6
		for r := range rounds {
			// y = x + 1, synchronize, x = y + 1, synchronize: the second
			// follows nothing but a launch.
			for _, sync := range []func(context.Context) error{s.Synchronize, st.Synchronize} {
				if err := s.Launch(k, cfg, x, one, y, n); err != nil {
					t.Fatal(err)
				}
				if err := sync(c); err != nil {
					t.Fatalf("n %d, round %d: %v", n, r, err)
				}
				x, y = y, x
			}
			check(buf, n, func(i int) float32 { return float32(i + 2*(r+1)) }, fmt.Sprintf("n %d, round %d", n, r))
			if r == 2 {
				// A launch the driver refuses: the next synchronize reports it.
				if err := s.LaunchRaw(k, cfg, []byte{1, 2, 3}); err != nil {
					t.Fatal(err)
				}
				if err := s.Synchronize(c); err == nil {
					t.Fatalf("n %d: the synchronize after a launch with 3 bytes of parameters succeeded", n)
				}
			}
		}
		watched, asked := s.WatchCounts()
		watched, asked = watched-watched0, asked-asked0
		if watched+asked != 2*rounds+1 {
			t.Errorf("n %d: %d synchronizes on the page and %d in the driver, want %d in all", n, watched, asked, 2*rounds+1)
		}
		// Each round's first synchronize follows a read: the driver's. So
		// does the one after the refused launch.
		if asked < rounds+1 {
			t.Errorf("n %d: %d synchronizes asked the driver, want at least %d", n, asked, rounds+1)
		}
		t.Logf("n %d: %d synchronizes on the page, %d in the driver", n, watched, asked)
		if n == 256 && watched == 0 {
			// Each wait on the page gives up after the driver's fence
			// poll (2 ms): on a machine busy enough, all of these did.
			// More tries, one of which must wait on the page alone.
			w0 := watched
			for try := 0; try < 200 && watched == w0; try++ {
				if err := s.Launch(k, cfg, x, one, y, n); err != nil {
					t.Fatal(err)
				}
				if err := st.Synchronize(c); err != nil {
					t.Fatal(err)
				}
				x, y = y, x
				watched, _ = s.WatchCounts()
				watched -= watched0
			}
			if watched == w0 {
				t.Errorf("n %d: no synchronize waited on the page alone in 200 more tries", n)
			}
		}
		if err := buf.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// Goroutines of one watching session launching on streams of their own and
// synchronizing at once: each chain's results are right after every
// synchronize, whichever goroutine's launches the page was waiting for.
func TestWatchLaunchesConcurrent(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: serviceTenants(t)})
	t.Setenv(client.ClientCompletionEnv, "watch")
	c := ctx(t)
	s, k := watchingService(t, env)
	const n, rounds, workers = 1024, 12, 3
	var wg sync.WaitGroup
	for g := range workers {
		st, err := s.CreateStream(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		init := make([]byte, 12*n)
		for i := range n {
			binary.LittleEndian.PutUint32(init[4*i:], math.Float32bits(float32(i*g)))
			binary.LittleEndian.PutUint32(init[8*n+4*i:], math.Float32bits(1))
		}
		buf, err := s.CreateBuffer(c, 12*n)
		if err != nil {
			t.Fatal(err)
		}
		if err := buf.Write(c, 0, init); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			x, y, one := buf.Addr(), buf.Addr()+4*n, buf.Addr()+8*n
			cfg := client.LaunchConfig{Grid: client.Dim3{X: n / 256}, Block: client.Dim3{X: 256}, Stream: st}
			for r := range rounds {
				for range 2 {
					if err := s.Launch(k, cfg, x, one, y, n); err != nil {
						t.Error(err)
						return
					}
					if err := st.Synchronize(c); err != nil {
						t.Error(err)
						return
					}
					x, y = y, x
				}
				out := make([]byte, 4*n)
				if err := buf.Read(c, 0, out); err != nil {
					t.Error(err)
					return
				}
				for i := range n {
					if got, want := math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])), float32(i*g+2*(r+1)); got != want {
						t.Errorf("goroutine %d, round %d: x[%d] = %v, want %v", g, r, i, got, want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	watched, asked := s.WatchCounts()
	t.Logf("%d synchronizes on the page, %d in the driver", watched, asked)
	if watched+asked != workers*rounds*2 {
		t.Errorf("%d synchronizes counted, want %d", watched+asked, workers*rounds*2)
	}
}

// A watching session's requests in random orders: launches on two streams,
// synchronizes of the session and of either stream, memsets of a chain's
// input on its stream (work a launch count does not cover), launches the
// driver refuses, and reads after synchronizes. Every read after a
// synchronize holds what the work before it made, exactly the
// synchronizes after a refused launch fail, and every synchronize after a
// request other than a launch asks the driver (the page alone cannot say
// that work is done).
func TestWatchLaunchesRandom(t *testing.T) {
	env := testenv.Start(t, testenv.Options{Config: serviceTenants(t)})
	t.Setenv(client.ClientCompletionEnv, "watch")
	c := ctx(t)
	for seed := range int64(4) {
		s, k := watchingService(t, env)
		const n = 512
		type chain struct {
			st      *client.Stream
			buf     *client.Buffer
			x, y    uint64
			base    func(i int) float32 // x's values before the launches counted
			applied int                 // launches since
		}
		var chains [2]*chain
		for j := range chains {
			st, err := s.CreateStream(c, 0)
			if err != nil {
				t.Fatal(err)
			}
			buf, err := s.CreateBuffer(c, 12*n)
			if err != nil {
				t.Fatal(err)
			}
			init := make([]byte, 12*n)
			for i := range n {
				binary.LittleEndian.PutUint32(init[4*i:], math.Float32bits(float32(i*(j+1))))
				binary.LittleEndian.PutUint32(init[4*n+4*i:], math.Float32bits(float32(i*(j+1))))
				binary.LittleEndian.PutUint32(init[8*n+4*i:], math.Float32bits(1))
			}
			if err := buf.Write(c, 0, init); err != nil {
				t.Fatal(err)
			}
			jj := j
			chains[j] = &chain{st: st, buf: buf, x: buf.Addr(), y: buf.Addr() + 4*n, base: func(i int) float32 { return float32(i * (jj + 1)) }}
		}
		rng := rand.New(rand.NewPCG(uint64(seed), 29))
		refused := false
		mustAsk := true // a request other than a launch since the last synchronize that succeeded
		sync := func(op int) {
			_, asked0 := s.WatchCounts()
			var err error
			switch which := rng.IntN(3); which {
			case 0:
				err = s.Synchronize(c)
			default:
				err = chains[which-1].st.Synchronize(c)
			}
			if refused != (err != nil) {
				t.Fatalf("seed %d, op %d: synchronize = %v after a refused launch: %v", seed, op, err, refused)
			}
			if _, asked := s.WatchCounts(); mustAsk && asked == asked0 {
				t.Fatalf("seed %d, op %d: a synchronize after a request other than a launch waited on the page", seed, op)
			}
			refused, mustAsk = false, err != nil
		}
		for op := range 80 {
			ch := chains[rng.IntN(2)]
			cfg := client.LaunchConfig{Grid: client.Dim3{X: n / 256}, Block: client.Dim3{X: 256}, Stream: ch.st}
			switch r := rng.IntN(10); {
			case r < 5: // x + 1 into y
				if err := s.Launch(k, cfg, ch.x, ch.buf.Addr()+8*n, ch.y, n); err != nil {
					t.Fatal(err)
				}
				ch.x, ch.y = ch.y, ch.x
				ch.applied++
			case r < 7:
				sync(op)
			case r < 8: // x set to 7 on its stream, after what came before
				if err := s.Memset(client.Addr(ch.x), math.Float32bits(7), 4, n, ch.st); err != nil {
					t.Fatal(err)
				}
				ch.base, ch.applied = func(int) float32 { return 7 }, 0
				mustAsk = true
			case r < 9: // refused: three bytes of parameters
				if err := s.LaunchRaw(k, cfg, []byte{1, 2, 3}); err != nil {
					t.Fatal(err)
				}
				refused = true
			default: // synchronized, then every chain read back
				sync(op)
				for j, ch := range chains {
					out := make([]byte, 4*n)
					if err := ch.buf.Read(c, ch.x-ch.buf.Addr(), out); err != nil {
						t.Fatal(err)
					}
					for i := range n {
						if got, want := math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])), ch.base(i)+float32(ch.applied); got != want {
							t.Fatalf("seed %d, op %d, chain %d: x[%d] = %v, want %v", seed, op, j, i, got, want)
						}
					}
				}
				mustAsk = true
			}
		}
		watched, asked := s.WatchCounts()
		t.Logf("seed %d: %d synchronizes on the page, %d in the driver", seed, watched, asked)
		s.Close()
	}
}
