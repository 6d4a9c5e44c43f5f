//! Nothing outlives atip (issue 30, item 9): ended the ways hosts end it — SIGTERM,
//! SIGHUP, SIGINT, the host closing stdin — `exec`, `mcp` (stdio), `mcp call` and `chat`
//! kill the process groups they started (every tool runs in a session of its own, so
//! the signal never reaches it) and exit 128 + the signal's number
//! (spec/exit-codes.md, "Signals"). Real binary, real tools that fork grandchildren.

use crate::common;

use common::tools::register;
use common::{Sandbox, assert_dead, show};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A tool `grp` whose `hold` command forks a grandchild that sleeps, then writes both
/// pids (the tool's and the grandchild's) to `pids` in its working directory and waits.
fn sandbox_with_holder() -> Sandbox {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("home")).unwrap();
    let meta = json!({
        "atip": {"version": "0.6"}, "name": "grp", "version": "1", "description": "Holds",
        "commands": {"hold": {"description": "Fork a sleeper and wait",
                     "effects": {"destructive": false, "idempotent": true, "filesystem": {"read": true, "write": false}}}}
    });
    register(
        &sb,
        "grp",
        &meta,
        "#!/bin/sh\nsleep 300 &\necho \"$$ $!\" > pids.tmp\nmv pids.tmp pids\nwait\n",
        "native",
    );
    sb
}

/// The pids in `file` once it appears (bounded wait on the event, not a sleep).
fn pids_in(file: &Path) -> Vec<i32> {
    let until = Instant::now() + Duration::from_secs(15);
    while !file.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let pids: Vec<i32> = text
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert!(!pids.is_empty());
    for &p in &pids {
        assert!(common::alive(p), "process {p} is not running yet");
    }
    pids
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// Waits for `child` (at most 20 s, then kills it and fails).
fn finish(mut child: Child) -> std::process::Output {
    let until = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!(
                "atip did not exit: {}",
                show(&child.wait_with_output().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

const SIGNALS: [(i32, i32); 3] = [
    (libc::SIGTERM, 143),
    (libc::SIGHUP, 129),
    (libc::SIGINT, 130),
];

#[test]
fn exec_ended_by_a_signal_kills_the_tools_group_and_exits_128_plus_the_signal() {
    for (sig, status) in SIGNALS {
        let sb = sandbox_with_holder();
        let child = sb
            .atip()
            .args(["--output", "json", "exec", "grp_hold", "--timeout", "120s"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pids = pids_in(&sb.path().join("pids"));
        signal(&child, sig);
        let out = finish(child);
        for p in pids {
            assert_dead(p);
        }
        assert_eq!(
            out.status.code(),
            Some(status),
            "signal {sig}: {}",
            show(&out)
        );
        let err: Value = serde_json::from_slice(&out.stderr).unwrap_or(Value::Null);
        assert_eq!(err["error"]["code"], "cancelled", "{}", show(&out));
    }
}

#[test]
fn exec_batch_ended_by_sigterm_kills_every_running_group() {
    let sb = sandbox_with_holder();
    let doc = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "grp_hold", "arguments": "{}"}}
    ]}}]})
    .to_string();
    let mut child = sb
        .atip()
        .args([
            "--output",
            "json",
            "exec",
            "--calls",
            "-",
            "--provider",
            "openai",
        ])
        .args(["--timeout", "120s"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(doc.as_bytes())
        .unwrap();
    let pids = pids_in(&sb.path().join("pids"));
    signal(&child, libc::SIGTERM);
    let out = finish(child);
    for p in pids {
        assert_dead(p);
    }
    assert_eq!(out.status.code(), Some(143), "{}", show(&out));
}

/// `atip mcp` on stdio, initialized, with a `grp_hold` call running; returns the
/// server, its stdin, and the pids of the call's group.
fn mcp_with_a_running_call(sb: &Sandbox) -> (Child, std::process::ChildStdin, Vec<i32>) {
    let mut child = sb
        .atip()
        .args(["mcp", "--timeout", "120s"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut send = |s: &str| {
        stdin.write_all(s.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let init: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "atip");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"grp_hold","arguments":{}}}"#,
    );
    let pids = pids_in(&sb.path().join("pids"));
    (child, stdin, pids)
}

#[test]
fn mcp_stdio_ended_by_a_signal_kills_the_running_calls_group() {
    for (sig, status) in SIGNALS {
        let sb = sandbox_with_holder();
        let (child, stdin, pids) = mcp_with_a_running_call(&sb);
        signal(&child, sig);
        let out = finish(child);
        drop(stdin);
        for p in pids {
            assert_dead(p);
        }
        assert_eq!(
            out.status.code(),
            Some(status),
            "signal {sig}: {}",
            show(&out)
        );
    }
}

#[test]
fn mcp_stdio_whose_host_closes_stdin_mid_call_kills_the_calls_group() {
    let sb = sandbox_with_holder();
    let (child, stdin, pids) = mcp_with_a_running_call(&sb);
    drop(stdin);
    let out = finish(child);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    for p in pids {
        assert_dead(p);
    }
}

#[test]
fn mcp_call_ended_by_a_signal_kills_the_servers_group() {
    let py = which_python();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/fake_server.py");
    for (sig, status) in SIGNALS {
        let sb = Sandbox::new();
        std::fs::create_dir_all(sb.path().join("home")).unwrap();
        // The server forks a sleeper into its group first, then becomes the fake server
        // (which writes its own pid), and its `hang` tool never answers.
        let launch = format!(
            "sleep 300 & echo $! > '{}'; exec '{}' '{}' ok",
            sb.path().join("sleeper.pid").display(),
            py,
            script.display()
        );
        let cfg = json!({"mcpServers": {"h": {
            "command": "/bin/sh", "args": ["-c", launch],
            "env": {"FAKE_PIDFILE": sb.path().join("server.pid")}}}});
        sb.write("config/mcp.json", cfg.to_string());
        let child = sb
            .atip()
            .args([
                "--output",
                "json",
                "mcp",
                "call",
                "hang",
                "--timeout",
                "120s",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pids = pids_in(&sb.path().join("sleeper.pid"));
        pids.extend(pids_in(&sb.path().join("server.pid")));
        signal(&child, sig);
        let out = finish(child);
        for p in pids {
            assert_dead(p);
        }
        assert_eq!(
            out.status.code(),
            Some(status),
            "signal {sig}: {}",
            show(&out)
        );
    }
}

fn which_python() -> String {
    for p in ["/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"] {
        if Path::new(p).exists() {
            return p.to_string();
        }
    }
    panic!("python3 is needed for the fake MCP server (install it: .ci/setup-test-deps)");
}
