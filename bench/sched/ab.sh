#!/usr/bin/env bash
# A/B of two daemon configurations on the service's latency (issue 6): per
# round, each configuration gets a fresh daemon (reserve_sms, the priority
# policy) running the interleaved scenario of run.sh traced: the service
# for 2 x DUR seconds while two best-effort tenants idle and saturate by
# turns of PHASE ms. Configurations alternate, ROUNDS times, so that the
# host's drift falls on both. For each run it prints the service's
# P50/P90/P99 in the alone and the loaded phases and where its time went
# (schedbench stages).
#
#   A="X=1" B="GPUOS_SYNC_FENCE=0" bench/sched/ab.sh      (on the GPU machine)
#
# ARMS names the arms run in each round, in order (default AB; ABC adds a
# third, C, set as A and B are).
# A and B are environment assignments for the daemon (X=1: none); A_CLIENTS
# and B_CLIENTS, for every client process of that arm (default X=1); A_WITH
# and B_WITH, a shell command run beside the arm (started before its daemon,
# its process group killed after; output in the run's with.log); A_BE and
# B_BE, the best-effort tenants' workload arguments for that arm instead of
# workloads.sh's BE (e.g. longer kernels, fewer per second); A_WRAP and
# B_WRAP, a command the arm's daemon runs under (e.g. "taskset -c 0-3", to
# keep its threads on a few CPUs; it must exec the daemon); A_BE_WRAP and
# B_BE_WRAP, one the arm's best-effort clients run under; A_HP_WRAP and
# B_HP_WRAP, one the service runs under. Built as
# for run.sh (bench/sched/build.sh, into .carry/bench-sched/). Environment:
#   OUT=DIR     results, a directory per run (default /tmp/gpuos-sched-ab)
#   ROUNDS=N    default 3;  DUR=S default 6;  PHASE=MS default 500;
#   SETTLE=MS   default 25; RESERVE=N default 8; SMS=N default 132
#   HP_ARGS="…" more arguments for the service (e.g. --think 40us)
#   CPU=1       also sample the CPUs (cpustat.py) and print, per phase kind,
#               busy, steal, the LOC and CAL interrupt rates and the
#               processes' sleeps (as cpuprobe.sh does)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpuos-sched-ab}
BIN=${BIN:-$PWD/.carry/bench-sched}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-6}
WARM=2
PHASE=${PHASE:-500}
SETTLE=${SETTLE:-25}
RESERVE=${RESERVE:-8}
SMS=${SMS:-132}
# shellcheck source=bench/sched/workloads.sh
source bench/sched/workloads.sh # PTX, HP, HP_PERIOD_US, BE; checks BIN
IL=(--phase "${PHASE}ms" --settle "${SETTLE}ms")
mkdir -p "$OUT"
echo "host: boot $(tr -d - < /proc/sys/kernel/random/boot_id | cut -c1-8)" # the machine start, as run.sh's report names it
sed "s/^reserve_sms:.*/reserve_sms: $RESERVE/" bench/sched/sched.yaml > "$OUT/sched.yaml"
export GPUOS_SOCKET=$OUT/gpuos.sock
start_in() { START=$(date -d "+$1 seconds" +%s.%N); }
# shellcheck disable=SC2086 # CLIENT_ENV is a list of assignments
sb() { local tok=$1; shift; env $CLIENT_ENV GPUOS_TOKEN="$tok" $CLIENT_WRAP timeout $((4 * DUR + 60)) "$BIN/schedbench" "$@" --ptx "$PTX" --duration "$((2 * DUR))s" --start-at "$START"; }

one() { # NAME ENV CLIENT_ENV WITH BE_ARGS WRAP BE_WRAP HP_WRAP
	local name=$1 env=$2 o=$OUT/$1 with=$4 wrap=$6 be_wrap=$7 hp_wrap=$8 beside=
	local be=("${BE[@]}")
	# shellcheck disable=SC2206 # BE_ARGS is a list of arguments
	if [[ -n $5 ]]; then be=($5); fi
	CLIENT_ENV=$3
	rm -rf "$o"; mkdir -p "$o"
	if [[ -n $with ]]; then setsid bash -c "$with" > "$o/with.log" 2>&1 & beside=$!; fi
	date +%s.%N > "$o/serve.start" # for lining up the daemon's own clock (e.g. GODEBUG=gctrace=1's @s)
	# shellcheck disable=SC2086 # ENV is a list of assignments, WRAP a command line
	env GPUOS_LATENCY_LOG="$o/latency.log" GPUOS_STALL_TRACE= $env $wrap "$BIN/gpuos" serve --backend cuda \
		--config "$OUT/sched.yaml" --socket "$GPUOS_SOCKET" > "$o/serve.log" 2>&1 &
	local daemon=$!
	for _ in $(seq 1 100); do GPUOS_TOKEN=hp "$BIN/gpuos" policy list > /dev/null 2>&1 && break; sleep 0.2; done
	GPUOS_TOKEN=hp "$BIN/gpuos" policy use priority > /dev/null
	local sampler=
	if [[ ${CPU:-} = 1 ]]; then
		python3 bench/sched/cpustat.py sample "$o/cpu.jsonl" 0.05 gpuos,schedbench & sampler=$!
	fi
	start_in $WARM
	date +%s.%N > "$o/clients.start"
	CLIENT_WRAP=$be_wrap
	sb be1 be "${be[@]}" "${IL[@]}" --label il > "$o/be1.json" 2> "$o/be1.err" & local b1=$!
	sb be2 be "${be[@]}" "${IL[@]}" --label il > "$o/be2.json" 2> "$o/be2.err" & local b2=$!
	CLIENT_WRAP=$hp_wrap
	# shellcheck disable=SC2086 # HP_ARGS is a list of arguments
	sb hp hp "${HP[@]}" ${HP_ARGS:-} --period "${HP_PERIOD_US}us" "${IL[@]}" --label interleaved --trace "$o/gpuos-hp-interleaved.trace.csv" > "$o/gpuos-hp-interleaved.json" 2> "$o/hp.err"
	CLIENT_WRAP=
	wait $b1 $b2
	GPUOS_TOKEN=hp "$BIN/gpuos" policy tenants > "$o/tenants.txt" 2>&1 || true
	kill $daemon; wait $daemon 2> /dev/null || true
	[[ -n $sampler ]] && kill "$sampler"
	if [[ -n $beside ]]; then kill -- -"$beside" 2> /dev/null || true; wait "$beside" 2> /dev/null || true; fi
	sleep 0.5
	python3 - "$name" "$o" <<'PY'
import json, sys
name, o = sys.argv[1], sys.argv[2]
r = json.load(open(o + "/gpuos-hp-interleaved.json")); a = r["alone"]
be = sum(json.load(open(f"{o}/{t}.json")).get("kernels_per_s", 0) for t in ("be1", "be2"))
sync = r.get("sync", "")
if sync == "watch":
    sync += f" ({r.get('sync_watched', 0)} on the page, {r.get('sync_asked', 0)} asked)"
print(f"{name:10s} P50/P90/P99 alone {a['p50_us']:.1f} {a['p90_us']:.1f} {a['p99_us']:.1f}  loaded {r['p50_us']:.1f} {r['p90_us']:.1f} {r['p99_us']:.1f}  ratio {r['p99_us']/a['p99_us']:.2f}  best effort {be:.0f} kernels/s  sync {sync}")
PY
	"$BIN/schedbench" ratio "$o/gpuos-hp-interleaved.json" | sed 's/^.*: P99/    P99/'
	if [[ -n $sampler ]]; then
		python3 bench/sched/cpustat.py phases "$o/cpu.jsonl" "$START" "$(python3 -c "print($PHASE / 1000)")" "$((2 * DUR))" | sed 's/^/    /'
	fi
	"$BIN/schedbench" stages --phase "${PHASE}ms" --settle "${SETTLE}ms" "$o" | sed 's/^/    /'
}

ARMS=${ARMS:-AB}
# arm I sets x, the I-th arm's letter, and the names of its variables.
arm() { x=${ARMS:$1:1}; clients=${x}_CLIENTS with=${x}_WITH be=${x}_BE wrap=${x}_WRAP be_wrap=${x}_BE_WRAP hp_wrap=${x}_HP_WRAP; }
for ((i = 0; i < ${#ARMS}; i++)); do
	arm "$i"
	echo "$x: ${!x:-X=1} (clients: ${!clients:-X=1}${!with:+; beside: ${!with}}${!be:+; best effort: ${!be}}${!wrap:+; daemon under: ${!wrap}}${!be_wrap:+; best effort under: ${!be_wrap}}${!hp_wrap:+; service under: ${!hp_wrap}})"
done
for r in $(seq 1 "$ROUNDS"); do
	for ((i = 0; i < ${#ARMS}; i++)); do
		arm "$i"
		one "$x-$r" "${!x:-X=1}" "${!clients:-X=1}" "${!with:-}" "${!be:-}" "${!wrap:-}" "${!be_wrap:-}" "${!hp_wrap:-}"
	done
done
