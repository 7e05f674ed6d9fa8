// fakecuda.c: a stand-in libcuda.so.1 for the cuda backend's tests on
// machines without a GPU. fake_test.go builds it with gcc. It implements the
// entry points the backend resolves, on host memory, synchronously:
//
//   - one device with a primary context; every call that needs a current
//     context checks that the calling thread made it current
//     (CUDA_ERROR_INVALID_CONTEXT otherwise), so the backend's thread-local
//     context switching is tested from many goroutines;
//   - VMM: reservations from a bump allocator, chunks of calloc'ed memory,
//     mappings with access flags; copies and memsets go through them, and
//     touching memory that is not mapped and accessible is a fault;
//   - modules: PTX with ".entry" and balanced braces loads, other PTX (or
//     PTX containing "BAD") fails with CUDA_ERROR_INVALID_PTX and a JIT log; kernels "vecadd" (a float add,
//     run on the host), "poke" (stores a byte at its pointer argument) and
//     "empty"; one module variable "counter" of 16 bytes;
//   - a fault (poke at a bad address, a copy into inaccessible memory) is
//     sticky: the call that caused it succeeds, every later call fails with
//     CUDA_ERROR_ILLEGAL_ADDRESS, as a real launch fault surfaces later;
//   - callbacks run on a thread of their own, as the driver's do;
//   - green contexts: the 132 SMs split in multiples of 8 (as sm_90's);
//     a green context's streams are ordinary streams marked with it.
//
// Build variants: -DFAKE_SHIM exports gpuos_shim_version (gpuos's own shim);
// -DFAKE_NO_RETAIN leaves out cuDevicePrimaryCtxRetain (a core entry point);
// -DFAKE_NO_GLOBAL leaves out cuModuleGetGlobal_v2 (an optional one);
// -DFAKE_NO_WRITE_VALUE leaves out cuStreamWriteValue32_v2 (fences). Environment at call
// time: FAKECUDA_NO_DEVICE=1 makes cuInit fail with CUDA_ERROR_NO_DEVICE,
// FAKECUDA_ZERO_DEVICES=1 makes the device count 0, FAKECUDA_FLAGS_FILE names
// a file cuDevicePrimaryCtxSetFlags_v2 writes the flags it was given to.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct { int type; int id; } CUmemLocation;
typedef struct {
	int type;
	int requestedHandleTypes;
	CUmemLocation location;
	void *win32HandleMetaData;
	unsigned char allocFlags[8];
} CUmemAllocationProp;
typedef struct { CUmemLocation location; int flags; } CUmemAccessDesc;
typedef void (*CUstreamCallback)(void *, CUresult, void *);

enum {
	OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NO_DEVICE = 100, INVALID_DEVICE = 101,
	INVALID_IMAGE = 200, INVALID_CONTEXT = 201, INVALID_PTX = 218, INVALID_HANDLE = 400,
	NOT_FOUND = 500, ILLEGAL_ADDRESS = 700, HOST_MEMORY_ALREADY_REGISTERED = 712,
	HOST_MEMORY_NOT_REGISTERED = 713,
};

#define GRAN (2u << 20)
#define TOTAL (1ull << 30)

#ifdef FAKE_SHIM
int gpuos_shim_version = 1;
#endif

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int sticky;    // the first fault; every later call returns it
static char primary;  // &primary is the context
static int retained;
static __thread void *current;
static unsigned long long used;
static CUdeviceptr next_va = 0x100000000000ull;

#define LOCK pthread_mutex_lock(&mu)
#define UNLOCK pthread_mutex_unlock(&mu)
#define STICKY do { if (sticky) return sticky; } while (0)
#define CTX do { if (sticky) return sticky; if (current != &primary) return INVALID_CONTEXT; } while (0)

struct chunk { unsigned char *mem; size_t size; int maps, released; };
struct resv { CUdeviceptr start; size_t size; struct resv *next; };
struct map { CUdeviceptr start; size_t size; unsigned char *mem; struct chunk *c; int access; struct map *next; };
struct hostreg { uintptr_t start; size_t size; struct hostreg *next; };
static struct resv *resvs;
static struct map *maps;
static struct hostreg *hostregs;

CUresult cuInit(unsigned flags) {
	(void)flags;
	return getenv("FAKECUDA_NO_DEVICE") ? NO_DEVICE : OK;
}
CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }
CUresult cuDeviceGetCount(int *n) { *n = getenv("FAKECUDA_ZERO_DEVICES") ? 0 : 1; return OK; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	if (ordinal != 0) return INVALID_DEVICE;
	*d = 0;
	return OK;
}
#ifndef FAKE_NO_RETAIN
CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) {
	if (d != 0) return INVALID_DEVICE;
	LOCK; retained++; UNLOCK;
	*ctx = &primary;
	return OK;
}
#endif
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice d, unsigned int flags) {
	if (d != 0) return INVALID_DEVICE;
	unsigned sched = flags & 7;
	if (flags & ~7u || (sched != 0 && sched != 1 && sched != 2 && sched != 4)) return INVALID_VALUE;
	const char *path = getenv("FAKECUDA_FLAGS_FILE");
	if (path) {
		FILE *f = fopen(path, "w");
		if (f) { fprintf(f, "%u\n", flags); fclose(f); }
	}
	return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
	if (d != 0) return INVALID_DEVICE;
	LOCK;
	CUresult r = retained > 0 ? OK : INVALID_CONTEXT;
	if (retained > 0) retained--;
	UNLOCK;
	return r;
}
CUresult cuCtxSetCurrent(void *ctx) {
	if (ctx && ctx != &primary) return INVALID_CONTEXT;
	current = ctx;
	return OK;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
	(void)d;
	snprintf(name, len, "gpuos fake GPU");
	return OK;
}
CUresult cuDeviceGetUuid_v2(unsigned char *uuid, CUdevice d) {
	(void)d;
	for (int i = 0; i < 16; i++) uuid[i] = (unsigned char)(0xa0 + i);
	return OK;
}
CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice d) {
	(void)d;
	snprintf(bus, len, "0000:AB:00.0");
	return OK;
}
CUresult cuDeviceTotalMem_v2(size_t *total, CUdevice d) { (void)d; *total = TOTAL; return OK; }
// Attributes 140 and above are unknown to this "driver"; 75/76 are the
// compute capability (9.0), 16 the SM count; any other one is 10*attribute.
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
	(void)d;
	if (attr <= 0 || attr >= 140) return INVALID_VALUE;
	switch (attr) {
	case 75: *v = 9; break;
	case 76: *v = 0; break;
	case 16: *v = 132; break;
	default: *v = 10 * attr;
	}
	return OK;
}
CUresult cuCtxSynchronize_v2(void *ctx) { (void)ctx; STICKY; return OK; }
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
	CTX;
	*least = 0;
	*greatest = -5;
	return OK;
}
CUresult cuMemGetInfo_v2(size_t *free_, size_t *total) {
	CTX;
	LOCK; *free_ = TOTAL - used; UNLOCK;
	*total = TOTAL;
	return OK;
}
static int prop_ok(const CUmemAllocationProp *p) {
	return p->type == 1 && p->location.type == 1 && p->location.id == 0;
}
CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *p, int flags) {
	CTX;
	if (!prop_ok(p) || flags != 0) return INVALID_VALUE;
	*g = GRAN;
	return OK;
}
CUresult cuMemAddressReserve(CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags) {
	CTX;
	if (size == 0 || size % GRAN || (align & (align - 1)) || addr || flags) return INVALID_VALUE;
	if (align < GRAN) align = GRAN;
	struct resv *r = calloc(1, sizeof *r);
	LOCK;
	next_va = (next_va + align - 1) & ~(CUdeviceptr)(align - 1);
	r->start = next_va;
	r->size = size;
	next_va += size + GRAN; // a hole after each, so nothing is adjacent by accident
	r->next = resvs;
	resvs = r;
	UNLOCK;
	*p = r->start;
	return OK;
}
CUresult cuMemAddressFree(CUdeviceptr p, size_t size) {
	CTX;
	LOCK;
	for (struct resv **rp = &resvs; *rp; rp = &(*rp)->next) {
		if ((*rp)->start == p && (*rp)->size == size) {
			struct resv *r = *rp;
			*rp = r->next;
			free(r);
			UNLOCK;
			return OK;
		}
	}
	UNLOCK;
	return INVALID_VALUE;
}
CUresult cuMemCreate(unsigned long long *h, size_t size, const CUmemAllocationProp *p, unsigned long long flags) {
	CTX;
	if (!prop_ok(p) || flags || size == 0 || size % GRAN) return INVALID_VALUE;
	LOCK;
	if (used + size > TOTAL) { UNLOCK; return OUT_OF_MEMORY; }
	used += size;
	UNLOCK;
	struct chunk *c = calloc(1, sizeof *c);
	c->mem = calloc(1, size);
	c->size = size;
	*h = (unsigned long long)(uintptr_t)c;
	return OK;
}
static void chunk_put(struct chunk *c) {
	if (c->released && c->maps == 0) {
		used -= c->size;
		free(c->mem);
		free(c);
	}
}
CUresult cuMemRelease(unsigned long long h) {
	CTX;
	struct chunk *c = (struct chunk *)(uintptr_t)h;
	LOCK;
	c->released = 1;
	chunk_put(c);
	UNLOCK;
	return OK;
}
CUresult cuMemMap(CUdeviceptr p, size_t size, size_t off, unsigned long long h, unsigned long long flags) {
	CTX;
	struct chunk *c = (struct chunk *)(uintptr_t)h;
	if (flags || size == 0 || size % GRAN || off % GRAN || p % GRAN || off + size > c->size) return INVALID_VALUE;
	if (off != 0 || size != c->size) return 801; /* CUDA_ERROR_NOT_SUPPORTED, as driver 580 answers (run 7: a prefix too) */
	LOCK;
	int inside = 0;
	for (struct resv *r = resvs; r; r = r->next)
		if (p >= r->start && p + size <= r->start + r->size) inside = 1;
	for (struct map *m = maps; m; m = m->next)
		if (p < m->start + m->size && m->start < p + size) inside = 0;
	if (!inside) { UNLOCK; return INVALID_VALUE; }
	struct map *m = calloc(1, sizeof *m);
	m->start = p;
	m->size = size;
	m->mem = c->mem + off;
	m->c = c;
	c->maps++;
	m->next = maps;
	maps = m;
	UNLOCK;
	return OK;
}
CUresult cuMemUnmap(CUdeviceptr p, size_t size) {
	CTX;
	LOCK;
	size_t covered = 0;
	for (struct map **mp = &maps; *mp;) {
		struct map *m = *mp;
		if (m->start >= p && m->start + m->size <= p + size) {
			covered += m->size;
			*mp = m->next;
			m->c->maps--;
			chunk_put(m->c);
			free(m);
			continue;
		}
		mp = &m->next;
	}
	UNLOCK;
	return covered == size ? OK : INVALID_VALUE;
}
CUresult cuMemSetAccess(CUdeviceptr p, size_t size, const CUmemAccessDesc *desc, size_t count) {
	CTX;
	if (count != 1 || desc->location.type != 1 || desc->location.id != 0 || desc->flags != 3) return INVALID_VALUE;
	LOCK;
	size_t covered = 0;
	for (struct map *m = maps; m; m = m->next)
		if (m->start >= p && m->start + m->size <= p + size) covered += m->size;
	if (covered != size) { UNLOCK; return INVALID_VALUE; }
	for (struct map *m = maps; m; m = m->next)
		if (m->start >= p && m->start + m->size <= p + size) m->access = 1;
	UNLOCK;
	return OK;
}

// devmem returns the host bytes behind [a, a+n) if one accessible mapping
// holds them all, else NULL. mu must be held.
static unsigned char *devmem(CUdeviceptr a, size_t n) {
	for (struct map *m = maps; m; m = m->next)
		if (m->access && a >= m->start && a - m->start <= m->size && n <= m->size - (a - m->start))
			return m->mem + (a - m->start);
	return NULL;
}
// devcopy copies between device ranges and host memory granule by granule
// (a range may span mappings); a hole is a fault.
static CUresult devcopy(CUdeviceptr dev, unsigned char *host, size_t n, int to_device) {
	LOCK;
	while (n > 0) {
		size_t step = GRAN - (dev % GRAN);
		if (step > n) step = n;
		unsigned char *m = devmem(dev, step);
		if (!m) { sticky = ILLEGAL_ADDRESS; UNLOCK; return OK; }
		if (to_device) memcpy(m, host, step);
		else memcpy(host, m, step);
		dev += step; host += step; n -= step;
	}
	UNLOCK;
	return OK;
}

/* cuMemAlloc as the composition of the VMM calls: a range of its own, one
   chunk mapped read-write. The chunk handle is remembered per address. */
struct nalloc { CUdeviceptr p; size_t size; unsigned long long h; struct nalloc *next; };
static struct nalloc *nallocs;
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size) {
	if (size == 0) return INVALID_VALUE;
	size = (size + GRAN - 1) / GRAN * GRAN;
	unsigned long long h;
	CUresult r = cuMemAddressReserve(p, size, GRAN, 0, 0);
	if (r) return r;
	CUmemAllocationProp prop = {0};
	prop.type = 1; prop.location.type = 1;
	if ((r = cuMemCreate(&h, size, &prop, 0))) { cuMemAddressFree(*p, size); return r; }
	if ((r = cuMemMap(*p, size, 0, h, 0))) { cuMemRelease(h); cuMemAddressFree(*p, size); return r; }
	CUmemAccessDesc d = {0};
	d.location.type = 1; d.flags = 3;
	if ((r = cuMemSetAccess(*p, size, &d, 1))) { cuMemUnmap(*p, size); cuMemRelease(h); cuMemAddressFree(*p, size); return r; }
	struct nalloc *a = calloc(1, sizeof *a);
	a->p = *p; a->size = size; a->h = h;
	LOCK; a->next = nallocs; nallocs = a; UNLOCK;
	return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
	LOCK;
	struct nalloc **pp = &nallocs, *a = NULL;
	for (; *pp; pp = &(*pp)->next) if ((*pp)->p == p) { a = *pp; *pp = a->next; break; }
	UNLOCK;
	if (!a) return INVALID_VALUE;
	cuMemUnmap(a->p, a->size); cuMemRelease(a->h); cuMemAddressFree(a->p, a->size); free(a);
	return OK;
}

CUresult cuMemHostAlloc(void **p, size_t size, unsigned flags) {
	CTX;
	if (flags != 1 && flags != 3) return INVALID_VALUE; /* portable, and device-mapped */
	*p = calloc(1, size);
	return *p ? OK : OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void *p) { CTX; free(p); return OK; }
/* Unified addressing: the device reaches host memory at its host address. */
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned flags) { CTX; if (flags) return INVALID_VALUE; *d = (CUdeviceptr)(uintptr_t)p; return OK; }
CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned flags) {
	CTX;
	if ((flags != 1 && flags != 3) || size == 0) return INVALID_VALUE; /* portable, and device-mapped */
	LOCK;
	for (struct hostreg *h = hostregs; h; h = h->next)
		if ((uintptr_t)p < h->start + h->size && h->start < (uintptr_t)p + size) { UNLOCK; return HOST_MEMORY_ALREADY_REGISTERED; }
	struct hostreg *h = calloc(1, sizeof *h);
	h->start = (uintptr_t)p;
	h->size = size;
	h->next = hostregs;
	hostregs = h;
	UNLOCK;
	return OK;
}
CUresult cuMemHostUnregister(void *p) {
	CTX;
	LOCK;
	for (struct hostreg **hp = &hostregs; *hp; hp = &(*hp)->next) {
		if ((*hp)->start == (uintptr_t)p) {
			struct hostreg *h = *hp;
			*hp = h->next;
			free(h);
			UNLOCK;
			return OK;
		}
	}
	UNLOCK;
	return HOST_MEMORY_NOT_REGISTERED;
}

// maxdyn: the dynamic shared memory a launch may ask for beyond the default
// 48 KiB (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 0: the default.
struct function { const char *name; int nparams; size_t off[4], size[4]; int maxdyn; };
enum { FN_VECADD, FN_POKE, FN_EMPTY, NFN };
static const struct function fn_templates[NFN] = {
	{"vecadd", 4, {0, 8, 16, 24}, {8, 8, 8, 4}},
	{"poke", 1, {0}, {8}},
	{"empty", 0, {0}, {0}},
};
// As in the driver, a module's functions are its own: an attribute set on
// one (cuFuncSetAttribute) is not seen by the same kernel of another load.
struct module { int loaded; unsigned char counter[16]; CUdeviceptr counter_va; struct map *counter_map; struct function fn[NFN]; };
static int is_fn(const struct function *fn, int which) { return !strcmp(fn->name, fn_templates[which].name); }

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *opts, void **vals) {
	CTX;
	const char *s = image;
	if (memcmp(s, "\x7f" "ELF", 4) == 0 || memcmp(s, "\x50\xed\x55\xba", 4) == 0) goto ok;
	if (strncmp(s, "//", 2) != 0 && strncmp(s, ".version", 8) != 0) return INVALID_IMAGE;
	int depth = 0, balanced = 1;
	for (const char *p = s; *p; p++) {
		if (*p == '{') depth++;
		if (*p == '}' && --depth < 0) balanced = 0;
	}
	const char *why = NULL;
	if (strstr(s, "BAD")) why = "syntax error near 'BAD'";
	else if (!balanced || depth != 0) why = "unbalanced braces";
	else if (!strstr(s, ".entry")) why = "no kernel";
	if (why) {
		char *log = NULL;
		size_t len = 0;
		for (unsigned i = 0; i < n; i++) {
			if (opts[i] == 5) log = vals[i];
			if (opts[i] == 6) len = (size_t)(uintptr_t)vals[i];
		}
		if (log && len) snprintf(log, len, "ptxas fatal   : fake JIT: %s", why);
		return INVALID_PTX;
	}
ok:;
	struct module *m = calloc(1, sizeof *m);
	memcpy(m->fn, fn_templates, sizeof m->fn);
	memcpy(m->counter, "0123456789abcdef", 16);
	struct map *cm = calloc(1, sizeof *cm);
	LOCK;
	m->counter_va = 0x6f0000000000ull + (next_va & 0xffffff000ull);
	next_va += 4096;
	cm->start = m->counter_va;
	cm->size = 16;
	cm->mem = m->counter;
	cm->access = 1;
	static struct chunk none = {0};
	cm->c = &none;
	cm->next = maps;
	maps = cm;
	UNLOCK;
	m->counter_map = cm;
	m->loaded = 1;
	*mod = m;
	return OK;
}
CUresult cuModuleUnload(void *mod) {
	CTX;
	struct module *m = mod;
	LOCK;
	for (struct map **mp = &maps; *mp; mp = &(*mp)->next) {
		if (*mp == m->counter_map) {
			*mp = m->counter_map->next;
			break;
		}
	}
	UNLOCK;
	free(m->counter_map);
	free(m);
	return OK;
}
CUresult cuModuleGetFunction(void **f, void *mod, const char *name) {
	CTX;
	struct module *m = mod;
	for (int i = 0; i < NFN; i++) {
		if (!strcmp(name, m->fn[i].name)) {
			*f = &m->fn[i];
			return OK;
		}
	}
	return NOT_FOUND;
}
#ifndef FAKE_NO_GLOBAL
CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *size, void *mod, const char *name) {
	CTX;
	struct module *m = mod;
	if (strcmp(name, "counter")) return NOT_FOUND;
	*p = m->counter_va;
	*size = 16;
	return OK;
}
#endif
CUresult cuFuncGetParamInfo(void *f, size_t i, size_t *off, size_t *size) {
	CTX;
	struct function *fn = f;
	if (i >= (size_t)fn->nparams) return INVALID_VALUE;
	*off = fn->off[i];
	*size = fn->size[i];
	return OK;
}
CUresult cuFuncGetAttribute(int *v, int attr, void *f) {
	CTX;
	switch (attr) {
	case 0: *v = 1024; return OK;
	case 4: *v = 8; return OK;
	case 5: case 6: *v = 90; return OK;
	case 8: *v = ((struct function *)f)->maxdyn ? ((struct function *)f)->maxdyn : 48 << 10; return OK;
	}
	if (attr < 0 || attr > 15) return INVALID_VALUE;
	*v = 0;
	return OK;
}

// As the H100's driver: dynamic shared memory up to 227 KiB, opted into per
// kernel.
CUresult cuFuncSetAttribute(void *f, int attr, int v) {
	CTX;
	if (attr != 8) return INVALID_VALUE;
	if (v < 0 || v > 232448) return INVALID_VALUE;
	((struct function *)f)->maxdyn = v;
	return OK;
}

struct stream { int prio; };
CUresult cuStreamCreateWithPriority(void **s, unsigned flags, int prio) {
	CTX;
	if (flags != 1) return INVALID_VALUE;
	struct stream *st = calloc(1, sizeof *st);
	st->prio = prio;
	*s = st;
	return OK;
}
CUresult cuStreamDestroy_v2(void *s) { CTX; free(s); return OK; }

// Green contexts. CUdevResource is 144 bytes: type at 0, the SM fields at 96.
typedef struct { int type; unsigned char pad[92]; unsigned sm[3]; unsigned char rest[36]; } devres;
struct green { unsigned sms; };
CUresult cuDeviceGetDevResource(CUdevice d, devres *r, int type) {
	STICKY;
	if (d != 0 || type != 1) return INVALID_VALUE;
	memset(r, 0, sizeof *r);
	r->type = 1;
	r->sm[0] = 132, r->sm[1] = 8, r->sm[2] = 8;
	return OK;
}
CUresult cuDevSmResourceSplitByCount(devres *out, unsigned *n, const devres *in, devres *rem, unsigned flags, unsigned min) {
	STICKY;
	if (!n || !in || in->type != 1 || flags || min == 0) return INVALID_VALUE;
	unsigned each = (min + 7) / 8 * 8, groups = in->sm[0] / each;
	if (*n < groups) groups = *n;
	for (unsigned i = 0; i < groups; i++) { out[i] = *in; out[i].sm[0] = each; }
	if (rem) { *rem = *in; rem->sm[0] = in->sm[0] - groups * each; }
	*n = groups;
	return OK;
}
CUresult cuDevResourceGenerateDesc(void **desc, devres *r, unsigned n) {
	STICKY;
	if (n != 1 || r->type != 1 || r->sm[0] == 0) return INVALID_VALUE;
	unsigned *sms = malloc(sizeof *sms);
	*sms = r->sm[0];
	*desc = sms;
	return OK;
}
CUresult cuGreenCtxCreate(struct green **g, unsigned *desc, CUdevice d, unsigned flags) {
	STICKY;
	if (d != 0 || !desc || flags > 1) return INVALID_VALUE;
	*g = calloc(1, sizeof **g);
	(*g)->sms = *desc;
	free(desc);
	return OK;
}
CUresult cuGreenCtxDestroy(struct green *g) { STICKY; free(g); return OK; }
CUresult cuGreenCtxStreamCreate(void **s, struct green *g, unsigned flags, int prio) {
	CTX;
	if (!g || flags != 1) return INVALID_VALUE;
	struct stream *st = calloc(1, sizeof *st);
	st->prio = prio;
	*s = st;
	return OK;
}
CUresult cuStreamQuery(void *s) { (void)s; CTX; return OK; }
CUresult cuStreamSynchronize(void *s) { (void)s; CTX; return OK; }
#ifndef FAKE_NO_WRITE_VALUE
/* Work runs at once here, so the write lands before the call returns. */
CUresult cuStreamWriteValue32_v2(void *s, CUdeviceptr addr, unsigned v, unsigned flags) {
	(void)s;
	CTX;
	if (flags || (addr & 3)) return INVALID_VALUE;
	__atomic_store_n((unsigned *)(uintptr_t)addr, v, __ATOMIC_RELEASE);
	return OK;
}
#endif
CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags) { (void)s; (void)e; CTX; return flags ? INVALID_VALUE : OK; }

struct cbcall { CUstreamCallback cb; void *s; void *user; CUresult status; };
static void *cbthread(void *arg) {
	struct cbcall *c = arg;
	c->cb(c->s, c->status, c->user);
	return NULL;
}
// Unlike the others, it runs even after a fault: the callback gets the error.
CUresult cuStreamAddCallback(void *s, CUstreamCallback cb, void *user, unsigned flags) {
	if (current != &primary) return INVALID_CONTEXT;
	if (flags) return INVALID_VALUE;
	struct cbcall c = {cb, s, user, sticky};
	pthread_t t;
	if (pthread_create(&t, NULL, cbthread, &c)) return OUT_OF_MEMORY;
	pthread_join(t, NULL);
	return OK;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		unsigned shmem, void *s, void **params, void **extra) {
	(void)s;
	CTX;
	struct function *fn = f;
	if (!gx || !gy || !gz || !bx || !by || !bz || (unsigned long long)bx * by * bz > 1024) return INVALID_VALUE;
	if (shmem > (unsigned)(fn->maxdyn ? fn->maxdyn : 48 << 10)) return INVALID_VALUE;
	if (params) return INVALID_VALUE; // the backend passes parameters through extra only
	unsigned char *buf = NULL;
	size_t size = 0;
	if (extra) {
		if (extra[0] != (void *)1 || extra[2] != (void *)2 || extra[4] != (void *)0) return INVALID_VALUE;
		buf = extra[1];
		size = *(size_t *)extra[3];
	}
	size_t want = fn->nparams ? fn->off[fn->nparams - 1] + fn->size[fn->nparams - 1] : 0;
	if (size != want) return INVALID_VALUE;
	if (is_fn(fn, FN_POKE)) {
		CUdeviceptr p;
		memcpy(&p, buf, 8);
		unsigned char v = 0xab;
		return devcopy(p, &v, 1, 1);
	}
	if (is_fn(fn, FN_VECADD)) {
		CUdeviceptr a, b, c;
		int n;
		memcpy(&a, buf, 8);
		memcpy(&b, buf + 8, 8);
		memcpy(&c, buf + 16, 8);
		memcpy(&n, buf + 24, 4);
		unsigned long long threads = (unsigned long long)gx * gy * gz * bx * by * bz;
		for (long long i = 0; i < n && (unsigned long long)i < threads; i++) {
			float x, y, z;
			devcopy(a + 4 * i, (unsigned char *)&x, 4, 0);
			devcopy(b + 4 * i, (unsigned char *)&y, 4, 0);
			z = x + y;
			devcopy(c + 4 * i, (unsigned char *)&z, 4, 1);
			if (sticky) break;
		}
	}
	return OK;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) {
	(void)s;
	CTX;
	return devcopy(dst, (unsigned char *)src, n, 1);
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) {
	(void)s;
	CTX;
	return devcopy(src, dst, n, 0);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s) {
	(void)s;
	CTX;
	unsigned char *tmp = malloc(n);
	CUresult r = devcopy(src, tmp, n, 0);
	if (!r && !sticky) r = devcopy(dst, tmp, n, 1);
	free(tmp);
	return r;
}
static CUresult memset_n(CUdeviceptr dst, const void *v, int elem, size_t count) {
	CTX;
	unsigned char *tmp = malloc(count * elem + 1);
	for (size_t i = 0; i < count; i++) memcpy(tmp + i * elem, v, elem);
	CUresult r = devcopy(dst, tmp, count * elem, 1);
	free(tmp);
	return r;
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *s) { (void)s; return memset_n(d, &v, 1, n); }
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, void *s) { (void)s; return memset_n(d, &v, 2, n); }
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *s) { (void)s; return memset_n(d, &v, 4, n); }

struct event { unsigned flags; int recorded; struct timespec t; };
CUresult cuEventCreate(void **e, unsigned flags) {
	CTX;
	if (flags & ~3u) return INVALID_VALUE;
	struct event *ev = calloc(1, sizeof *ev);
	ev->flags = flags;
	*e = ev;
	return OK;
}
CUresult cuEventDestroy_v2(void *e) { CTX; free(e); return OK; }
CUresult cuEventRecord(void *e, void *s) {
	(void)s;
	CTX;
	struct event *ev = e;
	ev->recorded = 1;
	clock_gettime(CLOCK_MONOTONIC, &ev->t);
	return OK;
}
CUresult cuEventQuery(void *e) { (void)e; CTX; return OK; }
CUresult cuEventSynchronize(void *e) { (void)e; CTX; return OK; }
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
	CTX;
	struct event *x = a, *y = b;
	if (!x->recorded || !y->recorded || (x->flags & 2) || (y->flags & 2)) return INVALID_HANDLE;
	*ms = (float)((y->t.tv_sec - x->t.tv_sec) * 1e3 + (y->t.tv_nsec - x->t.tv_nsec) / 1e6);
	return OK;
}
