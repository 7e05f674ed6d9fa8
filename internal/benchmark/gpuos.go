package benchmark

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpuos/gpuos/client"
)

// viaGPUOS runs the measurements through a gpuos session.
type viaGPUOS struct {
	ctx      context.Context
	s        *client.Session
	empty    *client.Kernel
	scale    *client.Kernel
	sms      int
	small    *client.Buffer
	buf      *client.Buffer
	in, out  *client.Buffer
	pageable []byte
	pinned   *client.HostBuffer // nil on a transport without shared host memory
}

func newGPUOS(ctx context.Context, s *client.Session, z sizes) (*viaGPUOS, error) {
	g := &viaGPUOS{ctx: ctx, s: s}
	p, err := s.LoadProgram(ctx, benchPTX, "bench")
	if err != nil {
		return nil, fmt.Errorf("load bench kernels: %w", err)
	}
	if g.empty, err = p.Kernel(ctx, "empty"); err != nil {
		return nil, err
	}
	sp, err := s.LoadProgram(ctx, StreamPTX, "stream")
	if err != nil {
		return nil, fmt.Errorf("load the memory-bound kernel: %w", err)
	}
	if g.scale, err = sp.Kernel(ctx, "scale_copy32"); err != nil {
		return nil, err
	}
	for _, b := range []struct {
		dst  **client.Buffer
		size int
	}{{&g.small, 64}, {&g.buf, z.copyBytes}, {&g.in, 4 * z.kernelFloats}, {&g.out, 4 * z.kernelFloats}} {
		if *b.dst, err = s.CreateBuffer(ctx, uint64(b.size)); err != nil {
			return nil, err
		}
	}
	g.pageable = make([]byte, z.copyBytes)
	for i := range g.pageable {
		g.pageable[i] = byte(i)
	}
	if g.pinned, err = s.AllocHost(ctx, z.copyBytes); err != nil && !errors.Is(err, client.ErrUnsupported) {
		return nil, fmt.Errorf("pinned host memory: %w", err)
	}
	return g, nil
}

func (g *viaGPUOS) close() {
	if g.pinned != nil {
		g.pinned.Close()
	}
}

var oneLaunch = client.LaunchConfig{Grid: client.Dim3{X: 1}, Block: client.Dim3{X: 1}}

func (g *viaGPUOS) launchThroughput(count int) (time.Duration, error) {
	start := time.Now()
	for i := 0; i < count; i++ {
		if err := g.s.LaunchRaw(g.empty, oneLaunch, nil); err != nil {
			return 0, err
		}
	}
	err := g.s.Synchronize(g.ctx)
	return time.Since(start), err
}

func (g *viaGPUOS) launchSync(iters int) ([]time.Duration, error) {
	ds := make([]time.Duration, iters)
	for i := range ds {
		start := time.Now()
		if err := g.s.LaunchRaw(g.empty, oneLaunch, nil); err != nil {
			return nil, err
		}
		if err := g.s.Synchronize(g.ctx); err != nil {
			return nil, err
		}
		ds[i] = time.Since(start)
	}
	return ds, nil
}

func (g *viaGPUOS) smallCopy(iters int) ([]time.Duration, error) {
	src := make([]byte, 64)
	ds := make([]time.Duration, iters)
	for i := range ds {
		start := time.Now()
		if err := g.small.Write(g.ctx, 0, src); err != nil {
			return nil, err
		}
		ds[i] = time.Since(start)
	}
	return ds, nil
}

func (g *viaGPUOS) copyBandwidth(size int, pinned, toDevice bool) (time.Duration, error) {
	host := g.pageable[:size]
	if pinned {
		if g.pinned == nil {
			return 0, nil // no pinned client memory on this transport
		}
		host = g.pinned.Bytes()[:size]
	}
	start := time.Now()
	var err error
	if toDevice {
		if err = g.s.CopyToDevice(g.buf.At(0), host, nil); err == nil {
			err = g.s.Synchronize(g.ctx)
		}
	} else {
		err = g.s.CopyFromDevice(g.ctx, host, g.buf.At(0), nil)
	}
	return time.Since(start), err
}

func (g *viaGPUOS) allocFree(iters int) ([]time.Duration, error) {
	ds := make([]time.Duration, iters)
	for i := range ds {
		start := time.Now()
		b, err := g.s.CreateBuffer(g.ctx, 1<<20)
		if err != nil {
			return nil, err
		}
		if err := b.Close(); err != nil {
			return nil, err
		}
		ds[i] = time.Since(start)
	}
	return ds, nil
}

func (g *viaGPUOS) kernelTime(floats int) (time.Duration, error) {
	a, err := g.s.Record(g.ctx, nil)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	grid, block := kernelGrid(g.sms)
	cfg := client.LaunchConfig{Grid: client.Dim3{X: grid[0]}, Block: client.Dim3{X: block[0]}}
	if err := g.s.LaunchRaw(g.scale, cfg, scaleParams(g.in.Addr(), g.out.Addr(), floats, 1.5)); err != nil {
		return 0, err
	}
	b, err := g.s.Record(g.ctx, nil)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	if err := b.Wait(g.ctx, 0); err != nil {
		return 0, err
	}
	return client.Elapsed(g.ctx, a, b)
}
