package benchmark_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuos/gpuos/client"
	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
	"github.com/gpuos/gpuos/internal/benchmark"
	"github.com/gpuos/gpuos/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// countingDevice counts the kernel launches of its streams.
type countingDevice struct {
	backend.Device
	launches *atomic.Int64
}

// MemAlloc and MemFree are the sim's native allocator, which the wrapper
// would hide.
func (d countingDevice) MemAlloc(size uint64) (backend.DevicePtr, error) {
	return d.Device.(backend.SimpleAllocator).MemAlloc(size)
}

func (d countingDevice) MemFree(ptr backend.DevicePtr) error {
	return d.Device.(backend.SimpleAllocator).MemFree(ptr)
}

type countingStream struct {
	backend.Stream
	launches *atomic.Int64
}

func (d countingDevice) NewStream(priority int) (backend.Stream, error) {
	st, err := d.Device.NewStream(priority)
	if err != nil {
		return nil, err
	}
	return countingStream{st, d.launches}, nil
}

func (st countingStream) Launch(f backend.Function, cfg backend.LaunchConfig, params []byte) error {
	st.launches.Add(1)
	return st.Stream.Launch(f, cfg, params)
}

// TestRunOnSim runs every measurement on the software GPU, natively and
// through a gpuos session: each gives both sides a figure, and both sides
// launch the same kernels the same number of times (the comparison is of
// like with like).
func TestRunOnSim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole benchmark")
	}
	env := testenv.Start(t, testenv.Options{})
	s := env.Session(t, env.Dial(t, client.Options{}), client.SessionOptions{Label: "bench"})
	dev, err := sim.New(sim.Options{Memory: 1 << 30}).Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	var native atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	before, err := s.Stat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 2
	results, err := benchmark.Run(ctx, benchmark.Options{Native: countingDevice{dev, &native}, Session: s, Quick: true, Rounds: rounds})
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Stat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) == 0 || results[0].Name != "async empty launch" {
		t.Fatalf("results %+v, want the async empty launch first", results)
	}
	for _, r := range results {
		if r.Native <= 0 || r.GPUOS <= 0 {
			t.Errorf("%s: native %v, gpuos %v; want both measured", r.Name, r.Native, r.GPUOS)
		}
	}
	if have, want := after.Launches-before.Launches, uint64(native.Load()); have != want {
		t.Errorf("gpuos side launched %d kernels, native side %d", have, want)
	}
}
