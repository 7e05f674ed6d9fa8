#!/usr/bin/env bash
# Two tenants in one shared CUDA context, both unmodified C programs through
# gpuos's libcuda.so.1: a victim keeps computing and checking its data while
# an attacker launches every kernel of testdata/guard/attacks at it, one
# process each. Passes when every attack is stopped, the victim's data never
# changes, its kernels stay correct, and the driver process (the one CUDA
# context both share) never restarts.
#
#   testdata/isolation/run.sh BIN OUT      (from the repository root)
#
# BIN holds gpuos and libcuda.so.1 (go build -o BIN/gpuos ./cmd/gpuos;
# go build -buildmode=c-shared -ldflags=-extldflags=-Wl,-soname,libcuda.so.1
# -o BIN/libcuda.so.1 ./cmd/libcuda). Needs gcc. BACKEND (auto) picks the
# daemon's backend: sim in CI, cuda on the lent GPU. OUT gets the logs.
set -uo pipefail
BIN=$(cd "$1" && pwd); OUT=$(mkdir -p "$2" && cd "$2" && pwd)
BACKEND=${BACKEND:-auto}
REPO=$PWD
[ -e "$BIN/libcuda.so" ] || ln -s libcuda.so.1 "$BIN/libcuda.so"
for p in victim attacker; do
	gcc -std=gnu11 -O1 -Wall -Werror -I "$REPO/include" "$REPO/testdata/isolation/$p.c" -o "$OUT/$p" -L "$BIN" -lcuda || exit 2
done
cat > "$OUT/tenants.yaml" <<'YAML'
tenants:
  - {name: victim, uids: [self], memory: 1GiB}
  - {name: attacker, uids: [self], memory: 1GiB}
YAML
SOCK=$OUT/gpuos.sock CTL=$OUT/ctl
rm -rf "$CTL" "$SOCK" "$OUT/audit.jsonl" "$OUT/attacker.log"; mkdir -p "$CTL"
"$BIN/gpuos" serve --backend "$BACKEND" --socket "$SOCK" --config "$OUT/tenants.yaml" --audit "$OUT/audit.jsonl" > "$OUT/serve.log" 2>&1 &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null' EXIT
for _ in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.05; done
run() { "$BIN/gpuos" run --shim "$BIN" --socket "$SOCK" --tenant "$@"; }

run victim -- "$OUT/victim" "$REPO/testdata/kernels" "$CTL" > "$OUT/victim.log" 2>&1 &
VICTIM=$!
for _ in $(seq 600); do [ -s "$CTL/victim.addr" ] && break; sleep 0.05; done
[ -s "$CTL/victim.addr" ] || { echo "the victim never published its address"; cat "$OUT/victim.log"; exit 1; }
ADDR=$(cat "$CTL/victim.addr")
"$BIN/gpuos" ps --socket "$SOCK" > "$OUT/ps-before.txt" 2>&1
drivers() { ps -eo pid,args | awk -v bin="$BIN/gpuos" '$2 == bin && $3 == "driver" {print $1}' | sort | tr '\n' ' '; }
drivers_before=$(drivers)

stopped=0 total=0
for f in "$REPO"/testdata/guard/attacks/*.ptx; do
	total=$((total + 1))
	if run attacker -- "$OUT/attacker" "$f" "$ADDR" >> "$OUT/attacker.log" 2>&1; then
		stopped=$((stopped + 1))
	fi
done
"$BIN/gpuos" ps --socket "$SOCK" > "$OUT/ps-after.txt" 2>&1
touch "$CTL/stop"
wait $VICTIM; victim_rc=$?
drivers_after=$(drivers)

grep -E "^attacker:" "$OUT/attacker.log"
tail -2 "$OUT/victim.log"
echo "violations audited: $(grep -c '"kind":"violation"' "$OUT/audit.jsonl")"
echo "attacks stopped: $stopped of $total; victim exit $victim_rc; driver processes before/after the attacks: $drivers_before/ $drivers_after; backend $BACKEND"
[ "$stopped" = "$total" ] && [ "$victim_rc" = 0 ] && [ -n "$drivers_before" ] && [ "$drivers_before" = "$drivers_after" ] && { echo "PASS isolation"; exit 0; }
echo "FAIL isolation"; exit 1
