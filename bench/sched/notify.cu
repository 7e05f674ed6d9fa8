// A probe for issue 6: how soon does the host learn that a short kernel
// ended, by each way of finding out, alone and while low-priority streams of
// the same process saturate the GPU's other SMs? gpuos's high-class path
// records a timed event after the service's kernel and, at the synchronize,
// writes a fence word into mapped host memory (cuStreamWriteValue32) that
// its thread polls; the kernel's end to the fence seen grew from 19.0 to
// 27.5 µs at the p99 under load (bench/RESULTS.md, run 71). This compares,
// request by request in turn so that the host's drift falls on all:
//
//   sync   cudaStreamSynchronize
//   event  a timed event recorded after the kernel, cudaEventQuery polled
//   wv     a fence word written after the kernel, polled
//   evwv   a timed event, then the fence word (gpuos's order), polled
//   kflag  the kernel's last block writes the word itself, polled
//
// Each request: one block of 32 threads spinning NS ns (the service of
// bench/sched), every PERIOD µs; the time from before the launch to the
// host seeing the end. The load: LOAD streams of least priority, each
// keeping 4 kernels of 128-thread blocks spinning 50 µs in flight, kept
// off RESERVE SMs as gpuos keeps them for the high class: with --green 1
// the load's streams belong to a green context on the other SMs (what gpuos
// does), else the load's blocks on the first RESERVE SMs return at once.
// Prints a table per load state.
//
//   nvcc -O2 -arch=sm_90 -o notify bench/sched/notify.cu -lcuda
//   ./notify [--ns 20000] [--period-us 1000] [--seconds 5] [--rounds 4] [--load 2] [--reserve 8] [--green 1]
//
// (rounds of SECONDS alone, then SECONDS loaded; the table pools them.)
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <atomic>
#include <thread>
#include <vector>
#include <algorithm>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)
#define CHECKD(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { \
	fprintf(stderr, "%s:%d: %s: %d\n", __FILE__, __LINE__, #x, (int)r); exit(1); } } while (0)

static double now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

__device__ static unsigned long long gtime(void) {
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__device__ static unsigned smid(void) {
	unsigned id;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
	return id;
}

// The service's kernel; with flag set, its last block to end writes seq
// there (mapped host memory), after making its writes visible system-wide.
__global__ void service(unsigned long long ns, unsigned *count, volatile unsigned *flag, unsigned seq) {
	unsigned long long start = gtime();
	while (gtime() - start < ns) {
	}
	if (flag == nullptr || threadIdx.x != 0) return;
	__threadfence_system();
	if (atomicAdd(count, 1u) == gridDim.x - 1) {
		*count = 0;
		__threadfence_system();
		*flag = seq;
	}
}

__global__ void load(unsigned long long ns, unsigned reserve) {
	if (smid() < reserve) return;
	unsigned long long start = gtime();
	while (gtime() - start < ns) {
	}
}

enum { SYNC, EVENT, WV, EVWV, KFLAG, MODES };
static const char *names[MODES] = {"sync", "event", "wv", "evwv", "kflag"};

static double arg(int argc, char **argv, const char *name, double def) {
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name)) return atof(argv[i + 1]);
	return def;
}

static void report(const char *state, std::vector<double> *lat) {
	printf("%s\n  %-6s %7s %8s %8s %8s %8s\n", state, "mode", "n", "p50 us", "p90 us", "p99 us", "max us");
	for (int m = 0; m < MODES; m++) {
		std::vector<double> &v = lat[m];
		std::sort(v.begin(), v.end());
		size_t n = v.size();
		if (n == 0) continue;
		printf("  %-6s %7zu %8.1f %8.1f %8.1f %8.1f\n", names[m], n, v[n / 2], v[n * 90 / 100], v[n * 99 / 100], v[n - 1]);
	}
	fflush(stdout);
}

int main(int argc, char **argv) {
	unsigned long long ns = (unsigned long long)arg(argc, argv, "--ns", 20000);
	double period = arg(argc, argv, "--period-us", 1000), seconds = arg(argc, argv, "--seconds", 5);
	int rounds = (int)arg(argc, argv, "--rounds", 4);
	int loads = (int)arg(argc, argv, "--load", 2);
	unsigned reserve = (unsigned)arg(argc, argv, "--reserve", 8);
	bool green = arg(argc, argv, "--green", 1) != 0;

	CHECK(cudaSetDevice(0));
	int sms;
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	int least, greatest;
	CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
	cudaStream_t st;
	CHECK(cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, greatest));
	unsigned *count, *host;
	CHECK(cudaMalloc(&count, sizeof(unsigned)));
	CHECK(cudaMemset(count, 0, sizeof(unsigned)));
	CHECK(cudaHostAlloc(&host, 2 * sizeof(unsigned), cudaHostAllocMapped));
	host[0] = host[1] = 0;
	unsigned *devHost;
	CHECK(cudaHostGetDevicePointer(&devHost, host, 0));
	volatile unsigned *kflag = host, *fence = host + 1;
	cudaEvent_t ev;
	CHECK(cudaEventCreate(&ev));
	CUgreenCtx gctx = nullptr;
	if (green) {
		CUdevice dev;
		CHECKD(cuDeviceGet(&dev, 0));
		CUdevResource all, group, rest;
		memset(&all, 0, sizeof all);
		memset(&group, 0, sizeof group);
		memset(&rest, 0, sizeof rest);
		CHECKD(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
		unsigned groups = 1;
		CHECKD(cuDevSmResourceSplitByCount(&group, &groups, &all, &rest, 0, reserve));
		CUdevResourceDesc desc;
		CHECKD(cuDevResourceGenerateDesc(&desc, &rest, 1));
		CHECKD(cuGreenCtxCreate(&gctx, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
		printf("load on a green context of %u SMs (%u kept)\n", rest.sm.smCount, all.sm.smCount - rest.sm.smCount);
	}

	std::vector<double> lat[2][MODES];
	unsigned seq = 0;
	for (int phase = 0; phase < 2 * rounds; phase++) {
		int loaded = phase % 2;
		std::atomic<bool> stop{false};
		std::vector<std::thread> workers;
		for (int i = 0; loaded && i < loads; i++)
			workers.emplace_back([&, i] {
				(void)i;
				CHECK(cudaSetDevice(0));
				cudaStream_t ls;
				if (gctx)
					CHECKD(cuGreenCtxStreamCreate((CUstream *)&ls, gctx, CU_STREAM_NON_BLOCKING, least));
				else
					CHECK(cudaStreamCreateWithPriority(&ls, cudaStreamNonBlocking, least));
				cudaEvent_t evs[4];
				for (auto &x : evs) CHECK(cudaEventCreate(&x));
				unsigned long k = 0;
				while (!stop.load()) {
					if (k >= 4) CHECK(cudaEventSynchronize(evs[k % 4]));
					load<<<sms * 16 * 20, 128, 0, ls>>>(50000, gctx ? 0 : reserve);
					CHECK(cudaEventRecord(evs[k % 4], ls));
					k++;
				}
				CHECK(cudaStreamSynchronize(ls));
			});
		if (loaded) usleep(200000);
		double end = now_us() + seconds * 1e6, next = now_us();
		for (long r = 0; now_us() < end; r++) {
			while (now_us() < next) {
			}
			next += period;
			int m = r % MODES;
			seq++;
			double t0 = now_us();
			service<<<1, 32, 0, st>>>(ns, count, m == KFLAG ? devHost : nullptr, seq);
			switch (m) {
			case SYNC:
				CHECK(cudaStreamSynchronize(st));
				break;
			case EVENT:
				CHECK(cudaEventRecord(ev, st));
				while (cudaEventQuery(ev) == cudaErrorNotReady) {
				}
				break;
			case EVWV:
				CHECK(cudaEventRecord(ev, st));
				// fall through
			case WV:
				CHECKD(cuStreamWriteValue32((CUstream)st, (CUdeviceptr)(devHost + 1), seq, 0));
				while (*fence != seq) {
				}
				break;
			case KFLAG:
				while (*kflag != seq) {
				}
				break;
			}
			double t1 = now_us();
			if (r >= MODES * 50) lat[loaded][m].push_back(t1 - t0); // past the settling
		}
		CHECK(cudaStreamSynchronize(st));
		stop.store(true);
		for (auto &w : workers) w.join();
	}
	char state[64];
	snprintf(state, sizeof state, "loaded (%d streams)", loads);
	report("alone", lat[0]);
	report(state, lat[1]);
	return 0;
}
