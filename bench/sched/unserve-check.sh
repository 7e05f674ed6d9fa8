#!/usr/bin/env bash
# Checks that run.sh's daemon outlives its scenarios' watchdogs: run.sh's own
# unserve and watch (read from RUNSH), a stand-in daemon, and N scenarios
# whose processes have all ended by the time watch is called, so that watch
# kills its watchdog subshell right after forking it. A subshell killed that
# early still has run.sh's EXIT trap and runs it (bash 5.2); before unserve
# checked which shell it ran in, that stopped the daemon within a few
# scenarios on a 2-CPU machine, and in verdicts 25-1 and 26-3 on the H100.
# Exits 0 if the daemon is alive after them all, 3 if it was stopped.
#
#   bash bench/sched/unserve-check.sh bench/sched/run.sh [N]
set -euo pipefail
RUNSH=$1
N=${2:-100}
OUT=$(mktemp -d)
# watch's watchdog sleeps WARM + DUR + 45 s: 1 s here, so that the sleeps
# it leaves behind when killed do not hold this script's output open long.
WARM=0 DUR=-44
: > "$OUT/serve.log"
eval "$(sed -n '/^unserve() {.*}$/p; /^unserve() {$/,/^}$/p; /^watch() {$/,/^}$/p' "$RUNSH")"
if ! declare -F unserve > /dev/null || ! declare -F watch > /dev/null; then
	echo "no unserve and watch in $RUNSH" >&2
	exit 2
fi
bash -c 'trap "exit 0" TERM INT; while :; do sleep 0.05; done' > /dev/null 2>&1 &
SERVE=$!
# Like run.sh's, this trap runs in subshells killed early too: only this
# shell removes OUT.
trap 'unserve; [[ $BASHPID != "$$" ]] || rm -rf "$OUT"' EXIT
for i in $(seq 1 "$N"); do
	sleep 0.01 & A=$!
	sleep 0.01 & B=$!
	sleep 0.02 & C=$!
	watch $C
	watch $A $B
	if ! kill -0 "$SERVE" 2> /dev/null; then
		echo "the daemon was stopped after scenario $i of $N"
		exit 3
	fi
done
echo "the daemon is alive after $N scenarios"
