#!/usr/bin/env python3
"""firstdiff.py - where a program's calls through gpuos part from the same
program's calls to the real driver.

    python3 firstdiff.py REAL_LOG GPUOS_LOG [CONTEXT]

REAL_LOG is what testdata/cudart/reftrace.sh logged (REFTRACE_LOG) when the
program ran on the NVIDIA driver; GPUOS_LOG is gpuos's call trace of the same
program (GPUOS_SHIM_TRACE=2, GPUOS_SHIM_LOG). Both log a line per call,
"T<tid> name(arguments) = RESULT". Entry-point lookups (cuGetProcAddress)
are left out; names are compared without their ABI suffixes (_v2, _ptsz,
_ptds), as the real trace logs the name the program asked cuGetProcAddress
for and gpuos's the function it handed out. The two sequences are aligned
by name, and the report says:

  - the first call, in gpuos's order, whose result differs from the real
    driver's answer to the same call (with its full lines from both logs);
  - the first result gpuos gave that the real driver never gave to that
    function, wherever it is (robust to a poor alignment);
  - where the sequences first part, with CONTEXT (default 3) calls of each
    around it.

Exit status 0 when the results agree, 1 when they differ, 2 on bad input.
Standard library only: it runs wherever CuPy does.
"""
import difflib
import re
import sys

CALL = re.compile(r'^(?:gpuos-shim: )?T(\d+) +(cu[A-Za-z0-9_]+)\((.*)\)(?: "([^"]*)")? = (\S+)\s*$')
SUFFIX = re.compile(r'(_v[0-9]+)?(_ptsz|_ptds)?$')
UUID = re.compile(r'pExportTableId=([0-9a-f]{32})')


def base(name):
    """The name without its ABI suffixes: cuMemcpyDtoH_v2_ptds -> cuMemcpyDtoH."""
    b = SUFFIX.sub('', name)
    return b if b else name


def calls(path):
    """The calls a trace logged: (key, result, line number, line)."""
    out = []
    with open(path, errors='replace') as f:
        for n, line in enumerate(f, 1):
            m = CALL.match(line.rstrip('\n'))
            if not m:
                continue
            name = base(m.group(2))
            if name.startswith('cuGetProcAddress'):
                continue
            key = name
            if name == 'cuGetExportTable':
                u = UUID.search(m.group(3))
                uuid = u.group(1) if u else (m.group(4) or '')
                key = name + ' ' + uuid
            out.append((key, m.group(5), n, line.strip()))
    return out


def short(line, width=260):
    line = line.replace('gpuos-shim: ', '')
    return line if len(line) <= width else line[:width] + '...'


def main(argv):
    if len(argv) < 3:
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        return 2
    ctx = int(argv[3]) if len(argv) > 3 else 3
    try:
        real, ours = calls(argv[1]), calls(argv[2])
    except OSError as e:
        print('firstdiff: %s' % e, file=sys.stderr)
        return 2
    print('%d calls on the real driver, %d through gpuos (lookups left out)' % (len(real), len(ours)))
    if not real or not ours:
        print('nothing to compare: a trace is empty')
        return 2
    rk, ok = [c[0] for c in real], [c[0] for c in ours]
    sm = difflib.SequenceMatcher(None, rk, ok, autojunk=False)
    ops = sm.get_opcodes()

    # The first aligned pair, in gpuos's order, whose results differ.
    differ = None
    for tag, i1, i2, j1, j2 in ops:
        if tag not in ('equal', 'replace'):
            continue
        for a, b in zip(range(i1, i2), range(j1, j2)):
            if rk[a] == ok[b] and real[a][1] != ours[b][1]:
                differ = (a, b)
                break
        if differ:
            break
    status = 0
    if differ:
        a, b = differ
        status = 1
        print('first call whose result differs (call %d through gpuos, %d on the real driver):' % (b + 1, a + 1))
        print('  real:  ' + short(real[a][3]))
        print('  gpuos: ' + short(ours[b][3]))
    else:
        print('every call the two made alike got the same result')

    # Results gpuos gave that the real driver never gave to that function.
    seen = {}
    for key, res, _, _ in real:
        seen.setdefault(key, set()).add(res)
    for key, res, n, line in ours:
        if res not in seen.get(key, set()) and res != 'CUDA_SUCCESS':
            status = 1
            print('first result the real driver never gave %s: %s (call at line %d of the gpuos trace)' % (key, res, n))
            print('  gpuos: ' + short(line))
            if key in seen:
                print('  the real driver answered it: ' + ', '.join(sorted(seen[key])))
            break

    # Where the sequences part.
    for tag, i1, i2, j1, j2 in ops:
        if tag == 'equal':
            continue
        print('the sequences part at call %d through gpuos, %d on the real driver (%s):' % (j1 + 1, i1 + 1, tag))
        for k in range(max(0, i1 - ctx), min(len(real), i2 + ctx, i1 + 2 * ctx)):
            print('  %s real  %s' % ('-' if i1 <= k < i2 else ' ', short(real[k][3], 160)))
        for k in range(max(0, j1 - ctx), min(len(ours), j2 + ctx, j1 + 2 * ctx)):
            print('  %s gpuos %s' % ('+' if j1 <= k < j2 else ' ', short(ours[k][3], 160)))
        break
    else:
        print('the same %d calls in the same order' % len(ours))
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv))
