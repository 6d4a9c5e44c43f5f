//! The fast schema check against the reference (`jsonschema`), on generated documents.
//!
//! Documents are built from the schemas themselves (a small generator that reads the
//! schema JSON: types, properties, required, enums, patterns, formats, bounds, `$ref`,
//! allOf, anyOf, if/then/else), then mutated: wrong types, missing required members,
//! extra members, near-miss enum and pattern strings, deep nesting, non-ASCII text and
//! number spellings serde_json would never write (`1e3`, `-0`, `3.0`). Every choice the
//! generator makes comes from a byte string proptest shrinks, so a failure shrinks to a
//! small document.
//!
//! For every document: boon (the validator the binary ships) accepts it exactly when
//! jsonschema does; when the fast check says "certainly valid", jsonschema accepts it;
//! for an unmutated generated document (which jsonschema accepts) the fast check is sure,
//! so the speed it exists for is not silently lost; and `check_with` (fast path first)
//! reports exactly what the full path reports. The fast check never reports an invalid
//! document or a location (it only answers "certainly valid" or "not sure"), so there is
//! no location of its own to compare.
//!
//! Cases: 96 by default (a few seconds in a debug build); `ATIP_PROPTEST_CASES=N` runs
//! N (e.g. 20000 for a deep run).

use super::certainly_valid;
use crate::schema::{SchemaName, reference, validator};
use crate::validate::{Kind, check_full, check_with, parse, view};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Reads schema choices from a byte string; an exhausted string answers 0 (the smallest
/// choice), so shrinking the bytes shrinks the document.
struct Choices<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Choices<'_> {
    fn pick(&mut self, n: usize) -> usize {
        let b = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        if n == 0 { 0 } else { usize::from(b) % n }
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.pick(100) >= 100 - percent
    }
}

const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// Strings tried against a `pattern` (or `propertyNames`); the first few that match are
/// the candidates. Covers every pattern of atip's schemas.
fn string_pool() -> Vec<String> {
    let mut pool: Vec<String> = [
        "0.6",
        "0.1",
        "0.12",
        "0.999",
        "tool",
        "my_tool-2",
        "gh",
        "linux-x86_64",
        "darwin-arm64",
        "-v",
        "--verbose",
        "--depth",
        "-x",
        "GH_TOKEN",
        "_A1",
        "/usr/bin/tool",
        "sha1:abc123",
        "x",
        "run",
        "d",
        "a description",
        "1.2.3",
        "x-vendor",
        "_note",
        "a.b+c",
    ]
    .map(String::from)
    .to_vec();
    pool.push(format!("sha256:{HEX}"));
    pool.push(format!("tools/{HEX}.json"));
    pool
}

/// Keys tried for `patternProperties` and `additionalProperties`.
const KEY_POOL: &[&str] = &[
    "x-vendor", "_note", "run", "build", "a1", "my-tool", "tool.v2",
];

/// Builds documents that a schema accepts (mostly: a branch the generator cannot steer,
/// such as an `else` that the document then fails, gives an invalid one, which is tested
/// all the same).
struct Gen<'c, 'b> {
    choices: &'c mut Choices<'b>,
    /// The schema being generated from (for `#/...` refs) and the metadata schema
    /// (which the others ref by absolute id).
    root: &'c Value,
    metadata: &'c Value,
    pool: Vec<String>,
}

impl Gen<'_, '_> {
    fn resolve(&self, reference: &str) -> Value {
        let (doc, fragment) = match reference.split_once('#') {
            Some(("", f)) => (None, f),
            Some((_, f)) => (Some(self.metadata), f),
            None => (Some(self.metadata), ""),
        };
        let found = match doc {
            Some(d) => d.pointer(fragment),
            None => self
                .root
                .pointer(fragment)
                .or_else(|| self.metadata.pointer(fragment)),
        };
        found.cloned().unwrap_or(Value::Bool(true))
    }

    /// The schema with its top `$ref` joined in (nothing else decided).
    fn refs_joined(&self, schema: &Value) -> Map<String, Value> {
        let Value::Object(s) = schema else {
            return Map::new();
        };
        let mut out = s.clone();
        if let Some(Value::String(r)) = out.remove("$ref") {
            let target = self.resolve(&r);
            out = merge(self.refs_joined(&target), out);
        }
        out
    }

    /// The schema with `$ref`, `allOf`, `anyOf` and `if` folded into one object of
    /// keywords.
    fn flatten(&mut self, schema: &Value) -> Map<String, Value> {
        let Value::Object(s) = schema else {
            return Map::new();
        };
        let mut out = s.clone();
        if let Some(Value::String(r)) = out.remove("$ref") {
            let target = self.resolve(&r);
            let flat = self.flatten(&target);
            out = merge(flat, out);
        }
        if let Some(Value::Array(all)) = out.remove("allOf") {
            // Branches join before any `if` is decided, so the `if` sees every
            // `required` (a shim's `binary` decides the metadata schema's `if`).
            for branch in all {
                let joined = self.refs_joined(&branch);
                out = merge(out, joined);
            }
            return self.flatten(&Value::Object(out));
        }
        if let Some(Value::Array(any)) = out.remove("anyOf") {
            let pick = self.choices.pick(any.len());
            let flat = self.flatten(&any[pick]);
            out = merge(out, flat);
        }
        if let Some(condition) = out.remove("if") {
            let then = out.remove("then");
            let otherwise = out.remove("else");
            // An `if` of `required` holds when those members are generated; making them
            // required takes the `then` branch for sure.
            let take_then = match condition.get("required").and_then(Value::as_array) {
                Some(names) if names.iter().all(|n| required_of(&out).contains(n)) => true,
                Some(_) => self.choices.chance(30),
                None => self.choices.chance(50),
            };
            let (mut branch, extra) = if take_then {
                (then, Some(condition))
            } else {
                (otherwise, None)
            };
            if let Some(extra) = extra {
                let flat = self.flatten(&extra);
                out = merge(out, flat);
            }
            if let Some(b) = branch.take() {
                let flat = self.flatten(&b);
                out = merge(out, flat);
            }
        }
        out
    }

    fn value(&mut self, schema: &Value, depth: usize) -> Value {
        if schema == &Value::Bool(true) {
            return json!("v");
        }
        let s = self.flatten(schema);
        if let Some(c) = s.get("const") {
            return c.clone();
        }
        if let Some(Value::Array(options)) = s.get("enum") {
            return options[self.choices.pick(options.len())].clone();
        }
        let types: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if s.contains_key("properties") || s.contains_key("required") => vec!["object"],
            _ if s.contains_key("items") => vec!["array"],
            _ => vec!["string"],
        };
        match types[self.choices.pick(types.len())] {
            "object" => self.object(&s, depth),
            "array" => self.array(&s, depth),
            "integer" => self.integer(&s),
            "number" => [json!(0.5), json!(2), json!(1.25)][self.choices.pick(3)].clone(),
            "boolean" => Value::Bool(self.choices.chance(50)),
            "null" => Value::Null,
            _ => self.string(&s),
        }
    }

    fn integer(&mut self, s: &Map<String, Value>) -> Value {
        let min = s.get("minimum").and_then(Value::as_i64);
        let max = s.get("maximum").and_then(Value::as_i64);
        let fits: Vec<i64> = [0i64, 1, 3, 42, 1000]
            .into_iter()
            .chain(min)
            .chain(max)
            .filter(|n| min.is_none_or(|m| *n >= m) && max.is_none_or(|m| *n <= m))
            .collect();
        json!(fits[self.choices.pick(fits.len())])
    }

    fn string(&mut self, s: &Map<String, Value>) -> Value {
        match s.get("format").and_then(Value::as_str) {
            Some("uri") => return json!("https://example.com/tool"),
            Some("date-time") => return json!("2026-01-02T03:04:05Z"),
            _ => {}
        }
        let fits = self.fitting(s);
        match fits.is_empty() {
            true => json!("x"),
            false => json!(fits[self.choices.pick(fits.len())]),
        }
    }

    /// Pool strings that meet a schema's `pattern`, `minLength` and `maxLength`.
    fn fitting(&self, s: &Map<String, Value>) -> Vec<String> {
        let pattern = s
            .get("pattern")
            .and_then(Value::as_str)
            .and_then(|p| regex::Regex::new(p).ok());
        let min = s.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
        let max = s
            .get("maxLength")
            .and_then(Value::as_u64)
            .map_or(usize::MAX, |m| m as usize);
        self.pool
            .iter()
            .filter(|p| pattern.as_ref().is_none_or(|r| r.is_match(p)))
            .filter(|p| (min..=max).contains(&p.chars().count()))
            .cloned()
            .collect()
    }

    fn object(&mut self, s: &Map<String, Value>, depth: usize) -> Value {
        let empty = Map::new();
        let properties = s
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required: Vec<&str> = s
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut out = Map::new();
        for (name, sub) in properties {
            let wanted =
                required.contains(&name.as_str()) || (depth < 4 && self.choices.chance(40));
            if wanted {
                out.insert(name.clone(), self.value(sub, depth + 1));
            }
        }
        for name in &required {
            if !out.contains_key(*name) {
                out.insert((*name).to_string(), json!("x"));
            }
        }
        let extra = if depth < 4 { self.choices.pick(3) } else { 0 };
        for _ in 0..extra {
            let key = KEY_POOL[self.choices.pick(KEY_POOL.len())];
            if out.contains_key(key) || properties.contains_key(key) {
                continue;
            }
            if let Some(names) = s.get("propertyNames").and_then(Value::as_object)
                && !self.fitting(names).iter().any(|k| k == key)
                && !matches_pattern(names, key)
            {
                continue;
            }
            let matched = s
                .get("patternProperties")
                .and_then(Value::as_object)
                .and_then(|pp| {
                    pp.iter()
                        .find(|(p, _)| regex::Regex::new(p).is_ok_and(|r| r.is_match(key)))
                })
                .map(|(_, sub)| sub.clone());
            let sub = match (matched, s.get("additionalProperties")) {
                (Some(sub), _) => sub,
                (None, Some(Value::Bool(false))) => continue,
                (None, Some(sub)) => sub.clone(),
                (None, None) => Value::Bool(true),
            };
            out.insert(key.to_string(), self.value(&sub, depth + 1));
        }
        Value::Object(out)
    }

    fn array(&mut self, s: &Map<String, Value>, depth: usize) -> Value {
        let min = s.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
        let more = if depth < 4 { self.choices.pick(3) } else { 0 };
        let items = s.get("items").cloned().unwrap_or(Value::Bool(true));
        Value::Array(
            (0..min + more)
                .map(|_| self.value(&items, depth + 1))
                .collect(),
        )
    }
}

fn required_of(s: &Map<String, Value>) -> Vec<Value> {
    s.get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn matches_pattern(names: &Map<String, Value>, key: &str) -> bool {
    let pattern_ok = names
        .get("pattern")
        .and_then(Value::as_str)
        .and_then(|p| regex::Regex::new(p).ok())
        .is_none_or(|r| r.is_match(key));
    let len_ok = names
        .get("maxLength")
        .and_then(Value::as_u64)
        .is_none_or(|m| key.chars().count() as u64 <= m);
    pattern_ok && len_ok
}

/// Both schemas' keywords: `required` joined, `properties` merged member by member (as
/// allOf), `type` intersected, anything else from `b` when `a` lacks it.
fn merge(mut a: Map<String, Value>, b: Map<String, Value>) -> Map<String, Value> {
    for (k, v) in b {
        match (k.as_str(), a.get_mut(&k), v) {
            ("required", Some(Value::Array(have)), Value::Array(more)) => {
                for r in more {
                    if !have.contains(&r) {
                        have.push(r);
                    }
                }
            }
            ("properties", Some(Value::Object(have)), Value::Object(more)) => {
                for (name, sub) in more {
                    let joined = match have.remove(&name) {
                        Some(old) => json!({"allOf": [old, sub]}),
                        None => sub,
                    };
                    have.insert(name, joined);
                }
            }
            ("type", Some(have), v) => {
                let list = |t: &Value| -> Vec<Value> {
                    match t {
                        Value::Array(a) => a.clone(),
                        other => vec![other.clone()],
                    }
                };
                let theirs = list(&v);
                let both: Vec<Value> = list(have)
                    .into_iter()
                    .filter(|t| theirs.contains(t))
                    .collect();
                *have = Value::Array(both);
            }
            (_, Some(_), _) => {}
            (_, None, v) => {
                a.insert(k, v);
            }
        }
    }
    a
}

/// A string that stands for raw JSON text, swapped in after serialising.
const RAW: &str = "\u{1}raw:";

/// Replacements that break a type, an enum, a pattern or a bound, or spell a number in
/// a way serde_json never writes.
fn wrong_value(original: &Value, pick: usize) -> Value {
    let near_miss = |s: &str| -> Vec<Value> {
        vec![
            json!(format!("{s}!")),
            json!(s.to_uppercase()),
            json!(format!(" {s}")),
            json!(format!("{s}\n")),
            json!(format!("é{s}")),
            json!(format!("{s}\u{301}")),
            json!(""),
        ]
    };
    let mut all = vec![
        json!(null),
        json!(true),
        json!(7),
        json!(-1),
        json!(1.5),
        json!("s"),
        json!([]),
        json!({}),
        json!(format!("{RAW}1e3")),
        json!(format!("{RAW}-0")),
        json!(format!("{RAW}3.0")),
        json!(format!("{RAW}18446744073709551616")),
        json!(format!("{RAW}1E400")),
    ];
    if let Value::String(s) = original {
        all.extend(near_miss(s));
    }
    all[pick % all.len()].clone()
}

fn unicode(pick: usize) -> Value {
    let all = [
        "tööl",
        "日本語",
        "\u{1F600}",
        "e\u{301}",
        "\u{202E}drawkcab",
        "\u{FEFF}x",
        "\u{0}",
        "Ⅻ",
        "０.６",
    ];
    json!(all[pick % all.len()])
}

fn nested(depth: usize, array: bool) -> Value {
    (0..depth).fold(json!("deep"), |inner, _| match array {
        true => json!([inner]),
        false => json!({"a": inner}),
    })
}

fn pointers(v: &Value, here: String, out: &mut Vec<String>) {
    out.push(here.clone());
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                pointers(
                    x,
                    format!("{here}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
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

/// Applies one edit to the `at`-th value (document order).
fn mutate(doc: &mut Value, op: u8, at: usize, arg: usize) {
    let mut all = Vec::new();
    pointers(doc, String::new(), &mut all);
    let ptr = all[at % all.len()].clone();
    let (parent, last) = match ptr.rsplit_once('/') {
        Some((p, l)) => (p.to_string(), l.replace("~1", "/").replace("~0", "~")),
        None => (String::new(), String::new()),
    };
    if op % 6 == 1 {
        match doc.pointer_mut(&parent) {
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
        }
        return;
    }
    let Some(target) = doc.pointer_mut(&ptr) else {
        return;
    };
    match op % 6 {
        0 => *target = wrong_value(target, arg),
        2 => match target {
            Value::Object(m) => {
                let key = ["unknown", "x-ok", "_ok", "é", "description", "name", ""][arg % 7];
                m.insert(key.to_string(), wrong_value(&Value::Null, arg / 7));
            }
            Value::Array(items) => items.push(wrong_value(&Value::Null, arg)),
            other => *other = wrong_value(other, arg),
        },
        3 => *target = unicode(arg),
        4 => *target = nested([2, 20, 127, 128, 200][arg % 5], arg.is_multiple_of(2)),
        _ => {
            if let Value::Object(m) = target {
                let renamed: Map<String, Value> = m
                    .iter()
                    .map(|(k, v)| {
                        (
                            format!("{k}{}", ["é", "\u{301}", "-", "ǀ"][arg % 4]),
                            v.clone(),
                        )
                    })
                    .collect();
                *m = renamed;
            } else {
                *target = unicode(arg);
            }
        }
    }
}

/// Serialises, swapping each raw-text marker string for its text.
fn text_of(doc: &Value, pretty: bool) -> Vec<u8> {
    let text = match pretty {
        true => serde_json::to_string_pretty(doc),
        false => serde_json::to_string(doc),
    }
    .unwrap_or_default();
    let marker = serde_json::to_string(RAW).unwrap_or_default();
    let open = &marker[..marker.len() - 1];
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(open) {
        out.push_str(&rest[..at]);
        let after = &rest[at + open.len()..];
        let end = after.find('"').unwrap_or(after.len());
        out.push_str(&after[..end]);
        rest = after.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    out.into_bytes()
}

fn schema_json(name: SchemaName) -> Value {
    serde_json::from_str(name.text()).expect("built-in schema parses")
}

const KINDS: [(Kind, SchemaName); 4] = [
    (Kind::Metadata, SchemaName::Metadata),
    (Kind::Shim, SchemaName::Shim),
    (Kind::Registry, SchemaName::Registry),
    (Kind::Pattern, SchemaName::Pattern),
];

/// One generated document of `kind`, from `bytes` of choices.
fn generate(kind: usize, bytes: &[u8]) -> Value {
    let (_, name) = KINDS[kind];
    let root = schema_json(name);
    let metadata = schema_json(SchemaName::Metadata);
    let mut choices = Choices { bytes, at: 0 };
    let mut generator = Gen {
        choices: &mut choices,
        root: &root,
        metadata: &metadata,
        pool: string_pool(),
    };
    generator.value(&root, 0)
}

/// The checks for one document; `plain` when it is a generated, unmutated one.
fn agree(kind: usize, text: &[u8], plain: bool) -> Result<(), TestCaseError> {
    let (kind, name) = KINDS[kind];
    let shown = || String::from_utf8_lossy(text).into_owned();
    let fast = check_with(text, Some(kind), None, false);
    let full = check_full(text, Some(kind), None, false, false);
    prop_assert_eq!(&fast.diagnostics, &full.diagnostics, "{}", shown());
    let Some(value) = parse::parse(text).value else {
        return Ok(());
    };
    let reference = reference(name).is_valid(&value);
    // boon, which the binary ships, decides as the reference does.
    prop_assert_eq!(
        validator(name).is_valid(&value),
        reference,
        "boon and jsonschema disagree: {}",
        shown()
    );
    let Some(doc) = view::Doc::parse(text) else {
        prop_assert!(
            !plain,
            "the light parser refused a generated document: {}",
            shown()
        );
        return Ok(());
    };
    let sure = certainly_valid(name, doc.root());
    prop_assert!(
        !sure || reference,
        "fast check accepts what jsonschema rejects: {}",
        shown()
    );
    if plain && reference && kind != Kind::Registry {
        // The registry schema uses const and propertyNames, which the fast check leaves
        // to jsonschema; every other generated document must take the fast path.
        prop_assert!(
            sure,
            "fast check unsure of a plain valid document: {}",
            shown()
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::validate::proptest_cases(96)))]

    /// Generated valid documents and their mutations: boon and jsonschema give the same
    /// answer, the fast check never accepts what jsonschema rejects, is sure of every plain valid one, and the pipeline answers as
    /// the full path does.
    #[test]
    fn fast_check_agrees_with_jsonschema(
        kind in 0usize..4,
        bytes in proptest::collection::vec(any::<u8>(), 0..400),
        edits in proptest::collection::vec((0u8..6, any::<u16>(), any::<u8>()), 0..4),
        pretty: bool,
    ) {
        let mut doc = generate(kind, &bytes);
        agree(kind, &text_of(&doc, pretty), true)?;
        for (op, at, arg) in &edits {
            mutate(&mut doc, *op, usize::from(*at), usize::from(*arg));
        }
        if !edits.is_empty() {
            agree(kind, &text_of(&doc, pretty), false)?;
        }
    }
}

/// The generator makes documents jsonschema accepts (most of the time), of every kind:
/// without this the property above would compare mostly invalid documents.
#[test]
fn generated_documents_are_mostly_valid() {
    for (kind, (_, name)) in KINDS.iter().enumerate() {
        let mut valid = 0;
        for seed in 0u32..64 {
            let bytes: Vec<u8> = (0..400u32)
                .map(|i| {
                    (i.wrapping_mul(2_654_435_761)
                        .wrapping_add(seed.wrapping_mul(40_503))
                        >> 13) as u8
                })
                .collect();
            let doc = generate(kind, &bytes);
            if reference(*name).is_valid(&doc) {
                valid += 1;
            }
        }
        assert!(
            valid >= 48,
            "{name:?}: only {valid} of 64 generated documents valid"
        );
    }
}

/// Raw number text reaches the document unchanged (the marker trick above works).
#[test]
fn raw_numbers_are_spliced_into_the_text() {
    let doc = json!({"a": format!("{RAW}1e3"), "b": [format!("{RAW}-0")], "c": "plain"});
    assert_eq!(text_of(&doc, false), br#"{"a":1e3,"b":[-0],"c":"plain"}"#);
}

/// boon and jsonschema agree on the formats atip's schemas assert (`uri`, `date-time`)
/// and on the patterns' character classes for non-ASCII text, value by value: the
/// generator rarely makes near-misses of these by chance.
// Long because: the list of near-miss strings and the seven places they are put.
#[test]
fn boon_and_jsonschema_agree_on_formats_and_patterns() {
    let strings = [
        "https://example.com/x?y=1#z",
        "http://[::1]:80/",
        "mailto:a@b.c",
        "urn:isbn:0451450523",
        "file:///tmp/x",
        "x:",
        "relative/path",
        "//host/path",
        "https://exa mple.com",
        "https://example.com/%zz",
        "https://ex\u{e4}mple.com/",
        "http://a/b c",
        "",
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:05.123+01:00",
        "2024-01-02t03:04:05z",
        "2024-01-02 03:04:05Z",
        "2024-02-30T00:00:00Z",
        "2024-01-02T23:59:60Z",
        "2024-01-02T24:00:00Z",
        "2024-01-02T03:04:05",
        "20240102T030405Z",
        "--x",
        "-x\u{a0}y",
        "-x\u{feff}y",
        "-x\u{2003}",
        "-\u{e9}",
        "0.10",
        "0.1\n",
        "a\u{e9}b",
        "A_B",
    ];
    let metadata = |extra: Value| {
        let mut doc = json!({"atip": {"version": "0.6"}, "name": "t", "version": "1",
            "description": "d"});
        doc.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        doc
    };
    type Template = fn(&str) -> Value;
    let templates: [(&str, Template); 7] = [
        ("homepage", |s| json!({"homepage": s})),
        (
            "provenance url",
            |s| json!({"trust": {"provenance": {"url": s}}}),
        ),
        (
            "lastVerified",
            |s| json!({"trust": {"shimIntegrity": {"lastVerified": s}}}),
        ),
        ("flag", |s| {
            json!({"globalOptions": [{"name": "o", "flags": [s], "type": "boolean",
                "description": "d"}]})
        }),
        ("name", |s| json!({"name": s})),
        (
            "envVar",
            |s| json!({"authentication": {"methods": [{"type": "token", "envVar": s}]}}),
        ),
        ("updated", |s| json!({"updated": s})),
    ];
    for (what, template) in templates {
        let mut seen = [false; 2];
        for s in strings {
            let (doc, name) = if what == "updated" {
                let doc = json!({"version": "2", "updated": s, "agent": {"name": "a",
                    "version": "1"}, "tools": {}});
                (doc, SchemaName::Registry)
            } else {
                (metadata(template(s)), SchemaName::Metadata)
            };
            let answer = reference(name).is_valid(&doc);
            seen[usize::from(answer)] = true;
            assert_eq!(validator(name).is_valid(&doc), answer, "{what}: {doc}");
        }
        assert_eq!(seen, [true, true], "{what}: every string valid, or none");
    }
}
