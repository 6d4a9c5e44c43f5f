#!/usr/bin/env python3
"""Wall, CPU and peak memory of `atip scan` runs, with the peak split by phase.

    benches/scan_phases.py [--atip BIN] [--peer BIN] [--runs N] [-- SCAN ARGS...]

Each run is a cold scan (fresh data dir) followed by a warm rescan of the same data dir,
of this shell's PATH unless SCAN ARGS say otherwise (e.g. `-- --path DIR`). Every run
uses throw-away data/config dirs, HOME, XDG_* and TMPDIR under one temp dir. `--peer`
runs a second binary on the same PATH in the same loop, alternating, so that figures
taken on a shared machine compare as ratios.

Peak by phase: the child's VmHWM (high-water mark of its resident set) and VmRSS are
sampled every 2 ms from /proc together with the data dir; the peak when `registry.json`
first appears is the peak of everything up to the commit's writes (enumerate, read,
infer, compose, write the metadata files and the index — and, since session 6, the
catalog compiled beside those writes); the rest of the run is what follows. CPU is user + sys from wait4; the peak RSS of the whole run is ru_maxrss.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def vm(pid):
    """(VmHWM, VmRSS) in MB, or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            got = {}
            for line in f:
                if line.startswith(("VmHWM:", "VmRSS:")):
                    got[line[:5]] = int(line.split()[1]) / 1024
            return got["VmHWM"], got["VmRSS"]
    except (OSError, KeyError):
        return None


def measure(binary, work, tag, run, env, scan_args):
    # A new data dir per run, all deleted at the end: deleting ~1,100 files just before
    # a cold scan makes ext4 without a journal (this machine's) skip every recently
    # freed inode on each create, which once cost the scan 0.8 s of kernel time that
    # no user's first scan pays.
    data = os.path.join(work, f"data-{tag}-{run}")
    config = os.path.join(work, "config")
    out = {}
    for kind in ("cold", "warm"):
        registry = os.path.join(data, "registry.json")
        had_index = os.path.exists(registry)
        cmd = [binary, "--data-dir", data, "--config-dir", config, "scan", "--output",
               "json"] + scan_args
        start = time.monotonic()
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        hwm_at_index = rss_at_index = None
        last = (0.0, 0.0)
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            h = vm(p.pid)
            if h is not None:
                last = h
            if hwm_at_index is None and not had_index and os.path.exists(registry):
                hwm_at_index, rss_at_index = last
            time.sleep(0.002)
        wall = time.monotonic() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            print(f"{tag} {kind} scan exited {p.returncode}", file=sys.stderr)
        out[kind] = {
            "wall": wall,
            "cpu": ru.ru_utime + ru.ru_stime,
            "user": ru.ru_utime,
            "sys": ru.ru_stime,
            "peak": ru.ru_maxrss / 1024,
            "peak_scan": hwm_at_index,
            "rss_at_index": rss_at_index,
        }
    files = sum(len(fs) for _, _, fs in os.walk(data))
    out["files"] = files
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atip", default=os.environ.get("ATIP_BIN", "target/release/atip"))
    ap.add_argument("--peer", help="a second binary measured in the same loop")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("scan_args", nargs="*")
    a = ap.parse_args()
    bins = [("atip", a.atip)] + ([("peer", a.peer)] if a.peer else [])
    work = tempfile.mkdtemp(prefix="atip-phases-")
    try:
        env = dict(os.environ)
        for k, v in {"HOME": "home", "XDG_DATA_HOME": "xdg", "XDG_CONFIG_HOME": "xdg-config",
                     "XDG_STATE_HOME": "xdg-state", "XDG_CACHE_HOME": "xdg-cache",
                     "TMPDIR": "tmp"}.items():
            env[k] = os.path.join(work, v)
            os.makedirs(env[k], exist_ok=True)
        results = {tag: [] for tag, _ in bins}
        for run in range(a.runs):
            for tag, b in bins:
                results[tag].append(measure(b, work, tag, run, env, a.scan_args))
        print(f"load average {os.getloadavg()[0]:.1f}; {a.runs} runs; medians (min)")
        print("| binary | run | wall ms | CPU ms (user + sys) | peak MB | peak before catalog MB | files written |")
        print("|---|---|---|---|---|---|---|")
        for tag, b in bins:
            rs = results[tag]
            for kind in ("cold", "warm"):
                col = lambda k: [r[kind][k] for r in rs]
                med = lambda k: statistics.median(col(k))
                scan_peaks = [x for x in col("peak_scan") if x is not None]
                sp = f"{statistics.median(scan_peaks):.1f}" if scan_peaks else "–"
                rss = [x for x in col("rss_at_index") if x is not None]
                if rss:
                    sp += f" (RSS then {statistics.median(rss):.1f})"
                files = statistics.median(r["files"] for r in rs) if kind == "cold" else "–"
                print(f"| {b} | {kind} | {med('wall')*1000:.0f} ({min(col('wall'))*1000:.0f}) "
                      f"| {med('cpu')*1000:.0f} ({med('user')*1000:.0f} + {med('sys')*1000:.0f}) "
                      f"| {med('peak'):.1f} | {sp} | {files} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
