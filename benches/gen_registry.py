#!/usr/bin/env python3
"""Writes a synthetic atip registry: TOOLS tools x 20 runnable commands each.

Usage: benches/gen_registry.py DATA_DIR TOOLS PROGRAM

Each tool has 4 command groups of 5 leaves (2 arguments, 5 options, a parent option and
3 global options each) and varied effects, like benches/export.rs. Metadata files are
named by the sha256 of their bytes, as `atip scan` writes them, and every entry points
at PROGRAM (an executable) with its real sha256, so `atip exec` can run any command.
A first tool, `triv`, has one command `say` taking a word.
"""
import hashlib
import json
import os
import sys

WORDS = ("create delete list show update sync archive restore deploy build test release "
         "package image container volume network secret token user group role policy bucket "
         "object queue topic stream table index schema migration backup snapshot cluster node "
         "pod service ingress certificate domain record zone function trigger schedule job "
         "pipeline workflow artifact cache log metric alert dashboard report issue pull request "
         "branch commit account project").split()


def w(i):
    return WORDS[i % len(WORDS)]


def sentence(seed, n):
    s = [w(seed * 31 + k * 17 + k * k) for k in range(n)]
    s[0] = s[0].capitalize()
    return " ".join(s)


def opt(name, ty, seed):
    return {"name": name, "flags": ["--" + name], "type": ty, "description": sentence(seed, 8)}


def tool_doc(t):
    groups = {}
    for g in range(4):
        leaves = {}
        for l in range(5):
            seed = t * 1000 + g * 100 + l
            effects = [
                {"destructive": False, "filesystem": {"write": False}},
                {"destructive": True, "reversible": False},
                {"idempotent": False, "cost": {"billable": l % 2 == 0}},
                {"network": True},
            ][l % 4]
            mode = opt(w(seed + 3) + "-mode", "enum", seed + 3)
            mode["enum"] = ["fast", "safe", "full"]
            leaves[f"{w(seed)}-{l}"] = {
                "description": sentence(seed, 12),
                "effects": effects,
                "arguments": [
                    {"name": "target", "type": "string", "description": sentence(seed + 1, 6)},
                    {"name": "paths", "type": "file", "description": sentence(seed + 2, 6),
                     "required": False, "variadic": True},
                ],
                "options": [mode, opt("limit", "integer", seed + 4), opt("force", "boolean", seed + 5),
                            opt(w(seed + 6) + "-name", "string", seed + 6), opt("out", "directory", seed + 7)],
            }
        groups[f"{w(t + g)}{g}"] = {"description": sentence(t * 7 + g, 6),
                                    "options": [opt("project", "string", t + g)], "commands": leaves}
    return {"atip": {"version": "0.6"}, "name": f"tool{t:04}", "version": "1.0.0",
            "description": sentence(t, 10), "effects": {"network": True},
            "globalOptions": [opt("verbose", "boolean", t), opt("config", "file", t + 1),
                              opt("profile", "string", t + 2)],
            "commands": groups}


TRIV = {"atip": {"version": "0.6"}, "name": "triv", "version": "1", "description": "Trivial tool",
        "commands": {"say": {"description": "Say it", "effects": {"destructive": False, "filesystem": {"write": False}, "idempotent": True},
                             "arguments": [{"name": "word", "type": "string", "description": "Word"}],
                             "options": [{"name": "loud", "flags": ["--loud"], "type": "boolean",
                                          "description": "Loud"}]}}}


def main():
    data, count, program = sys.argv[1], int(sys.argv[2]), os.path.abspath(sys.argv[3])
    os.makedirs(os.path.join(data, "tools"), exist_ok=True)
    with open(program, "rb") as f:
        prog_hash = "sha256:" + hashlib.sha256(f.read()).hexdigest()
    tools = {}
    docs = [("triv", TRIV)] + [(f"tool{t:04}", tool_doc(t)) for t in range(count)]
    for name, doc in docs:
        body = json.dumps(doc, indent=2).encode()
        hexd = hashlib.sha256(body).hexdigest()
        with open(os.path.join(data, "tools", hexd + ".json"), "wb") as f:
            f.write(body)
        commands = 1 if name == "triv" else 24
        tools[name] = {"path": program, "hash": prog_hash, "source": "native",
                       "lastChecked": "2026-01-01T00:00:00Z", "description": doc["description"],
                       "atip": "0.6", "trust": "native", "effects": "network", "commands": commands,
                       "metadata": f"tools/{hexd}.json"}
    index = {"version": "2", "updated": "2026-01-01T00:00:00Z",
             "agent": {"name": "atip", "version": "0.1.0"}, "tools": dict(sorted(tools.items()))}
    with open(os.path.join(data, "registry.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
