//! Checking ATIP documents: tool metadata, shims, `registry.json` and pattern files.
//!
//! Owns the pipeline for one document — decode (UTF-8, BOM), parse once (duplicate
//! keys and nesting depth watched while parsing), detect the kind, check the schema,
//! then the rules no schema can express — and the [`Diagnostic`] every check produces,
//! with its stable rule id (catalogue in [`rules::RULES`], described in
//! `spec/validate.md`). Line and column are computed from the source only when there
//! is something to report. Submodules: `parse` (bytes → value), `locate` (pointer →
//! line:column), `rules` (semantic checks), `run` (files, directories, stdin,
//! `--exec`), `render` (text, JSON and SARIF output).
//!
//! Must not print, exit, or decide exit codes; the CLI layer does that.

use serde::Serialize;
use serde_json::Value;
use std::ops::Range;

mod fast;
pub mod json;
pub mod layout;
pub mod locate;
pub mod parse;
pub mod render;
pub mod rules;
pub mod run;
pub mod view;

pub use run::{FileReport, Input, Options, Summary, check_inputs};

/// What a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A tool's `--agent` metadata.
    Metadata,
    /// A shim: metadata with `binary`, written by someone other than the tool's authors.
    Shim,
    /// `registry.json` (index format 2).
    Registry,
    /// A pattern file: a list of patterns, `{"patterns": [...]}`, or one pattern.
    Pattern,
}

impl Kind {
    /// The lowercase name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Metadata => "metadata",
            Kind::Shim => "shim",
            Kind::Registry => "registry",
            Kind::Pattern => "pattern",
        }
    }

    fn schema(self) -> crate::schema::SchemaName {
        use crate::schema::SchemaName;
        match self {
            Kind::Metadata => SchemaName::Metadata,
            Kind::Shim => SchemaName::Shim,
            Kind::Registry => SchemaName::Registry,
            Kind::Pattern => SchemaName::Pattern,
        }
    }

    /// Guesses the kind of a parsed document: an array, or an object with `steps` or
    /// `patterns` but no `atip`, is a pattern file; an object with a `tools` object and
    /// `"version": "2"` is a registry; an object with `binary` is a shim; anything else
    /// is metadata (and the metadata schema says what is missing).
    pub fn detect<'a, J: json::Json<'a>>(value: J) -> Kind {
        if !value.is_object() {
            return if value.is_array() {
                Kind::Pattern
            } else {
                Kind::Metadata
            };
        }
        let obj = value;
        if obj.contains_key("atip") {
            return if obj.contains_key("binary") {
                Kind::Shim
            } else {
                Kind::Metadata
            };
        }
        if obj.get("tools").is_some_and(J::is_object)
            && obj.get("version").and_then(J::as_str) == Some("2")
        {
            return Kind::Registry;
        }
        if obj.contains_key("steps") || obj.contains_key("patterns") {
            return Kind::Pattern;
        }
        if obj.contains_key("binary") {
            return Kind::Shim;
        }
        Kind::Metadata
    }
}

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The document is invalid.
    Error,
    /// Worth fixing; the document stays valid (unless `--deny-warnings`).
    Warning,
}

impl Severity {
    /// `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// One finding about one document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// Stable rule id, e.g. `duplicate-key` (see `spec/validate.md`).
    pub rule: String,
    /// JSON pointer (RFC 6901) to the offending value; `""` is the whole document.
    pub pointer: String,
    /// 1-based line in the source, when known.
    pub line: Option<usize>,
    /// 1-based column in the source (in characters), when known.
    pub column: Option<usize>,
    /// What is wrong, naming the value.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
    /// Byte range in the source that the diagnostic points at, when known.
    #[serde(skip)]
    pub span: Option<Range<usize>>,
}

impl Diagnostic {
    /// A diagnostic with the rule's catalogue severity and hint.
    pub fn new(rule: &str, pointer: impl Into<String>, message: impl Into<String>) -> Self {
        let info = rules::rule_info(rule);
        debug_assert!(info.is_some(), "rule {rule} is not in rules::RULES");
        Diagnostic {
            severity: info.map_or(Severity::Error, |i| i.severity),
            rule: rule.to_string(),
            pointer: pointer.into(),
            line: None,
            column: None,
            message: message.into(),
            hint: info.and_then(|i| (!i.hint.is_empty()).then(|| i.hint.to_string())),
            span: None,
        }
    }

    /// Replaces the hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Sets a source position directly (parse errors, where no pointer applies).
    pub fn at(mut self, pos: locate::Position) -> Self {
        self.line = Some(pos.line);
        self.column = Some(pos.column);
        self.span = Some(pos.offset..pos.offset + pos.len.max(1));
        self
    }
}

/// The result of checking one document.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The kind, forced or detected; `None` when the bytes are not JSON.
    pub kind: Option<Kind>,
    /// The parsed document, when it parsed.
    pub value: Option<Value>,
    /// Every finding, in document order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Checked {
    /// Whether no diagnostic is an error (warnings allowed).
    pub fn is_valid(&self) -> bool {
        !self
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// Number of diagnostics of a severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    }
}

/// Checks one document.
///
/// No size cap applies here: callers bound what they read (`run` refuses inputs over
/// `--max-size` before reading them). `kind` forces a kind (otherwise [`Kind::detect`]); `file_name` (the last path
/// component) lets the content-addressed shim rule compare `binary.hash` with the name.
pub fn check_bytes(bytes: &[u8], kind: Option<Kind>, file_name: Option<&str>) -> Checked {
    check_with(bytes, kind, file_name, true)
}

/// [`check_bytes`], dropping the parsed value when `keep_value` is false (the CLI does
/// not need it and should not hold it).
///
/// Without `keep_value`, a clean document is recognised on the light [`view`] first:
/// when it parses cleanly, the schema certainly accepts it (`fast`) and the rules find
/// nothing, the answer is "valid, no diagnostics" without building a `Value`. Anything
/// else takes the full path, which alone produces diagnostics.
pub fn check_with(
    bytes: &[u8],
    kind: Option<Kind>,
    file_name: Option<&str>,
    keep_value: bool,
) -> Checked {
    if !keep_value && let Some(clean) = check_clean(bytes, kind, file_name) {
        return clean;
    }
    check_full(bytes, kind, file_name, keep_value, true)
}

/// The fast path: `Some` only for a document with no diagnostic at all.
fn check_clean(bytes: &[u8], kind: Option<Kind>, file_name: Option<&str>) -> Option<Checked> {
    let doc = view::Doc::parse(bytes)?;
    let root = doc.root();
    let kind = kind.unwrap_or_else(|| Kind::detect(root));
    if !fast::certainly_valid(kind.schema(), root) {
        return None;
    }
    let mut diagnostics = Vec::new();
    rules::check(kind, root, file_name, &mut diagnostics);
    rules::as_written(kind, root, file_name, &mut diagnostics);
    diagnostics.is_empty().then_some(Checked {
        kind: Some(kind),
        value: None,
        diagnostics,
    })
}

/// Whether the fast check is sure the schema accepts `bytes`: then the schema validator
/// (boon) is not asked, for it never rejects what the fast check calls certainly valid
/// (the property test in `fast/agree.rs`). A document whose findings are only the rules'
/// (a warning) thus never builds the validator, most of the time and code of a first
/// full check (a cold scan whose answers have warnings did, for three legacy versions).
fn certainly_valid(bytes: &[u8], kind: Kind) -> bool {
    view::Doc::parse(bytes).is_some_and(|doc| fast::certainly_valid(kind.schema(), doc.root()))
}

/// Parse into a `Value`, the schema (boon; unless `trust_fast` and the fast check is sure),
/// rules, positions: every diagnostic comes from here. Tests pass `trust_fast: false` for
/// the reference answer, the schema validator's alone.
fn check_full(
    bytes: &[u8],
    kind: Option<Kind>,
    file_name: Option<&str>,
    keep_value: bool,
    trust_fast: bool,
) -> Checked {
    let mut parsed = parse::parse(bytes);
    let mut diagnostics = std::mem::take(&mut parsed.diagnostics);
    let Some(value) = parsed.value.take() else {
        return Checked {
            kind,
            value: None,
            diagnostics,
        };
    };
    let kind = kind.unwrap_or_else(|| Kind::detect(&value));
    if !(trust_fast && certainly_valid(bytes, kind)) {
        diagnostics.extend(crate::schema::with_stack_for(&value, || {
            let Some(error) = crate::schema::validator(kind.schema()).errors(&value) else {
                return Vec::new();
            };
            crate::schema::leaves(&error)
                .into_iter()
                .flat_map(|leaf| rules::from_schema_error(&value, leaf))
                .collect()
        }));
    }
    rules::check(kind, &value, file_name, &mut diagnostics);
    rules::as_written(kind, &value, file_name, &mut diagnostics);
    if parsed.duplicates > 0 {
        diagnostics.extend(locate::duplicate_keys(parsed.text(bytes)));
    }
    if !diagnostics.is_empty() {
        locate::resolve(parsed.text(bytes), parsed.text_offset, &mut diagnostics);
        diagnostics.sort_by_key(|d| (d.line.is_none(), d.line, d.column));
        // allOf branches can report the same failure twice.
        diagnostics
            .dedup_by(|a, b| a.rule == b.rule && a.pointer == b.pointer && a.message == b.message);
    }
    Checked {
        kind: Some(kind),
        value: keep_value.then_some(value),
        diagnostics,
    }
}

/// Property-test cases: `default` (sized so a debug build runs each property in a few
/// seconds), or `ATIP_PROPTEST_CASES` for a deeper run.
#[cfg(test)]
pub(crate) fn proptest_cases(default: u32) -> u32 {
    std::env::var("ATIP_PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// Parses only (size, UTF-8, BOM, JSON syntax, duplicate keys, depth): the floor any
/// validation sits on, measured by the benchmark through `atip validate --parse-only`.
///
/// A document the light [`view`] parses cleanly has no parse diagnostic; anything else
/// is parsed again in full for its diagnostics.
pub fn parse_only(bytes: &[u8]) -> Checked {
    if view::Doc::parse(bytes).is_some() {
        return Checked {
            kind: None,
            value: None,
            diagnostics: Vec::new(),
        };
    }
    let mut parsed = parse::parse(bytes);
    let mut diagnostics = std::mem::take(&mut parsed.diagnostics);
    if parsed.duplicates > 0 {
        diagnostics.extend(locate::duplicate_keys(parsed.text(bytes)));
        locate::resolve(parsed.text(bytes), parsed.text_offset, &mut diagnostics);
    }
    Checked {
        kind: None,
        value: None,
        diagnostics,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HASH: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    /// Valid documents of every kind, using every keyword the fast schema check decides.
    fn bases() -> Vec<Value> {
        let option = |name: &str, flags: &[&str], ty: &str| json!({"name": name, "flags": flags, "type": ty, "description": "d"});
        let metadata = json!({
            "atip": {"version": "0.6", "features": ["partial-discovery", "trust-v1", "x-own"]},
            "name": "tool",
            "version": "1.2.3",
            "description": "A tool",
            "homepage": "https://example.com/tool",
            "partial": true,
            "filter": {"commands": ["a"], "depth": 2},
            "totalCommands": 3,
            "trust": {
                "source": "vendor",
                "verified": false,
                "provenance": {"url": "https://example.com/p", "slsaLevel": 3, "x-k": 1},
                "shimIntegrity": {"lastVerified": "2026-01-02T03:04:05Z"}
            },
            "globalOptions": [option("verbose", &["-v", "--verbose"], "boolean")],
            "authentication": {"required": false, "methods": [{"type": "token", "envVar": "GH_TOKEN"}]},
            "effects": {"network": true, "interactive": {"stdin": "none"}, "cost": {"estimate": "free"}},
            "commands": {
                "repo": {
                    "description": "Repositories",
                    "commands": {
                        "clone": {
                            "description": "Clone",
                            "arguments": [
                                {"name": "repo", "type": "string", "description": "r"},
                                {"name": "dir", "type": "directory", "description": "d", "required": false}
                            ],
                            "options": [
                                {"name": "depth", "flags": ["--depth"], "type": "integer",
                                 "description": "d", "default": 1},
                                {"name": "mode", "flags": ["-m"], "type": "enum",
                                 "enum": ["fast", "slow"], "default": "fast", "description": "m",
                                 "envVar": "TOOL_MODE"},
                                {"name": "tags", "flags": ["--tag"], "type": "string",
                                 "description": "t", "variadic": true, "default": ["a"]}
                            ],
                            "examples": ["tool repo clone x", {"command": "tool repo clone y"}],
                            "effects": {"filesystem": {"write": true, "paths": ["."]}},
                            "x-extra": {"anything": [1, 2.5]}
                        }
                    }
                },
                "ratio": {"description": "R", "options": [
                    {"name": "r", "flags": ["-r"], "type": "number", "description": "r",
                     "default": 0.5, "_note": "n"}
                ]}
            },
            "patterns": [{
                "name": "p", "steps": [{"command": "tool repo clone {repo}"}],
                "variables": {"repo": {"type": "string", "required": true}},
                "tags": ["t"], "executable": false
            }],
            "x-vendor": {"k": "v"}
        });
        let mut shim = metadata.clone();
        shim["binary"] = json!({"name": "tool", "version": "1.2.3",
            "hash": format!("sha256:{HASH}"), "platform": "linux-x86_64"});
        let legacy = json!({"atip": "0.2", "name": "old", "version": "1", "description": "d",
            "commands": {"run": {"description": "r", "options": [option("x", &["-x"], "string")]}}});
        let pattern = json!({"patterns": [{"name": "p", "steps": [{"command": "ls"}]}]});
        let registry = json!({"version": "2", "tools": {}});
        vec![metadata, shim, legacy, pattern, registry]
    }

    fn pointers(v: &Value, here: String, out: &mut Vec<String>) {
        out.push(here.clone());
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    pointers(x, format!("{here}/{}", locate::escape_token(k)), out);
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    pointers(x, format!("{here}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    fn replacement(i: usize) -> Value {
        let all = [
            json!(null),
            json!(true),
            json!(0),
            json!(-1),
            json!(1.5),
            json!(3.0),
            json!(1e3),
            json!(18446744073709551615u64),
            json!(""),
            json!("x"),
            json!("0.7"),
            json!("0.3"),
            json!("-x"),
            json!("--bad flag"),
            json!("--a=b"),
            // Edges of the flag, version, env-var and hash patterns (matched without
            // the regex engine on the fast path).
            json!("-"),
            json!("---"),
            json!("--a-"),
            json!("-\u{b}"),
            json!("0.1234"),
            json!("GH-TOKEN"),
            json!("_A1"),
            json!(format!("sha256:{}", HASH.to_uppercase())),
            json!("https://example.com/a b"),
            json!("ftp://example.com"),
            json!("2026-02-30T00:00:00Z"),
            json!("2026-01-01T00:00:00+01:00"),
            json!("é"),
            json!("string"),
            json!("enum"),
            json!("filtered"),
            json!("trust-integrity"),
            json!(format!("sha256:{HASH}")),
            json!("tool {undeclared}"),
            json!("two\nlines"),
            json!("a".repeat(201)),
            json!([]),
            json!({}),
            json!(["a", "a"]),
            json!({"x-a": 1}),
            json!({"description": "d"}),
            json!({"name": "v", "flags": ["-v"], "type": "boolean", "description": "d"}),
        ];
        all[i % all.len()].clone()
    }

    fn key(i: usize) -> &'static str {
        const KEYS: &[&str] = &[
            "x-vendor",
            "_internal",
            "unknown",
            "description",
            "name",
            "default",
            "enum",
            "flags",
            "type",
            "commands",
            "atip",
            "binary",
            "features",
            "interactive",
            "required",
            "variadic",
            "é",
            "version",
            "steps",
            "patterns",
            "tools",
        ];
        KEYS[i % KEYS.len()]
    }

    /// Applies one edit at the `at`-th value (in document order) of `doc`.
    fn mutate(doc: &mut Value, at: usize, op: u8, a: usize, b: usize) {
        let mut all = Vec::new();
        pointers(doc, String::new(), &mut all);
        let ptr = all[at % all.len()].clone();
        let (parent, last) = match ptr.rsplit_once('/') {
            Some((p, l)) => (p.to_string(), l.replace("~1", "/").replace("~0", "~")),
            None => (String::new(), String::new()),
        };
        match op {
            0 => {
                if let Some(v) = doc.pointer_mut(&ptr) {
                    *v = replacement(a);
                }
            }
            1 => match doc.pointer_mut(&parent) {
                Some(Value::Object(m)) => {
                    m.shift_remove(&last);
                }
                Some(Value::Array(items)) => {
                    if let Ok(i) = last.parse::<usize>()
                        && i < items.len()
                    {
                        items.remove(i);
                    }
                }
                _ => {}
            },
            _ => match doc.pointer_mut(&ptr) {
                Some(Value::Object(m)) => {
                    m.insert(key(a).to_string(), replacement(b));
                }
                Some(Value::Array(items)) => items.push(replacement(b)),
                _ => {}
            },
        }
    }

    fn same_answer(bytes: &[u8], kind: Option<Kind>, file_name: Option<&str>) -> bool {
        let fast = check_with(bytes, kind, file_name, false);
        let full = check_full(bytes, kind, file_name, false, false);
        let trusting = check_full(bytes, kind, file_name, false, true);
        assert_eq!(full.diagnostics, trusting.diagnostics);
        let clean = check_clean(bytes, kind, file_name);
        assert!(
            clean.is_none() || full.diagnostics.is_empty(),
            "fast path said clean, full path: {:?}\n{}",
            full.diagnostics,
            String::from_utf8_lossy(bytes)
        );
        assert_eq!(fast.kind, full.kind);
        assert_eq!(
            fast.diagnostics,
            full.diagnostics,
            "{}",
            String::from_utf8_lossy(bytes)
        );
        clean.is_some()
    }

    #[test]
    fn valid_documents_take_the_fast_path() {
        // The registry schema uses keywords the fast check leaves to jsonschema (const,
        // propertyNames); the base registry document is not even valid.
        for doc in bases().into_iter().take(4) {
            let text = doc.to_string();
            assert!(same_answer(text.as_bytes(), None, None), "{text}");
            let pretty = serde_json::to_string_pretty(&doc).unwrap_or_default();
            assert!(same_answer(pretty.as_bytes(), None, None), "{pretty}");
        }
        let registry = bases().remove(4).to_string();
        assert!(!same_answer(registry.as_bytes(), None, None));
        // serde_json holds -0 as a float: not an integer default.
        let text = bases()[0]
            .to_string()
            .replace(r#""default":1"#, r#""default":-0"#);
        assert!(text.contains("-0"));
        assert!(!same_answer(text.as_bytes(), None, None));
        // Not sure: a float where an integer is asked, a pattern over non-ASCII text.
        let mut doc = bases().remove(0);
        doc["totalCommands"] = json!(3.0);
        assert!(!same_answer(doc.to_string().as_bytes(), None, None));
        let mut doc = bases().remove(0);
        doc["authentication"]["methods"][0]["envVar"] = json!("É");
        assert!(!same_answer(doc.to_string().as_bytes(), None, None));
    }

    #[test]
    fn parse_only_says_what_the_full_parse_says() {
        for text in [
            &b""[..],
            b"\xEF\xBB\xBF{}",
            b"{\"a\": \"\xff\"}",
            b"{} x",
            b"{\"a\": [1, 2",
            br#"{"a": 1, "b": {"c": 1, "c": 2}, "a": 3}"#,
            br#"{"a": "\ud800"}"#,
            b"[1e400]",
            br#"{"ok": [1, "two", {"three": null}]}"#,
        ] {
            let mut parsed = parse::parse(text);
            let mut expected = std::mem::take(&mut parsed.diagnostics);
            if parsed.duplicates > 0 {
                expected.extend(locate::duplicate_keys(parsed.text(text)));
                locate::resolve(parsed.text(text), parsed.text_offset, &mut expected);
            }
            assert_eq!(parse_only(text).diagnostics, expected);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(proptest_cases(64)))]
        /// Whatever the edits to valid documents (wrong types, missing or extra keys,
        /// x- keys, bad enum values, patterns, formats, bounds), `check_with` answers as
        /// the full path does, and the fast path never calls a document with any
        /// diagnostic clean.
        #[test]
        fn fast_path_never_differs_from_the_full_path(
            base in 0usize..5,
            edits in proptest::collection::vec((0usize..400, 0u8..3, 0usize..64, 0usize..64), 1..4),
            pretty: bool,
            forced in proptest::option::of(proptest::sample::select(vec![
                Kind::Metadata, Kind::Shim, Kind::Registry, Kind::Pattern,
            ])),
            named: bool,
        ) {
            let mut doc = bases().swap_remove(base);
            for (at, op, a, b) in edits {
                mutate(&mut doc, at, op, a, b);
            }
            let text = if pretty {
                serde_json::to_string_pretty(&doc).unwrap_or_default()
            } else {
                doc.to_string()
            };
            let name = format!("{HASH}.json");
            same_answer(text.as_bytes(), forced, named.then_some(name.as_str()));
        }
    }
}
