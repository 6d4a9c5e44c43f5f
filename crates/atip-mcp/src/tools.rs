//! MCP servers' tools as citizens of atip's registry, search and policy.
//!
//! Owns the flattened name of an MCP tool (`mcp__SERVER__TOOL`, provider-safe), the
//! reading of its annotations as effects (untrusted hints: only `readOnlyHint: true`
//! from a server whose hints are trusted makes a tool read-only; anything else is
//! possibly destructive, as MCP's own defaults read it), its [`FlatTool`] form for
//! `atip search` and `atip export`, the policy decision through the one
//! `Policy::evaluate`, and the `--compact` rule for results. Must not connect or print.

use crate::compile::{FlatTool, Param, ParamOrigin, safety};
use crate::config::CompactSettings;
use crate::exec::policy::{CallFacts, Decision, Policy};
use crate::exec::trust::{TrustFacts, TrustLevel};
use crate::model::{Effects, ParamType};
use crate::registry::Vouch;
use rmcp::model::{CallToolResult, Tool};
use serde_json::{Map, Value, json};
use std::path::Path;

/// Prefix of every flattened MCP tool name.
pub const PREFIX: &str = "mcp__";
/// Longest provider-safe tool name.
const MAX_NAME: usize = 64;
/// `--compact`: text blocks longer than this are cut.
pub const COMPACT_TEXT: usize = 16 * 1024;

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `mcp__SERVER__TOOL` with characters outside `[A-Za-z0-9_-]` replaced by `_`; names
/// past 64 characters keep 55 and end in `_` + 8 hex digits of the full name's SHA-256.
pub fn flat_name(server: &str, tool: &str) -> String {
    let full = format!("{PREFIX}{}__{}", sanitize(server), sanitize(tool));
    if full.len() <= MAX_NAME {
        return full;
    }
    let h = crate::digest::sha256_hex_parts(&[server.as_bytes(), b"\0", tool.as_bytes()]);
    format!("{}_{}", &full[..55], &h[..8])
}

/// Whether a tool-call name is an MCP tool's.
pub fn is_mcp_name(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// The effects atip assumes for an MCP tool.
///
/// `readOnlyHint: true` (from a server whose hints are trusted) → read-only and
/// idempotent. Otherwise nothing is known to be safe: `destructiveHint` absent or true →
/// destructive (MCP's default); `destructiveHint: false` is an unverifiable claim, so the
/// effects stay unstated (unknown). Either way the policy asks for confirmation by default.
pub(crate) fn effects(tool: &Tool, trust_hints: bool) -> Effects {
    let a = tool.annotations.as_ref();
    let hint = |f: fn(&rmcp::model::ToolAnnotations) -> Option<bool>| a.and_then(f);
    let mut e = Effects::default();
    if trust_hints && hint(|a| a.read_only_hint) == Some(true) {
        e.destructive = Some(false);
        e.filesystem = Some(crate::model::FilesystemEffects {
            write: Some(false),
            delete: Some(false),
            ..Default::default()
        });
        e.idempotent = Some(true);
        e.network = hint(|a| a.open_world_hint);
        return e;
    }
    if hint(|a| a.destructive_hint) != Some(false) {
        e.destructive = Some(true);
    }
    e
}

/// Whether atip treats the tool as read-only (no confirmation by default, no audit).
pub fn read_only(tool: &Tool, trust_hints: bool) -> bool {
    effects(tool, trust_hints).is_read_only()
}

/// The policy's verdict on calling `tool` of `server`: the same rules as for commands.
/// Policy `tools` globs see the server name and the flattened name, `commands` globs
/// `SERVER TOOL`, `programs` globs the server's command or URL.
pub fn decide(
    policy: &Policy,
    server: &str,
    program: &str,
    tool: &Tool,
    trust_hints: bool,
) -> Decision {
    let flat = flat_name(server, &tool.name);
    let path = format!("{server} {}", tool.name);
    let e = effects(tool, trust_hints);
    // A server the user configured vouches for its own tools, unsigned; its argv is fixed
    // by the config, never by the model, so the runner rules do not apply to it.
    let trust = TrustFacts {
        level: TrustLevel::Unsigned,
        vouch: Vouch::User,
        why: format!("MCP server {server} configured by the user; annotations are hints"),
    };
    policy.evaluate(&CallFacts {
        tool: server,
        flat_name: &flat,
        command_path: &path,
        program: Path::new(program),
        program_resolved: None,
        effects: &e,
        effects_unstated: false,
        trust: &trust,
        partial_unknown: false,
        allow_interactive: true,
        is_self: false,
        program_names: &[],
        runner: None,
    })
}

/// The tool's input schema as JSON.
pub fn input_schema(tool: &Tool) -> Value {
    Value::Object((*tool.input_schema).clone())
}

/// An MCP tool as a flattened tool: what search ranks and export renders. Parameters
/// are the schema's top-level properties (for ranking; nothing builds an argv from them).
pub fn to_flat(server: &str, tool: &Tool, trust_hints: bool) -> FlatTool {
    let effects = effects(tool, trust_hints);
    let schema = input_schema(tool);
    let summary = tool
        .description
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| format!("Tool {} of MCP server {server}", tool.name));
    let suffix = safety::suffix(&effects);
    let description = safety::with_suffix(&summary, &suffix, 1024);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let params = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(k, v)| Param {
                    property: k.clone(),
                    origin: ParamOrigin::Option {
                        name: k.clone(),
                        flag: String::new(),
                    },
                    kind: ParamType::String,
                    required: required.contains(&k.as_str()),
                    variadic: v.get("type") == Some(&json!("array")),
                    description: v
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or(k)
                        .to_string(),
                    schema: v.clone(),
                    guard: Default::default(),
                })
                .collect()
        })
        .unwrap_or_default();
    FlatTool {
        name: flat_name(server, &tool.name),
        tool: server.to_string(),
        command: vec![tool.name.to_string()],
        title: tool
            .title
            .clone()
            .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()))
            .unwrap_or_else(|| format!("{server} {}", tool.name)),
        summary,
        safety: suffix,
        description,
        params,
        effects,
        input_schema: schema,
        runner: false,
        about: String::new(),
    }
}

/// The `--compact` rule: drop `_meta` (result, blocks, resources) and content
/// `annotations`; replace image/audio `data` and embedded blob resources with a size
/// note; drop text blocks that repeat `structuredContent` (the spec asks servers to send
/// both); cut other text blocks past [`COMPACT_TEXT`] bytes. Then the config's
/// `compact.denylist` keys go wherever they are — `structuredContent` and text blocks
/// holding a JSON document included (their logs, traces) — and a key in
/// `compact.allowlist` is kept whatever the rules above say (`_meta`, `annotations`,
/// `data`, `blob`, `text` uncut).
pub fn compact(result: &CallToolResult, settings: &CompactSettings) -> Value {
    let kept = |key: &str| settings.allowlist.iter().any(|k| k == key);
    let mut v = serde_json::to_value(result).unwrap_or(Value::Null);
    let structured = v.get("structuredContent").cloned();
    if let Some(obj) = v.as_object_mut()
        && !kept("_meta")
    {
        obj.remove("_meta");
    }
    if let Some(blocks) = v.get_mut("content").and_then(Value::as_array_mut) {
        blocks.retain(|b| {
            let Some(s) = &structured else { return true };
            let text = b.get("text").and_then(Value::as_str);
            !text.is_some_and(|t| serde_json::from_str::<Value>(t).ok().as_ref() == Some(s))
        });
        for b in blocks.iter_mut() {
            let Some(m) = b.as_object_mut() else { continue };
            for key in ["_meta", "annotations"] {
                if !kept(key) {
                    m.remove(key);
                }
            }
            if !kept("data")
                && let Some(Value::String(d)) = m.get("data")
            {
                let note = format!("[atip: {} bytes of base64 omitted]", d.len());
                m.insert("data".into(), Value::String(note));
            }
            if let Some(Value::Object(res)) = m.get_mut("resource") {
                if !kept("_meta") {
                    res.remove("_meta");
                }
                if !kept("blob")
                    && let Some(Value::String(d)) = res.get("blob")
                {
                    let note = format!("[atip: {} bytes of base64 omitted]", d.len());
                    res.insert("blob".into(), Value::String(note));
                }
            }
            if let Some(Value::String(t)) = m.get_mut("text") {
                deny_in_json_text(t, settings);
                if !kept("text") {
                    cut_text(t, COMPACT_TEXT);
                }
            }
        }
    }
    if let Some(s) = v.get_mut("structuredContent") {
        deny(s, settings);
    }
    v
}

/// Removes the `compact.denylist` keys from every object in `v` (explicit stack: a
/// server's result may nest deeply).
fn deny(v: &mut Value, settings: &CompactSettings) {
    if settings.denylist.is_empty() {
        return;
    }
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                m.retain(|k, _| {
                    !settings.denylist.iter().any(|d| d == k)
                        || settings.allowlist.iter().any(|a| a == k)
                });
                stack.extend(m.values_mut());
            }
            Value::Array(a) => stack.extend(a.iter_mut()),
            _ => {}
        }
    }
}

/// A text block that holds one JSON object or array loses the denied keys too (servers
/// often send their structured answer as JSON text); other text is left alone.
fn deny_in_json_text(t: &mut String, settings: &CompactSettings) {
    if settings.denylist.is_empty() || !t.trim_start().starts_with(['{', '[']) {
        return;
    }
    let Ok(mut doc) = serde_json::from_str::<Value>(t) else {
        return;
    };
    let before = doc.clone();
    deny(&mut doc, settings);
    if doc != before
        && let Ok(s) = serde_json::to_string(&doc)
    {
        *t = s;
    }
}

/// Cuts `t` to at most `max` bytes (on a character boundary) with a marker.
pub(crate) fn cut_text(t: &mut String, max: usize) -> bool {
    if t.len() <= max {
        return false;
    }
    let mut end = max;
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    let total = t.len();
    t.truncate(end);
    t.push_str(&format!(
        "\n[atip: text truncated at {max} of {total} bytes]"
    ));
    true
}

/// Caps every text block and base64 payload of a result at `max` bytes (the output cap
/// `atip exec` applies too); returns whether anything was cut.
pub(crate) fn cap(value: &mut Value, max: usize) -> bool {
    let mut cut = false;
    match value {
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                match v {
                    Value::String(s) if matches!(k.as_str(), "text" | "data" | "blob") => {
                        cut |= cut_text(s, max);
                    }
                    other => cut |= cap(other, max),
                }
            }
        }
        Value::Array(items) => {
            for v in items {
                cut |= cap(v, max);
            }
        }
        _ => {}
    }
    cut
}

/// One tool, described: name, title, description, schemas, annotations, and what atip
/// makes of them.
pub fn describe(server: &str, tool: &Tool, trust_hints: bool, decision: &Decision) -> Value {
    let mut v = serde_json::to_value(tool).unwrap_or_else(|_| json!({}));
    let e = effects(tool, trust_hints);
    if let Some(m) = v.as_object_mut() {
        let mut atip = Map::new();
        atip.insert("server".into(), json!(server));
        atip.insert("flatName".into(), json!(flat_name(server, &tool.name)));
        atip.insert("readOnly".into(), json!(e.is_read_only()));
        atip.insert("effects".into(), json!(e.summary()));
        atip.insert(
            "decision".into(),
            serde_json::to_value(decision).unwrap_or(Value::Null),
        );
        m.insert("atip".into(), Value::Object(atip));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::policy::Action;

    fn tool(annotations: Value) -> Tool {
        serde_json::from_value(json!({"name": "do.it", "description": "Does it",
            "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
            "annotations": annotations}))
        .unwrap()
    }

    #[test]
    fn names_are_provider_safe_and_bounded() {
        assert_eq!(flat_name("git", "git_status"), "mcp__git__git_status");
        assert_eq!(flat_name("a.b", "x.y z"), "mcp__a_b__x_y_z");
        let long = flat_name("server", &"t".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(crate::compile::names::is_valid_tool_name(&long));
        assert_ne!(long, flat_name("server", &"t".repeat(101)));
    }

    #[test]
    fn only_trusted_read_only_hints_skip_confirmation() {
        let policy = Policy::defaults(Path::new("/"));
        let decide_on = |a: Value, trust: bool| decide(&policy, "s", "srv", &tool(a), trust).action;
        assert_eq!(
            decide_on(json!({"readOnlyHint": true}), true),
            Action::Allow
        );
        assert_eq!(
            decide_on(json!({"readOnlyHint": true}), false),
            Action::Confirm
        );
        assert_eq!(decide_on(json!({}), true), Action::Confirm);
        assert_eq!(
            decide_on(json!({"destructiveHint": false}), true),
            Action::Confirm
        );
        assert_eq!(
            decide_on(
                json!({"readOnlyHint": false, "destructiveHint": true}),
                true
            ),
            Action::Confirm
        );
    }

    #[test]
    fn policy_lists_match_server_and_flat_name() {
        let file: crate::exec::policy::PolicyFile =
            serde_json::from_value(json!({"tools": {"deny": ["mcp__s__*"]}})).unwrap();
        let policy = Policy::new(file, None, Path::new("/")).unwrap();
        let d = decide(
            &policy,
            "s",
            "srv",
            &tool(json!({"readOnlyHint": true})),
            true,
        );
        assert_eq!(d.action, Action::Deny);
        assert_eq!(d.rules[0].rule, "tools.deny");
    }

    #[test]
    fn flat_form_ranks_by_description_and_params() {
        let f = to_flat("s", &tool(json!({"readOnlyHint": true})), true);
        assert_eq!(f.name, "mcp__s__do_it");
        assert_eq!(f.command, ["do.it"]);
        assert_eq!(f.params[0].property, "x");
        assert!(f.params[0].required);
        assert!(f.description.starts_with("Does it"));
    }

    #[test]
    fn compact_drops_duplicates_meta_and_blobs() {
        let r: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "{\"a\":1}"},
                {"type": "image", "data": "QUJD", "mimeType": "image/png", "annotations": {"priority": 1}},
                {"type": "text", "text": "x".repeat(COMPACT_TEXT + 5)}],
            "structuredContent": {"a": 1},
            "_meta": {"big": true}})).unwrap();
        let c = compact(&r, &CompactSettings::default());
        let blocks = c["content"].as_array().unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0]["data"], "[atip: 4 bytes of base64 omitted]");
        assert!(blocks[0].get("annotations").is_none());
        assert!(blocks[1]["text"].as_str().unwrap().contains("truncated"));
        assert!(c.get("_meta").is_none());
        assert_eq!(c["structuredContent"], json!({"a": 1}));
        // The allowlist keeps what the rules would drop or shorten.
        let keep = CompactSettings {
            allowlist: vec!["_meta".into(), "data".into(), "text".into()],
            denylist: Vec::new(),
        };
        let c = compact(&r, &keep);
        let blocks = c["content"].as_array().unwrap();
        assert_eq!(blocks[0]["data"], "QUJD");
        assert_eq!(blocks[1]["text"].as_str().unwrap().len(), COMPACT_TEXT + 5);
        assert_eq!(c["_meta"], json!({"big": true}));
        assert!(blocks[0].get("annotations").is_none());
    }

    #[test]
    fn the_denylist_reaches_structured_content_and_json_text() {
        let r: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "{\"ok\":true,\"logs\":[\"l1\",\"l2\"],\"deep\":[{\"logs\":1,\"x\":2}]}"},
                {"type": "text", "text": "plain logs text"}],
            "structuredContent": {"ok": true, "logs": ["l1"], "trace": {"id": 1}, "n": {"logs": 3}}})).unwrap();
        let s = CompactSettings {
            denylist: vec!["logs".into(), "trace".into()],
            allowlist: Vec::new(),
        };
        let c = compact(&r, &s);
        assert_eq!(c["structuredContent"], json!({"ok": true, "n": {}}));
        let blocks = c["content"].as_array().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(blocks[0]["text"].as_str().unwrap()).unwrap(),
            json!({"ok": true, "deep": [{"x": 2}]})
        );
        assert_eq!(blocks[1]["text"], "plain logs text");
        // Without a denylist the tool's own fields are left as received.
        let c = compact(&r, &CompactSettings::default());
        assert_eq!(c["structuredContent"]["logs"], json!(["l1"]));
    }
}
