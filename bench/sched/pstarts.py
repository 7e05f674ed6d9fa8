#!/usr/bin/env python3
"""What each P started from idle ran first, in a Go execution trace.

    go tool trace -d=parsed /tmp/driver.trace | python3 bench/sched/pstarts.py [N]

A P started from idle is a thread woken on an idle CPU (gowakes.py counts
them). This sorts them by the first goroutine the woken thread ran there,
named by the outermost N (3) gpuos frames of the first stack seen of that
goroutine (what it is, more than where it was), or
"nothing": the thread found no work and the P went idle again (the Go
runtime wakes a spinning thread whenever a goroutine becomes runnable while
a P is idle, and the goroutine's own P often runs it first). Session 36
kept the script.
"""
import collections
import re
import sys

OURS = "github.com/gpuos/gpuos/"
EVENT = re.compile(r"M=(-?\d+) P=(-?\d+) G=(-?\d+) (\w+) Time=(\d+)(.*)")
RUNS = re.compile(r"GoID=(\d+) (\w+)->Running")


def main():
    events, site = [], {}  # (M, time, rest); goroutine -> the gpuos frames of the stack being read
    depth = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    frames = {}  # goroutine -> the gpuos frames of the first stack seen of it
    running = moved = owner = None  # the event's goroutine, the goroutine it moved, whose stack this is
    for line in sys.stdin:
        line = line.rstrip("\n")
        m = EVENT.match(line)
        if m:
            g = re.search(r"GoID=(\d+)", m.group(6))
            running, moved, owner = m.group(3), g.group(1) if g else None, None
            events.append((m.group(1), int(m.group(5)), m.group(6)))
        elif line.startswith("Stack="):
            owner = running if running not in frames else None  # the stack of the goroutine that ran the event
        elif line.startswith("TransitionStack="):
            owner = moved if moved not in frames else None  # the stack of the goroutine it moved
        elif line == "" and owner in site:
            frames[owner], owner = site[owner], None  # that stack ended
        elif owner and owner != "-1" and line.startswith("\t") and not line.startswith("\t\t") and OURS in line:
            site.setdefault(owner, []).append(line.strip().split(" @ ")[0][len(OURS):])
    for g, fr in site.items():
        frames.setdefault(g, fr)
    if not events:
        sys.exit("no events: is this the output of go tool trace -d=parsed?")
    ran = collections.Counter()
    for k, (m, _, rest) in enumerate(events):
        if "ProcID=" not in rest or "Idle->Running" not in rest:
            continue
        what = "?"
        for m2, _, rest2 in events[k + 1:k + 40]:
            if m2 != m:
                continue
            r = RUNS.search(rest2)
            if r:
                fr = frames.get(r.group(1))
                what = " < ".join(fr[-depth:]) if fr else "goroutine " + r.group(1)
                break
            if "ProcID=" in rest2 and "Running->Idle" in rest2:
                what = "nothing"
                break
        ran[what] += 1
    secs = (events[-1][1] - events[0][1]) / 1e9
    print(f"{secs:.2f} s traced: Ps started from idle {sum(ran.values()) / secs:.0f}/s, by what they ran first")
    for what, n in ran.most_common(12):
        print(f"{n / secs:8.0f}/s  {what}")


if __name__ == "__main__":
    main()
