#!/usr/bin/env python3
"""MCP client benchmarks for atip (issue "MCP both ways"), standard library only.

1. `atip mcp tools` answered from the tools cache, whole process (target < 50 ms).
2. `atip mcp call` (cached list) against the same call made by a direct client written
   here: spawn the server, initialize, one tools/call, close (target < 5 ms overhead).
   The direct client is raw newline-delimited JSON-RPC, the cheapest any SDK can be.
3. `atip mcp serve` over 10,000 registered commands (search mode): the `tools/list`
   round trip after initialize, and spawn -> answer (target < 20 ms for the list).

The MCP server of 1 and 2 is `atip mcp serve` over a one-tool registry (`--no-mcp`): it
starts in milliseconds, so the comparison is not drowned in interpreter start-up. Runs
are interleaved so both sides of 2 see the same load; medians are reported.
Every directory is a temp dir; HOME and XDG_* point there.

Usage: benches/mcp_client.py [--atip BIN] [--runs N]
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--atip", default=os.environ.get("ATIP_BIN") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "target", "release", "atip"))
ap.add_argument("--runs", type=int, default=30)
a = ap.parse_args()
atip = os.path.abspath(a.atip)
tmp = tempfile.mkdtemp(prefix="atip-mcp-bench-")


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triv_registry
registry = triv_registry.write


def env_for(root):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("ATIP_") or k.startswith("XDG_"):
            del e[k]
    e.update(HOME=f"{root}/home", XDG_CONFIG_HOME=f"{root}/xdg-config",
             XDG_CACHE_HOME=f"{root}/xdg-cache", XDG_DATA_HOME=f"{root}/xdg-data",
             XDG_STATE_HOME=f"{root}/xdg-state", ATIP_DATA_DIR=f"{root}/data",
             ATIP_CONFIG_DIR=f"{root}/config", ATIP_STATE_DIR=f"{root}/state")
    os.makedirs(f"{root}/home", exist_ok=True)
    os.makedirs(f"{root}/config", exist_ok=True)
    return e


class Client:
    """Raw newline-delimited JSON-RPC over a child's stdio."""

    def __init__(self, argv, env):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env)
        self.n = 0

    def send(self, method, params=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            self.n += 1
            msg["id"] = self.n
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()
        if notify:
            return None
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"server closed during {method}")
            r = json.loads(line)
            if r.get("id") == self.n:
                return r

    def initialize(self):
        r = self.send("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "bench", "version": "0"}})
        self.send("notifications/initialized", notify=True)
        return r

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


def ms(xs):
    return f"{statistics.median(xs) * 1000:.1f} ms (min {min(xs) * 1000:.1f})"


# 1 and 2: one-tool registry served by atip; the client side configured to reach it.
one = f"{tmp}/one"
registry(one, 1)
serve_env = env_for(one)
serve_argv = [atip, "--data-dir", f"{one}/data", "--config-dir", f"{one}/config",
              "mcp", "serve", "--no-mcp"]
client_root = f"{tmp}/client"
client_env = env_for(client_root)
json.dump({"mcpServers": {"s": {"command": serve_argv[0], "args": serve_argv[1:]}}},
          open(f"{client_root}/config/mcp.json", "w"))
tools = subprocess.run([atip, "--output", "json", "mcp", "tools"], env=client_env,
                       capture_output=True, text=True)
assert tools.returncode == 0, tools.stderr
tool_name = "triv_c00000"
call_args = json.dumps({"word": "hi"})

cached, via_atip, direct = [], [], []
for _ in range(a.runs):
    t = time.perf_counter()
    r = subprocess.run([atip, "--output", "json", "mcp", "tools"], env=client_env,
                       capture_output=True)
    cached.append(time.perf_counter() - t)
    assert r.returncode == 0
    t = time.perf_counter()
    r = subprocess.run([atip, "--output", "json", "mcp", "call", tool_name, "--args",
                        call_args, "--protocol", "legacy"], env=client_env,
                       capture_output=True, text=True)
    via_atip.append(time.perf_counter() - t)
    assert r.returncode == 0, r.stderr
    t = time.perf_counter()
    c = Client(serve_argv, serve_env)
    c.initialize()
    res = c.send("tools/call", {"name": tool_name, "arguments": {"word": "hi"}})
    c.close()
    direct.append(time.perf_counter() - t)
    assert "result" in res, res

print(f"atip binary: {atip}")
print(f"1. cached `atip mcp tools`: {ms(cached)}   target < 50 ms")
print(f"2. `atip mcp call`: {ms(via_atip)}; direct raw client: {ms(direct)}; "
      f"overhead {(statistics.median(via_atip) - statistics.median(direct)) * 1000:.1f} ms"
      f"   target < 5 ms")

# 3: 10,000 commands, search mode.
big = f"{tmp}/big"
registry(big, 10_000)
big_env = env_for(big)
argv = [atip, "--data-dir", f"{big}/data", "--config-dir", f"{big}/config", "mcp", "serve",
        "--no-mcp"]
lists, startup, served = [], [], None
for _ in range(max(5, a.runs // 3)):
    t0 = time.perf_counter()
    c = Client(argv, big_env)
    c.initialize()
    t1 = time.perf_counter()
    r = c.send("tools/list", {})
    t2 = time.perf_counter()
    c.close()
    served = len(r["result"]["tools"])
    lists.append(t2 - t1)
    startup.append(t2 - t0)
print(f"3. search mode over 10,000 commands: tools/list {ms(lists)} ({served} tools listed); "
      f"spawn -> list answered {ms(startup)}   target < 20 ms")
shutil.rmtree(tmp, ignore_errors=True)
