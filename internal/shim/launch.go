package shim

import (
	"sync"

	v1 "github.com/gpuos/gpuos/api/v1"
	"github.com/gpuos/gpuos/client"
	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// defaultDynShared is how much dynamic shared memory a launch of a function may
// ask for before cuFuncSetAttribute raises it: what the daemon reports, else
// the device's per-block limit less the function's static shared memory.
func defaultDynShared(dv *device, info v1.KernelInfo) uint32 {
	if info.MaxDynamicSharedMem > 0 {
		return info.MaxDynamicSharedMem
	}
	lim := uint32(max(dv.attr(cu.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK), 0))
	if info.SharedSizeBytes >= lim {
		return 0
	}
	return lim - info.SharedSizeBytes
}

// maxThreads is the most threads a block of a function may have on dv.
func maxThreads(dv *device, info v1.KernelInfo) uint32 {
	lim := uint32(max(dv.attr(cu.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 0))
	if info.MaxThreadsPerBlock > 0 && (lim == 0 || info.MaxThreadsPerBlock < lim) {
		return info.MaxThreadsPerBlock
	}
	return lim
}

// maxThreads is the most threads a block of f may have.
func (f *function) maxThreads() uint32 { return f.threads }

// launchLimits are a device's bounds on a launch's shape, read once from its
// attributes (0: none).
type launchLimits struct {
	grid, block [3]uint32
}

func newLaunchLimits(dv *device) launchLimits {
	a := func(x cu.CUdevice_attribute) uint32 { return uint32(max(dv.attr(x), 0)) }
	return launchLimits{
		grid: [3]uint32{a(cu.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), a(cu.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
			a(cu.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)},
		block: [3]uint32{a(cu.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X), a(cu.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
			a(cu.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)},
	}
}

// checkLaunch validates a launch's shape as the real driver does, so that a
// bad launch fails at the call with CUDA_ERROR_INVALID_VALUE rather than at
// the next synchronization.
func checkLaunch(f *function, grid, block [3]uint32, shared uint32) Result {
	lim := &f.mod.dev.limits
	for i := range 3 {
		if grid[i] == 0 || block[i] == 0 || (lim.grid[i] > 0 && grid[i] > lim.grid[i]) || (lim.block[i] > 0 && block[i] > lim.block[i]) {
			return cu.CUDA_ERROR_INVALID_VALUE
		}
	}
	if uint64(block[0])*uint64(block[1])*uint64(block[2]) > uint64(f.threads) || shared > f.maxDynShared.Load() {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	return cu.CUDA_SUCCESS
}

// paramBufs recycles parameter buffers: a launch allocates nothing of its own.
var paramBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// LaunchKernel is cuLaunchKernel: f is a CUfunction or a CUkernel;
// kernelParams (an array of pointers to each argument) or extra (a
// CU_LAUNCH_PARAM_* list with one packed buffer) carry the arguments, laid out
// as the daemon described the kernel's parameters. The launch is
// asynchronous: errors of the kernel itself surface at the next
// synchronization. thread is called only when the launch needs the calling
// thread's context: a CUkernel on a default stream.
func (d *Driver) LaunchKernel(thread func() Thread, fh uint64, grid, block [3]uint32, shared uint32, streamH uint64, kernelParams, extra uintptr) Result {
	var l launch
	if r := d.prepareLaunch(&l, thread, fh, grid, block, shared, streamH, kernelParams, extra); r != cu.CUDA_SUCCESS {
		l.done()
		return r
	}
	l.ds.submit()
	err := l.ds.sess.s.LaunchRaw(l.f.k, client.LaunchConfig{
		Grid:      client.Dim3{X: grid[0], Y: grid[1], Z: grid[2]},
		Block:     client.Dim3{X: block[0], Y: block[1], Z: block[2]},
		SharedMem: shared,
		Stream:    l.ds.cs,
	}, l.params)
	l.done()
	return d.fail(err)
}

// launch is a launch ready to send: the function, the daemon stream and the
// packed parameters (in a pooled buffer that done returns).
type launch struct {
	f      *function
	ds     *dstream
	params []byte
	buf    *[]byte
}

func (l *launch) done() {
	if l.buf != nil {
		*l.buf = l.params[:0]
		paramBufs.Put(l.buf)
		l.buf = nil
	}
}

// prepareLaunch does all of a launch but sending it: the shim's own share of
// its cost (BenchmarkLaunchPrepare).
func (d *Driver) prepareLaunch(l *launch, thread func() Thread, fh uint64, grid, block [3]uint32, shared uint32, streamH uint64, kernelParams, extra uintptr) Result {
	f, r := d.launchFunction(thread, fh, streamH)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if r := checkLaunch(f, grid, block, shared); r != cu.CUDA_SUCCESS {
		return r
	}
	ds, r := d.streamIn(streamH, f.mod.sess)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	l.f, l.ds = f, ds
	if f.paramSize > 0 || extra != 0 {
		l.buf = paramBufs.Get().(*[]byte)
		l.params = (*l.buf)[:0]
	}
	if l.params, r = packParams(f, kernelParams, extra, l.params); r != cu.CUDA_SUCCESS {
		return r
	}
	return ds.wait()
}

// launchFunction returns the function a launch of fh on stream streamH runs:
// a CUkernel runs on the stream's device, or the calling thread's for a
// default stream.
func (d *Driver) launchFunction(thread func() Thread, fh, streamH uint64) (*function, Result) {
	if handleKind(fh) != kindKernel {
		if f := d.functions.get(fh); f != nil {
			return f, cu.CUDA_SUCCESS
		}
		if r := d.ready(); r != cu.CUDA_SUCCESS {
			return nil, r
		}
		return nil, cu.CUDA_ERROR_INVALID_HANDLE
	}
	k, r := d.kernel(fh)
	if r != cu.CUDA_SUCCESS {
		return nil, r
	}
	var dv *device
	switch {
	case isDefaultStream(streamH) && len(d.devices) == 1:
		dv = d.devices[0] // what lookupDevice would say, without asking the thread
	case isDefaultStream(streamH):
		if dv, r = d.lookupDevice(thread()); r != cu.CUDA_SUCCESS {
			return nil, r
		}
	default:
		st := d.streams.get(streamH)
		if st == nil {
			return nil, cu.CUDA_ERROR_INVALID_HANDLE
		}
		dv = st.ds.sess.dev
	}
	return d.kernelFunction(k, dv)
}

// LaunchConfig is cuLaunchKernelEx's configuration.
type LaunchConfig struct {
	Grid, Block [3]uint32
	SharedMem   uint32
	Stream      uint64
	Attrs       []cu.CUlaunchAttribute
}

// LaunchKernelEx is cuLaunchKernelEx. Attributes that only tune performance
// are accepted; those asking for something gpuos cannot give (cooperative
// launches, clusters, graph nodes) are refused with CUDA_ERROR_NOT_SUPPORTED.
// Launch-completion and programmatic events are recorded after the kernel,
// which is later than CUDA would trigger them but never early.
func (d *Driver) LaunchKernelEx(t Thread, cfg LaunchConfig, fh uint64, kernelParams, extra uintptr) Result {
	var events []uint64 // recorded after the kernel: launch-completion and programmatic events
	for _, a := range cfg.Attrs {
		switch a.ID {
		case cu.CU_LAUNCH_ATTRIBUTE_IGNORE, cu.CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
			cu.CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, cu.CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
			cu.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, cu.CU_LAUNCH_ATTRIBUTE_PRIORITY,
			cu.CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, cu.CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
			cu.CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION, cu.CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
			cu.CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
			// Hints: serializing more or scheduling differently is allowed.
		case cu.CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
			if leU32(a.Value[:]) != 0 {
				return d.Refuse("cuLaunchKernelEx: cooperative launches")
			}
		case cu.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
			v := a.Value[:]
			if leU32(v) > 1 || leU32(v[4:]) > 1 || leU32(v[8:]) > 1 {
				return d.Refuse("cuLaunchKernelEx: thread block clusters")
			}
		case cu.CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
			ev := leU64(a.Value[:])
			if ev == 0 {
				return cu.CUDA_ERROR_INVALID_VALUE
			}
			events = append(events, ev)
		case cu.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
			// Triggered once every block has triggered or exited: recording it
			// after the kernel is later than that, never earlier.
			ev := leU64(a.Value[:])
			if ev == 0 {
				return cu.CUDA_ERROR_INVALID_VALUE
			}
			events = append(events, ev)
		case cu.CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
			return d.Refuse("cuLaunchKernelEx: device-updatable graph nodes")
		default:
			return cu.CUDA_ERROR_INVALID_VALUE
		}
	}
	if r := d.LaunchKernel(func() Thread { return t }, fh, cfg.Grid, cfg.Block, cfg.SharedMem, cfg.Stream, kernelParams, extra); r != cu.CUDA_SUCCESS {
		return r
	}
	for _, ev := range events {
		if r := d.EventRecord(t, ev, cfg.Stream); r != cu.CUDA_SUCCESS {
			return r
		}
	}
	return cu.CUDA_SUCCESS
}

// Refuse logs, once, a feature gpuos does not offer and returns
// CUDA_ERROR_NOT_SUPPORTED.
func (d *Driver) Refuse(what string) Result {
	d.log.Once("refuse:"+what, "%s: not supported by gpuos; returning CUDA_ERROR_NOT_SUPPORTED", what)
	return cu.CUDA_ERROR_NOT_SUPPORTED
}

func leU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func leU64(b []byte) uint64 { return uint64(leU32(b)) | uint64(leU32(b[4:]))<<32 }

// ---- function attributes -------------------------------------------------------

// FuncGetAttribute is cuFuncGetAttribute (and cuKernelGetAttribute, of a
// kernel on device dev).
func (d *Driver) FuncGetAttribute(t Thread, attr cu.CUfunction_attribute, fh uint64, dev int32) (int32, Result) {
	f, r := d.function(t, fh, dev)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	i := f.info
	switch attr {
	case cu.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		return int32(f.maxThreads()), cu.CUDA_SUCCESS
	case cu.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
		return int32(i.SharedSizeBytes), cu.CUDA_SUCCESS
	case cu.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
		return int32(i.ConstSizeBytes), cu.CUDA_SUCCESS
	case cu.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
		return int32(i.LocalSizeBytes), cu.CUDA_SUCCESS
	case cu.CU_FUNC_ATTRIBUTE_NUM_REGS:
		return int32(i.NumRegs), cu.CUDA_SUCCESS
	case cu.CU_FUNC_ATTRIBUTE_PTX_VERSION:
		return int32(i.PTXVersion), cu.CUDA_SUCCESS
	case cu.CU_FUNC_ATTRIBUTE_BINARY_VERSION:
		return int32(i.BinaryVersion), cu.CUDA_SUCCESS
	case cu.CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
		return 0, cu.CUDA_SUCCESS
	case cu.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		return int32(f.maxDynShared.Load()), cu.CUDA_SUCCESS
	case cu.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.carveout, cu.CUDA_SUCCESS
	case cu.CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, cu.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
		cu.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, cu.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
		cu.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, cu.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		return 0, cu.CUDA_SUCCESS
	}
	return 0, cu.CUDA_ERROR_INVALID_VALUE
}

// FuncSetAttribute is cuFuncSetAttribute (and cuKernelSetAttribute, of a
// kernel on device dev).
func (d *Driver) FuncSetAttribute(t Thread, fh uint64, attr cu.CUfunction_attribute, value int32, dev int32) Result {
	f, r := d.function(t, fh, dev)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	switch attr {
	case cu.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		optin := uint64(max(f.mod.dev.attr(cu.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), 0))
		if value < 0 || uint64(value)+uint64(f.info.SharedSizeBytes) > optin {
			return cu.CUDA_ERROR_INVALID_VALUE
		}
		f.maxDynShared.Store(uint32(value))
		return cu.CUDA_SUCCESS
	case cu.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		if value < -1 || value > 100 {
			return cu.CUDA_ERROR_INVALID_VALUE
		}
		f.mu.Lock()
		f.carveout = value
		f.mu.Unlock()
		return cu.CUDA_SUCCESS
	case cu.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, cu.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		return cu.CUDA_SUCCESS // matters only to cluster launches, which are refused
	case cu.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, cu.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
		cu.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
		if value > 1 {
			return d.Refuse("cuFuncSetAttribute: thread block clusters")
		}
		return cu.CUDA_SUCCESS
	}
	return cu.CUDA_ERROR_INVALID_VALUE
}

// FuncSetCacheConfig is cuFuncSetCacheConfig (and cuKernelSetCacheConfig): a
// preference, recorded.
func (d *Driver) FuncSetCacheConfig(t Thread, fh uint64, cfg cu.CUfunc_cache, dev int32) Result {
	f, r := d.function(t, fh, dev)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if cfg > cu.CU_FUNC_CACHE_PREFER_EQUAL {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	f.mu.Lock()
	f.cacheConfig = cfg
	f.mu.Unlock()
	return cu.CUDA_SUCCESS
}
