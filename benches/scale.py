#!/usr/bin/env python3
"""Reader targets at registry scale (issue 10), one target per run, whole processes.

Usage: benches/scale.py TARGET [--atip BIN] [--peer BIN] [--runs N] [--tools N]

TARGET (the registry is benches/gen_registry.py's: TOOLS tools x 20 commands, plus `triv`):
  search  `atip search create bucket --output json`, 1,000 tools: < 20 ms, < 50 MB
  exec    `atip exec triv_say` vs spawning triv directly, 1,000 tools: overhead < 5 ms
  mcp     `atip mcp`: spawn -> initialize -> tools/list answered, 1,000 tools: < 50 ms
  export  `atip export --format openai-strict` to a pipe, 500 tools: < 100 ms, < 50 MB
  export-first  the same, nothing kept: `exports/` (whole exports and the documents'
          renderings) is removed before every run, outside the timing
  catalog  `atip search create bucket` with no catalog.bin: the search compiles the
          catalog (reads, flattens and indexes every document, writes catalog.bin) first.
          It is the catalog part of a commit that changes the registry. catalog.bin is
          removed before every run, outside the timing
  export-change  the first export after one tool's document changed: registry.json
          alternates between two versions that differ in one document, and the kept
          whole exports are removed before every run (the renderings kept per document stay)

--peer BIN runs a second atip (e.g. a build of main, for before/after) on the same
registry in the same run; repeat it for more binaries. Each binary has its own copy of the
registry (so binaries of different catalog formats do not compile each other's catalog
away) and the runs are interleaved round by round (so load changing during the run
weighs on all alike). The first run of each binary is a warm-up (it compiles the
catalog when the binary has one) and is reported apart. Figures: wall min / median,
CPU median (user + sys), peak RSS max (wait4). Everything lives in a temp dir that is
removed at the end; HOME and the real registry are never touched.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = {"search": (1000, 20, 50), "catalog": (1000, None, None), "exec": (1000, 5, None),
           "mcp": (1000, 50, 50),
           "export": (500, 100, 50), "export-first": (500, 100, 50),
           "export-change": (500, 100, 50)}


def run(argv, env, cwd, stdin=None):
    """One process: wall seconds, CPU seconds, peak RSS MB."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{argv} failed: {status}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def mcp_once(atip, env, cwd):
    """Spawn `atip mcp`, initialize, list tools: wall to the tools/list answer."""
    t0 = time.perf_counter()
    p = subprocess.Popen([atip, "mcp"], env=env, cwd=cwd, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    def send(msg):
        p.stdin.write((json.dumps(msg) + "\n").encode()); p.stdin.flush()
    def answer(i):
        while True:
            r = json.loads(p.stdout.readline())
            if r.get("id") == i:
                return r
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    r = answer(2)
    wall = time.perf_counter() - t0
    assert "result" in r, r
    p.stdin.close()
    _, _, ru = os.wait4(p.pid, 0)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def once_of(target, atip, env, cwd):
    """One run of TARGET with binary ATIP (a function)."""
    if target == "export-first":
        exports = os.path.join(env["ATIP_DATA_DIR"], "exports")
        def first():
            shutil.rmtree(exports, ignore_errors=True)
            return run([atip, "export", "--format", "openai-strict"], env, cwd)
        return first
    if target == "export-change":
        data = env["ATIP_DATA_DIR"]
        versions = two_registries(data)
        turn = [0]
        def change():
            turn[0] ^= 1
            with open(os.path.join(data, "registry.json"), "wb") as f:
                f.write(versions[turn[0]])
            for name in os.listdir(os.path.join(data, "exports")) if os.path.isdir(os.path.join(data, "exports")) else []:
                if name.endswith(".json"):
                    os.remove(os.path.join(data, "exports", name))
            return run([atip, "export", "--format", "openai-strict"], env, cwd)
        return change
    if target == "search":
        return lambda: run([atip, "search", "create", "bucket", "--output", "json"], env, cwd)
    if target == "catalog":
        catalog = os.path.join(env["ATIP_DATA_DIR"], "catalog.bin")
        def compile_first():
            if os.path.exists(catalog):
                os.remove(catalog)
            return run([atip, "search", "create", "bucket", "--output", "json"], env, cwd)
        return compile_first
    if target == "export":
        return lambda: run([atip, "export", "--format", "openai-strict"], env, cwd)
    if target == "exec":
        return lambda: run([atip, "exec", "triv_say", "--args", '{"word":"hi","loud":true}'], env, cwd)
    return lambda: mcp_once(atip, env, cwd)


def two_registries(data):
    """registry.json as generated, and a version where one tool's document differs (its
    description), with that document written beside the others."""
    import hashlib
    path = os.path.join(data, "registry.json")
    with open(path, "rb") as f:
        original = f.read()
    reg = json.loads(original)
    name = sorted(reg["tools"])[len(reg["tools"]) // 2]
    entry = reg["tools"][name]
    with open(os.path.join(data, entry["metadata"]), "rb") as f:
        doc = json.loads(f.read())
    doc["description"] = doc.get("description", "") + " (changed)"
    body = (json.dumps(doc, indent=2) + "\n").encode()
    rel = f"tools/{hashlib.sha256(body).hexdigest()}.json"
    with open(os.path.join(data, rel), "wb") as f:
        f.write(body)
    entry["metadata"] = rel
    return [original, (json.dumps(reg, indent=2) + "\n").encode()]


def show(label, warm, rs, target_ms, rss_mb):
    walls = sorted(r[0] * 1000 for r in rs)
    cpu = statistics.median(r[1] * 1000 for r in rs)
    peak = max(r[2] for r in rs)
    goal = f" (target < {target_ms} ms" + (f", < {rss_mb} MB)" if rss_mb else ")") if target_ms else ""
    print(f"| {label} | {walls[0]:.1f} / {statistics.median(walls):.1f} ms | {cpu:.1f} ms | "
          f"{peak:.1f} MB | {warm[0] * 1000:.0f} ms |{goal}")
    return statistics.median(walls)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target", choices=TARGETS)
    ap.add_argument("--atip", default=os.path.join(HERE, "..", "target", "release", "atip"))
    ap.add_argument("--peer", action="append", default=[],
                    help="another binary to run on the same registry (repeatable)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--tools", type=int)
    a = ap.parse_args()
    tools, target_ms, rss_mb = TARGETS[a.target]
    tools = a.tools or tools
    tmp = tempfile.mkdtemp(prefix="atip-scale-")
    try:
        triv = os.path.join(tmp, "triv")
        with open(triv, "w") as f:
            f.write('#!/bin/sh\necho "$@"\n')
        os.chmod(triv, 0o755)
        subprocess.run([sys.executable, os.path.join(HERE, "gen_registry.py"), f"{tmp}/data", str(tools), triv],
                       check=True)
        os.makedirs(f"{tmp}/work")
        env = dict(os.environ, ATIP_DATA_DIR=f"{tmp}/data", ATIP_CONFIG_DIR=f"{tmp}/config",
                   ATIP_STATE_DIR=f"{tmp}/state", HOME=f"{tmp}/home", XDG_CACHE_HOME=f"{tmp}/cache",
                   TMPDIR=tmp)
        print(f"{a.target}: {tools} tools x 20 commands, {a.runs} runs, load average "
              f"{open('/proc/loadavg').read().split()[0]} on {os.cpu_count()} cores")
        print("| binary | wall min / median | CPU median | peak RSS | first run |")
        print("|---|---|---|---|---|")
        # Each binary gets its own copy of the registry (binaries of different catalog
        # formats would otherwise compile the shared catalog.bin again on every run), and
        # the runs are interleaved round by round, so that a load that changes during the
        # run weighs on every binary alike.
        peers = [(f"peer {i + 1}" if len(a.peer) > 1 else "peer", p) for i, p in enumerate(a.peer)]
        bins = [("atip", os.path.abspath(a.atip))] + [(l, os.path.abspath(p)) for l, p in peers]
        onces = []
        for i, (label, atip) in enumerate(bins):
            data = f"{tmp}/data" if i == 0 else f"{tmp}/data{i}"
            if i:
                shutil.copytree(f"{tmp}/data", data, ignore=shutil.ignore_patterns("catalog.bin"))
            onces.append(once_of(a.target, atip, dict(env, ATIP_DATA_DIR=data), f"{tmp}/work"))
        warm = [once() for once in onces]
        direct = lambda: run([triv, "say", "--loud", "hi"], env, f"{tmp}/work")
        results = [[] for _ in bins]
        directs = []
        for _ in range(a.runs):
            if a.target == "exec":
                directs.append(direct())
            for i, once in enumerate(onces):
                results[i].append(once())
        if a.target == "exec":
            d = show("direct spawn of triv", directs[0], directs, None, None)
        for (label, atip), w, rs in zip(bins, warm, results):
            m = show(f"{label} ({atip})", w, rs, target_ms, rss_mb)
            if a.target == "exec":
                print(f"| overhead over direct spawn ({label}) | {m - d:.1f} ms median | | | | (target < 5 ms)")
        catalog = f"{tmp}/data/catalog.bin"
        if os.path.exists(catalog):
            print(f"catalog.bin: {os.path.getsize(catalog) / 1e6:.1f} MB; registry metadata: "
                  f"{sum(os.path.getsize(os.path.join(tmp, 'data', 'tools', f)) for f in os.listdir(f'{tmp}/data/tools')) / 1e6:.1f} MB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
