#!/bin/bash
# Issue 8 acceptance on a GPU, in one run, with prebuilt binaries (the GPU
# machine has no Go): gpuos and membench in BIN (default .carry/bench-mem).
#
#   (a) gpuos serve --device-memory 16GiB; four tenants of 8 GiB each make
#       checked passes over their data; swap throughput vs pinned PCIe
#   (b) a two-stage pipeline handing 256 MiB between tenants through a shared
#       segment vs through host round trips
#   (c) a 256 MiB pageable host-to-device copy through gpuos vs native
#
# Usage: bench/mem/run.sh [BIN]   (from the repository root)
# Environment (for trying it on the software GPU): RESERVE_WAIT (60), BACKEND (cuda), DEVMEM
# (16GiB), EACH (8GiB), BUFFER (1GiB), PASSES (4), PIPE (256MiB), COPY
# (256MiB), SIMMEM (the software GPU's memory), SERVE_FLAGS (more flags for
# the swap run's daemon, e.g. "--min-residency 20ms"; the daemon also sees the
# environment: GPUOS_SWAP_PIN=alloc pins swap memory with cuMemHostAlloc
# instead of cuMemHostRegister), OUT (where logs, the
# audit log and results.jsonl go: $OUT if set, as the device tool sets it,
# else /tmp/membench).
set -u
BIN=${1:-.carry/bench-mem}
BACKEND=${BACKEND:-cuda}
DEVMEM=${DEVMEM:-16GiB}
EACH=${EACH:-8GiB}
BUFFER=${BUFFER:-1GiB}
PASSES=${PASSES:-4}
PIPE=${PIPE:-256MiB}
COPY=${COPY:-256MiB}
OUT=${OUT:-/tmp/membench}
SIMMEM=${SIMMEM:-}
SERVE_FLAGS=${SERVE_FLAGS:-}
mkdir -p "$OUT" && rm -f "$OUT"/serve-*.log "$OUT"/audit.jsonl "$OUT"/results.jsonl "$OUT"/*.log
SOCK=$OUT/gpuos.sock
AUDIT=$OUT/audit.jsonl
RESULTS=$OUT/results.jsonl

{
	echo "tenants:"
	for i in 0 1 2 3; do
		printf '  - name: t%d\n    token: token-%d\n' "$i" "$i"
	done
} > "$OUT/tenants.yaml"

step() { echo "=== $(date +%T) $*"; }

start_daemon() { # args: extra serve flags
	step "gpuos serve --backend $BACKEND $*"
	"$BIN/gpuos" serve --backend "$BACKEND" --config "$OUT/tenants.yaml" --socket "$SOCK" --audit "$AUDIT" \
		${SIMMEM:+--sim-memory $SIMMEM} "$@" > "$OUT/serve-$DAEMONS.log" 2>&1 &
	DAEMON=$!
	DAEMONS=$((DAEMONS + 1))
	for _ in $(seq 300); do [ -S "$SOCK" ] && return 0; sleep 0.1; done
	echo "the daemon did not start:"; cat "$OUT"/serve-*.log; exit 1
}

stop_daemon() {
	kill "$DAEMON" 2> /dev/null
	wait "$DAEMON" 2> /dev/null
	rm -f "$SOCK"
}

DAEMONS=0
[ "$BACKEND" = cuda ] && nvidia-smi -L
# A daemon without --swap-reserve (it reserves one and a half times
# --device-memory of pinned host memory by default) would refuse the flag and
# not start: drop it, and its value, with a word.
if [[ " $SERVE_FLAGS " == *" --swap-reserve"* ]] && ! "$BIN/gpuos" serve -h 2>&1 | grep -q -- -swap-reserve; then
	echo "this gpuos serve has no --swap-reserve (the default reserve applies): dropped from SERVE_FLAGS"
	SERVE_FLAGS=$(echo " $SERVE_FLAGS " | sed -E 's/ --swap-reserve(=| +)[^ ]+//')
fi
# shellcheck disable=SC2086 # SERVE_FLAGS is a list of flags
start_daemon --device-memory "$DEVMEM" $SERVE_FLAGS
# With --device-memory the driver pins host memory for swapping from its start
# (the device limit's worth), in the background; the tenants start once it is
# pinned (the audit record says how long that took), so the run measures
# swapping in its steady state, not the one-time pinning. RESERVE_WAIT bounds
# the wait (seconds).
step "waiting for the swap reserve to be pinned (at most ${RESERVE_WAIT:-60}s)"
for _ in $(seq $((${RESERVE_WAIT:-60} * 10))); do
	grep -q '"kind":"mem.swap-reserve"' "$AUDIT" 2> /dev/null && break
	sleep 0.1
done
grep -h '"kind":"mem.swap-reserve"' "$AUDIT" || echo "no swap reserve pinned (yet): evictions pin what they lack"
step "(a) swap: 4 tenants x $EACH on --device-memory $DEVMEM"
"$BIN/membench" swap --backend "$BACKEND" --socket "$SOCK" --audit "$AUDIT" --bytes "$EACH" --buffer "$BUFFER" \
	--passes "$PASSES" --json "$RESULTS" 2>&1 | tee "$OUT/swap.log"
stop_daemon

start_daemon
step "(b) pipeline: $PIPE per item, shared segment vs host round trips"
"$BIN/membench" pipe --backend "$BACKEND" --socket "$SOCK" --bytes "$PIPE" --json "$RESULTS" 2>&1 | tee "$OUT/pipe.log"
step "(c) pageable HtoD $COPY: gpuos vs native"
"$BIN/membench" copy --backend "$BACKEND" --socket "$SOCK" --token token-0 --bytes "$COPY" --json "$RESULTS" 2>&1 | tee "$OUT/copy.log"
stop_daemon

step "results ($RESULTS)"
"$BIN/membench" table "$RESULTS"
grep -h '"kind":"mem.evict"' "$AUDIT" | head -2
grep -h '"kind":"mem.evict"' "$AUDIT" | grep '"pinned":0' | head -2
echo "evictions audited: $(grep -c '"kind":"mem.evict"' "$AUDIT") ($(grep '"kind":"mem.evict"' "$AUDIT" | grep -c '"pinned":0') with host buffers pinned ahead), swap-ins: $(grep -c '"kind":"mem.swap-in"' "$AUDIT")"
