//! Helpers for `exec` and `mcp` tests: registering real script tools in a sandbox
//! registry (registry.json + tools/<hex>.json, the format of src/registry.rs).
use crate::common::Sandbox;
use serde_json::{Value, json};
use std::path::PathBuf;

/// Registers `name` → an executable script with the given body and metadata.
/// `trust` is the registry entry's trust source. Returns the script path.
pub fn register(sb: &Sandbox, name: &str, meta: &Value, script: &str, trust: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    let path = sb.script(&format!("bin/{name}"), script);
    let hex = hex::encode(Sha256::digest(script.as_bytes()));
    let data = sb.data_dir();
    std::fs::create_dir_all(data.join("tools")).unwrap();
    // Metadata files are named by the sha256 of their own bytes (readers check it).
    let doc = serde_json::to_vec_pretty(meta).unwrap();
    let rel = format!("tools/{}.json", hex::encode(Sha256::digest(&doc)));
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
        "path": path,
        "hash": format!("sha256:{hex}"),
        "source": "native",
        "lastChecked": "2026-11-25T00:00:00Z",
        "description": meta["description"],
        "atip": "0.6",
        "trust": trust,
        "effects": "mixed",
        "commands": meta["commands"].as_object().map_or(0, |c| c.len()),
        "metadata": rel,
    });
    std::fs::write(&reg_path, serde_json::to_vec_pretty(&reg).unwrap()).unwrap();
    path
}

/// The metadata of the test tool `t`.
pub fn t_meta() -> Value {
    let ro = json!({"destructive": false, "idempotent": true, "filesystem": {"read": true, "write": false}});
    json!({
        "atip": {"version": "0.6"},
        "name": "t",
        "version": "1.0.0",
        "description": "Test tool",
        "authentication": {"required": false, "methods": [{"type": "token", "envVar": "T_TOKEN"}]},
        "commands": {
            "echo": {
                "description": "Print each argument followed by a NUL byte",
                "effects": ro,
                "arguments": [{"name": "words", "type": "string", "description": "Words", "variadic": true, "required": false}],
                "options": [
                    {"name": "message", "flags": ["-m", "--message"], "type": "string", "description": "Message"},
                    {"name": "count", "flags": ["--count"], "type": "integer", "description": "Count"},
                    {"name": "force", "flags": ["--force"], "type": "boolean", "description": "Force"},
                    {"name": "label", "flags": ["--label"], "type": "string", "description": "Labels", "variadic": true},
                    {"name": "file", "flags": ["--file"], "type": "file", "description": "A file"},
                    {"name": "short", "flags": ["-s"], "type": "string", "description": "Short only"}
                ]
            },
            "json": {"description": "Print JSON", "effects": ro},
            "fail": {"description": "Exit 3", "effects": ro},
            "secret": {"description": "Print secrets", "effects": ro},
            "flood": {"description": "Print a lot", "effects": ro},
            "hang": {"description": "Hang with a grandchild",
                     "effects": {"destructive": false, "filesystem": {"write": false}, "duration": {"timeout": "300ms"}}},
            "sleep": {"description": "Sleep, then write a marker",
                      "effects": {"destructive": false, "idempotent": true},
                      "arguments": [{"name": "tag", "type": "string", "description": "Tag"}]},
            "delete": {"description": "Delete things",
                       "effects": {"destructive": true, "reversible": false, "filesystem": {"delete": true}},
                       "arguments": [{"name": "target", "type": "string", "description": "What"}]},
            "write": {"description": "Append a line to written.txt",
                      "effects": {"destructive": false, "idempotent": false, "filesystem": {"write": true}},
                      "arguments": [{"name": "line", "type": "string", "description": "Line"}]},
            "login": {"description": "Interactive login",
                      "effects": {"destructive": false, "interactive": {"tty": true, "stdin": "required"}}},
            "mystery": {"description": "No effects stated"},
            "crash": {"description": "Killed by a signal", "effects": ro},
            "fetch": {"description": "Fetch a URL (prints it)",
                      "effects": {"destructive": false, "network": true},
                      "arguments": [{"name": "url", "type": "url", "description": "URL"}]}
        }
    })
}

/// The script of the test tool `t`.
pub const T_SCRIPT: &str = r#"#!/bin/sh
cmd="$1"; shift
case "$cmd" in
  echo) for a in "$@"; do printf '%s\0' "$a"; done ;;
  json) printf '{"ok": true, "n": 1}\n' ;;
  fail) echo "it broke" >&2; exit 3 ;;
  secret) echo "extra=${EXTRA_VAR:-unset}"; echo "token=$T_TOKEN"; echo "gh: ghp_abcdefghijklmnopqrstuvwxyz0123456789"; echo "aws AKIAIOSFODNN7EXAMPLE" ;;
  flood) i=0; while [ $i -lt 2000 ]; do echo "line $i of a long and repetitive output stream"; i=$((i+1)); done ;;
  hang) sleep 30 & echo $! > grandchild.pid; echo started; sleep 30 ;;
  sleep)
    # Concurrency seen by events, not by the clock: mark this call running, then wait
    # (bounded) until as many calls run as ./barrier asks, logging each count seen.
    touch "running.$1"; want=$(cat barrier 2>/dev/null || echo 1); n=0
    while [ $n -lt 100 ]; do
      c=$(ls running.* 2>/dev/null | wc -l); echo "$c" >> concurrency.txt
      [ "$c" -ge "$want" ] && break
      sleep 0.05; n=$((n+1))
    done
    sleep 0.1; rm -f "running.$1"; echo "$1" >> sleep-markers.txt; echo "$1" ;;
  delete) echo "deleted $1" > deleted.txt; echo "deleted $1" ;;
  write) echo "$1" >> written.txt ;;
  login) echo "logged in" ;;
  mystery) echo "mystery" ;;
  crash) echo "going down"; kill -TERM $$ ;;
  fetch) echo "fetched $1" ;;
  *) echo "unknown command $cmd" >&2; exit 64 ;;
esac
"#;

/// A sandbox with `t` registered (trust `native`).
pub fn sandbox_with_t() -> Sandbox {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("home")).unwrap();
    register(&sb, "t", &t_meta(), T_SCRIPT, "native");
    sb
}
