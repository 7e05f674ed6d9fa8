#!/usr/bin/env python3
"""Pools the interleaved scenario of several verdicts, by label.

    python3 bench/sched/pool.py LABEL=DIR/gpuos-hp-interleaved.json ...

Each file is one verdict's service latencies by phase (phases_us: alone,
loaded, alone, ...). Files with the same LABEL (a host, an arm) are pooled:
their phase pairs together give one P99 alone and one loaded, and the ratio's
95% interval comes from resampling the pairs (400 draws). A single 60 s
verdict on a host with slow episodes has a wide interval; pooling several
says where the host's ratio lies (bench/RESULTS.md, session 39).
"""
import collections
import json
import random
import sys


def pct(x, p):
    x = sorted(x)
    k = (len(x) - 1) * p / 100
    f = int(k)
    c = min(f + 1, len(x) - 1)
    return x[f] + (x[c] - x[f]) * (k - f)


def ratio(pairs):
    alone = [v for a, _ in pairs for v in a]
    loaded = [v for _, l in pairs for v in l]
    return pct(loaded, 99) / pct(alone, 99), pct(alone, 99), pct(loaded, 99)


def main(args):
    groups = collections.defaultdict(list)
    for arg in args:
        label, path = arg.split("=", 1)
        ph = json.load(open(path))["phases_us"]
        groups[label].append([(ph[i], ph[i + 1]) for i in range(0, len(ph) - 1, 2)])
    rng = random.Random(1)
    for label, runs in groups.items():
        pairs = [p for r in runs for p in r]
        r, a, l = ratio(pairs)
        draws = sorted(ratio([rng.choice(pairs) for _ in pairs])[0] for _ in range(400))
        print("%s: %d verdicts, %d pairs, P99 alone / loaded %.1f / %.1f us, ratio %.3f [95%%: %.2f-%.2f]; each: %s"
              % (label, len(runs), len(pairs), a, l, r, draws[10], draws[389], " ".join("%.2f" % ratio(x)[0] for x in runs)))


if __name__ == "__main__":
    main(sys.argv[1:])
