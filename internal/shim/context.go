package shim

import (
	"sync"
	"sync/atomic"

	cu "github.com/gpuos/gpuos/internal/abi/cuda"
)

// ctxObj is a CUDA context: a device, flags, limits and the runtime's
// context-local storage. Every context of a device shares the device's gpuos
// session; what a context owns (memory, modules, streams, events) is freed
// when it is destroyed.
type ctxObj struct {
	h       uint64
	id      uint64
	dev     *device
	primary bool
	flags   atomic.Uint32
	dead    atomic.Bool
	// inactive marks a primary context that is not retained (never yet, or
	// released or reset since): it has a handle, but work through it as the
	// current context is CUDA_ERROR_CONTEXT_IS_DESTROYED, as in the driver.
	inactive atomic.Bool

	mu          sync.Mutex // guards the fields below
	limits      [cu.CU_LIMIT_MAX]uint64
	cacheConfig cu.CUfunc_cache
	sharedCfg   cu.CUsharedconfig
	cls         map[uintptr]clsEntry
}

// clsEntry is one value of context-local storage, with the destructor the
// runtime registered for it.
type clsEntry struct {
	value, dtor uintptr
}

// Context limits a new context starts with (those of CUDA 13 on an H100).
var defaultLimits = [cu.CU_LIMIT_MAX]uint64{
	cu.CU_LIMIT_STACK_SIZE:                       1024,
	cu.CU_LIMIT_PRINTF_FIFO_SIZE:                 1 << 20,
	cu.CU_LIMIT_MALLOC_HEAP_SIZE:                 8 << 20,
	cu.CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH:           2,
	cu.CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT: 2048,
	cu.CU_LIMIT_MAX_L2_FETCH_GRANULARITY:         32,
}

// thread is one application thread's context stack. Only its own thread uses
// it, so it needs no lock.
type thread struct {
	stack []*ctxObj
}

func (d *Driver) thread(t Thread) *thread {
	if v, ok := d.threads.Load(t); ok {
		return v.(*thread)
	}
	v, _ := d.threads.LoadOrStore(t, &thread{})
	return v.(*thread)
}

func (th *thread) top() *ctxObj {
	if n := len(th.stack); n > 0 {
		return th.stack[n-1]
	}
	return nil
}

// current returns the calling thread's current context, to do work in: none
// is CUDA_ERROR_INVALID_CONTEXT; one destroyed (by another thread) or a
// primary context not retained is CUDA_ERROR_CONTEXT_IS_DESTROYED ("the
// context current to the calling thread has been destroyed using
// cuCtxDestroy, or is a primary context which has not yet been initialized").
func (d *Driver) current(t Thread) (*ctxObj, Result) {
	c, r := d.currentInfo(t)
	if r == cu.CUDA_SUCCESS && c.inactive.Load() {
		d.log.Once("inactive-primary", "work in device %d's primary context while it is not retained: CUDA_ERROR_CONTEXT_IS_DESTROYED (reported once)", c.dev.ordinal)
		return nil, cu.CUDA_ERROR_CONTEXT_IS_DESTROYED
	}
	return c, r
}

// currentInfo returns the calling thread's current context to read or set
// its properties (device, flags, limits, id, context-local storage), which
// an inactive primary context has too.
func (d *Driver) currentInfo(t Thread) (*ctxObj, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return nil, r
	}
	c := d.thread(t).top()
	if c == nil {
		return nil, cu.CUDA_ERROR_INVALID_CONTEXT
	}
	if c.dead.Load() {
		return nil, cu.CUDA_ERROR_CONTEXT_IS_DESTROYED
	}
	return c, cu.CUDA_SUCCESS
}

// currentSession returns the current context and its device's session.
func (d *Driver) currentSession(t Thread) (*ctxObj, *session, Result) {
	c, r := d.current(t)
	if r != cu.CUDA_SUCCESS {
		return nil, nil, r
	}
	s, r := d.session(c.dev)
	return c, s, r
}

// context returns the live context h names, to read or set its properties;
// h 0 means the current context.
func (d *Driver) context(t Thread, h uint64) (*ctxObj, Result) {
	if h == 0 {
		return d.currentInfo(t)
	}
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return nil, r
	}
	c := d.contexts.get(h)
	if c == nil || c.dead.Load() {
		return nil, cu.CUDA_ERROR_INVALID_CONTEXT
	}
	return c, cu.CUDA_SUCCESS
}

func (d *Driver) newContext(dev *device, flags uint32, primary bool) *ctxObj {
	c := &ctxObj{id: d.newID(), dev: dev, primary: primary, limits: defaultLimits}
	c.flags.Store(flags)
	c.h = d.contexts.add(c)
	return c
}

// ---- cuCtx* -----------------------------------------------------------------

// validCtxFlags are the flags cuCtxCreate and the primary context accept.
const validCtxFlags = uint32(cu.CU_CTX_FLAGS_MASK)

// CtxCreate is cuCtxCreate: a new context on dev, pushed on the calling
// thread's stack. Its device's session is opened now, as the real driver
// initializes the device here.
func (d *Driver) CtxCreate(t Thread, flags uint32, dev int32) (uint64, Result) {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if flags&^validCtxFlags != 0 || flags&uint32(cu.CU_CTX_SCHED_MASK) == 3 || flags&uint32(cu.CU_CTX_SCHED_MASK) > 4 {
		return 0, cu.CUDA_ERROR_INVALID_VALUE
	}
	if _, r := d.session(dv); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	c := d.newContext(dv, flags, false)
	th := d.thread(t)
	th.stack = append(th.stack, c)
	return c.h, cu.CUDA_SUCCESS
}

// CtxDestroy is cuCtxDestroy: free what the context owns and forget it. The
// primary context cannot be destroyed this way.
func (d *Driver) CtxDestroy(t Thread, h uint64) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	c := d.contexts.get(h)
	if c == nil || c.dead.Load() || c.primary {
		return cu.CUDA_ERROR_INVALID_CONTEXT
	}
	d.releaseContext(c)
	c.dead.Store(true)
	d.contexts.remove(h)
	th := d.thread(t)
	if th.top() == c {
		th.stack = th.stack[:len(th.stack)-1]
	}
	return cu.CUDA_SUCCESS
}

// releaseContext runs the runtime's context-local-storage destructors of c,
// then frees everything c owns: its streams, events, modules (with their
// functions) and memory, after the work already submitted has completed.
// Libraries belong to no context: they stay loaded in the device's session.
func (d *Driver) releaseContext(c *ctxObj) {
	// The runtime's destructors first, while what its state refers to is
	// still there, as the real driver calls them.
	c.mu.Lock()
	cls := c.cls
	c.cls = nil
	c.mu.Unlock()
	if d.cfg.CLSDestructor != nil {
		for key, e := range cls {
			if e.dtor != 0 {
				d.cfg.CLSDestructor(e.dtor, uintptr(c.h), key, e.value)
			}
		}
	}
	if s := c.dev.sess; s != nil {
		d.waitHostFuncs(s)
		s.s.Synchronize(bg) // its errors belong to the context being destroyed
	}
	for _, st := range d.streams.each() {
		if st.ctx == c {
			d.destroyStream(st)
		}
	}
	for _, e := range d.events.each() {
		if e.ctx == c {
			d.destroyEvent(e)
		}
	}
	for _, m := range d.modules.each() {
		if m.ctx == c {
			d.unloadModule(m)
		}
	}
	for _, a := range d.mem.owned(c) {
		d.freeAlloc(a)
	}
}

// CtxPush is cuCtxPushCurrent.
func (d *Driver) CtxPush(t Thread, h uint64) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	c := d.contexts.get(h)
	if c == nil || c.dead.Load() {
		return cu.CUDA_ERROR_INVALID_CONTEXT
	}
	th := d.thread(t)
	th.stack = append(th.stack, c)
	return cu.CUDA_SUCCESS
}

// CtxPop is cuCtxPopCurrent: it returns the context popped.
func (d *Driver) CtxPop(t Thread) (uint64, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	th := d.thread(t)
	c := th.top()
	if c == nil {
		return 0, cu.CUDA_ERROR_INVALID_CONTEXT
	}
	th.stack = th.stack[:len(th.stack)-1]
	return c.h, cu.CUDA_SUCCESS
}

// CtxSetCurrent is cuCtxSetCurrent: replace the top of the stack (h 0 pops
// it).
func (d *Driver) CtxSetCurrent(t Thread, h uint64) Result {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return r
	}
	th := d.thread(t)
	if h == 0 {
		if len(th.stack) > 0 {
			th.stack = th.stack[:len(th.stack)-1]
		}
		return cu.CUDA_SUCCESS
	}
	c := d.contexts.get(h)
	if c == nil || c.dead.Load() {
		return cu.CUDA_ERROR_INVALID_CONTEXT
	}
	if n := len(th.stack); n > 0 {
		th.stack[n-1] = c
	} else {
		th.stack = append(th.stack, c)
	}
	return cu.CUDA_SUCCESS
}

// CtxGetCurrent is cuCtxGetCurrent: 0 when the thread has none.
func (d *Driver) CtxGetCurrent(t Thread) (uint64, Result) {
	if r := d.ready(); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	c := d.thread(t).top()
	if c == nil || c.dead.Load() {
		return 0, cu.CUDA_SUCCESS
	}
	return c.h, cu.CUDA_SUCCESS
}

// CtxGetDevice is cuCtxGetDevice (h 0: the current context).
func (d *Driver) CtxGetDevice(t Thread, h uint64) (int32, Result) {
	c, r := d.context(t, h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return int32(c.dev.ordinal), cu.CUDA_SUCCESS
}

// CtxGetFlags is cuCtxGetFlags.
func (d *Driver) CtxGetFlags(t Thread) (uint32, Result) {
	c, r := d.currentInfo(t)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return c.flags.Load(), cu.CUDA_SUCCESS
}

// CtxSetFlags is cuCtxSetFlags.
func (d *Driver) CtxSetFlags(t Thread, flags uint32) Result {
	c, r := d.currentInfo(t)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if flags&^validCtxFlags != 0 {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	c.flags.Store(flags)
	return cu.CUDA_SUCCESS
}

// CtxGetID is cuCtxGetId (h 0: the current context).
func (d *Driver) CtxGetID(t Thread, h uint64) (uint64, Result) {
	c, r := d.context(t, h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return c.id, cu.CUDA_SUCCESS
}

// CtxGetAPIVersion is cuCtxGetApiVersion: the API version of the calls that
// made contexts (3020, the cuCtxCreate_v2 ABI).
func (d *Driver) CtxGetAPIVersion(t Thread, h uint64) (uint32, Result) {
	if _, r := d.context(t, h); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	return 3020, cu.CUDA_SUCCESS
}

// CtxSynchronize is cuCtxSynchronize (h 0: the current context): wait for all
// work of the context's device and return the first error of asynchronous
// work.
func (d *Driver) CtxSynchronize(t Thread, h uint64) Result {
	var c *ctxObj
	var r Result
	if h == 0 {
		c, r = d.current(t)
	} else {
		c, r = d.context(t, h)
	}
	if r != cu.CUDA_SUCCESS {
		return r
	}
	s, r := d.session(c.dev)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	return d.syncSession(s)
}

// CtxSetLimit is cuCtxSetLimit. The limits are the kernels' resources, which
// the daemon provisions: the values are recorded and read back, as hints.
func (d *Driver) CtxSetLimit(t Thread, limit cu.CUlimit, value uint64) Result {
	c, r := d.currentInfo(t)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if limit > cu.CU_LIMIT_PERSISTING_L2_CACHE_SIZE {
		return cu.CUDA_ERROR_UNSUPPORTED_LIMIT
	}
	c.mu.Lock()
	c.limits[limit] = value
	c.mu.Unlock()
	return cu.CUDA_SUCCESS
}

// CtxGetLimit is cuCtxGetLimit.
func (d *Driver) CtxGetLimit(t Thread, limit cu.CUlimit) (uint64, Result) {
	c, r := d.currentInfo(t)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if limit >= cu.CU_LIMIT_MAX {
		return 0, cu.CUDA_ERROR_UNSUPPORTED_LIMIT
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limits[limit], cu.CUDA_SUCCESS
}

// CtxGetCacheConfig and CtxSetCacheConfig are cuCtxGetCacheConfig and
// cuCtxSetCacheConfig: a preference the hardware may ignore, recorded.
func (d *Driver) CtxGetCacheConfig(t Thread) (cu.CUfunc_cache, Result) {
	c, r := d.currentInfo(t)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cacheConfig, cu.CUDA_SUCCESS
}

func (d *Driver) CtxSetCacheConfig(t Thread, cfg cu.CUfunc_cache) Result {
	c, r := d.currentInfo(t)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if cfg > cu.CU_FUNC_CACHE_PREFER_EQUAL {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	c.mu.Lock()
	c.cacheConfig = cfg
	c.mu.Unlock()
	return cu.CUDA_SUCCESS
}

// CtxGetSharedMemConfig and CtxSetSharedMemConfig are the deprecated bank-size
// preference calls, recorded.
func (d *Driver) CtxGetSharedMemConfig(t Thread) (cu.CUsharedconfig, Result) {
	c, r := d.currentInfo(t)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sharedCfg, cu.CUDA_SUCCESS
}

func (d *Driver) CtxSetSharedMemConfig(t Thread, cfg cu.CUsharedconfig) Result {
	c, r := d.currentInfo(t)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if cfg > cu.CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	c.mu.Lock()
	c.sharedCfg = cfg
	c.mu.Unlock()
	return cu.CUDA_SUCCESS
}

// Stream priorities: the H100's range, which the daemon clamps to.
const (
	leastStreamPriority    = 0
	greatestStreamPriority = -5
)

// CtxGetStreamPriorityRange is cuCtxGetStreamPriorityRange.
func (d *Driver) CtxGetStreamPriorityRange(t Thread) (least, greatest int32, r Result) {
	if _, r := d.currentInfo(t); r != cu.CUDA_SUCCESS {
		return 0, 0, r
	}
	return leastStreamPriority, greatestStreamPriority, cu.CUDA_SUCCESS
}

// ---- primary contexts -------------------------------------------------------

// PrimaryCtxRetain is cuDevicePrimaryCtxRetain: the device's primary context,
// created (and its session opened) on first retain.
func (d *Driver) PrimaryCtxRetain(dev int32) (uint64, Result) {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if _, r := d.session(dv); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	dv.mu.Lock()
	defer dv.mu.Unlock()
	if dv.primary == nil || dv.primary.dead.Load() {
		dv.primary = d.newContext(dv, dv.primaryFlags, true)
	}
	dv.primaryRefs++
	dv.primary.inactive.Store(false)
	return dv.primary.h, cu.CUDA_SUCCESS
}

// PrimaryCtxRelease is cuDevicePrimaryCtxRelease: the last release frees what
// the primary context owns.
func (d *Driver) PrimaryCtxRelease(dev int32) Result {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	dv.mu.Lock()
	if dv.primaryRefs == 0 || dv.primary == nil {
		dv.mu.Unlock()
		return cu.CUDA_ERROR_INVALID_CONTEXT
	}
	dv.primaryRefs--
	var c *ctxObj
	if dv.primaryRefs == 0 {
		c = dv.primary
		c.inactive.Store(true)
	}
	dv.mu.Unlock()
	if c != nil {
		d.releaseContext(c)
	}
	return cu.CUDA_SUCCESS
}

// PrimaryCtxReset is cuDevicePrimaryCtxReset: free what the primary context
// owns and make it inactive; its handle stays valid for a later retain.
func (d *Driver) PrimaryCtxReset(dev int32) Result {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	dv.mu.Lock()
	c := dv.primary
	dv.primaryRefs = 0
	if c != nil {
		c.inactive.Store(true)
	}
	dv.mu.Unlock()
	if c != nil {
		d.releaseContext(c)
	}
	return cu.CUDA_SUCCESS
}

// PrimaryCtxSetFlags is cuDevicePrimaryCtxSetFlags.
func (d *Driver) PrimaryCtxSetFlags(dev int32, flags uint32) Result {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	if flags&^validCtxFlags != 0 {
		return cu.CUDA_ERROR_INVALID_VALUE
	}
	dv.mu.Lock()
	defer dv.mu.Unlock()
	dv.primaryFlags = flags
	if dv.primary != nil {
		dv.primary.flags.Store(flags)
	}
	return cu.CUDA_SUCCESS
}

// PrimaryCtxGetState is cuDevicePrimaryCtxGetState.
func (d *Driver) PrimaryCtxGetState(dev int32) (flags uint32, active bool, r Result) {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return 0, false, r
	}
	dv.mu.Lock()
	defer dv.mu.Unlock()
	return dv.primaryFlags, dv.primaryRefs > 0, cu.CUDA_SUCCESS
}

// PrimaryCtx returns the device's primary context without retaining it (the
// CUDA runtime's interface table, slot 2), creating it if needed.
func (d *Driver) PrimaryCtx(dev int32) (uint64, Result) {
	dv, r := d.device(dev)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	if _, r := d.session(dv); r != cu.CUDA_SUCCESS {
		return 0, r
	}
	dv.mu.Lock()
	defer dv.mu.Unlock()
	if dv.primary == nil || dv.primary.dead.Load() {
		dv.primary = d.newContext(dv, dv.primaryFlags, true)
		dv.primary.inactive.Store(true) // not retained: the runtime retains it
	}
	return dv.primary.h, cu.CUDA_SUCCESS
}

// ---- context-local storage (the runtime's export table) ----------------------

// CLSPut stores value under key in context h (0: current), with a destructor
// to call when the context is destroyed.
func (d *Driver) CLSPut(t Thread, h uint64, key, value, dtor uintptr) Result {
	c, r := d.context(t, h)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cls == nil {
		c.cls = make(map[uintptr]clsEntry)
	}
	c.cls[key] = clsEntry{value: value, dtor: dtor}
	return cu.CUDA_SUCCESS
}

// CLSDelete removes key from context h (0: current).
func (d *Driver) CLSDelete(t Thread, h uint64, key uintptr) Result {
	c, r := d.context(t, h)
	if r != cu.CUDA_SUCCESS {
		return r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cls, key)
	return cu.CUDA_SUCCESS
}

// CLSGet returns the value stored under key in context h (0: current), or
// CUDA_ERROR_INVALID_HANDLE if there is none.
func (d *Driver) CLSGet(t Thread, h uint64, key uintptr) (uintptr, Result) {
	c, r := d.context(t, h)
	if r != cu.CUDA_SUCCESS {
		return 0, r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.cls[key]
	if !ok {
		return 0, cu.CUDA_ERROR_INVALID_HANDLE
	}
	return e.value, cu.CUDA_SUCCESS
}
