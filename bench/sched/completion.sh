#!/usr/bin/env bash
# Completion on the client's side, on the GPU (issue 6; one device call: 352 s on the
# H100 in session 17):
#   1. the cuda backend's conformance, FenceWord among it: fences written into
#      memory the caller mapped, seen in a second, read-only mapping;
#   2. the guard's attacks through the daemon on the GPU, the service waiting
#      on its completion page ($GPUOS_SYNC_CLIENT=1): each still reported by
#      its synchronize;
#   3. ab.sh: A, the driver waits (the default); B, the service's client
#      waits on its page; ROUNDS rounds (default 4), with host probes;
#   4. one verdict of run.sh with the page.
# Build where Go is: bench/sched/build.sh tests; carry .carry/bench-sched.
# Each step has a time limit, so that one that hangs leaves the others their
# time within the device call's 600 s.
# Results under $OUT (the device tool's), summaries on stdout.
set -u
cd "$(dirname "$0")/../.."
B=$PWD/.carry/bench-sched
OUT=${OUT:-/tmp/gpuos-completion}
mkdir -p "$OUT"
(cd internal/backend/cuda && GPUOS_REQUIRE_GPU=1 timeout 180 "$B/cuda.test" -test.run 'TestGPUConformance' -test.v 2>&1 |
	grep -E '^(\s*--- |ok|FAIL|PASS)' > "$OUT/gputest.txt")
echo "== conformance: pass $(grep -c -- '--- PASS' "$OUT/gputest.txt"), fail $(grep -c -- '--- FAIL' "$OUT/gputest.txt")"
grep -E "FenceWord|--- FAIL" "$OUT/gputest.txt" | head
(cd internal/guard && GPUOS_TEST_BACKEND=cuda timeout 240 "$B/guard.test" -test.run 'TestDaemonAttacks' -test.v 2>&1 |
	grep -E '^(\s*--- |ok|FAIL|PASS)|_test.go' > "$OUT/guardtest.txt")
echo "== attacks: pass $(grep -c -- '--- PASS' "$OUT/guardtest.txt"), fail $(grep -c -- '--- FAIL' "$OUT/guardtest.txt")"
grep -E -- "--- FAIL|_test.go" "$OUT/guardtest.txt" | head -5
gcc -O2 -pthread -o /tmp/hiccup bench/hiccup/hiccup.c
echo "== host before: $(/tmp/hiccup 4 | tail -1)"
ROUNDS=${ROUNDS:-4} DUR=6 A="X=1" B="X=1" B_CLIENTS="GPUOS_SYNC_CLIENT=1" OUT=/tmp/completion-ab timeout 330 bash bench/sched/ab.sh > "$OUT/ab.txt" 2>&1
echo "== A/B (B: client waits on its page) rc=$?"
grep -E "^[AB]-[0-9]" "$OUT/ab.txt"
(cd /tmp/completion-ab && tar czf "$OUT/ab.tgz" --exclude='*.trace*' --exclude='latency.log*' . 2>/dev/null)
echo "== host between: $(/tmp/hiccup 4 | tail -1)"
GPUOS_SYNC_CLIENT=1 OUT=/tmp/completion-v RESERVE=8 DUR=6 ILDUR=60 timeout 300 bash bench/sched/run.sh > "$OUT/verdict.txt" 2>&1
echo "== verdict (page) rc=$?"
grep -E "interleaved|ratio|P99|throughput|host \(|PASS|FAIL" /tmp/completion-v/report.txt | grep -v "^ *fair\|^ *band" | head -30
(cd /tmp/completion-v && tar czf "$OUT/verdict.tgz" --exclude='*.trace*' --exclude='*.csv' --exclude='latency.log*' . 2>/dev/null)
echo "== host after: $(/tmp/hiccup 4 | tail -1)"
