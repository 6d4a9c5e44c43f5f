//! `atip mcp servers|tools|describe|call|ping|import` and MCP tools in search and exec:
//! the real binary against real MCP servers — a fake Python server for every failure
//! mode (tests/fixtures/mcp/fake_server.py), and the reference servers from npm and
//! PyPI that `.ci/setup-test-deps` installs (skipped visibly when missing).

use crate::common::{self, Sandbox, show};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const SECRET: &str = "supersecretvalue123";

pub(crate) fn fake_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/fake_server.py")
}

/// The real interpreter (not a version-manager shim, which needs the user's HOME).
pub(crate) fn python() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (out.status.success() && p.is_absolute()).then_some(p)
}

/// `atip` in the sandbox with the tools cache redirected too.
fn atip(sb: &Sandbox) -> Command {
    let mut c = sb.atip();
    c.env("ATIP_CACHE_DIR", sb.path().join("cache"))
        .env("MY_SECRET", SECRET)
        .current_dir(sb.path().join("proj"));
    c
}

fn run(sb: &Sandbox, args: &[&str]) -> Output {
    atip(sb).args(args).stdin(Stdio::null()).output().unwrap()
}

fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(o)))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A sandbox whose global config has the fake server as `fake` (mode `mode`), its
/// token from `${MY_SECRET}`, and a project dir `proj/`.
pub(crate) fn sandbox(mode: &str) -> Option<Sandbox> {
    let Some(py) = python() else {
        common::skip("python3 not found");
        return None;
    };
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("proj")).unwrap();
    std::fs::create_dir_all(sb.path().join("home")).unwrap();
    let cfg = json!({"mcpServers": {"fake": {
        "command": py, "args": [fake_script(), mode],
        "env": {"FAKE_TOKEN": "${MY_SECRET}", "FAKE_PIDFILE": sb.path().join("fake.pid")}}}});
    sb.write("config/mcp.json", cfg.to_string());
    Some(sb)
}

fn fake_pid(sb: &Sandbox) -> i32 {
    std::fs::read_to_string(sb.path().join("fake.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_trusted_project_config_adds_servers_and_both_shapes_are_read() {
    let Some(sb) = sandbox("ok") else { return };
    sb.write(
        "config/mcp.json",
        json!({"mcpServers": {
            "a": {"command": "global-a"},
            "b": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${MY_SECRET}"}}},
            "defaultServer": "b"})
        .to_string(),
    );
    // The nearest ancestor's .mcp.json counts: put it above the working directory.
    let project = sb.write(
        ".mcp.json",
        json!({"servers": {
            "a": {"transport": "stdio", "command": "project-a"},
            "c": {"transport": "stdio", "command": "project-c", "args": ["--x", "${NOT_SET_ANYWHERE}"]}}})
            .to_string(),
    );
    std::fs::create_dir_all(sb.path().join("proj/deeper")).unwrap();
    let servers = |sb: &Sandbox| {
        atip(sb)
            .args(["mcp", "servers", "--output", "json"])
            .current_dir(sb.path().join("proj/deeper"))
            .output()
            .unwrap()
    };
    // Untrusted: its servers are only named (spec/project-trust.md).
    let o = servers(&sb);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = json_out(&o);
    assert_eq!(v["servers"].as_array().unwrap().len(), 2);
    assert_eq!(v["untrusted"].as_array().unwrap().len(), 2);
    let o = run(&sb, &["mcp", "trust", project.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let o = servers(&sb);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = json_out(&o);
    let servers = v["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 3, "{v}");
    // The global `a` keeps its name; the project's `c` joins.
    assert_eq!(servers[0]["name"], "a");
    assert_eq!(servers[0]["summary"], "global-a");
    assert_eq!(servers[1]["transport"], "http");
    assert_eq!(servers[1]["default"], true);
    assert_eq!(servers[2]["name"], "c");
    assert_eq!(servers[2]["summary"], "project-c --x ${NOT_SET_ANYWHERE}");
    assert!(
        servers[2]["origin"]
            .as_str()
            .unwrap()
            .ends_with(".mcp.json")
    );
    assert!(stderr(&o).contains("servers.a is ignored"), "{}", show(&o));
    assert!(
        stderr(&o).contains("NOT_SET_ANYWHERE is not expanded"),
        "{}",
        show(&o)
    );
    assert!(!String::from_utf8_lossy(&o.stdout).contains(SECRET));

    // strictEnv turns the variable into a config error (78), refused at trust time.
    sb.write(
        ".mcp.json",
        json!({"strictEnv": true, "mcpServers": {"c": {"command": "x", "args": ["${NOT_SET_ANYWHERE}"]}}}).to_string(),
    );
    let o = run(
        &sb,
        &[
            "mcp",
            "trust",
            project.to_str().unwrap(),
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(78), "{}", show(&o));
    assert!(stderr(&o).contains("mcp_config_invalid"));
    // Broken JSON names the file.
    sb.write(".mcp.json", "{\"mcpServers\": ");
    let o = run(&sb, &["mcp", "trust", project.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(78), "{}", show(&o));
    assert!(stderr(&o).contains(".mcp.json"), "{}", show(&o));
}

#[test]
fn tools_are_cached_with_a_ttl_and_no_cache_bypasses_it() {
    let Some(sb) = sandbox("ok") else { return };
    let o = run(&sb, &["mcp", "tools", "--output", "json", "--verbose"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = json_out(&o);
    assert_eq!(v["servers"][0]["cached"], false);
    let names: Vec<&str> = v["servers"][0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"echo") && names.contains(&"write_note"));
    assert!(stderr(&o).contains("cache miss"), "{}", show(&o));
    let files: Vec<_> = std::fs::read_dir(sb.path().join("cache/mcp"))
        .unwrap()
        .collect();
    assert_eq!(files.len(), 1);

    let o = run(&sb, &["mcp", "tools", "--output", "json", "--verbose"]);
    assert_eq!(json_out(&o)["servers"][0]["cached"], true);
    assert!(stderr(&o).contains("cache hit: 7 tools"), "{}", show(&o));
    // No server was started for the cached answer.
    assert!(!stderr(&o).contains("fake: starting"), "{}", show(&o));

    let o = run(&sb, &["mcp", "tools", "--output", "json", "--no-cache"]);
    assert_eq!(json_out(&o)["servers"][0]["cached"], false);
    // The list ages past the TTL: its fetch time moved 2 s back, not a real wait.
    let cached = std::fs::read_dir(sb.path().join("cache/mcp"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut list: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&cached).unwrap()).unwrap();
    let fetched = list["fetchedAtMs"].as_u64().expect("fetchedAtMs");
    list["fetchedAtMs"] = (fetched - 2000).into();
    std::fs::write(&cached, serde_json::to_vec(&list).unwrap()).unwrap();
    let o = run(
        &sb,
        &["mcp", "tools", "--output", "json", "--cache-ttl", "1"],
    );
    assert_eq!(
        json_out(&o)["servers"][0]["cached"],
        false,
        "older than the TTL"
    );
    // Text output: one line per tool, read-only-ness as atip sees it.
    let o = run(&sb, &["mcp", "tools", "--output", "text"]);
    let text = String::from_utf8_lossy(&o.stdout);
    let row = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row: {text}"))
            .to_string()
    };
    assert!(
        row("echo").contains(" read-only ") && row("echo").ends_with("Echo a message back"),
        "{text}"
    );
    // No annotations: MCP's default is destructive, so atip says so.
    assert!(row("write_note").contains(" destructive "), "{text}");
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("7 tools from 1 server"),
        "{text}"
    );
}

#[test]
fn call_and_every_exit_code() {
    let Some(sb) = sandbox("ok") else { return };
    let code = |args: &[&str]| {
        let mut a = vec!["mcp"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--output", "json", "--quiet-server-stderr"]);
        let o = run(&sb, &a);
        (o.status.code(), o)
    };
    let (c, o) = code(&["call", "echo", "--args", r#"{"message":"hi"}"#]);
    assert_eq!(c, Some(0), "{}", show(&o));
    assert_eq!(
        json_out(&o),
        json!({"content": [{"type": "text", "text": "Echo: hi"}]})
    );
    // isError → 1, the result still printed.
    let (c, o) = code(&["call", "fail"]);
    assert_eq!(c, Some(1), "{}", show(&o));
    assert_eq!(json_out(&o)["isError"], true);
    // Unknown tool, unknown server → 2.
    let (c, o) = code(&["call", "nope"]);
    assert_eq!(c, Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("\"mcp_tool_not_found\""));
    let (c, o) = code(&["call", "echo", "--server", "ghost"]);
    assert_eq!(c, Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("\"mcp_server_not_found\""));
    // Not JSON, or not matching the schema → 65, nothing sent.
    let (c, o) = code(&["call", "echo", "--args", "{oops"]);
    assert_eq!(c, Some(65), "{}", show(&o));
    let (c, o) = code(&["call", "echo", "--args", r#"{"message": 5}"#]);
    assert_eq!(c, Some(65), "{}", show(&o));
    assert!(stderr(&o).contains("args_invalid"), "{}", show(&o));
    // The corrected arguments: a number where the schema wants a string.
    let e: Value =
        serde_json::from_str(stderr(&o).lines().last().unwrap_or_default()).unwrap_or(Value::Null);
    assert_eq!(
        e["error"]["suggestion"]["example"],
        json!({"message": "5"}),
        "{}",
        show(&o)
    );
    assert_eq!(
        e["error"]["suggestion"]["applicability"],
        "machine_applicable"
    );
    let (c, o) = code(&["call", "echo", "--args", r#"{}"#]);
    assert_eq!(c, Some(65), "{}", show(&o));
    // Not read-only → confirmation; refused without a terminal (77), runs with --yes.
    let (c, o) = code(&["call", "write_note", "--args", r#"{"text":"x"}"#]);
    assert_eq!(c, Some(77), "{}", show(&o));
    assert!(stderr(&o).contains("confirmation_required"), "{}", show(&o));
    let (c, o) = code(&["call", "write_note", "--args", r#"{"text":"x"}"#, "--yes"]);
    assert_eq!(c, Some(0), "{}", show(&o));
    // Both went into the audit log; the read-only calls did not.
    let log = std::fs::read_to_string(sb.path().join("state/audit.jsonl")).unwrap();
    let recs: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 2, "{log}");
    assert_eq!(recs[0]["via"], "mcp-client");
    assert_eq!(recs[0]["outcome"], "refused");
    assert_eq!(recs[1]["decision"], "confirmed");
    assert_eq!(recs[1]["tool"], "mcp__fake__write_note");
    // A policy deny wins over --yes (77), by flattened-name glob.
    sb.write(
        "config/policy.json",
        json!({"tools": {"deny": ["mcp__fake__write*"]}}).to_string(),
    );
    let (c, o) = code(&["call", "write_note", "--args", r#"{"text":"x"}"#, "--yes"]);
    assert_eq!(c, Some(77), "{}", show(&o));
    assert!(stderr(&o).contains("policy_denied"));
    // A server that cannot start → 69.
    let (c, o) = code(&[
        "call",
        "echo",
        "--command",
        "/nonexistent/server",
        "--args",
        "{}",
    ]);
    assert_eq!(c, Some(69), "{}", show(&o));
    assert!(stderr(&o).contains("mcp_connect_failed"));
}

/// The text that `mcp servers`, `tools`, `describe` and `call` print goes through the
/// CLI's printer: a full device is exit 74 (`stdout_write_failed`), a closed pipe a
/// quiet exit with the command's own code.
#[test]
fn text_output_reports_a_failed_write_and_ends_quietly_on_a_closed_pipe() {
    let Some(sb) = sandbox("ok") else { return };
    if !Path::new("/dev/full").exists() {
        common::skip_optional("no /dev/full on this system");
        return;
    }
    let commands: [&[&str]; 4] = [
        &["mcp", "servers"],
        &["mcp", "tools", "--quiet-server-stderr", "--no-cache"],
        &["mcp", "describe", "echo", "--quiet-server-stderr"],
        &[
            "mcp",
            "call",
            "echo",
            "--args",
            r#"{"message":"hi"}"#,
            "--quiet-server-stderr",
        ],
    ];
    for args in commands {
        let mut args = args.to_vec();
        args.extend_from_slice(&["--output", "text"]);
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = atip(&sb)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(full)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(74), "{args:?}: {}", show(&o));
        assert!(
            stderr(&o).contains("failed to write to stdout"),
            "{args:?}: {}",
            show(&o)
        );
        let mut child = atip(&sb)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", show(&o));
        assert!(
            !stderr(&o).contains("error") && !stderr(&o).contains("panicked"),
            "{args:?}: {}",
            show(&o)
        );
    }
}

#[test]
fn a_server_that_hangs_is_timed_out_and_its_process_group_killed() {
    let Some(sb) = sandbox("ok") else { return };
    let started = Instant::now();
    let o = run(
        &sb,
        &[
            "mcp",
            "call",
            "hang",
            "--timeout",
            "1500ms",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(75), "{}", show(&o));
    assert!(stderr(&o).contains("mcp_timeout"));
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(
        common::gone(fake_pid(&sb)),
        "the hung server must be killed"
    );

    let Some(sb) = sandbox("hang-init") else {
        return;
    };
    let o = run(&sb, &["mcp", "ping", "--timeout", "1s", "--output", "json"]);
    assert_eq!(o.status.code(), Some(75), "{}", show(&o));
    assert!(common::gone(fake_pid(&sb)));
}

#[test]
fn a_server_that_dies_mid_call_or_at_start_is_unavailable() {
    let Some(sb) = sandbox("ok") else { return };
    let o = run(
        &sb,
        &["mcp", "call", "die", "--output", "json", "--timeout", "20s"],
    );
    assert_eq!(o.status.code(), Some(69), "{}", show(&o));
    assert!(stderr(&o).contains("mcp_server_exited"), "{}", show(&o));
    assert!(stderr(&o).contains("[fake] fake: dying"), "{}", show(&o));

    let Some(sb) = sandbox("exit-now") else {
        return;
    };
    let o = run(
        &sb,
        &["mcp", "ping", "--output", "json", "--timeout", "20s"],
    );
    assert_eq!(o.status.code(), Some(69), "{}", show(&o));
    assert!(
        stderr(&o).contains("[fake] fake: cannot start"),
        "{}",
        show(&o)
    );
}

#[test]
fn a_stderr_flood_is_forwarded_prefixed_cut_and_never_blocks() {
    let Some(sb) = sandbox("flood") else { return };
    let o = run(
        &sb,
        &[
            "mcp",
            "call",
            "echo",
            "--args",
            r#"{"message":"still here"}"#,
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(json_out(&o)["content"][0]["text"], "Echo: still here");
    let err = stderr(&o);
    assert!(err.lines().filter(|l| l.starts_with("[fake] xxx")).count() >= 5000);
    let long = err.lines().find(|l| l.contains("yyyy")).unwrap();
    assert!(
        long.len() < 4200 && long.ends_with("[atip: line cut]"),
        "{}",
        &long[long.len() - 40..]
    );

    let o = run(
        &sb,
        &[
            "mcp",
            "call",
            "echo",
            "--args",
            r#"{"message":"x"}"#,
            "--quiet-server-stderr",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        !stderr(&o).contains("[fake] "),
        "{}",
        &stderr(&o)[..200.min(stderr(&o).len())]
    );
}

#[test]
fn secrets_are_redacted_in_trace_verbose_stderr_and_results() {
    let Some(sb) = sandbox("ok") else { return };
    let o = run(
        &sb,
        &[
            "mcp",
            "call",
            "secret",
            "--trace",
            "--verbose",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(!all.contains(SECRET), "{all}");
    let err = stderr(&o);
    // The 2026-07-28 probe first; the legacy server's error sends the handshake.
    assert!(
        err.contains("-> {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"server/discover\""),
        "{err}"
    );
    assert!(
        err.contains("-> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\""),
        "{err}"
    );
    assert!(err.contains("<- {"), "{err}");
    assert!(err.contains("[REDACTED:env:FAKE_TOKEN]"), "{err}");
    assert_eq!(
        json_out(&o)["content"][0]["text"],
        "token is [REDACTED:env:FAKE_TOKEN]"
    );
    // Explicit mode: a secret header never shows up, even in a connection error.
    let o = run(
        &sb,
        &[
            "mcp",
            "ping",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--header",
            &format!("Authorization: Bearer {SECRET}"),
            "--trace",
            "--verbose",
            "--timeout",
            "5s",
        ],
    );
    assert_eq!(o.status.code(), Some(69), "{}", show(&o));
    assert!(!stderr(&o).contains(SECRET), "{}", show(&o));
}

#[test]
fn explicit_stdio_mode_needs_no_config() {
    let Some(py) = python() else {
        common::skip("python3 not found");
        return;
    };
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("proj")).unwrap();
    let o = run(
        &sb,
        &[
            "mcp",
            "call",
            "secret",
            "--command",
            py.to_str().unwrap(),
            "--arg",
            fake_script().to_str().unwrap(),
            "--env",
            &format!("FAKE_TOKEN={SECRET}"),
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains(SECRET));
    let o = run(
        &sb,
        &[
            "mcp",
            "describe",
            "echo",
            "--command",
            py.to_str().unwrap(),
            "--arg",
            fake_script().to_str().unwrap(),
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = json_out(&o);
    assert_eq!(v["inputSchema"]["required"], json!(["message"]));
    assert_eq!(v["atip"]["flatName"], "mcp__cli__echo");
    assert_eq!(v["atip"]["decision"]["action"], "allow");
}

#[test]
fn mcp_tools_join_search_and_exec() {
    let Some(sb) = sandbox("ok") else { return };
    // Before any list is cached, search fetches the missing list of a server of the
    // user's own config (bounded by its timeout) and finds its tool.
    let o = run(&sb, &["search", "echo", "message", "--output", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(
        json_out(&o)["results"][0]["name"],
        "mcp__fake__echo",
        "{}",
        show(&o)
    );
    let o = run(
        &sb,
        &[
            "search",
            "echo",
            "message",
            "--output",
            "json",
            "--mcp-refresh",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = json_out(&o);
    let top = &v["results"][0];
    assert_eq!(top["name"], "mcp__fake__echo");
    assert_eq!(top["kind"], "mcp");
    assert_eq!(top["server"], "fake");
    assert_eq!(top["schema"]["required"], json!(["message"]));
    // Now cached: plain search finds it, alongside registered commands.
    common::tools::register(
        &sb,
        "t",
        &common::tools::t_meta(),
        "#!/bin/sh\necho hi\n",
        "native",
    );
    let o = run(
        &sb,
        &["search", "echo", "--output", "json", "--limit", "10"],
    );
    let v = json_out(&o);
    let kinds: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"mcp") && kinds.contains(&"command"), "{v}");
    let o = run(&sb, &["search", "echo", "--output", "json", "--no-mcp"]);
    assert!(
        json_out(&o)["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["kind"] == "command")
    );
    // export --mcp adds them after the registry's tools, in the provider's shape.
    let o = run(&sb, &["export", "--format", "openai", "--mcp"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = json_out(&o);
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"t_echo") && names.contains(&"mcp__fake__echo"),
        "{names:?}"
    );
    let o = run(&sb, &["export", "--format", "mcp", "--mcp"]);
    let v = json_out(&o);
    let echo = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__fake__echo")
        .unwrap()
        .clone();
    assert_eq!(echo["annotations"]["readOnlyHint"], true);
    let note = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__fake__write_note")
        .unwrap()
        .clone();
    assert_eq!(note["annotations"]["destructiveHint"], true);
    let o = run(&sb, &["export", "--format", "skill", "--mcp"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    // exec by flattened name: same call, same policy.
    let o = run(
        &sb,
        &[
            "exec",
            "mcp__fake__echo",
            "--args",
            r#"{"message":"via exec"}"#,
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(json_out(&o)["content"][0]["text"], "Echo: via exec");
    let o = run(
        &sb,
        &[
            "exec",
            "mcp__fake__write_note",
            "--args",
            r#"{"text":"x"}"#,
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(77), "{}", show(&o));
    let o = run(
        &sb,
        &[
            "exec",
            "mcp__fake__nope",
            "--args",
            "{}",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
}

#[test]
fn exec_calls_route_mcp_names_in_order_under_the_same_policy() {
    let Some(sb) = sandbox("ok") else { return };
    common::tools::register(
        &sb,
        "t",
        &common::tools::t_meta(),
        "#!/bin/sh\necho hi\n",
        "native",
    );
    let response = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "t_echo", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "mcp__fake__echo", "arguments": "{\"message\":\"one\"}"}},
        {"id": "c3", "type": "function", "function": {"name": "mcp__fake__write_note", "arguments": "{\"text\":\"n\"}"}},
        {"id": "c4", "type": "function", "function": {"name": "mcp__fake__fail", "arguments": "{}"}},
        {"id": "c5", "type": "function", "function": {"name": "mcp__fake__echo", "arguments": "{}"}},
        {"id": "c6", "type": "function", "function": {"name": "mcp__fake__nope", "arguments": "{}"}}
    ]}}]});
    let f = sb.write("proj/calls.json", response.to_string());
    let calls = f.to_str().unwrap();
    let contents = |o: &Output| -> Vec<Value> {
        json_out(o)
            .as_array()
            .unwrap()
            .iter()
            .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
            .collect()
    };
    // No --yes and no terminal: the tool without a read-only hint is refused, like a
    // destructive command; the others run, in order, with their ids.
    let o = run(
        &sb,
        &[
            "exec",
            "--calls",
            calls,
            "--provider",
            "openai",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let ids: Vec<String> = json_out(&o)
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4", "c5", "c6"]);
    let c = contents(&o);
    assert_eq!(c[0]["status"], "ok", "{c:?}");
    assert_eq!(c[1]["content"][0]["text"], "Echo: one", "{c:?}");
    assert_eq!(c[2]["error"]["code"], "confirmation_required", "{c:?}");
    assert_eq!(c[3]["isError"], true, "{c:?}");
    assert_eq!(c[4]["error"]["code"], "args_invalid", "{c:?}");
    assert_eq!(c[5]["error"]["code"], "mcp_tool_not_found", "{c:?}");
    // --yes confirms it; the call is audited with its provider call id.
    let o = run(
        &sb,
        &[
            "exec",
            "--calls",
            calls,
            "--provider",
            "openai",
            "--yes",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let c = contents(&o);
    assert_eq!(c[2]["content"][0]["text"], "noted: n", "{c:?}");
    let log = std::fs::read_to_string(sb.path().join("state/audit.jsonl")).unwrap();
    let rec: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r["tool"] == "mcp__fake__write_note")
        .collect();
    assert_eq!(rec.len(), 2, "{log}");
    assert_eq!(rec[0]["decision"], "needs-confirmation");
    assert_eq!(rec[1]["decision"], "confirmed");
    assert_eq!(rec[1]["outcome"], "completed");
    assert_eq!(rec[1]["callId"], "c3");
    // A policy that denies the server wins over --yes.
    sb.write(
        "proj/deny.json",
        json!({"tools": {"deny": ["mcp__fake__write*"]}}).to_string(),
    );
    let o = run(
        &sb,
        &[
            "exec",
            "--calls",
            calls,
            "--provider",
            "openai",
            "--yes",
            "--policy",
            "deny.json",
            "--output",
            "json",
        ],
    );
    let c = contents(&o);
    assert_eq!(c[2]["error"]["code"], "policy_denied", "{c:?}");
    assert_eq!(c[1]["content"][0]["text"], "Echo: one", "{c:?}");
    // --dry-run: every call's decision, nothing sent (no new audit record, no call).
    let before = std::fs::read_to_string(sb.path().join("state/audit.jsonl")).unwrap();
    let o = run(
        &sb,
        &[
            "exec",
            "--calls",
            calls,
            "--provider",
            "openai",
            "--dry-run",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json_out(&o);
    assert_eq!(r[1]["status"], "dry-run", "{r}");
    assert_eq!(r[1]["tool"], "mcp__fake__echo");
    assert_eq!(r[1]["server"], "fake");
    assert_eq!(r[1]["decision"]["action"], "allow", "{r}");
    assert_eq!(r[1]["id"], "c2");
    assert_eq!(r[2]["decision"]["action"], "confirm", "{r}");
    assert_eq!(r[4]["error"]["code"], "args_invalid", "{r}");
    assert_eq!(
        std::fs::read_to_string(sb.path().join("state/audit.jsonl")).unwrap(),
        before
    );
    // The single-call form shows the decision too.
    let o = run(
        &sb,
        &[
            "exec",
            "mcp__fake__write_note",
            "--args",
            r#"{"text":"x"}"#,
            "--dry-run",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let r = json_out(&o);
    assert_eq!(r["decision"]["action"], "confirm", "{r}");
    assert_eq!(r["readOnly"], false);
    assert_eq!(r["arguments"]["text"], "x");
}

#[test]
fn exec_calls_of_only_mcp_tools_need_no_registry() {
    let Some(sb) = sandbox("ok") else { return };
    let calls = |names: &[&str]| -> String {
        let list: Vec<Value> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                json!({"id": format!("c{i}"), "type": "function",
                "function": {"name": n, "arguments": "{\"message\":\"hi\"}"}})
            })
            .collect();
        let doc = json!({"choices": [{"message": {"role": "assistant", "tool_calls": list}}]});
        let f = sb.write(&format!("proj/calls-{}.json", names.len()), doc.to_string());
        f.to_str().unwrap().to_string()
    };
    // No scan ever ran here: there is no registry.json.
    assert!(!sb.path().join("data/registry.json").exists());
    let only_mcp = calls(&["mcp__fake__echo"]);
    let o = run(
        &sb,
        &[
            "exec",
            "--calls",
            &only_mcp,
            "--provider",
            "openai",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let m = &json_out(&o)[0];
    let content: Value = serde_json::from_str(m["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["content"][0]["text"], "Echo: hi", "{content}");
    // A batch that also names a command still needs the registry, and says so.
    let mixed = calls(&["mcp__fake__echo", "t_echo"]);
    let o = run(
        &sb,
        &[
            "exec",
            "--calls",
            &mixed,
            "--provider",
            "openai",
            "--output",
            "json",
        ],
    );
    assert_ne!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("registry_not_found")
            || String::from_utf8_lossy(&o.stderr).contains("registry_not_found"),
        "{}",
        show(&o)
    );
}

#[test]
fn sessions_use_the_2026_07_28_discovery_and_fall_back_to_initialize() {
    let Some(sb) = sandbox("ok") else { return };
    common::tools::register(
        &sb,
        "t",
        &common::tools::t_meta(),
        "#!/bin/sh\necho hi\n",
        "native",
    );
    let data = format!("ATIP_DATA_DIR={}", sb.data_dir().display());
    let config = format!("ATIP_CONFIG_DIR={}", sb.config_dir().display());
    let state = format!("ATIP_STATE_DIR={}", sb.path().join("state").display());
    // atip's own server (rmcp) speaks 2026-07-28: `auto` discovers it, and the round
    // trip is a server/discover (2026-07-28 has no ping).
    let ping = |protocol: &str| {
        run(
            &sb,
            &[
                "mcp",
                "ping",
                "--command",
                env!("CARGO_BIN_EXE_atip"),
                "--arg",
                "mcp",
                "--env",
                &data,
                "--env",
                &config,
                "--env",
                &state,
                "--protocol",
                protocol,
                "--trace",
                "--output",
                "json",
            ],
        )
    };
    let o = ping("auto");
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(
        json_out(&o)["protocolVersion"],
        "2026-07-28",
        "{}",
        show(&o)
    );
    assert!(
        !stderr(&o).contains("\"method\":\"initialize\""),
        "{}",
        show(&o)
    );
    assert!(
        stderr(&o).contains("\"method\":\"server/discover\""),
        "{}",
        show(&o)
    );
    let o = ping("modern");
    assert_eq!(
        json_out(&o)["protocolVersion"],
        "2026-07-28",
        "{}",
        show(&o)
    );
    let o = ping("legacy");
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(
        json_out(&o)["protocolVersion"],
        "2025-11-25",
        "{}",
        show(&o)
    );
    // A modern session lists and calls tools like a legacy one.
    let o = run(
        &sb,
        &[
            "mcp",
            "call",
            "t_echo",
            "--command",
            env!("CARGO_BIN_EXE_atip"),
            "--arg",
            "mcp",
            "--env",
            &data,
            "--env",
            &config,
            "--env",
            &state,
            "--args",
            r#"{"words":["modern"]}"#,
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(
        json_out(&o)["structuredContent"]["status"],
        "ok",
        "{}",
        show(&o)
    );
    // The fake server only knows `initialize`: auto falls back, modern refuses it.
    let o = run(&sb, &["mcp", "ping", "--output", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(json_out(&o)["protocolVersion"], "2025-06-18");
    let o = run(
        &sb,
        &["mcp", "ping", "--protocol", "modern", "--output", "json"],
    );
    assert_eq!(o.status.code(), Some(69), "{}", show(&o));
}

#[test]
fn tool_search_settings_are_the_search_defaults() {
    let Some(sb) = sandbox("ok") else { return };
    let path = sb.path().join("config/mcp.json");
    let mut cfg: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    cfg["toolSearch"] = json!({"defaultLimit": 2, "defaultSchemas": 1});
    std::fs::write(&path, cfg.to_string()).unwrap();
    let o = run(
        &sb,
        &[
            "search",
            "echo",
            "note",
            "fails",
            "token",
            "image",
            "--mcp-refresh",
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = json_out(&o);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{v}");
    assert!(results[0].get("schema").is_some(), "{v}");
    assert!(results[1].get("schema").is_none(), "{v}");
    // Flags still win.
    let o = run(
        &sb,
        &[
            "search",
            "echo",
            "note",
            "fails",
            "token",
            "image",
            "--limit",
            "4",
            "--schemas",
            "0",
            "--output",
            "json",
        ],
    );
    let v = json_out(&o);
    assert_eq!(v["results"].as_array().unwrap().len(), 4, "{v}");
    assert!(v["results"][0].get("schema").is_none(), "{v}");
}

#[test]
fn import_copies_host_servers_without_expanding_secrets() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("proj/.vscode")).unwrap();
    sb.write(
        "proj/.vscode/mcp.json",
        json!({"servers": {"gh": {"type": "stdio", "command": "gh-mcp", "env": {"GH_TOKEN": "${MY_SECRET}"}}},
               "inputs": []})
        .to_string(),
    );
    let o = run(
        &sb,
        &["mcp", "import", "vscode", "--dry-run", "--output", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(json_out(&o)["imported"], json!(["gh"]));
    assert!(!sb.config_dir().join("mcp.json").exists());
    let o = run(&sb, &["mcp", "import", "vscode", "--output", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let written = std::fs::read_to_string(sb.config_dir().join("mcp.json")).unwrap();
    assert!(
        written.contains("${MY_SECRET}") && !written.contains(SECRET),
        "{written}"
    );
    let o = run(&sb, &["mcp", "servers", "--output", "json"]);
    assert_eq!(json_out(&o)["servers"][0]["name"], "gh");
    // A second import keeps what is there.
    let o = run(&sb, &["mcp", "import", "vscode", "--output", "json"]);
    assert_eq!(json_out(&o)["imported"], json!([]));
}

pub(crate) fn everything_bin() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/test-deps/npm/node_modules/.bin/mcp-server-everything");
    let deps = std::env::var_os("ATIP_TEST_DEPS").map(PathBuf::from);
    let p = deps
        .map(|d| d.join("npm/node_modules/.bin/mcp-server-everything"))
        .filter(|p| p.exists())
        .unwrap_or(p);
    if p.exists() && which::which("node").is_ok() {
        Some(p)
    } else {
        common::skip(
            "@modelcontextprotocol/server-everything not installed (run .ci/setup-test-deps)",
        );
        None
    }
}

/// The sandbox PATH plus node's directory (the npm bin is a `#!/usr/bin/env node` script).
pub(crate) fn with_node(c: &mut Command) {
    let node = which::which("node").unwrap();
    let dir = node.parent().unwrap().display().to_string();
    c.env("PATH", format!("{dir}:/usr/bin:/bin"));
}

#[test]
fn the_reference_everything_server_over_stdio() {
    let Some(bin) = everything_bin() else { return };
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("proj")).unwrap();
    sb.write(
        "config/mcp.json",
        json!({"mcpServers": {"everything": {"command": bin, "args": ["stdio"]}}}).to_string(),
    );
    let mut c = atip(&sb);
    with_node(&mut c);
    let o = c
        .args(["mcp", "tools", "--output", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = json_out(&o);
    let tools = v["servers"][0]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "get-sum"), "{v}");
    let mut c = atip(&sb);
    with_node(&mut c);
    let o = c
        .args([
            "mcp",
            "call",
            "get-sum",
            "--args",
            r#"{"a": 2, "b": 40}"#,
            "--output",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        json_out(&o)["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("42"),
        "{}",
        show(&o)
    );
    // Schema validation happens before sending: a string is not a number.
    let mut c = atip(&sb);
    with_node(&mut c);
    let o = c
        .args(["mcp", "call", "get-sum", "--args", r#"{"a": "2", "b": 40}"#])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(65), "{}", show(&o));
    let mut c = atip(&sb);
    with_node(&mut c);
    let o = c
        .args([
            "mcp",
            "call",
            "get-tiny-image",
            "--compact",
            "--output",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("bytes of base64 omitted"), "{text}");
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub(crate) fn wait_port(port: u16) -> bool {
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

pub(crate) struct Killed(pub(crate) std::process::Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_reference_everything_server_over_streamable_http() {
    let Some(bin) = everything_bin() else { return };
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("proj")).unwrap();
    let port = free_port();
    let mut server = Command::new(&bin);
    with_node(&mut server);
    let _server = Killed(
        server
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(
        wait_port(port),
        "everything server did not listen on {port}"
    );
    let url = format!("http://127.0.0.1:{port}/mcp");
    sb.write(
        "config/mcp.json",
        json!({"mcpServers": {"ev": {"type": "http", "url": url, "headers": {"X-Api-Key": "${MY_SECRET}"}}}}).to_string(),
    );
    let o = run(&sb, &["mcp", "ping", "--output", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = json_out(&o);
    assert_eq!(v["transport"], "http");
    assert!(v["capabilities"]["tools"].is_object(), "{v}");
    let o = run(
        &sb,
        &[
            "mcp",
            "call",
            "echo",
            "--args",
            r#"{"message":"over http"}"#,
            "--output",
            "json",
            "--trace",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(json_out(&o)["content"][0]["text"], "Echo: over http");
    assert!(!stderr(&o).contains(SECRET));
    let o = run(
        &sb,
        &[
            "mcp",
            "call",
            "get-structured-content",
            "--args",
            r#"{"location":"New York"}"#,
            "--output",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        json_out(&o)["structuredContent"].is_object(),
        "{}",
        show(&o)
    );
}

#[test]
fn the_reference_git_server_over_stdio() {
    let root = std::env::var_os("ATIP_TEST_DEPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-deps"));
    let bin = root.join("venv/bin/mcp-server-git");
    let Ok(git) = which::which("git") else {
        common::skip("git not found");
        return;
    };
    if !bin.exists() {
        common::skip("mcp-server-git not installed (run .ci/setup-test-deps)");
        return;
    }
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("proj")).unwrap();
    let repo = sb.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let st = Command::new(&git)
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::write(repo.join("hello.txt"), "hi\n").unwrap();
    sb.write(
        "config/mcp.json",
        json!({"mcpServers": {"git": {"command": bin, "args": ["--repository", repo]}}})
            .to_string(),
    );
    let o = run(
        &sb,
        &["mcp", "tools", "--output", "json", "--timeout", "60s"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v = json_out(&o);
    assert!(
        v["servers"][0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "git_status"),
        "{v}"
    );
    let o = run(
        &sb,
        &[
            "mcp",
            "call",
            "git_status",
            "--args",
            &json!({"repo_path": repo}).to_string(),
            "--output",
            "json",
            "--timeout",
            "60s",
            "--yes",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        json_out(&o)["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hello.txt"),
        "{}",
        show(&o)
    );
}
