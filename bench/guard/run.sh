#!/usr/bin/env bash
# Guard overhead on the GPU, guarded vs unguarded in the same run, plus the
# attack corpus on the real device.
#
#   bench/guard/run.sh [REPS]          (from the repository root, on the GPU machine)
#
# Needs nvcc and a GPU; no Go: .carry/guardtool is built beforehand where Go is
# (go build -o .carry/guardtool ./internal/guard/cmd/guardtool). Environment:
#   OUT=DIR        where to put everything (default /tmp/gpuos-guard-bench)
#   ARCH=sm_90     the PTX target for nvcc
#   BENCH_ONLY=... run only the kernels whose names appear in it (e.g. "copy_f4 fma_loop")
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpuos-guard-bench}
ARCH=${ARCH:-sm_90}
GT=$PWD/.carry/guardtool
mkdir -p "$OUT/attacks"
if [[ ! -x $GT ]]; then
	echo "missing $GT: on a machine with Go, run: go build -o .carry/guardtool ./internal/guard/cmd/guardtool" >&2
	exit 2
fi
command -v nvcc >/dev/null || { echo "nvcc not found (add /usr/local/cuda/bin to PATH)" >&2; exit 2; }

echo "== 1. CUDA C -> PTX (nvcc -arch=$ARCH -O3), then guard it"
nvcc -ptx -arch="$ARCH" -O3 bench/guard/kernels.cu -o "$OUT/kernels.ptx"
"$GT" guard "$OUT/kernels.ptx" "$OUT/kernels.guarded.ptx" | tee "$OUT/guard-stats.json"
nvcc -O2 -o "$OUT/bench" bench/guard/bench.c -lcuda
nvcc -O2 -o "$OUT/ptxload" bench/guard/ptxload.c -lcuda

echo
echo "== 2. ptxas on both (registers and spills per kernel)"
ptxas -arch="$ARCH" -O3 -v "$OUT/kernels.ptx" -o /dev/null 2>&1 | grep -E "Compiling|Used|spill" > "$OUT/ptxas.plain.txt" || true
ptxas -arch="$ARCH" -O3 -v "$OUT/kernels.guarded.ptx" -o /dev/null 2>&1 | grep -E "Compiling|Used|spill" > "$OUT/ptxas.guarded.txt" || true
echo "(full listings: $OUT/ptxas.plain.txt, $OUT/ptxas.guarded.txt)"

echo
echo "== 3. timing: median of ${1:-31} batches of 10 launches each, variants alternating, same process"
# A kernel whose launch fails is reported and the rest still run (bench.c);
# a nonzero status here still lets the attacks run, and is returned at the end.
status=0
"$OUT/bench" "$OUT/kernels.ptx" "$OUT/kernels.guarded.ptx" "${1:-31}" | tee "$OUT/bench.txt" || status=$?

echo
echo "== 4. attacks, guarded, on the real device (a victim buffer outside the window)"
for f in testdata/guard/attacks/*.ptx; do
	"$GT" guard "$f" "$OUT/attacks/$(basename "$f" .ptx).guarded.ptx" >/dev/null
	# The header's launch line (grid=N block=N [shared=N]) for bench: "grid block shared".
	sed -n 's|^// launch:||p' "$f" | awk '{g=1; b=1; s=0; for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "grid") g = kv[2]; if (kv[1] == "block") b = kv[2]; if (kv[1] == "shared") s = kv[2] } print g, b, s }' \
		> "$OUT/attacks/$(basename "$f" .ptx).launch"
done
"$OUT/bench" --attacks "$OUT"/attacks/*.guarded.ptx | tee "$OUT/attacks.txt" || status=$?
echo
echo "== summary"
grep -E "^(memory-bound|compute-bound|median|sorted|launch failed|outputs)" "$OUT/bench.txt" || true
grep -E "^(context alive|all attacks|SOME)" "$OUT/attacks.txt" || true
echo "results in $OUT: bench.txt, attacks.txt, guard-stats.json, ptxas.*.txt (exit status $status)"
exit $status
