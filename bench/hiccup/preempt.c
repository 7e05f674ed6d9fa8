// Preemption emulator: takes CPUs away now and then, as the hypervisor of a
// noisy host does, so that what such hosts do to the service's tail can be
// reproduced on a quiet one (issue 6, session 23). One thread per CPU in
// [FIRST, LAST], pinned, under SCHED_FIFO (it preempts every ordinary
// thread), sleeps an exponentially distributed time of mean GAP_MS, then
// spins LENGTH_US, for SECONDS. Whatever ran on that CPU stops meanwhile,
// holding whatever locks it held, as a descheduled vCPU does (unlike the
// hypervisor's, these preemptions are the guest's own: its scheduler sees
// them and may move a waiting thread elsewhere). SCHED_FIFO needs
// CAP_SYS_NICE; without it the threads run at normal priority and share
// the CPU with what runs there for each burst instead of taking it (the
// kernel's wake-up preemption lets them in within its slice). Prints how
// many bursts each CPU had and the share of its time they spun.
//
//   gcc -O2 -pthread -o preempt bench/hiccup/preempt.c -lm
//   ./preempt SECONDS GAP_MS LENGTH_US [FIRST=0 [LAST=nproc-1]]
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double secs, gap_ms, length_us;
static int normal; // SCHED_FIFO was refused: the threads run at normal priority

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

struct cpu {
	long cpu;
	long count;
	double taken; // seconds spun
	int ok;
};

static void *run(void *arg) {
	struct cpu *c = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(c->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof set, &set)) {
		fprintf(stderr, "preempt: affinity to CPU %ld failed\n", c->cpu);
		return NULL;
	}
	struct sched_param p = {.sched_priority = 1};
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &p))
		__atomic_store_n(&normal, 1, __ATOMIC_RELAXED);
	c->ok = 1;
	unsigned int seed = (unsigned int)(c->cpu * 7919 + 1);
	double end = now() + secs;
	for (;;) {
		double u = (rand_r(&seed) + 1.0) / ((double)RAND_MAX + 2.0);
		double sleep = -log(u) * gap_ms / 1e3;
		if (now() + sleep >= end)
			break;
		struct timespec ts = {.tv_sec = (time_t)sleep, .tv_nsec = (long)((sleep - (time_t)sleep) * 1e9)};
		nanosleep(&ts, NULL);
		double t0 = now(), t1 = t0;
		while ((t1 = now()) - t0 < length_us / 1e6)
			;
		c->count++;
		c->taken += t1 - t0;
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: preempt SECONDS GAP_MS LENGTH_US [FIRST [LAST]]\n");
		return 2;
	}
	secs = atof(argv[1]);
	gap_ms = atof(argv[2]);
	length_us = atof(argv[3]);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	long first = argc > 4 ? atol(argv[4]) : 0;
	long last = argc > 5 ? atol(argv[5]) : n - 1;
	if (secs <= 0 || gap_ms <= 0 || length_us <= 0 || first < 0 || last < first || last >= n) {
		fprintf(stderr, "preempt: bad arguments\n");
		return 2;
	}
	long k = last - first + 1;
	pthread_t *th = calloc(k, sizeof *th);
	struct cpu *cs = calloc(k, sizeof *cs);
	for (long i = 0; i < k; i++) {
		cs[i].cpu = first + i;
		pthread_create(&th[i], NULL, run, &cs[i]);
	}
	int failed = 0;
	for (long i = 0; i < k; i++) {
		pthread_join(th[i], NULL);
		if (!cs[i].ok) {
			failed = 1;
			continue;
		}
		printf("cpu%ld preemptions %ld taken %.1f ms (%.2f%%)\n", cs[i].cpu, cs[i].count, cs[i].taken * 1e3,
		       100 * cs[i].taken / secs);
	}
	if (normal)
		printf("SCHED_FIFO refused (needs CAP_SYS_NICE): the bursts ran at normal priority\n");
	return failed;
}
