// Waker: a stand-in for a daemon's sleep/wake traffic, to tell what the
// wake-ups of idle vCPUs cost a spinning thread elsewhere on a virtual
// machine (run it beside hiccup, on other CPUs). THREADS threads pass a
// token around a ring; the holder works WORK_US (spinning), waits GAP_US,
// then hands the token on. mode "sleep": the wait is a nanosleep and the
// hand-off a semaphore the next thread sleeps on (each a wake-up, as a Go
// daemon's timers and goroutine hand-offs are); mode "spin": the same
// rhythm with both spun (the CPUs busy instead of halted, as CUDA's
// synchronize spins natively). Prints the hand-offs per second.
//
//   gcc -O2 -pthread -o waker bench/hiccup/waker.c
//   ./waker sleep|spin SECONDS [THREADS=4 WORK_US=20 GAP_US=300 LAST_CPU=13]
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXT 64
static int spin, nthreads, last_cpu;
static long work_ns, gap_ns, end_ns;
static sem_t sem[MAXT];
static atomic_int turn;
static atomic_long handoffs;

static long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
static void spin_for(long ns) { long until = now() + ns; while (now() < until) {} }

static void *run(void *p) {
	int i = (int)(long)p, next = (i + 1) % nthreads;
	cpu_set_t c; CPU_ZERO(&c);
	for (int k = 0; k <= last_cpu; k++) CPU_SET(k, &c);
	pthread_setaffinity_np(pthread_self(), sizeof c, &c);
	for (;;) {
		if (spin) { while (atomic_load(&turn) != i) { if (now() > end_ns) return 0; } }
		else { sem_wait(&sem[i]); }
		if (now() > end_ns) { if (!spin) sem_post(&sem[next]); return 0; }
		spin_for(work_ns);
		if (spin) spin_for(gap_ns);
		else { struct timespec d = {0, gap_ns}; nanosleep(&d, 0); }
		atomic_fetch_add(&handoffs, 1);
		if (spin) atomic_store(&turn, next); else sem_post(&sem[next]);
	}
}

int main(int argc, char **argv) {
	if (argc < 3 || (strcmp(argv[1], "sleep") && strcmp(argv[1], "spin"))) {
		fprintf(stderr, "usage: waker sleep|spin SECONDS [THREADS WORK_US GAP_US LAST_CPU]\n");
		return 2;
	}
	spin = !strcmp(argv[1], "spin");
	double secs = atof(argv[2]);
	nthreads = argc > 3 ? atoi(argv[3]) : 4;
	work_ns = (argc > 4 ? atol(argv[4]) : 20) * 1000;
	gap_ns = (argc > 5 ? atol(argv[5]) : 300) * 1000;
	last_cpu = argc > 6 ? atoi(argv[6]) : 13;
	if (nthreads < 2 || nthreads > MAXT || gap_ns >= 1000000000L || last_cpu < 0) { fprintf(stderr, "waker: bad arguments\n"); return 2; }
	end_ns = now() + (long)(secs * 1e9);
	pthread_t th[MAXT];
	for (int i = 0; i < nthreads; i++) sem_init(&sem[i], 0, i == 0);
	for (int i = 0; i < nthreads; i++) pthread_create(&th[i], 0, run, (void *)(long)i);
	for (int i = 0; i < nthreads; i++) pthread_join(th[i], 0);
	printf("waker %s: %d threads, %.0f hand-offs/s\n", argv[1], nthreads, atomic_load(&handoffs) / secs);
	return 0;
}
