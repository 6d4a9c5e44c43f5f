//! Where `atip diff` gets its two documents: a file, standard input, or `TOOL --agent`.
//!
//! Owns reading under validate's rules (size cap, regular files, the `--agent` contract
//! through the one process runner) and refusing documents that are not valid ATIP
//! metadata, with validate's first error (rule, line, column) in the message.
//!
//! Must not compare anything.

use crate::model::Metadata;
use crate::output::{AtipError, ErrorCode};
use crate::validate::{self, FileReport, Input, Kind, Severity};
use serde_json::json;
use std::ffi::OsString;
use std::path::PathBuf;

/// One side of a diff, as named on the command line.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A file path.
    File(PathBuf),
    /// Standard input (`-`).
    Stdin,
    /// `PROGRAM --agent`.
    Exec(OsString),
}

/// A document ready to compare, with where it came from.
#[derive(Debug)]
pub struct Loaded {
    /// The metadata.
    pub meta: Metadata,
    /// The path as shown (`-`, `TOOL --agent`).
    pub source: String,
}

fn first_problem(report: &FileReport) -> String {
    report
        .diagnostics
        .iter()
        .find(|d| d.severity == Severity::Error)
        .map(|d| match (d.line, d.column) {
            (Some(l), Some(c)) => format!("{}:{l}:{c}: {} [{}]", report.path, d.message, d.rule),
            _ => format!("{}: {} [{}]", report.path, d.message, d.rule),
        })
        .unwrap_or_else(|| report.path.clone())
}

/// Reads and validates one side.
pub fn load(origin: &Origin, opts: &validate::Options) -> Result<Loaded, AtipError> {
    let source = read(origin, opts)?;
    let checked = validate::check_bytes(&source.bytes, Some(Kind::Metadata), None);
    let report_of = |c: &validate::Checked| FileReport {
        path: source.path.clone(),
        kind: c.kind,
        valid: c.is_valid(),
        diagnostics: c.diagnostics.clone(),
        missing: false,
        source: None,
        rendered: None,
    };
    // A shim is metadata plus `binary`: check it as what it is.
    let checked = match checked.value.as_ref().map(Kind::detect) {
        Some(Kind::Shim) => validate::check_bytes(&source.bytes, Some(Kind::Shim), None),
        _ => checked,
    };
    if !checked.is_valid() {
        let errors = checked.count(Severity::Error);
        return Err(AtipError::new(
            ErrorCode::MetadataInvalid,
            format!(
                "{} is not valid ATIP metadata ({errors} error{}); first: {}",
                source.path,
                if errors == 1 { "" } else { "s" },
                first_problem(&report_of(&checked))
            ),
        )
        .hint(format!(
            "run `atip validate {}` for every finding",
            source.path
        ))
        .details(json!({"path": source.path, "errors": errors})));
    }
    let value = checked.value.expect("check_bytes keeps the value");
    let meta = Metadata::from_value(value).map_err(|e| {
        AtipError::new(
            ErrorCode::MetadataInvalid,
            format!("{} cannot be read as metadata: {e}", source.path),
        )
    })?;
    Ok(Loaded {
        meta,
        source: source.path,
    })
}

/// The document's bytes from its origin; a directory, an input that cannot be read and a
/// tool that breaks the `--agent` contract are errors with the code each calls for.
fn read(origin: &Origin, opts: &validate::Options) -> Result<validate::run::Source, AtipError> {
    let input = match origin {
        Origin::File(p) => Input::Path(p.clone()),
        Origin::Stdin => Input::Stdin,
        Origin::Exec(program) => Input::Exec {
            program: program.clone(),
            args: Vec::new(),
        },
    };
    if let Origin::File(p) = origin
        && p.is_dir()
    {
        return Err(AtipError::new(
            ErrorCode::Usage,
            format!(
                "{} is a directory; atip diff compares two documents",
                p.display()
            ),
        ));
    }
    let mut result = None;
    validate::run::read_inputs(std::slice::from_ref(&input), opts, |r| result = Some(r));
    let source = match result {
        Some(Ok(source)) => source,
        Some(Err(report)) => {
            let code = if matches!(origin, Origin::Exec(_)) {
                ErrorCode::ToolUnavailable
            } else if report.diagnostics.iter().any(|d| d.rule == "input-missing") {
                ErrorCode::InputNotFound
            } else if report.missing {
                ErrorCode::InputUnreadable
            } else {
                ErrorCode::MetadataInvalid
            };
            return Err(AtipError::new(code, first_problem(&report)));
        }
        None => return Err(AtipError::new(ErrorCode::Internal, "no input was read")),
    };
    if let Some(broken) = source.contract.first() {
        return Err(AtipError::new(
            ErrorCode::ToolUnavailable,
            format!("{}: {}", source.path, broken.message),
        )
        .hint("the tool must exit 0 and print one JSON document for --agent"));
    }
    Ok(source)
}
