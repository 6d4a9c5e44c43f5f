//! Provider adapters: reading the tool calls out of a model response and writing the
//! tool-result messages that go back, with the ids each provider pairs them by.
//!
//! Supported shapes (the whole response or the relevant inner part):
//! - OpenAI Chat Completions: `choices[].message.tool_calls[]`
//!   `{id, type:"function", function:{name, arguments: "<JSON text>"}}` →
//!   `{"role":"tool","tool_call_id",content}` per call.
//! - OpenAI Responses: `output[]` items `{type:"function_call", call_id, name, arguments}`
//!   → `{"type":"function_call_output","call_id",output}` per call.
//! - Anthropic Messages: `content[]` blocks `{type:"tool_use", id, name, input}` → one
//!   `{"role":"user","content":[{"type":"tool_result","tool_use_id",content,is_error}]}`.
//! - Gemini: `candidates[].content.parts[].functionCall {name, args, id?}` → one
//!   `{"role":"user","parts":[{"functionResponse":{name, id?, response}}]}`.
//!
//! Must not run anything or decide policy.

use crate::output::{AtipError, ErrorCode};
use serde_json::{Map, Value, json};

/// The provider family named by `--provider`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Provider {
    /// OpenAI: Chat Completions or Responses API.
    Openai,
    /// Anthropic Messages API.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
}

/// The exact response shape found, which decides the result format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// OpenAI Chat Completions.
    OpenaiChat,
    /// OpenAI Responses API.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini.
    Gemini,
}

/// One tool call taken from a response.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The provider's id for the call (`tool_call_id`, `call_id`, `tool_use_id`, Gemini `id`).
    pub id: Option<String>,
    /// Tool name as the model wrote it.
    pub name: String,
    /// The arguments: JSON text (OpenAI) or a value (Anthropic, Gemini).
    pub arguments: RawArgs,
}

/// Arguments as the provider sent them.
#[derive(Debug, Clone, PartialEq)]
pub enum RawArgs {
    /// JSON text still to be parsed (OpenAI sends a string).
    Text(String),
    /// An already-parsed value.
    Value(Value),
}

fn bad(msg: impl Into<String>) -> AtipError {
    AtipError::new(ErrorCode::CallsInvalid, msg)
}

fn str_field(v: &Value, key: &str, at: &str) -> Result<String, AtipError> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| bad(format!("{at}: missing string field {key:?}")))
}

/// Reads the tool calls of a response for the given provider.
pub fn parse(provider: Provider, doc: &Value) -> Result<(Shape, Vec<ToolCall>), AtipError> {
    match provider {
        Provider::Openai => parse_openai(doc),
        Provider::Anthropic => parse_anthropic(doc).map(|c| (Shape::Anthropic, c)),
        Provider::Gemini => parse_gemini(doc).map(|c| (Shape::Gemini, c)),
    }
}

fn parse_openai(doc: &Value) -> Result<(Shape, Vec<ToolCall>), AtipError> {
    // Responses API: a response with `output`, or a bare array of output items.
    let responses_items = match doc {
        Value::Object(o) if o.get("output").is_some_and(Value::is_array) => o["output"].as_array(),
        Value::Array(a)
            if a.iter()
                .any(|i| i.get("type").is_some_and(|t| t == "function_call")) =>
        {
            Some(a)
        }
        _ => None,
    };
    if let Some(items) = responses_items {
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            if item.get("type").and_then(Value::as_str) != Some("function_call") {
                continue;
            }
            let at = format!("output[{i}]");
            let id = item
                .get("call_id")
                .or_else(|| item.get("id"))
                .and_then(Value::as_str)
                .map(str::to_string);
            out.push(ToolCall {
                id,
                name: str_field(item, "name", &at)?,
                arguments: openai_arguments(item.get("arguments"), &at)?,
            });
        }
        return Ok((Shape::OpenaiResponses, out));
    }
    // Chat Completions: full response, one message, or a bare tool_calls array.
    let mut lists: Vec<(String, &Vec<Value>)> = Vec::new();
    if let Some(choices) = doc.get("choices").and_then(Value::as_array) {
        for (c, choice) in choices.iter().enumerate() {
            if let Some(tc) = choice
                .pointer("/message/tool_calls")
                .and_then(Value::as_array)
            {
                lists.push((format!("choices[{c}].message.tool_calls"), tc));
            }
        }
        if lists.is_empty() {
            return Ok((Shape::OpenaiChat, Vec::new()));
        }
    } else if let Some(tc) = doc.get("tool_calls").and_then(Value::as_array) {
        lists.push(("tool_calls".into(), tc));
    } else if let Some(a) = doc.as_array() {
        lists.push(("".into(), a));
    } else if doc.get("role").is_some() {
        return Ok((Shape::OpenaiChat, Vec::new()));
    } else {
        return Err(bad(
            "not an OpenAI response: expected choices[].message.tool_calls (Chat Completions) or output[] (Responses API)",
        )
        .hint("pass the model's whole response body, or use --provider anthropic|gemini"));
    }
    let mut out = Vec::new();
    for (prefix, list) in lists {
        for (i, call) in list.iter().enumerate() {
            let at = format!("{prefix}[{i}]");
            let func = call
                .get("function")
                .ok_or_else(|| bad(format!("{at}: missing \"function\"")))?;
            out.push(ToolCall {
                id: call.get("id").and_then(Value::as_str).map(str::to_string),
                name: str_field(func, "name", &format!("{at}.function"))?,
                arguments: openai_arguments(func.get("arguments"), &at)?,
            });
        }
    }
    Ok((Shape::OpenaiChat, out))
}

fn openai_arguments(v: Option<&Value>, at: &str) -> Result<RawArgs, AtipError> {
    match v {
        Some(Value::String(s)) => Ok(RawArgs::Text(s.clone())),
        // Some compatible servers send an object; accept it as is.
        Some(v @ Value::Object(_)) => Ok(RawArgs::Value(v.clone())),
        None | Some(Value::Null) => Ok(RawArgs::Value(Value::Object(Map::new()))),
        Some(_) => Err(bad(format!(
            "{at}: \"arguments\" must be a JSON string or object"
        ))),
    }
}

fn parse_anthropic(doc: &Value) -> Result<Vec<ToolCall>, AtipError> {
    let blocks = doc
        .get("content")
        .and_then(Value::as_array)
        .or_else(|| doc.as_array())
        .ok_or_else(|| {
            bad("not an Anthropic message: expected content[] with tool_use blocks")
                .hint("pass the model's whole response body, or use --provider openai|gemini")
        })?;
    let mut out = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        if b.get("type").and_then(Value::as_str) != Some("tool_use") {
            continue;
        }
        let at = format!("content[{i}]");
        out.push(ToolCall {
            id: Some(str_field(b, "id", &at)?),
            name: str_field(b, "name", &at)?,
            arguments: RawArgs::Value(b.get("input").cloned().unwrap_or(json!({}))),
        });
    }
    Ok(out)
}

fn parse_gemini(doc: &Value) -> Result<Vec<ToolCall>, AtipError> {
    let mut parts_lists: Vec<(String, &Vec<Value>)> = Vec::new();
    if let Some(cands) = doc.get("candidates").and_then(Value::as_array) {
        for (c, cand) in cands.iter().enumerate() {
            if let Some(p) = cand.pointer("/content/parts").and_then(Value::as_array) {
                parts_lists.push((format!("candidates[{c}].content.parts"), p));
            }
        }
    } else if let Some(p) = doc.get("parts").and_then(Value::as_array) {
        parts_lists.push(("parts".into(), p));
    } else if let Some(a) = doc.as_array() {
        parts_lists.push(("".into(), a));
    } else {
        return Err(bad(
            "not a Gemini response: expected candidates[].content.parts[] with functionCall",
        )
        .hint("pass the model's whole response body, or use --provider openai|anthropic"));
    }
    let mut out = Vec::new();
    for (prefix, parts) in parts_lists {
        for (i, part) in parts.iter().enumerate() {
            let Some(fc) = part
                .get("functionCall")
                .or_else(|| part.get("function_call"))
            else {
                continue;
            };
            let at = format!("{prefix}[{i}].functionCall");
            out.push(ToolCall {
                id: fc.get("id").and_then(Value::as_str).map(str::to_string),
                name: str_field(fc, "name", &at)?,
                arguments: RawArgs::Value(fc.get("args").cloned().unwrap_or(json!({}))),
            });
        }
    }
    Ok(out)
}

/// Builds the messages to append to the conversation: always a JSON array.
/// `results[i]` is the result envelope of `calls[i]`; `failed[i]` marks tool failures
/// (atip errors and non-zero exits), reported as `is_error` where the provider has it.
pub fn result_messages(
    shape: Shape,
    calls: &[ToolCall],
    results: &[Value],
    failed: &[bool],
) -> Value {
    let text = |v: &Value| serde_json::to_string(v).unwrap_or_default();
    let triples = calls.iter().zip(results).zip(failed);
    match shape {
        Shape::OpenaiChat => Value::Array(
            triples
                .map(|((c, r), _)| {
                    json!({"role": "tool", "tool_call_id": c.id.clone().unwrap_or_default(), "content": text(r)})
                })
                .collect(),
        ),
        Shape::OpenaiResponses => Value::Array(
            triples
                .map(|((c, r), _)| {
                    json!({"type": "function_call_output", "call_id": c.id.clone().unwrap_or_default(), "output": text(r)})
                })
                .collect(),
        ),
        Shape::Anthropic => {
            let blocks: Vec<Value> = triples
                .map(|((c, r), f)| {
                    let mut b = json!({"type": "tool_result", "tool_use_id": c.id.clone().unwrap_or_default(), "content": text(r)});
                    if *f {
                        b["is_error"] = Value::Bool(true);
                    }
                    b
                })
                .collect();
            if blocks.is_empty() {
                json!([])
            } else {
                json!([{"role": "user", "content": blocks}])
            }
        }
        Shape::Gemini => {
            let parts: Vec<Value> = triples
                .map(|((c, r), _)| {
                    let mut fr = json!({"name": c.name, "response": r});
                    if let Some(id) = &c.id {
                        fr["id"] = Value::String(id.clone());
                    }
                    json!({"functionResponse": fr})
                })
                .collect();
            if parts.is_empty() {
                json!([])
            } else {
                json!([{"role": "user", "parts": parts}])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_chat() {
        let doc = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "t_a", "arguments": "{\"x\":1}"}},
            {"id": "call_2", "type": "function", "function": {"name": "t_b", "arguments": "{}"}}
        ]}}]});
        let (shape, calls) = parse(Provider::Openai, &doc).unwrap();
        assert_eq!(shape, Shape::OpenaiChat);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].arguments, RawArgs::Text("{\"x\":1}".into()));
        let msgs = result_messages(
            shape,
            &calls,
            &[json!({"a": 1}), json!({"b": 2})],
            &[false, true],
        );
        assert_eq!(
            msgs[1],
            json!({"role": "tool", "tool_call_id": "call_2", "content": "{\"b\":2}"})
        );
        let none = json!({"choices": [{"message": {"role": "assistant", "content": "done"}}]});
        assert!(parse(Provider::Openai, &none).unwrap().1.is_empty());
        assert!(parse(Provider::Openai, &json!({"content": []})).is_err());
    }

    #[test]
    fn openai_responses() {
        let doc = json!({"output": [
            {"type": "reasoning", "id": "r1"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "t_a", "arguments": "{}"}
        ]});
        let (shape, calls) = parse(Provider::Openai, &doc).unwrap();
        assert_eq!(shape, Shape::OpenaiResponses);
        assert_eq!(calls[0].id.as_deref(), Some("call_9"));
        let msgs = result_messages(shape, &calls, &[json!({})], &[false]);
        assert_eq!(
            msgs,
            json!([{"type": "function_call_output", "call_id": "call_9", "output": "{}"}])
        );
    }

    #[test]
    fn anthropic() {
        let doc = json!({"role": "assistant", "content": [
            {"type": "text", "text": "let me"},
            {"type": "tool_use", "id": "toolu_1", "name": "t_a", "input": {"x": 1}}
        ]});
        let (shape, calls) = parse(Provider::Anthropic, &doc).unwrap();
        assert_eq!(calls[0].arguments, RawArgs::Value(json!({"x": 1})));
        let msgs = result_messages(shape, &calls, &[json!({"s": 1})], &[true]);
        assert_eq!(
            msgs,
            json!([{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"s\":1}", "is_error": true}]}])
        );
        assert!(parse(Provider::Anthropic, &json!({"x": 1})).is_err());
        let bad = json!({"content": [{"type": "tool_use", "name": "t"}]});
        assert!(
            parse(Provider::Anthropic, &bad)
                .unwrap_err()
                .message
                .contains("content[0]")
        );
    }

    #[test]
    fn gemini() {
        let doc = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"text": "ok"}, {"functionCall": {"name": "t_a", "args": {"x": 1}, "id": "g1"}},
            {"functionCall": {"name": "t_b"}}
        ]}}]});
        let (shape, calls) = parse(Provider::Gemini, &doc).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].arguments, RawArgs::Value(json!({})));
        let msgs = result_messages(
            shape,
            &calls,
            &[json!({"r": 1}), json!({"r": 2})],
            &[false, false],
        );
        assert_eq!(
            msgs[0]["parts"][0],
            json!({"functionResponse": {"name": "t_a", "response": {"r": 1}, "id": "g1"}})
        );
        assert_eq!(
            msgs[0]["parts"][1],
            json!({"functionResponse": {"name": "t_b", "response": {"r": 2}}})
        );
    }
}
