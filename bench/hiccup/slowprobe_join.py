#!/usr/bin/env python3
"""Lines up slowprobe.c's per-millisecond times with a service's trace.

    python3 bench/hiccup/slowprobe_join.py PROBE.csv TRACE.csv [PHASE_MS]

TRACE is schedbench hp --trace's CSV (launch_ns,synced_ns,...). A request is
slow when it took over twice the median; for the requests slow and not, it
prints each probe kind's median time (the fastest of the millisecond the
request was launched in, and the millisecond's median), and how much slower
the slow requests' milliseconds were. Then, the other way round: of the
milliseconds where the probe's alu work was over 1.5x its usual fastest, how
many service requests fell in them and how slow they were. With PHASE_MS
(an interleaved run's phase, e.g. 500), it also splits the probe's
milliseconds by phase, alone first from the trace's first request, and says
how many were slow in each kind of phase: whether the host slows the CPUs
more often while the load runs.
"""
import csv
import statistics
import sys

KINDS = ("alu", "l2", "mem", "sys")


def main(probe_path, trace_path, phase_ms=0):
    probe = {}
    with open(probe_path) as f:
        for r in csv.DictReader(f):
            if None in r.values() or "" in r.values():
                continue  # the last row of a probe stopped mid-write
            probe[int(r["ms"])] = {k: int(v) for k, v in r.items() if k != "ms"}
    reqs = []
    with open(trace_path) as f:
        for r in csv.DictReader(f):
            launch, synced = int(r["launch_ns"]), int(r["synced_ns"])
            reqs.append((launch // 1_000_000, (synced - launch) / 1e3))
    reqs = [(ms, t) for ms, t in reqs if ms in probe]
    if not reqs:
        print("no request fell in the probe's window")
        return 1
    median = statistics.median(t for _, t in reqs)
    groups = {"slow": [], "other": []}
    for ms, t in reqs:
        groups["slow" if t > 2 * median else "other"].append((ms, t))
    print(f"{len(reqs)} requests in the probe's window, median {median:.1f} us; "
          f"slow (over {2 * median:.1f} us): {len(groups['slow'])}")
    for name, g in groups.items():
        if not g:
            continue
        parts = []
        for k in KINDS:
            lo = statistics.median(probe[ms][k + "_min"] for ms, _ in g) / 1e3
            med = statistics.median(probe[ms][k + "_med"] for ms, _ in g) / 1e3
            parts.append(f"{k} {lo:.2f}/{med:.2f}")
        print(f"  {name:5s} requests' milliseconds, probe us fastest/median: " + "  ".join(parts))
    if groups["slow"] and groups["other"]:
        parts = []
        for k in KINDS:
            slow = statistics.median(probe[ms][k + "_min"] for ms, _ in groups["slow"])
            other = statistics.median(probe[ms][k + "_min"] for ms, _ in groups["other"])
            parts.append(f"{k} {slow / other:.2f}x")
        print("  slow over other, the probe's fastest per ms: " + "  ".join(parts))
    usual = statistics.median(p["alu_min"] for p in probe.values())
    slow_ms = {ms for ms, p in probe.items() if p["alu_min"] > 1.5 * usual}
    inside = [t for ms, t in reqs if ms in slow_ms]
    print(f"  milliseconds with alu over 1.5x its usual {usual / 1e3:.2f} us: {len(slow_ms)} of {len(probe)}; "
          f"requests in them {len(inside)}, median {statistics.median(inside) if inside else 0:.1f} us, "
          f"slow {sum(t > 2 * median for t in inside)}")
    for k in ("l2", "mem", "sys"):
        u = statistics.median(p[k + "_min"] for p in probe.values())
        s = {ms for ms, p in probe.items() if p[k + "_min"] > 1.5 * u}
        ins = [t for ms, t in reqs if ms in s]
        print(f"  milliseconds with {k} over 1.5x its usual {u / 1e3:.2f} us: {len(s)}; requests in them {len(ins)}, "
              f"slow {sum(t > 2 * median for t in ins)}")
    if phase_ms > 0:
        first, last = min(ms for ms, _ in reqs), max(ms for ms, _ in reqs)
        counts = {"alone": [0, 0], "loaded": [0, 0]}
        for ms, p in probe.items():
            if first <= ms <= last:
                c = counts["loaded" if (ms - first) // phase_ms % 2 else "alone"]
                c[0] += 1
                c[1] += p["alu_min"] > 1.5 * usual
        print("  probe milliseconds with alu over 1.5x its usual, by phase: " + "  ".join(
            f"{k} {s} of {n} ({100 * s / max(n, 1):.2f}%)" for k, (n, s) in counts.items()))
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 0))
