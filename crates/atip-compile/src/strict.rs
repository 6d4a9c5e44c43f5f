//! The checker behind `atip export --check`: does an exported tool list obey its
//! provider's rules? OpenAI strict mode is the strictest; every JSON format has its own
//! rule set (names, description length, root object, `$ref`, keyword subsets, limits).
//!
//! Owns the rules as we read them from the providers (FIELD-FACTS §1, §3–§5). Must not
//! change the output it checks.

use super::Format;
use super::names;
use super::safety::MAX_DESCRIPTION;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashSet;

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Tool name (or `#index` when it has none).
    pub tool: String,
    /// JSON Pointer into the whole output.
    pub pointer: String,
    /// Which rule, e.g. `strict-required`.
    pub rule: &'static str,
    /// What is wrong.
    pub message: String,
}

/// Keywords OpenAI strict mode accepts in a schema.
const OPENAI_STRICT_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "title",
];

/// Keywords the Gemini `parameters` schema (OpenAPI subset) accepts.
const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "nullable",
    "format",
    "description",
    "title",
    "enum",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "propertyOrdering",
    "anyOf",
    "default",
    "example",
];

const GEMINI_TYPES: &[&str] = &[
    "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL",
];
const JSON_TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "array", "object", "null",
];

struct Checker {
    out: Vec<Violation>,
    tool: String,
}

impl Checker {
    fn bad(&mut self, pointer: &str, rule: &'static str, message: impl Into<String>) {
        self.out.push(Violation {
            tool: self.tool.clone(),
            pointer: pointer.to_string(),
            rule,
            message: message.into(),
        });
    }
}

/// Checks a rendered tool list (the output of [`super::render`]) against `format`'s rules.
/// Markdown formats have no schema and always pass.
pub fn check(format: Format, output: &Value) -> Vec<Violation> {
    let mut c = Checker {
        out: Vec::new(),
        tool: String::new(),
    };
    let tools: Vec<(String, &Value)> = match format {
        Format::Openai | Format::OpenaiStrict | Format::Anthropic => match output.as_array() {
            Some(a) => a
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("/{i}"), t))
                .collect(),
            None => {
                c.bad("", "shape", "output must be an array of tools");
                return c.out;
            }
        },
        Format::Gemini => match output
            .pointer("/0/functionDeclarations")
            .and_then(Value::as_array)
        {
            Some(a) if output.as_array().is_some_and(|o| o.len() == 1) => a
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("/0/functionDeclarations/{i}"), t))
                .collect(),
            _ => {
                c.bad(
                    "",
                    "shape",
                    "output must be [{\"functionDeclarations\": [...]}]",
                );
                return c.out;
            }
        },
        Format::Mcp => match output.get("tools").and_then(Value::as_array) {
            Some(a) => a
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("/tools/{i}"), t))
                .collect(),
            None => {
                c.bad("", "shape", "output must be {\"tools\": [...]}");
                return c.out;
            }
        },
        Format::Skill | Format::Prompt => return c.out,
    };
    let mut seen = HashSet::new();
    for (ptr, tool) in tools {
        check_tool(&mut c, format, &ptr, tool, &mut seen);
    }
    c.out
}

/// Checks a tool list one element at a time (for outputs written as a stream).
pub struct StreamChecker {
    format: Format,
    c: Checker,
    seen: HashSet<String>,
}

impl StreamChecker {
    /// A checker for `format`.
    pub fn new(format: Format) -> StreamChecker {
        StreamChecker {
            format,
            c: Checker {
                out: Vec::new(),
                tool: String::new(),
            },
            seen: HashSet::new(),
        }
    }

    /// Checks one element (from `formats::element`) found at `pointer` in the output.
    pub(crate) fn tool(&mut self, pointer: &str, element: &Value) {
        if self.format.is_json() {
            check_tool(&mut self.c, self.format, pointer, element, &mut self.seen);
        }
    }

    /// The violations found.
    pub(crate) fn finish(self) -> Vec<Violation> {
        self.c.out
    }
}

fn check_tool(
    c: &mut Checker,
    format: Format,
    ptr: &str,
    tool: &Value,
    seen: &mut HashSet<String>,
) {
    let ptr = ptr.to_string();
    let (base, schema_key) = match format {
        Format::Openai | Format::OpenaiStrict => (format!("{ptr}/function"), "parameters"),
        Format::Anthropic => (ptr.clone(), "input_schema"),
        Format::Gemini => (ptr.clone(), "parameters"),
        Format::Mcp => (ptr.clone(), "inputSchema"),
        Format::Skill | Format::Prompt => unreachable!("returned above"),
    };
    let def = tool
        .pointer(&base.replacen(&ptr, "", 1))
        .unwrap_or(&Value::Null);
    let name = def.get("name").and_then(Value::as_str).unwrap_or("");
    c.tool = if name.is_empty() {
        format!("#{ptr}")
    } else {
        name.to_string()
    };
    if format == Format::Openai || format == Format::OpenaiStrict {
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            c.bad(
                &format!("{ptr}/type"),
                "shape",
                "tool type must be \"function\"",
            );
        }
        if format == Format::OpenaiStrict && def.get("strict") != Some(&Value::Bool(true)) {
            c.bad(
                &format!("{base}/strict"),
                "strict-flag",
                "strict must be true",
            );
        }
    }
    check_name(c, format, name, &format!("{base}/name"));
    if !seen.insert(name.to_string()) {
        c.bad(
            &format!("{base}/name"),
            "unique-name",
            format!("tool name {name:?} is used twice"),
        );
    }
    check_description(c, def, &base);
    check_root_schema(c, format, def, schema_key, &base);
    if format == Format::Mcp {
        check_annotations(c, tool, &ptr);
    }
}

/// A tool's description: present, not empty, and within [`MAX_DESCRIPTION`] characters.
fn check_description(c: &mut Checker, def: &Value, base: &str) {
    match def.get("description") {
        Some(Value::String(d)) => {
            if d.chars().count() > MAX_DESCRIPTION {
                c.bad(
                    &format!("{base}/description"),
                    "description-length",
                    format!(
                        "description has {} characters, more than {MAX_DESCRIPTION}",
                        d.chars().count()
                    ),
                );
            }
            if d.trim().is_empty() || d.contains("undefined") && d.trim() == "undefined" {
                c.bad(
                    &format!("{base}/description"),
                    "description-empty",
                    "description is empty",
                );
            }
        }
        _ => c.bad(
            &format!("{base}/description"),
            "description-missing",
            "description is missing",
        ),
    }
}

/// A tool's input schema: present (Gemini may leave it out), an object at the root, and
/// valid for the format: OpenAI strict mode's rules, Gemini's subset, or JSON Schema.
fn check_root_schema(c: &mut Checker, format: Format, def: &Value, schema_key: &str, base: &str) {
    let sptr = format!("{base}/{schema_key}");
    match def.get(schema_key) {
        None if format == Format::Gemini => {}
        None => c.bad(&sptr, "schema-missing", format!("{schema_key} is missing")),
        Some(schema) => {
            if schema
                .get("type")
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase)
                .as_deref()
                != Some("object")
            {
                c.bad(&sptr, "root-object", "the root schema must be type object");
            }
            match format {
                Format::OpenaiStrict => {
                    if schema.get("anyOf").is_some() {
                        c.bad(&sptr, "strict-root-anyof", "the root must not be anyOf");
                    }
                    let mut stats = Stats::default();
                    strict_node(c, schema, &sptr, 1, &mut stats);
                    stats.report(c, &sptr);
                }
                Format::Gemini => gemini_node(c, schema, &sptr),
                _ => {
                    general_node(c, schema, &sptr);
                    if let Some((at, why)) = atip_model::schema::meta_errors(schema).first() {
                        c.bad(
                            &sptr,
                            "json-schema",
                            format!(
                                "not a valid JSON Schema 2020-12: {}: {why}",
                                if at.is_empty() { "/" } else { at }
                            ),
                        );
                    }
                }
            }
        }
    }
}

/// MCP's four tool annotations, each a boolean.
fn check_annotations(c: &mut Checker, tool: &Value, ptr: &str) {
    match tool.get("annotations") {
        Some(Value::Object(a)) => {
            for key in [
                "readOnlyHint",
                "destructiveHint",
                "idempotentHint",
                "openWorldHint",
            ] {
                if !a.get(key).is_some_and(Value::is_boolean) {
                    c.bad(
                        &format!("{ptr}/annotations/{key}"),
                        "mcp-annotations",
                        format!("{key} must be a boolean"),
                    );
                }
            }
        }
        _ => c.bad(
            &format!("{ptr}/annotations"),
            "mcp-annotations",
            "annotations are missing",
        ),
    }
}

fn check_name(c: &mut Checker, format: Format, name: &str, ptr: &str) {
    let ok = match format {
        Format::Openai | Format::OpenaiStrict | Format::Anthropic => {
            !name.is_empty()
                && name.len() <= 64
                && name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
        }
        Format::Gemini => {
            name.starts_with(|ch: char| ch.is_ascii_alphabetic() || ch == '_')
                && name.len() <= 64
                && name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "_.:-".contains(ch))
        }
        Format::Mcp => {
            !name.is_empty()
                && name.len() <= 128
                && name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "_.-".contains(ch))
        }
        Format::Skill | Format::Prompt => true,
    };
    if !ok {
        c.bad(
            ptr,
            "tool-name",
            format!("tool name {name:?} breaks the provider's name rule"),
        );
    }
}

/// Rules every format shares: no `$ref`, arrays carry `items`, type names are JSON's.
fn general_node(c: &mut Checker, node: &Value, ptr: &str) {
    let Some(o) = node.as_object() else { return };
    if o.contains_key("$ref") {
        c.bad(ptr, "no-ref", "$ref is not allowed");
    }
    let types = types_of(node);
    if types.iter().any(|t| t == "array") && !o.contains_key("items") {
        c.bad(ptr, "array-items", "an array needs items");
    }
    for t in &types {
        if !JSON_TYPES.contains(&t.as_str()) {
            c.bad(
                &format!("{ptr}/type"),
                "type-name",
                format!("unknown type {t:?}"),
            );
        }
    }
    for (k, v) in o {
        match k.as_str() {
            "properties" => {
                if let Some(p) = v.as_object() {
                    for (name, s) in p {
                        general_node(c, s, &format!("{ptr}/properties/{}", escape(name)));
                    }
                }
            }
            "items" => general_node(c, v, &format!("{ptr}/items")),
            "anyOf" | "oneOf" | "allOf" => {
                for (i, s) in v.as_array().into_iter().flatten().enumerate() {
                    general_node(c, s, &format!("{ptr}/{k}/{i}"));
                }
            }
            _ => {}
        }
    }
}

fn types_of(node: &Value) -> Vec<String> {
    match node.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|t| t.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[derive(Default)]
struct Stats {
    properties: usize,
    depth: usize,
    enum_values: usize,
    chars: usize,
}

impl Stats {
    /// Reports every OpenAI strict-mode limit the schema goes past.
    fn report(&self, c: &mut Checker, ptr: &str) {
        let limits = [
            (self.properties, 5000, "object properties"),
            (self.depth, 10, "nesting depth"),
            (self.enum_values, 1000, "enum values"),
            (self.chars, 120_000, "characters of names and enum values"),
        ];
        for (value, max, what) in limits {
            if value > max {
                let message = if what == "nesting depth" {
                    format!("{what} {value}, more than {max}")
                } else {
                    format!("{value} {what}, more than {max}")
                };
                c.bad(ptr, "strict-limit", message);
            }
        }
    }
}

/// OpenAI strict mode: supported keywords only, every object closed with every property
/// required, nullable enums carry `null`, arrays carry `items`, limits.
fn strict_node(c: &mut Checker, node: &Value, ptr: &str, depth: usize, stats: &mut Stats) {
    let Some(o) = node.as_object() else {
        c.bad(ptr, "strict-schema", "a schema must be an object");
        return;
    };
    stats.depth = stats.depth.max(depth);
    for k in o.keys() {
        if !OPENAI_STRICT_KEYWORDS.contains(&k.as_str()) {
            c.bad(
                &format!("{ptr}/{}", escape(k)),
                "strict-keyword",
                format!("keyword {k:?} is not supported in strict mode"),
            );
        }
    }
    let types = types_of(node);
    if types.is_empty()
        && !o.contains_key("anyOf")
        && !o.contains_key("enum")
        && !o.contains_key("const")
    {
        c.bad(
            ptr,
            "strict-type",
            "every schema needs a type (or anyOf/enum)",
        );
    }
    for t in &types {
        if !JSON_TYPES.contains(&t.as_str()) {
            c.bad(
                &format!("{ptr}/type"),
                "type-name",
                format!("unknown type {t:?}"),
            );
        }
    }
    if types.len() > 1 && !(types.len() == 2 && types.iter().any(|t| t == "null")) {
        c.bad(
            &format!("{ptr}/type"),
            "strict-type",
            "a type array may only add null to one type",
        );
    }
    if let Some(Value::Array(values)) = o.get("enum") {
        strict_enum(c, values, &types, ptr, stats);
    }
    if types.iter().any(|t| t == "array") {
        match o.get("items") {
            Some(items) => strict_node(c, items, &format!("{ptr}/items"), depth + 1, stats),
            None => c.bad(ptr, "array-items", "an array needs items"),
        }
    }
    if let Some(Value::Array(branches)) = o.get("anyOf") {
        for (i, b) in branches.iter().enumerate() {
            strict_node(c, b, &format!("{ptr}/anyOf/{i}"), depth + 1, stats);
        }
    }
    if types.iter().any(|t| t == "object") {
        strict_object(c, o, ptr, depth, stats);
    }
}

/// Strict mode's rules for an enum: a nullable one lists null, and every value has the
/// schema's type.
fn strict_enum(c: &mut Checker, values: &[Value], types: &[String], ptr: &str, stats: &mut Stats) {
    stats.enum_values += values.len();
    stats.chars += values
        .iter()
        .map(|v| v.as_str().map_or(v.to_string().len(), str::len))
        .sum::<usize>();
    let nullable = types.iter().any(|t| t == "null");
    if nullable && !values.contains(&Value::Null) {
        c.bad(
            &format!("{ptr}/enum"),
            "strict-nullable-enum",
            "a nullable enum must list null",
        );
    }
    for (i, v) in values.iter().enumerate() {
        let ok = types.is_empty()
            || types.iter().any(|t| match t.as_str() {
                "string" => v.is_string(),
                "integer" => v.is_i64() || v.is_u64(),
                "number" => v.is_number(),
                "boolean" => v.is_boolean(),
                "null" => v.is_null(),
                _ => false,
            });
        if !ok {
            c.bad(
                &format!("{ptr}/enum/{i}"),
                "strict-enum-type",
                format!("enum value {v} does not match the type"),
            );
        }
    }
}

/// Strict mode's rules for an object: closed (`additionalProperties: false`), every
/// property required and named as an identifier, `required` naming only properties.
fn strict_object(
    c: &mut Checker,
    o: &serde_json::Map<String, Value>,
    ptr: &str,
    depth: usize,
    stats: &mut Stats,
) {
    if o.get("additionalProperties") != Some(&Value::Bool(false)) {
        c.bad(
            ptr,
            "strict-additional-properties",
            "every object needs additionalProperties: false",
        );
    }
    let props = o.get("properties").and_then(Value::as_object);
    let required: HashSet<&str> = o
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = props {
        stats.properties += props.len();
        for (name, s) in props {
            stats.chars += name.len();
            let p = format!("{ptr}/properties/{}", escape(name));
            if !required.contains(name.as_str()) {
                c.bad(
                    &p,
                    "strict-required",
                    format!("property {name:?} is not listed in required"),
                );
            }
            if !names::is_valid_property(name)
                && !name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
            {
                c.bad(
                    &p,
                    "property-name",
                    format!("property name {name:?} is not an identifier"),
                );
            }
            strict_node(c, s, &p, depth + 1, stats);
        }
    }
    for r in &required {
        if props.is_none_or(|p| !p.contains_key(*r)) {
            c.bad(
                &format!("{ptr}/required"),
                "strict-required",
                format!("required lists {r:?}, which is not a property"),
            );
        }
    }
}

/// Gemini's OpenAPI subset: allowed keywords only, one upper-case type, string enums,
/// identifier property names.
fn gemini_node(c: &mut Checker, node: &Value, ptr: &str) {
    let Some(o) = node.as_object() else {
        c.bad(ptr, "gemini-schema", "a schema must be an object");
        return;
    };
    for k in o.keys() {
        if !GEMINI_KEYWORDS.contains(&k.as_str()) {
            c.bad(
                &format!("{ptr}/{}", escape(k)),
                "gemini-keyword",
                format!("keyword {k:?} is not in Gemini's schema subset"),
            );
        }
    }
    let Some(ty) = gemini_type(c, o, ptr) else {
        return;
    };
    if let Some(values) = o.get("enum")
        && (ty != "STRING"
            || !values
                .as_array()
                .is_some_and(|a| a.iter().all(Value::is_string)))
    {
        c.bad(
            &format!("{ptr}/enum"),
            "gemini-enum",
            "enums must be strings of a STRING type",
        );
    }
    if ty == "ARRAY" {
        match o.get("items") {
            Some(items) => gemini_node(c, items, &format!("{ptr}/items")),
            None => c.bad(ptr, "array-items", "an array needs items"),
        }
    }
    if let Some(props) = o.get("properties").and_then(Value::as_object) {
        gemini_properties(c, props, &ty, ptr);
    }
    if let Some(Value::Array(branches)) = o.get("anyOf") {
        for (i, b) in branches.iter().enumerate() {
            gemini_node(c, b, &format!("{ptr}/anyOf/{i}"));
        }
    }
}

/// The node's one type, upper-cased (empty when it is left to `anyOf`); `None` (after the
/// finding) when it is a list, whose branches cannot be checked further.
fn gemini_type(c: &mut Checker, o: &serde_json::Map<String, Value>, ptr: &str) -> Option<String> {
    match o.get("type") {
        Some(Value::String(t)) => {
            if !GEMINI_TYPES.contains(&t.to_ascii_uppercase().as_str()) {
                c.bad(
                    &format!("{ptr}/type"),
                    "gemini-type",
                    format!("unknown type {t:?}"),
                );
            }
            Some(t.to_ascii_uppercase())
        }
        Some(_) => {
            c.bad(
                &format!("{ptr}/type"),
                "gemini-type",
                "type must be a single string, not a list",
            );
            None
        }
        None => {
            if !o.contains_key("anyOf") {
                c.bad(ptr, "gemini-type", "type is missing");
            }
            Some(String::new())
        }
    }
}

/// An OBJECT's properties: at least one, identifier names, each a Gemini schema.
fn gemini_properties(c: &mut Checker, props: &serde_json::Map<String, Value>, ty: &str, ptr: &str) {
    if ty == "OBJECT" && props.is_empty() {
        c.bad(
            &format!("{ptr}/properties"),
            "gemini-empty-object",
            "an OBJECT needs at least one property",
        );
    }
    for (name, s) in props {
        let p = format!("{ptr}/properties/{}", escape(name));
        if !names::is_valid_property(name) {
            c.bad(
                &p,
                "property-name",
                format!("property name {name:?} must match ^[a-zA-Z_][a-zA-Z0-9_]{{0,63}}$"),
            );
        }
        gemini_node(c, s, &p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_catches_the_reference_compiler_mistakes() {
        let out = json!([{"type": "function", "function": {"name": "gh_pr_list", "description": "d", "strict": true,
            "parameters": {"type": "object", "properties": {
                "state": {"type": ["string", "null"], "enum": ["open", "closed"]},
                "labels": {"type": "array"},
                "limit": {"type": "integer", "default": 30}
            }, "required": ["state", "labels"], "additionalProperties": false}}}]);
        let rules: Vec<&str> = check(Format::OpenaiStrict, &out)
            .iter()
            .map(|v| v.rule)
            .collect();
        for expected in [
            "strict-keyword",
            "array-items",
            "strict-required",
            "strict-nullable-enum",
        ] {
            assert!(
                rules.contains(&expected),
                "{expected} missing from {rules:?}"
            );
        }
        assert_eq!(rules.len(), 4, "{rules:?}");
    }

    #[test]
    fn gemini_rejects_dashes_and_numeric_enums() {
        let out = json!([{"functionDeclarations": [{"name": "x", "description": "d", "parameters": {
            "type": "OBJECT", "additionalProperties": false, "properties": {
                "dry-run": {"type": "BOOLEAN"}, "n": {"type": "INTEGER", "enum": [1, 2]}}}}]}]);
        let rules: Vec<&str> = check(Format::Gemini, &out).iter().map(|v| v.rule).collect();
        assert!(rules.contains(&"gemini-keyword"));
        assert!(rules.contains(&"property-name"));
        assert!(rules.contains(&"gemini-enum"));
    }
}
