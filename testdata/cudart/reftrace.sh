#!/bin/bash
# reftrace.sh - builds a pass-through libcuda.so.1 that logs every call a
# program makes to the REAL driver, in the form of gpuos's call trace
# (GPUOS_SHIM_TRACE=2), so that the two can be compared line by line.
#
#   bash testdata/cudart/reftrace.sh OUT_DIR [REAL_LIBCUDA]
#   REFTRACE_LOG=/tmp/ref.log LD_LIBRARY_PATH=OUT_DIR ./program
#
# Every function the real library exports is a trampoline that saves the
# argument registers, calls the real function and logs
#   T<tid> name(a0, a1, a2, a3, a4, a5) = RESULT
# with, after each argument that is a readable pointer, the 8 bytes it points
# at after the call (->0x...): output values. cuGetProcAddress hands out the
# trampolines instead of the real functions, so calls through it are logged
# too: the exported function's trampoline when the real driver returns an
# exported function, else (driver 580 returns internal entry points for most
# names) a trampoline made for the pointer, logged under the name asked for
# (cuMemAlloc, where gpuos's trace says cuMemAlloc_v2: compare base names).
# cuGetExportTable logs the first 64 words of each table it returns
# (NULL, a number, fn+offset into the real library, or another pointer) and,
# except for the two tables the runtime's integrity check hashes the
# addresses of (6bd5fb6c..., d4082055...), hands out a copy whose function
# slots are logging trampolines too:
#   T<tid> slot <table>[<slot>](a0, ..., a5) = <rax>
# REFTRACE_WRAP=0 hands out the real tables. x86-64 only.
set -eu
OUT=${1:?usage: reftrace.sh OUT_DIR [REAL_LIBCUDA]}
REAL=${2:-$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')}
[ -n "$REAL" ] && [ -e "$REAL" ] || { echo "reftrace: no real libcuda.so.1 (pass its path)" >&2; exit 1; }
REAL=$(readlink -f "$REAL")
mkdir -p "$OUT"
nm -D --defined-only "$REAL" | awk '$2=="T"||$2=="W"||$2=="i"{print $3}' | sed 's/@.*//' | grep '^cu' | sort -u > "$OUT/reftrace.syms"
N=$(wc -l < "$OUT/reftrace.syms")
SLOTS=4096
DYN=4096
{
cat <<C
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NSYM $N
#define NSLOT $SLOTS
#define NDYN $DYN
static const char *real_path = "$REAL";
static const char *const names[NSYM] = {
C
sed 's/.*/    "&",/' "$OUT/reftrace.syms"
cat <<'C'
};
static void *real[NSYM];
__attribute__((visibility("hidden"))) void *rt_tramp[NSYM];

/* Slots of wrapped export tables: their table's name, index and real function. */
static struct { const char *table; int index; void *fn; } slots[NSLOT];
static int nslots;
/* The trampolines of slots and of handed-out entry points are 16 bytes
 * apart from a base label (see the end of this file). */
extern char rt_slot_base[] __attribute__((visibility("hidden")));
extern char rt_dyn_base[] __attribute__((visibility("hidden")));
#define rt_slot_tramp(k) ((void *)(rt_slot_base + 16 * (k)))
#define rt_dyn_tramp(k) ((void *)(rt_dyn_base + 16 * (k)))

/* Entry points cuGetProcAddress returned that are not exported functions:
 * the name asked for and the real function. */
static struct { char name[64]; void *fn; } dyns[NDYN];
static int ndyns;
static pthread_mutex_t dyn_mu = PTHREAD_MUTEX_INITIALIZER;

static int logfd = 2;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n >= (int)sizeof buf)
        n = sizeof buf - 1;
    pthread_mutex_lock(&log_mu);
    ssize_t w = write(logfd, buf, (size_t)n);
    (void)w;
    pthread_mutex_unlock(&log_mu);
}

/* Reads n bytes at addr if readable (the kernel checks the address). */
static int safe_pipe[2] = {-1, -1};
static pthread_mutex_t safe_mu = PTHREAD_MUTEX_INITIALIZER;
static int safe_read(uint64_t addr, void *buf, size_t n)
{
    if (addr < 4096)
        return 0;
    int ok = 0;
    pthread_mutex_lock(&safe_mu);
    if (safe_pipe[0] < 0 && pipe2(safe_pipe, O_CLOEXEC) != 0)
        safe_pipe[0] = -1;
    if (safe_pipe[0] >= 0) {
        ssize_t w = write(safe_pipe[1], (const void *)(uintptr_t)addr, n);
        if (w > 0)
            ok = read(safe_pipe[0], buf, (size_t)w) == (ssize_t)n;
    }
    pthread_mutex_unlock(&safe_mu);
    return ok;
}

static uintptr_t real_base, real_text_lo, real_text_hi;

/* Whether p points into the real library's executable code. */
static int in_real_text(uint64_t p) { return p >= real_text_lo && p < real_text_hi; }

static int (*real_error_name)(int, const char **);
static const char *result_name(uint64_t r, char *buf)
{
    const char *s = NULL;
    if (real_error_name && real_error_name((int)(uint32_t)r, &s) == 0 && s)
        return s;
    snprintf(buf, 32, "%#llx", (unsigned long long)r);
    return buf;
}

__attribute__((constructor)) static void rt_init(void)
{
    const char *p = getenv("REFTRACE_LOG");
    if (p && *p) {
        int fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0)
            logfd = fd;
    }
    void *h = dlopen(real_path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "reftrace: %s\n", dlerror());
        abort();
    }
    for (int i = 0; i < NSYM; i++)
        real[i] = dlsym(h, names[i]);
    real_error_name = dlsym(h, "cuGetErrorName");
    Dl_info di;
    if (real[0] && dladdr(real[0], &di))
        real_base = (uintptr_t)di.dli_fbase;
    /* The real library's executable mapping, from /proc/self/maps. */
    FILE *m = fopen("/proc/self/maps", "r");
    char line[512];
    while (m && fgets(line, sizeof line, m)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && strchr(perms, 'x') && strstr(line, real_path)) {
            if (!real_text_lo || lo < real_text_lo)
                real_text_lo = lo;
            if (hi > real_text_hi)
                real_text_hi = hi;
        }
    }
    if (m)
        fclose(m);
    logf_("reftrace: pid %d, real %s, %d functions\n", getpid(), real_path, NSYM);
}

struct frame {
    int index;
    uint64_t a[6];
    void *ret;
};
static __thread struct frame frames[256];
static __thread int depth;

struct saved {
    uint64_t gp[6];
    uint64_t rax, pad;
    uint64_t xmm[8][2];
};

__attribute__((used)) void *rt_enter(int index, const struct saved *r, const uint64_t *stack, void *ret)
{
    (void)stack;
    if (depth >= 256)
        abort();
    struct frame *f = &frames[depth++];
    f->index = index;
    memcpy(f->a, r->gp, sizeof f->a);
    f->ret = ret;
    if (index >= NSYM + NSLOT)
        return dyns[index - NSYM - NSLOT].fn;
    if (index >= NSYM)
        return slots[index - NSYM].fn;
    if (!real[index]) {
        logf_("reftrace: %s has no real function\n", names[index]);
        abort();
    }
    return real[index];
}

static int sym_index(const char *name)
{
    int lo = 0, hi = NSYM - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcmp(names[mid], name);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static const struct { const char *uuid, *name; int wrap; } known[] = {
    {"6bd5fb6c5bf4e74a8987d93912fd9df9", "cudart_interface", 0},
    {"d4082055bde6704b8d34ba123c66e1f2", "integrity_check", 0},
    {"a094798c2e742e7493f20800200c0a66", "tools_runtime_hooks", 1},
    {"42d85a8123f6cb478298f6e78a3aecdc", "tools_tls", 1},
    {"c693336e1121df11a8c368f355d89593", "context_local_storage", 1},
    {"263e88607cd2614392f6bbd5006dfa7e", "context_checks", 1},
    {"f8cff95121468b4eb9e2fb469e7c0dd9", "unknown_f8cff951", 1},
    {"21318c60971432488ca641ff7324c8f2", "unknown_21318c60", 1},
    {"69a28e9f24498b47b030c5da330ea4e9", "unknown_69a28e9f", 1},
    {"da9151d33ae6cc41a5c04f26d533e328", "unknown_da9151d3", 1},
};

/* Copies of wrapped tables live here, inside this library. */
/* A copy holds TABLE_WORDS words: the chained sub-tables of f8cff951 run
 * past 64 (words beyond a table's end are copied too, harmlessly). */
#define TABLE_WORDS 512
static void *copies[64][TABLE_WORDS];
static int ncopies;
static pthread_mutex_t wrap_mu = PTHREAD_MUTEX_INITIALIZER;
struct wrapped { const void *orig; void *copy; };
static struct wrapped wrapped_tables[64];

static void dump_and_wrap(const void **ptable, const unsigned char *id)
{
    char u[33];
    for (int i = 0; i < 16; i++)
        sprintf(u + 2 * i, "%02x", id[i]);
    const char *name = u;
    int wrap = 1;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        if (!strcmp(known[k].uuid, u)) {
            name = known[k].name;
            wrap = known[k].wrap;
        }
    const char *w = getenv("REFTRACE_WRAP");
    if (w && !strcmp(w, "0"))
        wrap = 0;
    const uint64_t *t = *ptable;
    char line[4096];
    int n = snprintf(line, sizeof line, "table %s %s at %p:", name, u, (const void *)t);
    uint64_t words[TABLE_WORDS];
    int nw = 0;
    for (; nw < TABLE_WORDS; nw++) {
        if (!safe_read((uint64_t)(uintptr_t)(t + nw), &words[nw], 8))
            break;
        uint64_t v = words[nw];
        if (n < (int)sizeof line - 40) {
            if (v == 0)
                n += snprintf(line + n, sizeof line - n, " [%d]NULL", nw);
            else if (in_real_text(v))
                n += snprintf(line + n, sizeof line - n, " [%d]fn+%#lx", nw, (unsigned long)(v - real_base));
            else if (v < (1u << 20))
                n += snprintf(line + n, sizeof line - n, " [%d]%llu", nw, (unsigned long long)v);
            else
                n += snprintf(line + n, sizeof line - n, " [%d]%#llx", nw, (unsigned long long)v);
        }
    }
    logf_("%s\n", line);
    if (!wrap || nw == 0)
        return;
    pthread_mutex_lock(&wrap_mu);
    for (int i = 0; i < ncopies; i++)
        if (wrapped_tables[i].orig == t) {
            *ptable = wrapped_tables[i].copy;
            pthread_mutex_unlock(&wrap_mu);
            return;
        }
    if (ncopies < 64) {
        void **c = copies[ncopies];
        for (int i = 0; i < nw; i++) {
            c[i] = (void *)(uintptr_t)words[i];
            if (in_real_text(words[i]) && nslots < NSLOT) {
                slots[nslots].table = name;
                slots[nslots].index = i;
                slots[nslots].fn = (void *)(uintptr_t)words[i];
                c[i] = rt_slot_tramp(nslots);
                nslots++;
            }
        }
        wrapped_tables[ncopies].orig = t;
        wrapped_tables[ncopies].copy = c;
        ncopies++;
        *ptable = (const void *)c;
    }
    pthread_mutex_unlock(&wrap_mu);
}

/* wrap_proc replaces the function cuGetProcAddress returned through pfn for
 * symbol sym with a logging trampoline. */
static void wrap_proc(void **pfn, uint64_t sym)
{
    if (!pfn || !*pfn)
        return;
    Dl_info di;
    if (dladdr(*pfn, &di) && di.dli_sname && di.dli_saddr == *pfn) {
        int i = sym_index(di.dli_sname);
        if (i >= 0) {
            *pfn = rt_tramp[i];
            return;
        }
    }
    char want[64];
    int k = 0;
    while (k < (int)sizeof want - 1 && safe_read(sym + k, &want[k], 1) && want[k])
        k++;
    want[k] = 0;
    if (k == 0)
        return;
    pthread_mutex_lock(&dyn_mu);
    int found = -1;
    for (int j = 0; j < ndyns && found < 0; j++)
        if (dyns[j].fn == *pfn && !strcmp(dyns[j].name, want))
            found = j;
    if (found < 0 && ndyns < NDYN) {
        found = ndyns++;
        memcpy(dyns[found].name, want, (size_t)k + 1);
        dyns[found].fn = *pfn;
    } else if (found < 0) {
        static int warned;
        if (!warned++)
            logf_("reftrace: more than %d entry points handed out; later ones are not logged\n", NDYN);
    }
    pthread_mutex_unlock(&dyn_mu);
    if (found >= 0)
        *pfn = rt_dyn_tramp(found);
}

__attribute__((used)) void *rt_exit(uint64_t result)
{
    struct frame *f = &frames[--depth];
    int tid = (int)syscall(SYS_gettid);
    char rb[32];
    if (f->index >= NSYM && f->index < NSYM + NSLOT) {
        int s = f->index - NSYM;
        logf_("T%d %*sslot %s[%d](%#llx, %#llx, %#llx, %#llx, %#llx, %#llx) = %#llx\n", tid, 2 * depth, "",
              slots[s].table, slots[s].index, (unsigned long long)f->a[0], (unsigned long long)f->a[1],
              (unsigned long long)f->a[2], (unsigned long long)f->a[3], (unsigned long long)f->a[4],
              (unsigned long long)f->a[5], (unsigned long long)result);
        return f->ret;
    }
    const char *name = f->index >= NSYM + NSLOT ? dyns[f->index - NSYM - NSLOT].name : names[f->index];
    int ok = (uint32_t)result == 0;
    if (ok && (!strcmp(name, "cuGetProcAddress") || !strcmp(name, "cuGetProcAddress_v2")))
        wrap_proc((void **)(uintptr_t)f->a[1], f->a[0]);
    if (ok && !strcmp(name, "cuGetExportTable") && f->a[0] && f->a[1])
        dump_and_wrap((const void **)(uintptr_t)f->a[0], (const unsigned char *)(uintptr_t)f->a[1]);
    char args[1024];
    int n = 0;
    for (int i = 0; i < 6; i++) {
        n += snprintf(args + n, sizeof args - n, "%s%#llx", i ? ", " : "", (unsigned long long)f->a[i]);
        uint64_t v;
        if (f->a[i] >= 65536 && safe_read(f->a[i], &v, 8))
            n += snprintf(args + n, sizeof args - n, "->%#llx", (unsigned long long)v);
    }
    const char *str = "";
    char sbuf[100] = "";
    if (!strcmp(name, "cuGetProcAddress") || !strcmp(name, "cuGetProcAddress_v2") ||
        !strcmp(name, "cuModuleGetFunction") || !strcmp(name, "cuLibraryGetKernel") || !strcmp(name, "cuModuleGetGlobal_v2")) {
        uint64_t s = !strncmp(name, "cuGetProc", 9) ? f->a[0] : f->a[2];
        int k = 0;
        while (k < 80 && safe_read(s + k, &sbuf[k], 1) && sbuf[k])
            k++;
        sbuf[k] = 0;
        str = sbuf;
    }
    if (!strcmp(name, "cuGetExportTable")) {
        unsigned char id[16];
        if (safe_read(f->a[1], id, 16)) {
            for (int i = 0; i < 16; i++)
                sprintf(sbuf + 2 * i, "%02x", id[i]);
            str = sbuf;
        }
    }
    logf_("T%d %*s%s(%s)%s%s%s = %s\n", tid, 2 * depth, "", name, args, *str ? " \"" : "", str, *str ? "\"" : "",
          result_name(result, rb));
    return f->ret;
}

__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl rt_common\n.hidden rt_common\n.type rt_common, @function\n"
    "rt_common:\n"
    "    push %rbp\n"
    "    mov %rsp, %rbp\n"
    "    sub $192, %rsp\n"
    "    mov %rdi, 0(%rsp)\n    mov %rsi, 8(%rsp)\n    mov %rdx, 16(%rsp)\n"
    "    mov %rcx, 24(%rsp)\n    mov %r8, 32(%rsp)\n    mov %r9, 40(%rsp)\n    mov %rax, 48(%rsp)\n"
    "    movaps %xmm0, 64(%rsp)\n    movaps %xmm1, 80(%rsp)\n    movaps %xmm2, 96(%rsp)\n    movaps %xmm3, 112(%rsp)\n"
    "    movaps %xmm4, 128(%rsp)\n    movaps %xmm5, 144(%rsp)\n    movaps %xmm6, 160(%rsp)\n    movaps %xmm7, 176(%rsp)\n"
    "    mov %r11d, %edi\n    mov %rsp, %rsi\n    lea 16(%rbp), %rdx\n    mov 8(%rbp), %rcx\n"
    "    call rt_enter\n"
    "    mov %rax, %r11\n"
    "    mov 0(%rsp), %rdi\n    mov 8(%rsp), %rsi\n    mov 16(%rsp), %rdx\n"
    "    mov 24(%rsp), %rcx\n    mov 32(%rsp), %r8\n    mov 40(%rsp), %r9\n"
    "    movaps 64(%rsp), %xmm0\n    movaps 80(%rsp), %xmm1\n    movaps 96(%rsp), %xmm2\n    movaps 112(%rsp), %xmm3\n"
    "    movaps 128(%rsp), %xmm4\n    movaps 144(%rsp), %xmm5\n    movaps 160(%rsp), %xmm6\n    movaps 176(%rsp), %xmm7\n"
    "    mov 48(%rsp), %rax\n"
    "    leave\n"
    "    add $8, %rsp\n"
    "    call *%r11\n"
    "    sub $8, %rsp\n    push %rax\n    push %rdx\n    sub $8, %rsp\n"
    "    mov %rax, %rdi\n"
    "    call rt_exit\n"
    "    add $8, %rsp\n    pop %rdx\n    mov %rax, 8(%rsp)\n    pop %rax\n"
    "    ret\n"
    ".size rt_common, .-rt_common\n");
C
# One trampoline per exported function, under its own name.
echo '__asm__(".text\n"'
awk '{printf "    \".globl %s\\n.type %s, @function\\n.p2align 4\\n%s:\\nmovl $%d, %%r11d\\njmp rt_common\\n\"\n", $1, $1, $1, NR-1}' "$OUT/reftrace.syms"
echo ');'
# Trampolines for export-table slots and for the entry points
# cuGetProcAddress hands out that are not exported: 16 bytes each (a 6-byte
# movl and a 5-byte jmp, aligned), from rt_slot_base and rt_dyn_base.
echo '__asm__(".text\n"'
echo '    ".p2align 4\nrt_slot_base:\n"'
for ((k = 0; k < SLOTS; k++)); do
    printf '    ".p2align 4\\nmovl $%d, %%r11d\\njmp rt_common\\n"\n' $((N + k))
done
echo '    ".p2align 4\nrt_dyn_base:\n"'
for ((k = 0; k < DYN; k++)); do
    printf '    ".p2align 4\\nmovl $%d, %%r11d\\njmp rt_common\\n"\n' $((N + SLOTS + k))
done
echo ');'
awk '{printf "extern char %s[];\n", $1}' "$OUT/reftrace.syms" | sed 's/^extern char \(.*\)\[\];/void \1(void);/'
echo '__attribute__((constructor(101))) static void rt_tables(void) {'
awk '{printf "    rt_tramp[%d] = (void *)%s;\n", NR-1, $1}' "$OUT/reftrace.syms"
echo '}'
} > "$OUT/reftrace.c"
gcc -O1 -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$OUT/libcuda.so.1" "$OUT/reftrace.c" -ldl -lpthread
echo "reftrace: $OUT/libcuda.so.1 forwards $N functions of $REAL" >&2
