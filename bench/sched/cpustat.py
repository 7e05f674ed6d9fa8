#!/usr/bin/env python3
"""What the CPUs do during a benchmark: busy time, the hypervisor's steal and
the interrupt rates (LOC: local timer; CAL: function calls, which also carry
the wake-up of a thread on another, idle CPU), and per process of the named
programs the CPU its threads ran, the time they waited for a CPU when ready
(/proc/PID/task/*/schedstat) and how often they slept (voluntary context
switches: each ends with a wake-up) or were preempted; and per CPU, its busy
time and steal (where pinning a process puts the host's steal).

  cpustat.py sample OUT.jsonl [PERIOD_S [PROGRAMS]]
                                           sample /proc/stat and /proc/interrupts
                                           every PERIOD_S (default 0.05) until killed;
                                           PROGRAMS: comma-separated command names
                                           (e.g. gpuos,schedbench,native) whose
                                           processes are sampled too
  cpustat.py phases OUT.jsonl FROM PHASE_S DURATION_S
                                           rates per phase kind of an interleaved run
                                           measured from FROM (unix seconds): alone
                                           phases even, loaded odd
  cpustat.py segments OUT.jsonl MARKS      rates per segment ("NAME T0 T1" lines)

bench/sched/cpuprobe.sh uses it; bench/RESULTS.md (session 11) has what it found.
"""
import collections
import json
import os
import sys
import time


def role(pid):
    """A process's name in the figures: its program, first argument and,
    for a gpuos client, its token (bench tenants share a program)."""
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    if not argv:  # exiting
        raise OSError("no command line")
    name = os.path.basename(argv[0]) + (" " + argv[1] if len(argv) > 1 else "")
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for kv in f.read().split(b"\0"):
                if kv.startswith(b"GPUOS_TOKEN="):
                    name += " " + kv[12:].decode(errors="replace")
    except OSError:
        pass
    return name


def find(programs):
    """The processes of the named programs: {pid: role}."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() in programs:
                    found[pid] = role(pid)
        except OSError:
            pass
    return found


def threads(pid):
    """Summed over a process's threads: [ran ns, waited ns, voluntary, involuntary switches, threads,
    {tid: [ran ns, the CPU it last ran on]}]."""
    acc = [0, 0, 0, 0, 0, {}]
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ran, waited, _ = f.read().split()
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                # fields after the command's closing parenthesis; "processor" is field 39
                cpu = int(f.read().rsplit(")", 1)[1].split()[36])
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        acc[2] += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        acc[3] += int(line.split()[1])
        except (OSError, ValueError):
            continue
        acc[0] += int(ran)
        acc[1] += int(waited)
        acc[4] += 1
        acc[5][tid] = [int(ran), cpu]
    return acc


def sample(out, period, programs=()):
    procs, looked = {}, 0.0
    with open(out, "w") as f:
        while True:
            t = time.time()
            if programs and t - looked > 0.5:  # new processes come and go between scenarios
                procs, looked = find(programs), t
            cpu = {}
            with open("/proc/stat") as st:
                for line in st:
                    if line.startswith("cpu"):
                        fields = line.split()
                        # user nice system idle iowait irq softirq steal
                        cpu[fields[0]] = [int(x) for x in fields[1:9]]
            irq, dev = {}, {}
            with open("/proc/interrupts") as fh:
                ncpu = len(fh.readline().split())
                for line in fh:
                    fields = line.split()
                    if not fields:
                        continue
                    name = fields[0].rstrip(":")
                    counts = []
                    for x in fields[1:1 + ncpu]:
                        if not x.isdigit():
                            break
                        counts.append(int(x))
                    if name.isdigit():  # a device line: name it by its description
                        name += ":" + " ".join(fields[1 + len(counts):])[-24:]
                    irq[name] = sum(counts)
                    if fields[0].rstrip(":").isdigit():  # device interrupts, per CPU
                        for n, c in enumerate(counts):
                            dev[n] = dev.get(n, 0) + c
            per = {}
            for pid, name in procs.items():
                try:
                    per[f"{name} [{pid}]"] = threads(pid)
                except OSError:
                    pass
            # busy, steal, in interrupts (hard and soft), device interrupts taken
            per_cpu = {k[3:]: [sum(v) - v[3] - v[4], v[7], v[5] + v[6], dev.get(int(k[3:]), 0)]
                       for k, v in cpu.items() if k != "cpu"}
            f.write(json.dumps({"t": t, "cpu": cpu["cpu"], "cpus": per_cpu, "irq": irq, "procs": per}) + "\n")
            f.flush()
            time.sleep(max(0.0, period - (time.time() - t)))


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def rates(pairs):
    """Per-second figures over (a, b) sample pairs: CPUs busy, steal, and each interrupt line."""
    seconds, acc = 0.0, collections.Counter()
    for a, b in pairs:
        seconds += b["t"] - a["t"]
        d = [y - x for x, y in zip(a["cpu"], b["cpu"])]
        acc["busy"] += (sum(d) - d[3] - d[4]) / 100.0
        acc["steal"] += d[7] / 100.0
        for n, v in b.get("cpus", {}).items():
            u = a.get("cpus", {}).get(n)
            if u is not None:
                acc[f"cpu {n}\0busy"] += (v[0] - u[0]) / 100.0
                acc[f"cpu {n}\0steal"] += (v[1] - u[1]) / 100.0
                if len(v) >= 4 and len(u) >= 4:
                    acc[f"cpu {n}\0irq"] += (v[2] - u[2]) / 100.0
                    acc[f"cpu {n}\0dev"] += v[3] - u[3]
        for name, n in b["irq"].items():
            if name in a["irq"]:
                acc["irq " + name] += n - a["irq"][name]
        for name, v in b.get("procs", {}).items():
            u = a.get("procs", {}).get(name)
            if u is None:
                continue
            for i, key in enumerate(("ran", "waited", "slept", "preempted")):
                acc[f"proc {name}\0{key}"] += max(0, v[i] - u[i])  # a thread that exits takes its counts
            if len(v) > 5 and len(u) > 5:  # where it ran: each thread's time since the last sample, on its CPU now
                for tid, (ran, cpu) in v[5].items():
                    if tid in u[5]:
                        acc[f"on {name}\0{cpu}"] += max(0, ran - u[5][tid][0])
    return seconds, acc


def line(label, seconds, acc):
    s = seconds or 1
    main = " ".join(f"{k} {acc['irq ' + k] / s:.0f}" for k in ("LOC", "CAL", "RES", "TLB"))
    out = f"{label:28s} {seconds:5.1f} s  CPUs busy {acc['busy'] / s:5.2f}  steal {acc['steal'] / s:5.3f}  per s: {main}"
    cpus = sorted({int(k[4:].split("\0")[0]) for k in acc if k.startswith("cpu ")})
    if cpus:  # per CPU, busy and steal in ms per second: where the host's steal fell
        ms = {(n, key): acc[f"cpu {n}\0{key}"] / s * 1000 for n in cpus for key in ("busy", "steal")}
        out += "\n  per CPU busy/steal ms/s: " + " ".join(f"{n}:{ms[n, 'busy']:.0f}/{ms[n, 'steal']:.1f}" for n in cpus)
        irq = {n: (acc[f"cpu {n}\0irq"] / s * 1000, acc[f"cpu {n}\0dev"] / s) for n in cpus}
        if any(f"cpu {n}\0irq" in acc for n in cpus):
            out += "\n  per CPU in interrupts ms/s, device interrupts/s: " + " ".join(
                f"{n}:{ms_in:.0f}/{dev:.0f}" for n, (ms_in, dev) in irq.items())
    names = sorted({k[5:].split("\0")[0] for k in acc if k.startswith("proc ")})
    for name in names:
        v = {key: acc[f"proc {name}\0{key}"] / s for key in ("ran", "waited", "slept", "preempted")}
        out += (f"\n  {name:40s} CPU {v['ran'] / 1e9:5.3f}  waited for one {v['waited'] / 1e6:6.2f} ms/s"
                f"  slept {v['slept']:6.0f}/s  preempted {v['preempted']:5.0f}/s")
        on = {int(k.split("\0")[1]): acc[k] for k in acc if k.startswith(f"on {name}\0")}
        if sum(on.values()) > 0:  # the CPUs it ran on most, in ms/s
            top = sorted(on.items(), key=lambda kv: -kv[1])[:4]
            out += "  on CPUs " + " ".join(f"{c}:{ns / s / 1e6:.0f}" for c, ns in top)
    return out


def phases(path, start, phase, duration):
    rows = load(path)
    groups = {"alone": [], "loaded": []}
    for a, b in zip(rows, rows[1:]):
        mid = (a["t"] + b["t"]) / 2 - start
        if mid < 0 or mid > duration:
            continue
        k = int(mid // phase)
        within = mid - k * phase
        if within < 0.03 or within > phase - 0.03:  # straddles a phase change
            continue
        groups["loaded" if k % 2 else "alone"].append((a, b))
    for kind in ("alone", "loaded"):
        print(line(kind, *rates(groups[kind])))


def segments(path, marks):
    rows = load(path)
    with open(marks) as f:
        for m in f:
            fields = m.split()
            if len(fields) < 3:
                continue
            t0, t1 = float(fields[1]), float(fields[2])
            seg = [r for r in rows if t0 <= r["t"] <= t1]
            print(line(fields[0], *rates(zip(seg, seg[1:]))))


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "sample" and len(sys.argv) in (3, 4, 5):
        sample(sys.argv[2], float(sys.argv[3]) if len(sys.argv) >= 4 else 0.05,
               sys.argv[4].split(",") if len(sys.argv) == 5 else ())
    elif cmd == "phases" and len(sys.argv) == 6:
        phases(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    elif cmd == "segments" and len(sys.argv) == 4:
        segments(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
