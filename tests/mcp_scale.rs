//! `atip mcp serve` at registry scale (search mode, driven by the rmcp client) and over
//! Streamable HTTP (driven by atip's own MCP client).

use crate::common::tools::*;
use crate::common::{Sandbox, show};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RoleClient, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `atip mcp EXTRA…` in the sandbox as an rmcp child, stderr dropped.
fn atip_mcp(sb: &Sandbox, extra: &[&str]) -> TokioChildProcess {
    let mut cmd = sb.atip();
    cmd.arg("mcp").args(extra);
    mcp_child(cmd, Stdio::null())
}

/// `cmd` (an `atip mcp` command) as an rmcp child, its stderr sent to `stderr`.
fn mcp_child(cmd: Command, stderr: Stdio) -> TokioChildProcess {
    let (proc, _) = TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(stderr)
        .spawn()
        .unwrap();
    proc
}

fn call(name: &str, a: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_string()).with_arguments(a.as_object().unwrap().clone())
}

#[derive(Clone)]
struct Yes;

impl ClientHandler for Yes {
    fn get_info(&self) -> ClientConfig {
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap();
        ClientConfig::new(caps, Implementation::new("yes", "1"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let mut r = ElicitResult::new(ElicitationAction::Accept);
        r.content = Some(json!({"confirm": true}));
        Ok(r)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_mode_lists_search_and_call_tools_and_calls_go_through_policy() {
    let sb = sandbox_with_t();
    let args = ["serve", "--search-threshold", "2", "--pin", "t_json"];
    let c = ().serve(atip_mcp(&sb, &args)).await.unwrap();
    let tools = c.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["atip_search_tools", "atip_call_tool", "t_json"]);
    assert!(tools.iter().all(|t| t.input_schema["type"] == "object"));
    let pinned = &tools[2];
    assert!(
        pinned.output_schema.is_some(),
        "served tools declare the envelope"
    );

    let r = c
        .call_tool(call(
            "atip_search_tools",
            json!({"query": "print json", "schemas": 1}),
        ))
        .await
        .unwrap();
    let s = r.structured_content.unwrap();
    assert_eq!(s["results"][0]["name"], "t_json", "{s}");
    assert!(s["results"][0]["inputSchema"].is_object());
    assert!(
        s["results"].as_array().unwrap()[1..]
            .iter()
            .all(|r| r.get("inputSchema").is_none())
    );
    assert!(s["total"].as_u64().unwrap() >= 4);

    // The call tool runs what a direct call would.
    let r = c
        .call_tool(call(
            "atip_call_tool",
            json!({"name": "t_echo", "arguments": {"words": ["a b"]}}),
        ))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert_eq!(r.structured_content.unwrap()["data"]["stdout"], "a b\0");
    // Direct calls still work in search mode.
    let r = c
        .call_tool(call("t_echo", json!({"words": ["x"]})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false));
    // Same policy: a destructive tool needs confirmation this client cannot give.
    let r = c
        .call_tool(call(
            "atip_call_tool",
            json!({"name": "t_delete", "arguments": {"target": "a"}}),
        ))
        .await
        .unwrap();
    assert_eq!(
        r.structured_content.unwrap()["error"]["code"],
        "confirmation_required"
    );
    assert!(!sb.path().join("deleted.txt").exists());
    // Unknown inner names are the same protocol error as unknown direct names.
    let e = c
        .call_tool(call(
            "atip_call_tool",
            json!({"name": "nope", "arguments": {}}),
        ))
        .await
        .unwrap_err();
    let ServiceError::McpError(e) = e else {
        panic!("{e:?}")
    };
    assert!(e.message.contains("Unknown tool: nope"));
    let r = c
        .call_tool(call("atip_call_tool", json!({"arguments": {}})))
        .await
        .unwrap();
    assert_eq!(
        r.structured_content.unwrap()["error"]["code"],
        "args_invalid"
    );
    c.cancel().await.unwrap();

    // A client that confirms through elicitation gets the destructive call run.
    let c = Yes.serve(atip_mcp(&sb, &args)).await.unwrap();
    let r = c
        .call_tool(call(
            "atip_call_tool",
            json!({"name": "t_delete", "arguments": {"target": "a"}}),
        ))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert!(sb.path().join("deleted.txt").exists());
    c.cancel().await.unwrap();

    // Below the threshold: every tool listed, no meta tools.
    let c = ().serve(atip_mcp(&sb, &[])).await.unwrap();
    let tools = c.list_all_tools().await.unwrap();
    assert!(tools.iter().all(|t| !t.name.starts_with("atip_")));
    assert!(tools.len() >= 4);
    c.cancel().await.unwrap();
}

struct Killed(std::process::Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `atip mcp serve --http 127.0.0.1:0` and returns it with its URL (from the
/// banner) and the bearer token: `token`, else the one it generated and printed.
fn serve_http(sb: &Sandbox, token: Option<&str>) -> (Killed, String, String) {
    use std::io::BufRead;
    let mut cmd = sb.atip();
    cmd.args(["mcp", "serve", "--http", "127.0.0.1:0"]);
    if let Some(t) = token {
        cmd.env("ATIP_MCP_TOKEN", t);
    }
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    let url = loop {
        assert!(Instant::now() < deadline, "no banner");
        let line = lines.next().expect("server exited").unwrap();
        if let Some(i) = line.find("http://") {
            break line[i..].split(' ').next().unwrap().to_string();
        }
    };
    let token = match token {
        Some(t) => t.to_string(),
        None => loop {
            let line = lines.next().expect("server exited").unwrap();
            if let Some((_, t)) = line.split_once("bearer token is ") {
                break t.trim().to_string();
            }
        },
    };
    std::thread::spawn(move || for _ in lines {});
    (Killed(child), url, token)
}

fn client(sb: &Sandbox) -> Command {
    let mut c = sb.atip();
    c.env("ATIP_CACHE_DIR", sb.path().join("cache"));
    c
}

#[test]
fn streamable_http_serving_with_and_without_a_token() {
    let sb = sandbox_with_t();
    // No token set: the server draws one (loopback needs a credential too).
    let (_server, url, token) = serve_http(&sb, None);
    assert!(url.ends_with("/mcp"), "{url}");
    let auth = format!("Authorization: Bearer {token}");
    let o = client(&sb)
        .args(["mcp", "ping", "--url", &url, "--timeout", "10s"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(69), "{}", show(&o));
    let o = client(&sb)
        .args([
            "mcp",
            "tools",
            "--url",
            &url,
            "--header",
            &auth,
            "--output",
            "json",
            "--no-cache",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v["servers"][0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"t_echo"), "{names:?}");
    let o = client(&sb)
        .args([
            "mcp",
            "call",
            "t_echo",
            "--url",
            &url,
            "--header",
            &auth,
            "--args",
            r#"{"words":["hi"]}"#,
            "--output",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["structuredContent"]["data"]["stdout"], "hi\0");

    // With a token: no header → refused (69), the right bearer → served.
    let (_server, url, _) = serve_http(&sb, Some("s3cret-token-value"));
    let o = client(&sb)
        .args(["mcp", "ping", "--url", &url, "--timeout", "10s"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(69), "{}", show(&o));
    let o = client(&sb)
        .args([
            "mcp",
            "ping",
            "--url",
            &url,
            "--header",
            "Authorization: Bearer s3cret-token-value",
            "--output",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("s3cret-token-value"));

    // A non-loopback address without a token is refused before anything listens.
    let o = sb
        .atip()
        .args(["mcp", "serve", "--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bearer token"));
}

/// A sandbox with the tool `t` registered and the fake MCP server configured as `fake`.
fn sandbox_with_t_and_fake() -> Option<Sandbox> {
    let Some(py) = crate::mcp_client::python() else {
        crate::common::skip("python3 not found");
        return None;
    };
    let sb = sandbox_with_t();
    let cfg = json!({"mcpServers": {"fake": {
        "command": py, "args": [crate::mcp_client::fake_script(), "ok"],
        "env": {"FAKE_PIDFILE": sb.path().join("fake.pid")}}}});
    sb.write("config/mcp.json", cfg.to_string());
    Some(sb)
}

fn fake_alive(sb: &Sandbox) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(sb.path().join("fake.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    crate::common::alive(pid).then_some(pid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_proxies_configured_mcp_servers_under_the_same_policy() {
    let Some(sb) = sandbox_with_t_and_fake() else {
        return;
    };
    // A client that cannot confirm.
    let c = ().serve(atip_mcp(&sb, &["serve"])).await.unwrap();
    let tools = c.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"t_echo"), "{names:?}");
    assert!(names.contains(&"mcp__fake__echo"), "{names:?}");
    let echo = tools.iter().find(|t| t.name == "mcp__fake__echo").unwrap();
    assert_eq!(
        echo.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    assert_eq!(echo.input_schema["required"], json!(["message"]));
    let note = tools
        .iter()
        .find(|t| t.name == "mcp__fake__write_note")
        .unwrap();
    assert_eq!(
        note.annotations.as_ref().unwrap().read_only_hint,
        Some(false)
    );
    // The server's result, as it sent it.
    let r = c
        .call_tool(call("mcp__fake__echo", json!({"message": "hi"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, None, "{r:?}");
    assert_eq!(
        serde_json::to_value(&r.content).unwrap()[0]["text"],
        "Echo: hi"
    );
    // Arguments are checked against the server's schema before anything is sent.
    let r = c
        .call_tool(call("mcp__fake__echo", json!({})))
        .await
        .unwrap();
    assert_eq!(
        r.structured_content.unwrap()["error"]["code"],
        "args_invalid"
    );
    // Not read-only: confirmation this client cannot give.
    let r = c
        .call_tool(call("mcp__fake__write_note", json!({"text": "x"})))
        .await
        .unwrap();
    assert_eq!(
        r.structured_content.unwrap()["error"]["code"],
        "confirmation_required"
    );
    // The tool's own isError passes through.
    let r = c
        .call_tool(call("mcp__fake__fail", json!({})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let pid = fake_alive(&sb).expect("the proxied server runs");
    c.cancel().await.unwrap();
    // Serving ended: the proxied server's process group is gone.
    let until = Instant::now() + Duration::from_secs(10);
    while crate::common::alive(pid) && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !crate::common::alive(pid),
        "proxied server {pid} left running"
    );

    // A client that confirms through elicitation: the call runs, and is audited.
    let c = Yes.serve(atip_mcp(&sb, &["serve"])).await.unwrap();
    let r = c
        .call_tool(call("mcp__fake__write_note", json!({"text": "x"})))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&r.content).unwrap()[0]["text"],
        "noted: x",
        "{r:?}"
    );
    c.cancel().await.unwrap();
    let log = std::fs::read_to_string(sb.path().join("state/audit.jsonl")).unwrap();
    let rec: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r["tool"] == "mcp__fake__write_note")
        .collect();
    assert_eq!(rec.last().unwrap()["via"], "mcp-proxy", "{log}");
    assert_eq!(rec.last().unwrap()["decision"], "confirmed", "{log}");
    assert_eq!(rec.last().unwrap()["client"], "yes/1", "{log}");

    // Search mode finds and calls MCP tools like commands.
    let c = ().serve(atip_mcp(&sb, &["serve", "--search-threshold", "2"])).await.unwrap();
    let r = c
        .call_tool(call(
            "atip_search_tools",
            json!({"query": "echo a message back"}),
        ))
        .await
        .unwrap();
    let s = r.structured_content.unwrap();
    assert_eq!(s["results"][0]["name"], "mcp__fake__echo", "{s}");
    let r = c
        .call_tool(call(
            "atip_call_tool",
            json!({"name": "mcp__fake__echo", "arguments": {"message": "found"}}),
        ))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&r.content).unwrap()[0]["text"],
        "Echo: found"
    );
    c.cancel().await.unwrap();

    // A policy that denies a tool outright leaves it out of the list; --no-mcp and a
    // nested atip (started by a proxy) serve no MCP tools at all.
    sb.write(
        "config/policy.json",
        json!({"tools": {"deny": ["mcp__fake__write*"]}}).to_string(),
    );
    let c = ().serve(atip_mcp(&sb, &["serve"])).await.unwrap();
    let names: Vec<String> = c
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"mcp__fake__echo".to_string()), "{names:?}");
    assert!(
        !names.contains(&"mcp__fake__write_note".to_string()),
        "{names:?}"
    );
    c.cancel().await.unwrap();
    let c = ().serve(atip_mcp(&sb, &["serve", "--no-mcp"])).await.unwrap();
    let tools = c.list_all_tools().await.unwrap();
    assert!(tools.iter().all(|t| !t.name.starts_with("mcp__")));
    c.cancel().await.unwrap();
    let mut cmd = sb.atip();
    cmd.args(["mcp", "serve"]).env("ATIP_MCP_PROXIED", "1");
    let c = ().serve(mcp_child(cmd, Stdio::null())).await.unwrap();
    let tools = c.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "t_echo"));
    assert!(tools.iter().all(|t| !t.name.starts_with("mcp__")));
    c.cancel().await.unwrap();
}

/// At scale the server reads the compiled catalog, and a tool's document only when a
/// call or a search hit names it: another tool's damaged document costs nothing at
/// start-up (no warning), is left out of search results, and its calls are refused
/// with the reason — never run from the catalog's copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_mode_reads_only_what_is_named_and_still_checks_documents() {
    let sb = sandbox_with_t();
    let u = json!({"atip": "0.6", "name": "u", "version": "1", "description": "Unused tool",
        "commands": {"go": {"description": "Travel somewhere far", "effects": {"network": false}}}});
    register(&sb, "u", &u, "#!/bin/sh\necho u\n", "native");
    // A reader compiles the catalog; then u's document is edited behind atip's back.
    let out = sb
        .atip()
        .args(["search", "travel somewhere", "--output", "json"])
        .output()
        .unwrap();
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["results"][0]["name"], "u_go", "{}", show(&out));
    let reg: Value =
        serde_json::from_slice(&std::fs::read(sb.data_dir().join("registry.json")).unwrap())
            .unwrap();
    let doc = sb
        .data_dir()
        .join(reg["tools"]["u"]["metadata"].as_str().unwrap());
    let mut bytes = std::fs::read(&doc).unwrap();
    bytes.extend_from_slice(b"\n");
    std::fs::write(&doc, bytes).unwrap();

    let log = sb.path().join("mcp.stderr");
    let mut cmd = sb.atip();
    cmd.args(["mcp", "serve", "--search-threshold", "2"]);
    let stderr = Stdio::from(std::fs::File::create(&log).unwrap());
    let c = ().serve(mcp_child(cmd, stderr)).await.unwrap();
    let names: Vec<String> = c
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["atip_search_tools", "atip_call_tool"]);
    let r = c
        .call_tool(call(
            "atip_search_tools",
            json!({"query": "travel somewhere"}),
        ))
        .await
        .unwrap();
    let s = r.structured_content.unwrap();
    assert!(
        s["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["name"] != "u_go"),
        "a tool whose document is refused is not offered: {s}"
    );
    let r = c
        .call_tool(call("t_echo", json!({"words": ["x"]})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false), "{r:?}");
    let r = c.call_tool(call("u_go", json!({}))).await.unwrap();
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let e = r.structured_content.unwrap();
    assert_eq!(e["error"]["code"], "metadata_tampered", "{e}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("tool u:"),
        "{e}"
    );
    c.cancel().await.unwrap();
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert!(
        stderr.contains("search mode") && !stderr.contains("skipped"),
        "nothing but the catalog is read at start-up: {stderr}"
    );
}

/// The server's one line per call names an outcome for every kind of tool: a registry
/// tool's exit, and for atip's own search tool (no program, no exit) `ok`, never `exit ?`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_log_names_an_outcome_for_tools_without_an_exit_code() {
    let sb = sandbox_with_t();
    let log = sb.path().join("server.log");
    let mut cmd = sb.atip();
    cmd.args([
        "-v",
        "mcp",
        "serve",
        "--search-threshold",
        "2",
        "--pin",
        "t_json",
    ]);
    let file = std::fs::File::create(&log).unwrap();
    let c = ().serve(mcp_child(cmd, Stdio::from(file))).await.unwrap();
    c.call_tool(call("atip_search_tools", json!({"query": "print json"})))
        .await
        .unwrap();
    c.call_tool(call("t_json", json!({}))).await.unwrap();
    c.cancel().await.unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("atip mcp: atip_search_tools: ok ("), "{text}");
    assert!(text.contains("atip mcp: t_json: exit 0 ("), "{text}");
    assert!(!text.contains("exit ?"), "{text}");
}

/// The same for proxied tools (issue 33 item 5): a configured MCP server's tool has no
/// exit code either; the line says `ok`, or `tool error` for its `isError`, never `exit ?`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_log_names_an_outcome_for_proxied_tools() {
    let Some(sb) = sandbox_with_t_and_fake() else {
        return;
    };
    let log = sb.path().join("server.log");
    let mut cmd = sb.atip();
    cmd.args(["-v", "mcp", "serve"]);
    let file = std::fs::File::create(&log).unwrap();
    let c = ().serve(mcp_child(cmd, Stdio::from(file))).await.unwrap();
    let r = c
        .call_tool(call("mcp__fake__echo", json!({"message": "hi"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, None, "{r:?}");
    let r = c
        .call_tool(call("mcp__fake__fail", json!({})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true), "{r:?}");
    c.cancel().await.unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("atip mcp: mcp__fake__echo: ok ("), "{text}");
    assert!(
        text.contains("atip mcp: mcp__fake__fail: tool error ("),
        "{text}"
    );
    assert!(!text.contains("exit ?"), "{text}");
}
