#!/usr/bin/env bash
# What the CPUs do in the interleaved scenario (issue 6): per daemon
# configuration, a fresh daemon runs the service with the two best-effort
# tenants idle and saturating by turns of PHASE ms while cpustat.py samples
# the CPUs; then the same natively, once. For each run it prints the
# service's P50 and P99 in the alone and loaded phases, the best-effort
# throughput, and per phase kind the CPUs busy, the hypervisor's steal and
# the timer (LOC) and wake-up (CAL) interrupt rates, and per process (daemon,
# drivers, clients) the CPU it ran, its threads' wait for a CPU and how often
# they slept and were preempted, and the ratio's bootstrap range (schedbench
# ratio). Configurations alternate, ROUNDS times.
#
#   CFGS="X=1 GPUOS_SYNC_OWN=0" bench/sched/cpuprobe.sh      (on the GPU machine)
#
# CFGS is a space-separated list of configurations, each a comma-separated
# list of environment assignments for the daemon (X=1: none), or, prefixed
# with be. or hp., for the best-effort clients or the service's client
# (be.GPUOS_RING_SPIN=10ms: the best-effort clients poll their rings 10 ms).
# Built as for run.sh (bench/sched/build.sh, into .carry/bench-sched/).
# Each run's start is kept in OUT/start-N.txt. Environment:
#   OUT=DIR     results (default /tmp/gpuos-sched-cpu)
#   ROUNDS=N    default 2;  DUR=S default 6;  PHASE=MS default 500;
#   RESERVE=N   default 8;  SMS=N default 132;  ARCH default sm_90
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpuos-sched-cpu}
BIN=${BIN:-$PWD/.carry/bench-sched}
CFGS=${CFGS:-X=1}
ROUNDS=${ROUNDS:-2}
DUR=${DUR:-6}
WARM=2
PHASE=${PHASE:-500}
RESERVE=${RESERVE:-8}
SMS=${SMS:-132}
ARCH=${ARCH:-sm_90}
# shellcheck source=bench/sched/workloads.sh
source bench/sched/workloads.sh # PTX, HP, HP_PERIOD_US, BE; checks BIN
rm -rf "$OUT"
mkdir -p "$OUT"
nvcc -O2 -arch="$ARCH" -o "$OUT/native" bench/sched/native.cu
sed "s/^reserve_sms:.*/reserve_sms: $RESERVE/" bench/sched/sched.yaml > "$OUT/sched.yaml"
export GPUOS_SOCKET=$OUT/gpuos.sock
SPAN=$((2 * DUR))
phases() { python3 bench/sched/cpustat.py phases "$1" "$START" "$(python3 -c "print($PHASE / 1000)")" "$SPAN" | sed 's/^/    /'; }
summary() { # HP_JSON BE_JSON...
	python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); a = r["alone"]
be = sum(json.load(open(f)).get("kernels_per_s", 0) for f in sys.argv[2:])
print(f"P50 {a['p50_us']:.1f} / {r['p50_us']:.1f}  P99 alone {a['p99_us']:.1f} loaded {r['p99_us']:.1f}  ratio {r['p99_us'] / a['p99_us']:.2f}" + (f"  BE {be:.0f} kernels/s" if be else ""))
PY
}
n=0
for round in $(seq 1 "$ROUNDS"); do
	for cfg in $CFGS; do
		n=$((n + 1))
		daemon_env=(X=1) be_env=(X=1) hp_env=(X=1)
		IFS=, read -ra assignments <<< "$cfg"
		for a in "${assignments[@]}"; do
			case $a in
			be.*) be_env+=("${a#be.}") ;;
			hp.*) hp_env+=("${a#hp.}") ;;
			*) daemon_env+=("$a") ;;
			esac
		done
		env "${daemon_env[@]}" "$BIN/gpuos" serve --backend cuda --config "$OUT/sched.yaml" --socket "$GPUOS_SOCKET" > "$OUT/serve-$n.log" 2>&1 &
		daemon=$!
		for _ in $(seq 1 100); do GPUOS_TOKEN=hp "$BIN/gpuos" policy list > /dev/null 2>&1 && break; sleep 0.2; done
		GPUOS_TOKEN=hp "$BIN/gpuos" policy use priority > /dev/null
		python3 bench/sched/cpustat.py sample "$OUT/cpu-$n.jsonl" 0.05 gpuos,schedbench & sampler=$!
		START=$(date -d "+$WARM seconds" +%s.%N)
		echo "$START" > "$OUT/start-$n.txt"
		sb() { local tok=$1; shift; env "${client_env[@]}" GPUOS_TOKEN=$tok timeout $((SPAN + 60)) "$BIN/schedbench" "$@" --ptx "$PTX" --duration "${SPAN}s" --start-at "$START" --phase "${PHASE}ms"; }
		client_env=("${be_env[@]}")
		sb be1 be "${BE[@]}" --label il > "$OUT/be1-$n.json" 2> "$OUT/be1-$n.err" & b1=$!
		sb be2 be "${BE[@]}" --label il > "$OUT/be2-$n.json" 2> "$OUT/be2-$n.err" & b2=$!
		client_env=("${hp_env[@]}")
		sb hp hp "${HP[@]}" --period "${HP_PERIOD_US}us" --label interleaved > "$OUT/hp-$n.json" 2> "$OUT/hp-$n.err"
		wait $b1 $b2
		kill $sampler $daemon; wait $daemon 2> /dev/null || true
		echo "[$cfg] round $round: $(summary "$OUT/hp-$n.json" "$OUT/be1-$n.json" "$OUT/be2-$n.json")"
		"$BIN/schedbench" ratio "$OUT/hp-$n.json" | sed 's/^.*: P99/    P99/'
		phases "$OUT/cpu-$n.jsonl"
	done
done
python3 bench/sched/cpustat.py sample "$OUT/cpu-native.jsonl" 0.05 native & sampler=$!
START=$(date -d "+$WARM seconds" +%s.%N)
echo "$START" > "$OUT/start-native.txt"
nat() { timeout $((SPAN + 60)) "$OUT/native" "$@" --duration-s "$SPAN" --start-at "$START" --phase-ms "$PHASE"; }
nat be "${BE[@]}" --label il > "$OUT/native-be1.json" & b1=$!
nat be "${BE[@]}" --label il > "$OUT/native-be2.json" & b2=$!
nat hp "${HP[@]}" --period-us "$HP_PERIOD_US" --label interleaved > "$OUT/native-hp.json"
wait $b1 $b2
kill $sampler
echo "[native]: $(summary "$OUT/native-hp.json")"
phases "$OUT/cpu-native.jsonl"
