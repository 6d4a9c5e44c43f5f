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
    let pidfile = sb.path().join("grandchild.pid");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pidfile.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
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
    let c = client(&sb, &[]).await;
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
