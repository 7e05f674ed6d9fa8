// Native baseline of bench/sched: the high-priority service and the
// best-effort load of schedbench, straight on CUDA, one process each (no
// gpuos, no MPS: the GPU time-slices between the processes' contexts).
// Prints one JSON line in schedbench's format.
//
//   native hp --period-us 1000 --ns 20000 --blocks 1 --threads 32 --duration-s 10 --warmup-s 1
//   native be --ns 50000 --blocks 42240 --threads 128 --depth 4 --duration-s 10 --warmup-s 1
//   (--start-at UNIX_SECONDS instead of --warmup-s: measure from then, so
//   that concurrent processes measure the same window)
//   (--phase-ms P [--settle-ms S]: an interleaved run, as schedbench's
//   --phase: the window alternates phases of P ms, alone first, then loaded;
//   be saturates only in loaded phases, hp reports both, leaving out its
//   requests in the first S ms (default 25) of an alone phase)
//   (hp --trace FILE: each measured request's launch and return, Unix ns, in
//   schedbench's trace format with no GPU times)
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>
#include <algorithm>

#include "../../testdata/kernels/bench.cu"

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)

static double now_s(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long long unix_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct latency { size_t n; double p50, p90, p99, max, mean; };

static latency summarize(std::vector<double> &lat) {
	std::sort(lat.begin(), lat.end());
	double sum = 0;
	for (double x : lat) sum += x;
	size_t n = lat.size();
	if (n == 0) return latency{0, 0, 0, 0, 0, 0};
	return latency{n, lat[n / 2], lat[n * 90 / 100], lat[n * 99 / 100], lat[n - 1], sum / n};
}

static double flag(int argc, char **argv, const char *name, double def) {
	for (int i = 2; i + 1 < argc; i++)
		if (!strcmp(argv[i], name)) return atof(argv[i + 1]);
	return def;
}

static const char *sflag(int argc, char **argv, const char *name, const char *def) {
	for (int i = 2; i + 1 < argc; i++)
		if (!strcmp(argv[i], name)) return argv[i + 1];
	return def;
}

int main(int argc, char **argv) {
	if (argc < 2 || (strcmp(argv[1], "hp") && strcmp(argv[1], "be"))) {
		fprintf(stderr, "usage: native hp|be [--ns N] [--blocks N] [--threads N] [--period-us N] [--depth N] [--duration-s N] [--warmup-s N] [--label L]\n");
		return 2;
	}
	bool hp = !strcmp(argv[1], "hp");
	unsigned long long ns = (unsigned long long)flag(argc, argv, "--ns", 20000);
	int blocks = (int)flag(argc, argv, "--blocks", 1), threads = (int)flag(argc, argv, "--threads", 32);
	int depth = (int)flag(argc, argv, "--depth", 4);
	double period = flag(argc, argv, "--period-us", 1000) * 1e-6;
	double duration = flag(argc, argv, "--duration-s", 10), warmup = flag(argc, argv, "--warmup-s", 1);
	const char *label = sflag(argc, argv, "--label", "");
	double phase = flag(argc, argv, "--phase-ms", 0) * 1e-3, settle = flag(argc, argv, "--settle-ms", 25) * 1e-3;
	if (phase < 0 || settle < 0 || (phase > 0 && settle >= phase)) {
		fprintf(stderr, "--phase-ms, --settle-ms: want 0 <= settle < phase\n");
		return 2;
	}
	double start_at = flag(argc, argv, "--start-at", 0); // unix seconds: measure from then (same window in every process)
	const char *trace = sflag(argc, argv, "--trace", NULL);

	unsigned *done;
	CHECK(cudaMalloc(&done, 4096));
	int least, greatest;
	CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
	cudaStream_t st;
	CHECK(cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, hp ? greatest : least));
	spin<<<1, 32, 0, st>>>(1000, done); // load the module, warm the context
	CHECK(cudaStreamSynchronize(st));
	if (start_at > 0) {
		struct timespec rt;
		clock_gettime(CLOCK_REALTIME, &rt);
		warmup = std::max(0.0, start_at - (rt.tv_sec + rt.tv_nsec * 1e-9));
	}

	if (hp) {
		std::vector<double> lat, alone; // alone: the alone phases of an interleaved run
		std::vector<long long> stamps;  // --trace: launch, returned (Unix ns)
		std::vector<std::vector<double>> phases; // interleaved: the counted latencies by phase, as schedbench's phases_us
		double start = now_s(), next = start;
		while (now_s() - start < warmup + duration) {
			double w = next - now_s();
			if (w > 0) {
				struct timespec ts = {(time_t)w, (long)((w - (time_t)w) * 1e9)};
				nanosleep(&ts, NULL);
			}
			next += period;
			double t0 = now_s();
			spin<<<blocks, threads, 0, st>>>(ns, done);
			CHECK(cudaStreamSynchronize(st));
			double d = now_s() - t0, since = t0 - start - warmup;
			if (since < 0) continue;
			if (trace) {
				long long back = unix_ns();
				stamps.push_back(back - (long long)(d * 1e9));
				stamps.push_back(back);
			}
			if (phase <= 0) { lat.push_back(d * 1e6); continue; }
			long k = (long)(since / phase);
			if (k % 2 == 1) lat.push_back(d * 1e6);
			else if (since - k * phase >= settle) alone.push_back(d * 1e6);
			else continue;
			if ((long)phases.size() <= k) phases.resize(k + 1);
			phases[k].push_back(d * 1e6);
		}
		if (trace) {
			FILE *f = fopen(trace, "w");
			if (!f) { perror(trace); return 1; }
			fprintf(f, "launch_ns,synced_ns,gpu_start_ns,gpu_end_ns\n");
			for (size_t i = 0; i + 1 < stamps.size(); i += 2) fprintf(f, "%lld,%lld,0,0\n", stamps[i], stamps[i + 1]);
			fclose(f);
		}
		latency l = summarize(lat);
		printf("{\"mode\":\"hp\",\"stack\":\"native\",\"label\":\"%s\",\"samples\":%zu,\"p50_us\":%.3f,\"p90_us\":%.3f,\"p99_us\":%.3f,\"max_us\":%.3f,\"mean_us\":%.3f",
			label, l.n, l.p50, l.p90, l.p99, l.max, l.mean);
		if (phase > 0) {
			latency a = summarize(alone);
			printf(",\"phase_ms\":%.3f,\"alone\":{\"samples\":%zu,\"p50_us\":%.3f,\"p90_us\":%.3f,\"p99_us\":%.3f,\"max_us\":%.3f,\"mean_us\":%.3f}",
				phase * 1e3, a.n, a.p50, a.p90, a.p99, a.max, a.mean);
			printf(",\"phases_us\":[");
			for (size_t k = 0; k < phases.size(); k++) {
				printf("%s[", k ? "," : "");
				for (size_t i = 0; i < phases[k].size(); i++) printf("%s%.3f", i ? "," : "", phases[k][i]);
				printf("]");
			}
			printf("]");
		}
		printf("}\n");
		return 0;
	}
	cudaEvent_t a, b;
	CHECK(cudaEventCreate(&a));
	CHECK(cudaEventCreate(&b));
	float best = 1e30f;
	for (int i = 0; i < 3; i++) {
		CHECK(cudaEventRecord(a, st));
		spin<<<blocks, threads, 0, st>>>(ns, done);
		CHECK(cudaEventRecord(b, st));
		CHECK(cudaEventSynchronize(b));
		float ms;
		CHECK(cudaEventElapsedTime(&ms, a, b));
		best = std::min(best, ms);
	}
	// Keep the queue full: a batch of depth kernels and an event, the next
	// batch launched before waiting for the previous batch's event. In an
	// interleaved run, only through the loaded phases: no batch is launched
	// after a phase's end, what was launched is waited for, and the kernels
	// of the batches that completed inside loaded phases count, over the
	// loaded phases' time.
	double start = now_s(), measured = 0, loaded = 0;
	long n = 0;
	cudaEvent_t ev[2];
	CHECK(cudaEventCreateWithFlags(&ev[0], cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&ev[1], cudaEventDisableTiming));
	if (phase > 0) {
		double from = start + warmup, end = from + duration;
		for (long k = 1; from + k * phase < end; k += 2) {
			double on = from + k * phase, stop = std::min(on + phase, end);
			double w = on - now_s();
			if (w > 0) {
				struct timespec ts = {(time_t)w, (long)((w - (time_t)w) * 1e9)};
				nanosleep(&ts, NULL);
			}
			int b = 0;
			for (; now_s() < stop; b++) {
				for (int i = 0; i < depth; i++) spin<<<blocks, threads, 0, st>>>(ns, done);
				CHECK(cudaEventRecord(ev[b & 1], st));
				if (b == 0) continue;
				CHECK(cudaEventSynchronize(ev[(b - 1) & 1]));
				if (now_s() < stop) n += depth;
			}
			if (b > 0) {
				CHECK(cudaEventSynchronize(ev[(b - 1) & 1]));
				if (now_s() < stop) n += depth;
			}
			loaded += stop - on;
		}
		printf("{\"mode\":\"be\",\"stack\":\"native\",\"label\":\"%s\",\"kernels\":%ld,\"kernels_per_s\":%.3f,\"kernel_us\":%.3f,\"phase_ms\":%.3f}\n",
			label, n, loaded > 0 ? n / loaded : 0, best * 1e3, phase * 1e3);
		return 0;
	}
	for (int k = 0;; k++) {
		for (int i = 0; i < depth; i++) spin<<<blocks, threads, 0, st>>>(ns, done);
		CHECK(cudaEventRecord(ev[k & 1], st));
		if (k == 0) continue;
		CHECK(cudaEventSynchronize(ev[(k - 1) & 1]));
		double t = now_s();
		if (t - start < warmup) continue;
		if (measured == 0) { measured = t; continue; }
		n += depth;
		if (t - measured >= duration) {
			printf("{\"mode\":\"be\",\"stack\":\"native\",\"label\":\"%s\",\"kernels\":%ld,\"kernels_per_s\":%.3f,\"kernel_us\":%.3f}\n",
				label, n, n / (t - measured), best * 1e3);
			return 0;
		}
	}
}
