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
#   LOAD_MAX=N       load at most N modules and their guarded forms (a deterministic sample of
#                    those whose .target the GPU can load; JIT of big modules is slow), default 300
#   LOAD_TIMEOUT=S   stop starting pairs after S seconds, default 1800
#   PAIR_TIMEOUT=S   give one pair (original, then guarded) at most S seconds, default 60
#   LOADABLE_ONLY=1  guard only the modules this GPU can load (their .target), and report the
#                    rates of that subset: leaves the load stage the time to load them all
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

# The GPU's compute capability, and the .target of a PTX file: the
# libraries also carry sm_100 and sm_120 PTX, which this GPU cannot load.
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
CC=${CC:-90}
target_of() { head -c 65536 "$1" | grep -m1 -o '^\.target[[:space:]]*sm_[0-9]*' | grep -o '[0-9]*$'; }

echo
if [[ ${LOADABLE_ONLY:-0} != 0 ]]; then
	# Only what this GPU can load, for a load stage with the time to load it
	# all: the rates of stage 3 are then of that subset.
	for f in "$OUT"/ptx/*.ptx; do t=$(target_of "$f"); [[ -n $t && $t -le $CC ]] || rm -f "$f"; done
	echo "== 3. parse + guard (guardtool corpus), LOADABLE_ONLY: the $(ls "$OUT/ptx" | wc -l) modules that target sm_$CC or older"
else
	echo "== 3. parse + guard (guardtool corpus)"
fi
"$GT" corpus -out "$OUT/guarded" "$OUT/ptx" > "$OUT/corpus.tsv"
grep '^#' "$OUT/corpus.tsv"

echo
echo "== 4. load with the real driver: each sampled original, then its guarded form (at most $LOAD_MAX pairs)"
nvcc -O2 -o "$OUT/ptxload" bench/guard/ptxload.c -lcuda
# Only modules this GPU can load at all (target_of, above).
mapfile -t G < <(ls "$OUT"/guarded/*.guarded.ptx 2>/dev/null | sort)
ELIG=()
for g in "${G[@]}"; do
	o="$OUT/ptx/$(basename "${g%.guarded.ptx}").ptx"
	t=$(target_of "$o")
	[[ -n $t && $t -le $CC ]] && ELIG+=("$g")
done
# A deterministic sample of them: every k-th.
step=$(( (${#ELIG[@]} + LOAD_MAX - 1) / LOAD_MAX )); [[ $step -lt 1 ]] && step=1
SAMPLE=()
for ((i = 0; i < ${#ELIG[@]}; i += step)); do SAMPLE+=("${ELIG[$i]}"); done
# Smallest first, so that the time goes to as many pairs as it can: the
# largest modules' JIT takes the driver a minute or more.
mapfile -t SAMPLE < <(for g in "${SAMPLE[@]}"; do echo "$(stat -c %s "$g") $g"; done | sort -n | cut -d' ' -f2-)
echo "  ${#ELIG[@]} guarded modules target sm_$CC or older; sampling ${#SAMPLE[@]}"
# Pairs one at a time, original then guarded, each pair in its own process
# under PAIR_TIMEOUT, until LOAD_TIMEOUT: a pair is complete or not counted.
PAIR_TIMEOUT=${PAIR_TIMEOUT:-60}
deadline=$(( $(date +%s) + LOAD_TIMEOUT ))
both=0; orig_ok=0; orig_fail=0; guarded_only_fail=0; reached=0; slow=0
: > "$OUT/load.txt"; : > "$OUT/load.failures.txt"
for g in "${SAMPLE[@]}"; do
	[[ $(date +%s) -ge $deadline ]] && break
	o="$OUT/ptx/$(basename "${g%.guarded.ptx}").ptx"
	res=$(timeout "$PAIR_TIMEOUT" "$OUT/ptxload" "$o" "$g" 2>/dev/null)
	echo "$res" >> "$OUT/load.txt"
	reached=$((reached + 1))
	if grep -q "^ok $o " <<< "$res"; then
		orig_ok=$((orig_ok + 1))
		if grep -q "^ok $g " <<< "$res"; then
			both=$((both + 1))
		elif grep -q "^FAIL $g " <<< "$res"; then
			guarded_only_fail=$((guarded_only_fail + 1))
			grep "^FAIL $g " <<< "$res" | cut -c1-400 >> "$OUT/load.failures.txt"
		else
			slow=$((slow + 1)) # the guarded form's JIT ran out of the pair's time
			echo "TIMEOUT $g (after ${PAIR_TIMEOUT}s)" >> "$OUT/load.failures.txt"
		fi
	elif grep -q "^FAIL $o " <<< "$res"; then
		orig_fail=$((orig_fail + 1))
	fi
done
echo "  pairs reached: $reached of ${#SAMPLE[@]}; originals that load: $orig_ok (refused by the driver: $orig_fail)"
echo "  guarded modules that load where the original does: $both/$orig_ok"
[[ $guarded_only_fail -gt 0 || $slow -gt 0 ]] && { echo "  failures (guarded form refused or too slow):"; head -20 "$OUT/load.failures.txt" | sed 's/^/    /'; }

echo
echo "== summary"
grep '^# parsed\|^# guarded' "$OUT/corpus.tsv"
echo "# loaded:  $both/$orig_ok guarded modules of the sample (where the original loads)   goal 100%"
echo "details: $OUT/corpus.tsv (per file), $OUT/load.txt, $OUT/load.failures.txt"
