//! atip's own JSON Schemas, embedded in the binary and compiled once.
//!
//! Owns the four schema texts under `schemas/` (tool metadata 0.1–0.6, shim files,
//! `registry.json`, pattern files), their compilation with `jsonschema` (draft 2020-12,
//! no network: the schemas reference each other only through resources registered
//! here), and the one compiled validator per kind, built on first use and shared by
//! every thread.
//!
//! Must not decide what a diagnostic says or which rules apply beyond the schema:
//! that is `validate`'s job.

use jsonschema::{Draft, Validator};
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

/// Compiles one schema (draft 2020-12, formats checked, no retrieval of remote
/// documents: the only reference target, the metadata schema, is registered locally).
pub(crate) fn compile(name: SchemaName) -> Result<Validator, SchemaError> {
    let err = |message: String| SchemaError {
        file: name.file_name(),
        message,
    };
    let schema = parse(name)?;
    let metadata = METADATA_VALUE.as_ref().map_err(Clone::clone)?;
    let registry = jsonschema::Registry::new()
        .add(METADATA_SCHEMA_ID, metadata)
        .and_then(|b| b.prepare())
        .map_err(|e| err(e.to_string()))?;
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(true)
        .with_registry(&registry)
        .build(&schema)
        .map_err(|e| err(e.to_string()))
}

static COMPILED: LazyLock<[Result<Validator, SchemaError>; 4]> =
    LazyLock::new(|| SchemaName::ALL.map(compile));

/// The compiled validator for a schema, built once per process.
///
/// # Panics
/// Never for the schemas shipped in this crate: the unit tests compile every one of
/// them, so a schema that does not compile fails the test suite, not a user's run.
pub(crate) fn validator(name: SchemaName) -> &'static Validator {
    let index = SchemaName::ALL
        .iter()
        .position(|n| *n == name)
        .unwrap_or_default();
    match &COMPILED[index] {
        Ok(v) => v,
        Err(e) => panic!("embedded schema does not compile (a bug in atip): {e}"),
    }
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
}
