//! `atip exec` end to end: real binary, real registry, real script tools.

use crate::common;

use common::tools::*;
use common::{Sandbox, show};
use serde_json::{Value, json};
use std::process::Output;

struct Run {
    code: i32,
    out: Value,
    err: Value,
    raw: Output,
}

fn run_with(sb: &Sandbox, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Run {
    use std::io::Write;
    let mut cmd = sb.atip();
    cmd.args(["--output", "json", "exec"]).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        let mut si = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            si.write_all(s.as_bytes()).unwrap();
        }
    }
    let raw = child.wait_with_output().unwrap();
    // The JSON document is the last line (notes, e.g. a catalog compiled again because
    // a test edited registry.json behind atip's back, come first).
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

fn run(sb: &Sandbox, args: &[&str]) -> Run {
    run_with(sb, args, None, &[])
}

fn nul_split(s: &str) -> Vec<&str> {
    let mut v: Vec<&str> = s.split('\0').collect();
    assert_eq!(v.pop(), Some(""), "output ends with NUL: {s:?}");
    v
}

fn audit_lines(sb: &Sandbox) -> Vec<Value> {
    std::fs::read_to_string(sb.path().join("state/audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn hostile_arguments_reach_the_tool_verbatim_and_no_shell_runs() {
    let sb = sandbox_with_t();
    let words = json!([
        "; rm -rf ~",
        "$(touch pwned1)",
        "`touch pwned2`",
        "line1\nline2",
        "| cat /etc/passwd",
        "&& echo hi",
        "-rf",
        "--",
        "'quoted' \"double\"",
        "ünïcødé ✓"
    ]);
    let args = json!({"words": words, "message": "--force", "label": ["a b", "-x"], "force": true, "count": 2});
    let r = run(&sb, &["t_echo", "--args", &args.to_string()]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(r.out["status"], "ok");
    assert_eq!(r.out["data"]["exitCode"], 0);
    let got = nul_split(r.out["data"]["stdout"].as_str().unwrap());
    let mut expected = vec![
        "--message=--force",
        "--count",
        "2",
        "--force",
        "--label",
        "a b",
        "--label=-x",
        "--",
    ];
    let w: Vec<String> = serde_json::from_value(words).unwrap();
    expected.extend(w.iter().map(String::as_str));
    assert_eq!(got, expected);
    assert!(!sb.path().join("pwned1").exists() && !sb.path().join("pwned2").exists());
    let argv = r.out["meta"]["argv"].as_array().unwrap();
    assert!(argv[0].as_str().unwrap().ends_with("/bin/t"));
    assert_eq!(argv[1], "echo");
    assert_eq!(r.out["meta"]["tool"], "t_echo");
    assert_eq!(r.out["meta"]["truncated"], false);
    assert!(r.out["meta"]["durationMs"].is_u64());
    // Read-only calls are not audited.
    assert!(audit_lines(&sb).is_empty());
}

#[test]
fn option_value_starting_with_dash_on_a_long_flag_uses_equals_and_short_only_is_refused() {
    let sb = sandbox_with_t();
    let r = run(&sb, &["t_echo", "--args", r#"{"words":["-n"]}"#]);
    assert_eq!(
        nul_split(r.out["data"]["stdout"].as_str().unwrap()),
        ["--", "-n"]
    );
    let r = run(&sb, &["t_echo", "--args", r#"{"short":"--help"}"#]);
    assert_eq!(r.code, 65, "{}", show(&r.raw));
    assert_eq!(r.err["error"]["code"], "args_unusable");
    let r = run(&sb, &["t_echo", "--args", r#"{"short":"ok"}"#]);
    assert_eq!(
        nul_split(r.out["data"]["stdout"].as_str().unwrap()),
        ["-s", "ok"]
    );
}

#[test]
fn path_guardrails() {
    let sb = sandbox_with_t();
    sb.write("inside.txt", "x");
    std::os::unix::fs::symlink("/etc", sb.path().join("etc-link")).unwrap();
    for bad in [
        "../../etc/passwd",
        "/etc/passwd",
        "etc-link/passwd",
        "new/../../x",
    ] {
        let args = json!({"file": bad}).to_string();
        let r = run(&sb, &["t_echo", "--args", &args]);
        assert_eq!(r.code, 77, "{bad}: {}", show(&r.raw));
        assert_eq!(r.err["error"]["code"], "path_outside_roots");
        assert_eq!(r.err["error"]["category"], "policy");
    }
    for good in ["inside.txt", "not-yet-there.txt", "./sub/../inside.txt"] {
        let args = json!({"file": good}).to_string();
        let r = run(&sb, &["t_echo", "--args", &args]);
        assert_eq!(r.code, 0, "{good}: {}", show(&r.raw));
    }
    // Extra roots come from the policy.
    let outside = tempfile::tempdir().unwrap();
    let pol = json!({"paths": {"roots": [".", outside.path()]}}).to_string();
    let pf = sb.write("pol.json", pol);
    let target = outside.path().join("f").display().to_string();
    let args = json!({"file": target}).to_string();
    let r = run(
        &sb,
        &["t_echo", "--policy", pf.to_str().unwrap(), "--args", &args],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
}

#[test]
fn url_guardrails() {
    let sb = sandbox_with_t();
    let r = run(
        &sb,
        &["t_fetch", "--args", r#"{"url": "https://example.com/x"}"#],
    );
    assert_eq!(
        r.out["data"]["stdout"],
        "fetched https://example.com/x\n",
        "{}",
        show(&r.raw)
    );
    let r = run(
        &sb,
        &[
            "t_fetch",
            "--args",
            r#"{"url": "http://169.254.169.254/latest/meta-data"}"#,
        ],
    );
    assert_eq!(r.code, 77);
    assert_eq!(r.err["error"]["code"], "confirmation_required");
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("urls.private")
    );
    let r = run(
        &sb,
        &[
            "t_fetch",
            "--yes",
            "--args",
            r#"{"url": "http://localhost:8080/"}"#,
        ],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    let r = run(
        &sb,
        &[
            "t_fetch",
            "--yes",
            "--args",
            r#"{"url": "file:///etc/passwd"}"#,
        ],
    );
    assert_eq!(r.code, 77);
    assert_eq!(r.err["error"]["code"], "policy_denied");
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("urls.schemes")
    );
    sb.write(
        "config/policy.json",
        r#"{"urls": {"allow": ["*.github.com"]}}"#,
    );
    let r = run(
        &sb,
        &["t_fetch", "--args", r#"{"url": "https://example.com/"}"#],
    );
    assert_eq!(r.err["error"]["code"], "policy_denied");
    let r = run(
        &sb,
        &["t_fetch", "--args", r#"{"url": "https://api.github.com/"}"#],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
}

#[test]
fn ten_megabyte_string_is_rejected_before_running() {
    let sb = sandbox_with_t();
    let big = "A".repeat(10 << 20);
    let f = sb.write("big.json", json!({"message": big}).to_string());
    let r = run(&sb, &["t_echo", "--args-file", f.to_str().unwrap()]);
    assert_eq!(r.code, 65, "{}", show(&r.raw));
    assert_eq!(r.err["error"]["code"], "args_invalid");
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("exceeds the limit")
    );
    assert!(r.raw.stderr.len() < 10_000, "the value is not echoed back");
}

#[test]
fn arguments_from_stdin_and_coercion() {
    let sb = sandbox_with_t();
    let r = run_with(
        &sb,
        &["t_echo", "--args-stdin"],
        Some(r#"{"count": "5", "force": "true", "label": "one", "message": null}"#),
        &[],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(
        nul_split(r.out["data"]["stdout"].as_str().unwrap()),
        ["--count", "5", "--force", "--label", "one"]
    );
    assert_eq!(r.out["meta"]["coerced"].as_array().unwrap().len(), 4);
}

#[test]
fn every_error_shape_and_exit_code() {
    let sb = sandbox_with_t();
    // Unknown tool: no input (66), closest names.
    let r = run(&sb, &["t_ecko", "--args", "{}"]);
    assert_eq!(r.code, 66, "{}", show(&r.raw));
    let e = &r.err["error"];
    assert_eq!(e["code"], "tool_not_found");
    assert_eq!(e["category"], "input");
    assert_eq!(e["retryable"], false);
    assert!(
        e["details"]["closest"]
            .as_array()
            .unwrap()
            .contains(&json!("t_echo"))
    );
    assert!(e["hint"].as_str().unwrap().contains("t_echo"));
    // Malformed JSON: data (65), position.
    let r = run(&sb, &["t_echo", "--args", "{\"count\": 1,,}"]);
    assert_eq!(r.code, 65);
    assert_eq!(r.err["error"]["code"], "args_malformed");
    assert_eq!(r.err["error"]["details"]["line"], 1);
    assert_eq!(r.err["error"]["details"]["column"], 13);
    // Not an object.
    let r = run(&sb, &["t_echo", "--args", "[1]"]);
    assert_eq!(
        (r.code, r.err["error"]["code"].clone()),
        (65, json!("args_invalid"))
    );
    // Unknown key and wrong type: schema validation.
    let r = run(
        &sb,
        &["t_echo", "--args", r#"{"bogus": 1, "count": "many"}"#],
    );
    assert_eq!(r.code, 65);
    assert_eq!(r.err["error"]["code"], "args_invalid");
    let v = r.err["error"]["details"]["violations"].as_array().unwrap();
    assert_eq!(v.len(), 2, "{v:?}");
    // Missing required argument.
    let r = run(&sb, &["t_delete", "--args", "{}", "--yes"]);
    assert_eq!(
        (r.code, r.err["error"]["code"].clone()),
        (65, json!("args_invalid"))
    );
    // Missing args file: no input (66).
    let r = run(&sb, &["t_echo", "--args-file", "/nonexistent/args.json"]);
    assert_eq!(
        (r.code, r.err["error"]["code"].clone()),
        (66, json!("input_not_found"))
    );
    // Confirmation required: policy (77).
    let r = run(&sb, &["t_delete", "--args", r#"{"target":"x"}"#]);
    assert_eq!(r.code, 77);
    assert_eq!(r.err["error"]["code"], "confirmation_required");
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("effects.destructive")
    );
    // Timeout: temporary (75), retryable.
    let r = run(&sb, &["t_hang", "--timeout", "200ms"]);
    assert_eq!(r.code, 75, "{}", show(&r.raw));
    assert_eq!(r.err["error"]["code"], "timeout");
    assert_eq!(r.err["error"]["retryable"], true);
    // Tool missing on disk: unavailable (69).
    std::fs::remove_file(sb.path().join("bin/t")).unwrap();
    let r = run(&sb, &["t_json"]);
    assert_eq!(
        (r.code, r.err["error"]["code"].clone()),
        (69, json!("tool_unavailable"))
    );
    // Bad policy: config (78); missing policy file: no input (66).
    let pf = sb.write(
        "bad-policy.json",
        r#"{"effects": {"destructive": "sometimes"}}"#,
    );
    let r = run(&sb, &["t_json", "--policy", pf.to_str().unwrap()]);
    assert_eq!(
        (r.code, r.err["error"]["code"].clone()),
        (78, json!("policy_invalid"))
    );
    let r = run(&sb, &["t_json", "--policy", "/nonexistent/policy.json"]);
    assert_eq!(
        (r.code, r.err["error"]["code"].clone()),
        (66, json!("policy_unreadable"))
    );
    // No registry at all: no input (66).
    let empty = Sandbox::new();
    let r = run(&empty, &["t_json"]);
    assert_eq!(
        (r.code, r.err["error"]["code"].clone()),
        (66, json!("registry_not_found"))
    );
}

#[test]
fn tool_failure_is_an_ok_result_and_json_output_is_parsed() {
    let sb = sandbox_with_t();
    let r = run(&sb, &["t_fail"]);
    assert_eq!(r.code, 3, "atip passes the tool's exit code on");
    assert_eq!(r.out["status"], "ok");
    assert_eq!(r.out["data"]["exitCode"], 3);
    assert_eq!(r.out["data"]["stderr"], "it broke\n");
    assert!(r.out["data"].get("json").is_none());
    let r = run(&sb, &["t_json", "--args", "{}"]);
    assert_eq!(r.out["data"]["json"], json!({"ok": true, "n": 1}));
    // Killed by a signal: exitCode null, the signal, and 128 + signal as atip's code.
    let r = run(&sb, &["t_crash"]);
    assert_eq!(r.code, 128 + 15, "{}", show(&r.raw));
    assert_eq!(r.out["status"], "ok");
    assert_eq!(r.out["data"]["exitCode"], Value::Null);
    assert_eq!(r.out["data"]["signal"], 15);
    assert_eq!(r.out["data"]["stdout"], "going down\n");
}

#[test]
fn secrets_are_redacted_from_results_and_audit() {
    let sb = sandbox_with_t();
    let secret = "super-secret-token-value-42";
    let r = run_with(&sb, &["t_secret"], None, &[("T_TOKEN", secret)]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    let text = String::from_utf8_lossy(&r.raw.stdout);
    assert!(!text.contains(secret), "{text}");
    assert!(!text.contains("ghp_abcdef"));
    assert!(!text.contains("AKIAIOSFODNN7EXAMPLE"));
    let out = r.out["data"]["stdout"].as_str().unwrap();
    assert!(out.contains("token=[REDACTED:env:T_TOKEN]"), "{out}");
    assert!(out.contains("[REDACTED:github-token]"));
    assert!(out.contains("[REDACTED:aws-access-key-id]"));
    // Other variables reach the tool only when the policy passes them.
    assert!(out.contains("extra=unset"), "{out}");
    sb.write("config/policy.json", r#"{"env": {"pass": ["EXTRA_VAR"]}}"#);
    let r = run_with(&sb, &["t_secret"], None, &[("EXTRA_VAR", "kube.conf")]);
    assert!(
        r.out["data"]["stdout"]
            .as_str()
            .unwrap()
            .contains("extra=kube.conf")
    );
    std::fs::remove_file(sb.path().join("config/policy.json")).unwrap();
    // A secret passed as an argument to a side-effecting call stays out of the log.
    let args = json!({"line": format!("Authorization: Bearer {secret}")}).to_string();
    let r = run_with(
        &sb,
        &["t_write", "--yes", "--args", &args],
        None,
        &[("T_TOKEN", secret)],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert!(!String::from_utf8_lossy(&r.raw.stdout).contains(secret));
    let log = std::fs::read_to_string(sb.path().join("state/audit.jsonl")).unwrap();
    assert!(!log.contains(secret), "{log}");
    assert!(log.contains("REDACTED"));
    // The tool itself got the real value.
    let written = std::fs::read_to_string(sb.path().join("written.txt")).unwrap();
    assert!(written.contains(secret));
}

#[test]
fn output_is_capped_with_a_marker() {
    let sb = sandbox_with_t();
    let r = run(&sb, &["t_flood", "--max-output", "1KiB"]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    let out = r.out["data"]["stdout"].as_str().unwrap();
    assert!(out.len() < 1200, "{}", out.len());
    assert!(
        out.ends_with("[atip: stdout truncated at 1024 bytes]"),
        "{out}"
    );
    assert_eq!(r.out["meta"]["truncated"], true);
    let r = run(&sb, &["t_flood"]);
    assert_eq!(r.out["meta"]["truncated"], false);
    assert_eq!(
        r.out["data"]["stdout"].as_str().unwrap().lines().count(),
        2000
    );
}

#[test]
fn timeout_kills_the_grandchildren() {
    let sb = sandbox_with_t();
    let start = std::time::Instant::now();
    // No --timeout: the command's own duration.timeout (300ms) applies.
    let r = run(&sb, &["t_hang"]);
    assert_eq!(r.code, 75, "{}", show(&r.raw));
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(r.err["error"]["details"]["timeoutMs"], 300);
    assert_eq!(r.err["error"]["details"]["stdout"], "started\n");
    let pid: i32 = std::fs::read_to_string(sb.path().join("grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(common::gone(pid), "grandchild {pid} survived the timeout");
    // Read-only by declaration: not audited even when it times out.
    assert!(audit_lines(&sb).is_empty());
}

#[test]
fn confirmation_policy_and_audit() {
    let sb = sandbox_with_t();
    let r = run(&sb, &["t_delete", "--args", r#"{"target":"db"}"#]);
    assert_eq!(r.code, 77);
    assert!(!sb.path().join("deleted.txt").exists());
    let r = run(&sb, &["t_delete", "--yes", "--args", r#"{"target":"db"}"#]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert!(sb.path().join("deleted.txt").exists());
    let log = audit_lines(&sb);
    assert_eq!(log.len(), 2);
    assert_eq!(log[0]["decision"], "needs-confirmation");
    assert_eq!(log[0]["outcome"], "refused");
    assert_eq!(
        log[0]["rules"],
        json!(["effects.destructive", "effects.filesystemDelete"])
    );
    assert_eq!(log[1]["decision"], "confirmed");
    assert_eq!(log[1]["exitCode"], 0);
    assert_eq!(log[1]["tool"], "t_delete");
    assert_eq!(log[1]["command"], "t delete");
    assert_eq!(log[1]["argv"], json!(["delete", "db"]));
    assert!(log[1]["time"].as_str().unwrap().ends_with('Z'));
    assert!(log[1]["durationMs"].is_u64());
    assert!(log[1]["pid"].as_u64().unwrap() > 0 && log[1]["uid"].is_u64());
    assert!(log[1].get("client").is_none());

    // A deny in the policy file wins over --yes.
    let pf = sb.write(
        "config/policy.json",
        r#"{"commands": {"deny": ["t delete"]}, "effects": {"unknown": "deny"}}"#,
    );
    let _ = pf;
    let r = run(&sb, &["t_delete", "--yes", "--args", r#"{"target":"db"}"#]);
    assert_eq!(r.code, 77);
    assert_eq!(r.err["error"]["code"], "policy_denied");
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("commands.deny")
    );
    let r = run(&sb, &["t_mystery", "--yes"]);
    assert_eq!(r.err["error"]["code"], "policy_denied");
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("effects.unknown")
    );
    // Allowed effects run without confirmation.
    sb.write(
        "config/policy.json",
        r#"{"effects": {"destructive": "allow", "filesystemDelete": "allow"}}"#,
    );
    let r = run(&sb, &["t_delete", "--args", r#"{"target":"db"}"#]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(audit_lines(&sb).last().unwrap()["decision"], "allow");
}

#[test]
fn trust_floor_and_interactive_commands() {
    let sb = sandbox_with_t();
    register(
        &sb,
        "low",
        &json!({"atip": "0.3", "name": "low", "version": "1", "description": "Low trust",
        "commands": {"hi": {"description": "Say hi", "effects": {"destructive": false}}}}),
        "#!/bin/sh\necho hi\n",
        "inferred",
    );
    // Inferred metadata is the lowest vouching class: below the default floor (`tool`).
    let r = run(&sb, &["low_hi"]);
    assert_eq!(r.code, 77);
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("trust.vouch")
    );
    let r = run(&sb, &["low_hi", "-y"]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));

    // A partial answer whose omitted commands have unknown safety: confirm.
    register(
        &sb,
        "part",
        &json!({"atip": {"version": "0.6"}, "name": "part", "version": "1",
        "description": "Partial", "partial": true, "totalCommands": 5, "includedCommands": 1,
        "omitted": {"reason": "filtered", "safetyAssumption": "unknown"},
        "commands": {"go": {"description": "Go", "effects": {"destructive": false}}}}),
        "#!/bin/sh\necho went\n",
        "native",
    );
    let r = run(&sb, &["part_go"]);
    assert_eq!(r.code, 77);
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("effects.unknown")
    );

    let r = run(&sb, &["t_login", "--yes"]);
    assert_eq!(r.code, 77);
    assert_eq!(r.err["error"]["code"], "policy_denied");
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("interactive")
    );
    let r = run(&sb, &["t_login", "--allow-interactive"]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
}

#[test]
fn dry_run_prints_argv_and_decision_and_runs_nothing() {
    let sb = sandbox_with_t();
    let r = run(
        &sb,
        &["t_delete", "--dry-run", "--args", r#"{"target":"--all"}"#],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(r.out["status"], "dry-run");
    let argv = r.out["argv"].as_array().unwrap();
    assert_eq!(argv[1..], [json!("delete"), json!("--"), json!("--all")]);
    assert_eq!(r.out["decision"]["action"], "confirm");
    assert_eq!(r.out["decision"]["rules"][0]["rule"], "effects.destructive");
    assert!(!sb.path().join("deleted.txt").exists());
    assert!(audit_lines(&sb).is_empty());
}

#[test]
fn provider_batches_openai_anthropic_gemini() {
    let sb = sandbox_with_t();
    let openai = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "t_json", "arguments": "{}"}},
        {"id": "call_b", "type": "function", "function": {"name": "t_nope", "arguments": "{}"}},
        {"id": "call_c", "type": "function", "function": {"name": "t_echo", "arguments": "{\"count\": 1,"}},
        {"id": "call_d", "type": "function", "function": {"name": "t_fail", "arguments": ""}},
        {"id": "call_e", "type": "function", "function": {"name": "t_delete", "arguments": "{\"target\":\"x\"}"}}
    ]}}]});
    let f = sb.write("openai.json", openai.to_string());
    let r = run(
        &sb,
        &["--calls", f.to_str().unwrap(), "--provider", "openai"],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    let msgs = r.out.as_array().unwrap();
    assert_eq!(msgs.len(), 5);
    let ids: Vec<&str> = msgs
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_a", "call_b", "call_c", "call_d", "call_e"]);
    assert!(msgs.iter().all(|m| m["role"] == "tool"));
    let content: Vec<Value> = msgs
        .iter()
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(content[0]["data"]["json"]["ok"], true);
    assert_eq!(content[1]["error"]["code"], "tool_not_found");
    assert_eq!(content[2]["error"]["code"], "args_malformed");
    assert_eq!(content[3]["status"], "ok");
    assert_eq!(content[3]["data"]["exitCode"], 3);
    assert_eq!(content[4]["error"]["code"], "confirmation_required");

    let responses = json!({"output": [
        {"type": "function_call", "id": "fc_1", "call_id": "call_r1", "name": "t_json", "arguments": "{}"}
    ]});
    let f = sb.write("responses.json", responses.to_string());
    let r = run(
        &sb,
        &["--calls", f.to_str().unwrap(), "--provider", "openai"],
    );
    assert_eq!(r.out[0]["type"], "function_call_output");
    assert_eq!(r.out[0]["call_id"], "call_r1");

    let anthropic = json!({"role": "assistant", "content": [
        {"type": "text", "text": "running"},
        {"type": "tool_use", "id": "toolu_1", "name": "t_echo", "input": {"words": ["a"]}},
        {"type": "tool_use", "id": "toolu_2", "name": "t_fail", "input": {}}
    ]});
    let r = run_with(
        &sb,
        &["--calls", "-", "--provider", "anthropic"],
        Some(&anthropic.to_string()),
        &[],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    let blocks = r.out[0]["content"].as_array().unwrap();
    assert_eq!(r.out[0]["role"], "user");
    assert_eq!(blocks[0]["tool_use_id"], "toolu_1");
    assert!(blocks[0].get("is_error").is_none());
    assert_eq!(blocks[1]["tool_use_id"], "toolu_2");
    assert_eq!(blocks[1]["is_error"], true);

    let gemini = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "t_json", "args": {}}},
        {"functionCall": {"name": "t_echo", "args": {"bogus": true}, "id": "g2"}}
    ]}}]});
    let f = sb.write("gemini.json", gemini.to_string());
    let r = run(
        &sb,
        &["--calls", f.to_str().unwrap(), "--provider", "gemini"],
    );
    let parts = r.out[0]["parts"].as_array().unwrap();
    assert_eq!(parts[0]["functionResponse"]["name"], "t_json");
    assert_eq!(parts[0]["functionResponse"]["response"]["status"], "ok");
    assert_eq!(parts[1]["functionResponse"]["id"], "g2");
    assert_eq!(
        parts[1]["functionResponse"]["response"]["error"]["code"],
        "args_invalid"
    );

    // Not JSON at all, and the wrong provider shape: data errors.
    let junk = sb.write("junk.json", "{not json");
    let r = run(
        &sb,
        &["--calls", junk.to_str().unwrap(), "--provider", "openai"],
    );
    assert_eq!(
        (r.code, r.err["error"]["code"].clone()),
        (65, json!("calls_malformed"))
    );
    let r = run(
        &sb,
        &["--calls", "/nonexistent.json", "--provider", "openai"],
    );
    assert_eq!(
        (r.code, r.err["error"]["code"].clone()),
        (66, json!("input_not_found"))
    );
    // A response with no tool calls gives no messages.
    let done = sb.write(
        "done.json",
        r#"{"choices":[{"message":{"role":"assistant","content":"All done."}}]}"#,
    );
    let r = run(
        &sb,
        &["--calls", done.to_str().unwrap(), "--provider", "openai"],
    );
    assert_eq!((r.code, r.out.clone()), (0, json!([])));
    let r = run(
        &sb,
        &["--calls", f.to_str().unwrap(), "--provider", "anthropic"],
    );
    assert_eq!(
        (r.code, r.err["error"]["code"].clone()),
        (65, json!("calls_invalid"))
    );
}

/// The most `t sleep` calls the tool itself saw running at once (its `concurrency.txt`).
fn peak_concurrency(sb: &Sandbox) -> usize {
    std::fs::read_to_string(sb.path().join("concurrency.txt"))
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .max()
        .unwrap()
}

#[test]
fn batch_runs_idempotent_calls_in_parallel_and_keeps_order() {
    let sb = sandbox_with_t();
    let calls: Vec<Value> = (0..4)
        .map(|i| json!({"type": "tool_use", "id": format!("u{i}"), "name": "t_sleep", "input": {"tag": format!("s{i}")}}))
        .chain(std::iter::once(json!({"type": "tool_use", "id": "w", "name": "t_write", "input": {"line": "after"}})))
        .collect();
    let doc = json!({"content": calls}).to_string();
    // Each sleep call waits until four run at once: only a parallel batch gets there.
    std::fs::write(sb.path().join("barrier"), "4").unwrap();
    let r = run_with(
        &sb,
        &[
            "--calls",
            "-",
            "--provider",
            "anthropic",
            "--jobs",
            "4",
            "--yes",
        ],
        Some(&doc),
        &[],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(
        peak_concurrency(&sb),
        4,
        "the four idempotent calls ran at once"
    );
    let blocks = r.out[0]["content"].as_array().unwrap();
    let ids: Vec<&str> = blocks
        .iter()
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["u0", "u1", "u2", "u3", "w"]);
    for (i, b) in blocks.iter().take(4).enumerate() {
        let c: Value = serde_json::from_str(b["content"].as_str().unwrap()).unwrap();
        assert_eq!(c["data"]["stdout"], format!("s{i}\n"));
    }
    // The side-effecting call ran after all of them.
    assert_eq!(
        std::fs::read_to_string(sb.path().join("sleep-markers.txt"))
            .unwrap()
            .lines()
            .count(),
        4
    );
    assert!(sb.path().join("written.txt").exists());
    // Call budget from the policy.
    sb.write("config/policy.json", r#"{"limits": {"maxCalls": 2}}"#);
    let r = run_with(
        &sb,
        &["--calls", "-", "--provider", "anthropic", "--yes"],
        Some(&doc),
        &[],
    );
    let blocks = r.out[0]["content"].as_array().unwrap();
    let c: Value = serde_json::from_str(blocks[2]["content"].as_str().unwrap()).unwrap();
    assert_eq!(c["error"]["code"], "call_budget_exceeded");
}

#[test]
fn colliding_flattened_names_resolve_as_in_the_full_catalog() {
    let sb = Sandbox::new();
    let ro = json!({"destructive": false});
    register(
        &sb,
        "gh",
        &json!({"atip": "0.4", "name": "gh", "version": "1", "description": "A",
        "commands": {"pr": {"description": "PRs", "commands": {"list": {"description": "List", "effects": ro}}}}}),
        "#!/bin/sh\necho from-gh \"$@\"\n",
        "native",
    );
    register(
        &sb,
        "gh_pr",
        &json!({"atip": "0.4", "name": "gh_pr", "version": "1", "description": "B",
        "commands": {"list": {"description": "List", "effects": ro}}}),
        "#!/bin/sh\necho from-gh_pr \"$@\"\n",
        "native",
    );
    let r = run(&sb, &["gh_pr_list"]);
    assert_eq!(
        r.out["data"]["stdout"],
        "from-gh pr list\n",
        "{}",
        show(&r.raw)
    );
    let r = run(&sb, &["gh_pr_list_2"]);
    assert_eq!(
        r.out["data"]["stdout"],
        "from-gh_pr list\n",
        "{}",
        show(&r.raw)
    );
}

#[test]
fn batch_dry_run_jobs_bound_and_text_output() {
    let sb = sandbox_with_t();
    let calls: Vec<Value> = (0..4)
        .map(|i| json!({"type": "tool_use", "id": format!("u{i}"), "name": "t_sleep", "input": {"tag": format!("s{i}")}}))
        .collect();
    let doc = json!({"content": calls}).to_string();
    // --jobs 2: each call waits until two run; never more than two at once.
    std::fs::write(sb.path().join("barrier"), "2").unwrap();
    let r = run_with(
        &sb,
        &["--calls", "-", "--provider", "anthropic", "--jobs", "2"],
        Some(&doc),
        &[],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(peak_concurrency(&sb), 2, "--jobs 2 bounds the batch");
    // Dry run over a batch: one report per call, nothing runs.
    std::fs::remove_file(sb.path().join("sleep-markers.txt")).unwrap();
    let r = run_with(
        &sb,
        &["--calls", "-", "--provider", "anthropic", "--dry-run"],
        Some(&doc),
        &[],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    let reports = r.out.as_array().unwrap();
    assert_eq!(reports.len(), 4);
    assert_eq!(reports[2]["status"], "dry-run");
    assert_eq!(reports[2]["id"], "u2");
    assert_eq!(reports[2]["decision"]["action"], "allow");
    assert!(!sb.path().join("sleep-markers.txt").exists());
    // Text output: the tool's own streams pass through, atip's summary on stderr.
    let out = sb
        .atip()
        .args(["--output", "text", "exec", "t_fail"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.stdout, b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("it broke\n"), "{err}");
    assert!(err.contains("t_fail exited 3"), "{err}");
}

#[test]
fn args_invalid_carries_corrected_arguments_that_run() {
    let sb = sandbox_with_t();
    // A misspelt key, a key in another case, an unknown key: the example fixes all three.
    let r = run(
        &sb,
        &[
            "t_echo",
            "--args",
            r#"{"cuont": "2", "Force": true, "colour": "red"}"#,
        ],
    );
    assert_eq!(r.code, 65, "{}", show(&r.raw));
    let s = &r.err["error"]["suggestion"];
    assert_eq!(s["action"], "retry_with_modified_input", "{s}");
    assert_eq!(s["applicability"], "maybe_incorrect", "{s}");
    assert_eq!(s["example"], json!({"count": 2, "force": true}), "{s}");
    assert!(
        s["fix"]
            .as_str()
            .unwrap()
            .contains("\"cuont\" renamed to \"count\"")
    );
    // The example is accepted as it stands.
    let r = run(&sb, &["t_echo", "--args", &s["example"].to_string()]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(
        nul_split(r.out["data"]["stdout"].as_str().unwrap()),
        ["--count", "2", "--force"]
    );
    // A value nothing can repair: the error, but no example.
    let r = run(&sb, &["t_echo", "--args", r#"{"count": "many"}"#]);
    assert_eq!(r.err["error"]["code"], "args_invalid");
    assert!(r.err["error"].get("suggestion").is_none(), "{}", r.err);
    // The same suggestion reaches a model through a provider batch.
    let openai = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "t_echo", "arguments": "{\"Message\": \"hi\"}"}}
    ]}}]});
    let f = sb.write("openai.json", openai.to_string());
    let r = run(
        &sb,
        &["--calls", f.to_str().unwrap(), "--provider", "openai"],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    let content: Value = serde_json::from_str(r.out[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["error"]["code"], "args_invalid");
    assert_eq!(
        content["error"]["suggestion"]["example"],
        json!({"message": "hi"})
    );
    assert_eq!(
        content["error"]["suggestion"]["applicability"],
        "machine_applicable"
    );
}

/// Two registry entries whose documents name the same tool: a call by name runs the
/// first entry's executable (registry name order) and says the second was skipped, as
/// the JSON path decides; the compiled catalog is not used to guess otherwise.
#[test]
fn two_entries_naming_one_tool_run_the_first_and_skip_the_second() {
    let sb = Sandbox::new();
    let doc = |word: &str| {
        json!({"atip": "0.6", "name": "dup", "version": "1", "description": format!("Dup {word}"),
            "commands": {"go": {"description": "Go", "effects": {"destructive": false}}}})
    };
    register(&sb, "a", &doc("a"), "#!/bin/sh\necho from-a\n", "native");
    register(&sb, "b", &doc("b"), "#!/bin/sh\necho from-b\n", "native");
    for _ in 0..2 {
        // The first call compiles the catalog; the second reads it.
        let r = run(&sb, &["dup_go"]);
        assert_eq!(r.code, 0, "{}", show(&r.raw));
        assert_eq!(r.out["data"]["stdout"], "from-a\n", "{}", show(&r.raw));
        let stderr = String::from_utf8_lossy(&r.raw.stderr);
        assert!(
            stderr.contains("skipped b") && stderr.contains("already provided"),
            "{stderr}"
        );
    }
}
