package sim

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gpuos/gpuos/internal/backend"
)

// goProgram is a program of Go kernels, so the device can be tested without
// the interpreter. LoadModule of ".version 9.0 // go:NAME" loads goPrograms[NAME].
type goProgram struct {
	kernels map[string]*goKernel
	vars    []globalVar

	mu    sync.Mutex
	bound map[string]uint64
}

type goKernel struct {
	ps    []backend.Param
	attrs kernelAttributes
	fn    func(ctx context.Context, l launchArgs) (KernelWork, error)
}

func (p *goProgram) kernel(name string) (kernel, error) {
	if k, ok := p.kernels[name]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("no kernel %q", name)
}

func (p *goProgram) globals() []globalVar { return p.vars }

func (p *goProgram) bind(addr map[string]uint64) error {
	p.mu.Lock()
	p.bound = addr
	p.mu.Unlock()
	return nil
}

func (k *goKernel) params() []backend.Param      { return k.ps }
func (k *goKernel) attributes() kernelAttributes { return k.attrs }
func (k *goKernel) run(ctx context.Context, l launchArgs) (KernelWork, error) {
	return k.fn(ctx, l)
}

// testKernels are the Go kernels of the "test" program. Parameters are
// little-endian, 8-byte aligned.
func testProgram() *goProgram {
	return &goProgram{kernels: map[string]*goKernel{
		// fill(ptr u64, n u32, value u32): ptr[i] = value for i < n, one
		// thread per element; 4 instructions per thread.
		"fill": {
			ps: []backend.Param{{Offset: 0, Size: 8}, {Offset: 8, Size: 4}, {Offset: 12, Size: 4}},
			fn: func(ctx context.Context, l launchArgs) (KernelWork, error) {
				ptr := binary.LittleEndian.Uint64(l.params)
				n := binary.LittleEndian.Uint32(l.params[8:])
				v := binary.LittleEndian.Uint32(l.params[12:])
				threads := uint64(l.grid[0]) * uint64(l.block[0])
				var w KernelWork
				w.Blocks = uint64(l.grid[0])
				for i := uint64(0); i < threads; i++ {
					w.Instructions += 2
					if i >= uint64(n) {
						continue
					}
					b, err := l.global.Slice(ptr+4*i, 4, true)
					if err != nil {
						return w, err
					}
					binary.LittleEndian.PutUint32(b, v)
					w.Instructions += 2
					w.GlobalBytesWritten += 4
				}
				return w, nil
			},
		},
		// work(instructions u64, bytes u64): does nothing but report that work
		// over grid.x blocks.
		"work": {
			ps: []backend.Param{{Offset: 0, Size: 8}, {Offset: 8, Size: 8}},
			fn: func(ctx context.Context, l launchArgs) (KernelWork, error) {
				return KernelWork{
					Instructions:    binary.LittleEndian.Uint64(l.params),
					GlobalBytesRead: binary.LittleEndian.Uint64(l.params[8:]),
					Blocks:          uint64(l.grid[0]) * uint64(l.grid[1]) * uint64(l.grid[2]),
				}, nil
			},
		},
		// poke(ptr u64): writes one byte at ptr; faults if it is not mapped.
		"poke": {
			ps: []backend.Param{{Offset: 0, Size: 8}},
			fn: func(ctx context.Context, l launchArgs) (KernelWork, error) {
				b, err := l.global.Slice(binary.LittleEndian.Uint64(l.params), 1, true)
				if err != nil {
					return KernelWork{Instructions: 3, Blocks: 1}, err
				}
				b[0] = 0xAB
				return KernelWork{Instructions: 3, Blocks: 1, GlobalBytesWritten: 1}, nil
			},
		},
		// wait(): blocks until the context is cancelled (the device closes).
		"wait": {
			fn: func(ctx context.Context, l launchArgs) (KernelWork, error) {
				<-ctx.Done()
				return KernelWork{}, ctx.Err()
			},
		},
	}}
}

// openTest opens device 0 of a new backend whose compile hook serves Go
// programs: text ".version 9.0 // go:test" loads testProgram.
func openTest(t testing.TB, o Options) *Device {
	t.Helper()
	b := New(o)
	dev, err := b.Open(0)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	d := dev.(*Device)
	useGoPrograms(d, nil)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// useGoPrograms makes d compile ".version 9.0 // go:NAME" to progs[NAME]
// (or testProgram for "test").
func useGoPrograms(d *Device, progs map[string]*goProgram) {
	d.compile = func(text []byte) (program, error) {
		_, name, ok := strings.Cut(string(text), "// go:")
		if !ok {
			return nil, fmt.Errorf("not a Go program: %w", backend.ErrUnsupported)
		}
		name = strings.TrimSpace(name)
		if p, ok := progs[name]; ok {
			return p, nil
		}
		if name == "test" {
			return testProgram(), nil
		}
		return nil, fmt.Errorf("no Go program %q: %w", name, backend.ErrNotFound)
	}
}

// loadTest loads the test program and returns its functions by name.
func loadTest(t testing.TB, d *Device) (backend.Module, map[string]backend.Function) {
	t.Helper()
	m, err := d.LoadModule([]byte(".version 9.0 // go:test"))
	if err != nil {
		t.Fatalf("LoadModule: %v", err)
	}
	fns := map[string]backend.Function{}
	for _, name := range []string{"fill", "work", "poke", "wait"} {
		f, err := m.Function(name)
		if err != nil {
			t.Fatalf("Function(%q): %v", name, err)
		}
		fns[name] = f
	}
	return m, fns
}

// alloc reserves, creates and maps size bytes (a multiple of the
// granularity), accessible, and returns the address.
func alloc(t testing.TB, d *Device, size uint64) backend.DevicePtr {
	t.Helper()
	p, err := d.Reserve(size, 0)
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	c, err := d.CreateChunk(size)
	if err != nil {
		t.Fatalf("CreateChunk: %v", err)
	}
	if err := d.Map(p, size, c, 0); err != nil {
		t.Fatalf("Map: %v", err)
	}
	if err := d.SetAccess(p, size); err != nil {
		t.Fatalf("SetAccess: %v", err)
	}
	return p
}

// allocErr is alloc for goroutines other than the test's.
func allocErr(d *Device, size uint64) (backend.DevicePtr, error) {
	p, err := d.Reserve(size, 0)
	if err != nil {
		return 0, err
	}
	c, err := d.CreateChunk(size)
	if err != nil {
		return 0, err
	}
	if err := d.Map(p, size, c, 0); err != nil {
		return 0, err
	}
	return p, d.SetAccess(p, size)
}

func newStream(t testing.TB, d *Device) *Stream {
	t.Helper()
	s, err := d.NewStream(0)
	if err != nil {
		t.Fatalf("NewStream: %v", err)
	}
	return s.(*Stream)
}

func fillParams(ptr backend.DevicePtr, n, v uint32) []byte {
	p := make([]byte, 16)
	binary.LittleEndian.PutUint64(p, uint64(ptr))
	binary.LittleEndian.PutUint32(p[8:], n)
	binary.LittleEndian.PutUint32(p[12:], v)
	return p
}

func workParams(instructions, bytes uint64) []byte {
	p := make([]byte, 16)
	binary.LittleEndian.PutUint64(p, instructions)
	binary.LittleEndian.PutUint64(p[8:], bytes)
	return p
}

func ptrParam(ptr uint64) []byte { return binary.LittleEndian.AppendUint64(nil, ptr) }

func grid1(blocks, threads uint32) backend.LaunchConfig {
	return backend.LaunchConfig{Grid: [3]uint32{blocks, 1, 1}, Block: [3]uint32{threads, 1, 1}}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// hold enqueues a command that blocks the stream until ch is closed, to keep
// work pending.
func (s *Stream) hold(ch <-chan struct{}) error {
	return s.enqueue(&cmd{kind: cmdHold, hold: ch}, noEngine, nil)
}
