#!/usr/bin/env python3
"""MCP benchmarks for `atip mcp` (run by hand after `cargo build --release`).

1. tools/list of a 500-tool registry, every page (target < 50 ms).
2. 100 sequential tools/call of a trivial tool in one session, compared with 100
   direct spawns of the same tool (target < 2 ms overhead per call).

A raw newline-delimited JSON-RPC client on the standard library only.
Usage: benches/mcp.py [path/to/atip]
"""
import json, os, subprocess, sys, tempfile, time

atip = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", "target", "release", "atip"))
tmp = tempfile.mkdtemp()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triv_registry
tool = triv_registry.write(tmp, 500, loud=True, width=3)
env = dict(os.environ, ATIP_DATA_DIR=f"{tmp}/data", ATIP_CONFIG_DIR=f"{tmp}/config",
           ATIP_STATE_DIR=f"{tmp}/state")
p = subprocess.Popen([atip, "mcp", "serve", "--search-threshold", "1000", "--no-mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, env=env, cwd=tmp)
next_id = 0

def request(method, params=None):
    global next_id
    next_id += 1
    msg = {"jsonrpc": "2.0", "id": next_id, "method": method}
    if params is not None:
        msg["params"] = params
    p.stdin.write((json.dumps(msg) + "\n").encode())
    p.stdin.flush()
    while True:
        reply = json.loads(p.stdout.readline())
        if reply.get("id") == next_id:
            if "error" in reply:
                raise SystemExit(f"{method}: {reply['error']}")
            return reply["result"]

request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "1"}})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
p.stdin.flush()

def list_all():
    tools, cursor = [], None
    while True:
        r = request("tools/list", {"cursor": cursor} if cursor else {})
        tools += r["tools"]
        cursor = r.get("nextCursor")
        if not cursor:
            return tools

list_all()  # warm-up
runs = 20
t0 = time.perf_counter()
for _ in range(runs):
    n = len(list_all())
list_ms = (time.perf_counter() - t0) * 1000 / runs
print(f"tools/list: {n} tools, all pages, {list_ms:.2f} ms per full listing (target < 50)")

args = {"word": "hi", "loud": True}
request("tools/call", {"name": "triv_c000", "arguments": args})  # warm-up
calls = 100
t0 = time.perf_counter()
for i in range(calls):
    r = request("tools/call", {"name": f"triv_c{i:03}", "arguments": args})
    assert r["structuredContent"]["data"]["exitCode"] == 0, r
mcp_ms = (time.perf_counter() - t0) * 1000 / calls
t0 = time.perf_counter()
for i in range(calls):
    subprocess.run([tool, f"c{i:03}", "--loud", "hi"], stdout=subprocess.PIPE, check=True, cwd=tmp)
direct_ms = (time.perf_counter() - t0) * 1000 / calls
print(f"tools/call: {mcp_ms:.2f} ms per call, direct spawn {direct_ms:.2f} ms, "
      f"overhead {mcp_ms - direct_ms:.2f} ms per call (target < 2)")
p.stdin.close()
p.wait(timeout=10)
print(f"load average: {' '.join(open('/proc/loadavg').read().split()[:3])} on {os.cpu_count()} cores")
