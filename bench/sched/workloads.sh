# The scheduling benchmark's workloads, one definition for run.sh, ab.sh and
# cpuprobe.sh, which source it from the repository root with SMS (the GPU's
# SM count) and BIN (where the Go programs are) set.

PTX=$PWD/testdata/kernels/bench.ptx
# The service: one block of 32 threads spinning 20 us, every 1 ms.
HP=(--blocks 1 --threads 32 --ns 20000)
HP_PERIOD_US=1000
# Best effort: 20 waves of 128-thread blocks (16 per SM fill it) spinning
# 50 us each: a ~1 ms kernel whose blocks end at staggered times.
BE=(--blocks $((SMS * 16 * 20)) --threads 128 --ns 50000 --depth 4)
# Shares: kernels that fill the GPU (2 blocks of 1024 threads per SM), one
# wave spinning 200 us (tenant a) or 2 ms (tenant b).
SHARES=(--blocks $((SMS * 2)) --threads 1024 --ns-short 200000 --ns-long 2000000 --depth 4)

for f in "$BIN/gpuos" "$BIN/schedbench"; do
	if [[ ! -x $f ]]; then
		echo "missing $f: where Go is, run bench/sched/build.sh and carry .carry/bench-sched/ here" >&2
		exit 2
	fi
done
