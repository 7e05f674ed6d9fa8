#!/usr/bin/env bash
# Real-world PTX through the guard: parse + guard + load, with success rates.
# Goal: 100% parse, >= 95% guarded; every guarded module whose original loads
# must load too (ptxas accepts the guard's output).
#
#   bench/guard/corpus.sh             (from the repository root, on the GPU machine)
#
# Sources: PTX inside PyTorch's, CuPy's and the pip-installed NVIDIA libraries'
# shared objects (cuobjdump -xptx), and PTX that Triton and NVRTC (CuPy)
# generate for a few kernels (realworld_ptx.py). Environment:
#   OUT=DIR          default /tmp/gpuos-guard-corpus
#   LOAD_MAX=N       load at most N modules (a deterministic sample; JIT of big modules is slow), default 300
#   LOAD_TIMEOUT=S   give the loader at most S seconds per half (originals, guarded), default 1800
#   PYTHON=python3
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpuos-guard-corpus}
LOAD_MAX=${LOAD_MAX:-300}
LOAD_TIMEOUT=${LOAD_TIMEOUT:-1800}
PY=${PYTHON:-python3}
GT=$PWD/.carry/guardtool
[[ -x $GT ]] || { echo "missing $GT: build it where Go is: go build -o .carry/guardtool ./internal/guard/cmd/guardtool" >&2; exit 2; }
command -v cuobjdump >/dev/null || { echo "cuobjdump not found (add /usr/local/cuda/bin to PATH)" >&2; exit 2; }
rm -rf "$OUT"; mkdir -p "$OUT/ptx" "$OUT/guarded" "$OUT/x"

echo "== 1. PTX in libraries (cuobjdump -xptx all)"
SITE=$($PY -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
LIBS=()
for d in $SITE; do
	for pat in "$d/torch/lib/*.so*" "$d/cupy/*.so" "$d/cupy/_core/*.so" "$d/cupy/cuda/*.so" "$d/cupy_backends/cuda/*/*.so" \
		"$d/nvidia/*/lib/*.so*"; do
		for f in $pat; do [[ -f $f ]] && LIBS+=("$f"); done
	done
done
for lib in "${LIBS[@]}"; do
	name=$(basename "$lib")
	dir="$OUT/x/$name"
	mkdir -p "$dir"
	(cd "$dir" && timeout 600 cuobjdump -xptx all "$lib" >/dev/null 2>&1)
	cnt=$(ls "$dir" | wc -l)
	if [[ $cnt -gt 0 ]]; then
		echo "  $lib: $cnt PTX modules"
		for f in "$dir"/*; do mv "$f" "$OUT/ptx/lib_${name}__$(basename "$f")"; done
	fi
done
# cuobjdump names extracted files NAME.N.sm_XX.ptx; make sure every one ends in .ptx
for f in "$OUT"/ptx/*; do [[ $f == *.ptx ]] || mv "$f" "$f.ptx"; done
nlib=$(ls "$OUT/ptx" | wc -l)
echo "  $nlib modules from ${#LIBS[@]} libraries"

echo
echo "== 2. PTX from Triton and NVRTC"
$PY bench/guard/realworld_ptx.py "$OUT/ptx" 2>&1 | sed 's/^/  /'

echo
echo "== 3. parse + guard (guardtool corpus)"
"$GT" corpus -out "$OUT/guarded" "$OUT/ptx" > "$OUT/corpus.tsv"
grep '^#' "$OUT/corpus.tsv"

echo
echo "== 4. load with the real driver: originals, then their guarded forms (sample of at most $LOAD_MAX)"
nvcc -O2 -o "$OUT/ptxload" bench/guard/ptxload.c -lcuda
# A deterministic sample of guarded modules: every k-th.
mapfile -t G < <(ls "$OUT"/guarded/*.guarded.ptx 2>/dev/null | sort)
step=$(( (${#G[@]} + LOAD_MAX - 1) / LOAD_MAX )); [[ $step -lt 1 ]] && step=1
SAMPLE=(); ORIG=()
for ((i = 0; i < ${#G[@]}; i += step)); do
	g=${G[$i]}
	SAMPLE+=("$g")
	ORIG+=("$OUT/ptx/$(basename "${g%.guarded.ptx}").ptx")
done
timeout "$LOAD_TIMEOUT" "$OUT/ptxload" "${ORIG[@]}" > "$OUT/load.orig.txt" 2>&1
timeout "$LOAD_TIMEOUT" "$OUT/ptxload" "${SAMPLE[@]}" > "$OUT/load.guarded.txt" 2>&1
both=0; orig_ok=0; guarded_only_fail=0
: > "$OUT/load.failures.txt"
for ((i = 0; i < ${#SAMPLE[@]}; i++)); do
	o=${ORIG[$i]}; g=${SAMPLE[$i]}
	if grep -q "^ok $o " "$OUT/load.orig.txt"; then
		orig_ok=$((orig_ok + 1))
		if grep -q "^ok $g " "$OUT/load.guarded.txt"; then
			both=$((both + 1))
		else
			guarded_only_fail=$((guarded_only_fail + 1))
			grep "^FAIL $g " "$OUT/load.guarded.txt" >> "$OUT/load.failures.txt" || echo "FAIL $g (not reached: timeout?)" >> "$OUT/load.failures.txt"
		fi
	fi
done
echo "  sampled ${#SAMPLE[@]} guarded modules; originals that load on this GPU: $orig_ok"
echo "  guarded modules that load where the original does: $both/$orig_ok"
[[ $guarded_only_fail -gt 0 ]] && { echo "  failures (ptxas refused the guarded form):"; head -20 "$OUT/load.failures.txt" | sed 's/^/    /'; }

echo
echo "== summary"
grep '^# parsed\|^# guarded' "$OUT/corpus.tsv"
echo "# loaded:  $both/$orig_ok guarded modules of the sample (where the original loads)   goal 100%"
echo "details: $OUT/corpus.tsv (per file), $OUT/load.*.txt"
