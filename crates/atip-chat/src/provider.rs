//! The wire formats of the model APIs `atip chat` talks to: where a request goes, how
//! the conversation is laid out in its body, and what a response says (tool calls, text,
//! why it stopped, tokens used).
//!
//! Tool definitions come from `compile` (the `atip export` formats) and tool calls and
//! results from the `exec --calls` adapters ([`crate::exec::calls`]), so switching API
//! changes only this module, never a tool definition. Must not send anything or run tools.

use crate::compile::formats::{self, ExportTool, Format};
use crate::exec::calls::{self, Provider, Shape, ToolCall};
use crate::output::{AtipError, ErrorCode};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// The model API, as `--provider` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// OpenAI Chat Completions, and the servers compatible with it (llama.cpp, vLLM, Ollama…).
    Openai,
    /// OpenAI Responses API.
    OpenaiResponses,
    /// Anthropic Messages API.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
}

impl Api {
    /// The name `--provider` takes.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Api::Openai => "openai",
            Api::OpenaiResponses => "openai-responses",
            Api::Anthropic => "anthropic",
            Api::Gemini => "gemini",
        }
    }

    /// The base URL of the hosted API.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Api::Openai | Api::OpenaiResponses => "https://api.openai.com/v1",
            Api::Anthropic => "https://api.anthropic.com",
            Api::Gemini => "https://generativelanguage.googleapis.com/v1beta",
        }
    }

    /// Environment variables holding the API key, first set wins.
    pub fn key_vars(self) -> &'static [&'static str] {
        match self {
            Api::Openai | Api::OpenaiResponses => &["OPENAI_API_KEY"],
            Api::Anthropic => &["ANTHROPIC_API_KEY"],
            Api::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        }
    }

    /// The endpoint for one request, below `base` (no trailing slash).
    pub fn url(self, base: &str, model: &str) -> String {
        let base = base.trim_end_matches('/');
        match self {
            Api::Openai => format!("{base}/chat/completions"),
            Api::OpenaiResponses => format!("{base}/responses"),
            Api::Anthropic => format!("{base}/v1/messages"),
            Api::Gemini => format!("{base}/models/{}:generateContent", encode_segment(model)),
        }
    }

    /// Headers carrying the key (the value is the caller's secret, never logged).
    pub fn auth_headers(self, key: &str) -> Vec<(&'static str, String)> {
        match self {
            Api::Openai | Api::OpenaiResponses => vec![("authorization", format!("Bearer {key}"))],
            Api::Anthropic => vec![("x-api-key", key.to_string())],
            Api::Gemini => vec![("x-goog-api-key", key.to_string())],
        }
    }

    /// Headers every request carries.
    pub fn fixed_headers(self) -> Vec<(&'static str, String)> {
        match self {
            Api::Anthropic => vec![("anthropic-version", "2023-06-01".into())],
            _ => Vec::new(),
        }
    }

    /// The shape of tool calls and results (the `exec --calls` adapters).
    pub(crate) fn shape(self) -> Shape {
        match self {
            Api::Openai => Shape::OpenaiChat,
            Api::OpenaiResponses => Shape::OpenaiResponses,
            Api::Anthropic => Shape::Anthropic,
            Api::Gemini => Shape::Gemini,
        }
    }

    /// The key of the conversation list in a request body.
    fn list_key(self) -> &'static str {
        match self {
            Api::Openai | Api::Anthropic => "messages",
            Api::OpenaiResponses => "input",
            Api::Gemini => "contents",
        }
    }

    /// The value of the request's `tools` field, exactly as `atip export` writes it (for
    /// the Responses API, the Chat Completions function moved up one level, as that API
    /// wants it, with `strict: false` because the schemas are the plain ones).
    pub fn tools(self, tools: &[ExportTool]) -> Value {
        match self {
            Api::Openai => formats::render(tools, Format::Openai),
            Api::OpenaiResponses => {
                let chat = formats::render(tools, Format::Openai);
                Value::Array(
                    chat.as_array()
                        .into_iter()
                        .flatten()
                        .map(responses_tool)
                        .collect(),
                )
            }
            Api::Anthropic => formats::render(tools, Format::Anthropic),
            Api::Gemini => formats::render(tools, Format::Gemini),
        }
    }
}

/// A Chat Completions tool as the Responses API takes it: `{type, name, description,
/// parameters, strict}`. That API makes a function strict unless told otherwise.
pub(crate) fn responses_tool(chat: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), "function".into());
    if let Some(Value::Object(f)) = chat.get("function") {
        for (k, v) in f {
            out.insert(k.clone(), v.clone());
        }
    }
    if !out.contains_key("strict") {
        out.insert("strict".into(), false.into());
    }
    Value::Object(out)
}

/// Percent-encodes a model name for one URL path segment (`:` and `/` included).
fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Tokens one or more responses used, whatever the API calls them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Their sum.
    pub total_tokens: u64,
}

impl Usage {
    /// Adds another response's usage.
    pub(crate) fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.total_tokens = self.input_tokens + self.output_tokens;
    }
}

/// What one model response says.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Tool calls, in order.
    pub calls: Vec<ToolCall>,
    /// Text the model wrote (the answer, when there are no calls).
    pub text: String,
    /// The model stopped at its output-token limit, so `text` may be cut.
    pub truncated: bool,
    /// Tokens used.
    pub usage: Usage,
    /// The messages (or items) to append to the conversation for this response.
    pub messages: Vec<Value>,
}

/// A conversation laid out as one API's request body.
#[derive(Debug, Clone)]
pub struct Conversation {
    api: Api,
    body: Value,
}

fn malformed(what: impl Into<String>) -> AtipError {
    AtipError::new(
        ErrorCode::EndpointMalformed,
        format!(
            "the model endpoint's response is malformed: {}",
            what.into()
        ),
    )
    .hint("check --provider matches the endpoint's API, and --base-url")
}

fn text_of_parts(parts: &[Value], kinds: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| {
            p.get("type")
                .and_then(Value::as_str)
                .is_none_or(|t| kinds.contains(&t))
        })
        .filter(|p| p.get("thought") != Some(&Value::Bool(true)))
        .filter_map(|p| p.get("text").or_else(|| p.get("refusal")))
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("")
}

fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

impl Conversation {
    /// A new conversation: the optional system text, the user's prompt and the tools
    /// (`None`: no tools). Returns it with the messages it starts with.
    pub fn new(
        api: Api,
        model: &str,
        system: Option<&str>,
        prompt: &str,
        tools: Option<Value>,
        max_tokens: u32,
    ) -> (Conversation, Vec<Value>) {
        let mut body = Map::new();
        let mut start = Vec::new();
        match api {
            Api::Openai => {
                body.insert("model".into(), model.into());
                if let Some(s) = system {
                    start.push(json!({"role": "system", "content": s}));
                }
                start.push(json!({"role": "user", "content": prompt}));
            }
            Api::OpenaiResponses => {
                body.insert("model".into(), model.into());
                if let Some(s) = system {
                    body.insert("instructions".into(), s.into());
                }
                start.push(json!({"role": "user", "content": prompt}));
            }
            Api::Anthropic => {
                body.insert("model".into(), model.into());
                body.insert("max_tokens".into(), max_tokens.into());
                if let Some(s) = system {
                    body.insert("system".into(), s.into());
                }
                start.push(json!({"role": "user", "content": prompt}));
            }
            Api::Gemini => {
                if let Some(s) = system {
                    body.insert("systemInstruction".into(), json!({"parts": [{"text": s}]}));
                }
                start.push(json!({"role": "user", "parts": [{"text": prompt}]}));
            }
        }
        body.insert(api.list_key().into(), Value::Array(start.clone()));
        if let Some(t) = tools {
            body.insert("tools".into(), t);
        }
        (
            Conversation {
                api,
                body: Value::Object(body),
            },
            start,
        )
    }

    /// The request body as it stands.
    pub(crate) fn body(&self) -> &Value {
        &self.body
    }

    /// Appends messages (or Responses items) to the conversation.
    pub(crate) fn push(&mut self, messages: &[Value]) {
        if let Some(Value::Array(list)) = self.body.get_mut(self.api.list_key()) {
            list.extend(messages.iter().cloned());
        }
    }

    /// Reads one response body. `turn` numbers synthesized call ids.
    pub(crate) fn read(&self, doc: &Value, turn: u32) -> Result<Reply, AtipError> {
        if !doc.is_object() {
            return Err(malformed("the body is not a JSON object"));
        }
        match self.api {
            Api::Openai => read_openai_chat(doc, turn),
            Api::OpenaiResponses => read_responses(doc),
            Api::Anthropic => read_anthropic(doc),
            Api::Gemini => read_gemini(doc),
        }
    }

    /// The messages that carry tool results back: `results[i]` answers `calls[i]`.
    pub(crate) fn results(
        &self,
        calls: &[ToolCall],
        results: &[Value],
        failed: &[bool],
    ) -> Vec<Value> {
        match calls::result_messages(self.api.shape(), calls, results, failed) {
            Value::Array(list) => list,
            other => vec![other],
        }
    }
}

fn read_openai_chat(doc: &Value, turn: u32) -> Result<Reply, AtipError> {
    let choice = doc
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| malformed("no choices[0]"))?;
    let message = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| malformed("no choices[0].message"))?;
    // Only the first choice continues the conversation.
    let mut one = json!({"choices": [{"message": message}]});
    // Some compatible servers leave out call ids; the results must carry one.
    if let Some(Value::Array(list)) = one.pointer_mut("/choices/0/message/tool_calls") {
        for (i, c) in list.iter_mut().enumerate() {
            if c.get("id")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
                && let Some(o) = c.as_object_mut()
            {
                o.insert("id".into(), format!("call_atip_{turn}_{i}").into());
            }
        }
    }
    let calls = calls::parse(Provider::Openai, &one)
        .map(|(_, c)| c)
        .map_err(|e| malformed(e.message))?;
    let msg = &one["choices"][0]["message"];
    let text = match msg.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => text_of_parts(parts, &["text", "output_text"]),
        _ => String::new(),
    };
    let mut assistant =
        json!({"role": "assistant", "content": msg.get("content").cloned().unwrap_or(Value::Null)});
    if let Some(tc) = msg
        .get("tool_calls")
        .filter(|t| t.as_array().is_some_and(|a| !a.is_empty()))
    {
        assistant["tool_calls"] = tc.clone();
    }
    let u = doc.get("usage").cloned().unwrap_or(Value::Null);
    Ok(Reply {
        calls,
        text,
        truncated: choice.get("finish_reason").and_then(Value::as_str) == Some("length"),
        usage: usage(count(&u, "prompt_tokens"), count(&u, "completion_tokens")),
        messages: vec![assistant],
    })
}

fn read_responses(doc: &Value) -> Result<Reply, AtipError> {
    let items = doc
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no output[]"))?;
    let calls = calls::parse(Provider::Openai, &json!({"output": items}))
        .map(|(_, c)| c)
        .map_err(|e| malformed(e.message))?;
    let text = items
        .iter()
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("message"))
        .filter_map(|i| i.get("content").and_then(Value::as_array))
        .map(|parts| text_of_parts(parts, &["output_text", "refusal"]))
        .collect::<Vec<_>>()
        .join("\n");
    let u = doc.get("usage").cloned().unwrap_or(Value::Null);
    Ok(Reply {
        calls,
        text,
        truncated: doc.get("status").and_then(Value::as_str) == Some("incomplete"),
        usage: usage(count(&u, "input_tokens"), count(&u, "output_tokens")),
        messages: items.clone(),
    })
}

fn read_anthropic(doc: &Value) -> Result<Reply, AtipError> {
    let content = doc
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no content[]"))?;
    let calls = calls::parse(Provider::Anthropic, doc)
        .map(|(_, c)| c)
        .map_err(|e| malformed(e.message))?;
    let u = doc.get("usage").cloned().unwrap_or(Value::Null);
    Ok(Reply {
        calls,
        text: text_of_parts(content, &["text"]),
        truncated: doc.get("stop_reason").and_then(Value::as_str) == Some("max_tokens"),
        usage: usage(count(&u, "input_tokens"), count(&u, "output_tokens")),
        messages: vec![json!({"role": "assistant", "content": content})],
    })
}

fn read_gemini(doc: &Value) -> Result<Reply, AtipError> {
    let Some(cand) = doc
        .get("candidates")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    else {
        if let Some(reason) = doc
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str)
        {
            return Err(AtipError::new(
                ErrorCode::ModelBlocked,
                format!("the model refused the conversation: blockReason {reason}"),
            )
            .hint("rephrase the prompt"));
        }
        return Err(malformed("no candidates[0]"));
    };
    let mut content = cand
        .get("content")
        .cloned()
        .unwrap_or_else(|| json!({"parts": []}));
    if !content.is_object() {
        return Err(malformed("candidates[0].content is not an object"));
    }
    content["role"] = "model".into();
    let parts = content
        .get("parts")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let calls = calls::parse(Provider::Gemini, &json!({"parts": parts}))
        .map(|(_, c)| c)
        .map_err(|e| malformed(e.message))?;
    let u = doc.get("usageMetadata").cloned().unwrap_or(Value::Null);
    Ok(Reply {
        calls,
        text: text_of_parts(&parts, &[]),
        truncated: cand.get("finishReason").and_then(Value::as_str) == Some("MAX_TOKENS"),
        usage: usage(
            count(&u, "promptTokenCount"),
            count(&u, "candidatesTokenCount"),
        ),
        messages: vec![content],
    })
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
    }
}

impl Conversation {
    /// Number of messages (or Responses items) in the conversation.
    pub fn len(&self) -> usize {
        self.body
            .get(self.api.list_key())
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    }

    /// Whether the conversation has no messages (never, after [`Conversation::new`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::calls::RawArgs;

    #[test]
    fn urls_and_headers() {
        assert_eq!(
            Api::Openai.url("http://h/v1/", "m"),
            "http://h/v1/chat/completions"
        );
        assert_eq!(
            Api::Gemini.url(Api::Gemini.default_base_url(), "models/x:y"),
            "https://generativelanguage.googleapis.com/v1beta/models/models%2Fx%3Ay:generateContent"
        );
        assert_eq!(Api::Anthropic.url("http://h", "m"), "http://h/v1/messages");
        assert_eq!(
            Api::Openai.auth_headers("k"),
            [("authorization", "Bearer k".to_string())]
        );
    }

    #[test]
    fn responses_tools_are_the_chat_functions_moved_up() {
        let chat = json!({"type": "function", "function": {"name": "a", "description": "d", "parameters": {"type": "object"}}});
        assert_eq!(
            responses_tool(&chat),
            json!({"type": "function", "name": "a", "description": "d", "parameters": {"type": "object"}, "strict": false})
        );
    }

    #[test]
    fn openai_chat_round_trip() {
        let (mut c, start) = Conversation::new(Api::Openai, "m", Some("sys"), "hi", None, 10);
        assert_eq!(start.len(), 2);
        assert!(c.body().get("tools").is_none());
        let doc = json!({"choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"type": "function", "function": {"name": "t", "arguments": "{}"}}]}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2}});
        let r = c.read(&doc, 1).unwrap();
        assert_eq!(r.calls[0].id.as_deref(), Some("call_atip_1_0"));
        assert_eq!(r.messages[0]["tool_calls"][0]["id"], "call_atip_1_0");
        assert_eq!(r.usage.total_tokens, 7);
        c.push(&r.messages);
        let msgs = c.results(&r.calls, &[json!({"status": "ok"})], &[false]);
        assert_eq!(msgs[0]["tool_call_id"], "call_atip_1_0");
        c.push(&msgs);
        assert_eq!(c.len(), 4);
        assert!(c.read(&json!({"choices": []}), 2).is_err());
        assert!(c.read(&json!([1]), 2).is_err());
    }

    #[test]
    fn gemini_and_anthropic_and_responses() {
        let (g, _) = Conversation::new(Api::Gemini, "m", Some("s"), "p", None, 1);
        assert_eq!(g.body()["systemInstruction"]["parts"][0]["text"], "s");
        let r = g
            .read(
                &json!({"candidates": [{"content": {"parts": [{"text": "a", "thought": true}, {"text": "b"},
                {"functionCall": {"name": "t", "args": {"x": 1}}}]}, "finishReason": "STOP"}]}),
                1,
            )
            .unwrap();
        assert_eq!(r.text, "b");
        assert_eq!(r.calls[0].arguments, RawArgs::Value(json!({"x": 1})));
        assert_eq!(r.messages[0]["role"], "model");
        let blocked = g.read(&json!({"promptFeedback": {"blockReason": "SAFETY"}}), 1);
        assert_eq!(blocked.unwrap_err().code, "model_blocked");

        let (a, _) = Conversation::new(Api::Anthropic, "m", None, "p", None, 99);
        assert_eq!(a.body()["max_tokens"], 99);
        let r = a
            .read(
                &json!({"content": [{"type": "text", "text": "x"}], "stop_reason": "max_tokens"}),
                1,
            )
            .unwrap();
        assert!(r.truncated && r.calls.is_empty());

        let (o, _) = Conversation::new(Api::OpenaiResponses, "m", Some("s"), "p", None, 1);
        assert_eq!(o.body()["instructions"], "s");
        let r = o
            .read(
                &json!({"output": [{"type": "message", "content": [{"type": "output_text", "text": "done"}]}],
                "usage": {"input_tokens": 1, "output_tokens": 1}}),
                1,
            )
            .unwrap();
        assert_eq!(r.text, "done");
        assert!(o.read(&json!({"id": "x"}), 1).is_err());
    }
}
