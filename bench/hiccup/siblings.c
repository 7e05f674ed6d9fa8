// Sibling probe: does a busy vCPU slow another one? The guest shows one thread
// per core and cannot see how the host places its vCPUs, so this measures it.
// A thread pinned to CPU i times a fixed piece of register work (four
// independent multiply chains, enough to fill a core's multipliers, so a busy
// hyperthread sibling would take a share of them); per window it keeps the
// fastest piece, which no interrupt or preemption can slow. For every pair
// (i, j) it compares that fastest time with a spinner running the same work on
// CPU j against the same with every other CPU idle, measured just before.
//
// Lines on stdout:
//
//   pair I J RATIO      fastest with CPU J busy / fastest with it idle
//   busy K RATIO        CPU 0's fastest with CPUs 1..K busy / with none
//   sibling I J RATIO   pairs over the threshold (RATIO > 1.15 both ways)
//   summary cpus=N pairs=P median=M max=X siblings=S
//
//   gcc -O2 -pthread -o siblings bench/hiccup/siblings.c && ./siblings [WINDOW_MS]
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { MAX_CPUS = 256, PIECE = 4096 };

static int64_t now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void pin(int cpu) {
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
		fprintf(stderr, "siblings: cannot pin to CPU %d\n", cpu);
		exit(1);
	}
}

// work runs PIECE rounds of four independent multiply chains; the volatile
// sink keeps the compiler from folding it away.
static volatile uint64_t sink;
static void work(void) {
	uint64_t a = 1, b = 2, c = 3, d = 4;
	for (int k = 0; k < PIECE; k++) {
		a = a * 6364136223846793005u + 1;
		b = b * 6364136223846793005u + 3;
		c = c * 6364136223846793005u + 5;
		d = d * 6364136223846793005u + 7;
	}
	sink = a ^ b ^ c ^ d;
}

static int ncpu;
static int64_t window_ns;
static _Atomic int busy[MAX_CPUS]; // 1: the spinner on that CPU works
static _Atomic int stop;

static void *spinner(void *arg) {
	int cpu = (int)(intptr_t)arg;
	pin(cpu);
	while (!atomic_load(&stop)) {
		if (atomic_load_explicit(&busy[cpu], memory_order_relaxed))
			work();
		else
			usleep(200); // idle: let the vCPU halt
	}
	return NULL;
}

// fastest times the piece on the calling thread's CPU for one window and
// returns its fastest run in ns.
static int64_t fastest(void) {
	int64_t best = INT64_MAX, end = now_ns() + window_ns;
	for (;;) {
		int64_t t0 = now_ns();
		work();
		int64_t t = now_ns() - t0;
		if (t < best)
			best = t;
		if (t0 + t >= end)
			return best;
	}
}

static void set_busy(int cpu, int on) {
	atomic_store(&busy[cpu], on);
	usleep(2000); // let the spinner wake (or halt)
}

static int cmp(const void *x, const void *y) {
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

int main(int argc, char **argv) {
	window_ns = (argc > 1 ? atoll(argv[1]) : 40) * 1000000LL;
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu > MAX_CPUS)
		ncpu = MAX_CPUS;
	pthread_t th[MAX_CPUS];
	for (int c = 0; c < ncpu; c++)
		pthread_create(&th[c], NULL, spinner, (void *)(intptr_t)c);
	static double ratio[MAX_CPUS][MAX_CPUS];
	static double all[MAX_CPUS * MAX_CPUS];
	int n = 0;
	for (int i = 0; i < ncpu; i++) {
		pin(i);
		for (int j = 0; j < ncpu; j++) {
			if (j == i)
				continue;
			int64_t idle = fastest();
			set_busy(j, 1);
			int64_t loaded = fastest();
			set_busy(j, 0);
			ratio[i][j] = (double)loaded / (double)idle;
			all[n++] = ratio[i][j];
			printf("pair %d %d %.3f\n", i, j, ratio[i][j]);
			fflush(stdout);
		}
	}
	pin(0);
	int64_t none = fastest();
	for (int k = 1; k < ncpu; k++) {
		set_busy(k, 1);
		printf("busy %d %.3f\n", k, (double)fastest() / (double)none);
		fflush(stdout);
	}
	for (int k = 1; k < ncpu; k++)
		set_busy(k, 0);
	int siblings = 0;
	for (int i = 0; i < ncpu; i++)
		for (int j = i + 1; j < ncpu; j++)
			if (ratio[i][j] > 1.15 && ratio[j][i] > 1.15) {
				printf("sibling %d %d %.3f %.3f\n", i, j, ratio[i][j], ratio[j][i]);
				siblings++;
			}
	qsort(all, n, sizeof all[0], cmp);
	printf("summary cpus=%d pairs=%d median=%.3f max=%.3f siblings=%d\n", ncpu, n, n ? all[n / 2] : 0, n ? all[n - 1] : 0, siblings);
	atomic_store(&stop, 1);
	for (int c = 0; c < ncpu; c++)
		pthread_join(th[c], NULL);
	return 0;
}
