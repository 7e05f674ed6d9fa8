#!/bin/bash
# gpu-check.sh - one run on a machine with an NVIDIA GPU, its driver, nvcc
# and (for part c) CuPy, that shows whether runtime-API programs and CuPy
# work through gpuos, and where they stop if they do not. No Go is needed:
# gpuos and its libcuda.so.1 come prebuilt in CARRY.
#
#   bash testdata/cudart/gpu-check.sh CARRY OUT
#
# from the repository root. CARRY holds gpuos and libcuda.so.1, built with
#   go build -o CARRY/gpuos ./cmd/gpuos
#   go build -buildmode=c-shared -ldflags=-extldflags=-Wl,-soname,libcuda.so.1 -o CARRY/libcuda.so.1 ./cmd/libcuda
# and optionally trace-libcuda.sh (the shared lookup tracer). OUT receives
# summary.txt (printed at the end), logs.tgz (every log and full call trace),
# and apart: trace-rt_vecadd.log (gpuos's call trace of the static program),
# ref-rt_vecadd.log (the real driver's) and exporttables.txt. What it does:
#   1. the real driver's export tables, the integrity check's answers against
#      gpuos's for the same inputs, and what some slots do (exporttables.c);
#   2. the nvcc programs of testdata/cudart with the static runtime (and
#      rt_vecadd with -cudart shared), natively and through gpuos with
#      GPUOS_SHIM_TRACE=2; for a failure, the trace around the first failing
#      call, and the comparison with the real driver (below); for a failing
#      static rt_vecadd, again with the f8cff951 table refused (answered
#      CUDA_ERROR_INVALID_VALUE, then CUDA_ERROR_NOT_FOUND) and with its
#      unimplemented slots answering 0;
#   3. rt_vecadd on the real driver under reftrace.sh (every call logged like
#      gpuos's trace) against gpuos's trace, failing or not; under
#      CARRY/trace-libcuda.sh too, if there;
#   4. the C API programs of testdata/capi, the launch benchmark, and what
#      single entry points cost (entry_bench.c), natively and through gpuos;
#   5. the CuPy scripts natively and through gpuos with CUPY_COMPILE_WITH_PTX=1
#      as the guarded tenant, reduction also without CUB (CUPY_ACCELERATORS=,
#      CuPy's own kernels, PTX: what the guarded tier can run); those that fail
#      again as the trusted tenant of testdata/cupy/gpuos-cupy.yaml, with the
#      SASS modules the audit log shows refused added to trusted_modules (up
#      to six rounds, while each learns of modules refused).
# The comparison with the real driver: every program that fails runs once
# more natively under reftrace.sh, and firstdiff.py reports, from the two
# traces, the first call whose result through gpuos differs from the real
# driver's for the same call, the first result gpuos gave that the real
# driver never gave that function, and where the two call sequences part.
# Environment: REAL_LIBCUDA (the NVIDIA libcuda.so.1, default from ldconfig),
# GPUOS_BACKEND (default cuda), TIMEOUT (per program, default 120 s), BUDGET
# (seconds the whole run should stay under, default 540). summary.txt is
# written as the run goes, so it survives a run that is cut off.
set -u
CARRY=$(readlink -f "${1:?usage: gpu-check.sh CARRY OUT}")
OUT=$(readlink -f "${2:?usage: gpu-check.sh CARRY OUT}")
ROOT=$(pwd)
mkdir -p "$OUT"
W=$(mktemp -d /tmp/gpu-check.XXXXXX)
S=$OUT/summary.txt
: > "$S"
TO=${TIMEOUT:-120}
BUDGET=${BUDGET:-540}
say() { printf '%s\n' "$*" >> "$S"; }
cutl() { cut -c1-"${1:-220}"; }
[ -x "$CARRY/gpuos" ] && [ -e "$CARRY/libcuda.so.1" ] || { echo "gpu-check: $CARRY lacks gpuos or libcuda.so.1" >&2; exit 1; }
ln -sf libcuda.so.1 "$CARRY/libcuda.so" 2> /dev/null

REAL=${REAL_LIBCUDA:-$(ldconfig -p 2> /dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')}
if [ -z "$REAL" ]; then
    for d in ${LD_LIBRARY_PATH//:/ } /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
        [ -e "$d/libcuda.so.1" ] && { REAL=$d/libcuda.so.1; break; }
    done
fi
say "== gpu-check $(date -u +%FT%TZ): $(nvidia-smi -L 2> /dev/null | head -1)"
say "   real driver: ${REAL:-none found}; nvcc: $(nvcc --version 2> /dev/null | tail -1); cupy: $(python3 -c 'import cupy; print(cupy.__version__)' 2> /dev/null || echo none)"
say "   shim: $(strings "$CARRY/libcuda.so.1" | grep -m1 'gpuos libcuda shim'); $(cd "$ROOT" && git log --oneline -1 2> /dev/null | cut -c1-80)"

# ---- the daemon ---------------------------------------------------------------
SOCK=$W/gpuos.sock
AUDIT=$W/audit.jsonl
SERVE=
serve() { # [CONFIG]
    [ -n "$SERVE" ] && { kill "$SERVE" 2> /dev/null; wait "$SERVE" 2> /dev/null; }
    rm -f "$SOCK"
    local cfg=()
    [ -n "${1:-}" ] && cfg=(--config "$1")
    "$CARRY/gpuos" serve --backend "${GPUOS_BACKEND:-cuda}" --socket "$SOCK" --audit "$AUDIT" "${cfg[@]}" >> "$W/serve.log" 2>&1 &
    SERVE=$!
    for _ in $(seq 100); do [ -S "$SOCK" ] && return 0; sleep 0.2; done
    say "FAIL gpuos serve did not start: $(tail -3 "$W/serve.log" | tr '\n' ' ')"
    return 1
}
finish() {
    [ -n "$SERVE" ] && { kill "$SERVE" 2> /dev/null; wait "$SERVE" 2> /dev/null; }
    (cd "$W" && find . -maxdepth 1 -type f \( -name '*.log' -o -name '*.out' -o -name '*.err' -o -name '*.seq' -o -name '*.build' \
        -o -name '*.yaml' -o -name '*.jsonl' -o -name 'exporttables.*' \) ! -name 'exporttables' -print0 |
        tar czf "$OUT/logs.tgz" --null -T - 2> /dev/null)
    for f in trace-rt_vecadd.log ref-rt_vecadd.log; do [ -f "$W/$f" ] && cp "$W/$f" "$OUT/"; done
    cat "$W"/exporttables.tables "$W"/exporttables.calls > "$OUT/exporttables.txt" 2> /dev/null
    cat "$S"
}
trap finish EXIT
serve || exit 1
GPUOS=("$CARRY/gpuos" run --shim "$CARRY" --socket "$SOCK")

# The real driver, every call logged (for the comparisons), and python3 to
# compare with.
REFOK=
PY=$(command -v python3 || true)
if [ -n "$REAL" ] && bash testdata/cudart/reftrace.sh "$W/ref" "$REAL" 2> "$W/reftrace.build"; then
    REFOK=1
else
    say "   no real-driver comparisons: $( [ -z "$REAL" ] && echo 'no real libcuda.so.1 found (set REAL_LIBCUDA)' || tail -2 "$W/reftrace.build" | tr '\n' ' ')"
fi
[ -n "$PY" ] || say "   no real-driver comparisons: no python3"

# refdiff NAME DIR CMD...: CMD on the real driver under reftrace.sh (once per
# $REFKEY, default NAME), then firstdiff.py on that trace and gpuos's trace
# of NAME.
refdiff() {
    local name=$1 dir=$2 key=${REFKEY:-$1}
    shift 2
    [ -n "$REFOK" ] && [ -n "$PY" ] && [ -s "$W/trace-$name.log" ] || return 0
    if [ ! -s "$W/ref-$key.log" ]; then
        [ $SECONDS -lt $((BUDGET - 45)) ] || { say "   (no real-driver comparison: the run is near its budget)"; return 0; }
        (cd "$dir" && REFTRACE_LOG=$W/ref-$key.log LD_LIBRARY_PATH=$W/ref:${LD_LIBRARY_PATH:-} timeout "$TO" "$@" \
            > "$W/ref-$key.out" 2> "$W/ref-$key.err")
        local rr=$?
        if [ $rr -ne 0 ]; then
            # Perhaps the wrapped export tables: again with the real ones.
            say "   (on the real driver under reftrace.sh it exited $rr: $(tail -1 "$W/ref-$key.err" | cutl 150); again with REFTRACE_WRAP=0)"
            mv "$W/ref-$key.log" "$W/ref-$key.wrapped.log" 2> /dev/null
            (cd "$dir" && REFTRACE_WRAP=0 REFTRACE_LOG=$W/ref-$key.log LD_LIBRARY_PATH=$W/ref:${LD_LIBRARY_PATH:-} timeout "$TO" "$@" \
                > "$W/ref-$key.out" 2> "$W/ref-$key.err") || say "   (and exited $? again)"
        fi
    fi
    say "   against the real driver (reftrace.sh + firstdiff.py):"
    "$PY" "$ROOT/testdata/cudart/firstdiff.py" "$W/ref-$key.log" "$W/trace-$name.log" 2>&1 | head -"${DIFFLINES:-20}" |
        cutl 250 | sed 's/^/     /' >> "$S"
}

# firsterr LOG: the trace around the first call that failed, or its end; in
# full for the first two failures, then the failing call alone.
CONTEXTS=2
firsterr() {
    local log=$1 n f=$W/.firsterr
    # Without the entry-point lookups, which the runtime makes by the hundred.
    grep -v -E 'cuGetProcAddress' "$log" | sed 's/^gpuos-shim: //' > "$f"
    # A thread asking for its context's device before it has one gets
    # CUDA_ERROR_INVALID_CONTEXT from the real driver too: the runtime does
    # so at start-up.
    n=$(grep -n -E '^T[0-9]+ +cu[A-Za-z0-9_]+\(.*\) = (CUDA_ERROR_|0x)' "$f" | grep -v 'cuGetExportTable' |
        grep -v -E 'cuCtxGetDevice(_v2)?\(.*ctx=0x0\) = CUDA_ERROR_INVALID_CONTEXT' | head -1 | cut -d: -f1)
    if [ -n "$n" ] && [ $CONTEXTS -le 0 ]; then
        say "   first failing call: $(sed -n "${n}p" "$f" | cutl 200)"
    elif [ -n "$n" ]; then
        CONTEXTS=$((CONTEXTS - 1))
        say "   first failing call (with the 12 lines before it, lookups left out):"
        sed -n "$((n > 12 ? n - 12 : 1)),$((n + 2))p" "$f" | cutl 230 | sed 's/^/     | /' >> "$S"
    else
        say "   no call failed; the trace ends (lookups left out):"
        tail -8 "$f" | cutl 230 | sed 's/^/     | /' >> "$S"
    fi
    grep -h 'is not supported by gpuos\|unimplemented slot\|unknown table\|more than gpuos loads at once\|gpuos launches no thread block clusters' "$f" | sort -u | head -6 | sed 's/^/   refused: /' | cutl >> "$S"
}

# compare NAME DIR CMD...: natively, then through gpuos with the full call
# trace; PASS if both exit 0 with the same stdout.
compare() {
    local name=$1 dir=$2 rn rg
    shift 2
    (cd "$dir" && timeout "$TO" "$@" > "$W/$name.native.out" 2> "$W/$name.native.err"); rn=$?
    (cd "$dir" && GPUOS_SHIM_TRACE=${TRACE:-2} GPUOS_SHIM_LOG=$W/trace-$name.log timeout "$TO" "${GPUOS[@]}" ${TENANT:+--tenant "$TENANT"} -- "$@" \
        > "$W/$name.gpuos.out" 2> "$W/$name.gpuos.err"); rg=$?
    if [ $rn -eq 0 ] && [ $rg -eq 0 ] && cmp -s "$W/$name.native.out" "$W/$name.gpuos.out"; then
        say "PASS $name (stdout identical, $(wc -l < "$W/$name.gpuos.out") lines; trace $(wc -l < "$W/trace-$name.log") lines)"
        return 0
    fi
    if [ -z "${TENANT:-}" ] && grep -q 'module has no PTX to guard' "$W/$name.gpuos.err" "$W/trace-$name.log" 2> /dev/null; then
        # A guarded tenant (the default) runs PTX only: a library that
        # ships machine code only is refused, as designed; the trusted rows
        # below run it. A script may carry on regardless (CuPy's CUB wrapper
        # does not check the launch that failed, and prints wrong sums).
        say "REFUSED $name (guarded tenant: a machine-code-only module refused as designed; native exit $rn, gpuos exit $rg$( [ $rn -eq 0 ] && [ $rg -eq 0 ] && echo ', the script printed results regardless'))"
    elif [ -n "${TENANT:-}" ] && grep -q 'has trust tier trusted' "$W/$name.gpuos.err" "$W/trace-$name.log" 2> /dev/null; then
        # The trusted tenant's allowlist is being learned: a module not on
        # it yet was refused; the next round lists it.
        say "LEARN $name (a machine-code module not yet on the allowlist was refused; native exit $rn, gpuos exit $rg)"
    else
        say "FAIL $name: native exit $rn, gpuos exit $rg$( [ $rn -eq 0 ] && [ $rg -eq 0 ] && echo ', stdout differs')"
    fi
    [ $rn -ne 0 ] && tail -2 "$W/$name.native.err" | cutl | sed 's/^/   native: /' >> "$S"
    grep -v '^$' "$W/$name.gpuos.err" | grep -v '^gpuos-shim:' | tail -2 | cutl | sed 's/^/   gpuos:  /' >> "$S"
    [ $rn -eq 0 ] && [ $rg -eq 0 ] && diff "$W/$name.native.out" "$W/$name.gpuos.out" | head -4 | cutl | sed 's/^/   /' >> "$S"
    cat "$W/$name.gpuos.err" "$W/trace-$name.log" 2> /dev/null | grep -h 'refused by gpuos' | sed 's/^gpuos-shim: //' | sort -u | head -3 |
        cutl 300 | sed 's/^/   gpuos said: /' >> "$S"
    [ -s "$W/trace-$name.log" ] && firsterr "$W/trace-$name.log"
    refdiff "$name" "$dir" "$@"
    return 1
}

# ---- 1. the real driver's tables and integrity check ---------------------------
say ""
say "== 1. the real driver's export tables (testdata/cudart/exporttables.c)"
if gcc -std=gnu11 -O1 -o "$W/exporttables" testdata/cudart/exporttables.c -ldl -lpthread 2> "$W/exporttables.build"; then
    (cd "$W" && LD_LIBRARY_PATH=$(dirname "${REAL:-/nonexistent}"):${LD_LIBRARY_PATH:-} timeout 60 ./exporttables tables "$CARRY/libcuda.so.1" > exporttables.tables 2>&1)
    (cd "$W" && LD_LIBRARY_PATH=$(dirname "${REAL:-/nonexistent}"):${LD_LIBRARY_PATH:-} timeout 60 ./exporttables calls > exporttables.calls 2>&1)
    grep -E '^(WARNING|driver )' "$W/exporttables.tables" | cutl >> "$S"
    grep -E '^table unknown_f8cff951 ' "$W/exporttables.tables" | cutl 640 >> "$S"
    grep -E '^table ' "$W/exporttables.tables" | grep -v -E '^table unknown_f8cff951 ' | cutl 150 >> "$S"
    grep -E '^integrity inputs' "$W/exporttables.tables" | cutl 260 >> "$S"
    say "integrity: $(grep -c ' MATCH' "$W/exporttables.tables") of $(grep -c '^integrity [0-9]' "$W/exporttables.tables") runtime versions MATCH the real driver"
    grep -E '^integrity [0-9]+ .*(MISMATCH|ERROR)|^integrity: ' "$W/exporttables.tables" | cutl 260 >> "$S"
    grep -v '^driver ' "$W/exporttables.calls" | sed 's/^probe: //' | cutl 150 >> "$S"
else
    say "FAIL build exporttables: $(head -3 "$W/exporttables.build")"
fi
# Slots 51 and 39 of the 21318c60 table (cuBLASLt's stream object and its id),
# on the real driver and through gpuos (testdata/cudart/slot51.c).
if gcc -std=gnu11 -O1 -Iinclude -o "$W/slot51" testdata/cudart/slot51.c -ldl 2> "$W/slot51.build"; then
    (cd "$W" && timeout 60 ./slot51 "${REAL:-/usr/local/nvidia/lib64/libcuda.so.1}" > slot51.real.out 2>&1)
    (cd "$W" && timeout 60 "${GPUOS[@]}" -- ./slot51 "$CARRY/libcuda.so.1" > slot51.gpuos.out 2>&1)
    say "slot51 real driver:"
    grep -v '^probe' "$W/slot51.real.out" | cutl 200 >> "$S"
    say "slot51 through gpuos:"
    grep -v '^probe' "$W/slot51.gpuos.out" | cutl 200 >> "$S"
else
    say "FAIL build slot51: $(head -3 "$W/slot51.build")"
fi

# ---- 2. nvcc programs ------------------------------------------------------------
say ""
say "== 2. runtime-API programs (testdata/cudart), natively and through gpuos, GPUOS_SHIM_TRACE=2"
if command -v nvcc > /dev/null; then
    built=()
    for p in rt_vecadd rt_streams rt_managed; do
        nvcc -O2 -o "$W/$p" "testdata/cudart/$p.cu" > "$W/$p.build" 2>&1 && built+=("$p") || say "FAIL build $p: $(tail -2 "$W/$p.build" | tr '\n' ' ')"
    done
    nvcc -O2 -cudart shared -o "$W/rt_vecadd_shared" testdata/cudart/rt_vecadd.cu > "$W/rt_vecadd_shared.build" 2>&1 && built+=(rt_vecadd_shared) ||
        say "FAIL build rt_vecadd -cudart shared: $(tail -2 "$W/rt_vecadd_shared.build" | tr '\n' ' ')"
    for p in "${built[@]}"; do
        compare "$p" "$W" "./$p"
        [ "$p" = rt_managed ] && grep -h "managed memory" "$W"/rt_managed.*.err | sed 's/^/   /' >> "$S"
    done
    if [ -x "$W/rt_vecadd" ] && ! cmp -s "$W/rt_vecadd.native.out" "$W/rt_vecadd.gpuos.out"; then
        # The f8cff951 table refused (two answers), or its stub slots answering 0.
        for v in "refused-INVALID_VALUE:GPUOS_SHIM_DENY_TABLES=f8cff951" \
            "refused-NOT_FOUND:GPUOS_SHIM_DENY_TABLES=f8cff951 GPUOS_SHIM_DENY_RESULT=CUDA_ERROR_NOT_FOUND" \
            "stubs-answer-0:GPUOS_SHIM_STUB_SUCCESS=f8cff951"; do
            tag=${v%%:*}
            (cd "$W" && env ${v#*:} GPUOS_SHIM_TRACE=2 GPUOS_SHIM_LOG=$W/trace-rt_vecadd-$tag.log \
                timeout "$TO" "${GPUOS[@]}" -- ./rt_vecadd > "$W/rt_vecadd-$tag.out" 2> "$W/rt_vecadd-$tag.err"); rg=$?
            say "   rt_vecadd, f8cff951 $tag: exit $rg; $(grep -v '^gpuos-shim' "$W/rt_vecadd-$tag.err" | grep -m1 -E 'FAIL|PASS' | cutl 150)$(grep -q 'PASS rt_vecadd' "$W/rt_vecadd-$tag.out" && echo 'PASS rt_vecadd')"
            [ $rg -ne 0 ] && grep -v cuGetProcAddress "$W/trace-rt_vecadd-$tag.log" | grep -m1 -E 'T[0-9]+ +cu.*= CUDA_ERROR_|slot .* = CUDA_ERROR_' | sed 's/gpuos-shim: //' | cutl | sed 's/^/     first failing call: /' >> "$S"
        done
    fi
else
    say "SKIP 2: no nvcc"
fi

# ---- 3. the real driver's call sequence ----------------------------------------
say ""
say "== 3. rt_vecadd on the real driver, every call logged (testdata/cudart/reftrace.sh), against gpuos's trace"
if [ -n "$REFOK" ] && [ -x "$W/rt_vecadd" ]; then
    for p in rt_vecadd rt_vecadd_shared; do
        [ -x "$W/$p" ] || continue
        say "$p:"
        refdiff "$p" "$W" "./$p"
        [ -s "$W/ref-$p.log" ] && say "   on the real driver: $(cmp -s "$W/ref-$p.out" "$W/$p.native.out" && echo 'output as native' || echo 'output NOT as native'); $(grep -c '^T' "$W/ref-$p.log") calls, $(grep -c ' slot ' "$W/ref-$p.log") slot calls"
    done
    say "   slots the real runtime called (rt_vecadd): $(grep -o 'slot [a-z_0-9]*\[[0-9]*\]' "$W/ref-rt_vecadd.log" 2> /dev/null | sort | uniq -c | sort -rn | awk '{printf "%s %s, ", $3, $1}')"
else
    say "SKIP 3: no reftrace, or no rt_vecadd"
fi
if [ -f "$CARRY/trace-libcuda.sh" ] && [ -x "$W/rt_vecadd" ]; then
    mkdir -p "$W/lookup-tracer" && (cd "$W/lookup-tracer" && bash "$CARRY/trace-libcuda.sh" > build.log 2>&1) &&
        (cd "$W" && SHIMLOG=$W/lookups-rt_vecadd.log LD_LIBRARY_PATH=$W/lookup-tracer:${LD_LIBRARY_PATH:-} timeout "$TO" ./rt_vecadd > /dev/null 2>&1)
    say "   trace-libcuda.sh: $(grep -c '^gpa' "$W/lookups-rt_vecadd.log" 2> /dev/null) lookups, tables: $(grep -o '^export [0-9a-f]\{8\}[^ ]* r=[0-9]* firstword=[0-9]*' "$W/lookups-rt_vecadd.log" 2> /dev/null | sed 's/^export //' | tr '\n' ' ')"
fi

# ---- 4. C API programs and the launch benchmark ----------------------------------
say ""
say "== 4. C API programs (testdata/capi) through gpuos, and the launch benchmark"
pass=() fail=()
for p in vecadd reduce streams memcpy memset library nocontext pointers context errors leak; do
    gcc -std=gnu11 -O1 -Iinclude "testdata/capi/$p.c" -o "$W/capi_$p" -L"$CARRY" -lcuda -lpthread > "$W/capi_$p.build" 2>&1 || { fail+=("$p(build)"); continue; }
    (cd "$W" && timeout "$TO" "${GPUOS[@]}" -- "./capi_$p" "$ROOT/testdata/kernels" > "$W/capi_$p.gpuos.out" 2>&1) && pass+=("$p") || fail+=("$p")
done
say "capi: ${#pass[@]} pass${fail[*]:+; FAIL: ${fail[*]}}"
for p in "${fail[@]}"; do
    tail -2 "$W/capi_${p%%(*}.gpuos.out" 2> /dev/null | cutl | sed "s/^/   $p: /" >> "$S"
    case $p in *"(build)") continue ;; esac
    (cd "$W" && GPUOS_SHIM_TRACE=2 GPUOS_SHIM_LOG=$W/trace-capi_$p.log timeout "$TO" "${GPUOS[@]}" -- "./capi_$p" "$ROOT/testdata/kernels" > /dev/null 2>&1)
    refdiff "capi_$p" "$W" "./capi_$p" "$ROOT/testdata/kernels"
done
if gcc -std=gnu11 -O2 -Iinclude bench/launch_bench.c -o "$W/launch_bench" -L"$CARRY" -lcuda > "$W/bench.build" 2>&1; then
    nat=$(cd "$W" && LD_LIBRARY_PATH=$(dirname "${REAL:-/x}"):${LD_LIBRARY_PATH:-} timeout "$TO" ./launch_bench 100000 "$ROOT/testdata/kernels/bench.ptx" 2>&1 | tail -1)
    shm=$(cd "$W" && timeout "$TO" "${GPUOS[@]}" -- ./launch_bench 100000 "$ROOT/testdata/kernels/bench.ptx" 2>&1 | tail -1)
    say "native: $nat"
    say "gpuos:  $shm"
    n=$(sed -n -E 's/.*launches: ([0-9.]+) us.*/\1/p' <<< "$nat")
    g=$(sed -n -E 's/.*launches: ([0-9.]+) us.*/\1/p' <<< "$shm")
    say "ratio gpuos/native: $(awk -v g="$g" -v n="$n" 'BEGIN { if (n > 0) printf "%.2f", g / n; else print "?" }') (target <= 1.5)"
fi
if gcc -std=gnu11 -O2 -Iinclude testdata/cudart/entry_bench.c -o "$W/entry_bench" -L"$CARRY" -lcuda > "$W/entry_bench.build" 2>&1; then
    (cd "$W" && LD_LIBRARY_PATH=$(dirname "${REAL:-/x}"):${LD_LIBRARY_PATH:-} timeout "$TO" ./entry_bench 200000 "$ROOT/testdata/kernels/bench.ptx" > entry.native.out 2>&1)
    (cd "$W" && timeout "$TO" "${GPUOS[@]}" -- ./entry_bench 200000 "$ROOT/testdata/kernels/bench.ptx" > entry.gpuos.out 2>&1)
    say "entry points (testdata/cudart/entry_bench.c), native | gpuos:"
    paste -d '|' <(grep ns/call "$W/entry.native.out") <(grep ns/call "$W/entry.gpuos.out") |
        awk -F'|' '{ split($1, a, ": "); split($2, b, ": "); printf "   %-32s %-44s | %s\n", a[1], a[2], b[2] }' | cutl 200 >> "$S"
    grep -v ns/call "$W/entry.gpuos.out" | grep -v '^$' | head -2 | cutl | sed 's/^/   gpuos: /' >> "$S"
else
    say "FAIL build entry_bench: $(head -2 "$W/entry_bench.build" | tr '\n' ' ')"
fi
# ---- 5. CuPy (last: the slowest; cut short near BUDGET seconds) -----------------
say ""
say "== 5. CuPy scripts (testdata/cupy), CUPY_COMPILE_WITH_PTX=1, natively and through gpuos"
if python3 -c 'import cupy' 2> /dev/null; then
    export PYTHONPATH=$ROOT/testdata/cupy${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
    export CUPY_COMPILE_WITH_PTX=1 CUPY_CACHE_DIR=$W/cupy-cache
    failed=()
    for s in elementwise reduction matmul random_numbers; do
        [ $SECONDS -lt $((BUDGET - 60)) ] || { say "SKIP cupy_$s: the run is near its budget of $BUDGET s"; continue; }
        compare "cupy_$s" "$ROOT/testdata/cupy" python3 "$s.py" || failed+=("$s")
    done
    # CuPy's reductions use CUB, whose kernels CuPy ships as SASS only: the
    # guarded tier refuses them (and CuPy does not check CUB's errors). Its
    # own reduction kernels are PTX.
    [ $SECONDS -lt $((BUDGET - 60)) ] && CUPY_ACCELERATORS= compare cupy_reduction_nocub "$ROOT/testdata/cupy" python3 reduction.py
    if [ ${#failed[@]} -gt 0 ]; then
        say "-- again as tenant cupy-trusted (testdata/cupy/gpuos-cupy.yaml), learning the refused SASS modules' hashes from the audit log"
        cfg=$W/gpuos-cupy.yaml
        cp testdata/cupy/gpuos-cupy.yaml "$cfg"
        # refused: the SASS modules the audit log shows refused (LoadProgram's
        # deny events carry their SHA-256) that cfg does not list yet.
        refused() {
            grep '"LoadProgram"' "$AUDIT" 2> /dev/null | grep -o '"sha256":"[0-9a-f]\{64\}"' | cut -d'"' -f4 | sort -u |
                grep -v -x -F -f <(grep -o '[0-9a-f]\{64\}' "$cfg") || true
        }
        # A program stops at the first module refused, so each round learns
        # about one more per program: start from what the guarded runs were
        # refused, and go on while rounds learn something.
        new=$(refused)
        [ -n "$new" ] && printf '  - %s\n' $new >> "$cfg"
        say "   from the guarded runs: $(printf '%s\n' $new | grep -c .) module(s) refused"
        for round in 1 2 3 4 5 6; do
            [ $SECONDS -lt $((BUDGET - 120)) ] || { say "   stopped: the run is near its budget of $BUDGET s"; break; }
            : > "$AUDIT"
            serve "$cfg" || break
            still=()
            for s in "${failed[@]}"; do
                REFKEY=cupy_$s TENANT=cupy-trusted compare "cupy_${s}_trusted$round" "$ROOT/testdata/cupy" python3 "$s.py" || still+=("$s")
            done
            new=$(refused)
            failed=("${still[@]}")
            say "   round $round: ${#still[@]} failing, $(printf '%s\n' $new | grep -c .) module(s) refused for the first time"
            [ ${#still[@]} -eq 0 ] || [ -z "$new" ] && break
            printf '  - %s\n' $new >> "$cfg"
        done
        say "   trusted_modules learned: $(grep -c '^  - ' "$cfg") (gpuos-cupy.yaml in logs.tgz)"
        serve || true
    fi
else
    say "SKIP 5: python3 cannot import cupy"
fi

say ""
say "full logs: logs.tgz (trace-*.log gpuos traces, ref-*.log real-driver traces, *.out/*.err, exporttables.*, serve.log, audit.jsonl)"
