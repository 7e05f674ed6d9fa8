package shim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// Thread identifies an application thread: cmd/libcuda hands out one token per
// OS thread from C thread-local storage. Each thread has its own context stack.
type Thread uint64

// Config configures a Driver.
type Config struct {
	// Options for dialing the daemon; empty fields come from GPUOS_SOCKET,
	// GPUOS_TOKEN and GPUOS_TENANT.
	Options client.Options
	// Log receives reports; nil: LogFromEnv.
	Log *Log
	// DriverVersion is what cuDriverGetVersion answers; 0: CUDA_VERSION.
	DriverVersion int
	// CLSDestructor calls a context-local-storage destructor the CUDA runtime
	// registered (a C function pointer) when its context is destroyed. Nil:
	// destructors are not called.
	CLSDestructor func(fn, ctx, key, value uintptr)
	// Host allocates the host memory of cuMemHostAlloc; nil: anonymous
	// page-aligned mappings.
	Host HostAllocator
}

// Driver is the CUDA driver of one process. Its methods are the entry points
// of the driver API, in Go terms; they are safe for concurrent use.
type Driver struct {
	cfg Config
	log *Log

	initMu  sync.Mutex
	inited  atomic.Bool
	initRes Result // the result of the first cuInit, once it ran
	client  *client.Client
	devices []*device

	threads sync.Map // Thread -> *thread

	contexts  *table[ctxObj]
	streams   *table[stream]
	events    *table[event]
	modules   *table[module]
	functions *table[function]
	libraries *table[library]
	kernels   *table[kernel]

	mem  memMap
	host hostMap

	ids atomic.Uint64 // context, stream and buffer ids

	// trust is the tenant's trust tier (v1.TrustTier) once a session has
	// told it, trustUnknown before (trust.go); sessionTrust reads it from a
	// session (tests replace it).
	trust        atomic.Int32
	sessionTrust func(*client.Session) v1.TrustTier
}

// New returns a driver; nothing happens until Init.
func New(cfg Config) *Driver {
	if cfg.Log == nil {
		cfg.Log = LogFromEnv()
	}
	if cfg.DriverVersion == 0 {
		cfg.DriverVersion = cu.CUDA_VERSION
	}
	if cfg.Host == nil {
		cfg.Host = mmapHost{}
	}
	d := &Driver{
		cfg: cfg, log: cfg.Log,
		contexts: newTable[ctxObj](kindContext), streams: newTable[stream](kindStream),
		events: newTable[event](kindEvent), modules: newTable[module](kindModule),
		functions: newTable[function](kindFunction), libraries: newTable[library](kindLibrary),
		kernels:      newTable[kernel](kindKernel),
		sessionTrust: sessionTrust,
	}
	d.trust.Store(trustUnknown)
	return d
}

// Log returns the driver's log.
func (d *Driver) Log() *Log { return d.log }

// device is one GPU the daemon serves, and this process's session on it.
type device struct {
	ordinal int
	info    client.Device
	attrs   []int32 // what cuDeviceGetAttribute answers (see deviceAttributes)
	limits  launchLimits

	mu           sync.Mutex // guards the fields below
	sess         *session
	primary      *ctxObj // the primary context, once retained
	primaryRefs  int
	primaryFlags uint32
}

// session is the gpuos session of a device, with the daemon stream that every
// blocking CUDA stream of the process shares.
type session struct {
	dev      *device
	s        *client.Session
	blocking *dstream
}

// callTimeout bounds calls that set things up (dial, open a session); the
// calls of an application's work wait as long as the work takes.
const callTimeout = 2 * time.Minute

// Init is cuInit: connect to the daemon and learn its devices. Only the first
// call does anything; later calls return its result.
func (d *Driver) Init(flags uint32) Result {
	if flags != 0 {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	if d.inited.Load() {
		return d.initRes
	}
	d.initMu.Lock()
	defer d.initMu.Unlock()
	if d.inited.Load() {
		return d.initRes
	}
	d.initRes = d.init()
	d.inited.Store(true)
	return d.initRes
}

func (d *Driver) init() Result {
	opts := d.cfg.Options
	if opts.Program == "" && len(os.Args) > 0 {
		opts.Program = filepath.Base(os.Args[0])
	}
	socket := opts.Socket
	if socket == "" {
		socket = os.Getenv("GPUOS_SOCKET")
	}
	if socket == "" {
		socket = client.DefaultSocket()
	}
	opts.Socket = socket
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	c, err := client.Dial(ctx, opts)
	if err != nil {
		d.log.Printf("cuInit: cannot reach the gpuos daemon at %s: %v (is `gpuos serve` running? set GPUOS_SOCKET); returning CUDA_ERROR_NO_DEVICE", socket, err)
		return cu.CUDA_ERROR_NO_DEVICE
	}
	devs, err := c.Devices(ctx)
	if err != nil {
		c.Close()
		d.log.Printf("cuInit: listing the daemon's devices: %v; returning CUDA_ERROR_NO_DEVICE", err)
		return cu.CUDA_ERROR_NO_DEVICE
	}
	if len(devs) == 0 {
		c.Close()
		d.log.Printf("cuInit: the gpuos daemon at %s serves no device; returning CUDA_ERROR_NO_DEVICE", socket)
		return cu.CUDA_ERROR_NO_DEVICE
	}
	d.client = c
	for i, info := range devs {
		dv := &device{ordinal: i, info: info, attrs: deviceAttributes(info)}
		dv.limits = newLaunchLimits(dv)
		d.devices = append(d.devices, dv)
	}
	if d.log.Tracing(TraceTables) {
		d.log.Printf("cuInit: %s backend, %d device(s) at %s", c.Backend(), len(devs), socket)
	}
	return cu.CUDA_SUCCESS
}

// ready returns CUDA_SUCCESS once cuInit has succeeded.
func (d *Driver) ready() Result {
	if !d.inited.Load() || d.initRes != cu.CUDA_SUCCESS {
		return cu.CUDA_ERROR_NOT_INITIALIZED
	}
	return cu.CUDA_SUCCESS
}

// DriverVersion is cuDriverGetVersion (it needs no cuInit).
func (d *Driver) DriverVersion() int { return d.cfg.DriverVersion }

// device returns device ordinal dev.
func (d *Driver) device(dev int32) (*device, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return nil, r
	}
	if dev < 0 || int(dev) >= len(d.devices) {
		return nil, cu.CUDA_ERROR_INVALID_DEVICE
	}
	return d.devices[dev], cu.CUDA_SUCCESS
}

// opened reports whether the device's session is open.
func (dv *device) opened() bool {
	dv.mu.Lock()
	defer dv.mu.Unlock()
	return dv.sess != nil
}

// session returns the device's session, opening it on first use.
func (d *Driver) session(dev *device) (*session, Result) {
	dev.mu.Lock()
	defer dev.mu.Unlock()
	if dev.sess != nil {
		return dev.sess, cu.CUDA_SUCCESS
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	label := ""
	if len(os.Args) > 0 {
		label = filepath.Base(os.Args[0])
	}
	s, err := d.client.OpenSession(ctx, client.SessionOptions{Device: dev.ordinal, Label: label})
	if err != nil {
		d.log.Printf("opening a gpuos session on device %d: %v", dev.ordinal, err)
		return nil, d.fail(err)
	}
	st, err := s.CreateStream(ctx, 0)
	if err != nil {
		s.Close()
		d.log.Printf("creating the default stream on device %d: %v", dev.ordinal, err)
		return nil, d.fail(err)
	}
	sess := &session{dev: dev, s: s}
	sess.blocking = newDstream(d, sess, st)
	d.noteTrust(s)
	if base, size := s.Window(); size > 0 {
		if err := reserveHostRange(base, size); err != nil {
			d.log.Printf("device %d: its address window %#x+%#x overlaps this process's host memory (%v): "+
				"copies that infer the memory type may take host memory there for device memory", dev.ordinal, base, size, err)
		}
	}
	dev.sess = sess
	return sess, cu.CUDA_SUCCESS
}

func (d *Driver) newID() uint64 { return d.ids.Add(1) }

// bg is the context of calls that wait as long as the work they wait for.
var bg = context.Background()

// String describes the driver for logs.
func (d *Driver) String() string {
	return fmt.Sprintf("gpuos shim (%d devices)", len(d.devices))
}
