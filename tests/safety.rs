//! Safety at run time, end to end through the real binary: atip never runs atip, command
//! runners are denied unless allowed, unstated effects ask, what runs is what was
//! scanned, trust is derived and never claimed, grouped exports run, and a run with
//! every directory redirected leaves HOME alone.

use crate::common;

use common::tools::*;
use common::{Sandbox, show};
use serde_json::{Value, json};
use sha2::Digest;
use std::path::{Path, PathBuf};
use std::process::Output;

struct Run {
    code: i32,
    out: Value,
    err: Value,
    raw: Output,
}

fn exec(sb: &Sandbox, args: &[&str]) -> Run {
    let raw = sb
        .atip()
        .args(["--output", "json", "exec"])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    // The JSON document is the last line (warnings come first).
    let parse = |b: &[u8]| {
        serde_json::from_slice(b).unwrap_or_else(|_| {
            String::from_utf8_lossy(b)
                .lines()
                .last()
                .and_then(|l| serde_json::from_str(l).ok())
                .unwrap_or(Value::Null)
        })
    };
    Run {
        code: raw.status.code().unwrap_or(-1),
        out: parse(&raw.stdout),
        err: parse(&raw.stderr),
        raw,
    }
}

fn rules(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["rule"].as_str().map(str::to_string))
        .collect()
}

fn sha256_file(path: &Path) -> String {
    // The system's sha256sum: the atip debug binary is large, and the test's own sha2 is
    // unoptimised.
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// Registers `name` → an existing executable at `path` with `meta` (hash of the file).
fn register_path(sb: &Sandbox, name: &str, path: &Path, meta: &Value) {
    let data = sb.data_dir();
    std::fs::create_dir_all(data.join("tools")).unwrap();
    let doc = serde_json::to_vec_pretty(meta).unwrap();
    let rel = format!("tools/{}.json", hex::encode(sha2::Sha256::digest(&doc)));
    std::fs::write(data.join(&rel), &doc).unwrap();
    let reg_path = data.join("registry.json");
    let mut reg: Value = std::fs::read(&reg_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| {
            json!({"version": "2", "updated": "2026-11-25T00:00:00Z",
                   "agent": {"name": "atip", "version": "0.1.0"}, "tools": {}})
        });
    reg["tools"][name] = json!({
        "path": path, "hash": format!("sha256:{}", sha256_file(path)), "source": "native",
        "lastChecked": "2026-11-25T00:00:00Z", "description": "d", "atip": "0.6",
        "trust": "native", "effects": "mixed", "commands": 1, "metadata": rel,
        "fingerprint": stamp(path),
    });
    std::fs::write(&reg_path, serde_json::to_vec_pretty(&reg).unwrap()).unwrap();
}

/// The registry's `fingerprint` of a file, as a scan records it.
fn stamp(path: &Path) -> Value {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).unwrap();
    json!({"dev": m.dev(), "ino": m.ino(), "size": m.size(),
           "mtimeNs": m.mtime() * 1_000_000_000 + m.mtime_nsec(),
           "ctimeNs": m.ctime() * 1_000_000_000 + m.ctime_nsec()})
}

fn atip_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_atip"))
}

fn atip_metadata(sb: &Sandbox) -> Value {
    let out = sb.atip().arg("--agent").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn atip_never_runs_atip_by_any_name_symlink_or_copy() {
    let sb = sandbox_with_t();
    let mut meta = atip_metadata(&sb);
    let link = sb.path().join("links/innocent");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(atip_bin(), &link).unwrap();
    let copy = sb.path().join("copies/helper");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(atip_bin(), &copy).unwrap();
    for (name, path) in [("atip", atip_bin()), ("innocent", link), ("helper", copy)] {
        meta["name"] = json!(name);
        register_path(&sb, name, &path, &meta);
        let inner = json!({"name": "t_delete", "args": "{\"target\":\"victim\"}", "yes": true});
        let call = format!("{name}_exec");
        // Dry run: the decision names the rule.
        let r = exec(&sb, &[&call, "--args", &inner.to_string(), "--dry-run"]);
        assert_eq!(r.code, 0, "{}", show(&r.raw));
        assert_eq!(r.out["decision"]["action"], "deny", "{name}: {}", r.out);
        assert!(
            rules(&r.out["decision"]["rules"]).contains(&"runners.self".to_string()),
            "{name}: {}",
            r.out
        );
        // For real, even with --yes and a policy that allows every runner: refused, and
        // the inner atip never ran the destructive command.
        let pol = sb.write("allow-all.json", r#"{"runners": {"allow": ["*"]}}"#);
        let r = exec(
            &sb,
            &[
                &call,
                "--args",
                &inner.to_string(),
                "--yes",
                "--policy",
                pol.to_str().unwrap(),
            ],
        );
        assert_eq!(r.code, 77, "{name}: {}", show(&r.raw));
        assert_eq!(r.err["error"]["code"], "policy_denied");
        assert!(
            r.err["error"]["message"]
                .as_str()
                .unwrap()
                .contains("runners.self"),
            "{}",
            r.err
        );
        assert!(!sb.path().join("deleted.txt").exists());
        let scan = format!("{name}_scan");
        let r = exec(&sb, &[&scan, "--args", r#"{"probe":"all"}"#, "--dry-run"]);
        assert_eq!(r.out["decision"]["action"], "deny", "{name}: {}", r.out);
    }
}

#[test]
fn atip_agent_metadata_states_honest_effects() {
    let sb = Sandbox::new();
    let meta = atip_metadata(&sb);
    for cmd in ["exec", "mcp", "scan", "validate"] {
        let c = &meta["commands"][cmd];
        assert_eq!(c["x-atip-runner"], true, "{cmd}");
        let e = &c["effects"];
        assert_ne!(e["destructive"], false, "{cmd} is not known to be harmless");
        assert_ne!(e["idempotent"], true, "{cmd}");
    }
    // The runner key is a vendor extension: validate accepts it without a warning.
    let f = sb.write("atip.json", serde_json::to_vec(&meta).unwrap());
    let out = sb
        .atip()
        .args(["validate", "--deny-warnings"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

fn runner_meta(name: &str, extra: Value) -> Value {
    let mut m = json!({"atip": {"version": "0.6"}, "name": name, "version": "1", "description": "A tool",
        "commands": {"go": {"description": "Go", "effects": {"destructive": false},
            "arguments": [{"name": "words", "type": "string", "description": "Words", "variadic": true, "required": false}],
            "options": [
                {"name": "exec", "flags": ["-exec"], "type": "string", "description": "Run"},
                {"name": "config", "flags": ["-c"], "type": "string", "description": "Config"}]}}});
    if let Value::Object(o) = extra {
        for (k, v) in o {
            m["commands"]["go"][k] = v;
        }
    }
    m
}

const ECHO: &str = "#!/bin/sh\necho ran >> ran.txt\necho ran\n";

#[test]
fn command_runners_are_denied_with_the_rule_named_unless_allowed() {
    let sb = sandbox_with_t();
    let shells = [
        "sh",
        "bash",
        "python3",
        "python3.12",
        "node",
        "perl",
        "env",
        "sudo",
        "xargs",
        "nohup",
        "timeout",
        "nice",
        "setsid",
        "flock",
        "ssh",
        "watch",
    ];
    for name in shells {
        register(&sb, name, &runner_meta(name, json!({})), ECHO, "native");
    }
    for name in shells {
        let flat = format!("{}_go", name.replace('.', "_"));
        let r = exec(&sb, &[&flat, "--args", r#"{"words":["id"]}"#, "--yes"]);
        assert_eq!(r.code, 77, "{name}: {}", show(&r.raw));
        assert_eq!(r.err["error"]["code"], "policy_denied", "{name}");
        let msg = r.err["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("runners") && msg.contains("runners.allow"),
            "{name}: {msg}"
        );
    }
    assert!(!sb.path().join("ran.txt").exists(), "no runner ran");

    // Per-command runners: `find -exec`, `git -c` (root command), and a command marked
    // x-atip-runner by its metadata. Without the flag, find runs.
    register(&sb, "find", &runner_meta("find", json!({})), ECHO, "native");
    let r = exec(&sb, &["find_go", "--args", r#"{"exec":"rm"}"#, "--yes"]);
    assert_eq!(r.code, 77, "{}", show(&r.raw));
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("-exec")
    );
    let r = exec(&sb, &["find_go", "--args", r#"{"words":["."]}"#]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    std::fs::remove_file(sb.path().join("ran.txt")).unwrap();
    register(
        &sb,
        "git",
        &json!({"atip": {"version": "0.6"}, "name": "git", "version": "1", "description": "git",
            "effects": {"destructive": false},
            "globalOptions": [{"name": "config", "flags": ["-c"], "type": "string", "description": "Config"}]}),
        ECHO,
        "native",
    );
    let r = exec(
        &sb,
        &["git", "--args", r#"{"config":"core.pager=sh"}"#, "--yes"],
    );
    assert_eq!(r.code, 77, "{}", show(&r.raw));
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("runners")
    );
    register(
        &sb,
        "wrap",
        &runner_meta("wrap", json!({"x-atip-runner": true})),
        ECHO,
        "native",
    );
    let r = exec(&sb, &["wrap_go", "--yes"]);
    assert_eq!(r.code, 77, "{}", show(&r.raw));
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("x-atip-runner")
    );
    // A symlink named innocently that resolves to a shell is a shell.
    let target = sb.script("shells/bash", ECHO);
    let hidden = register(
        &sb,
        "helper",
        &runner_meta("helper", json!({})),
        ECHO,
        "native",
    );
    std::fs::remove_file(&hidden).unwrap();
    std::os::unix::fs::symlink(&target, &hidden).unwrap();
    let r = exec(&sb, &["helper_go", "--dry-run"]);
    assert!(
        rules(&r.out["decision"]["rules"]).contains(&"runners".to_string()),
        "{}",
        r.out
    );
    assert!(!sb.path().join("ran.txt").exists(), "no runner ran");

    // The policy allows one runner explicitly; it runs. It can add runners too.
    let pol = sb.write(
        "p.json",
        r#"{"runners": {"allow": ["env"], "programs": ["t"], "options": {"find": ["-name"]}}}"#,
    );
    let p = pol.to_str().unwrap();
    let r = exec(&sb, &["env_go", "--policy", p]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(r.out["data"]["stdout"], "ran\n");
    let r = exec(&sb, &["sh_go", "--policy", p, "--yes"]);
    assert_eq!(r.code, 77);
    let r = exec(&sb, &["t_json", "--policy", p]);
    assert_eq!(r.code, 77, "{}", show(&r.raw));
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("runners.programs")
    );
}

#[test]
fn a_command_not_stating_destructive_false_asks_and_export_agrees() {
    let sb = sandbox_with_t();
    register(
        &sb,
        "q",
        &json!({"atip": {"version": "0.6"}, "name": "q", "version": "1", "description": "Q",
            "commands": {"quiet": {"description": "Says nothing about destruction", "effects": {"network": false}},
                         "safe": {"description": "Harmless", "effects": {"destructive": false}}}}),
        ECHO,
        "native",
    );
    let r = exec(&sb, &["q_quiet"]);
    assert_eq!(r.code, 77, "{}", show(&r.raw));
    assert_eq!(r.err["error"]["code"], "confirmation_required");
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("effects.destructive")
    );
    assert!(!sb.path().join("ran.txt").exists());
    let r = exec(&sb, &["q_safe"]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    let out = sb
        .atip()
        .args(["export", "--format", "mcp", "--tools", "q"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hint = |name: &str| {
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["annotations"]["destructiveHint"]
            .clone()
    };
    assert_eq!(hint("q_quiet"), true);
    assert_eq!(hint("q_safe"), false);
}

fn scan_dir(sb: &Sandbox, dir: &Path) -> Output {
    sb.atip()
        .args(["--output", "json", "scan", "--path"])
        .arg(dir)
        .output()
        .unwrap()
}

const NATIVE: &str = r#"#!/bin/sh
if [ "$1" = "--agent" ]; then
cat <<'EOF'
{"atip": {"version": "0.6"}, "name": "nat", "version": "1", "description": "Native tool",
 "commands": {"hello": {"description": "Say hello", "effects": {"destructive": false, "idempotent": true}}}}
EOF
exit 0
fi
echo "hello from nat"
echo ran >> ran.txt
"#;

#[test]
fn a_binary_changed_after_the_scan_is_refused_and_a_touched_one_runs() {
    let sb = Sandbox::new();
    let tool = sb.script("path/nat", NATIVE);
    let out = scan_dir(&sb, &sb.path().join("path"));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let reg: Value =
        serde_json::from_slice(&std::fs::read(sb.data_dir().join("registry.json")).unwrap())
            .unwrap();
    let entry = &reg["tools"]["nat"];
    assert!(entry["fingerprint"]["ino"].is_u64(), "{entry}");
    assert_eq!(entry["vouchedBy"], "tool");
    let r = exec(&sb, &["nat_hello"]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    // Same bytes, new times: re-hashed, still runs.
    let f = std::fs::File::options().append(true).open(&tool).unwrap();
    f.set_modified(std::time::SystemTime::now()).unwrap();
    drop(f);
    let r = exec(&sb, &["nat_hello"]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    // Appended bytes: refused before running, exit 77, the rule and the hint named.
    std::fs::remove_file(sb.path().join("ran.txt")).unwrap();
    use std::io::Write;
    let mut f = std::fs::File::options().append(true).open(&tool).unwrap();
    f.write_all(b"echo pwned > pwned.txt\n").unwrap();
    drop(f);
    let r = exec(&sb, &["nat_hello"]);
    assert_eq!(r.code, 77, "{}", show(&r.raw));
    assert_eq!(r.err["error"]["code"], "integrity_changed");
    assert_eq!(
        rules(&r.err["error"]["details"]["rules"]),
        ["integrity.changed"]
    );
    assert!(
        r.err["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("atip scan")
    );
    assert!(!sb.path().join("pwned.txt").exists() && !sb.path().join("ran.txt").exists());
    let r = exec(&sb, &["nat_hello", "--yes", "--dry-run"]);
    assert_eq!(r.out["decision"]["action"], "deny");
    // Replaced by another file under the same name: refused too.
    std::fs::remove_file(&tool).unwrap();
    sb.script("path/nat", &NATIVE.replace("hello from", "evil"));
    let r = exec(&sb, &["nat_hello"]);
    assert_eq!(r.code, 77, "{}", show(&r.raw));
    // A re-scan registers it as it is now.
    let out = scan_dir(&sb, &sb.path().join("path"));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let r = exec(&sb, &["nat_hello"]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(r.out["data"]["stdout"], "evil nat\n");
}

#[test]
fn a_tool_described_by_name_is_pinned_by_its_stat_and_refused_once_it_changes() {
    let sb = Sandbox::new();
    let tool = sb.script("path/named", "#!/bin/sh\necho \"named $*\"\n");
    sb.write(
        "shims/named.json",
        r#"{"atip": {"version": "0.6"}, "binary": {"name": "named", "version": "1"}, "description": "Named by a shim",
            "trust": {"source": "community"},
            "commands": {"go": {"description": "Go", "effects": {"destructive": false, "idempotent": true}}}}"#,
    );
    let scan = || {
        let out = sb
            .atip()
            .args(["--output", "json", "scan", "--path"])
            .arg(sb.path().join("path"))
            .arg("--shims")
            .arg(sb.path().join("shims"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    };
    scan();
    let reg: Value =
        serde_json::from_slice(&std::fs::read(sb.data_dir().join("registry.json")).unwrap())
            .unwrap();
    let entry = &reg["tools"]["named"];
    assert_eq!(entry["source"], "shim", "{reg:#}");
    assert!(entry.get("hash").is_none(), "{entry}");
    assert!(entry["fingerprint"]["ctimeNs"].is_i64(), "{entry}");
    let r = exec(&sb, &["named_go", "--yes"]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    // Without a pinned hash any change of its stat is a change: even a touch.
    let f = std::fs::File::options().append(true).open(&tool).unwrap();
    f.set_modified(std::time::SystemTime::now()).unwrap();
    drop(f);
    let r = exec(&sb, &["named_go", "--yes"]);
    assert_eq!(r.code, 77, "{}", show(&r.raw));
    assert_eq!(r.err["error"]["code"], "integrity_changed");
    let msg = r.err["error"]["message"].as_str().unwrap();
    assert!(msg.contains("size, times or inode"), "{msg}");
    // `doctor` says the same; a re-scan pins the file as it is now.
    let doc = sb
        .atip()
        .args(["--output", "json", "doctor"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&doc.stdout).contains("binary-changed"),
        "{}",
        show(&doc)
    );
    scan();
    let r = exec(&sb, &["named_go", "--yes"]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(r.out["data"]["stdout"], "named go\n");
}

#[test]
fn a_metadata_file_edited_on_disk_is_refused_by_every_reader() {
    let sb = sandbox_with_t();
    let reg: Value =
        serde_json::from_slice(&std::fs::read(sb.data_dir().join("registry.json")).unwrap())
            .unwrap();
    let file = sb
        .data_dir()
        .join(reg["tools"]["t"]["metadata"].as_str().unwrap());
    // Make the destructive command look harmless.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("\"destructive\": true", "\"destructive\": false");
    std::fs::write(&file, text).unwrap();
    let r = exec(&sb, &["t_delete", "--args", r#"{"target":"db"}"#]);
    assert_eq!(r.code, 65, "{}", show(&r.raw));
    assert_eq!(r.err["error"]["code"], "metadata_tampered");
    assert!(!sb.path().join("deleted.txt").exists());
    for args in [
        vec!["get", "t"],
        vec!["export", "--format", "mcp", "--tools", "t"],
        vec!["search", "delete", "--tools", "t"],
    ] {
        let out = sb
            .atip()
            .args(["--output", "json"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(65), "{args:?}: {}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("sha256"),
            "{args:?}: {}",
            show(&out)
        );
    }
}

#[test]
fn a_lying_trust_block_does_not_pass_a_verified_floor_and_a_wrong_checksum_never_runs() {
    let sb = Sandbox::new();
    let script = "#!/bin/sh\necho hi\n";
    let hash = hex::encode(sha2::Sha256::digest(script.as_bytes()));
    let liar = json!({"atip": {"version": "0.6"}, "name": "liar", "version": "1", "description": "Claims a lot",
        "trust": {"source": "vendor", "verified": true, "integrity": {"checksum": format!("sha256:{hash}")}},
        "commands": {"hi": {"description": "Hi", "effects": {"destructive": false}}}});
    register(&sb, "liar", &liar, script, "vendor");
    let pol = sb.write("p.json", r#"{"trust": {"minimum": "verified"}}"#);
    let p = pol.to_str().unwrap();
    let r = exec(&sb, &["liar_hi", "--policy", p]);
    assert_eq!(r.code, 77, "{}", show(&r.raw));
    assert_eq!(r.err["error"]["code"], "confirmation_required");
    let msg = r.err["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("trust.minimum") && msg.contains("unverified"),
        "{msg}"
    );
    // Without the floor it runs.
    let r = exec(&sb, &["liar_hi"]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    // A declared checksum that does not match: compromised, never runs, not even with --yes.
    let bad = json!({"atip": {"version": "0.6"}, "name": "bad", "version": "1", "description": "Bad",
        "trust": {"integrity": {"checksum": format!("sha256:{}", "0".repeat(64))}},
        "commands": {"hi": {"description": "Hi", "effects": {"destructive": false}}}});
    register(&sb, "bad", &bad, script, "vendor");
    let r = exec(&sb, &["bad_hi", "--yes"]);
    assert_eq!(r.code, 77, "{}", show(&r.raw));
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("trust.compromised")
    );
    // The old claim-based floor is a configuration error, not silently read.
    let old = sb.write("old.json", r#"{"trust": {"minimum": "vendor"}}"#);
    let r = exec(&sb, &["liar_hi", "--policy", old.to_str().unwrap()]);
    assert_eq!(r.code, 78, "{}", show(&r.raw));
}

/// Arguments a model could send for an exported tool: its action (the first), and a
/// sample value for what the schema (or, for a group, the chosen action) requires;
/// `null` for the rest when the format makes every property required (strict).
fn sample_args(tool: &Value) -> Value {
    let schema = tool
        .get("parameters")
        .or_else(|| tool.get("input_schema"))
        .or_else(|| tool.get("inputSchema"))
        .or_else(|| tool.pointer("/function/parameters"))
        .cloned()
        .unwrap_or_else(|| json!({}));
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut out = serde_json::Map::new();
    let action = schema
        .pointer("/properties/action/enum/0")
        .and_then(Value::as_str)
        .map(str::to_string);
    for (k, p) in schema["properties"].as_object().into_iter().flatten() {
        if k == "action" && action.is_some() {
            out.insert(k.clone(), json!(action));
            continue;
        }
        let types: Vec<&str> = match &p["type"] {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let desc = p["description"].as_str().unwrap_or("");
        let needed = match &action {
            Some(a) => desc.contains("Required for:") && desc.contains(a.as_str()),
            None => required.contains(&k.as_str()) && !types.contains(&"null"),
        };
        if needed {
            let v = if let Some(e) = p["enum"].as_array().and_then(|e| e.first()) {
                e.clone()
            } else {
                match types.iter().find(|t| **t != "null") {
                    Some(&"integer") | Some(&"number") => json!(1),
                    Some(&"boolean") => json!(true),
                    Some(&"array") => json!(["x"]),
                    _ => json!("x"),
                }
            };
            out.insert(k.clone(), v);
        } else if required.contains(&k.as_str()) {
            out.insert(k.clone(), Value::Null);
        }
    }
    Value::Object(out)
}

fn tool_name(tool: &Value) -> String {
    tool.get("name")
        .or_else(|| tool.pointer("/function/name"))
        .and_then(Value::as_str)
        .unwrap()
        .to_string()
}

#[test]
fn every_exported_tool_of_every_strategy_and_format_resolves_in_exec() {
    let sb = sandbox_with_t();
    let mut checked = 0;
    for strategy in ["flat", "grouped"] {
        for format in ["openai", "openai-strict", "anthropic", "gemini", "mcp"] {
            let out = sb
                .atip()
                .args(["export", "--format", format, "--strategy", strategy])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", show(&out));
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            let list = v
                .as_array()
                .cloned()
                .or_else(|| v["tools"].as_array().cloned())
                .or_else(|| v[0]["functionDeclarations"].as_array().cloned())
                .or_else(|| v["functionDeclarations"].as_array().cloned())
                .unwrap_or_else(|| panic!("{format}: {v}"));
            let list: Vec<Value> = list
                .into_iter()
                .flat_map(|t| match t.get("functionDeclarations") {
                    Some(Value::Array(d)) => d.clone(),
                    _ => vec![t],
                })
                .collect();
            assert!(!list.is_empty(), "{format}/{strategy}");
            for tool in &list {
                let name = tool_name(tool);
                let args = sample_args(tool);
                let r = exec(&sb, &[&name, "--args", &args.to_string(), "--dry-run"]);
                assert_eq!(
                    r.code,
                    0,
                    "{format}/{strategy} {name} {args}: {}",
                    show(&r.raw)
                );
                assert_eq!(r.out["status"], "dry-run", "{format}/{strategy} {name}");
                checked += 1;
            }
        }
    }
    assert!(checked > 20);
    // A grouped call runs the command its action names.
    let r = exec(&sb, &["t", "--args", r#"{"action":"json"}"#]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(r.out["meta"]["tool"], "t_json");
    let r = exec(&sb, &["t", "--args", r#"{"action":"nope"}"#]);
    assert_eq!(r.code, 65, "{}", show(&r.raw));
    assert!(r.err["error"]["message"].as_str().unwrap().contains("echo"));
}

fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            out.push(e.path());
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_run_with_every_directory_redirected_writes_nothing_under_home() {
    use std::os::unix::fs::PermissionsExt;
    let sb = sandbox_with_t();
    sb.script("path/nat", NATIVE);
    let home = sb.path().join("home");
    std::fs::create_dir_all(home.join(".config")).unwrap();
    let before = tree(&home);
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o555)).unwrap();
    let state = sb.path().join("elsewhere-state");
    let cmd = |args: &[&str]| {
        let mut c = std::process::Command::new(atip_bin());
        c.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &home)
            .current_dir(sb.path())
            .arg("--data-dir")
            .arg(sb.data_dir())
            .arg("--config-dir")
            .arg(sb.config_dir())
            .arg("--state-dir")
            .arg(&state)
            .args(["--output", "json"])
            .args(args)
            .stdin(std::process::Stdio::null());
        c.output().unwrap()
    };
    let path = sb.path().join("path");
    for args in [
        vec!["scan", "--path", path.to_str().unwrap()],
        vec!["list"],
        vec!["doctor"],
        vec!["export", "--format", "mcp"],
        vec!["search", "delete"],
        vec!["exec", "t_write", "--args", r#"{"line":"x"}"#, "--yes"],
        vec!["exec", "t_delete", "--args", r#"{"target":"x"}"#],
    ] {
        let out = cmd(&args);
        assert!(
            matches!(out.status.code(), Some(0) | Some(77)),
            "{args:?}: {}",
            show(&out)
        );
    }
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(tree(&home), before, "nothing was written under HOME");
    let audit = std::fs::read_to_string(state.join("audit.jsonl")).unwrap();
    assert_eq!(audit.lines().count(), 2, "{audit}");
}
