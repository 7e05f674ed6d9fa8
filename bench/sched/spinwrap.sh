#!/usr/bin/env bash
# BE_WRAP for a diagnostic (bench/RESULTS.md, session 38): does a busier guest by
# itself slow the service? Runs the command given; when it is gpuos's
# best-effort tenant be1 in the interleaved scenario, also keeps one CPU busy (a
# python loop, no GPU, no gpuos) through the alone phases whose index i has
# i % 4 == SPIN_PHASE (2: every second pair's alone phase; 0: the others).
#
#   SPIN_PHASE=2 BE_WRAP=$PWD/bench/sched/spinwrap.sh CPU=1 N=1 ILDUR=60 bash bench/sched/verdicts.sh
#
# then split the service's phases (gpuos-hp-interleaved.json, phases_us) by i % 4.
label= start= dur=
args=("$@")
for ((j = 0; j < ${#args[@]}; j++)); do
	case ${args[j]} in
	--label) label=${args[j + 1]} ;;
	--start-at) start=${args[j + 1]} ;;
	--duration) dur=${args[j + 1]%s} ;;
	esac
done
if [[ $label == interleaved && ${GPUOS_TOKEN:-} == be1 && -n $start && -n $dur ]]; then
	python3 - "$start" "$dur" "${SPIN_PHASE:-2}" <<'PY' &
import sys, time
start, dur, which = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
phase = 0.5
for i in range(int(dur / phase)):
    if i % 4 != which:
        continue
    t0, t1 = start + i * phase, start + (i + 1) * phase
    while time.time() < t0:
        time.sleep(min(0.005, max(0.0, t0 - time.time())))
    x = 0
    while time.time() < t1:
        x += 1
print("spinwrap: spun phases i %% 4 == %d" % which, file=sys.stderr)
PY
	sp=$!
	"$@"; rc=$?
	wait $sp
	exit $rc
fi
exec "$@"
