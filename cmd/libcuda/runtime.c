/*
 * runtime.c - the C half of gpuos's libcuda.so.1 that is not generated:
 * thread tokens, calls into the application's callbacks, the buffers of the
 * tools export table, and the library's identification.
 */
#include <pthread.h>
#include <stdint.h>
#include <stddef.h>

#include "shim.h"
#include "_cgo_export.h"

/* The version string; the real-GPU backend refuses to load a library that
 * exports gpuos_shim_version, so that the daemon never loads the shim. */
__attribute__((visibility("default"))) const char *gpuos_shim_version(void) { return "gpuos libcuda shim 0.1.0 (CUDA 13.0 ABI)"; }

/* Each OS thread gets a token, assigned on its first driver call, that keys
 * its context stack in the Go half. */
static __thread uint64_t thread_token;
static uint64_t next_token;

uint64_t gpuos_thread(void)
{
    if (thread_token == 0)
        thread_token = __atomic_add_fetch(&next_token, 1, __ATOMIC_RELAXED);
    return thread_token;
}

uint64_t gpuos_pthread_self(void) { return (uint64_t)pthread_self(); }

void gpuos_call_host_fn(void *fn, void *user) { ((void (*)(void *))fn)(user); }

void gpuos_call_stream_callback(void *fn, uint64_t stream, int status, void *user)
{
    ((void (*)(void *, int, void *))fn)((void *)(uintptr_t)stream, status, user);
}

void gpuos_call_cls_dtor(void *fn, uint64_t ctx, void *key, void *value)
{
    ((void (*)(void *, void *, void *))fn)((void *)(uintptr_t)ctx, key, value);
}

size_t gpuos_call_b2d(void *fn, int block_size) { return ((size_t(*)(int))fn)(block_size); }

/* Set by the Go half when GPUOS_SHIM_TRACE asks for export-table tracing. */
int gpuos_trace_tables;

/* Slots 2 and 6 of the tools runtime-hooks table hand the runtime buffers it
 * records into; their sizes are those the runtime was seen to accept. */
static uint32_t tools_buffer1[1024];
static uint32_t tools_buffer2[64];

void gpuosETToolsBuffer1(void **ptr, size_t *size)
{
    if (ptr) *ptr = tools_buffer1;
    if (size) *size = 1024;
    if (gpuos_trace_tables) gpuosTraceC((char *)"tools_runtime_hooks slot 2", (uint64_t)(uintptr_t)ptr, (uint64_t)(uintptr_t)size);
}

void gpuosETToolsBuffer2(void **ptr, size_t *size)
{
    if (ptr) *ptr = tools_buffer2;
    if (size) *size = 14;
    if (gpuos_trace_tables) gpuosTraceC((char *)"tools_runtime_hooks slot 6", (uint64_t)(uintptr_t)ptr, (uint64_t)(uintptr_t)size);
}

/* Slot 3 of the context-checks table: returns 0, as the real one was seen to. */
uint32_t gpuosETCheckFn3(void)
{
    if (gpuos_trace_tables) gpuosTraceC((char *)"context_checks slot 3", 0, 0);
    return 0;
}
