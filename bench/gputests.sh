#!/usr/bin/env bash
# The whole-system tests on a real GPU: every package whose tests start a
# gpuos (internal/testenv) runs them with GPUOS_TEST_BACKEND=cuda, so the
# daemon, its scheduler and the shim run on the GPU as users run them; the
# cuda backend's and the PTX pipeline's own GPU tests run too, and so does
# `gpuos demo`.
#
#   bench/gputests.sh build   where Go and gcc are: builds the test binaries,
#                             libcuda.so.1 and gpuos into .carry/gputests/
#                             (xz-packed, to fit the device tool's carry)
#   bench/gputests.sh         on the GPU machine (gcc, a driver, no Go):
#                             runs them, a log per package under $OUT
#
# Device tool: carry [".carry/gputests"], command
#   bash bench/gputests.sh > $OUT/summary.txt 2>&1; cat $OUT/summary.txt
# GPUOS_REQUIRE_GPU=1 is set, so a GPU test that finds no GPU fails instead of
# skipping. Each package has its own time limit; the whole fits in one call.
set -u
cd "$(dirname "$0")/.."
G=$PWD/.carry/gputests

# package directory and its limit in seconds, in the order they run
packages=(
	client:150
	internal/manager:90
	internal/guard:150
	cmd/libcuda:150
	internal/shim:60
	examples:60
	internal/benchmark:60
	internal/backend/cuda:150
	internal/ptx:60
)

name() { basename "$1"; }

if [ "${1:-}" = build ]; then
	set -e
	rm -rf "$G" && mkdir -p "$G/bin"
	for p in "${packages[@]}"; do
		dir=${p%%:*}
		CGO_ENABLED=1 go test -c -ldflags='-s -w' -o "$G/bin/$(name "$dir").test" "./$dir" &
	done
	CGO_ENABLED=1 go build -buildmode=c-shared -ldflags='-s -w -extldflags=-Wl,-soname,libcuda.so.1' \
		-o "$G/bin/libcuda.so.1" ./cmd/libcuda &
	CGO_ENABLED=1 go build -ldflags='-s -w' -o "$G/bin/gpuos" ./cmd/gpuos &
	wait
	rm -f "$G/bin/libcuda.h"
	git rev-parse --short HEAD > "$G/bin/COMMIT"
	tar cJf "$G/bin.tar.xz" -C "$G" bin
	rm -rf "$G/bin"
	ls -l "$G"
	exit 0
fi

OUT=${OUT:-/tmp/gpuos-gputests}
mkdir -p "$OUT"
B=/tmp/gpuos-gputests-bin
rm -rf "$B" && mkdir -p "$B"
tar xJf "$G/bin.tar.xz" -C "$B" || { echo "cannot unpack $G/bin.tar.xz"; exit 1; }
B=$B/bin
echo "build $(cat "$B/COMMIT"); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
failed=0
for p in "${packages[@]}"; do
	dir=${p%%:*} limit=${p##*:} n=$(name "$dir")
	start=$(date +%s%N)
	(cd "$dir" && GPUOS_TEST_BACKEND=cuda GPUOS_REQUIRE_GPU=1 GPUOS_TEST_PREBUILT="$B" \
		timeout "$limit" "$B/$n.test" -test.v -test.count=1 -test.timeout="$((limit - 5))s" > "$OUT/$n.log" 2>&1)
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	printf '%-22s rc=%-3d %4d.%01ds  pass %3d  fail %2d  skip %2d\n' "$dir" "$rc" "$((ms / 1000))" "$((ms % 1000 / 100))" \
		"$(grep -c -- '--- PASS' "$OUT/$n.log")" "$(grep -c -- '--- FAIL' "$OUT/$n.log")" \
		"$(grep -c -- '--- SKIP' "$OUT/$n.log")"
	grep -E -- '--- FAIL|^panic:|test timed out' "$OUT/$n.log" | head -8
	[ "$rc" = 0 ] || failed=$((failed + 1))
done
# The README's main job on the GPU (auto picks the cuda backend there).
timeout 120 "$B/gpuos" demo > "$OUT/demo.log" 2>&1
rc=$?
echo "gpuos demo             rc=$rc  $(grep -m1 '^backend' "$OUT/demo.log" | cut -d, -f1)  $(grep -E -m1 'checks (passed|failed)' "$OUT/demo.log")"
[ "$rc" = 0 ] || failed=$((failed + 1))
echo "skipped tests (name: reason):"
awk '/--- SKIP/ { name = $3; getline; why = ($0 ~ /^ +[a-z_]+\.go:/) ? $0 : ""; sub(/^ +/, "", why); print "  " name ": " why }' "$OUT"/*.log | sort -u | head -40
echo "packages failed: $failed"
[ "$failed" = 0 ]
