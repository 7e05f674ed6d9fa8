#!/usr/bin/env bash
# Several verdicts of run.sh in one device call, for issue 6's tally of the
# P99 point (each about 215 s with the settings below, so two fit in a call's
# 600 s). Each run's summary lines go to stdout, its whole report and results
# (traces left out) to $OUT.
#
#   N=2 bash bench/sched/verdicts.sh              (on the GPU machine)
#   N=2 GPUOS_SYNC_CLIENT=1 bash bench/sched/verdicts.sh   (the service on its completion page)
#   N=1 ILDUR=180 bash bench/sched/verdicts.sh    (one verdict of 180 phase pairs, about 455 s:
#                                                 a narrower interval where the host's slow
#                                                 episodes set the service's P99)
#   ARMS="P D" bash bench/sched/verdicts.sh       (one verdict placed, PLACE=1, then one not,
#                                                 PLACE=0: two arms on one host, in the order
#                                                 given; N is then the number of arms)
#   ARMS="D C" C_ENV="GPUOS_SCHED_LOWPOLL=off ..." bash bench/sched/verdicts.sh
#                                                (C: as D, with C_ENV's assignments added to
#                                                 the daemon's SERVE_ENV: a daemon setting
#                                                 against the default, by turns on one host)
#
# Built as for run.sh (bench/sched/build.sh; carry .carry/bench-sched).
# The environment reaches run.sh and, through it, the daemon and the clients
# (SERVE_ENV and the others run.sh reads work as there). RUNSH names another
# script to run in run.sh's place (the tests' stand-in).
set -u
cd "$(dirname "$0")/../.."
RUNSH=${RUNSH:-bench/sched/run.sh}
ILDUR=${ILDUR:-60}
OUT=${OUT:-/tmp/gpuos-verdicts}
if [[ -n ${ARMS:-} ]]; then
	read -ra arms <<< "$ARMS"
else
	mapfile -t arms < <(for _ in $(seq 1 "${N:-2}"); do echo -; done) # as PLACE says
fi
N=${#arms[@]}
for a in "${arms[@]}"; do
	[[ $a == [PDC-] ]] || { echo "verdicts.sh: arm $a in ARMS=\"$ARMS\" is none of P (placed), D (default), C (C_ENV)" >&2; exit 2; }
	[[ $a != C || -n ${C_ENV:-} ]] || { echo "verdicts.sh: arm C in ARMS=\"$ARMS\" needs C_ENV, the daemon's assignments" >&2; exit 2; }
done
mkdir -p "$OUT"
for i in $(seq 1 "$N"); do
	serve_env=${SERVE_ENV:-X=1}
	case ${arms[i - 1]} in
	P) arm=placed place=1 ;;
	D) arm=default place=0 ;;
	C) arm="C: $C_ENV" place=0 serve_env="$serve_env $C_ENV" ;;
	-) arm= place=${PLACE:-0} ;;
	esac
	dir=/tmp/gpuos-verdict-$i
	rm -rf "$dir"
	# run.sh takes about 95 s besides its two interleaved scenarios (gpuos's and native's)
	OUT=$dir PLACE=$place SERVE_ENV=$serve_env RESERVE=${RESERVE:-8} DUR=${DUR:-6} ILDUR=$ILDUR timeout $((170 + 2 * ILDUR)) bash "$RUNSH" > "$OUT/run-$i.txt" 2>&1
	rc=$?
	echo "== verdict $i of $N${arm:+ ($arm)}: run.sh rc=$rc"
	grep -E "interleaved|ratio|P99|control|throughput|host \(|host:|placement:|daemon environment:|CPUs in the|steal|PASS|FAIL" "$dir/report.txt" 2>/dev/null | grep -v "^ *fair\|^ *band"
	cp "$dir/report.txt" "$OUT/report-$i.txt" 2>/dev/null
	(cd "$dir" 2>/dev/null && tar czf "$OUT/verdict-$i.tgz" --exclude='*.trace*' --exclude='*.csv' --exclude='latency.log*' . 2>/dev/null)
done
