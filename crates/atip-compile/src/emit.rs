//! Fast output: each provider's tool element serialized straight from an [`ExportTool`]
//! through borrowed views, with no intermediate `serde_json::Value`.
//!
//! Owns nothing but speed: every view must print byte for byte what pretty-printing
//! `formats::element` gives (a unit test holds it to that). Must not change content.

use super::formats::{ExportTool, Format};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use std::io::Write;

/// A writer that indents every line after the first by `pad` spaces.
pub struct Indent<'a, W: Write> {
    out: &'a mut W,
    pad: &'static [u8],
}

impl<'a, W: Write> Indent<'a, W> {
    /// Wraps `out`; `pad` goes after every newline.
    pub fn new(out: &'a mut W, pad: &'static [u8]) -> Self {
        Indent { out, pad }
    }
}

impl<W: Write> Write for Indent<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            self.out.write_all(&rest[..=i])?;
            self.out.write_all(self.pad)?;
            rest = &rest[i + 1..];
        }
        self.out.write_all(rest)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Writes one element of `format`'s list, pretty-printed, continuation lines indented by `pad`.
pub(crate) fn write_element<W: Write>(
    out: &mut W,
    t: &ExportTool,
    format: Format,
    pad: &'static [u8],
) -> std::io::Result<()> {
    let mut w = Indent::new(out, pad);
    let mut ser =
        serde_json::Serializer::with_formatter(&mut w, serde_json::ser::PrettyFormatter::new());
    ElementView { t, format }
        .serialize(&mut ser)
        .map_err(std::io::Error::other)
}

struct ElementView<'a> {
    t: &'a ExportTool,
    format: Format,
}

impl Serialize for ElementView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.t;
        match self.format {
            Format::Openai | Format::OpenaiStrict => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("type", "function")?;
                m.serialize_entry(
                    "function",
                    &FunctionView {
                        t,
                        strict: self.format == Format::OpenaiStrict,
                    },
                )?;
                m.end()
            }
            Format::Anthropic => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("name", &t.name)?;
                m.serialize_entry("description", &t.description)?;
                m.serialize_entry("input_schema", &t.input_schema)?;
                m.end()
            }
            Format::Gemini => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("name", &t.name)?;
                m.serialize_entry("description", &t.description)?;
                if t.input_schema["properties"]
                    .as_object()
                    .is_some_and(|p| !p.is_empty())
                {
                    m.serialize_entry("parameters", &GeminiView(&t.input_schema))?;
                }
                m.end()
            }
            Format::Mcp => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("name", &t.name)?;
                m.serialize_entry("title", &t.title)?;
                m.serialize_entry("description", &t.description)?;
                m.serialize_entry("inputSchema", &t.input_schema)?;
                m.serialize_entry("annotations", &t.annotations)?;
                m.end()
            }
            Format::Skill | Format::Prompt => s.serialize_unit(),
        }
    }
}

struct FunctionView<'a> {
    t: &'a ExportTool,
    strict: bool,
}

impl Serialize for FunctionView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("name", &self.t.name)?;
        m.serialize_entry("description", &self.t.description)?;
        if self.strict {
            m.serialize_entry(
                "parameters",
                &StrictView {
                    v: &self.t.input_schema,
                    nullable: false,
                },
            )?;
            m.serialize_entry("strict", &true)?;
        } else {
            m.serialize_entry("parameters", &self.t.input_schema)?;
        }
        m.end()
    }
}

/// `formats::openai_strict` as a view.
struct StrictView<'a> {
    v: &'a Value,
    nullable: bool,
}

struct NullableType<'a>(&'a Value);

impl Serialize for NullableType<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        match self.0 {
            Value::String(t) if t != "null" => {
                let mut q = s.serialize_seq(Some(2))?;
                q.serialize_element(t)?;
                q.serialize_element("null")?;
                q.end()
            }
            Value::Array(ts) if !ts.contains(&Value::from("null")) => {
                let mut q = s.serialize_seq(Some(ts.len() + 1))?;
                for t in ts {
                    q.serialize_element(t)?;
                }
                q.serialize_element("null")?;
                q.end()
            }
            other => other.serialize(s),
        }
    }
}

struct NullableEnum<'a>(&'a Value);

impl Serialize for NullableEnum<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        match self.0 {
            Value::Array(e) if !e.contains(&Value::Null) => {
                let mut q = s.serialize_seq(Some(e.len() + 1))?;
                for v in e {
                    q.serialize_element(v)?;
                }
                q.serialize_element(&Value::Null)?;
                q.end()
            }
            other => other.serialize(s),
        }
    }
}

impl StrictView<'_> {
    fn entry<M: SerializeMap>(&self, m: &mut M, k: &str, v: &Value) -> Result<(), M::Error> {
        match k {
            "type" if self.nullable => m.serialize_entry(k, &NullableType(v)),
            "enum" if self.nullable => m.serialize_entry(k, &NullableEnum(v)),
            "items" => m.serialize_entry(k, &StrictView { v, nullable: false }),
            _ => m.serialize_entry(k, v),
        }
    }
}

struct StrictProps<'a> {
    props: Option<&'a serde_json::Map<String, Value>>,
    required: Vec<&'a str>,
}

impl Serialize for StrictProps<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for (k, v) in self.props.into_iter().flatten() {
            m.serialize_entry(
                k,
                &StrictView {
                    v,
                    nullable: !self.required.contains(&k.as_str()),
                },
            )?;
        }
        m.end()
    }
}

struct Keys<'a>(Option<&'a serde_json::Map<String, Value>>);

impl Serialize for Keys<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.into_iter().flat_map(|p| p.keys()))
    }
}

impl Serialize for StrictView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(o) = self.v.as_object() else {
            return self.v.serialize(s);
        };
        let mut m = s.serialize_map(None)?;
        if o.get("type").and_then(Value::as_str) != Some("object") {
            for (k, v) in o.iter().filter(|(k, _)| *k != "default") {
                self.entry(&mut m, k, v)?;
            }
            return m.end();
        }
        let props = o.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = o
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for key in ["type", "description"] {
            if let Some(v) = o.get(key) {
                self.entry(&mut m, key, v)?;
            }
        }
        m.serialize_entry("properties", &StrictProps { props, required })?;
        m.serialize_entry("required", &Keys(props))?;
        m.serialize_entry("additionalProperties", &false)?;
        for (k, v) in o {
            if ![
                "type",
                "description",
                "properties",
                "required",
                "additionalProperties",
                "default",
            ]
            .contains(&k.as_str())
            {
                self.entry(&mut m, k, v)?;
            }
        }
        m.end()
    }
}

/// `formats::gemini` as a view.
struct GeminiView<'a>(&'a Value);

impl Serialize for GeminiView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(o) = self.0.as_object() else {
            return self.0.serialize(s);
        };
        let mut m = s.serialize_map(None)?;
        let ty = o.get("type").and_then(Value::as_str).unwrap_or("string");
        m.serialize_entry("type", &ty.to_ascii_uppercase())?;
        let description = o.get("description").and_then(Value::as_str);
        match o.get("enum") {
            Some(Value::Array(values)) if ty == "string" => {
                m.serialize_entry("enum", values)?;
                if let Some(d) = description {
                    m.serialize_entry("description", d)?;
                }
            }
            Some(Value::Array(values)) => {
                m.serialize_entry(
                    "description",
                    &super::formats::enum_note(description, values),
                )?;
            }
            _ => {
                if let Some(d) = description {
                    m.serialize_entry("description", d)?;
                }
            }
        }
        if let Some(items) = o.get("items") {
            m.serialize_entry("items", &GeminiView(items))?;
        }
        if let Some(Value::Object(props)) = o.get("properties") {
            m.serialize_entry("properties", &GeminiProps(props))?;
            if let Some(r) = o
                .get("required")
                .filter(|r| r.as_array().is_some_and(|a| !a.is_empty()))
            {
                m.serialize_entry("required", r)?;
            }
        }
        m.end()
    }
}

struct GeminiProps<'a>(&'a serde_json::Map<String, Value>);

impl Serialize for GeminiProps<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, &GeminiView(v))?;
        }
        m.end()
    }
}
