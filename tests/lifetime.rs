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
    // Written in one write(2), possibly after the file was created empty.
    let until = Instant::now() + Duration::from_secs(15);
    let mut text = String::new();
    while text.trim().is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
        text = std::fs::read_to_string(file).unwrap_or_default();
    }
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

/// One HTTP/1.1 POST of `body` to `addr`/mcp with the bearer token (and a session):
/// the status line's code, the session id header, and the body.
fn post(addr: &str, session: Option<&str>, body: &str) -> (u16, Option<String>, String) {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(id) = session {
        req.push_str(&format!(
            "Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n"
        ));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let session = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("mcp-session-id")
            .then(|| v.trim().to_string())
    });
    (code, session, body.to_string())
}

const HTTP_TOKEN: &str = "lifetime-token-0123456789abcdef0123";

#[test]
fn mcp_http_ended_by_a_signal_kills_the_running_calls_group() {
    for (sig, status) in SIGNALS {
        let sb = sandbox_with_holder();
        let mut child = sb
            .atip()
            .args(["mcp", "serve", "--http", "127.0.0.1:0", "--timeout", "120s"])
            .env("ATIP_MCP_TOKEN", HTTP_TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next().expect("no banner").unwrap();
            if let Some(i) = line.find("http://") {
                let url = line[i + 7..].split(' ').next().unwrap();
                break url.trim_end_matches("/mcp").to_string();
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"}}});
        let (code, session, body) = post(&addr, None, &init.to_string());
        assert_eq!(code, 200, "{body}");
        let session = session.expect("a session id");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        post(&addr, Some(&session), &note.to_string());
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "grp_hold", "arguments": {}}});
        let caller = {
            let (addr, session) = (addr.clone(), session.clone());
            std::thread::spawn(move || post(&addr, Some(&session), &call.to_string()))
        };
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
        let _ = caller.join();
    }
}

#[test]
fn a_signal_the_host_ignores_stays_ignored() {
    // `nohup atip …`: SIGHUP ignored by the parent is not taken over by atip; SIGTERM
    // still ends the run as usual.
    use std::os::unix::process::CommandExt;
    let sb = sandbox_with_holder();
    let mut cmd = sb.atip();
    cmd.args(["--output", "json", "exec", "grp_hold", "--timeout", "120s"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only signal(2) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let child = cmd.spawn().unwrap();
    let pids = pids_in(&sb.path().join("pids"));
    signal(&child, libc::SIGHUP);
    // atip ignores it (the disposition it inherited): prove it by the next signal's
    // status, which would be 129 had SIGHUP counted.
    let status_file = format!("/proc/{}/status", child.id());
    let ignored = std::fs::read_to_string(&status_file).unwrap_or_default();
    let sig_ign = ignored
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .map(|h| u64::from_str_radix(h.trim(), 16).unwrap())
        .unwrap_or(0);
    assert_ne!(
        sig_ign & (1 << (libc::SIGHUP - 1)),
        0,
        "SIGHUP is not ignored"
    );
    signal(&child, libc::SIGTERM);
    let out = finish(child);
    for p in pids {
        assert_dead(p);
    }
    assert_eq!(out.status.code(), Some(143), "{}", show(&out));
}
