#!/usr/bin/env bash
# Do wake-ups of idle vCPUs cost a spinning thread elsewhere? (issue 6,
# session 21). hiccup spins on the last CPUs (from FIRST, default 14) for DUR
# seconds (default 10) beside nothing, beside waker sleeping and waking
# (~5,000 wake-ups a second on CPUs 0..FIRST-1, as the daemon makes under a
# best-effort load) and beside waker spinning the same rhythm; ROUNDS times
# (default 2). Prints per run the whole machine's steal and CAL interrupts,
# hiccup's lines for its CPUs and its summary. Needs gcc; no GPU.
#
#   bash bench/hiccup/wakeprobe.sh        (on the GPU machine, ~35 s a round)
set -euo pipefail
cd "$(dirname "$0")"
FIRST=${FIRST:-14}
DUR=${DUR:-10}
ROUNDS=${ROUNDS:-2}
BIN=$(mktemp -d)
gcc -O2 -pthread -o "$BIN/hiccup" hiccup.c
gcc -O2 -pthread -o "$BIN/waker" waker.c
snap() { # steal in USER_HZ ticks, then the CAL interrupts over all CPUs
	awk '/^cpu /{print $9}' /proc/stat
	awk '/CAL:/{s=0; for (i=2; i<=NF; i++) if ($i ~ /^[0-9]+$/) s+=$i; print s}' /proc/interrupts
}
hz=$(getconf CLK_TCK)
for r in $(seq 1 "$ROUNDS"); do
	for m in none sleep spin; do
		read -r st0 cal0 < <(snap | paste -sd' ')
		if [[ $m != none ]]; then "$BIN/waker" "$m" "$DUR.5" 4 20 300 $((FIRST - 1)) > "$BIN/w.txt" & fi
		"$BIN/hiccup" "$DUR" "$FIRST" > "$BIN/h.txt"
		wait
		read -r st1 cal1 < <(snap | paste -sd' ')
		echo "== $m, round $r: steal $(((st1 - st0) * 1000 / hz)) ms, CAL $((cal1 - cal0)); $(cat "$BIN/w.txt" 2> /dev/null || true)"
		awk -v f="$FIRST" '$1 ~ /^[0-9]+$/ && $1 >= f' "$BIN/h.txt"
		grep summary "$BIN/h.txt"
		rm -f "$BIN/w.txt"
	done
done
rm -rf "$BIN"
