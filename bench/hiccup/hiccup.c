// Hiccup probe: one thread pinned per CPU spins on CLOCK_MONOTONIC and records
// every gap over 20 us (the thread was not running: guest preemption, an
// interrupt, or the hypervisor taking the vCPU). Prints per-CPU counts, every
// gap over 300 us with its time (so coincident gaps across CPUs show), and a
// last "summary" line for bench/sched's report. Run it on an otherwise idle
// machine: it keeps every CPU busy.
//
//   gcc -O2 -pthread -o hiccup bench/hiccup/hiccup.c && ./hiccup SECONDS [FIRST_CPU]
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#define MAXG 20000
typedef struct { int cpu; long n20, n100, n1000, max; long total; int ng; long at[MAXG], len[MAXG]; } St;
static double secs; static long t0;
static long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
static void *run(void *p) {
  St *s = p; cpu_set_t c; CPU_ZERO(&c); CPU_SET(s->cpu, &c);
  if (pthread_setaffinity_np(pthread_self(), sizeof c, &c)) { fprintf(stderr, "affinity %d failed\n", s->cpu); return 0; }
  long end = now() + (long)(secs * 1e9), prev = now();
  for (;;) {
    long t = now(), g = t - prev; prev = t;
    if (t > end) break;
    if (g > 20000) {
      s->n20++; s->total += g; if (g > 100000) s->n100++; if (g > 1000000) s->n1000++; if (g > s->max) s->max = g;
      if (g > 300000 && s->ng < MAXG) { s->at[s->ng] = t - g - t0; s->len[s->ng] = g; s->ng++; }
    }
  }
  return 0;
}
static void steal(long *v, int n) {
  FILE *f = fopen("/proc/stat", "r"); char line[512];
  while (f && fgets(line, sizeof line, f)) { int c; long u, ni, sy, id, io, irq, sirq, st;
    if (sscanf(line, "cpu%d %ld %ld %ld %ld %ld %ld %ld %ld", &c, &u, &ni, &sy, &id, &io, &irq, &sirq, &st) == 9 && c < n) v[c] = st; }
  if (f) fclose(f);
}
int main(int argc, char **argv) {
  secs = argc > 1 ? atof(argv[1]) : 10; int n = sysconf(_SC_NPROCESSORS_ONLN); if (n > 256) n = 256; int first = argc > 2 ? atoi(argv[2]) : 0; if (first < 0 || first >= n) first = 0;
  St *s = calloc(n, sizeof(St)); pthread_t th[256]; long st0[256] = {0}, st1[256] = {0};
  steal(st0, n); t0 = now();
  for (int i = first; i < n; i++) { s[i].cpu = i; pthread_create(&th[i], 0, run, &s[i]); }
  for (int i = first; i < n; i++) pthread_join(th[i], 0);
  steal(st1, n); long hz = sysconf(_SC_CLK_TCK);
  printf("cpu  gaps>20us >100us >1ms  max_us  lost_ms  steal_ms(/proc/stat)\n");
  for (int i = first; i < n; i++) printf("%3d %9ld %6ld %5ld %7.0f %8.2f %8ld\n", i, s[i].n20, s[i].n100, s[i].n1000, s[i].max / 1e3, s[i].total / 1e6, (st1[i] - st0[i]) * 1000 / hz);
  printf("gaps over 300 us (ms since start: cpu length_us):\n");
  for (int i = first; i < n; i++) for (int k = 0; k < s[i].ng; k++) printf("%9.3f cpu%-3d %7.0f\n", s[i].at[k] / 1e6, i, s[i].len[k] / 1e3);
  long g1 = 0, lost = 0, mx = 0;
  for (int i = first; i < n; i++) { g1 += s[i].n1000; lost += s[i].total; if (s[i].max > mx) mx = s[i].max; }
  printf("summary cpus=%d seconds=%g gaps_over_1ms=%ld lost_ms=%.1f max_us=%.0f\n", n - first, secs, g1, lost / 1e6, mx / 1e3);
  return 0;
}
