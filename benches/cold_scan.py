#!/usr/bin/env python3
"""Cold scans of one or more atip binaries, interleaved, with wall, CPU and peak RSS.

    benches/cold_scan.py --path DIRS [--runs N] BIN [BIN...]

Each run gives every binary a fresh data and config dir (and HOME, XDG_* and TMPDIR)
under one temp dir, in the environment benches/scan.sh uses (`env -i PATH=/usr/bin:/bin`,
so `#!/usr/bin/env python3` tools start /usr/bin/python3, not a pyenv shim), and scans
DIRS (e.g. the PATH printed by ../shared/bench/make-fake-path.sh -H). The binaries
alternate, their order reversed every other run, so that figures taken on a shared
machine compare as ratios. CPU is user + sys of atip and the probes it waited for, and
RSS is ru_maxrss, both from wait4 (what `/usr/bin/time -v` reports). The data dirs are
deleted only at the end: deleting a scan's files right before the next scan slows it
(see "Measuring traps" in benches/README.md).
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(binary, root, path):
    """One cold scan in a fresh dir under `root`: (wall ms, CPU ms, max RSS MB)."""
    work = tempfile.mkdtemp(dir=root)
    for d in ("home", "tmp", "xdg", "config"):
        os.makedirs(os.path.join(work, d))
    home = os.path.join(work, "home")
    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": home,
        "TMPDIR": os.path.join(work, "tmp"),
        "XDG_DATA_HOME": os.path.join(home, ".local/share"),
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_STATE_HOME": os.path.join(home, ".local/state"),
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "XDG_DATA_DIRS": os.path.join(work, "xdg"),
        "XDG_CONFIG_DIRS": os.path.join(work, "xdg"),
    }
    cmd = [binary, "--data-dir", os.path.join(work, "data"), "--config-dir",
           os.path.join(work, "config"), "scan", "--path", path, "--output", "json",
           "--timeout", "2s"]
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"{binary} exited {code}")
    return wall * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3, ru.ru_maxrss / 1024


def spread(values):
    values = sorted(values)
    return f"{values[0]:.1f} / {statistics.median(values):.1f} / {values[-1]:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", required=True, help="the directories to scan (PATH syntax)")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("binaries", nargs="+")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="atip-cold-scan.")
    got = {b: [] for b in args.binaries}
    load = [open("/proc/loadavg").read().split()[0]]
    try:
        for i in range(args.runs):
            order = args.binaries if i % 2 == 0 else args.binaries[::-1]
            for b in order:
                got[b].append(run(b, root, args.path))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    load.append(open("/proc/loadavg").read().split()[0])
    print(f"load {load[0]} -> {load[1]}; {args.runs} runs; min / median / max")
    print("| binary | wall ms | CPU ms | peak RSS MB |")
    print("|---|---|---|---|")
    for b, rows in got.items():
        cols = [spread([r[k] for r in rows]) for k in range(3)]
        print(f"| {b} | {cols[0]} | {cols[1]} | {cols[2]} |")


if __name__ == "__main__":
    main()
