/*
 * trace.c - the full call trace of GPUOS_SHIM_TRACE=2: every exported entry
 * point, implemented or stub, logged with its arguments and result.
 *
 * Every exported function is a one-instruction trampoline (zlibcuda.c) that
 * jumps through gpuos_entry[i]. Normally gpuos_entry[i] is the
 * implementation itself, so the cost of an untraced call is one indirect
 * jump. When the library loads with GPUOS_SHIM_TRACE=2 or more, the
 * constructor below points every gpuos_entry[i] at a tracing trampoline
 * instead (x86-64 only): it saves the argument registers, takes the caller's
 * return address off the stack so that stack arguments stay where the
 * implementation expects them, calls the implementation, and hands the
 * arguments and the result to the Go half to log (gpuosTraceCall) before
 * returning to the caller. The saved calls live on a per-thread stack of
 * frames, so calls made from inside a call (destructors, callbacks) nest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"
#include "_cgo_export.h"

/* Set when the tracing trampolines are installed: the Go half then leaves
 * the logging of failed calls to them. */
int gpuos_call_trace;

#if defined(__x86_64__)

/* The register save area gpuos_trace_common builds: the six integer argument
 * registers, %rax (the vector-register count of a variadic call), padding,
 * then %xmm0-%xmm7. */
struct saved_regs {
    uint64_t gp[6];
    uint64_t rax, pad;
    uint64_t xmm[8][2];
};

enum { max_depth = 256 };

struct frames {
    int depth;
    struct gpuos_frame f[max_depth];
    void *ret[max_depth];
};

static __thread struct frames *thread_frames;

/* gpuos_trace_enter saves the call's arguments and the caller's return
 * address and returns the implementation to call. */
__attribute__((used)) void *gpuos_trace_enter(int index, const struct saved_regs *r, const uint64_t *stack, void *ret)
{
    struct frames *fs = thread_frames;
    if (!fs) {
        fs = calloc(1, sizeof *fs);
        if (!fs) {
            fputs("gpuos-shim: out of memory for the call trace\n", stderr);
            abort();
        }
        thread_frames = fs;
    }
    if (fs->depth >= max_depth) {
        fputs("gpuos-shim: driver calls nested too deeply for the call trace\n", stderr);
        abort();
    }
    struct gpuos_frame *f = &fs->f[fs->depth];
    f->index = index;
    memcpy(f->gp, r->gp, sizeof f->gp);
    for (int i = 0; i < 8; i++)
        f->xmm[i] = r->xmm[i][0];
    memcpy(f->stack, stack, sizeof f->stack);
    fs->ret[fs->depth] = ret;
    fs->depth++;
    if (gpuos_call_trace > 2)
        gpuosTraceEnter(f, fs->depth);
    return gpuos_impl[index];
}

/* gpuos_trace_exit logs the call that returned result and returns the
 * caller's return address. */
__attribute__((used)) void *gpuos_trace_exit(uint64_t result)
{
    struct frames *fs = thread_frames;
    fs->depth--;
    struct gpuos_frame *f = &fs->f[fs->depth];
    gpuosTraceCall(f, result, fs->depth + 1);
    return fs->ret[fs->depth];
}

__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl gpuos_trace_common\n"
    ".hidden gpuos_trace_common\n"
    ".type gpuos_trace_common, @function\n"
    "gpuos_trace_common:\n"
    /* On entry: %r11d = the entry point's index, (%rsp) = the caller's return
     * address, 8(%rsp) and up = its stack arguments. */
    "    push %rbp\n"
    "    mov %rsp, %rbp\n"
    "    sub $192, %rsp\n"
    "    mov %rdi, 0(%rsp)\n"
    "    mov %rsi, 8(%rsp)\n"
    "    mov %rdx, 16(%rsp)\n"
    "    mov %rcx, 24(%rsp)\n"
    "    mov %r8, 32(%rsp)\n"
    "    mov %r9, 40(%rsp)\n"
    "    mov %rax, 48(%rsp)\n"
    "    movaps %xmm0, 64(%rsp)\n"
    "    movaps %xmm1, 80(%rsp)\n"
    "    movaps %xmm2, 96(%rsp)\n"
    "    movaps %xmm3, 112(%rsp)\n"
    "    movaps %xmm4, 128(%rsp)\n"
    "    movaps %xmm5, 144(%rsp)\n"
    "    movaps %xmm6, 160(%rsp)\n"
    "    movaps %xmm7, 176(%rsp)\n"
    "    mov %r11d, %edi\n"
    "    mov %rsp, %rsi\n"
    "    lea 16(%rbp), %rdx\n"
    "    mov 8(%rbp), %rcx\n"
    "    call gpuos_trace_enter\n"
    "    mov %rax, %r11\n"
    "    mov 0(%rsp), %rdi\n"
    "    mov 8(%rsp), %rsi\n"
    "    mov 16(%rsp), %rdx\n"
    "    mov 24(%rsp), %rcx\n"
    "    mov 32(%rsp), %r8\n"
    "    mov 40(%rsp), %r9\n"
    "    movaps 64(%rsp), %xmm0\n"
    "    movaps 80(%rsp), %xmm1\n"
    "    movaps 96(%rsp), %xmm2\n"
    "    movaps 112(%rsp), %xmm3\n"
    "    movaps 128(%rsp), %xmm4\n"
    "    movaps 144(%rsp), %xmm5\n"
    "    movaps 160(%rsp), %xmm6\n"
    "    movaps 176(%rsp), %xmm7\n"
    "    mov 48(%rsp), %rax\n"
    "    leave\n"
    /* Drop the caller's return address (gpuos_trace_enter kept it): the call
     * below puts ours in its place, so the stack arguments are where the
     * implementation looks for them. */
    "    add $8, %rsp\n"
    "    call *%r11\n"
    "    sub $8, %rsp\n" /* the slot the caller's return address goes back into */
    "    push %rax\n"
    "    push %rdx\n"
    "    sub $8, %rsp\n" /* 16-byte alignment for the call */
    "    mov %rax, %rdi\n"
    "    call gpuos_trace_exit\n"
    "    add $8, %rsp\n"
    "    pop %rdx\n"
    "    mov %rax, 8(%rsp)\n"
    "    pop %rax\n"
    "    ret\n"
    ".size gpuos_trace_common, .-gpuos_trace_common\n");

/* Install the tracing trampolines before anything can call the library. */
__attribute__((constructor)) static void gpuos_trace_install(void)
{
    const char *v = getenv("GPUOS_SHIM_TRACE");
    int level = v ? atoi(v) : 0;
    if (level < 2)
        return;
    for (int i = 0; i < gpuos_symbol_count; i++)
        gpuos_entry[i] = gpuos_trace_trampoline[i];
    gpuos_call_trace = level;
}

#endif /* __x86_64__ */

/* gpuos_safe_read copies n bytes at addr into buf if they are readable, and
 * reports whether they were: the call trace reads strings and output values
 * through the application's pointers, and a bad pointer must not crash it.
 * The kernel checks the address when it copies it into a pipe. */
static int safe_pipe[2] = {-1, -1};
static pthread_mutex_t safe_mu = PTHREAD_MUTEX_INITIALIZER;

int gpuos_safe_read(uint64_t addr, void *buf, size_t n)
{
    if (addr == 0 || n == 0 || n > 4096)
        return 0;
    int ok = 0;
    pthread_mutex_lock(&safe_mu);
    if (safe_pipe[0] < 0 && pipe2(safe_pipe, O_CLOEXEC) != 0)
        safe_pipe[0] = -1;
    if (safe_pipe[0] >= 0) {
        ssize_t w = write(safe_pipe[1], (const void *)(uintptr_t)addr, n);
        if (w > 0) {
            ssize_t r = read(safe_pipe[0], buf, (size_t)w);
            ok = r == (ssize_t)n;
        }
    }
    pthread_mutex_unlock(&safe_mu);
    return ok;
}
