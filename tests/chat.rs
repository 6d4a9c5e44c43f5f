//! `atip chat` end to end: the real binary against a scripted model endpoint (an HTTP
//! server on 127.0.0.1 inside the test), a real registry and real script tools, for
//! every API format. Each test checks what atip sent (tool definitions exactly as
//! `atip export` writes them, tool results in the API's shape with matching ids) and
//! what it printed.

use crate::common;

use common::endpoint::{ALL, Api, Endpoint, Recorded, Reply};
use common::tools::*;
use common::{Sandbox, assert_dead, show};
use serde_json::{Value, json};
use std::process::Output;

const KEY: &str = "sk-test-0123456789abcdef";

struct Run {
    code: i32,
    out: Value,
    raw: Output,
}

impl Run {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.raw.stderr).into_owned()
    }
}

/// `atip --output json chat --provider P --model test-model --base-url … ARGS… "PROMPT"`.
fn chat(sb: &Sandbox, api: Api, ep: &Endpoint, extra: &[&str]) -> Run {
    let mut cmd = sb.atip();
    cmd.args(["--output", "json", "chat", "--provider", api.flag()])
        .args(["--model", "test-model", "--base-url", &api.base(ep)])
        .args(extra)
        .arg("What does the tool say?")
        .env(api.key_var(), KEY)
        .stdin(std::process::Stdio::null());
    let raw = cmd.output().unwrap();
    Run {
        code: raw.status.code().unwrap_or(-1),
        out: serde_json::from_slice(&raw.stdout).unwrap_or(Value::Null),
        raw,
    }
}

/// What `atip export --format F --tools t` prints.
fn exported(sb: &Sandbox, api: Api) -> Value {
    let out = sb
        .atip()
        .args(["export", "--format", api.export_format(), "--tools", "t"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Checks every request went where it should with the key, and the first one carries
/// the prompt and the exported tools.
fn check_requests(sb: &Sandbox, api: Api, ep: &Endpoint) -> Vec<Recorded> {
    let reqs = ep.requests();
    assert!(!reqs.is_empty());
    let (h, v) = api.auth(KEY);
    for r in &reqs {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", api.path()));
        assert_eq!(
            r.header(h),
            Some(v.as_str()),
            "{api:?} sends the key in {h}"
        );
        assert_eq!(r.header("content-type"), Some("application/json"));
        if api == Api::Anthropic {
            assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
            assert_eq!(r.body["max_tokens"], 4096);
        }
        match api {
            Api::Gemini => assert!(r.body.get("model").is_none()),
            _ => assert_eq!(r.body["model"], "test-model"),
        }
        assert_eq!(
            r.body["tools"],
            api.expected_tools(&exported(sb, api)),
            "{api:?}: tools exactly as atip export writes them"
        );
    }
    let first = api.messages(&reqs[0].body);
    let prompt = match api {
        Api::Gemini => json!({"role": "user", "parts": [{"text": "What does the tool say?"}]}),
        _ => json!({"role": "user", "content": "What does the tool say?"}),
    };
    assert_eq!(
        first,
        [prompt],
        "{api:?}: the conversation starts with the prompt"
    );
    reqs
}

fn audit_lines(sb: &Sandbox) -> Vec<Value> {
    std::fs::read_to_string(sb.path().join("state/audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Gemini calls often come without ids; the other APIs always give one.
fn id(api: Api, id: &'static str) -> &'static str {
    if api == Api::Gemini { "" } else { id }
}

#[test]
fn one_call_then_an_answer() {
    for api in ALL {
        let sb = sandbox_with_t();
        let calls = [(id(api, "call_1"), "t_json", json!({}))];
        let ep = Endpoint::start(vec![
            Reply::ok(api.calls(&calls)),
            Reply::ok(api.text("The tool says ok.")),
        ]);
        let r = chat(&sb, api, &ep, &[]);
        assert_eq!(r.code, 0, "{api:?}: {}", show(&r.raw));
        let reqs = check_requests(&sb, api, &ep);
        assert_eq!(reqs.len(), 2);
        let results = api.results(&reqs[1].body, &calls);
        assert_eq!(results[0].content["status"], "ok");
        assert_eq!(
            results[0].content["data"]["json"],
            json!({"ok": true, "n": 1})
        );
        assert_eq!(results[0].content["meta"]["tool"], "t_json");
        assert_eq!(results[0].is_error, None, "a success carries no is_error");
        assert_eq!(r.out["answer"], "The tool says ok.");
        assert_eq!(r.out["turns"], 2);
        assert_eq!(r.out["stopReason"], "answer");
        assert_eq!(
            r.out["usage"],
            json!({"inputTokens": 30, "outputTokens": 12, "totalTokens": 42})
        );
        let c = &r.out["calls"][0];
        assert_eq!(
            (
                c["name"].as_str(),
                c["status"].as_str(),
                c["exitCode"].as_i64()
            ),
            (Some("t_json"), Some("ok"), Some(0))
        );
        assert_eq!(c["arguments"], json!({}));
        assert!(c["durationMs"].is_u64());
        assert_eq!(r.out["calls"].as_array().unwrap().len(), 1);
    }
}

#[test]
fn several_calls_in_one_turn_answer_in_order_with_their_ids() {
    for api in ALL {
        let sb = sandbox_with_t();
        let calls = [
            (
                id(api, "call_a"),
                "t_echo",
                json!({"words": ["hello", "world"]}),
            ),
            (id(api, "call_b"), "t_json", json!({})),
            (id(api, "call_c"), "t_fail", json!({})),
        ];
        let ep = Endpoint::start(vec![
            Reply::ok(api.calls(&calls)),
            Reply::ok(api.text("Three results.")),
        ]);
        let r = chat(&sb, api, &ep, &[]);
        assert_eq!(r.code, 0, "{api:?}: {}", show(&r.raw));
        let reqs = check_requests(&sb, api, &ep);
        let results = api.results(&reqs[1].body, &calls);
        assert_eq!(results[0].content["data"]["stdout"], "hello\0world\0");
        assert_eq!(results[1].content["data"]["exitCode"], 0);
        assert_eq!(results[2].content["data"]["exitCode"], 3);
        assert_eq!(results[2].content["data"]["stderr"], "it broke\n");
        if api == Api::Anthropic {
            assert_eq!(
                results.iter().map(|r| r.is_error).collect::<Vec<_>>(),
                [None, None, Some(true)],
                "a non-zero exit is reported as is_error"
            );
        }
        let statuses: Vec<&str> = r.out["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["ok", "ok", "failed"]);
        assert_eq!(
            r.out["calls"][0]["arguments"],
            json!({"words": ["hello", "world"]})
        );
        assert_eq!(r.out["calls"][2]["exitCode"], 3);
        assert_eq!(r.out["answer"], "Three results.");
    }
}

#[test]
fn invalid_arguments_come_back_as_an_error_the_model_corrects() {
    for api in ALL {
        let sb = sandbox_with_t();
        let bad = [(
            id(api, "call_1"),
            "t_echo",
            json!({"count": "many", "colour": "red"}),
        )];
        let good = [(id(api, "call_2"), "t_echo", json!({"count": 2}))];
        let ep = Endpoint::start(vec![
            Reply::ok(api.calls(&bad)),
            Reply::ok(api.calls(&good)),
            Reply::ok(api.text("Fixed it.")),
        ]);
        let r = chat(&sb, api, &ep, &[]);
        assert_eq!(r.code, 0, "{api:?}: {}", show(&r.raw));
        let reqs = check_requests(&sb, api, &ep);
        assert_eq!(reqs.len(), 3);
        let first = &api.results(&reqs[1].body, &bad)[0];
        assert_eq!(first.content["status"], "error");
        assert_eq!(first.content["error"]["code"], "args_invalid");
        let paths: Vec<&str> = first.content["error"]["details"]["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["path"].as_str().unwrap())
            .collect();
        assert!(paths.iter().any(|p| p.contains("count")), "{paths:?}");
        assert!(first.content["error"]["hint"].is_string());
        if api == Api::Anthropic {
            assert_eq!(first.is_error, Some(true));
        }
        let second = &api.results(&reqs[2].body, &good)[0];
        assert_eq!(second.content["status"], "ok");
        assert_eq!(second.content["data"]["stdout"], "--count\x002\0");
        // The whole conversation is resent: the failed round is still there.
        assert_eq!(
            api.messages(&reqs[2].body).len(),
            api.messages(&reqs[1].body).len() + 2
        );
        let statuses: Vec<(&str, &str)> = r.out["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["status"].as_str().unwrap(),
                    c["error"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(statuses, [("error", "args_invalid"), ("ok", "")]);
        assert_eq!(r.out["turns"], 3);
    }
}

#[test]
fn a_destructive_call_is_refused_and_the_model_hears_why() {
    for api in ALL {
        let sb = sandbox_with_t();
        let calls = [(
            id(api, "call_d"),
            "t_delete",
            json!({"target": "everything"}),
        )];
        let ep = Endpoint::start(vec![
            Reply::ok(api.calls(&calls)),
            Reply::ok(api.text("I was not allowed to delete it.")),
        ]);
        let r = chat(&sb, api, &ep, &[]);
        assert_eq!(r.code, 0, "{api:?}: {}", show(&r.raw));
        assert!(!sb.path().join("deleted.txt").exists(), "nothing ran");
        let reqs = check_requests(&sb, api, &ep);
        let res = &api.results(&reqs[1].body, &calls)[0];
        assert_eq!(res.content["error"]["code"], "confirmation_required");
        let hint = res.content["error"]["hint"].as_str().unwrap();
        assert!(hint.contains("Do not retry"), "{hint}");
        assert_eq!(res.content["error"]["suggestion"]["action"], "abort");
        assert!(
            res.content["error"]["message"]
                .as_str()
                .unwrap()
                .contains("t delete"),
            "{}",
            res.content
        );
        if api == Api::Anthropic {
            assert_eq!(res.is_error, Some(true));
        }
        assert_eq!(r.out["calls"][0]["status"], "error");
        assert_eq!(r.out["calls"][0]["error"], "confirmation_required");
        assert_eq!(r.out["answer"], "I was not allowed to delete it.");
        let audit = audit_lines(&sb);
        assert_eq!(audit.len(), 1, "{audit:?}");
        assert_eq!(audit[0]["via"], "chat");
        assert_eq!(audit[0]["client"], format!("{}/test-model", api.flag()));
        assert_eq!(audit[0]["outcome"], "refused");
        assert_eq!(audit[0]["tool"], "t_delete");
    }
}

#[test]
fn with_yes_the_destructive_call_runs_and_is_audited() {
    let api = Api::Anthropic;
    let sb = sandbox_with_t();
    let calls = [("toolu_1", "t_delete", json!({"target": "old"}))];
    let ep = Endpoint::start(vec![
        Reply::ok(api.calls(&calls)),
        Reply::ok(api.text("Deleted.")),
    ]);
    let r = chat(&sb, api, &ep, &["--yes"]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(
        std::fs::read_to_string(sb.path().join("deleted.txt")).unwrap(),
        "deleted old\n"
    );
    let audit = audit_lines(&sb);
    assert_eq!(
        (
            audit[0]["via"].as_str(),
            audit[0]["decision"].as_str(),
            audit[0]["callId"].as_str()
        ),
        (Some("chat"), Some("confirmed"), Some("toolu_1"))
    );
}

#[test]
fn a_tool_that_times_out_is_killed_and_reported() {
    for api in ALL {
        let sb = sandbox_with_t();
        let calls = [(id(api, "call_h"), "t_hang", json!({}))];
        let ep = Endpoint::start(vec![
            Reply::ok(api.calls(&calls)),
            Reply::ok(api.text("It hung.")),
        ]);
        let started = std::time::Instant::now();
        let r = chat(&sb, api, &ep, &[]);
        assert_eq!(r.code, 0, "{api:?}: {}", show(&r.raw));
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        let reqs = check_requests(&sb, api, &ep);
        let res = &api.results(&reqs[1].body, &calls)[0];
        assert_eq!(res.content["error"]["code"], "timeout");
        assert_eq!(res.content["error"]["retryable"], true);
        assert_eq!(res.content["error"]["details"]["timeoutMs"], 300);
        assert_eq!(res.content["error"]["details"]["stdout"], "started\n");
        let c = &r.out["calls"][0];
        assert_eq!(
            (c["status"].as_str(), c["error"].as_str()),
            (Some("error"), Some("timeout"))
        );
        assert!(c["durationMs"].as_u64().unwrap() >= 300);
        let pid: i32 = std::fs::read_to_string(sb.path().join("grandchild.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_dead(pid);
    }
}

#[test]
fn the_turn_limit_ends_the_run_with_a_clear_result() {
    for api in ALL {
        let sb = sandbox_with_t();
        let c1 = [(id(api, "call_1"), "t_write", json!({"line": "one"}))];
        let c2 = [(id(api, "call_2"), "t_write", json!({"line": "two"}))];
        let ep = Endpoint::start(vec![Reply::ok(api.calls(&c1)), Reply::ok(api.calls(&c2))]);
        let r = chat(&sb, api, &ep, &["--max-turns", "2", "--yes"]);
        assert_eq!(r.code, 77, "{api:?}: {}", show(&r.raw));
        assert_eq!(ep.requests().len(), 2);
        assert_eq!(
            std::fs::read_to_string(sb.path().join("written.txt")).unwrap(),
            "one\n",
            "the call of the last turn did not run"
        );
        assert_eq!(r.out["stopReason"], "max_turns");
        assert_eq!(r.out["answer"], Value::Null);
        assert_eq!(r.out["turns"], 2);
        let statuses: Vec<&str> = r.out["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["ok", "skipped"]);
        assert_eq!(r.out["error"]["code"], "turn_limit");
        let err: Value = serde_json::from_str(r.stderr().trim()).unwrap();
        assert_eq!(err["error"]["code"], "turn_limit");
    }
}

#[test]
fn the_call_budget_is_told_to_the_model_then_enforced() {
    let api = Api::Openai;
    let sb = sandbox_with_t();
    let c1 = [("a", "t_json", json!({})), ("b", "t_json", json!({}))];
    let c2 = [("c", "t_json", json!({}))];
    let ep = Endpoint::start(vec![Reply::ok(api.calls(&c1)), Reply::ok(api.calls(&c2))]);
    let r = chat(&sb, api, &ep, &["--max-calls", "1"]);
    assert_eq!(r.code, 77, "{}", show(&r.raw));
    let reqs = ep.requests();
    assert_eq!(reqs.len(), 2);
    let res = api.results(&reqs[1].body, &c1);
    assert_eq!(res[0].content["status"], "ok");
    assert_eq!(res[1].content["error"]["code"], "call_budget_exhausted");
    assert!(
        res[1].content["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("answer")
    );
    assert_eq!(r.out["stopReason"], "max_calls");
    assert_eq!(r.out["error"]["code"], "call_limit");
    let statuses: Vec<&str> = r.out["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "error", "skipped"]);
}

#[test]
fn rate_limited_then_served() {
    for api in ALL {
        let sb = sandbox_with_t();
        let ep = Endpoint::start(vec![
            Reply::Json(
                429,
                vec![("retry-after", "1".into())],
                json!({"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}),
            ),
            Reply::ok(api.text("Eventually.")),
        ]);
        let r = chat(&sb, api, &ep, &[]);
        assert_eq!(r.code, 0, "{api:?}: {}", show(&r.raw));
        let reqs = check_requests(&sb, api, &ep);
        assert_eq!(reqs.len(), 2);
        assert_eq!(reqs[0].body, reqs[1].body, "the same request, again");
        let waited = reqs[1].at - reqs[0].at;
        assert!(
            waited >= std::time::Duration::from_millis(950),
            "Retry-After: 1 was honoured ({waited:?})"
        );
        assert_eq!(r.out["answer"], "Eventually.");
        assert_eq!(r.out["turns"], 1);
    }
}

#[test]
fn rate_limited_past_the_retries_exits_75() {
    let api = Api::Anthropic;
    let sb = sandbox_with_t();
    let limited = || {
        Reply::Json(
            429,
            vec![("retry-after", "0".into())],
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
        )
    };
    let ep = Endpoint::start(vec![limited(), limited()]);
    let r = chat(&sb, api, &ep, &["--retries", "1"]);
    assert_eq!(r.code, 75, "{}", show(&r.raw));
    assert_eq!(ep.requests().len(), 2);
    assert_eq!(r.out["stopReason"], "error");
    assert_eq!(r.out["error"]["code"], "endpoint_rate_limited");
    assert_eq!(r.out["error"]["details"]["attempts"], 2);
    assert!(
        r.out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("slow down")
    );
}

#[test]
fn a_connection_closed_mid_response_is_retried() {
    for api in ALL {
        let sb = sandbox_with_t();
        let cut = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 4000\r\n\r\n{\"choices\": [{\"mess".to_vec();
        let ep = Endpoint::start(vec![Reply::Raw(cut), Reply::ok(api.text("Second try."))]);
        let r = chat(&sb, api, &ep, &[]);
        assert_eq!(r.code, 0, "{api:?}: {}", show(&r.raw));
        assert_eq!(check_requests(&sb, api, &ep).len(), 2);
        assert_eq!(r.out["answer"], "Second try.");
    }
}

#[test]
fn an_endpoint_that_keeps_dropping_the_connection_exits_69() {
    let api = Api::Gemini;
    let sb = sandbox_with_t();
    let cut = || Reply::Raw(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{".to_vec());
    let ep = Endpoint::start(vec![cut(), cut()]);
    let r = chat(&sb, api, &ep, &["--retries", "1"]);
    assert_eq!(r.code, 69, "{}", show(&r.raw));
    assert_eq!(r.out["error"]["code"], "endpoint_unreachable");
    assert_eq!(r.out["error"]["retryable"], true);
}

#[test]
fn endpoint_errors_map_to_exit_codes_and_never_show_the_key() {
    let cases: [(u16, i32, &str, usize); 4] = [
        (401, 78, "endpoint_auth", 1),
        (404, 2, "endpoint_rejected", 1),
        (503, 69, "endpoint_unavailable", 2),
        (200, 65, "endpoint_malformed", 1),
    ];
    for (status, code, name, tries) in cases {
        let api = Api::Openai;
        let sb = sandbox_with_t();
        let body = if status == 200 {
            json!({"unexpected": true})
        } else {
            json!({"error": {"message": format!("bad key {KEY}")}})
        };
        let script = vec![Reply::Json(status, vec![], body); tries];
        let ep = Endpoint::start(script);
        let transcript = sb.path().join("t.jsonl");
        let r = chat(
            &sb,
            api,
            &ep,
            &[
                "--retries",
                "1",
                "--transcript",
                transcript.to_str().unwrap(),
            ],
        );
        assert_eq!(r.code, code, "HTTP {status}: {}", show(&r.raw));
        assert_eq!(ep.requests().len(), tries, "HTTP {status}");
        assert_eq!(r.out["error"]["code"], name);
        let everything = format!(
            "{}{}{}",
            String::from_utf8_lossy(&r.raw.stdout),
            r.stderr(),
            std::fs::read_to_string(&transcript).unwrap()
        );
        assert!(!everything.contains(KEY), "the key leaked: {everything}");
    }
}

#[test]
fn a_hosted_provider_without_a_key_fails_before_any_request() {
    let sb = sandbox_with_t();
    let out = sb
        .atip()
        .args([
            "--output",
            "json",
            "chat",
            "--provider",
            "anthropic",
            "--model",
            "m",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78), "{}", show(&out));
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(err["error"]["code"], "api_key_missing");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ANTHROPIC_API_KEY")
    );
    // A key is never sent in clear text to another machine.
    let out = sb
        .atip()
        .args([
            "--output",
            "json",
            "chat",
            "--provider",
            "openai",
            "--model",
            "m",
        ])
        .args(["--base-url", "http://192.0.2.1/v1", "hi"])
        .env("OPENAI_API_KEY", KEY)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("insecure_endpoint"));
}

#[test]
fn a_local_server_needs_no_key_and_the_prompt_can_come_on_stdin() {
    use std::io::Write;
    let api = Api::Openai;
    let sb = sandbox_with_t();
    let ep = Endpoint::start(vec![Reply::ok(api.text("Local answer."))]);
    let mut child = sb
        .atip()
        .args([
            "--output",
            "text",
            "chat",
            "--provider",
            "openai",
            "--model",
            "m",
        ])
        .args(["--base-url", &api.base(&ep), "--tools", "t"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from stdin\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Local answer.\n");
    let req = &ep.requests()[0];
    assert_eq!(req.header("authorization"), None);
    assert_eq!(req.body["messages"][0]["content"], "from stdin\n");
}

#[test]
fn search_mode_offers_two_tools_and_runs_what_the_model_found() {
    for api in [Api::Openai, Api::Gemini] {
        let sb = sandbox_with_t();
        let search = [(id(api, "s1"), "atip_search", json!({"query": "print json"}))];
        let call = [(
            id(api, "c1"),
            "atip_call",
            json!({"name": "t_json", "arguments": {}}),
        )];
        let ep = Endpoint::start(vec![
            Reply::ok(api.calls(&search)),
            Reply::ok(api.calls(&call)),
            Reply::ok(api.text("Found and ran it.")),
        ]);
        let r = chat(&sb, api, &ep, &["--search-threshold", "3"]);
        assert_eq!(r.code, 0, "{api:?}: {}", show(&r.raw));
        let reqs = ep.requests();
        let names: Vec<String> = match api {
            Api::Gemini => reqs[0].body["tools"][0]["functionDeclarations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["name"].as_str().unwrap().to_string())
                .collect(),
            _ => reqs[0].body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["function"]["name"].as_str().unwrap().to_string())
                .collect(),
        };
        assert_eq!(names, ["atip_search", "atip_call"]);
        let found = &api.results(&reqs[1].body, &search)[0].content;
        assert_eq!(found["results"][0]["name"], "t_json", "{found}");
        assert!(found["results"][0]["inputSchema"].is_object());
        assert!(found["total"].as_u64().unwrap() > 3);
        let ran = &api.results(&reqs[2].body, &call)[0].content;
        assert_eq!(ran["data"]["json"], json!({"ok": true, "n": 1}));
        let recorded: Vec<&str> = r.out["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(recorded, ["atip_search", "t_json"]);
    }
}

#[test]
fn a_tool_outside_the_selection_is_refused_as_unknown() {
    let api = Api::Openai;
    let sb = sandbox_with_t();
    let calls = [("x", "t_delete", json!({"target": "a"}))];
    let ep = Endpoint::start(vec![
        Reply::ok(api.calls(&calls)),
        Reply::ok(api.text("ok")),
    ]);
    let r = chat(&sb, api, &ep, &["--commands", "t echo,t json"]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    let reqs = ep.requests();
    let offered: Vec<&str> = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["t_echo", "t_json"]);
    let res = &api.results(&reqs[1].body, &calls)[0];
    assert_eq!(res.content["error"]["code"], "tool_not_found");
    assert!(audit_lines(&sb).is_empty(), "nothing was prepared");
}

#[test]
fn the_transcript_has_every_message_and_no_secret() {
    let api = Api::Anthropic;
    let sb = sandbox_with_t();
    let calls = [("toolu_s", "t_secret", json!({}))];
    let ep = Endpoint::start(vec![
        Reply::ok(api.calls(&calls)),
        Reply::ok(api.text("Done.")),
    ]);
    let path = sb.path().join("chat.jsonl");
    let mut cmd = sb.atip();
    cmd.args([
        "--output",
        "json",
        "chat",
        "--provider",
        "anthropic",
        "--model",
        "test-model",
    ])
    .args([
        "--base-url",
        &api.base(&ep),
        "--transcript",
        path.to_str().unwrap(),
    ])
    .arg("show secrets")
    .env("ANTHROPIC_API_KEY", KEY)
    .env("T_TOKEN", "tok-very-secret-value");
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(KEY) && !text.contains("tok-very-secret-value"));
    assert!(!text.contains("ghp_abcdefghijklmnopqrstuvwxyz0123456789"));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["transcript"], "atip-chat/1");
    assert_eq!(lines[0]["provider"], "anthropic");
    let turns: Vec<(u64, &str)> = lines[1..lines.len() - 1]
        .iter()
        .map(|l| {
            (
                l["turn"].as_u64().unwrap(),
                l["message"]["role"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        turns,
        [(0, "user"), (1, "assistant"), (1, "user"), (2, "assistant")]
    );
    assert_eq!(lines.last().unwrap()["end"]["stopReason"], "answer");
    assert!(text.contains("[REDACTED:env:T_TOKEN]"));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn the_run_timeout_cuts_a_running_call_and_ends_the_run() {
    let api = Api::Responses;
    let sb = sandbox_with_t();
    let calls = [("call_h", "t_hang", json!({}))];
    // The model would answer next, but the run's time is up before it is asked.
    let ep = Endpoint::start(vec![
        Reply::ok(api.calls(&calls)),
        Reply::ok(api.text("late")),
    ]);
    let started = std::time::Instant::now();
    let r = chat(&sb, api, &ep, &["--timeout", "20s", "--run-timeout", "1s"]);
    assert_eq!(r.code, 75, "{}", show(&r.raw));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(ep.requests().len(), 1);
    assert_eq!(r.out["stopReason"], "timeout");
    assert_eq!(r.out["error"]["code"], "run_timeout");
    let c = &r.out["calls"][0];
    assert_eq!(
        c["error"], "timeout",
        "the call was cut at the run's end: {c}"
    );
    let ms = c["durationMs"].as_u64().unwrap();
    assert!((500..5000).contains(&ms), "{ms} ms");
}

#[test]
fn system_text_goes_where_each_api_wants_it() {
    for api in ALL {
        let sb = sandbox_with_t();
        let ep = Endpoint::start(vec![Reply::ok(api.text("ok"))]);
        let r = chat(&sb, api, &ep, &["--system", "Be brief."]);
        assert_eq!(r.code, 0, "{api:?}: {}", show(&r.raw));
        let body = &ep.requests()[0].body;
        match api {
            Api::Openai => assert_eq!(
                body["messages"][0],
                json!({"role": "system", "content": "Be brief."})
            ),
            Api::Responses => assert_eq!(body["instructions"], "Be brief."),
            Api::Anthropic => assert_eq!(body["system"], "Be brief."),
            Api::Gemini => assert_eq!(
                body["systemInstruction"],
                json!({"parts": [{"text": "Be brief."}]})
            ),
        }
    }
}

#[test]
fn an_interrupt_kills_the_running_call_and_ends_the_run() {
    // SIGINT, SIGTERM, SIGHUP alike: the report is printed, the status is 128 + the signal.
    for (sig, status) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
    ] {
        interrupted_by(sig, status);
    }
}

fn interrupted_by(sig: i32, status: i32) {
    let api = Api::Openai;
    let sb = sandbox_with_t();
    let calls = [("call_h", "t_hang", json!({}))];
    let ep = Endpoint::start(vec![
        Reply::ok(api.calls(&calls)),
        Reply::ok(api.text("late")),
    ]);
    let child = sb
        .atip()
        .args([
            "--output",
            "json",
            "chat",
            "--provider",
            "openai",
            "--model",
            "test-model",
        ])
        .args(["--base-url", &api.base(&ep), "--timeout", "30s", "hang"])
        .env("OPENAI_API_KEY", KEY)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pidfile = sb.path().join("grandchild.pid");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !pidfile.exists() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(pidfile.exists(), "the tool started");
    let started = std::time::Instant::now();
    unsafe { libc::kill(child.id() as i32, sig) };
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(status), "{}", show(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["stopReason"], "interrupted");
    assert_eq!(report["calls"][0]["error"], "cancelled");
    assert_eq!(ep.requests().len(), 1, "the model is not asked again");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_dead(pid);
}
