package sim_test

import (
	"fmt"
	"log"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/sim"
)

// Map memory with the VMM calls, copy through it on a stream and time the
// copies with events: the times come from the cost model, so they are the
// same on every run.
func Example() {
	b := sim.New(sim.Options{})
	dev, err := b.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	g := dev.Granularity()
	ptr, err := dev.Reserve(g, 0)
	if err != nil {
		log.Fatal(err)
	}
	chunk, err := dev.CreateChunk(g)
	if err != nil {
		log.Fatal(err)
	}
	if err := dev.Map(ptr, g, chunk, 0); err != nil {
		log.Fatal(err)
	}
	if err := dev.SetAccess(ptr, g); err != nil {
		log.Fatal(err)
	}

	s, err := dev.NewStream(0)
	if err != nil {
		log.Fatal(err)
	}
	start, err := dev.NewEvent(0)
	if err != nil {
		log.Fatal(err)
	}
	stop, err := dev.NewEvent(0)
	if err != nil {
		log.Fatal(err)
	}
	out := make([]byte, 13)
	for _, step := range []func() error{
		func() error { return s.Record(start) },
		func() error { return s.CopyHtoD(ptr, []byte("hello, device")) }, // pageable: 2 µs + 13 B at 6.2 GB/s
		func() error { return s.CopyDtoH(out, ptr) },                     // pageable: 2 µs + 13 B at 11.9 GB/s
		func() error { return s.Record(stop) },
		stop.Synchronize,
	} {
		if err := step(); err != nil {
			log.Fatal(err)
		}
	}
	elapsed, err := stop.Elapsed(start)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s in %v of device time\n", out, elapsed)
	fmt.Println("device clock:", dev.(*sim.Device).VirtualTime())
	// Output:
	// hello, device in 4.005µs of device time
	// device clock: 4.005µs
}

var _ backend.Backend = sim.New(sim.Options{})
