/*
 * shim.h - declarations shared by the C and Go halves of gpuos's libcuda.so.1.
 * Deliberately not cuda.h: the Go exports are declared by cgo with Go's types,
 * and the two must never meet in one translation unit.
 */
#ifndef GPUOS_LIBCUDA_SHIM_H
#define GPUOS_LIBCUDA_SHIM_H

#include <stddef.h>
#include <stdint.h>

/* runtime.c */
uint64_t gpuos_thread(void);
uint64_t gpuos_pthread_self(void);
void gpuos_call_host_fn(void *fn, void *user);
void gpuos_call_stream_callback(void *fn, uint64_t stream, int status, void *user);
void gpuos_call_cls_dtor(void *fn, uint64_t ctx, void *key, void *value);
size_t gpuos_call_b2d(void *fn, int block_size);
const char *gpuos_shim_version(void);
extern int gpuos_trace_tables;
void gpuosETToolsBuffer1(void **ptr, size_t *size);
void gpuosETToolsBuffer2(void **ptr, size_t *size);
uint32_t gpuosETCheckFn3(void);

/* zlibcuda.c (generated) */
struct gpuos_symbol {
    const char *name;
    void *fn;        /* the exported function */
    const char *sig; /* its parameters for the call trace, or NULL (see internal/shim/calltrace.go) */
};
extern const struct gpuos_symbol gpuos_symbols[];
extern const int gpuos_symbol_count;
void **gpuos_export_table(int index);
extern const int gpuos_export_table_count;

/* Every exported function jumps through gpuos_entry[i], which holds
 * gpuos_impl[i] (the Go implementation or a stub), or its tracing trampoline
 * gpuos_trace_trampoline[i] under GPUOS_SHIM_TRACE=2 (trace.c). */
#define GPUOS_HIDDEN __attribute__((visibility("hidden")))
extern GPUOS_HIDDEN void *gpuos_entry[];
extern GPUOS_HIDDEN void *const gpuos_impl[];
extern GPUOS_HIDDEN void *const gpuos_trace_trampoline[];

/* trace.c */
struct gpuos_frame {
    int32_t index;      /* the entry point, an index into gpuos_symbols */
    uint64_t gp[6];     /* the integer argument registers */
    uint64_t xmm[8];    /* the low halves of the vector argument registers */
    uint64_t stack[6];  /* the first stack arguments */
};
extern int gpuos_call_trace;
int gpuos_safe_read(uint64_t addr, void *buf, size_t n);

#endif
