#!/usr/bin/env bash
# Builds the Go programs bench/sched/run.sh needs on the GPU machine (which
# has no Go) into .carry/bench-sched/: gpuos with the cuda backend (cgo, for
# dlopen of libcuda) and schedbench. With the argument "tests", also the
# test binaries bench/sched/completion.sh runs (cuda.test, guard.test).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .carry/bench-sched
CGO_ENABLED=1 go build -o .carry/bench-sched/gpuos ./cmd/gpuos
go build -o .carry/bench-sched/schedbench ./bench/sched/schedbench
if [ "${1:-}" = tests ]; then
	CGO_ENABLED=1 go test -c -o .carry/bench-sched/cuda.test ./internal/backend/cuda
	CGO_ENABLED=1 go test -c -o .carry/bench-sched/guard.test ./internal/guard
fi
ls -l .carry/bench-sched
