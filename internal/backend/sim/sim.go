package sim

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/internal/backend"
)

// Errors returned by the sim backend, besides the backend.ErrX sentinels. Each
// is a *v1.Error, so errors.Is matches it against these sentinels and against
// the v1.ErrX (and backend.ErrX) of the same code.
var (
	// ErrIllegalAddress: device-side work (a kernel access or an enqueued copy)
	// touched memory that is not mapped or not accessible. It is a device
	// fault: with fatal faults it loses the context.
	ErrIllegalAddress = v1.Errorf(v1.CodeLaunchFailed, "illegal address")
	// ErrLaunchFailed: a kernel failed on the device (a fault, a trap, an
	// instruction limit). The error also wraps the interpreter's fault.
	ErrLaunchFailed = v1.Errorf(v1.CodeLaunchFailed, "kernel failed")
	// ErrInvalidHandle: a stream, event, module, chunk or host buffer that was
	// destroyed, or that belongs to another device or backend.
	ErrInvalidHandle = v1.Errorf(v1.CodeInvalidHandle, "destroyed or foreign object")
	// ErrClosed: the device was closed.
	ErrClosed = v1.Errorf(v1.CodeInvalidHandle, "device closed")
	// ErrSASS: a cubin (or a fatbin with no PTX): the software GPU cannot
	// execute SASS. It matches backend.ErrUnsupported.
	ErrSASS = v1.Errorf(v1.CodeUnsupported, "the software GPU cannot execute SASS")
	// ErrInvalidImage: LoadModule got bytes that are neither PTX text, a
	// fatbin nor an ELF cubin.
	ErrInvalidImage = v1.Errorf(v1.CodeMalformed, "not a PTX, cubin or fatbin image")
)

// Defaults of Options.
const (
	DefaultDevices     = 1
	DefaultMemory      = 16 << 30
	DefaultSMs         = 132
	DefaultName        = "gpuos sim (H100-like)"
	DefaultGranularity = 2 << 20
)

// DriverVersion is the CUDA driver version the sim reports (13.0).
const DriverVersion = 13000

// The device virtual address span. The interpreter keeps generic-address
// windows for shared and local memory at 0x7F00_0000_0000 and up, so every
// device address lies below that: user reservations in [VAStart, moduleStart),
// module globals in the sim's own region [moduleStart, VAEnd).
const (
	VAStart     = 0x0000_1000_0000_0000
	VAEnd       = 0x0000_7000_0000_0000
	moduleStart = 0x0000_6F00_0000_0000
)

// Options configure a sim backend. A zero field takes its default.
type Options struct {
	// Devices is the number of devices (default 1).
	Devices int
	// Memory is the physical memory of each device in bytes (default 16 GiB,
	// rounded down to Granularity). It is Go memory, allocated as chunks are
	// created; the OS backs pages only once they are written, but a chunk
	// larger than the host can commit fails the process, as any Go
	// allocation would.
	Memory uint64
	// SMs is the number of streaming multiprocessors (default 132). It feeds
	// the cost model and the device attributes.
	SMs int
	// Name is the device name (default "gpuos sim (H100-like)").
	Name string
	// Granularity is the VMM granule (default 2 MiB; a power of two, at
	// least 4 KiB).
	Granularity uint64
	// Cost is the cost model; a zero field takes its DefaultCostModel value.
	Cost CostModel
	// NonFatalFaults makes a kernel fault fail only its launch (reported on
	// its stream) instead of losing the whole context. By default faults are
	// fatal, as on a real GPU: every later call returns an error matching
	// backend.ErrContextLost that names the first fault, and only a new
	// backend (a new process, on a real GPU) gets the device back.
	NonFatalFaults bool
	// Workers is how many goroutines run one kernel's blocks (default
	// GOMAXPROCS).
	Workers int
	// MaxInstructions bounds the instructions of one launch (0: no bound); a
	// kernel that passes it fails like a faulting one.
	MaxInstructions uint64
	// ConcurrentKernels runs kernels of different streams side by side when
	// SMs are free, as a GPU does, instead of one at a time: each SM runs
	// one block at a time and a kernel's blocks take the SMs that free
	// first (see concurrent.go). A kernel alone takes the time it takes
	// without the option. Device-to-device copies and memsets are spread
	// over as many blocks as there are SMs. The device then reports one
	// block per SM
	// (MAX_BLOCKS_PER_MULTIPROCESSOR), so occupancy queries agree.
	ConcurrentKernels bool
}

// normalize fills defaults and validates.
func (o Options) normalize() (Options, error) {
	if o.Devices == 0 {
		o.Devices = DefaultDevices
	}
	if o.Memory == 0 {
		o.Memory = DefaultMemory
	}
	if o.SMs == 0 {
		o.SMs = DefaultSMs
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Granularity == 0 {
		o.Granularity = DefaultGranularity
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	o.Cost = o.Cost.withDefaults()
	switch {
	case o.Devices < 0 || o.Devices > 64:
		return o, fmt.Errorf("sim options: %d devices: %w", o.Devices, backend.ErrInvalidArgument)
	case o.SMs < 0 || o.SMs > 1024:
		return o, fmt.Errorf("sim options: %d SMs: %w", o.SMs, backend.ErrInvalidArgument)
	case o.Workers < 0:
		return o, fmt.Errorf("sim options: %d workers: %w", o.Workers, backend.ErrInvalidArgument)
	case o.Granularity < 4096 || o.Granularity&(o.Granularity-1) != 0 || o.Granularity > 1<<30:
		return o, fmt.Errorf("sim options: granularity %d is not a power of two in [4 KiB, 1 GiB]: %w", o.Granularity, backend.ErrInvalidArgument)
	}
	o.Memory &^= o.Granularity - 1
	if o.Memory == 0 || o.Memory > moduleStart-VAStart {
		return o, fmt.Errorf("sim options: memory %d bytes: %w", o.Memory, backend.ErrInvalidArgument)
	}
	return o, nil
}

// simBackend is the backend.Backend. It stands for one process: a device it
// lost stays lost for as long as it lives.
type simBackend struct {
	opts Options
	err  error // invalid options: every call fails with it

	mu   sync.Mutex
	open map[int]*Device
	lost map[int]error // ordinal → the error that lost it
}

// New returns a software GPU backend. Invalid options are reported by Devices
// and Open (ErrInvalidArgument naming the field).
func New(opts Options) backend.Backend {
	o, err := opts.normalize()
	return &simBackend{opts: o, err: err, open: map[int]*Device{}, lost: map[int]error{}}
}

func (b *simBackend) Name() string       { return "sim" }
func (b *simBackend) DriverVersion() int { return DriverVersion }

func (b *simBackend) Devices() ([]backend.DeviceInfo, error) {
	if b.err != nil {
		return nil, b.err
	}
	infos := make([]backend.DeviceInfo, b.opts.Devices)
	for i := range infos {
		infos[i] = deviceInfo(b.opts, i)
	}
	return infos, nil
}

// Open creates the context of a device. An ordinal can be open once at a
// time; after Close it can be opened again (with fresh memory), unless a
// fatal fault lost it.
func (b *simBackend) Open(ordinal int) (backend.Device, error) {
	if b.err != nil {
		return nil, b.err
	}
	if ordinal < 0 || ordinal >= b.opts.Devices {
		return nil, fmt.Errorf("open device %d of %d: %w", ordinal, b.opts.Devices, backend.ErrNoDevice)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.lost[ordinal]; err != nil {
		return nil, fmt.Errorf("open device %d: %w", ordinal, err)
	}
	if b.open[ordinal] != nil {
		return nil, fmt.Errorf("open device %d: already open in this backend: %w", ordinal, backend.ErrInvalidArgument)
	}
	d := newDevice(b, ordinal)
	b.open[ordinal] = d
	return d, nil
}

// closed is called by Device.Close.
func (b *simBackend) closed(d *Device) {
	b.mu.Lock()
	if b.open[d.ordinal] == d {
		delete(b.open, d.ordinal)
	}
	b.mu.Unlock()
}

// markLost records that a device's context was lost.
func (b *simBackend) markLost(ordinal int, err error) {
	b.mu.Lock()
	if b.lost[ordinal] == nil {
		b.lost[ordinal] = err
	}
	b.mu.Unlock()
}

// background is the parent of every device's kernel context.
var background = context.Background()
