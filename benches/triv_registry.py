"""A registry of one trivial tool for the MCP benches (`mcp.py`, `mcp_client.py`).

`triv` is a shell script echoing its arguments; its metadata has N commands
`cNNNNN WORD` (read-only, idempotent), optionally with a `--loud` flag each.
"""
import hashlib, json, os


def write(root, n, loud=False, width=5):
    """Writes ROOT/bin/triv, ROOT/data/tools/<sha256>.json and ROOT/data/registry.json."""
    os.makedirs(f"{root}/data/tools", exist_ok=True)
    os.makedirs(f"{root}/bin", exist_ok=True)
    tool = f"{root}/bin/triv"
    with open(tool, "w") as f:
        f.write('#!/bin/sh\necho "$@"\n')
    os.chmod(tool, 0o755)
    command = lambda i: dict(
        description=f"Command number {i} of the trivial tool",
        effects={"destructive": False, "filesystem": {"write": False}, "idempotent": True},
        arguments=[{"name": "word", "type": "string", "description": "A word"}],
        **({"options": [{"name": "loud", "flags": ["--loud"], "type": "boolean",
                         "description": "Shout"}]} if loud else {}))
    commands = {f"c{i:0{width}}": command(i) for i in range(n)}
    meta = {"atip": {"version": "0.6"}, "name": "triv", "version": "1",
            "description": "Trivial tool", "commands": commands}
    body = json.dumps(meta).encode()
    hexd = hashlib.sha256(body).hexdigest()
    open(f"{root}/data/tools/{hexd}.json", "wb").write(body)
    binary = hashlib.sha256(open(tool, "rb").read()).hexdigest()
    json.dump({"version": "2", "updated": "2026-01-01T00:00:00Z",
               "agent": {"name": "atip", "version": "0"},
               "tools": {"triv": {"path": tool, "hash": f"sha256:{binary}", "source": "native",
                                  "lastChecked": "2026-01-01T00:00:00Z",
                                  "description": "Trivial tool", "atip": "0.6",
                                  "trust": "native", "effects": "read-only", "commands": n,
                                  "metadata": f"tools/{hexd}.json"}}},
              open(f"{root}/data/registry.json", "w"))
    return tool
