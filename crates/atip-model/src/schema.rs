//! atip's own JSON Schemas, embedded in the binary and compiled once.
//!
//! Owns the four schema texts under `schemas/` (tool metadata 0.1–0.6, shim files,
//! `registry.json`, pattern files), their compilation with `boon` (draft 2020-12,
//! formats asserted, no network and no files: the schemas reference each other only
//! through resources registered here), and the one compiled validator per kind, built
//! on first use and shared by every thread. Also the compiler every other schema goes
//! through ([`compile_value`], [`meta_errors`]): one that refuses to load any URL, so a
//! schema from an MCP server cannot make atip read a file or open a connection.
//!
//! Must not decide what a diagnostic says or which rules apply beyond the schema:
//! that is `validate`'s job.

use serde_json::Value;
use std::sync::LazyLock;

/// `schemas/atip.schema.json`: tool metadata, every protocol version from 0.1 to 0.6.
pub const METADATA_SCHEMA: &str = include_str!("../../../schemas/atip.schema.json");
/// `schemas/shim.schema.json`: a shim file (metadata plus `binary`).
pub const SHIM_SCHEMA: &str = include_str!("../../../schemas/shim.schema.json");
/// `schemas/registry.schema.json`: `registry.json`, index format 2.
pub const REGISTRY_SCHEMA: &str = include_str!("../../../schemas/registry.schema.json");
/// `schemas/pattern.schema.json`: a pattern file.
pub const PATTERN_SCHEMA: &str = include_str!("../../../schemas/pattern.schema.json");

/// `$id` of the metadata schema, which the shim and pattern schemas reference.
pub const METADATA_SCHEMA_ID: &str = "https://atip.dev/schemas/atip.schema.json";

/// Which of atip's schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaName {
    /// Tool metadata.
    Metadata,
    /// Shim file.
    Shim,
    /// `registry.json`.
    Registry,
    /// Pattern file.
    Pattern,
}

impl SchemaName {
    /// Every schema.
    pub const ALL: [SchemaName; 4] = [
        SchemaName::Metadata,
        SchemaName::Shim,
        SchemaName::Registry,
        SchemaName::Pattern,
    ];

    /// The embedded schema text.
    pub fn text(self) -> &'static str {
        match self {
            SchemaName::Metadata => METADATA_SCHEMA,
            SchemaName::Shim => SHIM_SCHEMA,
            SchemaName::Registry => REGISTRY_SCHEMA,
            SchemaName::Pattern => PATTERN_SCHEMA,
        }
    }

    /// The file name under `schemas/`.
    pub(crate) fn file_name(self) -> &'static str {
        match self {
            SchemaName::Metadata => "atip.schema.json",
            SchemaName::Shim => "shim.schema.json",
            SchemaName::Registry => "registry.schema.json",
            SchemaName::Pattern => "pattern.schema.json",
        }
    }
}

/// A schema that does not parse or compile: a bug in atip, caught by the unit tests.
/// (The message is kept as text: the schema compiler's error borrows the schema.)
#[derive(Debug, Clone, thiserror::Error)]
#[error("failed to compile schemas/{file}: {message}")]
pub struct SchemaError {
    /// File under `schemas/`.
    pub file: &'static str,
    /// What the JSON parser or the schema compiler said.
    pub message: String,
}

fn parse(name: SchemaName) -> Result<Value, SchemaError> {
    serde_json::from_str(name.text()).map_err(|e| SchemaError {
        file: name.file_name(),
        message: e.to_string(),
    })
}

static METADATA_VALUE: LazyLock<Result<Value, SchemaError>> =
    LazyLock::new(|| parse(SchemaName::Metadata));

/// The URL loader of every schema atip compiles: it refuses every URL. A `$ref` (or
/// `$schema`) naming a document that was not registered beforehand — `file://…`,
/// `http://…`, anything — is a compile error, never a read or a connection. (The JSON
/// Schema meta-schemas are built into `boon` and need no loading.)
struct NoFetch;

/// What [`NoFetch`] answers for every URL.
#[derive(Debug, thiserror::Error)]
#[error("atip loads no schema from outside the schema itself ({url})")]
struct Refused {
    url: String,
}

impl boon::UrlLoader for NoFetch {
    fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
        Err(Box::new(Refused {
            url: url.to_string(),
        }))
    }
}

/// A schema from outside (an exported or an MCP server's input schema, or the
/// meta-schema) that does not compile; the message says why in atip's words.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct InputSchemaError {
    /// What is wrong, and where in the schema.
    pub message: String,
}

impl InputSchemaError {
    fn of(e: &boon::CompileError) -> InputSchemaError {
        InputSchemaError {
            message: compile_message(e),
        }
    }
}

/// A compiler with the refusing loader.
fn compiler() -> boon::Compiler {
    let mut c = boon::Compiler::new();
    c.use_loader(Box::new(NoFetch));
    c
}

/// A compiled schema, ready to validate values.
pub struct Compiled {
    schemas: boon::Schemas,
    root: boon::SchemaIndex,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Compiled")
    }
}

/// Runs `f` (a validation of `value`) where the stack is deep enough for it: `boon`
/// validates recursively, a few frames per level of nesting, and a document nested the
/// 128 levels the parser allows overflows a 2 MiB thread (rayon's, tokio's) in a debug
/// build. Shallow values (nearly all) run in place; deeper ones on a scoped thread with
/// a 64 MiB stack (reserved, not used: pages are touched only as deep as it recurses).
pub fn with_stack_for<R: Send>(value: &Value, f: impl FnOnce() -> R + Send) -> R {
    // Levels validated in place; beyond them a thread is worth its ~50 µs.
    const IN_PLACE: usize = 16;
    fn deeper_than(v: &Value, levels: usize) -> bool {
        match v {
            Value::Array(items) => levels == 0 || items.iter().any(|i| deeper_than(i, levels - 1)),
            Value::Object(map) => levels == 0 || map.values().any(|i| deeper_than(i, levels - 1)),
            _ => false,
        }
    }
    if !deeper_than(value, IN_PLACE) {
        return f();
    }
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("atip-validate".into())
            .stack_size(64 << 20)
            .spawn_scoped(scope, f)
            .unwrap_or_else(|e| panic!("no thread to validate a deeply nested document: {e}"))
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

impl Compiled {
    /// Whether `value` satisfies the schema.
    pub fn is_valid(&self, value: &Value) -> bool {
        with_stack_for(value, || self.schemas.validate(value, self.root).is_ok())
    }

    /// `boon`'s error tree for `value`, `None` when it is valid. Recursive: for a value
    /// that may be deeply nested, call it inside [`with_stack_for`].
    pub fn errors<'s, 'v>(&'s self, value: &'v Value) -> Option<boon::ValidationError<'s, 'v>> {
        self.schemas.validate(value, self.root).err()
    }

    /// Every violation as (instance pointer, message); the messages never contain the
    /// value (it can be a secret argument), only the schema's side: types, bounds, names.
    pub fn violations(&self, value: &Value) -> Vec<(String, String)> {
        with_stack_for(value, || self.violations_here(value))
    }

    fn violations_here(&self, value: &Value) -> Vec<(String, String)> {
        let Some(error) = self.errors(value) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for leaf in leaves(&error) {
            let at = leaf.instance_location.to_string();
            for (suffix, message) in masked(&leaf.kind) {
                out.push((format!("{at}{suffix}"), message));
            }
        }
        // boon visits a schema's properties in hash order: sort, so the same call
        // reports the same list every time (stable: one place keeps keyword order).
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

/// The failures `boon` reports as a tree, flattened to the ones that say what is wrong:
/// groups, `$ref`s and `allOf` are opened (each of their failures counts on its own),
/// while `anyOf`, `oneOf`, `not`, `contains` and `propertyNames` stay one failure each
/// (which branch was meant is not knowable).
pub fn leaves<'a, 's, 'v>(
    error: &'a boon::ValidationError<'s, 'v>,
) -> Vec<&'a boon::ValidationError<'s, 'v>> {
    use boon::ErrorKind as K;
    let mut out = Vec::new();
    let mut stack = vec![error];
    while let Some(e) = stack.pop() {
        match e.kind {
            K::Group | K::Schema { .. } | K::Reference { .. } | K::AllOf => {
                stack.extend(e.causes.iter().rev());
            }
            _ => out.push(e),
        }
    }
    out
}

/// "a string", "an object", … for a JSON type.
pub fn a_type(t: boon::Type) -> String {
    let name = t.to_string();
    let article = if matches!(
        t,
        boon::Type::Integer | boon::Type::Array | boon::Type::Object
    ) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

/// `want` as "string", "string or null", ….
pub fn types(want: boon::Types) -> String {
    want.iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(" or ")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// atip's own wording of one failure, without the failing value: (pointer suffix below
/// the failure's location, message). Several for `required` and `additionalProperties`
/// (one per property).
// Long because: one flat match with an arm per boon error kind.
pub fn masked(kind: &boon::ErrorKind<'_, '_>) -> Vec<(String, String)> {
    use boon::ErrorKind as K;
    let one = |m: String| vec![(String::new(), m)];
    match kind {
        K::AdditionalProperties { got } => got
            .iter()
            .map(|k| (String::new(), format!("unknown property \"{k}\"")))
            .collect(),
        K::Required { want } => want
            .iter()
            .map(|p| (String::new(), format!("missing required property \"{p}\"")))
            .collect(),
        K::Dependency { prop, missing } | K::DependentRequired { prop, missing } => missing
            .iter()
            .map(|m| {
                (
                    String::new(),
                    format!("missing property \"{m}\", required when \"{prop}\" is present"),
                )
            })
            .collect(),
        K::Type { got, want } => one(format!("expected {}, got {}", types(*want), a_type(*got))),
        K::Enum { want } => one(format!("not one of the {} allowed values", want.len())),
        K::Const { .. } => one("not the one allowed value".into()),
        K::Format { want, .. } => one(format!("not a valid {want}")),
        K::Pattern { want, .. } => one(format!("does not match the pattern {want}")),
        K::MinLength { want, .. } => one(format!(
            "shorter than {}",
            plural(*want, "character", "characters")
        )),
        K::MaxLength { want, .. } => one(format!(
            "longer than {}",
            plural(*want, "character", "characters")
        )),
        K::MinItems { want, .. } => one(format!("fewer than {}", plural(*want, "item", "items"))),
        K::MaxItems { want, .. } => one(format!("more than {}", plural(*want, "item", "items"))),
        K::MinProperties { want, .. } => one(format!(
            "fewer than {}",
            plural(*want, "property", "properties")
        )),
        K::MaxProperties { want, .. } => one(format!(
            "more than {}",
            plural(*want, "property", "properties")
        )),
        K::Minimum { want, .. } => one(format!("less than the minimum {want}")),
        K::Maximum { want, .. } => one(format!("greater than the maximum {want}")),
        K::ExclusiveMinimum { want, .. } => one(format!("not greater than {want}")),
        K::ExclusiveMaximum { want, .. } => one(format!("not less than {want}")),
        K::MultipleOf { want, .. } => one(format!("not a multiple of {want}")),
        K::UniqueItems { got: [i, j] } => one(format!("items {i} and {j} are equal")),
        K::AdditionalItems { got } => one(format!(
            "{} more than allowed",
            plural(*got, "item", "items")
        )),
        K::Contains | K::MinContains { .. } | K::MaxContains { .. } => {
            one("not the number of matching items the schema asks for".into())
        }
        K::PropertyName { prop } => one(format!("property name \"{prop}\" is not allowed")),
        K::FalseSchema => one("not allowed here".into()),
        K::Not => one("matches a schema it must not match".into()),
        K::AnyOf | K::OneOf(None) => one("matches none of the allowed forms".into()),
        K::OneOf(Some((i, j))) => one(format!("matches more than one allowed form ({i} and {j})")),
        K::RefCycle { .. } => one("the schema's references form a cycle".into()),
        K::ContentEncoding { .. } | K::ContentMediaType { .. } | K::ContentSchema => {
            one("content does not match its declared encoding or media type".into())
        }
        K::Group | K::Schema { .. } | K::Reference { .. } | K::AllOf => {
            one("does not match the schema".into())
        }
    }
}

/// How a JSON Schema is read when it names no `$schema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draft {
    /// Draft 7.
    V7,
    /// Draft 2020-12.
    V2020_12,
}

/// Where a schema handed to [`compile_value`] lives: a name under a domain that does
/// not resolve, so a relative `$ref` resolves to a URL the loader refuses.
const INPUT_URL: &str = "https://atip.invalid/input.schema.json";

/// Compiles a schema from outside (an exported or an MCP server's input schema):
/// `format` is an annotation, never a check; no URL is ever loaded (a `$ref` outside
/// the schema is an error). The error says what is wrong in atip's words.
pub fn compile_value(schema: &Value, draft: Draft) -> Result<Compiled, InputSchemaError> {
    let mut c = compiler();
    match draft {
        Draft::V7 => {
            c.set_default_draft(boon::Draft::V7);
            // Draft 7 asserts formats; atip treats them as annotations under every draft.
            for name in FORMAT_NAMES {
                c.register_format(boon::Format {
                    name,
                    func: |_| Ok(()),
                });
            }
        }
        Draft::V2020_12 => c.set_default_draft(boon::Draft::V2020_12),
    }
    c.add_resource(INPUT_URL, schema.clone())
        .map_err(|e| InputSchemaError::of(&e))?;
    let mut schemas = boon::Schemas::new();
    let root = c
        .compile(INPUT_URL, &mut schemas)
        .map_err(|e| InputSchemaError::of(&e))?;
    Ok(Compiled { schemas, root })
}

/// The formats `boon` knows besides `regex` (which cannot be replaced; a schema that
/// uses it is read under 2020-12 by its callers).
const FORMAT_NAMES: [&str; 19] = [
    "ipv4",
    "ipv6",
    "hostname",
    "idn-hostname",
    "email",
    "idn-email",
    "date",
    "time",
    "date-time",
    "duration",
    "period",
    "json-pointer",
    "relative-json-pointer",
    "uuid",
    "uri",
    "iri",
    "uri-reference",
    "iri-reference",
    "uri-template",
];

/// A compile error in atip's words: what is wrong and where in the schema.
fn compile_message(e: &boon::CompileError) -> String {
    use boon::CompileError as E;
    let local = |url: &str| url.strip_prefix(INPUT_URL).unwrap_or(url).to_string();
    match e {
        E::LoadUrlError { url, .. } | E::UnsupportedUrlScheme { url } => format!(
            "it refers to {url}, a document outside the schema; atip loads no schema from files or the network"
        ),
        E::InvalidRegex { url, regex, src } => format!(
            "the pattern {regex:?} at {} does not compile ({src}); atip's regular expressions have no look-around and no backreferences",
            local(url)
        ),
        E::ValidationError { src, .. } => {
            let mut parts = Vec::new();
            for leaf in leaves(src) {
                let at = leaf.instance_location.to_string();
                for (suffix, message) in masked(&leaf.kind) {
                    let at = format!("{at}{suffix}");
                    let why = match &leaf.kind {
                        boon::ErrorKind::Format {
                            want: "regex", err, ..
                        } => format!(
                            "not a regular expression atip can run ({err}; no look-around, no backreferences)"
                        ),
                        _ => message,
                    };
                    parts.push(format!("{}: {why}", if at.is_empty() { "/" } else { &at }));
                }
            }
            format!("not a valid JSON Schema: {}", parts.join("; "))
        }
        E::JsonPointerNotFound(p) | E::InvalidJsonPointer(p) => {
            format!("a $ref points to {}, which is not in the schema", local(p))
        }
        E::AnchorNotFound { reference, .. } => {
            format!(
                "a $ref names the anchor of {}, which is not in the schema",
                local(reference)
            )
        }
        other => format!("{other}"),
    }
}

/// Meta-validation: the violations of `schema` against the draft 2020-12 meta-schema,
/// as (pointer into the schema, message). Empty when it is a valid schema.
pub fn meta_errors(schema: &Value) -> Vec<(String, String)> {
    static META: LazyLock<Result<Compiled, InputSchemaError>> = LazyLock::new(|| {
        let mut c = compiler();
        let mut schemas = boon::Schemas::new();
        let root = c
            .compile("https://json-schema.org/draft/2020-12/schema", &mut schemas)
            .map_err(|e| InputSchemaError::of(&e))?;
        Ok(Compiled { schemas, root })
    });
    match &*META {
        Ok(meta) => meta.violations(schema),
        Err(e) => vec![(
            String::new(),
            format!("the meta-schema does not compile: {e}"),
        )],
    }
}

/// Compiles one of atip's schemas (draft 2020-12, formats checked, nothing loaded: the
/// only reference target, the metadata schema, is registered here).
pub(crate) fn compile(name: SchemaName) -> Result<Compiled, SchemaError> {
    let err = |message: String| SchemaError {
        file: name.file_name(),
        message,
    };
    let schema = parse(name)?;
    let metadata = METADATA_VALUE.as_ref().map_err(Clone::clone)?;
    let url = schema
        .get("$id")
        .and_then(Value::as_str)
        .ok_or_else(|| err("no $id".into()))?
        .to_string();
    let mut c = compiler();
    c.set_default_draft(boon::Draft::V2020_12);
    c.enable_format_assertions();
    c.add_resource(METADATA_SCHEMA_ID, metadata.clone())
        .map_err(|e| err(format!("{e:#}")))?;
    c.add_resource(&url, schema)
        .map_err(|e| err(format!("{e:#}")))?;
    let mut schemas = boon::Schemas::new();
    let root = c
        .compile(&url, &mut schemas)
        .map_err(|e| err(format!("{e:#}")))?;
    Ok(Compiled { schemas, root })
}

static COMPILED: LazyLock<[Result<Compiled, SchemaError>; 4]> =
    LazyLock::new(|| SchemaName::ALL.map(compile));

/// The compiled validator for a schema, built once per process.
///
/// # Panics
/// Never for the schemas shipped in this crate: the unit tests compile every one of
/// them, so a schema that does not compile fails the test suite, not a user's run.
pub(crate) fn validator(name: SchemaName) -> &'static Compiled {
    let index = SchemaName::ALL
        .iter()
        .position(|n| *n == name)
        .unwrap_or_default();
    match &COMPILED[index] {
        Ok(v) => v,
        Err(e) => panic!("embedded schema does not compile (a bug in atip): {e}"),
    }
}

/// The reference: the same schema compiled by `jsonschema` (a dev-dependency), which the
/// property tests compare `boon` and the fast validator with.
#[cfg(test)]
pub(crate) fn reference(name: SchemaName) -> &'static jsonschema::Validator {
    static REFERENCE: LazyLock<[jsonschema::Validator; 4]> = LazyLock::new(|| {
        SchemaName::ALL.map(|name| {
            let schema = parse(name).unwrap_or_else(|e| panic!("{e}"));
            let metadata = parse(SchemaName::Metadata).unwrap_or_else(|e| panic!("{e}"));
            let registry = jsonschema::Registry::new()
                .add(METADATA_SCHEMA_ID, metadata)
                .and_then(|b| b.prepare())
                .unwrap_or_else(|e| panic!("{e}"));
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(true)
                .with_registry(&registry)
                .build(&schema)
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    let index = SchemaName::ALL
        .iter()
        .position(|n| *n == name)
        .unwrap_or_default();
    &REFERENCE[index]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_schema_compiles() {
        for name in SchemaName::ALL {
            if let Err(e) = compile(name) {
                panic!("{e}");
            }
            let _ = validator(name);
        }
    }

    #[test]
    fn metadata_schema_accepts_minimal_and_rejects_missing_fields() {
        let v = validator(SchemaName::Metadata);
        assert!(
            v.is_valid(&json!({"atip": "0.1", "name": "x", "version": "1", "description": "d"}))
        );
        assert!(!v.is_valid(&json!({"atip": "0.1", "version": "1", "description": "d"})));
        assert!(v.is_valid(&json!({"atip": {"version": "0.6"}, "description": "d",
            "binary": {"name": "x", "version": "1", "hash": format!("sha256:{}", "a".repeat(64))}})));
    }

    #[test]
    fn shim_schema_requires_binary_and_checks_metadata() {
        let v = validator(SchemaName::Shim);
        assert!(
            !v.is_valid(&json!({"atip": "0.1", "name": "x", "version": "1", "description": "d"}))
        );
        assert!(!v.is_valid(
            &json!({"atip": 5, "description": "d", "binary": {"name": "x", "version": "1"}})
        ));
        assert!(v.is_valid(&json!({"atip": {"version": "0.6"}, "description": "d", "binary": {"name": "x", "version": "1"}})));
    }

    #[test]
    fn pattern_schema_accepts_three_forms() {
        let v = validator(SchemaName::Pattern);
        let p = json!({"name": "p", "steps": [{"command": "git status"}]});
        assert!(v.is_valid(&json!([p.clone()])));
        assert!(v.is_valid(&json!({"patterns": [p.clone()]})));
        assert!(v.is_valid(&p));
        assert!(!v.is_valid(&json!([{"name": "p"}])));
        assert!(!v.is_valid(&json!({"patterns": [{"steps": []}]})));
    }

    #[test]
    fn no_url_is_ever_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let accept = dir.path().join("accept.json");
        std::fs::write(&accept, "{}").unwrap();
        let refs = [
            format!("file://{}", accept.display()),
            "http://127.0.0.1:9/schema.json".to_string(),
            "other.json".to_string(),
        ];
        for r in &refs {
            for draft in [Draft::V7, Draft::V2020_12] {
                let schema = json!({"type": "object", "properties": {"p": {"$ref": r}}});
                let e = compile_value(&schema, draft).unwrap_err().message;
                assert!(e.contains("atip loads no schema"), "{r}: {e}");
            }
        }
        // A meta-schema URL of its own is refused the same way; the built-in ones load.
        let e = compile_value(&json!({"$schema": refs[0]}), Draft::V2020_12)
            .unwrap_err()
            .message;
        assert!(e.contains("atip loads no schema"), "{e}");
        let ok = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"});
        assert!(compile_value(&ok, Draft::V2020_12).is_ok());
        // A reference inside the schema resolves.
        let inner = json!({"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s"});
        let c = compile_value(&inner, Draft::V2020_12).unwrap();
        assert!(c.is_valid(&json!("x")) && !c.is_valid(&json!(1)));
    }

    #[test]
    fn a_pattern_regex_cannot_run_is_an_error_not_an_accept() {
        for pattern in ["^(?!rm).*$", "(a)\\1", "(?<=x)y", "[unclosed"] {
            let schema = json!({"properties": {"p": {"type": "string", "pattern": pattern}}});
            for draft in [Draft::V7, Draft::V2020_12] {
                let e = compile_value(&schema, draft).unwrap_err().message;
                assert!(e.contains("/properties/p/pattern"), "{pattern}: {e}");
                assert!(e.contains("no look-around"), "{pattern}: {e}");
            }
        }
        let schema = json!({"patternProperties": {"(?=a)": {}}});
        assert!(compile_value(&schema, Draft::V2020_12).is_err());
        // ECMA syntax boon translates (\d, \w) works.
        let ok = json!({"type": "string", "pattern": "^\\d+\\w$"});
        let c = compile_value(&ok, Draft::V2020_12).unwrap();
        assert!(c.is_valid(&json!("12a")) && !c.is_valid(&json!("a")));
    }

    #[test]
    fn violations_never_show_the_value_and_format_is_an_annotation() {
        let schema = json!({"type": "object", "additionalProperties": false,
            "required": ["a"],
            "properties": {"s": {"type": "integer"}, "e": {"enum": ["x"]},
                "p": {"type": "string", "pattern": "^y$", "maxLength": 3},
                "u": {"type": "string", "format": "uri"}}});
        for draft in [Draft::V7, Draft::V2020_12] {
            let c = compile_value(&schema, draft).unwrap();
            let v = c.violations(&json!({"s": "secret1", "e": "secret2",
                "p": "secret3", "u": "not a uri", "zz": 1}));
            let text: String = v.iter().map(|(p, m)| format!("{p}: {m}\n")).collect();
            assert!(!text.contains("secret"), "{text}");
            let paths: Vec<&str> = v.iter().map(|(p, _)| p.as_str()).collect();
            assert_eq!(paths, ["", "", "/e", "/p", "/p", "/s"], "{text}");
            assert_eq!(v[0].1, "missing required property \"a\"");
            assert!(text.contains("unknown property \"zz\""), "{text}");
            assert!(text.contains("missing required property \"a\""), "{text}");
            assert!(text.contains("expected integer, got a string"), "{text}");
        }
    }

    #[test]
    fn meta_validation_names_the_place() {
        assert!(meta_errors(&json!({"type": "object"})).is_empty());
        let e = meta_errors(&json!({"type": "strnig"}));
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].0, "/type");
        let e = meta_errors(&json!({"properties": {"a": {"minLength": -1}}}));
        assert_eq!(e[0].0, "/properties/a/minLength", "{e:?}");
    }

    #[test]
    fn a_deeply_nested_document_validates_on_a_small_thread() {
        let mut cmd = json!({"description": "leaf", "options": [
            {"name": "o", "flags": ["-o"], "type": "bogus", "description": "d"}]});
        for i in 0..60 {
            cmd = json!({"description": "d", "commands": {format!("c{i}"): cmd}});
        }
        let doc = json!({"atip": "0.1", "name": "deep", "version": "1",
            "description": "d", "commands": {"root": cmd}});
        // A rayon or tokio worker's stack is 2 MiB; give it half that.
        let found = std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || {
                let v = validator(SchemaName::Metadata);
                (v.is_valid(&doc), v.violations(&doc).len())
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(found, (false, 1));
    }
}
