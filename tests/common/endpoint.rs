//! A scripted model endpoint for `atip chat` tests: an HTTP/1.1 server on 127.0.0.1
//! that answers each request with the next reply of its script and records every
//! request (method, path, headers, JSON body). Plus, per API, the response shapes a
//! model sends and readers for the tool results atip must send back.
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A status, extra headers and a JSON body.
    Json(u16, Vec<(&'static str, String)>, Value),
    /// These bytes, then the connection is closed (a response cut short).
    Raw(Vec<u8>),
}

impl Reply {
    /// 200 with a JSON body.
    pub fn ok(body: Value) -> Reply {
        Reply::Json(200, Vec::new(), body)
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub at: std::time::Instant,
}

impl Recorded {
    /// A header's value (names compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The running server. It serves exactly as many connections as the script has replies,
/// then stops; a request past the script finds nobody listening.
pub struct Endpoint {
    pub port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
    handle: Option<JoinHandle<()>>,
}

impl Endpoint {
    pub fn start(script: Vec<Reply>) -> Endpoint {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let rec = requests.clone();
        let handle = std::thread::spawn(move || {
            for reply in script {
                let Ok((stream, _)) = listener.accept() else {
                    return;
                };
                serve(stream, reply, &rec);
            }
        });
        Endpoint {
            port,
            requests,
            handle: Some(handle),
        }
    }

    /// `http://127.0.0.1:PORT` + `suffix`.
    pub fn url(&self, suffix: &str) -> String {
        format!("http://127.0.0.1:{}{suffix}", self.port)
    }

    /// The requests so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, reply: Reply, rec: &Mutex<Vec<Recorded>>) {
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .ok();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).unwrap();
    rec.lock().unwrap().push(Recorded {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        at: std::time::Instant::now(),
    });
    let mut out = stream;
    let bytes = match reply {
        Reply::Json(status, extra, body) => {
            let text = body.to_string();
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                text.len()
            );
            for (k, v) in extra {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            [head.into_bytes(), text.into_bytes()].concat()
        }
        Reply::Raw(b) => b,
    };
    let _ = out.write_all(&bytes);
    let _ = out.flush();
    let _ = out.shutdown(std::net::Shutdown::Both);
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // Unblock an accept still waiting for a request that never came.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The four APIs, as `--provider` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Openai,
    Responses,
    Anthropic,
    Gemini,
}

pub const ALL: [Api; 4] = [Api::Openai, Api::Responses, Api::Anthropic, Api::Gemini];

/// One tool call a scripted model makes: id, name, arguments.
pub type Call<'a> = (&'a str, &'a str, Value);

/// A tool result as atip sent it back.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The id it answers (Gemini: the call's name when the call had no id).
    pub id: String,
    /// The result envelope atip wrote.
    pub content: Value,
    /// Anthropic's `is_error` (other APIs have no such flag).
    pub is_error: Option<bool>,
}

impl Api {
    pub fn flag(self) -> &'static str {
        match self {
            Api::Openai => "openai",
            Api::Responses => "openai-responses",
            Api::Anthropic => "anthropic",
            Api::Gemini => "gemini",
        }
    }

    pub fn key_var(self) -> &'static str {
        match self {
            Api::Openai | Api::Responses => "OPENAI_API_KEY",
            Api::Anthropic => "ANTHROPIC_API_KEY",
            Api::Gemini => "GEMINI_API_KEY",
        }
    }

    /// What `--base-url` is for the endpoint.
    pub fn base(self, ep: &Endpoint) -> String {
        match self {
            Api::Openai | Api::Responses => ep.url("/v1"),
            Api::Anthropic => ep.url(""),
            Api::Gemini => ep.url("/v1beta"),
        }
    }

    /// The path every request must go to, for model `m`.
    pub fn path(self) -> &'static str {
        match self {
            Api::Openai => "/v1/chat/completions",
            Api::Responses => "/v1/responses",
            Api::Anthropic => "/v1/messages",
            Api::Gemini => "/v1beta/models/test-model:generateContent",
        }
    }

    /// The header carrying the key, and its expected value for key `k`.
    pub fn auth(self, k: &str) -> (&'static str, String) {
        match self {
            Api::Openai | Api::Responses => ("authorization", format!("Bearer {k}")),
            Api::Anthropic => ("x-api-key", k.to_string()),
            Api::Gemini => ("x-goog-api-key", k.to_string()),
        }
    }

    /// The `atip export --format` whose output is the request's `tools`.
    pub fn export_format(self) -> &'static str {
        match self {
            Api::Openai | Api::Responses => "openai",
            Api::Anthropic => "anthropic",
            Api::Gemini => "gemini",
        }
    }

    /// The `tools` value expected in a request, from `atip export`'s output.
    pub fn expected_tools(self, exported: &Value) -> Value {
        match self {
            Api::Responses => Value::Array(
                exported
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| {
                        let f = &t["function"];
                        json!({"type": "function", "name": f["name"], "description": f["description"],
                               "parameters": f["parameters"], "strict": false})
                    })
                    .collect(),
            ),
            _ => exported.clone(),
        }
    }

    /// The conversation list of a request body.
    pub fn messages(self, body: &Value) -> Vec<Value> {
        let key = match self {
            Api::Openai | Api::Anthropic => "messages",
            Api::Responses => "input",
            Api::Gemini => "contents",
        };
        body[key].as_array().cloned().unwrap_or_default()
    }

    /// A model response that makes these calls (Gemini: an empty id means none).
    pub fn calls(self, calls: &[Call]) -> Value {
        match self {
            Api::Openai => {
                json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0,
                "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": calls.iter().map(|(id, name, args)| json!({"id": id, "type": "function",
                    "function": {"name": name, "arguments": args.to_string()}})).collect::<Vec<_>>()}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
            }
            Api::Responses => json!({"id": "resp_1", "object": "response", "status": "completed",
                "output": calls.iter().map(|(id, name, args)| json!({"type": "function_call",
                    "id": format!("fc_{id}"), "call_id": id, "name": name, "arguments": args.to_string(),
                    "status": "completed"})).collect::<Vec<_>>(),
                "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}),
            Api::Anthropic => {
                let mut content = vec![json!({"type": "text", "text": "Let me check."})];
                content.extend(calls.iter().map(|(id, name, args)| {
                    json!({"type": "tool_use", "id": id, "name": name, "input": args})
                }));
                json!({"id": "msg_1", "type": "message", "role": "assistant", "content": content,
                    "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}})
            }
            Api::Gemini => json!({"candidates": [{"content": {"role": "model", "parts":
                calls.iter().map(|(id, name, args)| {
                    let mut fc = json!({"name": name, "args": args});
                    if !id.is_empty() { fc["id"] = json!(id); }
                    json!({"functionCall": fc})
                }).collect::<Vec<_>>()}, "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}),
        }
    }

    /// A model response with a plain answer.
    pub fn text(self, text: &str) -> Value {
        match self {
            Api::Openai => {
                json!({"id": "chatcmpl-2", "object": "chat.completion", "choices": [{"index": 0,
                "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27}})
            }
            Api::Responses => json!({"id": "resp_2", "object": "response", "status": "completed",
                "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
                "usage": {"input_tokens": 20, "output_tokens": 7, "total_tokens": 27}}),
            Api::Anthropic => json!({"id": "msg_2", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 20, "output_tokens": 7}}),
            Api::Gemini => {
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 7, "totalTokenCount": 27}})
            }
        }
    }

    /// The tool results at the end of a request body, checked to be in the API's exact
    /// shape, answering `calls` in order (each by its id). Panics with the body otherwise.
    pub fn results(self, body: &Value, calls: &[Call]) -> Vec<ToolResult> {
        let msgs = self.messages(body);
        let n = calls.len();
        let shown = || serde_json::to_string_pretty(body).unwrap();
        let out: Vec<ToolResult> = match self {
            Api::Openai => {
                assert!(msgs.len() >= n + 2, "{}", shown());
                let assistant = &msgs[msgs.len() - n - 1];
                assert_eq!(assistant["role"], "assistant", "{}", shown());
                let ids: Vec<&str> = assistant["tool_calls"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["id"].as_str().unwrap())
                    .collect();
                assert_eq!(
                    ids,
                    calls.iter().map(|c| c.0).collect::<Vec<_>>(),
                    "assistant message keeps the calls"
                );
                msgs[msgs.len() - n..]
                    .iter()
                    .map(|m| {
                        let keys: Vec<&String> = m.as_object().unwrap().keys().collect();
                        assert_eq!(keys, ["role", "tool_call_id", "content"], "{m}");
                        assert_eq!(m["role"], "tool");
                        ToolResult {
                            id: m["tool_call_id"].as_str().unwrap().into(),
                            content: serde_json::from_str(m["content"].as_str().unwrap()).unwrap(),
                            is_error: None,
                        }
                    })
                    .collect()
            }
            Api::Responses => {
                let tail = &msgs[msgs.len() - n..];
                let before = &msgs[msgs.len() - 2 * n..msgs.len() - n];
                for (b, c) in before.iter().zip(calls) {
                    assert_eq!(
                        (b["type"].as_str(), b["call_id"].as_str()),
                        (Some("function_call"), Some(c.0)),
                        "{}",
                        shown()
                    );
                }
                tail.iter()
                    .map(|m| {
                        let keys: Vec<&String> = m.as_object().unwrap().keys().collect();
                        assert_eq!(keys, ["type", "call_id", "output"], "{m}");
                        assert_eq!(m["type"], "function_call_output");
                        ToolResult {
                            id: m["call_id"].as_str().unwrap().into(),
                            content: serde_json::from_str(m["output"].as_str().unwrap()).unwrap(),
                            is_error: None,
                        }
                    })
                    .collect()
            }
            Api::Anthropic => {
                let last = msgs.last().unwrap();
                assert_eq!(last["role"], "user", "{}", shown());
                let prev = &msgs[msgs.len() - 2];
                assert_eq!(prev["role"], "assistant");
                let uses: Vec<&str> = prev["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|b| b["type"] == "tool_use")
                    .map(|b| b["id"].as_str().unwrap())
                    .collect();
                assert_eq!(uses, calls.iter().map(|c| c.0).collect::<Vec<_>>());
                last["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| {
                        assert_eq!(b["type"], "tool_result", "{b}");
                        let keys: Vec<&String> = b.as_object().unwrap().keys().collect();
                        assert!(
                            keys == ["type", "tool_use_id", "content"]
                                || keys == ["type", "tool_use_id", "content", "is_error"],
                            "{b}"
                        );
                        ToolResult {
                            id: b["tool_use_id"].as_str().unwrap().into(),
                            content: serde_json::from_str(b["content"].as_str().unwrap()).unwrap(),
                            is_error: b.get("is_error").and_then(Value::as_bool),
                        }
                    })
                    .collect()
            }
            Api::Gemini => {
                let last = msgs.last().unwrap();
                assert_eq!(last["role"], "user", "{}", shown());
                let prev = &msgs[msgs.len() - 2];
                assert_eq!(prev["role"], "model");
                last["parts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .zip(calls)
                    .map(|(p, c)| {
                        let keys: Vec<&String> = p.as_object().unwrap().keys().collect();
                        assert_eq!(keys, ["functionResponse"], "{p}");
                        let fr = &p["functionResponse"];
                        assert_eq!(fr["name"], c.1, "a function response names its call: {fr}");
                        assert!(fr["response"].is_object(), "{fr}");
                        let id = fr.get("id").and_then(Value::as_str).map(String::from);
                        assert_eq!(id.as_deref(), (!c.0.is_empty()).then_some(c.0), "{fr}");
                        ToolResult {
                            id: id.unwrap_or_else(|| c.1.to_string()),
                            content: fr["response"].clone(),
                            is_error: None,
                        }
                    })
                    .collect()
            }
        };
        assert_eq!(out.len(), n, "one result per call: {}", shown());
        for (r, c) in out.iter().zip(calls) {
            let want = if c.0.is_empty() { c.1 } else { c.0 };
            assert_eq!(r.id, want, "results answer the calls in order");
        }
        out
    }
}
