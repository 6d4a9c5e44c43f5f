#!/usr/bin/env python3
"""Writes N varied, valid, gh-sized ATIP 0.6 metadata documents into a directory.

Each document looks like a real CLI's `--agent` answer: about 200 commands in
groups of subcommands, each with arguments, options (flags, types, enums,
defaults, env vars), effects, examples; plus global options, authentication,
patterns and trust. Content is varied per document (seeded by its index), so no
two files are alike and caches cannot short-cut the work. Target size: ~60 KB (compact JSON, as
a tool prints it).

Usage: gen_metadata.py DIR COUNT [--seed S]
Used by benches/validate.sh; run by hand, never by CI.
"""

import json
import os
import random
import sys

WORDS = (
    "repo issue pull release workflow run cache secret variable label project gist key "
    "org team member branch commit tag deploy environment artifact package codespace "
    "alias config extension search status browse auth token api ruleset webhook "
    "milestone discussion comment review check job step runner pipeline build image "
    "volume network node cluster service ingress secretstore policy role binding quota"
).split()
VERBS = (
    "list view create edit delete close reopen merge sync clone fork archive rename "
    "transfer watch star enable disable download upload rerun cancel approve comment "
    "lock unlock pin unpin set remove add show diff checkout ready status"
).split()
ADJ = (
    "current remote local default selected given matching recent open closed draft "
    "public private internal archived pending failed successful latest primary"
).split()
NOUNS = (
    "repository branch file output format limit state author assignee reviewer label "
    "milestone title body template directory timeout query field filter sort order "
    "page size path host owner name visibility description editor color"
).split()
TYPES = ["string", "string", "string", "integer", "boolean", "boolean", "enum", "file", "directory", "url", "number"]
ENUMS = [["open", "closed", "merged", "all"], ["json", "table", "csv", "yaml"], ["asc", "desc"],
         ["public", "private", "internal"], ["low", "medium", "high", "critical"],
         ["created", "updated", "comments", "reactions"]]


def sentence(rng, lo, hi):
    n = rng.randint(lo, hi)
    words = [rng.choice(VERBS).capitalize()] + [rng.choice(ADJ + NOUNS + WORDS) for _ in range(n)]
    return " ".join(words)


def param(rng, name, is_option, used_flags):
    kind = rng.choice(TYPES)
    p = {"name": name}
    if is_option:
        flags = []
        short = rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        if rng.random() < 0.5 and "-" + short not in used_flags:
            flags.append("-" + short)
        flags.append("--" + name)
        used_flags.update(flags)
        p["flags"] = flags
    p["type"] = kind
    p["description"] = sentence(rng, 1, 4) + "."
    if kind == "enum":
        values = rng.choice(ENUMS)
        p["enum"] = values
        if rng.random() < 0.5:
            p["default"] = rng.choice(values)
    elif kind == "integer" and rng.random() < 0.5:
        p["default"] = rng.randint(1, 500)
    elif kind == "string" and is_option and rng.random() < 0.2:
        p["envVar"] = ("X_" + name.replace("-", "_")).upper()
    if is_option:
        if rng.random() < 0.1:
            p["required"] = True
        if kind in ("string", "file") and rng.random() < 0.15:
            p["variadic"] = True
    return p


def effects(rng, verb):
    ro = verb in ("list", "view", "show", "diff", "status", "download", "checkout")
    e = {
        "network": True,
        "idempotent": ro or rng.random() < 0.4,
        "destructive": verb in ("delete", "archive", "remove", "transfer"),
    }
    if not ro:
        e["reversible"] = verb not in ("delete", "transfer")
        kind = rng.choice(WORDS)
        key = {"create": "creates", "delete": "deletes", "remove": "deletes"}.get(verb, "modifies")
        e[key] = [kind]
    if verb in ("download", "clone", "checkout"):
        e["filesystem"] = {"read": False, "write": True, "delete": False}
    if rng.random() < 0.05:
        e["cost"] = {"estimate": rng.choice(["free", "low", "medium"]), "billable": False}
    if rng.random() < 0.05:
        e["duration"] = {"typical": "1-5s", "timeout": "%ds" % rng.choice([30, 60, 120])}
    return e


def command(rng, tool, group, verb, global_names):
    used_flags = {"-h", "--help", "-R", "--repo"}
    names = set(global_names)
    args = []
    for _ in range(rng.choice([0, 0, 0, 1, 1])):
        name = rng.choice(NOUNS)
        if name in names:
            continue
        names.add(name)
        a = param(rng, name, False, used_flags)
        a["required"] = not args or rng.random() < 0.3
        if args and not args[-1]["required"]:
            a["required"] = False
        args.append(a)
    if args and rng.random() < 0.2:
        args[-1]["variadic"] = True
    opts = []
    for _ in range(rng.choice([0, 1, 1, 2])):
        name = rng.choice(NOUNS) + ("-" + rng.choice(ADJ) if rng.random() < 0.4 else "")
        if name in names:
            continue
        names.add(name)
        opts.append(param(rng, name, True, used_flags))
    c = {"description": sentence(rng, 2, 6) + "."}
    if args:
        c["arguments"] = args
    if opts:
        c["options"] = opts
    c["effects"] = effects(rng, verb)
    if rng.random() < 0.3:
        c["examples"] = ["%s %s %s --%s value" % (tool, group, verb, opts[0]["name"] if opts else "help")]
    return c


def document(index, seed):
    rng = random.Random(seed * 1_000_003 + index)
    tool = "tool%d" % index
    globals_ = [
        {"name": "repo", "flags": ["-R", "--repo"], "type": "string",
         "description": "Select another repository using the OWNER/REPO format.", "envVar": "GH_REPO"},
        {"name": "help", "flags": ["-h", "--help"], "type": "boolean", "description": "Show help for a command."},
    ]
    commands = {}
    groups = rng.sample(WORDS, 28)
    total = 0
    for group in groups:
        verbs = rng.sample(VERBS, rng.randint(5, 8))
        sub = {verb: command(rng, tool, group, verb, ["repo", "help"]) for verb in verbs}
        total += 1 + len(sub)
        commands[group] = {"description": sentence(rng, 3, 8) + ".", "commands": sub}
        if total >= 200:
            break
    doc = {
        "atip": {"version": "0.6", "features": ["partial-discovery", "trust-v1"]},
        "name": tool,
        "version": "%d.%d.%d" % (rng.randint(1, 3), rng.randint(0, 60), rng.randint(0, 9)),
        "description": "Work with %s from the command line" % rng.choice(WORDS),
        "homepage": "https://example.com/%s" % tool,
        "trust": {"source": "native", "verified": False},
        "authentication": {
            "required": True,
            "methods": [{"type": "token", "envVar": "%s_TOKEN" % tool.upper()},
                        {"type": "oauth", "setupCommand": "%s auth login" % tool}],
            "checkCommand": "%s auth status" % tool,
        },
        "effects": {"network": True, "subprocess": False},
        "globalOptions": globals_,
        "commands": commands,
        "patterns": [{
            "name": "%s-flow" % rng.choice(WORDS),
            "description": sentence(rng, 4, 10),
            "steps": [{"command": "%s %s list" % (tool, groups[0]), "description": "Look first"},
                      {"command": "%s %s create --title {title}" % (tool, groups[1]), "description": "Then act"}],
            "variables": {"title": {"type": "string", "description": "A title"}},
        }],
    }
    return doc


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, count = sys.argv[1], int(sys.argv[2])
    seed = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--seed" else 1
    os.makedirs(out, exist_ok=True)
    for i in range(count):
        with open(os.path.join(out, "tool%05d.json" % i), "w") as f:
            json.dump(document(i, seed), f, separators=(",", ":"))


if __name__ == "__main__":
    main()
