#!/usr/bin/env bash
# The scheduling acceptance on a GPU (issue 6), gpuos and native in the same
# run, ending with one table and PASS/FAIL verdicts:
#
#   (a) two tenants weighted 1:3, short vs long kernels, both saturating:
#       each one's share of GPU time, under the fair and the band policy
#       (target: within 3% of 25% / 75%);
#   (b) a high-priority service issuing a small kernel at a fixed rate while
#       two best-effort tenants saturate the GPU with long kernels: its P99
#       latency under load vs alone (target <= 1.2x) and the best-effort
#       throughput vs alone (target >= 70%), through gpuos (priority policy),
#       and the same three workloads natively as separate processes.
#
#   bench/sched/run.sh            (from anywhere; on the GPU machine)
#
# Needs nvcc and a GPU, no Go: the Go programs are built beforehand where Go
# is, with bench/sched/build.sh, into .carry/bench-sched/ (gpuos with the
# cuda backend, so CGO_ENABLED=1, and schedbench). Environment:
#   OUT=DIR     results (default /tmp/gpuos-sched-bench)
#   DUR=S       seconds measured per run (default 10); WARM=S warm-up (default 2)
#   SMS=N       the GPU's SM count (default 132, an H100 SXM)
#   ARCH=sm_90  nvcc target for the native baseline
#   RESERVE=N   SMs the daemon keeps free for the service (reserve_sms,
#               default 8; 0: none). The best-effort tenants are also run
#               alone on a daemon without it, the stricter baseline of their
#               throughput verdict.
#   TRACE=1     the service's requests traced: per request, when the client
#               launched it and saw it complete and when the GPU ran it
#               (gpuos-hp-LABEL.trace.csv, schedbench hp --trace), and the
#               daemon's stages of every launch (latency.log and
#               latency.log.csv, $GPUOS_LATENCY_LOG) and its driver calls
#               that took 200 us or more (cuda-slow.csv, $GPUOS_CUDA_SLOW_LOG)
#               and, when the service stalls, the daemon's Go execution trace
#               of the seconds before (stall-*.trace, $GPUOS_STALL_TRACE; set it
#               empty for none); with PHASE, the interleaved scenario's time
#               by stage in stages.txt (schedbench stages)
#   HICCUP=S    seconds of bench/hiccup before and after the runs (default 4;
#               0: none): how much of each CPU the host took away, which the
#               service's tail depends on (bench/RESULTS.md, session 8)
#   PHASE=MS    the interleaved scenario's phase (default 500; 0: not run):
#               the service runs for ILDUR seconds (default 2 x DUR) while
#               the best-effort tenants alternate PHASE ms idle and PHASE ms
#               saturating, and its P99 is taken over the alone phases and
#               over the loaded ones of the same window, so that what the
#               host does over time (bench/hiccup) falls on both alike;
#               requests in the first SETTLE ms (default 25) of an alone
#               phase, while the load drains, count in neither
#   ILDUR=S     the interleaved scenario's length: more phase pairs narrow
#               the report's bootstrap range of its P99 ratio (60: 60 pairs)
#   SERVE_ENV   space-separated assignments for the daemon only (its
#               drivers inherit them), e.g. SERVE_ENV=GOMAXPROCS=2
#   SERVE_WRAP, HP_WRAP, BE_WRAP
#               a command the daemon, the service (native and gpuos's) and
#               the best-effort tenants (both) run under, which must exec
#               them: e.g. the service's CPUs of its own (docs/scheduling.md)
#               SERVE_ENV=GPUOS_HIGH_CPUS=15 SERVE_WRAP="taskset -c 0-11"
#               BE_WRAP="taskset -c 0-11" HP_WRAP="taskset -c 12-14"
#   PLACE=1     that placement on this machine's last four CPUs (N of them):
#               the serving thread on N-1, the service on N-4..N-2, the daemon
#               and the best-effort tenants on 0..N-5 (wrappers set above win;
#               8 CPUs or more); the report names the placement
#   CPU=1       the CPUs sampled through both interleaved scenarios
#               (cpustat.py, every 50 ms): the report ends with each stack's
#               busy CPUs, steal and interrupts per phase kind, and per CPU
#               where the steal fell (cpu-phases.txt)
#   DIAG=1      afterwards, the service alone and with the load again with
#               every ring polling (GPUOS_RING_SPIN=$DIAG_SPIN, default 2ms):
#               what waking an idle daemon costs the service (~30 s more)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpuos-sched-bench}
BIN=${BIN:-$PWD/.carry/bench-sched}
DUR=${DUR:-10}
WARM=${WARM:-2}
SMS=${SMS:-132}
ARCH=${ARCH:-sm_90}
RESERVE=${RESERVE:-8}
TRACE=${TRACE:-0}
HICCUP=${HICCUP:-4}
PHASE=${PHASE:-500}
ILDUR=${ILDUR:-$((2 * DUR))}
SETTLE=${SETTLE:-25}
SERVE_ENV=${SERVE_ENV:-X=1}
SERVE_WRAP=${SERVE_WRAP:-} HP_WRAP=${HP_WRAP:-} BE_WRAP=${BE_WRAP:-} RUN_WRAP=
# place sets PLACE=1's placement for the CPUs this process may use
# (schedbench's TestRunShPlace runs it).
place() {
	local n
	n=$(nproc)
	((n >= 8)) || { echo "PLACE=1 needs 8 CPUs or more (this process may use $n)" >&2; exit 2; }
	SERVE_ENV="$SERVE_ENV GPUOS_HIGH_CPUS=$((n - 1))"
	SERVE_WRAP=${SERVE_WRAP:-taskset -c 0-$((n - 5))}
	BE_WRAP=${BE_WRAP:-taskset -c 0-$((n - 5))}
	HP_WRAP=${HP_WRAP:-taskset -c $((n - 4))-$((n - 2))}
}
if [[ ${PLACE:-0} == 1 ]]; then
	place
fi
# shellcheck source=bench/sched/workloads.sh
source bench/sched/workloads.sh # PTX, HP, HP_PERIOD_US, BE, SHARES; checks BIN
command -v nvcc >/dev/null || { echo "nvcc not found (add /usr/local/cuda/bin to PATH)" >&2; exit 2; }
rm -rf "$OUT"
mkdir -p "$OUT"
sed "s/^reserve_sms:.*/reserve_sms: $RESERVE/" bench/sched/sched.yaml > "$OUT/sched.yaml"
sed "s/^reserve_sms:.*/reserve_sms: 0/" bench/sched/sched.yaml > "$OUT/sched-whole.yaml"
echo "results in $OUT; $DUR s measured per run after $WARM s of warm-up"

# Which machine start this is (its boot), so that verdicts can be grouped by
# host: the lent machines come up fresh, each on a host of its own.
{
	echo "boot=$(cat /proc/sys/kernel/random/boot_id 2> /dev/null)"
	echo "cpu=$(grep -m1 '^model name' /proc/cpuinfo 2> /dev/null | cut -d: -f2- | sed 's/^ *//')"
	echo "kernel=$(uname -r)"
	high=$(sed -n 's/.*GPUOS_HIGH_CPUS=\([^ ]*\).*/\1/p' <<< "$SERVE_ENV")
	if [[ -n $high$SERVE_WRAP$HP_WRAP$BE_WRAP ]]; then
		echo "placement=serving thread on CPUs ${high:-any}; daemon ${SERVE_WRAP:-unplaced}; service ${HP_WRAP:-unplaced}; best effort ${BE_WRAP:-unplaced}"
	fi
	if [[ $SERVE_ENV != X=1 ]]; then
		echo "daemon_env=$SERVE_ENV"
	fi
} > "$OUT/host.txt"

# hiccups NAME: the host's CPU hiccups for HICCUP seconds, into OUT/NAME.txt.
hiccups() {
	[[ $HICCUP == 0 ]] && return
	[[ -x $OUT/hiccup ]] || gcc -O2 -pthread -o "$OUT/hiccup" bench/hiccup/hiccup.c || return 0
	echo "== host hiccups ($1, $HICCUP s)"
	"$OUT/hiccup" "$HICCUP" > "$OUT/$1.txt" || true
}
hiccups hiccup-before

# cpusample NAME / cpuunsample: with CPU=1, /proc/stat and /proc/interrupts
# into OUT/cpu-NAME.jsonl every 50 ms until cpuunsample; cpuphases NAME then
# prints its rates per phase kind of the interleaved scenario at START.
SAMPLER=
# (The sampler is bounded, so that a run stopped early does not leave it.)
cpusample() {
	[[ ${CPU:-0} == 1 ]] || return 0
	timeout $((WARM + ILDUR + 60)) python3 bench/sched/cpustat.py sample "$OUT/cpu-$1.jsonl" 0.05 &
	SAMPLER=$!
}
cpuunsample() {
	[[ -n $SAMPLER ]] || return 0
	kill "$SAMPLER" 2> /dev/null || true
	wait "$SAMPLER" 2> /dev/null || true
	SAMPLER=
}
cpuphases() {
	[[ -s $OUT/cpu-$1.jsonl ]] || return 0
	python3 bench/sched/cpustat.py phases "$OUT/cpu-$1.jsonl" "$(cat "$OUT/cpu-$1.start")" "$(awk -v p="$PHASE" 'BEGIN { print p / 1000 }')" "$ILDUR" |
		sed -E "s/^(alone|loaded) +/$1, interleaved, CPUs in the \1 phases: /; s/^  per CPU/  $1, per CPU/"
}

# cpumark NAME [AT]: the CPUs' time counters (/proc/stat's cpu line) into
# OUT/cpustat.txt, now or at Unix time AT (in the background): the report
# prints the steal (time the hypervisor ran something else while a CPU of
# this machine had work) between NAME-start and NAME-end.
cpumark() {
	if [[ -n ${2:-} ]]; then
		(sleep "$(awk -v at="$2" -v now="$(date +%s.%N)" 'BEGIN { d = at - now; print (d > 0 ? d : 0) }')"; cpumark "$1") &
		return
	fi
	echo "$1 $(grep '^cpu ' /proc/stat)" >> "$OUT/cpustat.txt"
}

echo "== native baseline (three processes, no gpuos)"
nvcc -O2 -arch="$ARCH" -o "$OUT/native" bench/sched/native.cu
# Concurrent processes measure the same window: from START (set per scenario)
# for DUR seconds, after starting up and warming up until then.
start_in() { START=$(date -d "+$1 seconds" +%s.%N); }
# RUNDUR (seconds) overrides DUR for one scenario.
# RUN_WRAP (HP_WRAP, BE_WRAP) is the command a process runs under.
# shellcheck disable=SC2086 # RUN_WRAP is a command line
native() { $RUN_WRAP "$OUT/native" "$@" --duration-s "${RUNDUR:-$DUR}" --start-at "$START"; }
hp_native() { local label=$1; shift; RUN_WRAP=$HP_WRAP native hp "${HP[@]}" --period-us "$HP_PERIOD_US" --label "$label" "$@"; }
be_native() { local label=$1; shift; RUN_WRAP=$BE_WRAP native be "${BE[@]}" --label "$label" "$@"; }
echo "   service alone";           start_in "$WARM"; hp_native alone > "$OUT/native-hp-alone.json"
echo "   best effort alone (two)"; start_in "$WARM"; be_native alone > "$OUT/native-be-alone-1.json" & be_native alone > "$OUT/native-be-alone-2.json"; wait
echo "   all three";               start_in "$WARM"
be_native mixed > "$OUT/native-be-mixed-1.json" & be_native mixed > "$OUT/native-be-mixed-2.json" & hp_native mixed > "$OUT/native-hp-mixed.json"
wait
if [[ $PHASE != 0 ]]; then
	echo "   interleaved: best effort idle and saturating by turns of $PHASE ms"; start_in "$WARM"
	IL=(--phase-ms "$PHASE" --settle-ms "$SETTLE")
	export RUNDUR=$ILDUR
	cpumark native-interleaved-start "$START"
	cpusample native; echo "$START" > "$OUT/cpu-native.start"
	be_native interleaved "${IL[@]}" > "$OUT/native-be-interleaved-1.json" & be_native interleaved "${IL[@]}" > "$OUT/native-be-interleaved-2.json" &
	hp_native interleaved "${IL[@]}" > "$OUT/native-hp-interleaved.json"
	cpumark native-interleaved-end
	cpuunsample
	wait
	unset RUNDUR
fi

echo "== gpuos (cuda backend)"
export GPUOS_SOCKET=$OUT/gpuos.sock
if [[ $TRACE != 0 ]]; then
	export GPUOS_LATENCY_LOG=${GPUOS_LATENCY_LOG:-$OUT/latency.log} GPUOS_CUDA_SLOW_LOG=${GPUOS_CUDA_SLOW_LOG:-$OUT/cuda-slow.csv} \
		GPUOS_STALL_TRACE=${GPUOS_STALL_TRACE-$OUT}
fi
SERVE=
# serve [LOG [CONFIG]]: starts the daemon (with the environment of the caller)
# and waits until it answers.
serve() {
	local log=${1:-$OUT/serve.log} config=${2:-$OUT/sched.yaml}
	# shellcheck disable=SC2086 # SERVE_ENV splits into assignments
	env $SERVE_ENV $SERVE_WRAP "$BIN/gpuos" serve --backend cuda --config "$config" --socket "$GPUOS_SOCKET" --audit "$OUT/audit.jsonl" >> "$log" 2>&1 &
	SERVE=$!
	for i in $(seq 1 100); do
		GPUOS_TOKEN=hp "$BIN/gpuos" policy list > /dev/null 2>&1 && return 0
		kill -0 $SERVE 2>/dev/null || { echo "gpuos serve exited:"; cat "$log"; exit 1; }
		sleep 0.2
	done
	echo "gpuos serve did not answer:"; cat "$log"; exit 1
}
# unserve stops the daemon, and says so in its log. Only the script's own
# shell does: a subshell killed right after its fork (watch's watchdog, when
# the scenario's processes had already ended) still has this EXIT trap and
# runs it, which stopped the daemon in the middle of verdicts 25-1 and 26-3
# (bench/RESULTS.md, session 26).
unserve() {
	[[ $BASHPID == "$$" ]] || return 0
	[[ -n $SERVE ]] && echo "run.sh: stopping the daemon (pid $SERVE), called from ${FUNCNAME[1]:-the top} at line ${BASH_LINENO[0]}" >> "$OUT/serve.log"
	kill $SERVE 2>/dev/null || true
	wait $SERVE 2>/dev/null || true
	SERVE=
}
trap 'unserve' EXIT
serve
gp() { GPUOS_TOKEN=hp "$BIN/gpuos" "$@"; }
# watch PIDS...: waits for a scenario's processes; if they overrun, every gpuos
# process (manager, drivers, clients) dumps its goroutines (SIGQUIT) into the
# logs, so a hang leaves evidence instead of a silent timeout.
watch() {
	( sleep $((WARM + ${RUNDUR:-$DUR} + 45))
	  echo "scenario overran: dumping goroutines" | tee -a "$OUT/serve.log" >&2
	  pkill -QUIT -f "gpuos driver" || true
	  pkill -QUIT -f "schedbench" || true
	  sleep 2; kill -QUIT $SERVE 2>/dev/null || true ) &
	local w=$!
	wait "$@"
	kill $w 2>/dev/null || true
}
# shellcheck disable=SC2086 # RUN_WRAP is a command line
sb() { local tok=$1; shift; GPUOS_TOKEN=$tok $RUN_WRAP "$BIN/schedbench" "$@" --ptx "$PTX" --duration "${RUNDUR:-$DUR}s" --start-at "$START"; }
gp policy list | tee "$OUT/policies.txt"
gp policy use priority
hp_gpuos() {
	local label=$1 trace=()
	shift
	[[ $TRACE != 0 ]] && trace=(--trace "$OUT/gpuos-hp-$label.trace.csv")
	RUN_WRAP=$HP_WRAP sb hp hp "${HP[@]}" --period "${HP_PERIOD_US}us" --label "$label" "${trace[@]}" "$@"
}
be_gpuos() { local tok=$1 label=$2; shift 2; RUN_WRAP=$BE_WRAP sb "$tok" be "${BE[@]}" --label "$label" "$@"; }
echo "   service alone";           start_in "$WARM"; hp_gpuos alone > "$OUT/gpuos-hp-alone.json" 2> "$OUT/gpuos-hp-alone.err" & watch $!
gp ps --tenants > "$OUT/tenants-after-hp-alone.txt"
echo "   best effort alone (two)"; start_in "$WARM"
be_gpuos be1 alone > "$OUT/gpuos-be-alone-1.json" 2> "$OUT/gpuos-be-alone-1.err" & A=$!
be_gpuos be2 alone > "$OUT/gpuos-be-alone-2.json" 2> "$OUT/gpuos-be-alone-2.err" & B=$!
watch $A $B
echo "   all three (priority policy)"; start_in "$WARM"
be_gpuos be1 mixed > "$OUT/gpuos-be-mixed-1.json" 2> "$OUT/gpuos-be-mixed-1.err" & A=$!
be_gpuos be2 mixed > "$OUT/gpuos-be-mixed-2.json" 2> "$OUT/gpuos-be-mixed-2.err" & B=$!
hp_gpuos mixed > "$OUT/gpuos-hp-mixed.json" 2> "$OUT/gpuos-hp-mixed.err" & C=$!
watch $A $B $C
gp ps --tenants | tee "$OUT/tenants-after-latency.txt"
if [[ $PHASE != 0 ]]; then
	echo "   interleaved: best effort idle and saturating by turns of $PHASE ms"; start_in "$WARM"
	IL=(--phase "${PHASE}ms" --settle "${SETTLE}ms")
	export RUNDUR=$ILDUR
	be_gpuos be1 interleaved "${IL[@]}" > "$OUT/gpuos-be-interleaved-1.json" 2> "$OUT/gpuos-be-interleaved-1.err" & A=$!
	be_gpuos be2 interleaved "${IL[@]}" > "$OUT/gpuos-be-interleaved-2.json" 2> "$OUT/gpuos-be-interleaved-2.err" & B=$!
	hp_gpuos interleaved "${IL[@]}" > "$OUT/gpuos-hp-interleaved.json" 2> "$OUT/gpuos-hp-interleaved.err" & C=$!
	cpumark gpuos-interleaved-start "$START"
	cpusample gpuos; echo "$START" > "$OUT/cpu-gpuos.start"
	watch $C
	cpumark gpuos-interleaved-end
	cpuunsample
	watch $A $B
	unset RUNDUR
fi
for pol in fair band; do
	echo "   shares 1:3 under $pol"
	gp policy use "$pol"
	start_in "$((WARM + 3))" # two sessions, two calibrations first
	sb a shares --tokens a,b --weights 1,3 "${SHARES[@]}" --label "$pol" > "$OUT/gpuos-shares-$pol.json" 2> "$OUT/gpuos-shares-$pol.err" & watch $!
done
gp policy tenants | tee "$OUT/tenants.txt"
grep -o '"sms_[a-z]*":[0-9]*\|"reserve_[a-z]*":[^,}]*' "$OUT/audit.jsonl" | head -3 | tee "$OUT/reserve.txt" || true
unserve
if [[ $RESERVE != 0 ]]; then
	# The stricter baseline: the best-effort tenants alone on the whole GPU.
	echo "== gpuos, no SMs reserved: best effort alone (two)"
	serve "$OUT/serve-whole.log" "$OUT/sched-whole.yaml"
	gp policy use priority
	start_in "$WARM"
	be_gpuos be1 whole > "$OUT/gpuos-be-whole-1.json" 2> "$OUT/gpuos-be-whole-1.err" & A=$!
	be_gpuos be2 whole > "$OUT/gpuos-be-whole-2.json" 2> "$OUT/gpuos-be-whole-2.err" & B=$!
	watch $A $B
	unserve
fi

if [[ ${DIAG:-0} != 0 ]]; then
	# Diagnostics, not verdicts: the service again (alone, then with the
	# best-effort load) with every ring polling through the service's whole
	# period, so that no daemon or client thread sleeps between requests:
	# what the service pays for waking an idle daemon shows as the difference.
	echo "== diagnostics: rings polling for ${DIAG_SPIN:-2ms} (GPUOS_RING_SPIN)"
	export GPUOS_RING_SPIN=${DIAG_SPIN:-2ms}
	serve "$OUT/serve-spin.log" "$OUT/sched.yaml"
	gp policy use priority
	echo "   service alone";           start_in "$WARM"; hp_gpuos alone > "$OUT/gpuos-hp-alone-spin.json" 2> "$OUT/gpuos-hp-alone-spin.err" & watch $!
	echo "   all three (priority policy)"; start_in "$WARM"
	be_gpuos be1 mixed > "$OUT/gpuos-be-mixed-spin-1.json" 2> "$OUT/gpuos-be-mixed-spin-1.err" & A=$!
	be_gpuos be2 mixed > "$OUT/gpuos-be-mixed-spin-2.json" 2> "$OUT/gpuos-be-mixed-spin-2.err" & B=$!
	hp_gpuos mixed > "$OUT/gpuos-hp-mixed-spin.json" 2> "$OUT/gpuos-hp-mixed-spin.err" & C=$!
	watch $A $B $C
	unserve
	unset GPUOS_RING_SPIN
fi
trap - EXIT

echo
hiccups hiccup-after
if [[ $TRACE != 0 && $PHASE != 0 ]]; then
	"$BIN/schedbench" stages --phase "${PHASE}ms" --settle "${SETTLE}ms" "$OUT" > "$OUT/stages.txt" 2>&1 || true
fi
# The report's exit status is run.sh's (1: a check failed), after the CPUs'.
verdict=0
"$BIN/schedbench" report "$OUT" | tee "$OUT/report.txt" || verdict=$?
if [[ ${CPU:-0} == 1 ]]; then
	{ cpuphases native; cpuphases gpuos; } > "$OUT/cpu-phases.txt" 2>&1 || true
	tee -a "$OUT/report.txt" < "$OUT/cpu-phases.txt"
fi
exit $verdict
