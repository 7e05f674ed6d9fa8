// Slow-episode probe: what kind of work slows when the host slows. One thread
// pinned to a CPU runs, over and over, four short pieces of work of fixed size
// and times each:
//
//   alu  a chain of dependent integer multiplies (registers only: the core's speed)
//   l2   a pointer chase through 256 KiB (cache hits: the core and its caches)
//   mem  a pointer chase through 256 MiB (each hop a miss to memory: memory latency)
//   sys  getppid system calls (the kernel's entry and exit)
//
// Per millisecond of CLOCK_REALTIME (the service's trace clock) it writes
// each kind's fastest and median time in ns, as CSV on stdout:
//
//   ms,alu_min,alu_med,l2_min,l2_med,mem_min,mem_med,sys_min,sys_med
//
// so that the service's slow episodes (schedbench's trace) can be lined up
// with which kinds slowed: all four (the vCPU got less of a core) or only mem
// (memory contention from a neighbour). The fastest of a millisecond ignores
// interrupts and preemptions; a whole millisecond slower is the host.
//
//   gcc -O2 -o slowprobe bench/hiccup/slowprobe.c && ./slowprobe SECONDS CPU > probe.csv
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { KINDS = 4, PER_MS = 256 };

static int64_t now_real(void) {
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// ring builds a random cycle through n slots of a cache line each, so that a
// chase's next address is unknown until the load returns.
static uint64_t *ring(size_t n) {
	uint64_t *a = aligned_alloc(64, n * 64);
	size_t *order = malloc(n * sizeof *order);
	if (!a || !order) {
		perror("alloc");
		exit(1);
	}
	for (size_t i = 0; i < n; i++) order[i] = i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)rand() % (i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (size_t i = 0; i < n; i++) a[order[i] * 8] = order[(i + 1) % n] * 8;
	free(order);
	return a;
}

static uint64_t chase(const uint64_t *a, uint64_t at, int hops) {
	for (int i = 0; i < hops; i++) at = a[at];
	return at;
}

static uint64_t alu(uint64_t x, int n) {
	for (int i = 0; i < n; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

static int cmp64(const void *a, const void *b) {
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: slowprobe SECONDS CPU\n");
		return 2;
	}
	double secs = atof(argv[1]);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(atoi(argv[2]), &set);
	if (sched_setaffinity(0, sizeof set, &set)) {
		perror("sched_setaffinity");
		return 1;
	}
	size_t l2n = (256 << 10) / 64, memn = (256u << 20) / 64;
	uint64_t *l2 = ring(l2n), *mem = ring(memn), sink = 0, l2at = 0, memat = 0;
	int64_t samples[KINDS][PER_MS];
	int count = 0;
	int64_t end = now_real() + (int64_t)(secs * 1e9), bin = now_real() / 1000000;
	printf("ms,alu_min,alu_med,l2_min,l2_med,mem_min,mem_med,sys_min,sys_med\n");
	for (;;) {
		int64_t t[KINDS + 1];
		t[0] = now_real();
		sink += alu(sink, 4000);
		t[1] = now_real();
		l2at = chase(l2, l2at, 1000);
		t[2] = now_real();
		memat = chase(mem, memat, 40);
		t[3] = now_real();
		for (int i = 0; i < 10; i++) sink += (uint64_t)syscall(SYS_getppid);
		t[4] = now_real();
		int64_t b = t[0] / 1000000;
		if (b != bin || count == PER_MS) {
			if (count > 0) {
				printf("%lld", (long long)bin);
				for (int k = 0; k < KINDS; k++) {
					qsort(samples[k], count, sizeof samples[k][0], cmp64);
					printf(",%lld,%lld", (long long)samples[k][0], (long long)samples[k][count / 2]);
				}
				printf("\n");
			}
			bin = b;
			count = 0;
			if (t[0] > end) break;
		}
		for (int k = 0; k < KINDS; k++) samples[k][count] = t[k + 1] - t[k];
		count++;
	}
	fprintf(stderr, "slowprobe: done (%llu)\n", (unsigned long long)(sink + l2at + memat));
	return 0;
}
