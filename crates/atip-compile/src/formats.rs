//! Per-provider tool lists: OpenAI (plain and strict), Anthropic, Gemini and MCP, from
//! flattened tools, one tool per command (`flat`) or per command group (`grouped`).
//!
//! Owns each provider's schema restrictions as transforms of the plain JSON Schema that
//! flattening produced. Every output is the value a provider's `tools` field takes
//! (MCP: the `tools/list` result). Must not read files or print.

use super::safety;
use super::{FlatTool, names};
use crate::model::{Effects, Metadata};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::HashSet;

/// Output formats of `atip export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// OpenAI Chat Completions `tools`, plain JSON Schema.
    Openai,
    /// OpenAI `tools` with `strict: true` (every property required, optional ones nullable).
    OpenaiStrict,
    /// Anthropic Messages `tools` (`input_schema`).
    Anthropic,
    /// Gemini `tools` (`functionDeclarations`, OpenAPI schema subset).
    Gemini,
    /// MCP `tools/list` result, with annotations from effects.
    Mcp,
    /// One SKILL.md per tool.
    Skill,
    /// A system-prompt fragment (Markdown).
    Prompt,
}

impl Format {
    /// Whether the format is a JSON tool list (not Markdown).
    pub fn is_json(self) -> bool {
        !matches!(self, Format::Skill | Format::Prompt)
    }
}

/// How commands become provider tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// One tool per runnable command (`gh_pr_create`).
    #[default]
    Flat,
    /// One tool per command group with an `action` enum (`gh_pr` + `action: "create"`).
    Grouped,
}

/// MCP tool annotations, derived from effects (see spec/export.md for the mapping).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// The command changes nothing.
    pub read_only_hint: bool,
    /// The command may destroy data (also when the effects do not say: MCP's default).
    pub destructive_hint: bool,
    /// Repeating the call has no further effect.
    pub idempotent_hint: bool,
    /// The command talks to the outside world (also when the effects do not say).
    pub open_world_hint: bool,
}

impl Annotations {
    /// The annotations for one command's effective effects.
    pub fn from_effects(e: &Effects) -> Annotations {
        let read_only = e.is_read_only();
        Annotations {
            read_only_hint: read_only,
            destructive_hint: e.possibly_destructive(),
            idempotent_hint: e.idempotent == Some(true) || (read_only && e.idempotent.is_none()),
            open_world_hint: e.network != Some(false),
        }
    }

    /// The annotations of one exported command: of its worst case over the conditions
    /// its parameters can bring, as MCP's hints are per tool (`guard::worst_case`).
    pub(crate) fn of_tool(t: &FlatTool) -> Annotations {
        Annotations::from_effects(&t.worst_effects())
    }

    /// The cautious combination for a group: read-only and idempotent only if every
    /// action is, destructive and open-world if any is.
    fn merge(all: impl Iterator<Item = Annotations>) -> Annotations {
        let mut out = Annotations {
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        };
        for a in all {
            out.read_only_hint &= a.read_only_hint;
            out.destructive_hint |= a.destructive_hint;
            out.idempotent_hint &= a.idempotent_hint;
            out.open_world_hint |= a.open_world_hint;
        }
        out
    }
}

/// One tool as exported: a flattened command, or a group of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExportTool {
    /// Provider tool name.
    pub name: String,
    /// Human title (`gh pr create`, or `gh pr` for a group).
    pub title: String,
    /// Description with safety suffix, ≤ 1024 characters.
    pub description: String,
    /// Plain JSON Schema of the input.
    pub input_schema: Value,
    /// MCP annotations.
    pub annotations: Annotations,
    /// For a group: what each `action` value runs; empty for a flat tool.
    pub actions: Vec<GroupAction>,
}

/// One `action` value of a grouped tool and the flat tool it stands for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupAction {
    /// The `action` enum value (the last command word; the tool name for the root command).
    pub action: String,
    /// Name of the flat tool it runs.
    pub tool: String,
    /// Group property → flat property, for properties renamed to stay unique.
    pub properties: Vec<(String, String)>,
}

/// Flattened tools as export tools, one per command.
pub fn flat(tools: &[FlatTool]) -> Vec<ExportTool> {
    tools
        .iter()
        .map(|t| ExportTool {
            name: t.name.clone(),
            title: t.title.clone(),
            description: t.description.clone(),
            input_schema: t.input_schema.clone(),
            annotations: Annotations::of_tool(t),
            actions: Vec::new(),
        })
        .collect()
}

/// (tool, parent command path).
type GroupKey = (String, Vec<String>);

/// Flattened tools as export tools, taking their schemas instead of copying them.
pub(crate) fn flat_owned(tools: Vec<FlatTool>) -> Vec<ExportTool> {
    tools
        .into_iter()
        .map(|t| ExportTool {
            annotations: Annotations::of_tool(&t),
            name: t.name,
            title: t.title,
            description: t.description,
            input_schema: t.input_schema,
            actions: Vec::new(),
        })
        .collect()
}

/// Flattened tools grouped by parent command (the protocol's strategy B): one tool per
/// (tool, parent path) with a required `action` enum. `metas` supplies group descriptions.
pub fn grouped(tools: &[FlatTool], metas: &[Metadata]) -> Vec<ExportTool> {
    grouped_with(tools, metas, &mut HashSet::new())
}

/// [`grouped`], with group names kept unique against (and added to) `taken`, for
/// exports built one document at a time.
pub(crate) fn grouped_with(
    tools: &[FlatTool],
    metas: &[Metadata],
    taken: &mut HashSet<String>,
) -> Vec<ExportTool> {
    let mut groups: Vec<(GroupKey, Vec<&FlatTool>)> = Vec::new();
    for t in tools {
        let parent: Vec<String> = match t.command.split_last() {
            Some((_, rest)) => rest.to_vec(),
            None => Vec::new(),
        };
        let key = (t.tool.clone(), parent);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(t),
            None => groups.push((key, vec![t])),
        }
    }
    groups
        .into_iter()
        .map(|((tool, parent), members)| {
            let meta = metas.iter().find(|m| m.tool_name() == Some(tool.as_str()));
            let about = if parent.is_empty() {
                meta.map(|m| m.description.trim().to_string())
                    .unwrap_or_default()
            } else {
                meta.and_then(|m| m.find(&parent))
                    .map(|e| e.command.description.trim().to_string())
                    .unwrap_or_default()
            };
            let title = std::iter::once(tool.as_str())
                .chain(parent.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            let name = names::unique(names::tool_name(&tool, &parent), taken, names::MAX_NAME);
            build_group(name, title, about, &tool, &members)
        })
        .collect()
}

/// One grouped tool: an `action` enum naming each member command, the members'
/// parameters merged into one set of properties, and a description listing the actions.
fn build_group(
    name: String,
    title: String,
    about: String,
    tool: &str,
    members: &[&FlatTool],
) -> ExportTool {
    let (action_values, listing) = action_names(tool, members);
    let mut props = Map::new();
    props.insert(
        "action".into(),
        json!({"type": "string", "enum": action_values, "description": safety::cut(&format!("What to run. {}", listing.join("; ")), safety::MAX_DESCRIPTION)}),
    );
    let (actions, uses) = merge_parameters(members, &action_values, &mut props);
    say_which_actions(&mut props, &uses, action_values.len());
    let input_schema = json!({"type": "object", "properties": props, "required": ["action"], "additionalProperties": false});
    let lead = if about.is_empty() {
        format!("`{title}` commands.")
    } else {
        about
    };
    let text = safety::join_sentences(&lead, &format!("Actions: {}", listing.join("; ")));
    ExportTool {
        name,
        title,
        description: safety::with_suffix(&text, &group_suffix(members), safety::MAX_DESCRIPTION),
        input_schema,
        annotations: Annotations::merge(members.iter().map(|t| Annotations::of_tool(t))),
        actions,
    }
}

/// Each member's `action` value (its last command word, made unique with `_`; the bare
/// tool for the tool itself) and its line in the listing: `action: summary [SAFETY]`.
fn action_names(tool: &str, members: &[&FlatTool]) -> (Vec<String>, Vec<String>) {
    let mut values: Vec<String> = Vec::new();
    let mut listing = Vec::new();
    for t in members {
        let mut a = match t.command.last().map(String::as_str) {
            Some("") | None => tool.to_string(),
            Some(a) => a.to_string(),
        };
        while values.contains(&a) {
            a.push('_');
        }
        listing.push(if t.safety.is_empty() {
            format!("{a}: {}", t.summary)
        } else {
            format!("{a}: {} {}", t.summary, t.safety)
        });
        values.push(a);
    }
    (values, listing)
}

/// Which actions use a merged property, and which of them require it.
struct PropertyUse {
    property: String,
    used_by: Vec<String>,
    required_by: Vec<String>,
}

/// Merges the members' parameters into `props`. A parameter whose schema (description
/// aside) equals the property already there shares it; a clash, or a parameter named
/// `action`, gets a new name `<action>_<parameter>`, recorded in its [`GroupAction`] so
/// a call can be mapped back.
fn merge_parameters(
    members: &[&FlatTool],
    action_values: &[String],
    props: &mut Map<String, Value>,
) -> (Vec<GroupAction>, Vec<PropertyUse>) {
    let without_description = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("description");
        }
        v
    };
    let mut uses: Vec<PropertyUse> = Vec::new();
    let mut actions = Vec::new();
    for (t, a) in members.iter().zip(action_values) {
        let mut renamed = Vec::new();
        for p in &t.params {
            let bare = without_description(&p.schema);
            let same = p.property != "action"
                && props
                    .get(&p.property)
                    .is_some_and(|s| without_description(s) == bare);
            let prop = if same {
                p.property.clone()
            } else if !props.contains_key(&p.property) && p.property != "action" {
                props.insert(p.property.clone(), p.schema.clone());
                p.property.clone()
            } else {
                let mut taken: HashSet<String> = props.keys().cloned().collect();
                let n = names::unique(
                    names::property_name(&format!("{a}_{}", p.property)),
                    &mut taken,
                    names::MAX_PROPERTY,
                );
                props.insert(n.clone(), p.schema.clone());
                n
            };
            if prop != p.property {
                renamed.push((prop.clone(), p.property.clone()));
            }
            let required = if p.required { vec![a.clone()] } else { vec![] };
            match uses.iter_mut().find(|u| u.property == prop) {
                Some(u) => {
                    u.used_by.push(a.clone());
                    u.required_by.extend(required);
                }
                None => uses.push(PropertyUse {
                    property: prop,
                    used_by: vec![a.clone()],
                    required_by: required,
                }),
            }
        }
        actions.push(GroupAction {
            action: a.clone(),
            tool: t.name.clone(),
            properties: renamed,
        });
    }
    (actions, uses)
}

/// Ends each property's description with the actions it is for (when not all) and
/// those that require it: the schema can only require `action`.
fn say_which_actions(props: &mut Map<String, Value>, uses: &[PropertyUse], actions: usize) {
    for u in uses {
        if let Some(Value::Object(o)) = props.get_mut(&u.property) {
            let mut text = o
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if u.used_by.len() < actions {
                text = safety::join_sentences(&text, &format!("For: {}.", u.used_by.join(", ")));
            }
            if !u.required_by.is_empty() {
                text = safety::join_sentences(
                    &text,
                    &format!("Required for: {}.", u.required_by.join(", ")),
                );
            }
            o.insert(
                "description".into(),
                safety::cut(&text, safety::MAX_DESCRIPTION).into(),
            );
        }
    }
}

/// The group's safety suffix: every member's flags, once each, or `[READ-ONLY]` when
/// every member is read-only.
fn group_suffix(members: &[&FlatTool]) -> String {
    let worst: Vec<Effects> = members.iter().map(|t| t.worst_effects()).collect();
    let mut flags: Vec<&str> = Vec::new();
    for e in &worst {
        for f in safety::flags(e) {
            if !flags.contains(&f) {
                flags.push(f);
            }
        }
    }
    if !flags.is_empty() {
        format!("[{}]", flags.join(" | "))
    } else if worst.iter().all(Effects::is_read_only) {
        "[READ-ONLY]".to_string()
    } else {
        String::new()
    }
}

/// One tool as an element of `format`'s list (for Gemini: one function declaration; for
/// MCP: one `tools/list` entry). Markdown formats give `Value::Null`.
pub fn element(t: &ExportTool, format: Format) -> Value {
    match format {
        Format::Openai => {
            json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}})
        }
        Format::OpenaiStrict => {
            json!({"type": "function", "function": {"name": t.name, "description": t.description,
            "parameters": openai_strict(&t.input_schema), "strict": true}})
        }
        Format::Anthropic => {
            json!({"name": t.name, "description": t.description, "input_schema": t.input_schema})
        }
        Format::Gemini => {
            let mut d = Map::new();
            d.insert("name".into(), t.name.clone().into());
            d.insert("description".into(), t.description.clone().into());
            if t.input_schema["properties"]
                .as_object()
                .is_some_and(|p| !p.is_empty())
            {
                d.insert("parameters".into(), gemini(&t.input_schema));
            }
            Value::Object(d)
        }
        Format::Mcp => json!({"name": t.name, "title": t.title, "description": t.description,
            "inputSchema": t.input_schema, "annotations": t.annotations}),
        Format::Skill | Format::Prompt => Value::Null,
    }
}

/// Renders export tools as the value of the provider's `tools` field (MCP: the
/// `tools/list` result). Markdown formats give `Value::Null`.
pub fn render(tools: &[ExportTool], format: Format) -> Value {
    let list: Vec<Value> = tools.iter().map(|t| element(t, format)).collect();
    match format {
        Format::Gemini => json!([{"functionDeclarations": list}]),
        Format::Mcp => json!({"tools": list}),
        Format::Skill | Format::Prompt => Value::Null,
        _ => Value::Array(list),
    }
}

/// Writes a tool list element by element, byte for byte what pretty-printing
/// [`render`]'s value gives, without holding the whole list in memory.
pub struct ListWriter<W: std::io::Write> {
    out: W,
    format: Format,
    count: usize,
}

impl<W: std::io::Write> ListWriter<W> {
    /// Starts the list.
    pub fn new(out: W, format: Format) -> ListWriter<W> {
        ListWriter {
            out,
            format,
            count: 0,
        }
    }

    fn indent(&self) -> usize {
        match self.format {
            Format::Gemini => 6,
            Format::Mcp => 4,
            _ => 2,
        }
    }

    /// JSON Pointer of the next element within the whole output.
    pub(crate) fn next_pointer(&self) -> String {
        match self.format {
            Format::Gemini => format!("/0/functionDeclarations/{}", self.count),
            Format::Mcp => format!("/tools/{}", self.count),
            _ => format!("/{}", self.count),
        }
    }

    /// Appends one element (from [`element`]).
    pub fn push(&mut self, value: &Value) -> std::io::Result<()> {
        self.separator()?;
        let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
        let pad = " ".repeat(self.indent());
        let mut first = true;
        for line in text.lines() {
            if !first {
                self.out.write_all(b"\n")?;
            }
            first = false;
            self.out.write_all(pad.as_bytes())?;
            self.out.write_all(line.as_bytes())?;
        }
        self.count += 1;
        Ok(())
    }

    /// Appends one tool, serialized straight from it (same bytes as `push(&element(t, format))`).
    pub fn push_tool(&mut self, t: &ExportTool) -> std::io::Result<()> {
        self.separator()?;
        let pad = self.pad();
        self.out.write_all(pad)?;
        super::emit::write_element(&mut self.out, t, self.format, pad)?;
        self.count += 1;
        Ok(())
    }

    /// The indentation of elements in this format's list.
    pub(crate) fn pad(&self) -> &'static [u8] {
        match self.indent() {
            6 => b"      ",
            4 => b"    ",
            _ => b"  ",
        }
    }

    /// Appends an element already serialized by `emit::write_element` with [`Self::pad`].
    pub(crate) fn push_rendered(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.separator()?;
        self.out.write_all(self.pad())?;
        self.out.write_all(bytes)?;
        self.count += 1;
        Ok(())
    }

    fn separator(&mut self) -> std::io::Result<()> {
        if self.count == 0 {
            self.out.write_all(match self.format {
                Format::Gemini => b"[\n  {\n    \"functionDeclarations\": [\n",
                Format::Mcp => b"{\n  \"tools\": [\n",
                _ => b"[\n",
            })
        } else {
            self.out.write_all(b",\n")
        }
    }

    /// Closes the list (and a trailing newline); gives the writer back.
    pub fn finish(mut self) -> std::io::Result<W> {
        let tail: &[u8] = match (self.format, self.count) {
            (Format::Gemini, 0) => b"[\n  {\n    \"functionDeclarations\": []\n  }\n]\n",
            (Format::Mcp, 0) => b"{\n  \"tools\": []\n}\n",
            (_, 0) => b"[]\n",
            (Format::Gemini, _) => b"\n    ]\n  }\n]\n",
            (Format::Mcp, _) => b"\n  ]\n}\n",
            _ => b"\n]\n",
        };
        self.out.write_all(tail)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// OpenAI strict form of a plain schema: every property required, the optional ones
/// nullable (`["T","null"]`, and `null` added to their `enum`), `additionalProperties:
/// false` on every object, `default` dropped (strict mode does not support it).
pub(crate) fn openai_strict(schema: &Value) -> Value {
    let mut s = schema.clone();
    strictify(&mut s);
    s
}

fn strictify(v: &mut Value) {
    let Some(o) = v.as_object_mut() else { return };
    o.remove("default");
    if let Some(items) = o.get_mut("items") {
        strictify(items);
    }
    if o.get("type").and_then(Value::as_str) != Some("object") {
        return;
    }
    let required: HashSet<String> = o
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut all = Vec::new();
    if let Some(Value::Object(props)) = o.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            strictify(prop);
            all.push(Value::String(name.clone()));
            if !required.contains(name) {
                nullable(prop);
            }
        }
    } else {
        o.insert("properties".into(), Value::Object(Map::new()));
    }
    o.insert("required".into(), Value::Array(all));
    o.insert("additionalProperties".into(), false.into());
    // Fixed key order so strict output diffs cleanly against the plain form.
    let mut ordered = Map::new();
    for key in [
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
    ] {
        if let Some(v) = o.remove(key) {
            ordered.insert(key.into(), v);
        }
    }
    ordered.append(o);
    *o = ordered;
}

fn nullable(prop: &mut Value) {
    let Some(o) = prop.as_object_mut() else {
        return;
    };
    match o.get("type").cloned() {
        Some(Value::String(t)) if t != "null" => {
            o.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(mut ts)) if !ts.contains(&Value::from("null")) => {
            ts.push("null".into());
            o.insert("type".into(), Value::Array(ts));
        }
        _ => {}
    }
    if let Some(Value::Array(e)) = o.get_mut("enum")
        && !e.contains(&Value::Null)
    {
        e.push(Value::Null);
    }
}

/// The description of a non-string enum in Gemini, which only takes string enums: the
/// allowed values are listed in words.
pub(super) fn enum_note(description: Option<&str>, values: &[Value]) -> String {
    let shown: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    let d = description.unwrap_or_default();
    let sep = if d.is_empty() || d.ends_with(['.', '!', '?']) {
        ""
    } else {
        "."
    };
    safety::cut(
        format!("{d}{sep} One of: {}.", shown.join(", ")).trim_start(),
        safety::MAX_DESCRIPTION,
    )
}

/// Gemini's OpenAPI subset of a plain schema: single upper-case types, string-only enums
/// (numeric enums keep their type and list the values in the description), no
/// `additionalProperties`, `default`, `const`, `$schema`.
pub(crate) fn gemini(schema: &Value) -> Value {
    let Some(o) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = Map::new();
    let ty = o.get("type").and_then(Value::as_str).unwrap_or("string");
    out.insert("type".into(), ty.to_ascii_uppercase().into());
    let mut description = o
        .get("description")
        .and_then(Value::as_str)
        .map(String::from);
    if let Some(Value::Array(values)) = o.get("enum") {
        if ty == "string" {
            out.insert("enum".into(), Value::Array(values.clone()));
        } else {
            description = Some(enum_note(description.as_deref(), values));
        }
    }
    if let Some(d) = description {
        out.insert("description".into(), d.into());
    }
    if let Some(items) = o.get("items") {
        out.insert("items".into(), gemini(items));
    }
    if let Some(Value::Object(props)) = o.get("properties") {
        let mapped: Map<String, Value> =
            props.iter().map(|(k, v)| (k.clone(), gemini(v))).collect();
        out.insert("properties".into(), Value::Object(mapped));
        if let Some(r) = o
            .get("required")
            .filter(|r| r.as_array().is_some_and(|a| !a.is_empty()))
        {
            out.insert("required".into(), r.clone());
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_makes_optional_nullable() {
        let plain = json!({"type": "object", "properties": {
            "a": {"type": "string"},
            "b": {"type": "integer", "enum": [1, 2], "default": 1},
            "c": {"type": "array", "items": {"type": "string"}}
        }, "required": ["a"], "additionalProperties": false});
        assert_eq!(
            openai_strict(&plain),
            json!({"type": "object", "properties": {
                "a": {"type": "string"},
                "b": {"type": ["integer", "null"], "enum": [1, 2, null]},
                "c": {"type": ["array", "null"], "items": {"type": "string"}}
            }, "required": ["a", "b", "c"], "additionalProperties": false})
        );
    }

    #[test]
    fn gemini_subset() {
        let plain = json!({"type": "object", "properties": {
            "level": {"type": "integer", "enum": [1, 2], "description": "Level", "default": 1},
            "mode": {"type": "string", "enum": ["a"]}
        }, "additionalProperties": false});
        assert_eq!(
            gemini(&plain),
            json!({"type": "OBJECT", "properties": {
                "level": {"type": "INTEGER", "description": "Level. One of: 1, 2."},
                "mode": {"type": "STRING", "enum": ["a"]}
            }})
        );
    }

    #[test]
    fn annotations_follow_mcp_defaults() {
        let unknown = Annotations::from_effects(&Effects::default());
        assert!(unknown.destructive_hint && unknown.open_world_hint && !unknown.read_only_hint);
        let unsaid_writes = Annotations::from_effects(&Effects {
            destructive: Some(false),
            network: Some(false),
            ..Effects::default()
        });
        assert!(!unsaid_writes.read_only_hint && !unsaid_writes.destructive_hint);
        let ro = Annotations::from_effects(&Effects {
            destructive: Some(false),
            network: Some(false),
            filesystem: Some(crate::model::FilesystemEffects {
                write: Some(false),
                ..Default::default()
            }),
            ..Effects::default()
        });
        assert_eq!(
            ro,
            Annotations {
                read_only_hint: true,
                destructive_hint: false,
                idempotent_hint: true,
                open_world_hint: false
            }
        );
    }
}
