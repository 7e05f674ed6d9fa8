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
    void *fn;
};
extern const struct gpuos_symbol gpuos_symbols[];
extern const int gpuos_symbol_count;
void **gpuos_export_table(int index);
extern const int gpuos_export_table_count;

#endif
