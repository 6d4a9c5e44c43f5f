//! YAML MCP configs (`config.yaml` / `config.yml` of the mcp-cli document) read into the
//! same `serde_json::Value` a JSON config gives, so one loader checks both.
//!
//! Built from yaml-rust2's event stream rather than its document tree: an alias (`*a`)
//! is refused instead of copied, so a small file cannot expand into gigabytes (a project
//! file is parsed before it is trusted, to name its servers); nesting is bounded; a
//! mapping key must be a string and appear once. Plain scalars follow YAML 1.2's core
//! schema (`true`, `null`, `42`, `1.5`); quoted ones, and those tagged `!!str`, stay
//! strings. Errors name the line and column.

use serde_json::{Map, Number, Value};
use yaml_rust2::Yaml;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// Deepest nesting of mappings and sequences accepted.
const MAX_DEPTH: usize = 64;

/// Why a YAML config cannot be read; every message names the place.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    /// Not YAML.
    #[error("not valid YAML: {} at line {}, column {}", .0.info(), .0.marker().line(), .0.marker().col() + 1)]
    Syntax(#[source] yaml_rust2::ScanError),
    /// A key given twice in one mapping.
    #[error("duplicate key {key:?} at {at}")]
    DuplicateKey {
        /// The key.
        key: String,
        /// Where its second value is.
        at: Place,
    },
    /// A mapping or list used as a key.
    #[error("a mapping key must be a plain name, not a mapping or list, at {0}")]
    ComplexKey(Place),
    /// Nested past the depth limit (64 levels).
    #[error("nested deeper than {MAX_DEPTH} levels at {0}")]
    TooDeep(Place),
    /// An alias (`*name`).
    #[error("YAML aliases (*name) are not accepted in an MCP config, at {0}")]
    Alias(Place),
    /// More than one document.
    #[error("holds {0} YAML documents (separated by ---); a config is one")]
    Documents(usize),
}

/// A line and column (1-based) in the YAML text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// Line.
    pub line: usize,
    /// Column.
    pub column: usize,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// Parses one YAML document into JSON values.
pub fn parse(text: &str) -> Result<Value, YamlError> {
    let mut b = Builder::default();
    let mut parser = Parser::new_from_str(text);
    parser.load(&mut b, true).map_err(YamlError::Syntax)?;
    if let Some(e) = b.error {
        return Err(e);
    }
    match b.docs.len() {
        0 => Ok(Value::Null),
        1 => Ok(b.docs.pop().unwrap_or(Value::Null)),
        n => Err(YamlError::Documents(n)),
    }
}

/// An open mapping (with the key waiting for its value) or sequence.
enum Open {
    Map(Map<String, Value>, Option<String>),
    Seq(Vec<Value>),
}

#[derive(Default)]
struct Builder {
    stack: Vec<Open>,
    docs: Vec<Value>,
    error: Option<YamlError>,
}

fn at(mark: &Marker) -> Place {
    Place {
        line: mark.line(),
        column: mark.col() + 1,
    }
}

fn is_str_tag(tag: &Option<Tag>) -> bool {
    tag.as_ref().is_some_and(|t| {
        t.suffix == "str" && (t.handle == "tag:yaml.org,2002:" || t.handle == "!!")
    })
}

/// A scalar as YAML 1.2's core schema reads it.
fn scalar(text: String, style: TScalarStyle, tag: &Option<Tag>) -> Value {
    if style != TScalarStyle::Plain || is_str_tag(tag) {
        return Value::String(text);
    }
    match Yaml::from_str(&text) {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::Number(i.into()),
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            // .inf and .nan have no JSON form: kept as text.
            .unwrap_or(Value::String(text)),
        _ => Value::String(text),
    }
}

impl Builder {
    fn fail(&mut self, e: YamlError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Puts a finished value into its parent (or ends a document).
    fn value(&mut self, v: Value, mark: &Marker) {
        match self.stack.last_mut() {
            None => self.docs.push(v),
            Some(Open::Seq(items)) => items.push(v),
            Some(Open::Map(m, key)) => match key.take() {
                Some(k) => {
                    if m.contains_key(&k) {
                        self.fail(YamlError::DuplicateKey {
                            key: k,
                            at: at(mark),
                        });
                    } else {
                        m.insert(k, v);
                    }
                }
                None => match v {
                    Value::String(k) => *key = Some(k),
                    // Keys are names: `1: x` or `true: x` is read as the string.
                    Value::Number(_) | Value::Bool(_) | Value::Null => *key = Some(v.to_string()),
                    _ => self.fail(YamlError::ComplexKey(at(mark))),
                },
            },
        }
    }

    fn open(&mut self, o: Open, mark: &Marker) {
        if self.stack.len() >= MAX_DEPTH {
            self.fail(YamlError::TooDeep(at(mark)));
        }
        self.stack.push(o);
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        match ev {
            Event::Alias(_) => self.fail(YamlError::Alias(at(&mark))),
            Event::Scalar(text, style, _, tag) => {
                // A key is taken as written: `on: x` names `on`, `01: x` names `01`.
                let key_slot = matches!(self.stack.last(), Some(Open::Map(_, None)));
                let v = if key_slot {
                    Value::String(text)
                } else {
                    scalar(text, style, &tag)
                };
                self.value(v, &mark);
            }
            Event::SequenceStart(..) => self.open(Open::Seq(Vec::new()), &mark),
            Event::MappingStart(..) => self.open(Open::Map(Map::new(), None), &mark),
            Event::SequenceEnd | Event::MappingEnd => {
                let v = match self.stack.pop() {
                    Some(Open::Seq(items)) => Value::Array(items),
                    Some(Open::Map(m, _)) => Value::Object(m),
                    None => return,
                };
                self.value(v, &mark);
            }
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_documents_example_reads_as_its_json() {
        let y = r#"
defaultServer: archi
servers:
  archi:
    transport: http
    url: http://localhost:8080/mcp
    headers:
      Authorization: "Bearer ${MCP_ARCHI_TOKEN}"
    timeoutMs: 60000
  github:
    transport: stdio
    command: node
    args: ["./servers/github/build/index.js", '--x', 5]
    cwd: ${PWD}
cache: {enabled: true, ttlSeconds: 300}
toolSearch:
  defaultLimit: 5
  ratio: 1.5
  nothing: ~
  quoted: "true"
"#;
        assert_eq!(
            parse(y).unwrap(),
            json!({"defaultServer": "archi", "servers": {
                "archi": {"transport": "http", "url": "http://localhost:8080/mcp",
                          "headers": {"Authorization": "Bearer ${MCP_ARCHI_TOKEN}"}, "timeoutMs": 60000},
                "github": {"transport": "stdio", "command": "node",
                           "args": ["./servers/github/build/index.js", "--x", 5], "cwd": "${PWD}"}},
              "cache": {"enabled": true, "ttlSeconds": 300},
              "toolSearch": {"defaultLimit": 5, "ratio": 1.5, "nothing": null, "quoted": "true"}})
        );
    }

    #[test]
    fn aliases_depth_duplicates_and_syntax_are_refused_with_the_place() {
        let bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n";
        let e = parse(bomb).unwrap_err();
        assert!(
            matches!(e, YamlError::Alias(Place { line: 2, .. })),
            "{e:?}"
        );
        assert!(e.to_string().contains("aliases") && e.to_string().contains("line 2"));
        let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        let e = parse(&deep).unwrap_err().to_string();
        assert!(e.contains("nested deeper"), "{e}");
        let e = parse("a: 1\na: 2\n").unwrap_err().to_string();
        assert!(e.contains("duplicate key \"a\""), "{e}");
        let e = parse("servers:\n  x: [1,\n").unwrap_err();
        assert!(matches!(e, YamlError::Syntax(_)), "{e:?}");
        let e = e.to_string();
        assert!(e.starts_with("not valid YAML") && e.contains("line"), "{e}");
        assert!(matches!(
            parse("a: 1\n---\nb: 2\n"),
            Err(YamlError::Documents(2))
        ));
        assert_eq!(parse("").unwrap(), Value::Null);
        assert_eq!(parse("x: !!str 12\n").unwrap(), json!({"x": "12"}));
    }
}
