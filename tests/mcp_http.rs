//! Attacks on `atip mcp serve`'s consent: another local user driving the HTTP listener,
//! a client forging the confirmation (`requestState`), an argument redrawing the
//! confirmation prompt, and a client exhausting the listener (sessions, slow headers,
//! descriptors). Each drives the real binary; the payload is `t_delete`, which writes
//! `deleted.txt`, and a test fails if that marker appears when it must not.

use crate::common;

use common::Sandbox;
use common::tools::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Map, Value, json};
use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "test-token-0123456789abcdef0123456789";

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A running HTTP server: its address and everything it wrote on stderr so far.
struct Served {
    _child: Killed,
    addr: String,
    stderr: Arc<Mutex<String>>,
}

impl Served {
    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits (bounded) until stderr holds `what`.
    fn wait_for(&self, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let e = self.stderr();
            if e.contains(what) {
                return e;
            }
            assert!(Instant::now() < deadline, "no {what:?} on stderr: {e}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `atip mcp serve --http 127.0.0.1:0 EXTRA…` under `cmd` (an `atip` command, maybe
/// wrapped), once its banner is out.
fn serve(mut cmd: Command) -> Served {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let stderr = Arc::new(Mutex::new(String::new()));
    let addr = loop {
        let line = lines
            .next()
            .expect("server exited before its banner")
            .unwrap();
        stderr.lock().unwrap().push_str(&line);
        stderr.lock().unwrap().push('\n');
        if let Some(i) = line.find("http://") {
            let url = line[i + 7..].split(' ').next().unwrap();
            break url.trim_end_matches("/mcp").to_string();
        }
    };
    // The generated-token lines follow the banner; keep reading in the background.
    let sink = stderr.clone();
    std::thread::spawn(move || {
        for l in lines.map_while(Result::ok) {
            let mut s = sink.lock().unwrap();
            s.push_str(&l);
            s.push('\n');
        }
    });
    Served {
        _child: Killed(child),
        addr,
        stderr,
    }
}

fn atip_http(sb: &Sandbox, extra: &[&str]) -> Command {
    let mut cmd = sb.atip();
    cmd.args(["mcp", "serve", "--http", "127.0.0.1:0"])
        .args(extra);
    cmd
}

/// A policy that lets `t_delete` run without confirmation: what stands between another
/// local user and the payload is then the credential alone.
fn allow_delete(sb: &Sandbox) -> String {
    sb.write(
        "allow.json",
        r#"{"effects": {"destructive": "allow", "filesystemDelete": "allow"}}"#,
    )
    .to_str()
    .unwrap()
    .to_string()
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`): status, headers
/// (lower-cased names) and body.
fn http(
    addr: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, body.to_string())
}

fn header<'a>(h: &'a [(String, String)], name: &str) -> Option<&'a str> {
    h.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// A JSON-RPC POST to the MCP endpoint with `token` (if any) and `session` (if any).
fn rpc(
    addr: &str,
    token: Option<&str>,
    session: Option<&str>,
    msg: Value,
) -> (u16, Vec<(String, String)>, String) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut h = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(a) = &auth {
        h.push(("Authorization", a));
    }
    if let Some(s) = session {
        h.push(("Mcp-Session-Id", s));
        h.push(("MCP-Protocol-Version", "2025-06-18"));
    }
    http(addr, "POST", &h, &msg.to_string())
}

fn initialize(addr: &str, token: &str) -> String {
    let (status, h, body) = rpc(
        addr,
        Some(token),
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"}}}),
    );
    assert_eq!(status, 200, "{h:?} {body}");
    let id = header(&h, "mcp-session-id")
        .expect("a session id")
        .to_string();
    let (status, _, body) = rpc(
        addr,
        Some(token),
        Some(&id),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(status, 202, "{body}");
    id
}

fn call_delete(target: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
           "params": {"name": "t_delete", "arguments": {"target": target}}})
}

#[test]
fn loopback_listener_refuses_clients_without_the_token() {
    let sb = sandbox_with_t();
    let policy = allow_delete(&sb);
    // No token in the environment: one is drawn and printed once, with how to use it.
    let s = serve(atip_http(&sb, &["--policy", &policy]));
    let err = s.wait_for("Authorization: Bearer ");
    let token = err
        .split("bearer token is ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .unwrap_or_else(|| panic!("no generated token on stderr: {err}"))
        .to_string();
    assert_eq!(token.len(), 64, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(
        err.matches(&token).count(),
        2,
        "printed once (one line + usage): {err}"
    );

    // Another local user, without the token: every way in is 401, nothing runs.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "intruder", "version": "1"}}});
    let (status, h, _) = rpc(&s.addr, None, None, init.clone());
    assert_eq!(status, 401);
    assert_eq!(header(&h, "www-authenticate"), Some("Bearer"));
    assert_eq!(rpc(&s.addr, Some("guess"), None, init.clone()).0, 401);
    assert_eq!(rpc(&s.addr, Some(&token[..63]), None, init.clone()).0, 401);
    // A 2026-07-28 stateless call straight to the tool, and the client of atip itself.
    let mut stateless = call_delete("db");
    stateless["params"]["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    assert_eq!(rpc(&s.addr, None, None, stateless).0, 401);
    let url = format!("http://{}/mcp", s.addr);
    let o = sb
        .atip()
        .args([
            "mcp",
            "call",
            "t_delete",
            "--url",
            &url,
            "--args",
            r#"{"target":"db"}"#,
            "--yes",
        ])
        .env("ATIP_CACHE_DIR", sb.path().join("cache"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(69), "{}", common::show(&o));
    assert!(!sb.path().join("deleted.txt").exists(), "the payload ran");

    // The user's own client, with the token: the same call runs (the marker is real).
    let auth = format!("Authorization: Bearer {token}");
    let o = sb
        .atip()
        .args(["mcp", "call", "t_delete", "--url", &url, "--header", &auth])
        .args(["--args", r#"{"target":"db"}"#, "--yes", "--output", "json"])
        .env("ATIP_CACHE_DIR", sb.path().join("cache"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::show(&o));
    assert!(sb.path().join("deleted.txt").exists());
    drop(s);

    // A token from the environment is used instead, and never printed.
    let mut cmd = atip_http(&sb, &[]);
    cmd.env("ATIP_MCP_TOKEN", TOKEN);
    let s = serve(cmd);
    let (status, _, _) = rpc(&s.addr, None, None, init.clone());
    assert_eq!(status, 401);
    initialize(&s.addr, TOKEN);
    assert!(!s.stderr().contains(TOKEN), "{}", s.stderr());
    assert!(!s.stderr().contains("bearer token is"), "{}", s.stderr());
}

/// A client of the given protocol era that answers elicitation by accepting, and
/// records the messages it was shown.
#[derive(Clone, Default)]
struct Recorder {
    shown: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap();
        ClientConfig::new(caps, Implementation::new("recorder", "1"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            panic!("expected a form elicitation");
        };
        let mut shown = self.shown.lock().unwrap();
        shown.push(message);
        strings(
            &serde_json::to_value(&requested_schema).unwrap(),
            &mut shown,
        );
        // Decline: these tests look at what was shown, not at running.
        Ok(ElicitResult::new(ElicitationAction::Decline))
    }
}

fn stdio(sb: &Sandbox) -> TokioChildProcess {
    let mut cmd = sb.atip();
    cmd.arg("mcp");
    TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
        .0
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn delete(target: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("t_delete").with_arguments(args(json!({"target": target})))
}

/// `delete(target)` carrying an accepted, ticked answer and `state`.
fn answered(target: &str, state: Option<String>) -> CallToolRequestParams {
    let mut p = delete(target);
    let mut responses = std::collections::BTreeMap::new();
    responses.insert(
        "confirm".to_string(),
        json!({"action": "accept", "content": {"confirm": true}}),
    );
    p.input_responses = Some(responses);
    p.request_state = state;
    p
}

fn declined(r: CallToolResponse) {
    match r {
        CallToolResponse::Complete(r) => assert_eq!(
            r.structured_content.as_ref().unwrap()["error"]["code"],
            "confirmation_declined",
            "{r:?}"
        ),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn state_of(r: CallToolResponse) -> String {
    match r {
        CallToolResponse::InputRequired(r) => r.request_state.expect("a requestState"),
        other => panic!("expected input_required, got {other:?}"),
    }
}

/// The old token: public SHA-256 of the tool name and its arguments.
fn v1_state(name: &str, a: &Value) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update(b"\0");
    h.update(serde_json::to_vec(a).unwrap());
    format!("atip-confirm-v1:{}", hex::encode(h.finalize()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_replayed_and_foreign_confirmations_do_not_run() {
    let sb = sandbox_with_t();
    let marker = sb.path().join("deleted.txt");
    let modern = || ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let a = Recorder::default()
        .serve_with_lifecycle(stdio(&sb), modern())
        .await
        .unwrap();
    // 1. inputResponses with no input_required before: with the old public hash as
    //    state, with no state, with a made-up state of the new shape.
    let forged = v1_state("t_delete", &json!({"target": "x"}));
    declined(a.call_tool_once(answered("x", Some(forged))).await.unwrap());
    declined(a.call_tool_once(answered("x", None)).await.unwrap());
    let made_up = format!("atip-confirm-v2:{}.{}", "00".repeat(16), "11".repeat(32));
    declined(
        a.call_tool_once(answered("x", Some(made_up)))
            .await
            .unwrap(),
    );
    assert!(!marker.exists(), "a forged confirmation ran the call");

    // 2. A genuine token, but for other arguments.
    let state = state_of(a.call_tool_once(delete("y")).await.unwrap());
    declined(
        a.call_tool_once(answered("x", Some(state.clone())))
            .await
            .unwrap(),
    );
    assert!(!marker.exists(), "a confirmation of y ran x");

    // 3. A token from another session (another server process): refused there.
    let b = Recorder::default()
        .serve_with_lifecycle(stdio(&sb), modern())
        .await
        .unwrap();
    declined(
        b.call_tool_once(answered("y", Some(state.clone())))
            .await
            .unwrap(),
    );
    assert!(
        !marker.exists(),
        "another session's confirmation ran the call"
    );
    b.cancel().await.unwrap();

    // 4. The genuine retry runs once (the path works); replaying it does not.
    let r = a
        .call_tool_once(answered("y", Some(state.clone())))
        .await
        .unwrap();
    assert!(
        matches!(&r, CallToolResponse::Complete(r) if r.is_error == Some(false)),
        "{r:?}"
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "deleted y\n");
    std::fs::remove_file(&marker).unwrap();
    declined(a.call_tool_once(answered("y", Some(state))).await.unwrap());
    assert!(
        !marker.exists(),
        "a replayed confirmation ran the call again"
    );
    a.cancel().await.unwrap();

    // 5. A session with the initialize handshake is asked through elicitation; answers
    //    it carries itself are never taken (here: the old hash, which used to pass).
    let legacy = Recorder::default().serve(stdio(&sb)).await.unwrap();
    let forged = v1_state("t_delete", &json!({"target": "x"}));
    declined(
        legacy
            .call_tool_once(answered("x", Some(forged)))
            .await
            .unwrap(),
    );
    assert!(!marker.exists(), "a forged confirmation ran the call");
    legacy.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirmation_texts_escape_control_characters() {
    let sb = sandbox_with_t();
    let hostile = "x\r\x1b[2Kgit status \u{202e}";
    // Elicitation (initialize sessions): message and form both escaped.
    let rec = Recorder::default();
    let c = rec.clone().serve(stdio(&sb)).await.unwrap();
    let r = c.call_tool(delete(hostile)).await.unwrap();
    assert_eq!(
        r.structured_content.as_ref().unwrap()["error"]["code"],
        "confirmation_declined"
    );
    c.cancel().await.unwrap();
    let shown = rec.shown.lock().unwrap().join("\n");
    assert!(!shown.is_empty());
    for raw in ['\r', '\x1b', '\u{202e}'] {
        assert!(!shown.contains(raw), "raw {raw:?} in {shown:?}");
    }
    assert!(shown.contains(r"x\r\e[2Kgit status \u{202e}"), "{shown}");
    // input_required (2026-07-28 sessions): the request it carries, escaped too.
    let c = Recorder::default()
        .serve_with_lifecycle(
            stdio(&sb),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    let CallToolResponse::InputRequired(ir) = c.call_tool_once(delete(hostile)).await.unwrap()
    else {
        panic!("expected input_required");
    };
    let mut texts = Vec::new();
    strings(
        &serde_json::to_value(&ir.input_requests).unwrap(),
        &mut texts,
    );
    let shown = texts.join("\n");
    for raw in ['\r', '\x1b', '\u{202e}'] {
        assert!(!shown.contains(raw), "raw {raw:?} in {shown:?}");
    }
    assert!(shown.contains(r"x\r\e[2Kgit status \u{202e}"), "{shown}");
    c.cancel().await.unwrap();
    assert!(!sb.path().join("deleted.txt").exists());
}

/// Every string in `v`.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(m) => m.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// Runs `atip exec t_delete` on a pseudo-terminal, answers the prompt `answer`, and
/// returns every byte atip wrote to the terminal.
const PTY: &str = r#"
import os, pty, sys
argv, answer = sys.argv[1:-1], sys.argv[-1]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
seen = b""
while b"Confirm [y/N]: " not in seen:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
os.write(fd, answer.encode() + b"\n")
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
os.waitpid(pid, 0)
sys.stdout.buffer.write(seen)
"#;

/// Runs `atip ARGS…` in `sb` on a pseudo-terminal, answers its prompt `n`, and returns
/// the text of the question (everything before `Confirm [y/N]: `) and all it wrote.
fn prompt_on_tty(sb: &Sandbox, py: &std::path::Path, args: &[&str]) -> (String, String) {
    let script = sb.write("on_tty.py", PTY);
    // The sandbox's environment, but python3 in between to hold the terminal.
    let atip_cmd = sb.atip();
    let mut cmd = Command::new(py);
    cmd.env_clear();
    for (k, v) in atip_cmd.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.current_dir(sb.path())
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_atip"))
        .args(args)
        .arg("n");
    let o = cmd.output().unwrap();
    let seen = String::from_utf8_lossy(&o.stdout).into_owned();
    let Some(end) = seen.find("Confirm [y/N]: ") else {
        panic!("no prompt: {seen:?} {}", common::show(&o));
    };
    (seen[..end].to_string(), seen)
}

#[test]
fn terminal_prompts_show_arguments_escaped() {
    // python3 for a pseudo-terminal (installed by .ci/setup-test-deps).
    let Some(py) = crate::mcp_client::python() else {
        common::skip("python3 (pty module)");
        return;
    };
    // `atip exec`: the argument erases the line and draws an innocent command.
    let sb = sandbox_with_t();
    let target = "/\r\x1b[2K\x1b[1Aatip: run `git status`? \u{202e}";
    let a = json!({ "target": target }).to_string();
    let (prompt, _) = prompt_on_tty(&sb, &py, &["exec", "t_delete", "--args", &a]);
    for raw in ['\x1b', '\u{202e}'] {
        assert!(
            !prompt.contains(raw),
            "raw {raw:?} in the prompt: {prompt:?}"
        );
    }
    assert!(!prompt.contains("/\r"), "raw CR in the prompt: {prompt:?}");
    assert!(prompt.contains(r"\r\e[2K\e[1Aatip: run"), "{prompt:?}");
    assert!(
        !sb.path().join("deleted.txt").exists(),
        "declined, yet it ran"
    );

    // `atip mcp call`: the question names the arguments too, escaped.
    let Some(sb) = crate::mcp_client::sandbox("ok") else {
        return;
    };
    let a = json!({ "text": target }).to_string();
    let (prompt, seen) = prompt_on_tty(&sb, &py, &["mcp", "call", "write_note", "--args", &a]);
    assert!(prompt.contains("fake write_note"), "{prompt:?}");
    assert!(
        prompt.contains(r#""text":"#),
        "arguments not shown: {prompt:?}"
    );
    for raw in ['\x1b', '\u{202e}'] {
        assert!(
            !prompt.contains(raw),
            "raw {raw:?} in the prompt: {prompt:?}"
        );
    }
    assert!(prompt.contains(r"\u{202e}"), "{prompt:?}");
    // Declined: the server never got the call (it would answer "noted: …").
    assert!(!seen.contains("noted:"), "declined, yet it ran: {seen:?}");
}

#[test]
fn slow_client_is_disconnected() {
    let sb = sandbox_with_t();
    let mut cmd = atip_http(&sb, &["--header-timeout", "300ms"]);
    cmd.env("ATIP_MCP_TOKEN", TOKEN);
    let s = serve(cmd);
    let mut conn = TcpStream::connect(&s.addr).unwrap();
    // Half a header, then nothing: the server must hang up, not wait forever. (The read
    // timeout only bounds a failing test; the server's own timeout is 300 ms.)
    conn.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthoriza")
        .unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut buf = Vec::new();
    match conn.read_to_end(&mut buf) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the server kept the half-sent request open: {e}"),
    }
    // An idle kept-alive connection (no request at all) is closed the same way.
    let mut idle = TcpStream::connect(&s.addr).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut buf = Vec::new();
    match idle.read_to_end(&mut buf) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the server kept an idle connection open: {e}"),
    }
    // The server still serves.
    initialize(&s.addr, TOKEN);
}

#[test]
fn session_cap_closes_the_least_recently_used() {
    let sb = sandbox_with_t();
    let mut cmd = atip_http(&sb, &["--max-sessions", "3"]);
    cmd.env("ATIP_MCP_TOKEN", TOKEN);
    let s = serve(cmd);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let ids: Vec<String> = (0..3).map(|_| initialize(&s.addr, TOKEN)).collect();
    // Use the first again: the second is now the least recently used.
    assert_eq!(
        rpc(&s.addr, Some(TOKEN), Some(&ids[0]), list.clone()).0,
        200
    );
    let fourth = initialize(&s.addr, TOKEN);
    assert_eq!(
        rpc(&s.addr, Some(TOKEN), Some(&ids[1]), list.clone()).0,
        404
    );
    for id in [&ids[0], &ids[2], &fourth] {
        let (status, _, body) = rpc(&s.addr, Some(TOKEN), Some(id), list.clone());
        assert_eq!(status, 200, "{body}");
    }
    // Many more: never more than three at once (each new one evicts one).
    let mut last = Vec::new();
    for _ in 0..40 {
        last.push(initialize(&s.addr, TOKEN));
    }
    let alive = last
        .iter()
        .chain(&ids)
        .filter(|id| rpc(&s.addr, Some(TOKEN), Some(id), list.clone()).0 == 200)
        .count();
    assert_eq!(alive, 3);
    assert_eq!(
        s.stderr().matches("--max-sessions").count(),
        1,
        "{}",
        s.stderr()
    );
}

#[test]
fn descriptor_exhaustion_backs_off_and_recovers() {
    let sb = sandbox_with_t();
    // A low descriptor limit for the server alone; connections are allowed past it.
    let mut cmd = Command::new("/bin/sh");
    let atip = sb.atip();
    cmd.env_clear();
    for (k, v) in atip.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.env("ATIP_MCP_TOKEN", TOKEN)
        .current_dir(sb.path())
        .args([
            "-c",
            r#"ulimit -n 64 && exec "$0" mcp serve --http 127.0.0.1:0 --max-connections 1000"#,
            env!("CARGO_BIN_EXE_atip"),
        ]);
    let s = serve(cmd);
    let mut held = Vec::new();
    for _ in 0..100 {
        held.push(TcpStream::connect(&s.addr).unwrap());
    }
    s.wait_for("accept failed");
    drop(held);
    // Recovers once descriptors are free again (each held connection is closed by the
    // server when it sees the client gone).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, _, _) = rpc(
            &s.addr,
            Some(TOKEN),
            None,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "probe", "version": "1"}}}),
        );
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "never recovered: {}", s.stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
    // One warning per burst of failures, each burst's end reported (it used to be one
    // warning per failed accept: gigabytes, at 100% CPU). Closed connections still in
    // the listen queue can start a second short burst, so count bursts, not one.
    let deadline = Instant::now() + Duration::from_secs(60);
    let err = loop {
        let err = s.stderr();
        let (bursts, ends) = (
            err.matches("accept failed").count(),
            err.matches("accepting connections again").count(),
        );
        if bursts == ends {
            break err;
        }
        assert!(Instant::now() < deadline, "a burst never ended: {err}");
        // A burst ends when a connection is accepted: a burst that began on the last
        // closed connection in the listen queue waits for the next one, so make it.
        drop(TcpStream::connect(&s.addr));
        std::thread::sleep(Duration::from_millis(20));
    };
    let bursts = err.matches("accept failed").count();
    assert!((1..=10).contains(&bursts), "{bursts} warnings: {err}");
}
