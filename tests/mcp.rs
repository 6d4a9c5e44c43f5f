//! `atip mcp` end to end: the real binary driven by the rmcp client over stdio.

use crate::common;

use common::Sandbox;
use common::alive;
use common::tools::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ErrorCode, Implementation,
    PaginatedRequestParams, ProtocolVersion, Request,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, PeerRequestOptions, RequestContext, RoleClient,
    RunningService, ServiceError,
};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Map, Value, json};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn atip_mcp(sb: &Sandbox, extra: &[&str]) -> TokioChildProcess {
    let mut cmd = sb.atip();
    cmd.arg("mcp").args(extra);
    let (proc, _) = TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    proc
}

async fn client(sb: &Sandbox, extra: &[&str]) -> RunningService<RoleClient, ()> {
    ().serve(atip_mcp(sb, extra)).await.unwrap()
}

/// A client that answers elicitation with `accept` (box ticked) or `decline`.
#[derive(Clone)]
struct Confirmer {
    accept: bool,
}

impl ClientHandler for Confirmer {
    fn get_info(&self) -> ClientConfig {
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap();
        ClientConfig::new(caps, Implementation::new("confirmer", "1"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            panic!("expected a form elicitation");
        };
        assert!(message.contains("t delete"), "{message}");
        let mut r = ElicitResult::new(if self.accept {
            ElicitationAction::Accept
        } else {
            ElicitationAction::Decline
        });
        if self.accept {
            r.content = Some(json!({"confirm": true}));
        }
        Ok(r)
    }
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn call(name: &str, a: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_string()).with_arguments(args(a))
}

fn structured(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("structuredContent")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_list_and_call_a_read_only_tool() {
    let sb = sandbox_with_t();
    let c = client(&sb, &[]).await;
    let info = c.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "atip");
    assert!(info.capabilities.tools.is_some());

    let tools = c.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"t_echo") && names.contains(&"t_delete"));
    assert!(
        !names.contains(&"t_login"),
        "interactive commands are hidden"
    );
    let echo = tools.iter().find(|t| t.name == "t_echo").unwrap();
    let ann = echo.annotations.as_ref().unwrap();
    assert_eq!(ann.read_only_hint, Some(true));
    assert_eq!(echo.input_schema["additionalProperties"], json!(false));
    let del = tools.iter().find(|t| t.name == "t_delete").unwrap();
    assert_eq!(
        del.annotations.as_ref().unwrap().destructive_hint,
        Some(true)
    );
    // Deterministic order: the same list twice.
    let again: Vec<String> = c
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, again);

    let r = c
        .call_tool(call(
            "t_echo",
            json!({"words": ["; rm -rf ~", "$(id)"], "force": true}),
        ))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false));
    let s = structured(&r);
    assert_eq!(s["status"], "ok");
    assert_eq!(s["data"]["stdout"], "--force\0; rm -rf ~\0$(id)\0");
    let text = r.content[0].as_text().unwrap().text.clone();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), *s);

    let r = c.call_tool(call("t_json", json!({}))).await.unwrap();
    assert_eq!(structured(&r)["data"]["json"]["n"], 1);
    // A tool's non-zero exit: isError with the ok-shaped result.
    let r = c.call_tool(call("t_fail", json!({}))).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(structured(&r)["data"]["exitCode"], 3);
    c.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_and_unknown_tool() {
    let sb = sandbox_with_t();
    let c = client(&sb, &[]).await;
    let r = c
        .call_tool(call("t_echo", json!({"bogus": 1, "count": "many"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let e = &structured(&r)["error"];
    assert_eq!(e["code"], "args_invalid");
    assert_eq!(e["category"], "data");
    assert_eq!(e["details"]["violations"].as_array().unwrap().len(), 2);
    // "many" is no integer: nothing to suggest. A misspelt key is renamed.
    assert!(e.get("suggestion").is_none(), "{e}");
    let r = c
        .call_tool(call("t_echo", json!({"mesage": "hi"})))
        .await
        .unwrap();
    let e = &structured(&r)["error"];
    assert_eq!(e["suggestion"]["example"], json!({"message": "hi"}), "{e}");
    assert_eq!(e["suggestion"]["action"], "retry_with_modified_input");

    let r = c
        .call_tool(call("t_echo", json!({"file": "../../etc/passwd"})))
        .await
        .unwrap();
    assert_eq!(structured(&r)["error"]["code"], "path_outside_roots");

    let err = c.call_tool(call("t_ecko", json!({}))).await.unwrap_err();
    match err {
        ServiceError::McpError(e) => {
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
            assert!(e.message.contains("Unknown tool: t_ecko"));
            assert!(
                e.data.unwrap()["closest"]
                    .as_array()
                    .unwrap()
                    .contains(&json!("t_echo"))
            );
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
    // The session is still usable afterwards.
    let r = c.call_tool(call("t_json", json!({}))).await.unwrap();
    assert_eq!(r.is_error, Some(false));
    c.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destructive_tool_refused_without_elicitation() {
    let sb = sandbox_with_t();
    let c = client(&sb, &[]).await;
    let r = c
        .call_tool(call("t_delete", json!({"target": "db"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let e = &structured(&r)["error"];
    assert_eq!(e["code"], "confirmation_required");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("effects.destructive")
    );
    assert!(e["hint"].as_str().unwrap().contains("elicitation"));
    assert!(!sb.path().join("deleted.txt").exists());
    c.cancel().await.unwrap();

    // The policy may allow it outright.
    let pf = sb.write(
        "allow.json",
        r#"{"effects": {"destructive": "allow", "filesystemDelete": "allow"}}"#,
    );
    let c = client(&sb, &["--policy", pf.to_str().unwrap()]).await;
    let r = c
        .call_tool(call("t_delete", json!({"target": "db"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert!(sb.path().join("deleted.txt").exists());
    c.cancel().await.unwrap();
    let log = std::fs::read_to_string(sb.path().join("state/audit.jsonl")).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["via"], "mcp");
    assert!(
        lines[0]["client"].as_str().unwrap().contains('/'),
        "{}",
        lines[0]
    );
    assert!(lines[0]["pid"].as_u64().unwrap() > 0);
    assert_eq!(lines[0]["outcome"], "refused");
    assert_eq!(lines[1]["decision"], "allow");
    assert_eq!(lines[1]["exitCode"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destructive_tool_confirmed_through_elicitation_both_forms() {
    // 2025-11-25 session: the server sends elicitation/create.
    let sb = sandbox_with_t();
    let c = Confirmer { accept: false }
        .serve(atip_mcp(&sb, &[]))
        .await
        .unwrap();
    let r = c
        .call_tool(call("t_delete", json!({"target": "a"})))
        .await
        .unwrap();
    assert_eq!(structured(&r)["error"]["code"], "confirmation_declined");
    assert!(!sb.path().join("deleted.txt").exists());
    c.cancel().await.unwrap();

    let c = Confirmer { accept: true }
        .serve(atip_mcp(&sb, &[]))
        .await
        .unwrap();
    let r = c
        .call_tool(call("t_delete", json!({"target": "a"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(sb.path().join("deleted.txt")).unwrap(),
        "deleted a\n"
    );
    c.cancel().await.unwrap();

    // 2026-07-28 session: input_required, then the client retries with the answer.
    std::fs::remove_file(sb.path().join("deleted.txt")).unwrap();
    let c = Confirmer { accept: true }
        .serve_with_lifecycle(
            atip_mcp(&sb, &[]),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    let first = c
        .call_tool_once(call("t_delete", json!({"target": "b"})))
        .await
        .unwrap();
    assert!(
        matches!(first, rmcp::model::CallToolResponse::InputRequired(_)),
        "{first:?}"
    );
    assert!(!sb.path().join("deleted.txt").exists());
    let r = c
        .call_tool(call("t_delete", json!({"target": "b"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(sb.path().join("deleted.txt")).unwrap(),
        "deleted b\n"
    );
    // A confirmation cannot be replayed onto other arguments.
    let mut forged = call("t_delete", json!({"target": "other"}));
    let mut responses = std::collections::BTreeMap::new();
    responses.insert(
        "confirm".to_string(),
        json!({"action": "accept", "content": {"confirm": true}}),
    );
    forged.input_responses = Some(responses);
    forged.request_state = Some("atip-confirm-v1:0000".into());
    match c.call_tool_once(forged).await.unwrap() {
        rmcp::model::CallToolResponse::Complete(r) => {
            assert_eq!(structured(&r)["error"]["code"], "confirmation_declined")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        std::fs::read_to_string(sb.path().join("deleted.txt")).unwrap(),
        "deleted b\n"
    );
    c.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hanging_tool_hits_its_timeout() {
    let sb = sandbox_with_t();
    let c = client(&sb, &["--timeout", "300ms"]).await;
    let start = Instant::now();
    let r = c.call_tool(call("t_hang", json!({}))).await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(r.is_error, Some(true));
    let e = &structured(&r)["error"];
    assert_eq!(e["code"], "timeout");
    assert_eq!(e["retryable"], true);
    let pid: i32 = std::fs::read_to_string(sb.path().join("grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    common::assert_dead(pid);
    c.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_kills_the_running_group() {
    let sb = sandbox_with_t();
    let c = client(&sb, &["--timeout", "30s"]).await;
    let req = ClientRequest::CallToolRequest(Request::new(call("t_hang", json!({}))));
    let handle = c
        .peer()
        .send_cancellable_request(req, PeerRequestOptions::no_options())
        .await
        .unwrap();
    // The shell creates the file before it writes the pid: wait for a whole number.
    let pidfile = sb.path().join("grandchild.pid");
    let deadline = Instant::now() + Duration::from_secs(5);
    let pid: i32 = loop {
        let read = std::fs::read_to_string(&pidfile).unwrap_or_default();
        if let Some(pid) = read.strip_suffix('\n').and_then(|p| p.parse().ok()) {
            break pid;
        }
        assert!(Instant::now() < deadline, "no pid in {}", pidfile.display());
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(alive(pid));
    let start = Instant::now();
    handle
        .cancel(Some("user pressed stop".into()))
        .await
        .unwrap();
    common::assert_dead(pid);
    assert!(start.elapsed() < Duration::from_secs(3));
    // The server goes on serving.
    let r = c.call_tool(call("t_json", json!({}))).await.unwrap();
    assert_eq!(r.is_error, Some(false));
    c.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_registries_are_paginated() {
    let sb = Sandbox::new();
    let mut commands = Map::new();
    for i in 0..450 {
        commands.insert(
            format!("c{i:03}"),
            json!({"description": format!("Command {i}"), "effects": {"destructive": false}}),
        );
    }
    let meta = json!({"atip": {"version": "0.6"}, "name": "big", "version": "1",
        "description": "Many commands", "commands": commands});
    register(&sb, "big", &meta, "#!/bin/sh\necho \"$1\"\n", "native");
    register(&sb, "t", &t_meta(), T_SCRIPT, "native");
    // Above the search-mode threshold only the search and call tools are listed; raise
    // it to list every tool, page by page.
    let c = client(&sb, &["--search-threshold", "1000"]).await;
    let first = c.list_tools(Default::default()).await.unwrap();
    assert_eq!(first.tools.len(), 200);
    assert!(first.next_cursor.is_some());
    let all = c.list_all_tools().await.unwrap();
    assert_eq!(all.len(), 450 + 12);
    assert_eq!(all[0].name, "big_c000");
    let bad = c
        .list_tools(Some(
            PaginatedRequestParams::default().with_cursor(Some("nope".into())),
        ))
        .await
        .unwrap_err();
    assert!(matches!(bad, ServiceError::McpError(e) if e.code == ErrorCode::INVALID_PARAMS));
    let r = c.call_tool(call("big_c449", json!({}))).await.unwrap();
    assert_eq!(structured(&r)["data"]["stdout"], "c449\n");
    c.cancel().await.unwrap();

    // --tools narrows the set.
    let c = client(&sb, &["--tools", "t"]).await;
    let all = c.list_all_tools().await.unwrap();
    assert!(all.iter().all(|t| t.name.starts_with("t_")));
    c.cancel().await.unwrap();
    let out = sb
        .atip()
        .args(["--output", "json", "mcp", "--tools", "nosuch"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66));
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(err["error"]["code"], "tool_not_found");
}

#[test]
fn survives_malformed_frames_and_exits_on_eof() {
    use std::io::{BufRead, BufReader, Write};
    let sb = sandbox_with_t();
    let mut child = sb
        .atip()
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut send = |s: &str| {
        stdin.write_all(s.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    out.read_line(&mut line).unwrap();
    let init: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "atip");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    send("this is not json");
    send(r#"{"jsonrpc": "2.0", "id": "#);
    send(
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t_json","arguments":{}}}"#,
    );
    let reply: Value = loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "server closed stdout"
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == 7 {
            break v;
        }
    };
    assert_eq!(
        reply["result"]["structuredContent"]["data"]["json"]["ok"],
        true
    );
    // Start a long call, then hang up: the server exits and kills the child's group.
    send(
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"t_hang","arguments":{}}}"#,
    );
    let pidfile = sb.path().join("grandchild.pid");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pidfile.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stdin);
    let start = Instant::now();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(start.elapsed() < Duration::from_secs(4));
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    common::assert_dead(pid);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    for l in rest.lines() {
        serde_json::from_str::<Value>(l).expect("only JSON-RPC on stdout");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_applies_the_same_allow_and_deny_as_calling() {
    let sb = sandbox_with_t();
    let other = json!({"atip": {"version": "0.6"}, "name": "other", "version": "1", "description": "Other",
        "commands": {"go": {"description": "Go", "effects": {"destructive": false}}}});
    register(&sb, "other", &other, "#!/bin/sh\necho other\n", "native");
    let mut shell = other.clone();
    shell["name"] = json!("bash");
    register(&sb, "bash", &shell, "#!/bin/sh\necho shell\n", "native");
    // Default policy: the runner is not offered, the others are.
    let c = client(&sb, &[]).await;
    let names: Vec<String> = c
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"other_go".to_string()) && names.contains(&"t_echo".to_string()));
    assert!(!names.iter().any(|n| n.starts_with("bash")), "{names:?}");
    let r = c.call_tool(call("bash_go", json!({}))).await.unwrap();
    assert_eq!(structured(&r)["error"]["code"], "policy_denied");
    c.cancel().await.unwrap();
    // tools.allow: only t is listed, and calling other is refused naming the rule.
    let pf = sb.write("allow.json", r#"{"tools": {"allow": ["t"]}}"#);
    let c = client(&sb, &["--policy", pf.to_str().unwrap()]).await;
    let names: Vec<String> = c
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(!names.is_empty());
    assert!(names.iter().all(|n| n.starts_with("t_")), "{names:?}");
    let r = c.call_tool(call("other_go", json!({}))).await.unwrap();
    let e = &structured(&r)["error"];
    assert_eq!(e["code"], "policy_denied");
    assert!(
        e["message"].as_str().unwrap().contains("tools.allow"),
        "{e}"
    );
    // A grouped tool name, as `atip export --strategy grouped` writes it, runs too.
    let r = c
        .call_tool(call("t", json!({"action": "json"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert_eq!(structured(&r)["meta"]["tool"], "t_json");
    // A mistyped action: the closest one, as a corrected call.
    let r = c
        .call_tool(call("t", json!({"action": "jason"})))
        .await
        .unwrap();
    let e = &structured(&r)["error"];
    assert_eq!(e["code"], "args_invalid", "{e}");
    assert_eq!(e["suggestion"]["example"], json!({"action": "json"}), "{e}");
    c.cancel().await.unwrap();
}

fn register_nap(sb: &Sandbox) {
    let nap = json!({"atip": {"version": "0.6"}, "name": "nap", "version": "1", "description": "Sleeps",
        "commands": {"nap": {"description": "Sleep a second",
            "effects": {"destructive": false, "idempotent": true, "filesystem": {"write": false}},
            "arguments": [{"name": "tag", "type": "string", "description": "Tag"}]}}});
    register(
        sb,
        "nap",
        &nap,
        "#!/bin/sh\nsleep 1\necho \"$1\"\n",
        "native",
    );
}

async fn nine_at_once(c: &RunningService<RoleClient, ()>) -> (Vec<Value>, Duration) {
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..9 {
        let peer = c.peer().clone();
        set.spawn(async move {
            let r = peer
                .call_tool(call("nap_nap", json!({"tag": format!("n{i}")})))
                .await
                .unwrap();
            structured(&r).clone()
        });
    }
    let mut out = Vec::new();
    while let Some(r) = set.join_next().await {
        out.push(r.unwrap());
    }
    (out, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ninth_concurrent_call_waits_or_is_refused_per_policy() {
    let sb = sandbox_with_t();
    register_nap(&sb);
    // Default: it waits for a slot, so nine one-second calls on eight slots take two rounds.
    let c = client(&sb, &["--jobs", "8"]).await;
    let (results, took) = nine_at_once(&c).await;
    assert!(results.iter().all(|r| r["status"] == "ok"), "{results:?}");
    assert!(took >= Duration::from_millis(1900), "{took:?}");
    c.cancel().await.unwrap();
    // limits.overflow: refuse — the ninth is refused at once, retryable.
    let pf = sb.write("refuse.json", r#"{"limits": {"overflow": "refuse"}}"#);
    let c = client(&sb, &["--jobs", "8", "--policy", pf.to_str().unwrap()]).await;
    let (results, _) = nine_at_once(&c).await;
    let busy: Vec<&Value> = results.iter().filter(|r| r["status"] == "error").collect();
    assert_eq!(busy.len(), 1, "{results:?}");
    assert_eq!(busy[0]["error"]["code"], "busy");
    assert_eq!(busy[0]["error"]["retryable"], true);
    c.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_budget_and_rate_limit_refuse_with_retryable_errors() {
    let sb = sandbox_with_t();
    let pf = sb.write("rate.json", r#"{"limits": {"callsPerMinute": 3}}"#);
    let c = client(&sb, &["--policy", pf.to_str().unwrap()]).await;
    for _ in 0..3 {
        let r = c.call_tool(call("t_json", json!({}))).await.unwrap();
        assert_eq!(r.is_error, Some(false));
    }
    let r = c.call_tool(call("t_json", json!({}))).await.unwrap();
    let e = &structured(&r)["error"];
    assert_eq!(e["code"], "rate_limited");
    assert_eq!(e["retryable"], true);
    assert!(e["details"]["retryAfterMs"].as_u64().unwrap() > 0);
    c.cancel().await.unwrap();
    let pf = sb.write(
        "budget.json",
        r#"{"limits": {"maxSessionCalls": 2, "callsPerMinute": 0}}"#,
    );
    let c = client(&sb, &["--policy", pf.to_str().unwrap()]).await;
    for _ in 0..2 {
        let r = c.call_tool(call("t_json", json!({}))).await.unwrap();
        assert_eq!(r.is_error, Some(false));
    }
    let r = c.call_tool(call("t_json", json!({}))).await.unwrap();
    let e = &structured(&r)["error"];
    assert_eq!(e["code"], "session_budget_exceeded");
    assert!(e["hint"].as_str().unwrap().contains("maxSessionCalls"));
    c.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_binary_is_refused_over_mcp() {
    let sb = sandbox_with_t();
    let c = client(&sb, &[]).await;
    let r = c.call_tool(call("t_json", json!({}))).await.unwrap();
    assert_eq!(r.is_error, Some(false));
    use std::io::Write;
    let mut f = std::fs::File::options()
        .append(true)
        .open(sb.path().join("bin/t"))
        .unwrap();
    f.write_all(b"# changed\n").unwrap();
    drop(f);
    let r = c.call_tool(call("t_json", json!({}))).await.unwrap();
    let e = &structured(&r)["error"];
    assert_eq!(e["code"], "integrity_changed", "{e}");
    assert_eq!(e["details"]["rules"][0]["rule"], "integrity.changed");
    c.cancel().await.unwrap();
}
