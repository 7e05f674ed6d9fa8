#!/bin/bash
# gpu-check.sh - issue 4, item 6, on a machine with an NVIDIA GPU and driver:
#   (a) the C API programs of testdata/capi, natively and through gpuos;
#   (b) the nvcc-built runtime programs of testdata/cudart (static cudart),
#       natively and through gpuos, their stdout compared;
#   (c) the CuPy scripts of testdata/cupy, natively and through gpuos, their
#       stdout compared (skipped without CuPy);
#   and bench/launch_bench.c natively and through gpuos in the same run.
#
# Run from the repository root:
#   bash testdata/cudart/gpu-check.sh [OUT_DIR]
# Needs go, gcc, nvcc (for b) and python3 with cupy (for c). Everything it
# builds, logs and prints goes to OUT_DIR (default /tmp/gpuos-gpu-check);
# shim.log holds the shim's trace (GPUOS_SHIM_TRACE=1: every export-table
# lookup and slot call with its arguments). Set CUPY_PTX=1 to make CuPy hand
# the daemon PTX instead of cubins (CUPY_COMPILE_WITH_PTX=1, both runs);
# GPUOS_BACKEND=sim runs the gpuos side on the software GPU (a dry run).
set -u
ROOT=$(pwd)
OUT=${1:-/tmp/gpuos-gpu-check}
mkdir -p "$OUT"
log() { printf '%s\n' "$*" | tee -a "$OUT/summary.txt"; }
: > "$OUT/summary.txt"

go build -o "$OUT/gpuos" ./cmd/gpuos || exit 1
go build -buildmode=c-shared -ldflags=-extldflags=-Wl,-soname,libcuda.so.1 -o "$OUT/libcuda.so.1" ./cmd/libcuda || exit 1
ln -sf libcuda.so.1 "$OUT/libcuda.so"

SOCK=$OUT/gpuos.sock
rm -f "$SOCK"
"$OUT/gpuos" serve --backend "${GPUOS_BACKEND:-cuda}" --socket "$SOCK" > "$OUT/serve.log" 2>&1 &
SERVE=$!
trap 'kill $SERVE 2>/dev/null; wait $SERVE 2>/dev/null' EXIT
for _ in $(seq 300); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || { cat "$OUT/serve.log"; exit 1; }

export GPUOS_SHIM_LOG=$OUT/shim.log GPUOS_SHIM_TRACE=${GPUOS_SHIM_TRACE:-1}
GPUOS=("$OUT/gpuos" run --shim "$OUT" --socket "$SOCK" --)

# compare NAME CMD...: run natively and through gpuos; PASS if both exit 0
# and their stdout is identical.
compare() {
    local name=$1; shift
    (cd "$OUT" && "$@" > "$name.native.out" 2> "$name.native.err"); local rn=$?
    (cd "$OUT" && "${GPUOS[@]}" "$@" > "$name.gpuos.out" 2> "$name.gpuos.err"); local rg=$?
    if [ $rn -eq 0 ] && [ $rg -eq 0 ] && cmp -s "$OUT/$name.native.out" "$OUT/$name.gpuos.out"; then
        log "PASS $name (stdout identical, $(wc -l < "$OUT/$name.gpuos.out") lines)"
    else
        log "FAIL $name: native exit $rn, gpuos exit $rg; diff $OUT/$name.native.out $OUT/$name.gpuos.out"
        diff "$OUT/$name.native.out" "$OUT/$name.gpuos.out" | head -20 | tee -a "$OUT/summary.txt"
        tail -5 "$OUT/$name.gpuos.err" | tee -a "$OUT/summary.txt"
    fi
}

log "== (a) C API programs (testdata/capi), natively and through gpuos"
for p in vecadd reduce streams memcpy memset pointers context errors leak; do
    gcc -std=gnu11 -O1 -Wall -I include "testdata/capi/$p.c" -o "$OUT/capi_$p" -L "$OUT" -lcuda -lpthread || { log "FAIL build $p"; continue; }
    (cd "$OUT" && ./"capi_$p" "$ROOT/testdata/kernels" > "capi_$p.native.out" 2>&1); rn=$?
    (cd "$OUT" && "${GPUOS[@]}" ./"capi_$p" "$ROOT/testdata/kernels" > "capi_$p.gpuos.out" 2>&1); rg=$?
    log "$( [ $rg -eq 0 ] && echo PASS || echo FAIL ) capi/$p through gpuos (exit $rg); natively exit $rn"
    [ $rg -eq 0 ] || tail -5 "$OUT/capi_$p.gpuos.out" | tee -a "$OUT/summary.txt"
    [ $rn -eq 0 ] || { echo "   native:"; tail -3 "$OUT/capi_$p.native.out"; } | tee -a "$OUT/summary.txt"
done

log "== (b) runtime-API programs (testdata/cudart), nvcc with static cudart"
if command -v nvcc > /dev/null; then
    for p in rt_vecadd rt_streams rt_managed; do
        nvcc -O2 -o "$OUT/$p" "testdata/cudart/$p.cu" || { log "FAIL build $p"; continue; }
        compare "$p" ./"$p"
    done
    grep -h "managed memory" "$OUT"/rt_managed.*.err | sed 's/^/   /' | tee -a "$OUT/summary.txt"
else
    log "SKIP (b): no nvcc"
fi

log "== (c) CuPy scripts (testdata/cupy)"
if python3 -c 'import cupy' 2> /dev/null; then
    [ "${CUPY_PTX:-0}" = 1 ] && export CUPY_COMPILE_WITH_PTX=1
    for s in elementwise reduction matmul; do
        compare "cupy_$s" env PYTHONPATH="$ROOT/testdata/cupy" python3 "$ROOT/testdata/cupy/$s.py"
    done
else
    log "SKIP (c): python3 cannot import cupy"
fi

log "== launch benchmark (bench/launch_bench.c), 100k asynchronous empty launches"
gcc -std=gnu11 -O2 -I include bench/launch_bench.c -o "$OUT/launch_bench" -L "$OUT" -lcuda
native=$(cd "$OUT" && ./launch_bench 100000 "$ROOT/testdata/kernels/bench.ptx")
shim=$(cd "$OUT" && GPUOS_SHIM_TRACE=0 "${GPUOS[@]}" ./launch_bench 100000 "$ROOT/testdata/kernels/bench.ptx")
log "native: $native"
log "gpuos:  $shim"
n=$(sed -E 's/.*launches: ([0-9.]+) us.*/\1/' <<< "$native")
g=$(sed -E 's/.*launches: ([0-9.]+) us.*/\1/' <<< "$shim")
log "ratio gpuos/native: $(awk -v g="$g" -v n="$n" 'BEGIN { if (n > 0) printf "%.2f", g / n; else print "?" }') (target <= 1.5)"

log "== fault (last: it takes the device's driver process down when kernels run unguarded)"
gcc -std=gnu11 -O1 -I include testdata/capi/fault.c -o "$OUT/capi_fault" -L "$OUT" -lcuda
(cd "$OUT" && "${GPUOS[@]}" ./capi_fault "$ROOT/testdata/kernels" > capi_fault.gpuos.out 2>&1); rg=$?
log "$( [ $rg -eq 0 ] && echo PASS || echo FAIL ) capi/fault: $(grep surfaced "$OUT/capi_fault.gpuos.out")"

log "== export tables the runtime used (from $OUT/shim.log)"
grep -ho 'cuGetExportTable([0-9a-f]*): [a-z_0-9]*\|export [a-z_0-9]* slot [0-9]*' "$OUT/shim.log" | sort | uniq -c | sort -rn | tee -a "$OUT/summary.txt"
grep -h 'is not supported by gpuos\|unknown table' "$OUT/shim.log" | sort | uniq -c | tee -a "$OUT/summary.txt"
echo "summary: $OUT/summary.txt"
