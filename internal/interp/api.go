package interp

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// Generic address windows. A generic address in [SharedWindow,
// SharedWindow+WindowSize) is the shared-memory address (addr − SharedWindow) of
// the executing block; one in [LocalWindow, LocalWindow+WindowSize) is the local
// address (addr − LocalWindow) of the executing thread; every other generic
// address is a global address. The sim device places device memory only in
// [0x0000_1000_0000_0000, 0x0000_7000_0000_0000), outside both windows.
const (
	SharedWindow uint64 = 0x0000_7f00_0000_0000
	LocalWindow  uint64 = 0x0000_7f10_0000_0000
	WindowSize   uint64 = 1 << 32
)

// Limits of one launch, as on an sm_90 device.
const (
	MaxThreadsPerBlock = 1024
	MaxSharedPerBlock  = 227 << 10 // static + dynamic shared memory
	MaxGridX           = 1<<31 - 1
	MaxGridYZ          = 65535
	// MaxCallDepth bounds nested device-function calls per thread.
	MaxCallDepth = 1024
	// MaxLocalPerThread bounds a thread's local memory, call frames included.
	MaxLocalPerThread = 512 << 10
	maxParamBytes     = 32 << 10 // a kernel's or call's parameters
)

// Program is a compiled PTX module. Its methods are safe for concurrent use,
// except that Bind must not run concurrently with Run.
type Program struct {
	version  int // .version as major*10+minor
	kernels  map[string]*Kernel
	names    []string
	globals  []Global
	symbols  map[string]*symbol // module-scope .global/.const variables
	mu       sync.Mutex
	bound    bool
	patches  []addrPatch // constant slots that hold a global's address
	needBind bool
}

// Global is a module-scope .global or .const variable the device must place in
// device memory before the program runs.
type Global struct {
	Name   string
	Const  bool // .const rather than .global
	Size   uint64
	Align  uint64
	Init   []byte  // initial contents, Size bytes (zeros where not initialized)
	Relocs []Reloc // addresses of other symbols to store into Init once placed
}

// Reloc asks the device to store the 64-bit address of Symbol plus Addend at
// Offset in a global's initial contents.
type Reloc struct {
	Offset uint64
	Symbol string
	Addend int64
}

// Param is one kernel parameter's place in the packed parameter buffer.
type Param struct {
	Name   string
	Offset int
	Size   int
	Align  int
}

// Attributes are the static properties of a kernel that CUDA reports through
// cuFuncGetAttribute.
type Attributes struct {
	StaticShared       int // bytes of statically declared shared memory
	LocalPerThread     int // bytes of local memory of the kernel's own frame
	NumRegs            int // 32-bit registers the kernel declares (capped at 255)
	MaxThreadsPerBlock int // from .maxntid/.reqntid, else 1024
	PTXVersion         int // .version as major*10+minor (90 for 9.0)
}

// Kernel is one .entry of a Program.
type Kernel struct {
	prog     *Program
	name     string
	entry    *function
	params   []Param
	psize    int // bytes of the parameter buffer
	attrs    Attributes
	reqntid  [3]int // .reqntid, zero if absent
	shared   int    // static shared bytes
	dynAlign int    // alignment of dynamic shared memory
}

// Kernel returns the kernel named name.
func (p *Program) Kernel(name string) (*Kernel, error) {
	k, ok := p.kernels[name]
	if !ok {
		return nil, fmt.Errorf("find kernel %q: %w", name, ErrNotFound)
	}
	return k, nil
}

// Kernels lists the program's kernels by name, sorted.
func (p *Program) Kernels() []string { return slices.Clone(p.names) }

// Globals lists the module-scope .global and .const variables, in source order.
func (p *Program) Globals() []Global {
	out := make([]Global, len(p.globals))
	for i, g := range p.globals {
		g.Init = slices.Clone(g.Init)
		g.Relocs = slices.Clone(g.Relocs)
		out[i] = g
	}
	return out
}

// Bind tells the program where the device placed each global. Every global
// must be given a nonzero address aligned to its Align; names that are not
// globals of the program are an error.
func (p *Program) Bind(addr map[string]uint64) error {
	for name, a := range addr {
		s, ok := p.symbols[name]
		if !ok {
			return fmt.Errorf("bind %q: %w", name, ErrNotFound)
		}
		if a == 0 || a%uint64(s.align) != 0 {
			return v1.Errorf(v1.CodeInvalidArgument, "interp: bind %q: address %#x is not aligned to %d", name, a, s.align)
		}
	}
	for _, g := range p.globals {
		if _, ok := addr[g.Name]; !ok {
			return v1.Errorf(v1.CodeInvalidArgument, "interp: bind: no address for global %q", g.Name)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pt := range p.patches {
		pt.fn.template[pt.slot] = addr[pt.sym] + uint64(pt.off)
	}
	p.bound = true
	return nil
}

func (p *Program) isBound() bool {
	if !p.needBind {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bound
}

// Name returns the kernel's name.
func (k *Kernel) Name() string { return k.name }

// Params returns the kernel's parameters in declaration order.
func (k *Kernel) Params() []Param { return slices.Clone(k.params) }

// ParamSize returns the size in bytes of the packed parameter buffer.
func (k *Kernel) ParamSize() int { return k.psize }

// Attributes returns the kernel's static attributes.
func (k *Kernel) Attributes() Attributes { return k.attrs }

// Memory is global device memory as the sim device maps it. It must be safe
// for concurrent use by the blocks running in parallel.
type Memory interface {
	// Slice returns the n bytes at addr for reading or writing; an unmapped or
	// inaccessible address is an error (it becomes a Fault). n <= 32 and addr
	// is n-aligned for accesses.
	Slice(addr uint64, n int, write bool) ([]byte, error)
}

// Launch is one kernel launch's configuration.
type Launch struct {
	Grid, Block   [3]uint32
	DynamicShared uint32
	Params        []byte // packed parameter buffer (see Kernel.Params)
	Global        Memory
	// StartNs is the virtual time of the launch: %globaltimer reads StartNs +
	// NsPerInstruction × (instructions this thread executed so far) plus the
	// time the thread slept in nanosleep.
	StartNs          uint64
	NsPerInstruction float64
	// Workers is how many blocks run in parallel (0 = GOMAXPROCS).
	Workers int
	// MaxInstructions aborts a runaway grid with a Fault of kind
	// FaultWatchdog once it has executed that many thread-instructions
	// (0 = unlimited).
	MaxInstructions uint64
	// SMs is the number of streaming multiprocessors %nsmid reports; block b
	// reports %smid = b mod SMs. 0 means 1.
	SMs int
	// Printf receives the output of device printf, one Write per call
	// (concurrent blocks' calls do not interleave within a call); nil
	// discards it.
	Printf io.Writer
}

// Result reports what a launch did.
type Result struct {
	Instructions       uint64 // thread-instructions executed (predicated-off ones included)
	GlobalBytesRead    uint64
	GlobalBytesWritten uint64
	Blocks             uint64 // blocks that ran to completion
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
