package benchmark

import (
	"fmt"
	"time"

	"github.com/gpuos/gpuos/internal/backend"
)

// native runs the measurements on a backend device directly.
type native struct {
	dev       backend.Device
	st        backend.Stream
	mod       backend.Module
	stream    backend.Module
	empty     backend.Function
	scale     backend.Function
	sms       int
	small     backend.DevicePtr
	buf       backend.DevicePtr // copyBytes
	in, out   backend.DevicePtr // kernel buffers
	pinned    backend.HostMemory
	pageable  []byte
	allocated []func()
}

func newNative(dev backend.Device, z sizes) (*native, error) {
	n := &native{dev: dev, sms: dev.Info().SMCount}
	ok := false
	defer func() {
		if !ok {
			n.close()
		}
	}()
	var err error
	if n.st, err = dev.NewStream(0); err != nil {
		return nil, err
	}
	if n.mod, err = dev.LoadModule(benchPTX); err != nil {
		return nil, fmt.Errorf("load bench kernels: %w", err)
	}
	if n.empty, err = n.mod.Function("empty"); err != nil {
		return nil, err
	}
	if n.stream, err = dev.LoadModule(StreamPTX); err != nil {
		return nil, fmt.Errorf("load the memory-bound kernel: %w", err)
	}
	if n.scale, err = n.stream.Function("scale_copy32"); err != nil {
		return nil, err
	}
	if n.small, err = n.alloc(64); err != nil {
		return nil, err
	}
	if n.buf, err = n.alloc(uint64(z.copyBytes)); err != nil {
		return nil, err
	}
	if n.in, err = n.alloc(uint64(4 * z.kernelFloats)); err != nil {
		return nil, err
	}
	if n.out, err = n.alloc(uint64(4 * z.kernelFloats)); err != nil {
		return nil, err
	}
	if n.pinned, err = dev.AllocHost(z.copyBytes); err != nil {
		return nil, err
	}
	n.pageable = make([]byte, z.copyBytes)
	for i := range n.pageable {
		n.pageable[i] = byte(i)
	}
	ok = true
	return n, nil
}

// alloc maps a range the way the memory manager would, for the native side's
// buffers (their cost is not measured).
func (n *native) alloc(size uint64) (backend.DevicePtr, error) {
	g := n.dev.Granularity()
	size = (size + g - 1) / g * g
	ptr, err := n.dev.Reserve(size, g)
	if err != nil {
		return 0, err
	}
	c, err := n.dev.CreateChunk(size)
	if err != nil {
		n.dev.Release(ptr, size)
		return 0, err
	}
	if err := n.dev.Map(ptr, size, c, 0); err != nil {
		return 0, err
	}
	if err := n.dev.SetAccess(ptr, size); err != nil {
		return 0, err
	}
	n.allocated = append(n.allocated, func() {
		n.dev.Unmap(ptr, size)
		c.Release()
		n.dev.Release(ptr, size)
	})
	return ptr, nil
}

func (n *native) close() {
	if n.st != nil {
		n.st.Synchronize()
		n.st.Destroy()
	}
	for _, f := range n.allocated {
		f()
	}
	if n.pinned != nil {
		n.pinned.Free()
	}
	if n.mod != nil {
		n.mod.Unload()
	}
	if n.stream != nil {
		n.stream.Unload()
	}
}

var one = backend.LaunchConfig{Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}}

func (n *native) launchThroughput(count int) (time.Duration, error) {
	start := time.Now()
	for i := 0; i < count; i++ {
		if err := n.st.Launch(n.empty, one, nil); err != nil {
			return 0, err
		}
	}
	err := n.st.Synchronize()
	return time.Since(start), err
}

func (n *native) launchSync(iters int) ([]time.Duration, error) {
	ds := make([]time.Duration, iters)
	for i := range ds {
		start := time.Now()
		if err := n.st.Launch(n.empty, one, nil); err != nil {
			return nil, err
		}
		if err := n.st.Synchronize(); err != nil {
			return nil, err
		}
		ds[i] = time.Since(start)
	}
	return ds, nil
}

func (n *native) smallCopy(iters int) ([]time.Duration, error) {
	src := make([]byte, 64) // pageable: a synchronous copy, like cuMemcpyHtoD
	ds := make([]time.Duration, iters)
	for i := range ds {
		start := time.Now()
		if err := n.st.CopyHtoD(n.small, src); err != nil {
			return nil, err
		}
		ds[i] = time.Since(start)
	}
	return ds, nil
}

func (n *native) copyBandwidth(size int, pinned, toDevice bool) (time.Duration, error) {
	host := n.pageable[:size]
	if pinned {
		host = n.pinned.Bytes()[:size]
	}
	start := time.Now()
	var err error
	if toDevice {
		err = n.st.CopyHtoD(n.buf, host)
	} else {
		err = n.st.CopyDtoH(host, n.buf)
	}
	if err == nil {
		err = n.st.Synchronize()
	}
	return time.Since(start), err
}

func (n *native) allocFree(iters int) ([]time.Duration, error) {
	sa, ok := n.dev.(backend.SimpleAllocator)
	if !ok {
		return nil, nil
	}
	ds := make([]time.Duration, iters)
	for i := range ds {
		start := time.Now()
		p, err := sa.MemAlloc(1 << 20)
		if err != nil {
			return nil, err
		}
		if err := sa.MemFree(p); err != nil {
			return nil, err
		}
		ds[i] = time.Since(start)
	}
	return ds, nil
}

func (n *native) kernelTime(floats int) (time.Duration, error) {
	a, err := n.dev.NewEvent(0)
	if err != nil {
		return 0, err
	}
	defer a.Destroy()
	b, err := n.dev.NewEvent(0)
	if err != nil {
		return 0, err
	}
	defer b.Destroy()
	grid, block := kernelGrid(n.sms)
	cfg := backend.LaunchConfig{Grid: grid, Block: block}
	params := scaleParams(uint64(n.in), uint64(n.out), floats, 1.5)
	if err := n.st.Record(a); err != nil {
		return 0, err
	}
	if err := n.st.Launch(n.scale, cfg, params); err != nil {
		return 0, err
	}
	if err := n.st.Record(b); err != nil {
		return 0, err
	}
	if err := b.Synchronize(); err != nil {
		return 0, err
	}
	return b.Elapsed(a)
}
