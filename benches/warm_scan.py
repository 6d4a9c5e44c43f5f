#!/usr/bin/env python3
"""Warm rescans of one or more atip binaries, interleaved, with wall, CPU and peak RSS.

    benches/warm_scan.py [--path DIRS] [--warm N] BIN [BIN...]

Each binary gets its own throw-away data and config dir under one temp dir: one cold
scan, then N warm rescans of the unchanged PATH, the binaries alternating (and their
order reversed every other round), so that figures taken on a shared machine compare as
ratios. `--path` defaults to this shell's PATH (passed explicitly: see "Measuring traps"
in benches/README.md). CPU is user + sys from wait4; RSS is ru_maxrss.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(binary, data, config, path):
    cmd = [binary, "--data-dir", data, "--config-dir", config, "scan", "--path", path,
           "--output", "json"]
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=dict(os.environ, PATH=path), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        print(f"{binary} exited {code}", file=sys.stderr)
    return wall * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3, ru.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default=os.environ.get("SCAN_PATH", os.environ.get("PATH", "")))
    ap.add_argument("--warm", type=int, default=21, help="warm rescans per binary")
    ap.add_argument("bins", nargs="+")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="atip-warm-")
    try:
        dirs = {}
        for i, b in enumerate(a.bins):
            dirs[b] = (os.path.join(work, f"data{i}"), os.path.join(work, f"config{i}"))
            os.makedirs(dirs[b][1])
        cold = {b: run(b, *dirs[b], a.path) for b in a.bins}
        warm = {b: [] for b in a.bins}
        for k in range(a.warm):
            for b in a.bins if k % 2 == 0 else reversed(a.bins):
                warm[b].append(run(b, *dirs[b], a.path))
        print("load average:", " ".join(open("/proc/loadavg").read().split()[:3]))
        for b in a.bins:
            w = [x[0] for x in warm[b]]
            c = [x[1] for x in warm[b]]
            m = [x[2] for x in warm[b]]
            print(f"{b}: cold {cold[b][0]:.0f} ms wall, {cold[b][1]:.0f} ms CPU | "
                  f"warm x{len(w)}: wall median {statistics.median(w):.1f} (min {min(w):.1f}) ms, "
                  f"CPU median {statistics.median(c):.1f} (min {min(c):.1f}) ms, "
                  f"RSS {statistics.median(m):.1f} MB")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
