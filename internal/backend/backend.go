package backend

import (
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
)

// DevicePtr is a device virtual address.
type DevicePtr uint64

// Errors returned by backends. Each is a v1 code, so it travels to clients as-is.
var (
	ErrOutOfMemory     = v1.Errorf(v1.CodeOutOfMemory, "out of device memory")
	ErrNotFound        = v1.Errorf(v1.CodeNotFound, "no such symbol")
	ErrInvalidArgument = v1.Errorf(v1.CodeInvalidArgument, "invalid argument")
	ErrUnsupported     = v1.Errorf(v1.CodeUnsupported, "not supported by this backend")
	// ErrContextLost: the device context hit a fatal fault (an illegal address, a
	// trap) and every later call fails. Only a new process recovers a real GPU.
	ErrContextLost = v1.Errorf(v1.CodeDeviceLost, "device context lost")
	ErrNoDevice    = v1.Errorf(v1.CodeNotFound, "no such device")
)

// Backend is a kind of GPU: the real NVIDIA driver ("cuda") or the software GPU ("sim").
type Backend interface {
	// Name is "cuda" or "sim".
	Name() string
	// DriverVersion is the CUDA driver version in CUDA's encoding (13000 = 13.0).
	DriverVersion() int
	// Devices lists the devices this backend can open.
	Devices() ([]DeviceInfo, error)
	// Open creates the one context of this process on the device with the given
	// ordinal. A process opens each device at most once.
	Open(ordinal int) (Device, error)
}

// DeviceInfo describes a device.
type DeviceInfo struct {
	Ordinal      int
	Name         string
	UUID         [16]byte
	PCIBusID     string
	TotalMemory  uint64
	ComputeMajor int
	ComputeMinor int
	SMCount      int
	// Attributes holds every CUdevice_attribute value, indexed by the attribute's
	// number (see internal/abi/cuda); an attribute the backend does not know is 0.
	Attributes []int32
}

// Device is an open context on one device. All methods are safe for concurrent use.
// After a fatal fault every method returns an error that is ErrContextLost.
type Device interface {
	Info() DeviceInfo
	// Close destroys the context and everything created in it.
	Close() error

	// Granularity is the size and alignment unit of Reserve, CreateChunk and Map.
	Granularity() uint64
	// Reserve reserves a range of virtual addresses; size and alignment are
	// multiples of Granularity.
	Reserve(size, alignment uint64) (DevicePtr, error)
	// Release returns a reserved range; it must be unmapped.
	Release(ptr DevicePtr, size uint64) error
	// CreateChunk allocates physical device memory (a multiple of Granularity).
	CreateChunk(size uint64) (Chunk, error)
	// Map maps [offset, offset+size) of chunk at ptr, inside a reserved range.
	// Mapped memory is not accessible until SetAccess. offset must be 0: the
	// NVIDIA driver refuses any other with CUDA_ERROR_NOT_SUPPORTED (seen on
	// driver 580), and size must be the chunk's: it refuses a prefix the
	// same way (a 62 MiB mapping of a 64 MiB chunk, run 7), so backends
	// return ErrUnsupported for either.
	Map(ptr DevicePtr, size uint64, chunk Chunk, offset uint64) error
	// Unmap unmaps a range mapped with Map (whole mappings only).
	Unmap(ptr DevicePtr, size uint64) error
	// SetAccess makes a mapped range readable and writable by kernels and copies.
	// It may span many mappings; callers batch it because it is costly per call.
	SetAccess(ptr DevicePtr, size uint64) error
	// MemoryInfo reports the device's free and total physical memory.
	MemoryInfo() (free, total uint64, err error)

	// AllocHost allocates page-locked host memory that copies can DMA directly.
	AllocHost(size int) (HostMemory, error)
	// RegisterHost page-locks memory the caller mapped itself (never Go heap
	// memory: it must not move) so copies from it can be asynchronous.
	RegisterHost(mem []byte) error
	UnregisterHost(mem []byte) error

	// LoadModule loads a PTX (text), cubin (ELF) or fatbin image.
	LoadModule(image []byte) (Module, error)

	// NewStream creates a stream; priority follows CUDA: lower is more urgent,
	// within StreamPriorityRange.
	NewStream(priority int) (Stream, error)
	StreamPriorityRange() (least, greatest int)
	NewEvent(flags EventFlags) (Event, error)
	// Synchronize waits for all work in the context.
	Synchronize() error
}

// Partitioner is a Device that can confine streams to part of its SMs
// (CUDA green contexts, driver 12.4 and later). The driver keeps SMs free for
// latency-critical tenants by creating every other tenant's streams in a
// partition: a high-priority kernel then finds SMs idle instead of waiting for
// a best-effort block to end (up to a block's whole run time: stream
// priorities order only the blocks not yet started).
type Partitioner interface {
	// Partition returns a partition of the device's SMs that leaves at least
	// reserve of them out (the device rounds to its granularity: 8 SMs on
	// sm_90). ErrUnsupported if the device cannot partition;
	// ErrInvalidArgument if reserve is not positive or leaves no SM.
	Partition(reserve int) (Partition, error)
}

// Partition is a subset of a device's SMs that its streams' kernels run on.
// Memory, modules and events are the device's: only where blocks run differs.
type Partition interface {
	// SMs is the number of SMs the partition's kernels may run on, Reserved
	// the number left out.
	SMs() int
	Reserved() int
	// NewStream creates a stream in the partition; priority as Device.NewStream.
	NewStream(priority int) (Stream, error)
	// Close releases the partition; its streams must have been destroyed.
	Close() error
}

// Chunk is physical device memory.
type Chunk interface {
	Size() uint64
	// Release frees the memory; it must be unmapped everywhere.
	Release() error
}

// HostMemory is page-locked host memory from AllocHost.
type HostMemory interface {
	Bytes() []byte
	Free() error
}

// Module is a loaded program image.
type Module interface {
	// Function finds a kernel by its (mangled) name; ErrNotFound if absent.
	Function(name string) (Function, error)
	// Global finds a module-scope variable; ErrNotFound if absent.
	Global(name string) (DevicePtr, uint64, error)
	Unload() error
}

// Function is a kernel entry point.
type Function interface {
	Name() string
	// Params is the layout of the kernel's parameter buffer, in order.
	Params() []Param
	Attributes() FuncAttributes
}

// Param is one kernel parameter in the packed parameter buffer.
type Param struct {
	Offset uint32
	Size   uint32
}

// FuncAttributes mirrors the CU_FUNC_ATTRIBUTE values programs query.
type FuncAttributes struct {
	MaxThreadsPerBlock  int
	SharedSizeBytes     int // static shared memory
	ConstSizeBytes      int
	LocalSizeBytes      int
	NumRegs             int
	PTXVersion          int // major*10+minor
	BinaryVersion       int
	MaxDynamicSharedMem int
}

// LaunchConfig is a kernel's grid, block and dynamic shared memory.
type LaunchConfig struct {
	Grid      [3]uint32
	Block     [3]uint32
	SharedMem uint32
}

// Stream executes work in order. Methods enqueue and return; errors from the
// work itself surface at Query, Synchronize or on events, as in CUDA.
type Stream interface {
	// Launch enqueues a kernel. params is the packed parameter buffer laid out
	// as Function.Params describes; it is copied before Launch returns.
	Launch(f Function, cfg LaunchConfig, params []byte) error
	// CopyHtoD enqueues a host-to-device copy. If src is not from AllocHost or
	// RegisterHost, the call returns only once src has been consumed.
	CopyHtoD(dst DevicePtr, src []byte) error
	// CopyDtoH enqueues a device-to-host copy. If dst is not from AllocHost or
	// RegisterHost, the call returns only once dst has been written.
	CopyDtoH(dst []byte, src DevicePtr) error
	CopyDtoD(dst, src DevicePtr, n uint64) error
	// Memset sets count elements of elemSize (1, 2 or 4) bytes to value.
	Memset(dst DevicePtr, value uint32, elemSize int, count uint64) error
	Record(e Event) error
	// WaitEvent makes later work on this stream wait for e.
	WaitEvent(e Event) error
	// Callback runs fn on a backend goroutine once all earlier work completed,
	// with the first error of that work. fn must not block or call the backend.
	Callback(fn func(error)) error
	// Query reports whether all work completed; an error from the work is returned.
	Query() (bool, error)
	Synchronize() error
	Destroy() error
}

// EventFlags select event behaviour.
type EventFlags uint32

const (
	EventDisableTiming EventFlags = 1 << iota
	EventBlockingSync
)

// Event marks a point in a stream.
type Event interface {
	Query() (bool, error)
	Synchronize() error
	// Elapsed is the device time between start (recorded earlier) and this event.
	Elapsed(start Event) (time.Duration, error)
	Destroy() error
}
