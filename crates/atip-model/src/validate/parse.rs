//! Bytes → JSON value, once, watching for what serde_json would hide.
//!
//! Owns the decoding checks (empty input, UTF-8, byte-order mark), the parse itself with
//! a visitor that notices duplicate keys (serde_json's own `Value` keeps the last one
//! silently), and the mapping of parse failures to diagnostics with a source position.
//! Nesting is bounded by serde_json's recursion limit (128 levels), so hostile input
//! cannot overflow the stack; nothing here recurses on its own.
//!
//! Must not locate duplicate keys by pointer (that is `locate`, run only when the count
//! is non-zero) nor apply any schema or rule.

use super::Diagnostic;
use super::locate::{self, Position};
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::fmt;

/// The UTF-8 byte-order mark.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Deepest nesting of arrays and objects accepted (serde_json's recursion limit).
pub const MAX_DEPTH: usize = 128;

/// What parsing produced.
#[derive(Debug)]
pub struct Parsed {
    /// The document, when it parsed.
    pub value: Option<Value>,
    /// Decoding and syntax diagnostics (BOM warning, errors that stopped the parse).
    pub diagnostics: Vec<Diagnostic>,
    /// How many keys repeated an earlier key of the same object.
    pub duplicates: usize,
    /// Bytes skipped before the JSON text (3 for a BOM).
    pub text_offset: usize,
    utf8: bool,
}

impl Parsed {
    /// The JSON text (after any BOM); empty when the input is not UTF-8.
    pub fn text<'a>(&self, bytes: &'a [u8]) -> &'a str {
        if !self.utf8 {
            return "";
        }
        std::str::from_utf8(&bytes[self.text_offset.min(bytes.len())..]).unwrap_or("")
    }
}

/// Parses one document.
pub fn parse(bytes: &[u8]) -> Parsed {
    let mut out = Parsed {
        value: None,
        diagnostics: Vec::new(),
        duplicates: 0,
        text_offset: 0,
        utf8: false,
    };
    let mut body = bytes;
    if let Some(rest) = bytes.strip_prefix(BOM) {
        out.text_offset = BOM.len();
        body = rest;
        out.diagnostics.push(
            Diagnostic::new("bom", "", "the file starts with a UTF-8 byte-order mark")
                .at(Position::START),
        );
    }
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        Err(e) => {
            let pos = locate::position_in_bytes(body, e.valid_up_to());
            out.diagnostics.push(
                Diagnostic::new(
                    "invalid-utf8",
                    "",
                    format!(
                        "the input is not UTF-8: invalid byte 0x{:02x} at offset {}",
                        body[e.valid_up_to()],
                        e.valid_up_to() + out.text_offset
                    ),
                )
                .at(pos),
            );
            return out;
        }
    };
    out.utf8 = true;
    if text.trim_ascii().is_empty() {
        out.diagnostics.push(
            Diagnostic::new(
                "empty-input",
                "",
                if text.is_empty() {
                    "the input is empty".to_string()
                } else {
                    "the input holds only whitespace".to_string()
                },
            )
            .at(Position::START),
        );
        return out;
    }
    let dups = Cell::new(0usize);
    let scratch = Scratch::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let result = ValueSeed {
        dups: &dups,
        scratch: &scratch,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    out.duplicates = dups.get();
    match result {
        Ok(value) => out.value = Some(value),
        Err(e) => out.diagnostics.push(syntax_diagnostic(text, &e)),
    }
    out
}

fn syntax_diagnostic(text: &str, e: &serde_json::Error) -> Diagnostic {
    let pos = locate::position_of_line_column(text, e.line(), e.column());
    let full = e.to_string();
    // serde_json appends " at line L column C"; we report the position separately.
    let what = full
        .rsplit_once(" at line ")
        .map_or(full.as_str(), |(w, _)| w)
        .to_string();
    let (rule, message) = if what.contains("recursion limit exceeded") {
        (
            "nesting-too-deep",
            format!("arrays and objects are nested deeper than {MAX_DEPTH} levels"),
        )
    } else if what.contains("trailing characters") {
        (
            "trailing-characters",
            "there is more after the end of the JSON document".to_string(),
        )
    } else if e.is_eof() {
        (
            "truncated-json",
            format!("the JSON document ends too early: {what}"),
        )
    } else {
        ("json-syntax", format!("invalid JSON: {what}"))
    };
    Diagnostic::new(rule, "", message).at(pos)
}

/// Builds a `Value` exactly as serde_json does, counting keys that repeat.
///
/// Members and elements are first pushed on scratch stacks shared by the whole parse
/// (nested containers use the part above their parent's), then moved into a map or
/// vector allocated once at its final size: no reallocation while a container grows,
/// and no rehashing of an object's keys.
struct ValueSeed<'a> {
    dups: &'a Cell<usize>,
    scratch: &'a Scratch,
}

/// The scratch stacks of one parse.
#[derive(Default)]
struct Scratch {
    members: std::cell::RefCell<Vec<(String, Value)>>,
    items: std::cell::RefCell<Vec<Value>>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let start = self.scratch.items.borrow().len();
        let seed = || ValueSeed {
            dups: self.dups,
            scratch: self.scratch,
        };
        // A failed parse drops the scratch with whatever is left on it.
        while let Some(item) = seq.next_element_seed(seed())? {
            self.scratch.items.borrow_mut().push(item);
        }
        let mut stack = self.scratch.items.borrow_mut();
        let mut items = Vec::with_capacity(stack.len() - start);
        items.extend(stack.drain(start..));
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let start = self.scratch.members.borrow().len();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(ValueSeed {
                dups: self.dups,
                scratch: self.scratch,
            })?;
            self.scratch.members.borrow_mut().push((key, value));
        }
        let mut stack = self.scratch.members.borrow_mut();
        let mut out = Map::with_capacity(stack.len() - start);
        for (key, value) in stack.drain(start..) {
            if out.insert(key, value).is_some() {
                self.dups.set(self.dups.get() + 1);
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(bytes: &[u8]) -> Vec<String> {
        parse(bytes)
            .diagnostics
            .into_iter()
            .map(|d| d.rule)
            .collect()
    }

    #[test]
    fn decoding_failures() {
        assert_eq!(rules(b""), ["empty-input"]);
        assert_eq!(rules(b"  \n"), ["empty-input"]);
        assert_eq!(rules(b"{\"a\": \"\xff\"}"), ["invalid-utf8"]);
        assert_eq!(rules(b"\xEF\xBB\xBF{}"), ["bom"]);
        assert_eq!(rules(b"{} x"), ["trailing-characters"]);
        assert_eq!(rules(b"{\"a\": [1, 2"), ["truncated-json"]);
        assert_eq!(rules(b"{\"a\" 1}"), ["json-syntax"]);
        let deep = "[".repeat(200_000);
        assert_eq!(rules(deep.as_bytes()), ["nesting-too-deep"]);
    }

    #[test]
    fn counts_duplicates_and_keeps_last() {
        let p = parse(br#"{"a": 1, "b": {"c": 1, "c": 2}, "a": 3}"#);
        assert_eq!(p.duplicates, 2);
        assert_eq!(p.value.unwrap(), serde_json::json!({"a": 3, "b": {"c": 2}}));
    }

    #[test]
    fn same_value_as_serde_json() {
        let text = r#"{"x": [1, -2, 3.5, 1e400, true, null, "s\u00e9"], "y": {}}"#;
        let ours = parse(text.as_bytes()).value;
        let theirs: Option<Value> = serde_json::from_str(text).ok();
        assert_eq!(ours, theirs);
    }
}
