//! Tool-call arguments: parsing the JSON text, the coercion policy, size limits and
//! validation against the tool's exported input schema.
//!
//! Coercion policy (documented in `spec/exec.md`): JSON types are strict, with four
//! narrow, lossless exceptions applied before validation, each reported in the result's
//! `meta.coerced`:
//! 1. `null` for an optional property means "absent" (OpenAI strict mode sends `null` for
//!    every optional property it does not use);
//! 2. a string holding a decimal number where `integer`/`number` is expected (`"5"` → 5);
//! 3. `"true"`/`"false"` where `boolean` is expected;
//! 4. a single scalar where an array is expected becomes a one-item array;
//!
//! plus a float with no fractional part where an integer is expected (`3.0` → 3).
//! Anything else that does not match the schema is an error. Must not build argv or run.

use crate::output::{AtipError, ErrorCode};
use serde_json::{Map, Value, json};

/// Parses argument text. Empty text (some models send `""` for no arguments) is `{}`.
pub fn parse_text(text: &str) -> Result<Map<String, Value>, AtipError> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        let offset = byte_offset(text, e.line(), e.column());
        AtipError::new(
            ErrorCode::ArgsMalformed,
            format!(
                "arguments are not valid JSON: {e} (line {}, column {}, byte {offset})",
                e.line(),
                e.column()
            ),
        )
        .hint("send a JSON object such as {\"name\": \"value\"}")
        .details(json!({"line": e.line(), "column": e.column(), "offset": offset}))
    })?;
    into_object(value)
}

/// Checks an already-parsed value is an object.
pub fn into_object(value: Value) -> Result<Map<String, Value>, AtipError> {
    match value {
        Value::Object(m) => Ok(m),
        other => Err(AtipError::new(
            ErrorCode::ArgsInvalid,
            format!("arguments must be a JSON object, got {}", type_name(&other)),
        )
        .hint("send a JSON object such as {\"name\": \"value\"}")),
    }
}

fn byte_offset(text: &str, line: usize, column: usize) -> usize {
    let mut off = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return off + column.saturating_sub(1).min(l.len());
        }
        off += l.len();
    }
    text.len()
}

/// The JSON type name of a value.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn schema_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Applies the coercion policy in place; returns notes such as `count: "5" → 5`.
pub(crate) fn coerce(schema: &Value, args: &mut Map<String, Value>) -> Vec<String> {
    let mut notes = Vec::new();
    let props = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let keys: Vec<String> = args.keys().cloned().collect();
    for key in keys {
        let Some(prop) = props.and_then(|p| p.get(&key)) else {
            continue;
        };
        let types = schema_types(prop);
        if args[&key].is_null() && !types.contains(&"null") && !required.contains(&key.as_str()) {
            args.remove(&key);
            notes.push(format!("{key}: null → absent"));
            continue;
        }
        let value = args.get_mut(&key).expect("key exists");
        if types.contains(&"array") && !value.is_array() && !value.is_null() {
            let item_schema = prop.get("items").cloned().unwrap_or(json!({}));
            let mut item = value.take();
            coerce_scalar(&item_schema, &mut item, &key, &mut notes);
            *value = Value::Array(vec![item]);
            notes.push(format!("{key}: single value → one-item array"));
            continue;
        }
        if let Value::Array(items) = value {
            let item_schema = prop.get("items").cloned().unwrap_or(json!({}));
            for (i, item) in items.iter_mut().enumerate() {
                coerce_scalar(&item_schema, item, &format!("{key}[{i}]"), &mut notes);
            }
            continue;
        }
        coerce_scalar(prop, value, &key, &mut notes);
    }
    notes
}

fn coerce_scalar(schema: &Value, value: &mut Value, at: &str, notes: &mut Vec<String>) {
    let types = schema_types(schema);
    let wants = |t: &str| types.contains(&t);
    let new = match &*value {
        Value::String(s) if wants("integer") && !wants("string") => {
            s.trim().parse::<i64>().ok().map(Value::from)
        }
        Value::String(s) if wants("number") && !wants("string") => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number),
        Value::String(s) if wants("boolean") && !wants("string") => match s.as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        Value::Number(n) if wants("integer") && !wants("number") && !(n.is_i64() || n.is_u64()) => {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| Value::from(f as i64))
        }
        _ => None,
    };
    if let Some(new) = new {
        notes.push(format!("{at}: {} → {}", short(value), short(&new)));
        *value = new;
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        format!("{}…", &s[..s.floor_char_boundary(40)])
    } else {
        s
    }
}

/// One schema violation.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Violation {
    /// JSON pointer into the arguments (`/count`, or `` for the whole object).
    pub path: String,
    /// What is wrong (argument values are not echoed).
    pub message: String,
}

/// Enforces size limits and the NUL ban before schema validation, so a 10 MB string is
/// rejected without being copied around.
pub(crate) fn check_limits(
    args: &Map<String, Value>,
    max_string: usize,
    max_items: usize,
) -> Vec<Violation> {
    let mut out = Vec::new();
    fn walk(v: &Value, path: String, max_s: usize, max_i: usize, out: &mut Vec<Violation>) {
        match v {
            Value::String(s) => {
                if s.len() > max_s {
                    out.push(Violation {
                        path,
                        message: format!(
                            "string of {} bytes exceeds the limit of {max_s} bytes",
                            s.len()
                        ),
                    });
                } else if s.contains('\0') {
                    out.push(Violation {
                        path,
                        message: "string contains a NUL byte, which no command line can carry"
                            .into(),
                    });
                }
            }
            Value::Array(items) => {
                if items.len() > max_i {
                    out.push(Violation {
                        path: path.clone(),
                        message: format!(
                            "array of {} items exceeds the limit of {max_i} items",
                            items.len()
                        ),
                    });
                }
                for (i, item) in items.iter().enumerate().take(max_i) {
                    walk(item, format!("{path}/{i}"), max_s, max_i, out);
                }
            }
            Value::Object(m) => {
                for (k, v) in m {
                    walk(v, format!("{path}/{}", escape(k)), max_s, max_i, out);
                }
            }
            _ => {}
        }
    }
    for (k, v) in args {
        if k.len() > 256 {
            out.push(Violation {
                path: String::new(),
                message: format!("property name of {} bytes is too long", k.len()),
            });
            continue;
        }
        walk(
            v,
            format!("/{}", escape(k)),
            max_string,
            max_items,
            &mut out,
        );
    }
    out
}

fn escape(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

/// A compiled input schema.
pub struct Checker {
    compiled: atip_model::schema::Compiled,
}

impl std::fmt::Debug for Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Checker")
    }
}

impl Checker {
    /// Compiles a tool's input schema (which can come from an untrusted MCP server).
    ///
    /// Nothing outside the schema is loaded: a `$ref` or `$schema` naming a file or a URL
    /// is an error, as is a `pattern` the `regex` crate cannot compile (look-around,
    /// backreferences) — never a silent accept. The exporter writes JSON Schema 2020-12
    /// using only keywords that mean the same in draft 7 (type, properties, required,
    /// additionalProperties, enum, items as one schema, bounds, lengths, pattern). For
    /// such schemas the draft-7 rules are used: identical results, and the much smaller
    /// draft-7 meta-schema compiles in a fraction of the time, which every `atip exec`
    /// process pays once. A schema using anything 2020-12 added is validated under
    /// 2020-12. `format` is an annotation in both cases, as 2020-12 says.
    pub fn new(schema: &Value) -> Result<Checker, AtipError> {
        use atip_model::schema::{Draft, compile_value};
        let draft = if uses_2020_keywords(schema) {
            Draft::V2020_12
        } else {
            Draft::V7
        };
        let compiled = compile_value(schema, draft).map_err(|e| {
            AtipError::new(
                ErrorCode::Internal,
                format!("the input schema does not compile: {e}"),
            )
        })?;
        Ok(Checker { compiled })
    }

    /// Every violation of the schema (values masked).
    pub fn check(&self, args: &Map<String, Value>) -> Vec<Violation> {
        let instance = Value::Object(args.clone());
        self.compiled
            .violations(&instance)
            .into_iter()
            .map(|(path, message)| Violation { path, message })
            .collect()
    }
}

/// Whether `args` certainly satisfy `schema`, decided without compiling it: only for
/// schemas made of the keywords atip's generated input schemas use (`type`, `enum`,
/// `items` as one schema, `properties`, `required`, `additionalProperties`, and the
/// annotations `description`, `title`, `default`), each well-formed as the draft-7
/// meta-schema wants, and read as JSON Schema reads it. Anything else — another keyword,
/// a float where an integer is wanted, an enum value equal only numerically — is "not
/// certain". `true` implies [`Checker::check`] finds nothing (and the schema compiles);
/// `false` means ask it. Compiling the validator (the draft-7 meta-schema's included) was
/// ~0.5 ms of every `atip exec`; a valid call now skips it and every diagnostic still
/// comes from the compiled schema.
pub fn certainly_valid(schema: &Value, args: &Map<String, Value>) -> bool {
    in_subset(schema)
        && schema
            .as_object()
            .is_some_and(|s| object_certain(s, args) && keywords_certain(s, &Value::Null, true))
}

/// Whether `schema` uses only the keywords [`certainly_valid`] decides, each well-formed.
fn in_subset(schema: &Value) -> bool {
    const TYPES: &[&str] = &[
        "array", "boolean", "integer", "null", "number", "object", "string",
    ];
    let Some(s) = schema.as_object() else {
        return schema.is_boolean();
    };
    s.iter().all(|(k, v)| match k.as_str() {
        "description" | "title" => v.is_string(),
        "default" => true,
        "enum" => v.is_array(),
        "type" => match v {
            Value::String(t) => TYPES.contains(&t.as_str()),
            Value::Array(ts) => {
                !ts.is_empty()
                    && ts.iter().enumerate().all(|(i, t)| {
                        t.as_str().is_some_and(|t| TYPES.contains(&t)) && !ts[..i].contains(t)
                    })
            }
            _ => false,
        },
        "items" | "additionalProperties" => in_subset(v),
        "properties" => v.as_object().is_some_and(|p| p.values().all(in_subset)),
        "required" => v.as_array().is_some_and(|r| {
            r.iter()
                .enumerate()
                .all(|(i, n)| n.is_string() && !r[..i].contains(n))
        }),
        _ => false,
    })
}

/// Whether `value` certainly satisfies `schema` (already [`in_subset`]).
fn certain(schema: &Value, value: &Value) -> bool {
    match schema {
        Value::Bool(b) => *b,
        Value::Object(s) => {
            keywords_certain(s, value, false)
                && match value {
                    Value::Object(o) => object_certain(s, o),
                    Value::Array(items) => s
                        .get("items")
                        .is_none_or(|i| items.iter().all(|x| certain(i, x))),
                    _ => true,
                }
        }
        _ => false,
    }
}

/// `type` and `enum` of `s` for `value`; with `object`, the value is an object whose
/// members [`object_certain`] checks (`enum` on an object is then "not certain").
fn keywords_certain(s: &Map<String, Value>, value: &Value, object: bool) -> bool {
    let type_ok = |t: &Value| match t.as_str() {
        Some("object") => object || value.is_object(),
        Some("array") => !object && value.is_array(),
        Some("string") => !object && value.is_string(),
        Some("boolean") => !object && value.is_boolean(),
        Some("null") => !object && value.is_null(),
        Some("number") => !object && value.is_number(),
        // Integers as JSON has them; 3.0 is an integer to JSON Schema, but not certainly
        // one here (floats are for the compiled schema to judge).
        Some("integer") => !object && (value.is_i64() || value.is_u64()),
        _ => false,
    };
    s.get("type").is_none_or(|t| match t {
        Value::Array(ts) => ts.iter().any(type_ok),
        t => type_ok(t),
    }) && s
        .get("enum")
        // Equal as serde_json compares: then equal as JSON Schema compares too.
        .is_none_or(|e| !object && e.as_array().is_some_and(|e| e.contains(value)))
}

/// `properties`, `required` and `additionalProperties` of `s` for the object `o`.
fn object_certain(s: &Map<String, Value>, o: &Map<String, Value>) -> bool {
    let props = s.get("properties").and_then(Value::as_object);
    let declared = |k: &String| props.is_some_and(|p| p.contains_key(k));
    props.is_none_or(|p| {
        p.iter()
            .all(|(k, sub)| o.get(k).is_none_or(|v| certain(sub, v)))
    }) && s.get("required").is_none_or(|r| {
        r.as_array().is_some_and(|r| {
            r.iter()
                .all(|n| n.as_str().is_some_and(|n| o.contains_key(n)))
        })
    }) && s.get("additionalProperties").is_none_or(|extra| {
        o.iter()
            .filter(|(k, _)| !declared(k))
            .all(|(_, v)| certain(extra, v))
    })
}

/// Whether a schema uses a keyword that draft 7 does not know or reads differently.
fn uses_2020_keywords(v: &Value) -> bool {
    const NEW: &[&str] = &[
        "$schema",
        "$defs",
        "$ref",
        "$dynamicRef",
        "$dynamicAnchor",
        "$anchor",
        "$recursiveRef",
        "prefixItems",
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedProperties",
        "unevaluatedItems",
        "minContains",
        "maxContains",
        "contentSchema",
    ];
    match v {
        Value::Object(m) => {
            m.keys().any(|k| NEW.contains(&k.as_str()))
                || m.get("items").is_some_and(Value::is_array)
                // Draft 7 asserts `format: regex`, the one format boon cannot turn off.
                || m.get("format").is_some_and(|f| f == "regex")
                || m.values().any(uses_2020_keywords)
        }
        Value::Array(a) => a.iter().any(uses_2020_keywords),
        _ => false,
    }
}

/// The error for a list of violations.
pub fn invalid(tool: &str, violations: Vec<Violation>, schema: &Value) -> AtipError {
    let first = violations
        .iter()
        .take(3)
        .map(|v| {
            if v.path.is_empty() {
                v.message.clone()
            } else {
                format!("{}: {}", v.path, v.message)
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let more = if violations.len() > 3 {
        format!(" (and {} more)", violations.len() - 3)
    } else {
        String::new()
    };
    let props: Vec<&String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    AtipError::new(
        ErrorCode::ArgsInvalid,
        format!("arguments for {tool} do not match its input schema: {first}{more}"),
    )
    .hint(if props.is_empty() {
        "this tool takes no arguments: send {}".to_string()
    } else {
        format!(
            "known properties: {}",
            props
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
    .details(json!({"violations": violations}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "additionalProperties": false,
            "properties": {
                "count": {"type": "integer"},
                "ratio": {"type": "number"},
                "force": {"type": "boolean"},
                "name": {"type": "string"},
                "files": {"type": "array", "items": {"type": "string"}},
                "ids": {"type": "array", "items": {"type": "integer"}}
            },
            "required": ["name"]})
    }

    #[test]
    fn parse_errors_have_positions() {
        let e = parse_text("{\n  \"a\": 1,\n  oops}").unwrap_err();
        assert_eq!(e.code, "args_malformed");
        assert_eq!(e.details["line"], 3);
        assert!(e.message.contains("line 3"));
        assert_eq!(parse_text("[1]").unwrap_err().code, "args_invalid");
        assert!(parse_text("  ").unwrap().is_empty());
    }

    #[test]
    fn coercions() {
        let s = schema();
        let mut a = parse_text(
            r#"{"count":"5","ratio":"0.5","force":"true","name":"x","files":"a.txt","ids":["1",2.0],"extra":null}"#,
        )
        .unwrap();
        let notes = coerce(&s, &mut a);
        assert_eq!(
            Value::Object(a.clone()),
            json!({"count":5,"ratio":0.5,"force":true,"name":"x","files":["a.txt"],"ids":[1,2],"extra":null})
        );
        assert_eq!(notes.len(), 6, "{notes:?}");
        let mut b = parse_text(r#"{"count":null,"name":"5"}"#).unwrap();
        coerce(&s, &mut b);
        assert_eq!(Value::Object(b), json!({"name": "5"}));
        let mut c = parse_text(r#"{"count":"five","force":"yes","name":"n"}"#).unwrap();
        assert!(coerce(&s, &mut c).is_empty());
    }

    #[test]
    fn draft_choice() {
        assert!(!uses_2020_keywords(&schema()));
        assert!(uses_2020_keywords(
            &json!({"properties": {"a": {"prefixItems": []}}})
        ));
        assert!(uses_2020_keywords(&json!({"items": [{}]})));
        // Under 2020-12, prefixItems is enforced.
        let s = json!({"type": "object", "properties": {"p": {"type": "array",
            "prefixItems": [{"type": "integer"}]}}});
        let c = Checker::new(&s).unwrap();
        assert_eq!(c.check(&parse_text(r#"{"p": ["x"]}"#).unwrap()).len(), 1);
        assert!(
            c.check(&parse_text(r#"{"p": [1, "x"]}"#).unwrap())
                .is_empty()
        );
    }

    #[test]
    fn validation_and_limits() {
        let s = schema();
        let checker = Checker::new(&s).unwrap();
        let a = parse_text(r#"{"name":"secret-value","bogus":1,"count":"x"}"#).unwrap();
        let v = checker.check(&a);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v.iter().all(|x| !x.message.contains("secret-value")));
        let e = invalid("t_x", v, &s);
        assert_eq!(e.exit_code(), 65);
        assert!(e.hint.unwrap().contains("count"));
        let missing = checker.check(&Map::new());
        assert_eq!(missing.len(), 1);
        let big = parse_text(&format!(
            r#"{{"name":"{}","files":["a\u0000b"]}}"#,
            "x".repeat(100)
        ))
        .unwrap();
        let v = check_limits(&big, 50, 10);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].path, "/name");
        assert_eq!(v[1].path, "/files/0");
    }

    #[test]
    fn schemas_reaching_outside_or_with_patterns_regex_cannot_run_do_not_compile() {
        let dir = tempfile::tempdir().unwrap();
        let accept = dir.path().join("accept.json");
        std::fs::write(&accept, "{}").unwrap();
        for (prop, why) in [
            (
                json!({"$ref": format!("file://{}", accept.display())}),
                "accept.json",
            ),
            (json!({"$ref": "http://127.0.0.1:9/s.json"}), "s.json"),
            (
                json!({"type": "string", "pattern": "^(?!rm)"}),
                "look-around",
            ),
        ] {
            let s = json!({"type": "object", "properties": {"p": prop}});
            let e = Checker::new(&s).unwrap_err();
            assert!(e.message.contains(why), "{}", e.message);
        }
        // Formats are annotations under draft 7 too (boon asserts them there by default).
        let s = json!({"type": "object", "properties": {"u": {"type": "string", "format": "uri"},
            "d": {"type": "string", "format": "date-time"}}});
        assert!(!uses_2020_keywords(&s));
        let c = Checker::new(&s).unwrap();
        assert!(
            c.check(&parse_text(r#"{"u": "no uri", "d": "today"}"#).unwrap())
                .is_empty()
        );
        let r =
            json!({"type": "object", "properties": {"r": {"type": "string", "format": "regex"}}});
        assert!(uses_2020_keywords(&r));
        assert!(
            Checker::new(&r)
                .unwrap()
                .check(&parse_text(r#"{"r": "(?="}"#).unwrap())
                .is_empty()
        );
    }

    /// A schema as flattening writes them: every keyword the fast path decides.
    fn generated() -> Value {
        json!({"type": "object", "additionalProperties": false,
            "properties": {
                "count": {"type": "integer", "description": "n", "default": 2},
                "mode": {"type": "string", "enum": ["fast", "slow"], "title": "Mode"},
                "level": {"type": "integer", "enum": [1, 2]},
                "files": {"type": "array", "items": {"type": "string"}},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
                "force": {"type": "boolean"},
                "ratio": {"type": "number"},
                "maybe": {"type": ["string", "null"]}
            },
            "required": ["mode"]})
    }

    #[test]
    fn certainly_valid_decides_valid_calls_and_leaves_the_rest_to_jsonschema() {
        let s = generated();
        let checker = Checker::new(&s).unwrap();
        let sure = |text: &str| {
            let a = parse_text(text).unwrap();
            let sure = certainly_valid(&s, &a);
            assert!(!sure || checker.check(&a).is_empty(), "{text}");
            sure
        };
        for valid in [
            r#"{"mode":"fast"}"#,
            r#"{"mode":"slow","count":3,"level":2,"files":["x"],"tags":["a","b"],
                "force":true,"ratio":0.5,"maybe":null}"#,
            r#"{"mode":"fast","maybe":"s","files":[],"count":-4}"#,
        ] {
            assert!(sure(valid), "{valid}");
        }
        for not_sure in [
            // Invalid.
            r#"{}"#,
            r#"{"mode":"medium"}"#,
            r#"{"mode":"fast","extra":1}"#,
            r#"{"mode":"fast","count":"3"}"#,
            r#"{"mode":"fast","count":1.5}"#,
            r#"{"mode":"fast","level":3}"#,
            r#"{"mode":"fast","files":"x"}"#,
            r#"{"mode":"fast","files":[1]}"#,
            r#"{"mode":"fast","tags":["c"]}"#,
            r#"{"mode":"fast","force":1}"#,
            r#"{"mode":"fast","maybe":1}"#,
            // Valid to JSON Schema (3.0 is an integer, 1.0 equals 1), not certain here.
            r#"{"mode":"fast","count":3.0}"#,
            r#"{"mode":"fast","level":1.0}"#,
        ] {
            assert!(!sure(not_sure), "{not_sure}");
        }
        // A keyword outside the subset, or one the meta-schema would refuse (even in a
        // property the call does not use): jsonschema's, so that its errors stay.
        let a = parse_text(r#"{"n":"x"}"#).unwrap();
        for other in [
            json!({"type": "object", "properties": {"n": {"type": "string", "pattern": "^y$"}}}),
            json!({"type": "object", "properties": {"n": {"type": "string", "minLength": 2}}}),
            json!({"type": "object", "properties": {"n": {"type": "strnig"}}}),
            json!({"type": "object", "properties": {"m": {"type": 7}}}),
            json!({"type": "object", "properties": {"m": {"description": 7}}}),
            json!({"type": "object", "properties": {"m": {"items": [{}]}}}),
            json!({"type": "object", "properties": {"m": {"type": []}}}),
            json!({"type": "object", "required": ["n", "n"]}),
            json!({"type": "object", "enum": [{"n": "x"}]}),
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}),
        ] {
            assert!(!certainly_valid(&other, &a), "{other}");
        }
        assert!(certainly_valid(
            &json!({"type": "object", "properties": {"n": {"type": "string"}}}),
            &a
        ));
    }

    fn any_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-3i64..4).prop_map(Value::from),
            prop_oneof![Just(0.5f64), Just(1.0), Just(2.0), Just(-3.0)].prop_map(Value::from),
            prop_oneof![
                Just("fast"),
                Just("slow"),
                Just("a"),
                Just("b"),
                Just("c"),
                Just("3")
            ]
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                proptest::collection::btree_map(
                    prop_oneof![Just("mode".to_string()), Just("x".to_string())],
                    inner,
                    0..2
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Property-test cases: 64 (a debug build runs them in about a second), or
    /// `ATIP_PROPTEST_CASES` for a deeper run. (Marked test-only on its own too, so the
    /// env-read check in tests/layers.rs sees it as test code.)
    #[cfg(test)]
    fn proptest_cases() -> u32 {
        std::env::var("ATIP_PROPTEST_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(64)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(proptest_cases()))]

        /// Whatever the arguments, `certainly_valid` is never sure of a call jsonschema
        /// would reject.
        #[test]
        fn certainly_valid_is_never_wrong(
            args in proptest::collection::btree_map(
                proptest::sample::select(vec![
                    "count", "mode", "level", "files", "tags", "force", "ratio", "maybe", "extra",
                ]),
                any_value(),
                0..6,
            )
        ) {
            let s = generated();
            let a: Map<String, Value> = args.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            if certainly_valid(&s, &a) {
                proptest::prop_assert!(Checker::new(&s).unwrap().check(&a).is_empty());
            }
        }
    }
}
