package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/gpuos/gpuos/internal/backend"
)

// program is a compiled module: the interpreter's (see interp.go), or a
// test's Go kernels.
type program interface {
	kernel(name string) (kernel, error)
	globals() []globalVar
	bind(addr map[string]uint64) error
}

// kernel is one entry point of a program.
type kernel interface {
	params() []backend.Param
	attributes() kernelAttributes
	run(ctx context.Context, l launchArgs) (KernelWork, error)
}

// globalVar is a module-scope .global or .const variable to place in device
// memory. Relocations write the 64-bit address of another variable (plus an
// addend) at an offset of this one.
type globalVar struct {
	name        string
	isConst     bool
	size, align uint64
	init        []byte
	relocs      []reloc
}

type reloc struct {
	offset uint64
	symbol string
	addend int64
}

type kernelAttributes struct {
	staticShared, localPerThread, numRegs, maxThreadsPerBlock, ptxVersion int
}

// launchArgs is what a kernel run gets.
type launchArgs struct {
	grid, block      [3]uint32
	dynamicShared    uint32
	params           []byte
	global           *memView
	startNs          uint64
	nsPerInstruction float64
	workers          int
	maxInstructions  uint64
	sms              int
}

// H100 launch limits.
const (
	maxThreadsPerBlock   = 1024
	maxBlockDimXY        = 1024
	maxBlockDimZ         = 64
	maxGridDimX          = 1<<31 - 1
	maxGridDimYZ         = 65535
	sharedPerBlock       = 48 << 10
	sharedPerBlockOptin  = 227 << 10
	sharedPerSM          = 228 << 10
	binaryVersion        = 90 // sm_90
	constantMemoryBytes  = 64 << 10
	registersPerBlockMax = 64 << 10
)

// module is a backend.Module.
type module struct {
	d    *Device
	prog program

	// Placed globals: one mapping in the sim's module region, if any.
	base, size uint64
	chunk      *chunk
	globals    map[string]placedGlobal
	constBytes int

	mu       sync.Mutex
	idle     sync.Cond // signalled when pending drops to zero
	unloaded bool
	pending  int // enqueued launches not yet run
	funcs    map[string]*function
}

type placedGlobal struct{ addr, size uint64 }

var _ backend.Module = (*module)(nil)

// LoadModule loads PTX text (optionally NUL-terminated) or a fatbin (its best
// PTX for sm_90 or lower); a cubin is ErrSASS. Module variables are placed in
// the sim's own module region, outside every reservation.
func (d *Device) LoadModule(image []byte) (backend.Module, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	text, err := ptxFromImage(image)
	if err != nil {
		return nil, fmt.Errorf("load module: %w", err)
	}
	prog, err := d.compile(text)
	if err != nil {
		return nil, fmt.Errorf("load module: %w", err)
	}
	m := &module{d: d, prog: prog, funcs: map[string]*function{}}
	m.idle.L = &m.mu
	if err := m.place(); err != nil {
		return nil, fmt.Errorf("load module: %w", err)
	}
	d.qmu.Lock()
	if d.closed.Load() {
		d.qmu.Unlock()
		return nil, d.check()
	}
	d.modules[m] = struct{}{}
	d.qmu.Unlock()
	return m, nil
}

// place lays the program's globals out in one granule-rounded chunk, writes
// their initial values and relocations, and binds their addresses.
func (m *module) place() error {
	gs := m.prog.globals()
	offsets := make(map[string]uint64, len(gs))
	var off uint64
	for _, g := range gs {
		a := max(g.align, 1)
		switch {
		case a&(a-1) != 0:
			return fmt.Errorf("global %q: alignment %d is not a power of two: %w", g.name, g.align, backend.ErrInvalidArgument)
		case uint64(len(g.init)) > g.size:
			return fmt.Errorf("global %q: %d initial bytes for %d: %w", g.name, len(g.init), g.size, backend.ErrInvalidArgument)
		case hasGlobal(offsets, g.name):
			return fmt.Errorf("global %q: declared twice: %w", g.name, backend.ErrInvalidArgument)
		}
		off = alignUp(off, a)
		if off+g.size < off || off+g.size > m.d.opts.Memory {
			return fmt.Errorf("global %q of %d bytes: %w", g.name, g.size, backend.ErrOutOfMemory)
		}
		offsets[g.name] = off
		off += g.size
		if g.isConst {
			m.constBytes += int(g.size)
		}
	}
	m.globals = make(map[string]placedGlobal, len(gs))
	if off == 0 {
		for _, g := range gs {
			m.globals[g.name] = placedGlobal{}
		}
		return m.prog.bind(map[string]uint64{})
	}
	as := m.d.as
	size := alignUp(off, as.gran)
	base, err := as.reserve(size, as.gran, moduleStart, VAEnd)
	if err != nil {
		return err
	}
	ch, err := as.createChunk(m.d, size)
	if err != nil {
		_ = as.release(base, size)
		return err
	}
	m.base, m.size, m.chunk = base, size, ch
	if err := as.mapChunk(base, size, ch, 0); err != nil {
		m.free()
		return err
	}
	if err := as.setAccess(base, size); err != nil {
		m.free()
		return err
	}
	addrs := make(map[string]uint64, len(gs))
	for _, g := range gs {
		o := offsets[g.name]
		copy(ch.data[o:], g.init)
		addrs[g.name] = base + o
		m.globals[g.name] = placedGlobal{addr: base + o, size: g.size}
	}
	for _, g := range gs {
		for _, r := range g.relocs {
			target, ok := addrs[r.symbol]
			switch {
			case !ok:
				m.free()
				return fmt.Errorf("global %q: relocation against %q, which is not a module variable: %w", g.name, r.symbol, backend.ErrUnsupported)
			case r.offset > g.size || g.size-r.offset < 8:
				m.free()
				return fmt.Errorf("global %q: relocation at %d past its %d bytes: %w", g.name, r.offset, g.size, backend.ErrInvalidArgument)
			}
			binary.LittleEndian.PutUint64(ch.data[offsets[g.name]+r.offset:], target+uint64(r.addend))
		}
	}
	if err := m.prog.bind(addrs); err != nil {
		m.free()
		return err
	}
	return nil
}

func hasGlobal(m map[string]uint64, name string) bool {
	_, ok := m[name]
	return ok
}

// free returns the module's device memory.
func (m *module) free() {
	if m.chunk == nil {
		if m.size != 0 {
			_ = m.d.as.release(m.base, m.size)
		}
		return
	}
	as := m.d.as
	_ = as.unmap(m.base, m.size)
	_ = as.releaseChunk(m.chunk)
	_ = as.release(m.base, m.size)
	m.d.view.flush()
	m.chunk, m.size = nil, 0
}

// pin counts an enqueued launch; Unload waits for it.
func (m *module) pin() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unloaded {
		return fmt.Errorf("module was unloaded: %w", ErrInvalidHandle)
	}
	m.pending++
	return nil
}

func (m *module) unpin() {
	m.mu.Lock()
	if m.pending--; m.pending == 0 {
		m.idle.Broadcast()
	}
	m.mu.Unlock()
}

// Function finds a kernel by name.
func (m *module) Function(name string) (backend.Function, error) {
	if err := m.d.check(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unloaded {
		return nil, fmt.Errorf("function %q: module was unloaded: %w", name, ErrInvalidHandle)
	}
	if f := m.funcs[name]; f != nil {
		return f, nil
	}
	k, err := m.prog.kernel(name)
	if err != nil {
		return nil, fmt.Errorf("function %q: %w: %w", name, backend.ErrNotFound, err)
	}
	f := newFunction(m, name, k)
	m.funcs[name] = f
	return f, nil
}

// Global finds a module variable: its device address and size.
func (m *module) Global(name string) (backend.DevicePtr, uint64, error) {
	if err := m.d.check(); err != nil {
		return 0, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unloaded {
		return 0, 0, fmt.Errorf("global %q: module was unloaded: %w", name, ErrInvalidHandle)
	}
	g, ok := m.globals[name]
	if !ok {
		return 0, 0, fmt.Errorf("global %q: %w", name, backend.ErrNotFound)
	}
	return backend.DevicePtr(g.addr), g.size, nil
}

// Unload waits for the module's enqueued launches, then frees it.
func (m *module) Unload() error {
	if err := m.d.check(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.unloaded {
		m.mu.Unlock()
		return fmt.Errorf("unload module: already unloaded: %w", ErrInvalidHandle)
	}
	m.unloaded = true
	for m.pending > 0 {
		m.idle.Wait()
	}
	m.mu.Unlock()
	m.d.qmu.Lock()
	_, live := m.d.modules[m]
	delete(m.d.modules, m)
	m.d.qmu.Unlock()
	if live { // Close already dropped the whole address space
		m.free()
	}
	return m.d.check()
}

// function is a backend.Function.
type function struct {
	mod       *module
	name      string
	k         kernel
	params    []backend.Param
	paramSize uint64
	attrs     backend.FuncAttributes
}

var _ backend.Function = (*function)(nil)

func newFunction(m *module, name string, k kernel) *function {
	ka := k.attributes()
	f := &function{mod: m, name: name, k: k, params: k.params()}
	for _, p := range f.params {
		f.paramSize = max(f.paramSize, uint64(p.Offset)+uint64(p.Size))
	}
	maxThreads := ka.maxThreadsPerBlock
	if maxThreads <= 0 || maxThreads > maxThreadsPerBlock {
		maxThreads = maxThreadsPerBlock
	}
	f.attrs = backend.FuncAttributes{
		MaxThreadsPerBlock:  maxThreads,
		SharedSizeBytes:     ka.staticShared,
		ConstSizeBytes:      m.constBytes,
		LocalSizeBytes:      ka.localPerThread,
		NumRegs:             ka.numRegs,
		PTXVersion:          ka.ptxVersion,
		BinaryVersion:       binaryVersion,
		MaxDynamicSharedMem: max(sharedPerBlock-ka.staticShared, 0),
	}
	return f
}

func (f *function) Name() string { return f.name }

func (f *function) Params() []backend.Param { return append([]backend.Param(nil), f.params...) }

func (f *function) Attributes() backend.FuncAttributes { return f.attrs }

// checkLaunch validates a launch against the H100's limits.
func (f *function) checkLaunch(cfg backend.LaunchConfig, params []byte) error {
	g, b := cfg.Grid, cfg.Block
	threads := uint64(b[0]) * uint64(b[1]) * uint64(b[2])
	switch {
	case b[0] == 0 || b[1] == 0 || b[2] == 0 || b[0] > maxBlockDimXY || b[1] > maxBlockDimXY || b[2] > maxBlockDimZ:
		return fmt.Errorf("launch %s: block %v: %w", f.name, b, backend.ErrInvalidArgument)
	case threads > uint64(f.attrs.MaxThreadsPerBlock):
		return fmt.Errorf("launch %s: %d threads per block, at most %d: %w", f.name, threads, f.attrs.MaxThreadsPerBlock, backend.ErrInvalidArgument)
	case g[0] == 0 || g[1] == 0 || g[2] == 0 || g[0] > maxGridDimX || g[1] > maxGridDimYZ || g[2] > maxGridDimYZ:
		return fmt.Errorf("launch %s: grid %v: %w", f.name, g, backend.ErrInvalidArgument)
	case uint64(cfg.SharedMem)+uint64(f.attrs.SharedSizeBytes) > sharedPerBlockOptin:
		return fmt.Errorf("launch %s: %d bytes of dynamic shared memory with %d static, at most %d: %w",
			f.name, cfg.SharedMem, f.attrs.SharedSizeBytes, sharedPerBlockOptin, backend.ErrInvalidArgument)
	case uint64(len(params)) < f.paramSize:
		return fmt.Errorf("launch %s: %d parameter bytes, want %d: %w", f.name, len(params), f.paramSize, backend.ErrInvalidArgument)
	}
	return nil
}

// runKernel runs a launch command on the interpreter and sets its end time,
// as a kernel on the SMs of r.
func (d *Device) runKernel(c *cmd, r smRange) error {
	f, cfg := c.fn, c.cfg
	cost := d.opts.Cost
	work, err := f.k.run(d.ctx, launchArgs{
		grid:             cfg.Grid,
		block:            cfg.Block,
		dynamicShared:    cfg.SharedMem,
		params:           c.params,
		global:           d.view,
		startNs:          c.start,
		nsPerInstruction: cost.NsPerInstruction(),
		workers:          d.opts.Workers,
		maxInstructions:  d.opts.MaxInstructions,
		sms:              d.opts.SMs,
	})
	c.end = c.start + uint64(cost.KernelTime(work, r.n()))
	if d.sms != nil {
		blocks := uint64(cfg.Grid[0]) * uint64(cfg.Grid[1]) * uint64(cfg.Grid[2])
		d.placeKernel(c, c.end-c.start, uint64(cost.LaunchOverhead), blocks, r)
	}
	if err != nil {
		if d.ctx.Err() != nil {
			return fmt.Errorf("kernel %s: %w", f.name, ErrClosed)
		}
		if !errors.Is(err, ErrLaunchFailed) { // an interpreter Fault already is one, naming the kernel
			err = fmt.Errorf("%w: kernel %s: %w", ErrLaunchFailed, f.name, err)
		}
		return d.fault(err)
	}
	return nil
}
