package ring_test

import (
	"fmt"

	"github.com/gpuos/gpuos/internal/ring"
)

// A ring in shared memory: the creator lays it out, each side attaches its
// end (in real use, the other side maps the descriptor it was sent).
func Example() {
	const size = 64 << 10
	shm, err := ring.Create("example", ring.Bytes(size), true)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer shm.Close()
	if err := ring.Init(shm.Bytes(), size); err != nil {
		fmt.Println(err)
		return
	}
	p, _ := ring.NewProducer(shm.Bytes(), size, 1<<20, ring.Options{})
	c, _ := ring.NewConsumer(shm.Bytes(), size, 1<<20, ring.Options{})
	defer p.Close()
	defer c.Close()

	go func() {
		p.Write([]byte("launch"))
		p.Write(make([]byte, 100<<10)) // longer than the ring: sent in parts as it drains
	}()
	m, _ := c.Read(nil)
	fmt.Printf("%s\n", m)
	m, _ = c.Read(m)
	fmt.Println(len(m), "bytes")
	// Output:
	// launch
	// 102400 bytes
}
