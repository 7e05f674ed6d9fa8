// Idle spinner: keeps CPUs out of their idle halt without taking time from
// anything else. One thread per CPU in [FIRST, LAST], pinned, under
// SCHED_IDLE (it runs only when nothing else wants the CPU, and a waking
// thread preempts it at once), spins for SECONDS. On a virtual machine whose
// idle vCPUs halt (no cpuidle driver, bench/RESULTS.md session 21) every
// wake-up of a halted vCPU is the hypervisor's to schedule; with this beside
// a benchmark, none are halted: it tells what the halts cost the benchmark
// (issue 6, session 22). Prints the CPU time it got.
//
//   gcc -O2 -pthread -o idlespin bench/hiccup/idlespin.c
//   ./idlespin SECONDS [FIRST=0 [LAST=nproc-1]]
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double secs;

static double now(clockid_t c) {
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void *spin(void *arg) {
	long cpu = (long)arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof set, &set)) {
		fprintf(stderr, "idlespin: affinity to CPU %ld failed\n", cpu);
		return NULL;
	}
	struct sched_param p = {0};
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &p)) {
		fprintf(stderr, "idlespin: SCHED_IDLE on CPU %ld failed\n", cpu);
		return NULL;
	}
	double end = now(CLOCK_MONOTONIC) + secs;
	while (now(CLOCK_MONOTONIC) < end) {
	}
	double *ran = malloc(sizeof *ran);
	*ran = now(CLOCK_THREAD_CPUTIME_ID);
	return ran;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: idlespin SECONDS [FIRST [LAST]]\n");
		return 2;
	}
	secs = atof(argv[1]);
	long first = argc > 2 ? atol(argv[2]) : 0;
	long last = argc > 3 ? atol(argv[3]) : sysconf(_SC_NPROCESSORS_ONLN) - 1;
	if (first < 0 || last < first || last - first >= 1024) {
		fprintf(stderr, "idlespin: bad CPU range %ld-%ld\n", first, last);
		return 2;
	}
	pthread_t t[1024];
	for (long c = first; c <= last; c++)
		if (pthread_create(&t[c - first], NULL, spin, (void *)c)) {
			perror("idlespin: pthread_create");
			return 1;
		}
	double total = 0;
	for (long c = first; c <= last; c++) {
		double *ran;
		pthread_join(t[c - first], (void **)&ran);
		if (ran) {
			total += *ran;
			free(ran);
		}
	}
	printf("idlespin: CPUs %ld-%ld, %.1f s, got %.1f CPU-seconds (%.2f CPUs)\n", first, last, secs, total,
	       total / secs);
	return 0;
}
