// Yield probe: what a poller that calls sched_yield between looks loses
// beside a CPU hog of low weight on its CPU (issue 6, session 22). A poller
// thread and, unless MODE is "none", a hog thread are pinned to CPU 0; the
// hog spins as SCHED_IDLE ("idle") or at nice 19 ("nice"); the poller loops
// for a second, yielding between looks ("yield") or not ("spin"), and
// counts the gaps over 250 us between its looks.
//
//   gcc -O2 -pthread -o yieldprobe bench/hiccup/yieldprobe.c
//   ./yieldprobe none|idle|nice yield|spin
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static long now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static int pin0(void) {
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static const char *mode;

static void *hog(void *arg) {
	(void)arg;
	if (pin0())
		fprintf(stderr, "yieldprobe: hog not pinned\n");
	if (!strcmp(mode, "idle")) {
		struct sched_param p = {0};
		if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &p))
			fprintf(stderr, "yieldprobe: no SCHED_IDLE\n");
	} else if (setpriority(PRIO_PROCESS, 0, 19)) { // this thread only, on Linux
		fprintf(stderr, "yieldprobe: no nice 19\n");
	}
	for (;;) {
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 3 || (strcmp(argv[1], "none") && strcmp(argv[1], "idle") && strcmp(argv[1], "nice")) ||
	    (strcmp(argv[2], "yield") && strcmp(argv[2], "spin"))) {
		fprintf(stderr, "usage: yieldprobe none|idle|nice yield|spin\n");
		return 2;
	}
	mode = argv[1];
	int yield = !strcmp(argv[2], "yield");
	pthread_t t;
	if (strcmp(mode, "none") && pthread_create(&t, NULL, hog, NULL)) {
		perror("yieldprobe: pthread_create");
		return 1;
	}
	if (pin0())
		fprintf(stderr, "yieldprobe: poller not pinned\n");
	struct timespec settle = {0, 20000000};
	nanosleep(&settle, NULL);
	long looks = 0, gaps = 0, lost = 0, longest = 0, end = now() + 1000000000L, prev = now();
	for (long t0; (t0 = now()) < end; prev = t0) {
		long g = t0 - prev;
		looks++;
		if (g > 250000) {
			gaps++;
			lost += g;
		}
		if (g > longest)
			longest = g;
		if (yield)
			sched_yield();
	}
	printf("yieldprobe %s %s: %ld looks in 1 s, %ld gaps over 250 us, %.1f ms lost in them, the longest %ld us\n",
	       mode, argv[2], looks, gaps, lost / 1e6, longest / 1000);
	return 0;
}
