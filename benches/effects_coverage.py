#!/usr/bin/env python3
"""Effects coverage of a real-PATH scan (issue 32): the share of registered tools whose
effects are known, and the share of the 300 most referenced programs an agent can call
read-only without confirmation.

usage: effects_coverage.py ATIP DATA_DIR [TOP_FILE]

DATA_DIR holds a registry made by `atip scan` of the machine's PATH. "Known" means the
registry entry states effects that exec believes: not `unknown`, and for an inferred
entry vouched for as `curated`. The 300 programs are ranked by how many installed manual
pages refer to them as NAME(1) or NAME(8) (benches/effects_rank.py writes TOP_FILE); a
program counts as callable read-only when some command of it, called with just its
required arguments, is allowed by the default policy with read-only call effects
(`atip exec --dry-run`, the decision exec, mcp and chat make)."""
import json, os, subprocess, sys, tempfile

atip, data = sys.argv[1], sys.argv[2]
top_file = sys.argv[3] if len(sys.argv) > 3 else "/tmp/top300.txt"
cfg = tempfile.mkdtemp()
env = dict(os.environ, ATIP_DATA_DIR=data, ATIP_CONFIG_DIR=cfg,
           ATIP_STATE_DIR=os.path.join(cfg, "state"), NO_COLOR="1")
reg = json.load(open(os.path.join(data, "registry.json")))["tools"]

def known(e):
    if e.get("effects") in (None, "unknown"):
        return False
    return e["source"] != "inferred" or e.get("vouchedBy") == "curated"

k = sum(1 for e in reg.values() if known(e))
print(f"registered tools: {len(reg)}; effects known: {k} ({100 * k / len(reg):.1f}%)")

def minimal(schema):
    out = {}
    for r in schema.get("required", []):
        p = schema.get("properties", {}).get(r, {})
        if p.get("enum"):
            out[r] = p["enum"][0]
        else:
            out[r] = {"integer": 1, "number": 1, "boolean": True, "array": ["x"]}.get(p.get("type"), "x")
    return out

top = [l.split("\t")[0] for l in open(top_file) if l.strip()]
work = tempfile.mkdtemp()
ro, registered, rows = 0, 0, []
for name in top:
    if name not in reg:
        rows.append((name, "not registered"))
        continue
    registered += 1
    out = subprocess.run([atip, "--output", "json", "export", "--include-inferred", "--format",
                          "mcp", "--tools", name], env=env, capture_output=True, text=True, cwd=work)
    try:
        tools = json.loads(out.stdout)
        tools = tools.get("tools", tools) if isinstance(tools, dict) else tools
    except ValueError:
        tools = []
    verdict = "asks or refused"
    for t in tools:
        schema = t.get("inputSchema") or t.get("input_schema") or {}
        r = subprocess.run([atip, "--output", "json", "exec", "--dry-run", t["name"], "--args",
                            json.dumps(minimal(schema))], env=env, capture_output=True,
                           text=True, cwd=work, stdin=subprocess.DEVNULL)
        try:
            d = json.loads(r.stdout)
        except ValueError:
            continue
        eff = d.get("effects", "unknown")
        if d.get("decision", {}).get("action") == "allow" and not any(
                w in eff for w in ("writes", "deletes", "destructive", "unknown", "billable")):
            verdict = f"read-only call runs ({t['name']}: {eff})"
            break
    if verdict.startswith("read-only"):
        ro += 1
    rows.append((name, verdict))
print(f"top {len(top)} programs: registered {registered}; callable read-only without confirmation: {ro} ({100 * ro / len(top):.1f}%)")
if os.environ.get("VERBOSE"):
    for n, v in rows:
        print(f"  {n}: {v}")
