#!/usr/bin/env python3
"""Cold scans of one or more atip binaries, interleaved, with wall, CPU and peak RSS.

    benches/cold_scan.py --path DIRS [--runs N] [--peer NAME=COMMAND]... BIN [BIN...]

Each run gives every binary a fresh data and config dir (and HOME, XDG_* and TMPDIR)
under one temp dir, in the environment benches/scan.sh uses (`env -i PATH=/usr/bin:/bin`,
so `#!/usr/bin/env python3` tools start /usr/bin/python3, not a pyenv shim), and scans
DIRS (e.g. the PATH printed by ../shared/bench/make-fake-path.sh -H). The binaries
alternate, their order reversed every other run, so that figures taken on a shared
machine compare as ratios. CPU is user + sys of atip and the probes it waited for, and
RSS is ru_maxrss, both from wait4 (what `/usr/bin/time -v` reports). The data dirs are
deleted only at the end: deleting a scan's files right before the next scan slows it
(see "Measuring traps" in benches/README.md). `--scratch DIR` puts that temp dir in DIR:
`--scratch /dev/shm` (tmpfs) takes this machine's ext4 inode allocator out of the
figures, which otherwise grow with every file any earlier run deleted.

`--peer NAME=COMMAND` adds another scanner to the same interleaved runs, in the same
fresh environment (HOME and XDG_* point into its own work dir, so a scanner that keeps
its registry under XDG_DATA_HOME starts cold too). COMMAND is split on spaces; `{path}`
becomes DIRS as given and `{dirs}` DIRS joined by commas. Any exit status is accepted
from a peer (the reference scanner exits non-zero when some tools fail); it is printed.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def atip_command(binary, work, path):
    """The scan command of an atip binary, with its data and config dirs under `work`."""
    return [binary, "--data-dir", os.path.join(work, "data"), "--config-dir",
            os.path.join(work, "config"), "scan", "--path", path, "--output", "json",
            "--timeout", "2s"]


def peer_command(template, path):
    """A peer's command: `template` split on spaces, with {path} and {dirs} filled in."""
    dirs = ",".join(d for d in path.split(":") if d)
    return [w.replace("{path}", path).replace("{dirs}", dirs) for w in template.split()]


def run(command, root, path, peer=False):
    """One cold scan in a fresh dir under `root`: (wall ms, CPU ms, max RSS MB, exit)."""
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
    cmd = peer_command(command, path) if peer else atip_command(command, work, path)
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1) and not peer:
        sys.exit(f"{command} exited {code}")
    return wall * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3, ru.ru_maxrss / 1024, code


def spread(values):
    values = sorted(values)
    return f"{values[0]:.1f} / {statistics.median(values):.1f} / {values[-1]:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", required=True, help="the directories to scan (PATH syntax)")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--peer", action="append", default=[], metavar="NAME=COMMAND",
                    help="another scanner's command ({path}, {dirs} filled in)")
    ap.add_argument("--scratch", default=None, metavar="DIR",
                    help="where the runs' temp dirs go (default: the system's temp dir)")
    ap.add_argument("binaries", nargs="+")
    args = ap.parse_args()
    peers = dict(p.split("=", 1) for p in args.peer)
    root = tempfile.mkdtemp(prefix="atip-cold-scan.", dir=args.scratch)
    scanners = args.binaries + list(peers)
    got = {b: [] for b in scanners}
    load = [open("/proc/loadavg").read().split()[0]]
    try:
        for i in range(args.runs):
            order = scanners if i % 2 == 0 else scanners[::-1]
            for b in order:
                got[b].append(run(peers.get(b, b), root, args.path, b in peers))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    load.append(open("/proc/loadavg").read().split()[0])
    print(f"load {load[0]} -> {load[1]}; {args.runs} runs; min / median / max")
    print("| scanner | wall ms | CPU ms | peak RSS MB | exit |")
    print("|---|---|---|---|---|")
    for b, rows in got.items():
        cols = [spread([r[k] for r in rows]) for k in range(3)]
        codes = ",".join(sorted({str(r[3]) for r in rows}))
        print(f"| {b} | {cols[0]} | {cols[1]} | {cols[2]} | {codes} |")
    if peers and args.binaries:
        first = statistics.median(r[0] for r in got[args.binaries[0]])
        for name in peers:
            ratio = statistics.median(r[0] for r in got[name]) / first
            print(f"{name} median wall / {args.binaries[0]} median wall: {ratio:.1f}x")


if __name__ == "__main__":
    main()
