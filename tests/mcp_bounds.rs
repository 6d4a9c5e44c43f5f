//! The MCP client against a hostile server (tests/fixtures/mcp/hostile_server.py): a
//! `tools/list` that paginates forever or in huge pages ends with a bounded error, and
//! the escape sequences it puts in names, descriptions, `serverInfo`, results and its
//! stderr never reach the terminal in text output.

use crate::common::{Sandbox, show};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/hostile_server.py")
}

/// A sandbox whose MCP config has the hostile server as `evil` in `mode`.
fn sandbox(mode: &str) -> Option<Sandbox> {
    let Some(py) = crate::mcp_client::python() else {
        crate::common::skip("python3 not found");
        return None;
    };
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("proj")).unwrap();
    let cfg = json!({"mcpServers": {"evil": {
        "command": py, "args": [script(), mode],
        "env": {"HOSTILE_COUNT": sb.path().join("pages")}}}});
    sb.write("config/mcp.json", cfg.to_string());
    Some(sb)
}

fn atip(sb: &Sandbox, args: &[&str]) -> Output {
    sb.atip()
        .env("ATIP_CACHE_DIR", sb.path().join("cache"))
        .current_dir(sb.path().join("proj"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn pages(sb: &Sandbox) -> u64 {
    std::fs::read_to_string(sb.path().join("pages"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn no_escape(out: &Output) {
    assert!(!out.stdout.contains(&0x1b), "ESC on stdout: {}", show(out));
    assert!(!out.stderr.contains(&0x1b), "ESC on stderr: {}", show(out));
    assert!(!out.stdout.contains(&0x07), "BEL on stdout: {}", show(out));
}

#[test]
fn endless_pagination_ends_at_the_page_cap() {
    let Some(sb) = sandbox("forever") else { return };
    let out = atip(
        &sb,
        &["mcp", "tools", "--output", "json", "--timeout", "120s"],
    );
    assert_eq!(out.status.code(), Some(69), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mcp_list_capped") && err.contains("more than 100 pages"),
        "{err}"
    );
    // It stopped at the cap, not at the deadline: exactly 100 pages were asked for.
    assert_eq!(pages(&sb), 100);
    no_escape(&out);
}

#[test]
fn huge_pages_end_at_the_byte_cap() {
    let Some(sb) = sandbox("big") else { return };
    let out = atip(
        &sb,
        &["mcp", "tools", "--output", "text", "--timeout", "120s"],
    );
    assert_eq!(out.status.code(), Some(69), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("in 17 page(s), over the 16777216 byte cap"),
        "{err}"
    );
    // ~1 MiB a page: the cap is hit at the 17th page, long before the page cap.
    assert_eq!(pages(&sb), 17);
    assert!(out.stdout.is_empty(), "{}", show(&out));
    no_escape(&out);
}

#[test]
fn server_text_is_escaped_in_text_output_and_kept_in_json() {
    let Some(sb) = sandbox("one") else { return };
    let esc_name = "t0\x1b]0;pwned\x07\x1b[2J\x1b[31m";
    for args in [
        vec!["mcp", "tools", "--output", "text"],
        vec!["mcp", "ping", "--output", "text"],
        vec!["mcp", "describe", esc_name, "--output", "text"],
        vec!["mcp", "servers", "--output", "text"],
        vec!["--verbose", "mcp", "tools", "--refresh", "--output", "text"],
        // -v is --verbose (spec/mcp-client.md).
        vec!["-v", "mcp", "tools", "--refresh", "--output", "text"],
    ] {
        let out = atip(&sb, &args);
        assert!(out.status.success(), "{args:?}: {}", show(&out));
        no_escape(&out);
        if args.contains(&"describe") {
            // The decision in words, not Rust's Debug form (`policy: Allow `).
            let text = String::from_utf8_lossy(&out.stdout);
            let line = text.lines().find(|l| l.starts_with("policy: ")).unwrap();
            let action = line["policy: ".len()..].split(' ').next().unwrap();
            assert!(["allow", "confirm", "deny"].contains(&action), "{line}");
            assert!(!line.ends_with(' '), "{line:?}");
        }
        if args.contains(&"tools") {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains("t0") && text.contains("does things"),
                "{text}"
            );
        }
    }
    // A call's text result, shown as text: escaped, its lines kept.
    let out = atip(
        &sb,
        &[
            "mcp", "call", esc_name, "--args", "{}", "--yes", "--output", "text",
        ],
    );
    no_escape(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        text.contains("result \\e]0;pwned") && text.contains("\nline 2"),
        "{}",
        show(&out)
    );
    // JSON keeps the data as the server sent it (JSON escapes the control characters).
    let out = atip(&sb, &["mcp", "tools", "--output", "json"]);
    assert!(out.status.success(), "{}", show(&out));
    no_escape(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["servers"][0]["tools"][0]["name"], esc_name);
}

/// A server's input schema that reaches outside itself cannot make atip read a file or
/// open a connection, and a pattern atip cannot run is no silent accept: each call is
/// refused with `args_invalid` naming the reason, and never reaches the server (whose
/// `tools/call` is the payload: it writes a marker).
#[test]
fn input_schemas_that_reach_outside_are_refused_and_nothing_is_loaded() {
    let Some(py) = crate::mcp_client::python() else {
        crate::common::skip("python3 not found");
        return;
    };
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("proj")).unwrap();
    // The schema `grab` points at accepts anything: were it loaded, the call would go.
    let accept = sb.write("accept.json", "{}");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!(
        "http://127.0.0.1:{}/schema.json",
        listener.local_addr().unwrap().port()
    );
    let marker = sb.path().join("called");
    let cfg = json!({"mcpServers": {"evil": {
        "command": py, "args": [script(), "ref"],
        "env": {"HOSTILE_REF": format!("file://{}", accept.display()),
            "HOSTILE_URL": url, "HOSTILE_MARKER": marker}}}});
    sb.write("config/mcp.json", cfg.to_string());
    for (tool, why) in [
        ("grab", "accept.json"),
        ("fetch", "schema.json"),
        ("peek", "look-around"),
    ] {
        let out = atip(
            &sb,
            &[
                "mcp",
                "call",
                tool,
                "--args",
                r#"{"path": "x"}"#,
                "--yes",
                "--output",
                "json",
            ],
        );
        assert_eq!(out.status.code(), Some(65), "{tool}: {}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("args_invalid"), "{tool}: {}", show(&out));
        assert!(err.contains(why), "{tool}: {}", show(&out));
        assert!(
            !marker.exists(),
            "{tool} reached the server: {}",
            show(&out)
        );
    }
    // The same through `atip exec` (a provider's tool call naming the MCP tool).
    let calls = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"id": "c0", "type": "function",
         "function": {"name": "mcp__evil__grab", "arguments": "{\"path\":\"x\"}"}}]}}]});
    let file = sb.write("proj/calls.json", calls.to_string());
    let out = atip(
        &sb,
        &[
            "exec",
            "--calls",
            file.to_str().unwrap(),
            "--provider",
            "openai",
            "--yes",
            "--output",
            "json",
        ],
    );
    let all = show(&out);
    assert!(
        all.contains("args_invalid") && all.contains("accept.json"),
        "{all}"
    );
    assert!(!marker.exists(), "exec reached the server: {all}");
    // No connection was ever made to the schema's URL.
    assert_eq!(
        listener.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock)
    );
}
