#!/usr/bin/env python3
"""Search quality and speed on a scan of this machine's real PATH (issue 31).

Scans the real PATH into temp dirs, then asks every task of
tests/fixtures/search/tasks.json three ways and reports top-1, top-3 and mean reciprocal
rank, all tasks and the held-out third apart:

- `atip search` (whole process, JSON output, --no-mcp);
- `atip mcp serve`'s `atip_search_tools` (one server, every task over one connection);
- an apropos-like baseline written here: BM25 over nothing but each registered tool's
  name and its one-line description (registry.json), what `apropos` indexes.

A result answers a task when its tool, its tool-call name or one of its aliases is
among the task's `want`. Tasks none of whose answers were registered are left out and
counted. Then times whole-process `atip search` (median of --runs runs over the tasks).

The ranking is measured with `runners.allow: ["*"]` (as the gate test does); the default
policy's figures follow (it withholds command runners from both searchers).

Usage: benches/search_quality.py [--atip BIN] [--runs N] [--show Q ...] [--misses]
"""
import argparse, json, math, os, re, shutil, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--atip", default=os.environ.get("ATIP_BIN") or os.path.join(
    here, "..", "target", "release", "atip"))
ap.add_argument("--tasks", default=os.path.join(here, "..", "tests", "fixtures", "search",
                                                "tasks.json"))
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--misses", action="store_true", help="print tuning-set misses")
ap.add_argument("--show", nargs="*", default=[], help="print the top 3 of these queries")
a = ap.parse_args()
atip = os.path.abspath(a.atip)
tmp = tempfile.mkdtemp(prefix="atip-search-quality-")
env = dict(os.environ)
for k in list(env):
    if k.startswith("ATIP_") or k.startswith("XDG_"):
        del env[k]
env.update(HOME=f"{tmp}/home", XDG_CONFIG_HOME=f"{tmp}/xdg-config",
           XDG_CACHE_HOME=f"{tmp}/xdg-cache", XDG_DATA_HOME=f"{tmp}/xdg-data",
           XDG_STATE_HOME=f"{tmp}/xdg-state")
os.makedirs(f"{tmp}/home")
dirs = ["--data-dir", f"{tmp}/data", "--config-dir", f"{tmp}/config"]

t = time.perf_counter()
scan = subprocess.run([atip, *dirs, "scan"], env=env, capture_output=True, text=True)
scan_s = time.perf_counter() - t
assert scan.returncode == 0, scan.stderr
registry = json.load(open(f"{tmp}/data/registry.json"))["tools"]
tasks = json.load(open(a.tasks))["tasks"]
answerable = [t for t in tasks if any(w in registry for w in t["want"])]


def hit(r, want):
    # An MCP result has no `tool`: its title's first word is the program.
    names = {r.get("tool"), r.get("name"), (r.get("title") or "").split(" ")[0]}
    names |= set(r.get("aliases") or [])
    return bool(names & set(want))


def rank_of(results, want):
    for i, r in enumerate(results):
        if hit(r, want):
            return i + 1
    return None


def figures(ranks):
    n = len(ranks)
    if n == 0:
        return "n=0"
    t1 = sum(1 for r in ranks if r == 1)
    t3 = sum(1 for r in ranks if r and r <= 3)
    mrr = sum(1 / r for r in ranks if r) / n
    return f"n={n} top-1 {100 * t1 / n:.1f}% top-3 {100 * t3 / n:.1f}% MRR {mrr:.3f}"


def cli(q):
    out = subprocess.run([atip, *dirs, "--output", "json", "search", "--no-mcp", "--limit",
                          "10", "--schemas", "0", q], env=env, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(f"search {q!r}: {out.stderr}")
    return json.loads(out.stdout)["results"] if out.stdout.strip() else []


# The apropos-like baseline: BM25 (k1 1.2, b 0.75) over name and NAME-line words.
STOP = set("a an the to of in on for with and or my me i is are be it its this that from by at as into how do does can".split())


def words(s):
    return [w for w in re.split(r"[^a-z0-9]+", s.lower()) if w]


docs = {n: words(n) + words(e.get("description", "")) for n, e in registry.items()}
df = {}
for ws in docs.values():
    for w in set(ws):
        df[w] = df.get(w, 0) + 1
avg = sum(len(ws) for ws in docs.values()) / max(1, len(docs))


def baseline(q):
    qs = [w for w in words(q) if w not in STOP] or words(q)
    scored = []
    for n, ws in docs.items():
        s = 0.0
        for w in qs:
            tf = ws.count(w)
            if tf:
                idf = math.log((len(docs) - df[w] + 0.5) / (df[w] + 0.5) + 1)
                s += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(ws) / avg))
        if s > 0:
            scored.append((-s, n))
    scored.sort()
    return [{"tool": n, "name": n} for _, n in scored[:10]]


class Mcp:
    def __init__(self):
        self.p = subprocess.Popen([atip, *dirs, "mcp", "serve", "--no-mcp"], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.n = 0
        self.send("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "bench", "version": "0"}})
        self.send("notifications/initialized", notify=True)

    def send(self, method, params=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            self.n += 1
            msg["id"] = self.n
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()
        while not notify:
            r = json.loads(self.p.stdout.readline())
            if r.get("id") == self.n:
                return r

    def search(self, q):
        r = self.send("tools/call", {"name": "atip_search_tools",
                                     "arguments": {"query": q, "limit": 10, "schemas": 0}})
        res = r["result"]
        body = res.get("structuredContent") or json.loads(res["content"][0]["text"])
        return body["results"]


# The ranking is measured with command runners allowed (what the gate test does): the
# default policy withholds them (ssh, env, python, …) from both searchers, which is the
# policy's choice; its figures are printed too.
rows = {"apropos-like baseline": {}}
tops = {}
differ = 0
os.makedirs(f"{tmp}/config", exist_ok=True)
for policy, suffix in (('{"runners": {"allow": ["*"]}}', ""), ("{}", ", default policy")):
    with open(f"{tmp}/config/policy.json", "w") as f:
        f.write(policy)
    mcp = Mcp()
    c_label, m_label = f"atip search{suffix}", f"mcp atip_search_tools{suffix}"
    rows[c_label], rows[m_label] = {}, {}
    for t in answerable:
        q, want = t["q"], t["want"]
        c, m = cli(q), mcp.search(q)
        rows[c_label][q], rows[m_label][q] = rank_of(c, want), rank_of(m, want)
        differ += [r.get("name") for r in c[:5]] != [r.get("name") for r in m[:5]]
        if not suffix:
            rows["apropos-like baseline"][q] = rank_of(baseline(q), want)
            tops[q] = [r.get("name") for r in c[:3]]
            if a.misses and not t.get("heldout") and rows[c_label][q] != 1:
                print(f"miss {q!r} want {want} at {rows[c_label][q]}: {tops[q]}")
    mcp.p.stdin.close()
    mcp.p.wait(timeout=10)
with open(f"{tmp}/config/policy.json", "w") as f:
    f.write('{"runners": {"allow": ["*"]}}')
print(f"tasks whose top 5 differ between atip search and the MCP search tool: {differ}")

print(f"registry: {len(registry)} tools; scan {scan_s:.2f} s; tasks {len(tasks)}, "
      f"answerable {len(answerable)}, held out {sum(1 for t in answerable if t.get('heldout'))}")
for label, ranks in rows.items():
    held = [ranks[t["q"]] for t in answerable if t.get("heldout")]
    tune = [ranks[t["q"]] for t in answerable if not t.get("heldout")]
    print(f"{label:24} held-out {figures(held)} | tuning {figures(tune)} | all {figures(list(ranks.values()))}")
for q in a.show:
    print(f"{q!r}: {tops.get(q) or [r.get('name') for r in cli(q)[:3]]}")

times = []
if a.runs == 0:
    shutil.rmtree(tmp)
    sys.exit(0)
for _ in range(a.runs):
    for t in answerable[:20]:
        s = time.perf_counter()
        subprocess.run([atip, *dirs, "search", "--no-mcp", t["q"]], env=env,
                       capture_output=True)
        times.append(time.perf_counter() - s)
print(f"whole-process atip search: median {statistics.median(times) * 1000:.1f} ms, "
      f"max {max(times) * 1000:.1f} ms over {len(times)} runs")
shutil.rmtree(tmp)
