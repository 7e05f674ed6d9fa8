package cuda_test

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/gpuos/gpuos/internal/backend"
	"github.com/gpuos/gpuos/internal/backend/cuda"
)

// Open the driver, map device memory the VMM way, and run a kernel. (Not run
// as a test: it needs a GPU; gpu_test.go does the same with checks.)
func ExampleOpen() {
	b, err := cuda.Open()
	if err != nil {
		fmt.Println("no GPU:", err) // e.g. ErrNoDriver on a machine without the driver
		return
	}
	dev, err := b.Open(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()

	// One granule of device memory: reserve, create, map, make accessible.
	g := dev.Granularity()
	p, _ := dev.Reserve(g, 0)
	chunk, _ := dev.CreateChunk(g)
	_ = dev.Map(p, g, chunk, 0)
	_ = dev.SetAccess(p, g)

	ptx, _ := os.ReadFile("testdata/kernels/vecadd.ptx")
	mod, err := dev.LoadModule(ptx)
	if err != nil {
		fmt.Println(err) // a JIT failure carries the JIT's log
		return
	}
	vecadd, _ := mod.Function("vecadd")
	params := make([]byte, 28) // as vecadd.Params() lays them out
	binary.LittleEndian.PutUint64(params[0:], uint64(p))
	binary.LittleEndian.PutUint64(params[8:], uint64(p)+4096)
	binary.LittleEndian.PutUint64(params[16:], uint64(p)+8192)
	binary.LittleEndian.PutUint32(params[24:], 1024)

	s, _ := dev.NewStream(0)
	_ = s.Memset(p, 0x3f800000, 4, 2048) // 1.0f
	_ = s.Launch(vecadd, backend.LaunchConfig{Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{256, 1, 1}}, params)
	out := make([]byte, 4)
	_ = s.CopyDtoH(out, p+8192)                          // from Go memory: returns once written
	fmt.Printf("%#x\n", binary.LittleEndian.Uint32(out)) // 0x40000000, 2.0f
}
