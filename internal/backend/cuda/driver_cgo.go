//go:build cgo

package cuda

/*
#cgo LDFLAGS: -ldl
#cgo noescape gpuos_launch
#cgo nocallback gpuos_launch
#cgo noescape gpuos_copy_async
#cgo nocallback gpuos_copy_async

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The CUDA driver ABI this file uses, written from the documented driver API
// (internal/abi/cuda mirrors the same values and layouts; driver_test.go checks
// the numbers below against it). No CUDA header is needed to build.
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct { unsigned char bytes[16]; } CUuuid;
typedef struct { int type; int id; } CUmemLocation;
typedef struct {
	unsigned char compressionType;
	unsigned char gpuDirectRDMACapable;
	unsigned short usage;
	unsigned char reserved[4];
} CUmemAllocationPropFlags;
typedef struct {
	int type;
	int requestedHandleTypes;
	CUmemLocation location;
	void *win32HandleMetaData;
	CUmemAllocationPropFlags allocFlags;
} CUmemAllocationProp;
typedef struct { CUmemLocation location; int flags; } CUmemAccessDesc;
typedef void (*CUstreamCallback)(CUstream, CUresult, void *);
typedef struct CUgreenCtx_st *CUgreenCtx;
typedef struct CUdevResourceDesc_st *CUdevResourceDesc;
// CUdevResource as of CUDA 13.0 (144 bytes, the SM fields at 96; the 580
// driver's header, run 18a): only the SM type is used.
typedef struct {
	int type;
	unsigned char _internal_padding[92];
	union {
		struct { unsigned int smCount, minSmPartitionSize, smCoscheduledAlignment; } sm;
		unsigned char _oversize[48];
	};
} CUdevResource;

_Static_assert(sizeof(CUuuid) == 16, "CUuuid");
_Static_assert(sizeof(CUmemLocation) == 8, "CUmemLocation");
_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp");
_Static_assert(offsetof(CUmemAllocationProp, allocFlags) == 24, "CUmemAllocationProp.allocFlags");
_Static_assert(sizeof(CUmemAccessDesc) == 12, "CUmemAccessDesc");
_Static_assert(sizeof(CUdevResource) == 144, "CUdevResource");
_Static_assert(offsetof(CUdevResource, sm) == 96, "CUdevResource.sm");

#define GPUOS_CUDA_SUCCESS                 0
#define GPUOS_CUDA_ERROR_INVALID_VALUE     1
#define GPUOS_CUDA_ERROR_NOT_READY         600
#define GPUOS_CU_JIT_ERROR_LOG_BUFFER      5
#define GPUOS_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define GPUOS_CU_LAUNCH_PARAM_END            ((void *)0)
#define GPUOS_CU_LAUNCH_PARAM_BUFFER_POINTER ((void *)1)
#define GPUOS_CU_LAUNCH_PARAM_BUFFER_SIZE    ((void *)2)
#define GPUOS_CU_STREAM_NON_BLOCKING       1
#define GPUOS_CU_MEMHOSTALLOC_PORTABLE     1
#define GPUOS_CU_MEMHOSTALLOC_DEVICEMAP    2
#define GPUOS_CU_MEMHOSTREGISTER_PORTABLE  1
#define GPUOS_CU_MEMHOSTREGISTER_DEVICEMAP 2
#define GPUOS_CU_DEV_RESOURCE_TYPE_SM      1
#define GPUOS_CU_GREEN_CTX_DEFAULT_STREAM  1

// A result no driver returns: GPUOS_MISSING + i says the library lacks
// gpuos_symbol_names[i]. Go turns it into an Unsupported error naming it.
#define GPUOS_MISSING 0x40000000

// Entry points, by the exact (versioned) symbol the 580 driver exports.
#define GPUOS_SYMBOLS(X) \
	X(cuInit, (unsigned int)) \
	X(cuDriverGetVersion, (int *)) \
	X(cuDeviceGetCount, (int *)) \
	X(cuDeviceGet, (CUdevice *, int)) \
	X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice)) \
	X(cuDevicePrimaryCtxRelease_v2, (CUdevice)) \
	X(cuDevicePrimaryCtxSetFlags_v2, (CUdevice, unsigned int)) \
	X(cuCtxSetCurrent, (CUcontext)) \
	X(cuDeviceGetName, (char *, int, CUdevice)) \
	X(cuDeviceGetUuid_v2, (CUuuid *, CUdevice)) \
	X(cuDeviceGetPCIBusId, (char *, int, CUdevice)) \
	X(cuDeviceTotalMem_v2, (size_t *, CUdevice)) \
	X(cuDeviceGetAttribute, (int *, int, CUdevice)) \
	X(cuCtxSynchronize, (void)) \
	X(cuCtxSynchronize_v2, (CUcontext)) \
	X(cuCtxGetStreamPriorityRange, (int *, int *)) \
	X(cuMemGetInfo_v2, (size_t *, size_t *)) \
	X(cuMemGetAllocationGranularity, (size_t *, const CUmemAllocationProp *, int)) \
	X(cuMemAddressReserve, (CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long)) \
	X(cuMemAddressFree, (CUdeviceptr, size_t)) \
	X(cuMemCreate, (CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long)) \
	X(cuMemRelease, (CUmemGenericAllocationHandle)) \
	X(cuMemMap, (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long)) \
	X(cuMemUnmap, (CUdeviceptr, size_t)) \
	X(cuMemSetAccess, (CUdeviceptr, size_t, const CUmemAccessDesc *, size_t)) \
	X(cuMemHostAlloc, (void **, size_t, unsigned int)) \
	X(cuMemFreeHost, (void *)) \
	X(cuMemHostGetDevicePointer_v2, (CUdeviceptr *, void *, unsigned int)) \
	X(cuMemAlloc_v2, (CUdeviceptr *, size_t)) \
	X(cuMemFree_v2, (CUdeviceptr)) \
	X(cuMemHostRegister_v2, (void *, size_t, unsigned int)) \
	X(cuMemHostUnregister, (void *)) \
	X(cuModuleLoadDataEx, (CUmodule *, const void *, unsigned int, int *, void **)) \
	X(cuModuleUnload, (CUmodule)) \
	X(cuModuleGetFunction, (CUfunction *, CUmodule, const char *)) \
	X(cuModuleGetGlobal_v2, (CUdeviceptr *, size_t *, CUmodule, const char *)) \
	X(cuFuncGetParamInfo, (CUfunction, size_t, size_t *, size_t *)) \
	X(cuFuncGetAttribute, (int *, int, CUfunction)) \
	X(cuFuncSetAttribute, (CUfunction, int, int)) \
	X(cuStreamCreateWithPriority, (CUstream *, unsigned int, int)) \
	X(cuStreamDestroy_v2, (CUstream)) \
	X(cuStreamQuery, (CUstream)) \
	X(cuStreamSynchronize, (CUstream)) \
	X(cuStreamWaitEvent, (CUstream, CUevent, unsigned int)) \
	X(cuStreamAddCallback, (CUstream, CUstreamCallback, void *, unsigned int)) \
	X(cuStreamWriteValue32_v2, (CUstream, CUdeviceptr, unsigned int, unsigned int)) \
	X(cuLaunchKernel, (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, CUstream, void **, void **)) \
	X(cuMemcpyHtoDAsync_v2, (CUdeviceptr, const void *, size_t, CUstream)) \
	X(cuMemcpyDtoHAsync_v2, (void *, CUdeviceptr, size_t, CUstream)) \
	X(cuMemcpyDtoDAsync_v2, (CUdeviceptr, CUdeviceptr, size_t, CUstream)) \
	X(cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream)) \
	X(cuMemsetD16Async, (CUdeviceptr, unsigned short, size_t, CUstream)) \
	X(cuMemsetD32Async, (CUdeviceptr, unsigned int, size_t, CUstream)) \
	X(cuEventCreate, (CUevent *, unsigned int)) \
	X(cuEventDestroy_v2, (CUevent)) \
	X(cuEventRecord, (CUevent, CUstream)) \
	X(cuEventQuery, (CUevent)) \
	X(cuEventSynchronize, (CUevent)) \
	X(cuEventElapsedTime, (float *, CUevent, CUevent)) \
	X(cuEventElapsedTime_v2, (float *, CUevent, CUevent)) \
	X(cuDeviceGetDevResource, (CUdevice, CUdevResource *, int)) \
	X(cuDevSmResourceSplitByCount, (CUdevResource *, unsigned int *, const CUdevResource *, CUdevResource *, unsigned int, unsigned int)) \
	X(cuDevResourceGenerateDesc, (CUdevResourceDesc *, CUdevResource *, unsigned int)) \
	X(cuGreenCtxCreate, (CUgreenCtx *, CUdevResourceDesc, CUdevice, unsigned int)) \
	X(cuGreenCtxDestroy, (CUgreenCtx)) \
	X(cuGreenCtxStreamCreate, (CUstream *, CUgreenCtx, unsigned int, int))

// Symbol indices: GPUOS_SYM_cuInit, ...
#define GPUOS_ENUM(name, args) GPUOS_SYM_##name,
enum { GPUOS_SYMBOLS(GPUOS_ENUM) GPUOS_NSYMBOLS };

static const char *const gpuos_symbol_names[] = {
#define GPUOS_NAME(name, args) #name,
	GPUOS_SYMBOLS(GPUOS_NAME)
};

// Without these the library is of no use at all: Open refuses it.
static const int gpuos_core_symbols[] = {
	GPUOS_SYM_cuInit, GPUOS_SYM_cuDriverGetVersion, GPUOS_SYM_cuDeviceGetCount,
	GPUOS_SYM_cuDeviceGet, GPUOS_SYM_cuDevicePrimaryCtxRetain,
	GPUOS_SYM_cuDevicePrimaryCtxRelease_v2, GPUOS_SYM_cuCtxSetCurrent,
};

// gpuos_lib is one dlopen'ed driver library and its entry points.
typedef struct {
	void *handle;
#define GPUOS_FIELD(name, args) CUresult (*name) args;
	GPUOS_SYMBOLS(GPUOS_FIELD)
} gpuos_lib;

// The slow-call log, a diagnostic ($GPUOS_CUDA_SLOW_LOG, slowlog.go): with
// gpuos_slow_ns set, every driver call that takes at least that long, other
// than the synchronizing ones (which wait for the device by design), is noted
// in a ring that Go drains. Off, a call costs one predictable branch more.
#include <time.h>
typedef struct {
	uint64_t seq; // index + 1 once written
	const char *name;
	uint64_t at, dur; // CLOCK_REALTIME ns
} gpuos_slow_call;
#define GPUOS_SLOW_RING 8192
static gpuos_slow_call gpuos_slow[GPUOS_SLOW_RING];
static uint64_t gpuos_slow_ns; // 0: off; set before any call is made
static uint64_t gpuos_slow_next;

static inline uint64_t gpuos_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void gpuos_note_slow(const char *name, uint64_t t0) {
	uint64_t d = gpuos_now() - t0;
	if (d < gpuos_slow_ns || strstr(name, "Synchronize")) return;
	uint64_t i = __atomic_fetch_add(&gpuos_slow_next, 1, __ATOMIC_RELAXED);
	gpuos_slow_call *e = &gpuos_slow[i % GPUOS_SLOW_RING];
	e->name = name;
	e->at = t0;
	e->dur = d;
	__atomic_store_n(&e->seq, i + 1, __ATOMIC_RELEASE);
}

// gpuos_slow_read copies entry i if it is written and not yet overwritten:
// 1 copied, 0 not written yet, -1 lost (the ring lapped the reader).
static int gpuos_slow_read(uint64_t i, const char **name, uint64_t *at, uint64_t *dur) {
	gpuos_slow_call *e = &gpuos_slow[i % GPUOS_SLOW_RING];
	uint64_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
	if (seq < i + 1) return 0;
	if (seq > i + 1) return -1;
	*name = e->name;
	*at = e->at;
	*dur = e->dur;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&e->seq, __ATOMIC_RELAXED) == i + 1 ? 1 : -1;
}

static void gpuos_slow_enable(uint64_t ns) { gpuos_slow_ns = ns; }

// gpuos_note_slow_at notes a span timed elsewhere (Go's side of a call).
static void gpuos_note_slow_at(const char *name, uint64_t at, uint64_t dur) {
	if (dur < gpuos_slow_ns) return;
	uint64_t i = __atomic_fetch_add(&gpuos_slow_next, 1, __ATOMIC_RELAXED);
	gpuos_slow_call *e = &gpuos_slow[i % GPUOS_SLOW_RING];
	e->name = name;
	e->at = at;
	e->dur = dur;
	__atomic_store_n(&e->seq, i + 1, __ATOMIC_RELEASE);
}

static const char *gpuos_go_return_event_sync(void) { return "go:return(cuEventSynchronize)"; }

#define GPUOS_CALL_RAW(lib, name, ...) \
	((lib)->name ? (lib)->name(__VA_ARGS__) : (GPUOS_MISSING + GPUOS_SYM_##name))
#define GPUOS_CALL(lib, name, ...) ({ \
	uint64_t gpuos_t0_ = gpuos_slow_ns ? gpuos_now() : 0; \
	CUresult gpuos_r_ = GPUOS_CALL_RAW(lib, name, __VA_ARGS__); \
	if (gpuos_t0_) gpuos_note_slow(#name, gpuos_t0_); \
	gpuos_r_; })

// gpuos_ctx is one device's context. gen is unique in the process, never
// reused, so a thread's cached "current" mark cannot match a later context
// that happens to get the same CUcontext address.
typedef struct {
	gpuos_lib *lib;
	CUcontext ctx;
	CUdevice dev;
	uint64_t gen;
} gpuos_ctx;

// The generation of the context current on this OS thread (0: none of ours).
// Every operation makes its context current through use(): a thread-local
// compare, and cuCtxSetCurrent only the first time a thread serves a context
// (or after it served another one).
static __thread uint64_t gpuos_current_gen;

static inline CUresult use(gpuos_ctx *c) {
	if (gpuos_current_gen == c->gen) return GPUOS_CUDA_SUCCESS;
	CUresult r = c->lib->cuCtxSetCurrent(c->ctx);
	if (r == GPUOS_CUDA_SUCCESS) gpuos_current_gen = c->gen;
	return r;
}

#define USE(c) do { CUresult r_ = use(c); if (r_) return r_; } while (0)

// gpuos_open dlopens path and resolves every entry point. It returns 0 and
// *out, or: 1 dlopen failed (err says why), 2 the library is gpuos's own shim,
// 3 a core entry point is missing (*missing is its index).
static int gpuos_open(const char *path, gpuos_lib **out, int *missing, char *err, size_t errlen) {
	dlerror();
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return 1;
	}
	if (dlsym(h, "gpuos_shim_version")) {
		dlclose(h);
		return 2;
	}
	gpuos_lib *lib = calloc(1, sizeof *lib);
	if (!lib) {
		dlclose(h);
		snprintf(err, errlen, "out of memory");
		return 1;
	}
	lib->handle = h;
	void **slots = (void **)((char *)lib + offsetof(gpuos_lib, cuInit));
	for (int i = 0; i < GPUOS_NSYMBOLS; i++) slots[i] = dlsym(h, gpuos_symbol_names[i]);
	for (size_t i = 0; i < sizeof gpuos_core_symbols / sizeof gpuos_core_symbols[0]; i++) {
		if (!slots[gpuos_core_symbols[i]]) {
			*missing = gpuos_core_symbols[i];
			dlclose(h);
			free(lib);
			return 3;
		}
	}
	*out = lib;
	return 0;
}

static void gpuos_close_lib(gpuos_lib *lib) {
	dlclose(lib->handle);
	free(lib);
}

static const char *gpuos_symbol_name(int i) {
	return i >= 0 && i < GPUOS_NSYMBOLS ? gpuos_symbol_names[i] : "";
}

static int gpuos_has(gpuos_lib *lib, int sym) {
	void **slots = (void **)((char *)lib + offsetof(gpuos_lib, cuInit));
	return sym >= 0 && sym < GPUOS_NSYMBOLS && slots[sym] != NULL;
}

// gpuos_lib_path writes the file the library was loaded from.
static void gpuos_lib_path(gpuos_lib *lib, char *out, size_t outlen) {
	Dl_info info;
	out[0] = 0;
	if (dladdr((void *)lib->cuInit, &info) && info.dli_fname) snprintf(out, outlen, "%s", info.dli_fname);
}

static CUresult gpuos_init(gpuos_lib *lib) { return lib->cuInit(0); }
static CUresult gpuos_driver_version(gpuos_lib *lib, int *v) { return lib->cuDriverGetVersion(v); }
static CUresult gpuos_device_count(gpuos_lib *lib, int *n) { return lib->cuDeviceGetCount(n); }

// gpuos_device_info reads what DeviceInfo holds. attrs[i] gets attribute i for
// 1 <= i < nattrs; one the driver does not know (CUDA_ERROR_INVALID_VALUE) is
// 0. Any other failure is returned, with *failed naming the step.
static CUresult gpuos_device_info(gpuos_lib *lib, int ordinal, char *name, int namelen,
		unsigned char *uuid, char *bus, int buslen, size_t *total, int *attrs, int nattrs, int *failed) {
	CUdevice dev;
	CUresult r = lib->cuDeviceGet(&dev, ordinal);
	if (r) { *failed = GPUOS_SYM_cuDeviceGet; return r; }
	r = GPUOS_CALL(lib, cuDeviceGetName, name, namelen, dev);
	if (r) { *failed = GPUOS_SYM_cuDeviceGetName; return r; }
	CUuuid u;
	r = GPUOS_CALL(lib, cuDeviceGetUuid_v2, &u, dev);
	if (r) { *failed = GPUOS_SYM_cuDeviceGetUuid_v2; return r; }
	memcpy(uuid, u.bytes, 16);
	r = GPUOS_CALL(lib, cuDeviceGetPCIBusId, bus, buslen, dev);
	if (r) { *failed = GPUOS_SYM_cuDeviceGetPCIBusId; return r; }
	r = GPUOS_CALL(lib, cuDeviceTotalMem_v2, total, dev);
	if (r) { *failed = GPUOS_SYM_cuDeviceTotalMem_v2; return r; }
	if (nattrs > 0) attrs[0] = 0;
	for (int i = 1; i < nattrs; i++) {
		int v = 0;
		r = GPUOS_CALL(lib, cuDeviceGetAttribute, &v, i, dev);
		if (r == GPUOS_CUDA_ERROR_INVALID_VALUE) v = 0;
		else if (r) { *failed = GPUOS_SYM_cuDeviceGetAttribute; return r; }
		attrs[i] = v;
	}
	return GPUOS_CUDA_SUCCESS;
}

// gpuos_ctx_open retains the device's primary context, first setting its
// flags (how host threads wait for the device) unless flags is negative.
static CUresult gpuos_ctx_open(gpuos_lib *lib, int ordinal, uint64_t gen, int flags, gpuos_ctx **out) {
	CUdevice dev;
	CUresult r = lib->cuDeviceGet(&dev, ordinal);
	if (r) return r;
	if (flags >= 0) {
		r = GPUOS_CALL(lib, cuDevicePrimaryCtxSetFlags_v2, dev, (unsigned int)flags);
		if (r) return r;
	}
	CUcontext ctx;
	r = lib->cuDevicePrimaryCtxRetain(&ctx, dev);
	if (r) return r;
	gpuos_ctx *c = calloc(1, sizeof *c);
	if (!c) {
		lib->cuDevicePrimaryCtxRelease_v2(dev);
		return 2; // CUDA_ERROR_OUT_OF_MEMORY
	}
	c->lib = lib;
	c->ctx = ctx;
	c->dev = dev;
	c->gen = gen;
	*out = c;
	return GPUOS_CUDA_SUCCESS;
}

// gpuos_ctx_close releases the primary context and frees c. Threads that
// still mark c's generation current never see it again (generations are not
// reused), and the first call they make for another context sets that one.
static CUresult gpuos_ctx_close(gpuos_ctx *c) {
	if (gpuos_current_gen == c->gen) {
		c->lib->cuCtxSetCurrent(NULL);
		gpuos_current_gen = 0;
	}
	CUresult r = c->lib->cuDevicePrimaryCtxRelease_v2(c->dev);
	free(c);
	return r;
}

static CUresult gpuos_ctx_sync(gpuos_ctx *c) {
	if (c->lib->cuCtxSynchronize_v2) return c->lib->cuCtxSynchronize_v2(c->ctx);
	USE(c);
	return GPUOS_CALL(c->lib, cuCtxSynchronize);
}

static CUresult gpuos_priority_range(gpuos_ctx *c, int *least, int *greatest) {
	USE(c);
	return GPUOS_CALL(c->lib, cuCtxGetStreamPriorityRange, least, greatest);
}

static CUresult gpuos_mem_info(gpuos_ctx *c, size_t *free_, size_t *total) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemGetInfo_v2, free_, total);
}

static CUresult gpuos_granularity(gpuos_ctx *c, const void *prop, size_t *g) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemGetAllocationGranularity, g, (const CUmemAllocationProp *)prop, 0);
}

static CUresult gpuos_reserve(gpuos_ctx *c, size_t size, size_t align, CUdeviceptr *p) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemAddressReserve, p, size, align, 0, 0);
}

static CUresult gpuos_address_free(gpuos_ctx *c, CUdeviceptr p, size_t size) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemAddressFree, p, size);
}

static CUresult gpuos_mem_create(gpuos_ctx *c, size_t size, const void *prop, CUmemGenericAllocationHandle *h) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemCreate, h, size, (const CUmemAllocationProp *)prop, 0);
}

static CUresult gpuos_mem_release(gpuos_ctx *c, CUmemGenericAllocationHandle h) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemRelease, h);
}

static CUresult gpuos_mem_map(gpuos_ctx *c, CUdeviceptr p, size_t size, size_t off, CUmemGenericAllocationHandle h) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemMap, p, size, off, h, 0);
}

static CUresult gpuos_mem_unmap(gpuos_ctx *c, CUdeviceptr p, size_t size) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemUnmap, p, size);
}

static CUresult gpuos_mem_set_access(gpuos_ctx *c, CUdeviceptr p, size_t size, const void *desc) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemSetAccess, p, size, (const CUmemAccessDesc *)desc, 1);
}

static CUresult gpuos_host_alloc(gpuos_ctx *c, size_t size, void **p) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemHostAlloc, p, size, GPUOS_CU_MEMHOSTALLOC_PORTABLE);
}

// gpuos_host_alloc_mapped returns page-locked memory kernels reach at *d.
static CUresult gpuos_host_alloc_mapped(gpuos_ctx *c, size_t size, void **p, CUdeviceptr *d) {
	USE(c);
	CUresult r = GPUOS_CALL(c->lib, cuMemHostAlloc, p, size, GPUOS_CU_MEMHOSTALLOC_PORTABLE | GPUOS_CU_MEMHOSTALLOC_DEVICEMAP);
	if (r != 0) return r;
	r = GPUOS_CALL(c->lib, cuMemHostGetDevicePointer_v2, d, *p, 0);
	if (r != 0) GPUOS_CALL(c->lib, cuMemFreeHost, *p);
	return r;
}

// The driver's own allocator, for benchmarks' native baseline only.
static CUresult gpuos_mem_alloc(gpuos_ctx *c, size_t size, CUdeviceptr *p) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemAlloc_v2, p, size);
}

static CUresult gpuos_mem_free(gpuos_ctx *c, CUdeviceptr p) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemFree_v2, p);
}

static CUresult gpuos_host_free(gpuos_ctx *c, void *p) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemFreeHost, p);
}

static CUresult gpuos_host_register(gpuos_ctx *c, void *p, size_t size) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemHostRegister_v2, p, size, GPUOS_CU_MEMHOSTREGISTER_PORTABLE);
}

// gpuos_host_register_mapped page-locks [p, p+size) and returns where
// kernels and stream memory writes reach it.
static CUresult gpuos_host_register_mapped(gpuos_ctx *c, void *p, size_t size, CUdeviceptr *d) {
	USE(c);
	CUresult r = GPUOS_CALL(c->lib, cuMemHostRegister_v2, p, size, GPUOS_CU_MEMHOSTREGISTER_PORTABLE | GPUOS_CU_MEMHOSTREGISTER_DEVICEMAP);
	if (r != 0) return r;
	r = GPUOS_CALL(c->lib, cuMemHostGetDevicePointer_v2, d, p, 0);
	if (r != 0) GPUOS_CALL(c->lib, cuMemHostUnregister, p);
	return r;
}

static CUresult gpuos_host_unregister(gpuos_ctx *c, void *p) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemHostUnregister, p);
}

// gpuos_module_load loads a PTX (NUL-terminated), cubin or fatbin image. The
// JIT writes its error log, NUL-terminated, into log.
static CUresult gpuos_module_load(gpuos_ctx *c, const void *image, CUmodule *mod, char *log, size_t loglen) {
	USE(c);
	int opts[2] = {GPUOS_CU_JIT_ERROR_LOG_BUFFER, GPUOS_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *vals[2] = {log, (void *)(uintptr_t)loglen};
	if (loglen > 0) log[0] = 0;
	return GPUOS_CALL(c->lib, cuModuleLoadDataEx, mod, image, loglen > 0 ? 2 : 0, opts, vals);
}

static CUresult gpuos_module_unload(gpuos_ctx *c, CUmodule mod) {
	USE(c);
	return GPUOS_CALL(c->lib, cuModuleUnload, mod);
}

// gpuos_function finds a kernel and reads its attributes (attrs[i] for
// CUfunction_attribute i < nattrs) and parameter layout: params[2k] and
// params[2k+1] are the offset and size of parameter k, for k < *nparams. It
// stops at the first index cuFuncGetParamInfo rejects (INVALID_VALUE: past
// the last parameter) or at cap parameters; *nparams == cap means "maybe
// more". Without cuFuncGetParamInfo (drivers before 12.4) *nparams is -1.
static CUresult gpuos_function(gpuos_ctx *c, CUmodule mod, const char *name, CUfunction *f,
		int *attrs, int nattrs, size_t *params, int cap, int *nparams) {
	USE(c);
	CUresult r = GPUOS_CALL(c->lib, cuModuleGetFunction, f, mod, name);
	if (r) return r;
	for (int i = 0; i < nattrs; i++) {
		int v = 0;
		r = GPUOS_CALL(c->lib, cuFuncGetAttribute, &v, i, *f);
		if (r == GPUOS_CUDA_ERROR_INVALID_VALUE) v = 0;
		else if (r) return r;
		attrs[i] = v;
	}
	if (!c->lib->cuFuncGetParamInfo) {
		*nparams = -1;
		return GPUOS_CUDA_SUCCESS;
	}
	int n = 0;
	for (; n < cap; n++) {
		r = c->lib->cuFuncGetParamInfo(*f, (size_t)n, &params[2 * n], &params[2 * n + 1]);
		if (r) break;
	}
	*nparams = n;
	if (n < cap && r != GPUOS_CUDA_ERROR_INVALID_VALUE) return r;
	return GPUOS_CUDA_SUCCESS;
}

static CUresult gpuos_global(gpuos_ctx *c, CUmodule mod, const char *name, CUdeviceptr *p, size_t *size) {
	USE(c);
	return GPUOS_CALL(c->lib, cuModuleGetGlobal_v2, p, size, mod, name);
}

static CUresult gpuos_stream_create(gpuos_ctx *c, int priority, CUstream *s) {
	USE(c);
	return GPUOS_CALL(c->lib, cuStreamCreateWithPriority, s, GPUOS_CU_STREAM_NON_BLOCKING, priority);
}

// gpuos_stream_destroy waits for the stream's work, then destroys it.
static CUresult gpuos_stream_destroy(gpuos_ctx *c, CUstream s) {
	USE(c);
	CUresult r = GPUOS_CALL(c->lib, cuStreamSynchronize, s);
	CUresult d = GPUOS_CALL(c->lib, cuStreamDestroy_v2, s);
	return r ? r : d;
}

static CUresult gpuos_stream_query(gpuos_ctx *c, CUstream s) {
	USE(c);
	return GPUOS_CALL(c->lib, cuStreamQuery, s);
}

static CUresult gpuos_stream_sync(gpuos_ctx *c, CUstream s) {
	USE(c);
	return GPUOS_CALL(c->lib, cuStreamSynchronize, s);
}

// gpuos_launch launches f with its packed parameter buffer passed through
// extra; the driver copies the buffer before returning.
static CUresult gpuos_launch(gpuos_ctx *c, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
		unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s, void *params, size_t size) {
	USE(c);
	if (size == 0) return GPUOS_CALL(c->lib, cuLaunchKernel, f, gx, gy, gz, bx, by, bz, shmem, s, NULL, NULL);
	void *extra[5] = {
		GPUOS_CU_LAUNCH_PARAM_BUFFER_POINTER, params,
		GPUOS_CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
		GPUOS_CU_LAUNCH_PARAM_END,
	};
	return GPUOS_CALL(c->lib, cuLaunchKernel, f, gx, gy, gz, bx, by, bz, shmem, s, NULL, extra);
}

// gpuos_func_set_attr sets a kernel attribute (cuFuncSetAttribute).
static CUresult gpuos_func_set_attr(gpuos_ctx *c, CUfunction f, int attr, int value) {
	USE(c);
	return GPUOS_CALL(c->lib, cuFuncSetAttribute, f, attr, value);
}

// Directions of gpuos_copy_async and gpuos_copy_sync.
enum { GPUOS_HTOD = 0, GPUOS_DTOH = 1 };

// gpuos_copy_async enqueues a copy between pinned host memory and the device.
static CUresult gpuos_copy_async(gpuos_ctx *c, int dir, CUdeviceptr dev, void *host, size_t n, CUstream s) {
	USE(c);
	if (dir == GPUOS_HTOD) return GPUOS_CALL(c->lib, cuMemcpyHtoDAsync_v2, dev, host, n, s);
	return GPUOS_CALL(c->lib, cuMemcpyDtoHAsync_v2, host, dev, n, s);
}

// gpuos_copy_sync copies between pageable host memory and the device in
// stream order and returns once the stream reached the copy's end, so the
// driver never holds on to the (Go) memory after the call.
static CUresult gpuos_copy_sync(gpuos_ctx *c, int dir, CUdeviceptr dev, void *host, size_t n, CUstream s) {
	USE(c);
	CUresult r;
	if (dir == GPUOS_HTOD) r = GPUOS_CALL(c->lib, cuMemcpyHtoDAsync_v2, dev, host, n, s);
	else r = GPUOS_CALL(c->lib, cuMemcpyDtoHAsync_v2, host, dev, n, s);
	if (r) return r;
	return GPUOS_CALL(c->lib, cuStreamSynchronize, s);
}

static CUresult gpuos_copy_dtod(gpuos_ctx *c, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
	USE(c);
	return GPUOS_CALL(c->lib, cuMemcpyDtoDAsync_v2, dst, src, n, s);
}

static CUresult gpuos_memset(gpuos_ctx *c, CUdeviceptr dst, unsigned value, int elem, size_t count, CUstream s) {
	USE(c);
	switch (elem) {
	case 1: return GPUOS_CALL(c->lib, cuMemsetD8Async, dst, (unsigned char)value, count, s);
	case 2: return GPUOS_CALL(c->lib, cuMemsetD16Async, dst, (unsigned short)value, count, s);
	default: return GPUOS_CALL(c->lib, cuMemsetD32Async, dst, value, count, s);
	}
}

// gpuos_partition creates a green context on the device's SMs less at least
// reserve of them (the driver rounds up to its granularity) and reports how
// many SMs it has and how many were left out. The green context is never
// made current: only its streams are used, with the primary context current
// (a green context's streams belong to the device's primary context, so its
// memory, modules and events work on them).
static CUresult gpuos_partition(gpuos_ctx *c, unsigned reserve, CUgreenCtx *g, unsigned *sms, unsigned *reserved) {
	USE(c);
	CUdevResource all, group, rest;
	memset(&all, 0, sizeof all);
	memset(&group, 0, sizeof group);
	memset(&rest, 0, sizeof rest);
	CUresult r = GPUOS_CALL(c->lib, cuDeviceGetDevResource, c->dev, &all, GPUOS_CU_DEV_RESOURCE_TYPE_SM);
	if (r) return r;
	unsigned groups = 1;
	r = GPUOS_CALL(c->lib, cuDevSmResourceSplitByCount, &group, &groups, &all, &rest, 0, reserve);
	if (r) return r;
	if (groups != 1 || rest.sm.smCount == 0) return GPUOS_CUDA_ERROR_INVALID_VALUE;
	CUdevResourceDesc desc;
	r = GPUOS_CALL(c->lib, cuDevResourceGenerateDesc, &desc, &rest, 1);
	if (r) return r;
	r = GPUOS_CALL(c->lib, cuGreenCtxCreate, g, desc, c->dev, GPUOS_CU_GREEN_CTX_DEFAULT_STREAM);
	if (r) return r;
	*sms = rest.sm.smCount;
	*reserved = all.sm.smCount - rest.sm.smCount;
	return GPUOS_CUDA_SUCCESS;
}

static CUresult gpuos_partition_destroy(gpuos_ctx *c, CUgreenCtx g) {
	USE(c);
	return GPUOS_CALL(c->lib, cuGreenCtxDestroy, g);
}

// gpuos_partition_stream creates a stream of green context g. The driver
// does not synchronize calls on one green context: the Go side serializes.
static CUresult gpuos_partition_stream(gpuos_ctx *c, CUgreenCtx g, int priority, CUstream *s) {
	USE(c);
	return GPUOS_CALL(c->lib, cuGreenCtxStreamCreate, s, g, GPUOS_CU_STREAM_NON_BLOCKING, priority);
}

static CUresult gpuos_event_create(gpuos_ctx *c, unsigned flags, CUevent *e) {
	USE(c);
	return GPUOS_CALL(c->lib, cuEventCreate, e, flags);
}

static CUresult gpuos_event_destroy(gpuos_ctx *c, CUevent e) {
	USE(c);
	return GPUOS_CALL(c->lib, cuEventDestroy_v2, e);
}

static CUresult gpuos_event_record(gpuos_ctx *c, CUevent e, CUstream s) {
	USE(c);
	return GPUOS_CALL(c->lib, cuEventRecord, e, s);
}

// gpuos_stream_write_value32 enqueues a write of v to addr once the
// stream's earlier work completed; flags 0 keeps the memory barrier, so that
// work's writes are visible first.
static CUresult gpuos_stream_write_value32(gpuos_ctx *c, CUstream s, CUdeviceptr addr, unsigned v) {
	USE(c);
	return GPUOS_CALL(c->lib, cuStreamWriteValue32_v2, s, addr, v, 0);
}

static CUresult gpuos_stream_wait(gpuos_ctx *c, CUstream s, CUevent e) {
	USE(c);
	return GPUOS_CALL(c->lib, cuStreamWaitEvent, s, e, 0);
}

static CUresult gpuos_event_query(gpuos_ctx *c, CUevent e) {
	USE(c);
	return GPUOS_CALL(c->lib, cuEventQuery, e);
}

static CUresult gpuos_event_sync(gpuos_ctx *c, CUevent e, uint64_t *returned) {
	USE(c);
	CUresult r = GPUOS_CALL(c->lib, cuEventSynchronize, e);
	if (gpuos_slow_ns) *returned = gpuos_now();
	return r;
}

static CUresult gpuos_event_elapsed(gpuos_ctx *c, CUevent start, CUevent end, float *ms) {
	USE(c);
	if (c->lib->cuEventElapsedTime_v2) return c->lib->cuEventElapsedTime_v2(ms, start, end);
	return GPUOS_CALL(c->lib, cuEventElapsedTime, ms, start, end);
}

// The callback trampoline runs on a driver thread. It calls no CUDA function
// (the driver forbids it there); it hands the status to Go.
extern void gpuosStreamCallback(uintptr_t handle, int status);

static void gpuos_stream_cb(CUstream s, CUresult status, void *user) {
	(void)s;
	gpuosStreamCallback((uintptr_t)user, status);
}

static CUresult gpuos_add_callback(gpuos_ctx *c, CUstream s, uintptr_t handle) {
	USE(c);
	return GPUOS_CALL(c->lib, cuStreamAddCallback, s, gpuos_stream_cb, (void *)handle, 0);
}

// Constants the Go side checks against internal/abi/cuda.
static long long gpuos_constant(int i) {
	switch (i) {
	case 0: return GPUOS_CU_JIT_ERROR_LOG_BUFFER;
	case 1: return GPUOS_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
	case 2: return (long long)(uintptr_t)GPUOS_CU_LAUNCH_PARAM_END;
	case 3: return (long long)(uintptr_t)GPUOS_CU_LAUNCH_PARAM_BUFFER_POINTER;
	case 4: return (long long)(uintptr_t)GPUOS_CU_LAUNCH_PARAM_BUFFER_SIZE;
	case 5: return GPUOS_CU_STREAM_NON_BLOCKING;
	case 6: return GPUOS_CU_MEMHOSTALLOC_PORTABLE;
	case 7: return GPUOS_CU_MEMHOSTREGISTER_PORTABLE;
	case 8: return GPUOS_CUDA_ERROR_INVALID_VALUE;
	case 9: return GPUOS_CUDA_ERROR_NOT_READY;
	case 10: return sizeof(CUmemAllocationProp);
	case 11: return sizeof(CUmemAccessDesc);
	case 12: return sizeof(CUuuid);
	case 13: return GPUOS_CU_MEMHOSTREGISTER_DEVICEMAP;
	}
	return -1;
}
*/
import "C"

import (
	"runtime"
	"time"
	"unsafe"

	"github.com/gpuos/gpuos/internal/abi/cuda"
	"github.com/gpuos/gpuos/internal/backend"
)

// Driver handles as the C types, so they never pass through uintptr.
type (
	hModule   = C.CUmodule
	hFunction = C.CUfunction
	hStream   = C.CUstream
	hEvent    = C.CUevent
	hGreenCtx = C.CUgreenCtx
)

// haveCgo: this build can load the driver.
const haveCgo = true

// missingBase + i is the result of calling entry point i that the library
// does not export.
const missingBase = cuda.CUresult(C.GPUOS_MISSING)

// Results of openLib.
const (
	openOK      = 0
	openDlopen  = 1 // dlopen failed
	openShim    = 2 // the library is gpuos's own shim
	openMissing = 3 // a core entry point is missing
)

// symbolCount is the number of entry points the backend resolves.
const symbolCount = int(C.GPUOS_NSYMBOLS)

// symbolName is the exported symbol of entry point i.
func symbolName(i int) string {
	if i < 0 || i >= symbolCount {
		return ""
	}
	return C.GoString(C.gpuos_symbol_name(C.int(i)))
}

// cConstant returns constant i of the C side (see gpuos_constant).
func cConstant(i int) int64 { return int64(C.gpuos_constant(C.int(i))) }

// lib is one dlopen'ed driver library. It is never closed once a backend uses it:
// the driver cannot be unloaded safely while any context of it lived.
type lib struct {
	p *C.gpuos_lib
}

// openLib dlopens path. status is openOK or why not; detail is dlerror's text
// or the missing symbol.
func openLib(path string) (l *lib, status int, detail string) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var p *C.gpuos_lib
	var missing C.int
	var errbuf [512]C.char
	switch st := C.gpuos_open(cpath, &p, &missing, &errbuf[0], C.size_t(len(errbuf))); st {
	case openOK:
		return &lib{p: p}, openOK, ""
	case openMissing:
		return nil, openMissing, symbolName(int(missing))
	default:
		return nil, int(st), C.GoString(&errbuf[0])
	}
}

// close unloads a library no backend uses.
func (l *lib) close() { C.gpuos_close_lib(l.p) }

// has reports whether the library exports entry point sym.
func (l *lib) has(sym int) bool { return C.gpuos_has(l.p, C.int(sym)) != 0 }

// path is the file the library was loaded from, as the dynamic linker saw it.
func (l *lib) path() string {
	var buf [4096]C.char
	C.gpuos_lib_path(l.p, &buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0])
}

func (l *lib) init() cuda.CUresult { return cuda.CUresult(C.gpuos_init(l.p)) }

func (l *lib) driverVersion() (int, cuda.CUresult) {
	var v C.int
	r := C.gpuos_driver_version(l.p, &v)
	return int(v), cuda.CUresult(r)
}

func (l *lib) deviceCount() (int, cuda.CUresult) {
	var n C.int
	r := C.gpuos_device_count(l.p, &n)
	return int(n), cuda.CUresult(r)
}

// rawInfo is what deviceInfo reads.
type rawInfo struct {
	name, busID string
	uuid        [16]byte
	total       uint64
	attrs       []int32
}

// deviceInfo reads a device's description; on failure failed names the entry
// point that failed.
func (l *lib) deviceInfo(ordinal, nattrs int) (info rawInfo, failed string, r cuda.CUresult) {
	var name [256]C.char
	var bus [64]C.char
	var uuid [16]C.uchar
	var total C.size_t
	attrs := make([]C.int, max(nattrs, 1))
	var failedSym C.int
	res := C.gpuos_device_info(l.p, C.int(ordinal), &name[0], C.int(len(name)), &uuid[0], &bus[0], C.int(len(bus)),
		&total, &attrs[0], C.int(nattrs), &failedSym)
	if res != 0 {
		return rawInfo{}, symbolName(int(failedSym)), cuda.CUresult(res)
	}
	info = rawInfo{name: C.GoString(&name[0]), busID: C.GoString(&bus[0]), total: uint64(total), attrs: make([]int32, nattrs)}
	for i := range info.uuid {
		info.uuid[i] = byte(uuid[i])
	}
	for i := range info.attrs {
		info.attrs[i] = int32(attrs[i])
	}
	return info, "", 0
}

// dctx is one device's context.
type dctx struct {
	p *C.gpuos_ctx
}

// openCtx retains the device's primary context, with flags
// (CU_CTX_SCHED_*) unless negative. gen must be unique in the process.
func (l *lib) openCtx(ordinal int, gen uint64, flags int) (*dctx, cuda.CUresult) {
	var p *C.gpuos_ctx
	r := C.gpuos_ctx_open(l.p, C.int(ordinal), C.uint64_t(gen), C.int(flags), &p)
	if r != 0 {
		return nil, cuda.CUresult(r)
	}
	return &dctx{p: p}, 0
}

func (c *dctx) close() cuda.CUresult { return cuda.CUresult(C.gpuos_ctx_close(c.p)) }

func (c *dctx) sync() cuda.CUresult { return cuda.CUresult(C.gpuos_ctx_sync(c.p)) }

func (c *dctx) priorityRange() (least, greatest int, r cuda.CUresult) {
	var l, g C.int
	res := C.gpuos_priority_range(c.p, &l, &g)
	return int(l), int(g), cuda.CUresult(res)
}

func (c *dctx) memInfo() (free, total uint64, r cuda.CUresult) {
	var f, t C.size_t
	res := C.gpuos_mem_info(c.p, &f, &t)
	return uint64(f), uint64(t), cuda.CUresult(res)
}

func (c *dctx) granularity(prop *cuda.CUmemAllocationProp) (uint64, cuda.CUresult) {
	var g C.size_t
	r := C.gpuos_granularity(c.p, unsafe.Pointer(prop), &g)
	return uint64(g), cuda.CUresult(r)
}

func (c *dctx) reserve(size, align uint64) (uint64, cuda.CUresult) {
	var p C.CUdeviceptr
	r := C.gpuos_reserve(c.p, C.size_t(size), C.size_t(align), &p)
	return uint64(p), cuda.CUresult(r)
}

func (c *dctx) addressFree(p, size uint64) cuda.CUresult {
	return cuda.CUresult(C.gpuos_address_free(c.p, C.CUdeviceptr(p), C.size_t(size)))
}

func (c *dctx) memCreate(size uint64, prop *cuda.CUmemAllocationProp) (uint64, cuda.CUresult) {
	var h C.CUmemGenericAllocationHandle
	r := C.gpuos_mem_create(c.p, C.size_t(size), unsafe.Pointer(prop), &h)
	return uint64(h), cuda.CUresult(r)
}

func (c *dctx) memRelease(h uint64) cuda.CUresult {
	return cuda.CUresult(C.gpuos_mem_release(c.p, C.CUmemGenericAllocationHandle(h)))
}

func (c *dctx) memMap(p, size, off, h uint64) cuda.CUresult {
	return cuda.CUresult(C.gpuos_mem_map(c.p, C.CUdeviceptr(p), C.size_t(size), C.size_t(off), C.CUmemGenericAllocationHandle(h)))
}

func (c *dctx) memUnmap(p, size uint64) cuda.CUresult {
	return cuda.CUresult(C.gpuos_mem_unmap(c.p, C.CUdeviceptr(p), C.size_t(size)))
}

func (c *dctx) setAccess(p, size uint64, desc *cuda.CUmemAccessDesc) cuda.CUresult {
	return cuda.CUresult(C.gpuos_mem_set_access(c.p, C.CUdeviceptr(p), C.size_t(size), unsafe.Pointer(desc)))
}

// hostAlloc returns size bytes of page-locked memory (C memory, not Go's).
func (c *dctx) hostAlloc(size int) ([]byte, cuda.CUresult) {
	var p unsafe.Pointer
	r := C.gpuos_host_alloc(c.p, C.size_t(size), &p)
	if r != 0 {
		return nil, cuda.CUresult(r)
	}
	return unsafe.Slice((*byte)(p), size), 0
}

// hostAllocMapped returns size bytes of page-locked memory and the device
// address at which kernels reach it.
func (c *dctx) hostAllocMapped(size int) ([]byte, uint64, cuda.CUresult) {
	var p unsafe.Pointer
	var d C.CUdeviceptr
	r := C.gpuos_host_alloc_mapped(c.p, C.size_t(size), &p, &d)
	if r != 0 {
		return nil, 0, cuda.CUresult(r)
	}
	return unsafe.Slice((*byte)(p), size), uint64(d), 0
}

func (c *dctx) memAlloc(size uint64) (uint64, cuda.CUresult) {
	var p C.CUdeviceptr
	r := C.gpuos_mem_alloc(c.p, C.size_t(size), &p)
	return uint64(p), cuda.CUresult(r)
}

func (c *dctx) memFree(p uint64) cuda.CUresult {
	return cuda.CUresult(C.gpuos_mem_free(c.p, C.CUdeviceptr(p)))
}

func (c *dctx) hostFree(b []byte) cuda.CUresult {
	return cuda.CUresult(C.gpuos_host_free(c.p, unsafe.Pointer(unsafe.SliceData(b))))
}

func (c *dctx) hostRegister(b []byte) cuda.CUresult {
	return cuda.CUresult(C.gpuos_host_register(c.p, unsafe.Pointer(unsafe.SliceData(b)), C.size_t(len(b))))
}

// hostRegisterMapped page-locks b and returns its device address.
func (c *dctx) hostRegisterMapped(b []byte) (uint64, cuda.CUresult) {
	var d C.CUdeviceptr
	r := C.gpuos_host_register_mapped(c.p, unsafe.Pointer(unsafe.SliceData(b)), C.size_t(len(b)), &d)
	return uint64(d), cuda.CUresult(r)
}

func (c *dctx) hostUnregister(b []byte) cuda.CUresult {
	return cuda.CUresult(C.gpuos_host_unregister(c.p, unsafe.Pointer(unsafe.SliceData(b))))
}

// moduleLoad loads image (PTX must end in NUL); the JIT error log goes to log.
func (c *dctx) moduleLoad(image, log []byte) (hModule, cuda.CUresult) {
	var m C.CUmodule
	var logp *C.char
	if len(log) > 0 {
		logp = (*C.char)(unsafe.Pointer(&log[0]))
	}
	r := C.gpuos_module_load(c.p, unsafe.Pointer(&image[0]), &m, logp, C.size_t(len(log)))
	runtime.KeepAlive(image)
	return m, cuda.CUresult(r)
}

func (c *dctx) moduleUnload(m hModule) cuda.CUresult {
	return cuda.CUresult(C.gpuos_module_unload(c.p, m))
}

// function looks up a kernel (name NUL-terminated) and reads its attributes
// and parameter layout. params is nil when the driver cannot report it
// (before CUDA 12.4).
func (c *dctx) function(m hModule, name []byte) (f hFunction, attrs [numFuncAttrs]int32, params []backend.Param, r cuda.CUresult) {
	var cattrs [numFuncAttrs]C.int
	for limit := 256; ; limit *= 8 {
		buf := make([]C.size_t, 2*limit)
		var n C.int
		res := C.gpuos_function(c.p, m, (*C.char)(unsafe.Pointer(&name[0])), &f, &cattrs[0], C.int(len(cattrs)),
			&buf[0], C.int(limit), &n)
		if res != 0 {
			return nil, attrs, nil, cuda.CUresult(res)
		}
		if int(n) == limit && limit < 1<<16 {
			continue // maybe more parameters than we asked for
		}
		for i := range attrs {
			attrs[i] = int32(cattrs[i])
		}
		if n < 0 {
			return f, attrs, nil, 0
		}
		params = make([]backend.Param, n)
		for i := range params {
			params[i] = backend.Param{Offset: uint32(buf[2*i]), Size: uint32(buf[2*i+1])}
		}
		return f, attrs, params, 0
	}
}

func (c *dctx) global(m hModule, name []byte) (uint64, uint64, cuda.CUresult) {
	var p C.CUdeviceptr
	var size C.size_t
	r := C.gpuos_global(c.p, m, (*C.char)(unsafe.Pointer(&name[0])), &p, &size)
	return uint64(p), uint64(size), cuda.CUresult(r)
}

func (c *dctx) streamCreate(priority int) (hStream, cuda.CUresult) {
	var s C.CUstream
	r := C.gpuos_stream_create(c.p, C.int(priority), &s)
	return s, cuda.CUresult(r)
}

// partition creates a green context without at least reserve SMs.
func (c *dctx) partition(reserve int) (g hGreenCtx, sms, reserved int, r cuda.CUresult) {
	var cs, cr C.uint
	res := C.gpuos_partition(c.p, C.uint(reserve), &g, &cs, &cr)
	return g, int(cs), int(cr), cuda.CUresult(res)
}

func (c *dctx) partitionDestroy(g hGreenCtx) cuda.CUresult {
	return cuda.CUresult(C.gpuos_partition_destroy(c.p, g))
}

func (c *dctx) partitionStream(g hGreenCtx, priority int) (hStream, cuda.CUresult) {
	var s C.CUstream
	r := C.gpuos_partition_stream(c.p, g, C.int(priority), &s)
	return s, cuda.CUresult(r)
}

func (c *dctx) streamDestroy(s hStream) cuda.CUresult {
	return cuda.CUresult(C.gpuos_stream_destroy(c.p, s))
}

func (c *dctx) streamQuery(s hStream) cuda.CUresult {
	return cuda.CUresult(C.gpuos_stream_query(c.p, s))
}

func (c *dctx) streamSync(s hStream) cuda.CUresult {
	return cuda.CUresult(C.gpuos_stream_sync(c.p, s))
}

// launch enqueues f; params is the packed parameter buffer, which the driver
// copies before returning.
//
// params may lie inside a Go object that holds pointers (the driver keeps a
// launch's small parameters inline in its command), which cgo refuses to
// pass ("Go pointer to unpinned Go pointer", run 7), so it is copied first:
// onto the stack when small (gpuos_launch is noescape, so the array stays
// there), else into a pointer-free heap buffer.
func (c *dctx) launch(f hFunction, cfg *backend.LaunchConfig, s hStream, params []byte) cuda.CUresult {
	var p unsafe.Pointer
	var small [256]byte
	switch {
	case len(params) == 0:
	case len(params) <= len(small):
		copy(small[:], params)
		p = unsafe.Pointer(&small[0])
	default:
		p = unsafe.Pointer(&append([]byte(nil), params...)[0])
	}
	return cuda.CUresult(C.gpuos_launch(c.p, f,
		C.uint(cfg.Grid[0]), C.uint(cfg.Grid[1]), C.uint(cfg.Grid[2]),
		C.uint(cfg.Block[0]), C.uint(cfg.Block[1]), C.uint(cfg.Block[2]),
		C.uint(cfg.SharedMem), s, p, C.size_t(len(params))))
}

// funcSetAttr sets attribute attr of f to value (cuFuncSetAttribute).
func (c *dctx) funcSetAttr(f hFunction, attr cuda.CUfunction_attribute, value int32) cuda.CUresult {
	return cuda.CUresult(C.gpuos_func_set_attr(c.p, f, C.int(attr), C.int(value)))
}

// Copy directions.
const (
	dirHtoD = C.GPUOS_HTOD
	dirDtoH = C.GPUOS_DTOH
)

// copyAsync enqueues a copy between pinned host memory (never Go memory) and
// the device.
func (c *dctx) copyAsync(dir int, dev uint64, host []byte, s hStream) cuda.CUresult {
	return cuda.CUresult(C.gpuos_copy_async(c.p, C.int(dir), C.CUdeviceptr(dev),
		unsafe.Pointer(unsafe.SliceData(host)), C.size_t(len(host)), s))
}

// copySync copies between any host memory and the device in stream order and
// returns once the copy completed.
func (c *dctx) copySync(dir int, dev uint64, host []byte, s hStream) cuda.CUresult {
	return cuda.CUresult(C.gpuos_copy_sync(c.p, C.int(dir), C.CUdeviceptr(dev),
		unsafe.Pointer(unsafe.SliceData(host)), C.size_t(len(host)), s))
}

func (c *dctx) copyDtoD(dst, src, n uint64, s hStream) cuda.CUresult {
	return cuda.CUresult(C.gpuos_copy_dtod(c.p, C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n), s))
}

func (c *dctx) memset(dst uint64, value uint32, elem int, count uint64, s hStream) cuda.CUresult {
	return cuda.CUresult(C.gpuos_memset(c.p, C.CUdeviceptr(dst), C.uint(value), C.int(elem), C.size_t(count), s))
}

func (c *dctx) eventCreate(flags uint32) (hEvent, cuda.CUresult) {
	var e C.CUevent
	r := C.gpuos_event_create(c.p, C.uint(flags), &e)
	return e, cuda.CUresult(r)
}

func (c *dctx) eventDestroy(e hEvent) cuda.CUresult {
	return cuda.CUresult(C.gpuos_event_destroy(c.p, e))
}

func (c *dctx) eventRecord(e hEvent, s hStream) cuda.CUresult {
	return cuda.CUresult(C.gpuos_event_record(c.p, e, s))
}

func (c *dctx) streamWriteValue32(s hStream, addr uint64, v uint32) cuda.CUresult {
	return cuda.CUresult(C.gpuos_stream_write_value32(c.p, s, C.CUdeviceptr(addr), C.uint(v)))
}

func (c *dctx) streamWait(s hStream, e hEvent) cuda.CUresult {
	return cuda.CUresult(C.gpuos_stream_wait(c.p, s, e))
}

func (c *dctx) eventQuery(e hEvent) cuda.CUresult {
	return cuda.CUresult(C.gpuos_event_query(c.p, e))
}

// The slow-call log's C side (slowlog.go has the rest).

// goReturnEventSync names the Go side of an event synchronization in the log.
var goReturnEventSync = C.gpuos_go_return_event_sync()

func noteSlow(name *C.char, at, dur uint64) {
	C.gpuos_note_slow_at(name, C.uint64_t(at), C.uint64_t(dur))
}

func slowEnable(ns uint64) { C.gpuos_slow_enable(C.uint64_t(ns)) }

// slowRead returns entry i of the ring: ok false if it is not written yet,
// lost if the ring overwrote it.
func slowRead(i uint64) (name string, at, dur uint64, ok, lost bool) {
	var cname *C.char
	var cat, cdur C.uint64_t
	switch C.gpuos_slow_read(C.uint64_t(i), &cname, &cat, &cdur) {
	case 1:
		return C.GoString(cname), uint64(cat), uint64(cdur), true, false
	case -1:
		return "", 0, 0, false, true
	}
	return "", 0, 0, false, false
}

func (c *dctx) eventSync(e hEvent) cuda.CUresult {
	var returned C.uint64_t
	r := cuda.CUresult(C.gpuos_event_sync(c.p, e, &returned))
	if returned != 0 {
		// How long this goroutine took to run again once the driver
		// returned (a P to get back from the system call): the Go side of
		// a late completion.
		noteSlow(goReturnEventSync, uint64(returned), uint64(time.Now().UnixNano())-uint64(returned))
	}
	return r
}

func (c *dctx) eventElapsed(start, end hEvent) (float32, cuda.CUresult) {
	var ms C.float
	r := C.gpuos_event_elapsed(c.p, start, end, &ms)
	return float32(ms), cuda.CUresult(r)
}

// addCallback enqueues a host callback that hands handle and the stream's
// status to gpuosStreamCallback.
func (c *dctx) addCallback(s hStream, handle uintptr) cuda.CUresult {
	return cuda.CUresult(C.gpuos_add_callback(c.p, s, C.uintptr_t(handle)))
}
