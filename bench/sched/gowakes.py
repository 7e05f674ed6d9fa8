#!/usr/bin/env python3
"""Who wakes whom in a Go execution trace of the driver process.

    GPUOS_GO_TRACE=/tmp/driver.trace GPUOS_GO_TRACE_WINDOW=4s+2s gpuos serve ...
    go tool trace -d=parsed /tmp/driver.trace | python3 bench/sched/gowakes.py

Prints, per second of the trace, how many times a P was started from idle
(each a thread woken on an idle CPU) and how many goroutines were made
runnable, by where the waker was (the runtime's timers and network poller,
or the first gpuos frame of the waking goroutine's stack) and where the
woken goroutine had been waiting (its last blocking stack's first gpuos
frame). Session 12 counted these by hand; session 18 kept the script.
With an argument N, the waker is named by its first N gpuos frames (who
called kick, say).
"""
import collections
import re
import sys

OURS = "github.com/gpuos/gpuos/"


def frames(lines, j):
    """The function names of the stack starting at lines[j], and the next index."""
    out = []
    while j < len(lines) and lines[j].startswith("\t"):
        x = lines[j]
        if not x.startswith("\t\t") and " @ " in x:
            out.append(x.strip().split(" @ ")[0])
        j += 1
    return out, j


def site(fr, depth=1):
    """The first depth gpuos frames of a stack (innermost first, joined by
    " < "), else its first non-runtime frame."""
    ours = [f[len(OURS):] for f in fr if f.startswith(OURS)]
    if ours:
        return " < ".join(ours[:depth])
    for f in fr:
        if not f.startswith("runtime."):
            return f
    return fr[0] if fr else "?"


def main():
    depth = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    lines = sys.stdin.read().split("\n")
    waiting = {}  # goroutine -> where it last blocked
    wakes = collections.Counter()
    procs = 0
    t0 = t1 = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.search(r"Time=(\d+)", line)
        if m:
            t = int(m.group(1))
            t0 = t if t0 is None else t0
            t1 = t
        if "ProcID=" in line and "Idle->Running" in line:
            procs += 1
        mg = re.search(r" G=(-?\d+) StateTransition .*GoID=(\d+) (\w+)->(\w+)", line)
        if not mg:
            i += 1
            continue
        g, gid, before, after = mg.groups()
        stack, transition = [], []
        j = i + 1
        while j < len(lines) and (lines[j].startswith("Stack=") or lines[j].startswith("TransitionStack=")):
            fr, k = frames(lines, j + 1)
            if lines[j].startswith("Stack="):
                stack = fr
            else:
                transition = fr
            j = k
            while j < len(lines) and lines[j] == "":
                j += 1
        if after == "Waiting":
            waiting[gid] = site(transition or stack)
        if before == "Waiting" and after == "Runnable":
            waker = "runtime (timers, network poller)" if g == "-1" else site(stack, depth)
            wakes[(waker, waiting.get(gid, "?"))] += 1
        i = j
    if t0 is None or t1 == t0:
        sys.exit("no events")
    secs = (t1 - t0) / 1e9
    print(f"{secs:.2f} s traced: Ps started from idle {procs / secs:.0f}/s, goroutines woken {sum(wakes.values()) / secs:.0f}/s")
    for (waker, woken), n in wakes.most_common(20):
        print(f"{n / secs:8.0f}/s  {waker}  ->  {woken}")


if __name__ == "__main__":
    main()
