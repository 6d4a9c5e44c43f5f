//! Health checks over the registry for `atip doctor`: `registry.json` itself (parses,
//! matches `schemas/registry.schema.json`), then every entry (binary still there and
//! executable, binary hash unchanged, metadata file present, hashing to its name and
//! parsing as ATIP metadata). Each problem says what to do.
//!
//! Schema and document checks go through [`crate::validate::check_bytes`], the same
//! checker `atip validate` uses.
//!
//! Must not lock, write or run tools: it only reads and hashes files.

use super::{Entry, Index};
use crate::digest::{sha256_file, sha256_hex};
use crate::dirs::Dirs;
use crate::model::Metadata;
use rayon::prelude::*;
use serde::Serialize;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What one check found wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// There is no `registry.json`.
    RegistryMissing,
    /// `registry.json` could not be read.
    RegistryUnreadable,
    /// `registry.json` is not JSON or not the index format.
    RegistryCorrupt,
    /// `registry.json` parses but breaks its schema.
    RegistrySchema,
    /// The executable is gone.
    BinaryMissing,
    /// The path is not an executable regular file.
    BinaryNotExecutable,
    /// The executable could not be read to hash it.
    BinaryUnreadable,
    /// The executable's sha256 differs from the recorded one.
    BinaryChanged,
    /// The metadata file is gone.
    MetadataMissing,
    /// The metadata file could not be read.
    MetadataUnreadable,
    /// The metadata file's bytes do not hash to its name.
    MetadataTampered,
    /// The metadata file is not ATIP metadata.
    MetadataInvalid,
}

/// One problem and its fix.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    /// The tool, or `null` for the registry as a whole.
    pub tool: Option<String>,
    /// Which check failed.
    pub check: Check,
    /// What is wrong, naming the file.
    pub message: String,
    /// What to do about it.
    pub fix: String,
}

/// The result of `atip doctor`.
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    /// The registry file checked.
    pub registry: PathBuf,
    /// True when no problem was found.
    pub healthy: bool,
    /// Number of entries checked.
    pub tools: usize,
    /// Problems, registry-wide first, then by tool name.
    pub problems: Vec<Problem>,
    /// Informational remarks that need no action (e.g. corrupt registries kept aside).
    pub notes: Vec<String>,
}

const RESCAN: &str = "run `atip scan` to update the registry";

fn registry_problem(check: Check, message: String, fix: &str) -> Problem {
    Problem {
        tool: None,
        check,
        message,
        fix: fix.into(),
    }
}

/// Errors of a registry document against `schemas/registry.schema.json` (through
/// [`crate::validate::check_bytes`]), as `"<line>:<column> <json pointer>: <message>"`.
pub(crate) fn schema_errors(bytes: &[u8]) -> Vec<String> {
    errors_of(
        bytes,
        Some(crate::validate::Kind::Registry),
        Some("registry.json"),
    )
}

/// Error-severity diagnostics of the validator, one line each.
fn errors_of(bytes: &[u8], kind: Option<crate::validate::Kind>, file: Option<&str>) -> Vec<String> {
    use crate::validate::{Severity, check_bytes};
    check_bytes(bytes, kind, file)
        .diagnostics
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| {
            let at = match (d.line, d.column) {
                (Some(l), Some(c)) => format!("{l}:{c} "),
                _ => String::new(),
            };
            let pointer = if d.pointer.is_empty() {
                "/"
            } else {
                &d.pointer
            };
            format!("{at}{pointer}: {}", d.message)
        })
        .collect()
}

/// Runs every check.
pub fn check(dirs: &Dirs) -> DoctorReport {
    let registry = dirs.registry_file();
    let mut report = DoctorReport {
        registry: registry.clone(),
        healthy: true,
        tools: 0,
        problems: Vec::new(),
        notes: notes(&dirs.data),
    };
    let bytes = match std::fs::read(&registry) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            report.problems.push(registry_problem(
                Check::RegistryMissing,
                format!("there is no registry at {} yet", registry.display()),
                "run `atip scan` to find the ATIP tools on PATH",
            ));
            report.healthy = false;
            return report;
        }
        Err(e) => {
            report.problems.push(registry_problem(
                Check::RegistryUnreadable,
                format!("failed to read {}: {e}", registry.display()),
                "check the file's permissions and that it is a regular file",
            ));
            report.healthy = false;
            return report;
        }
    };
    let value: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            report.problems.push(registry_problem(
                Check::RegistryCorrupt,
                format!("{} is not JSON: {e}", registry.display()),
                "run `atip scan`: it keeps the bad file aside and rebuilds the registry",
            ));
            report.healthy = false;
            return report;
        }
    };
    for err in schema_errors(&bytes) {
        report.problems.push(registry_problem(
            Check::RegistrySchema,
            format!("{} breaks its schema at {err}", registry.display()),
            RESCAN,
        ));
    }
    let index: Index = match serde_json::from_value(value) {
        Ok(i) => i,
        Err(e) => {
            report.problems.push(registry_problem(
                Check::RegistryCorrupt,
                format!(
                    "{} is not an ATIP index (format 2): {e}",
                    registry.display()
                ),
                "run `atip scan`: it keeps the bad file aside and rebuilds the registry",
            ));
            report.healthy = false;
            return report;
        }
    };
    report.tools = index.tools.len();
    let entries: Vec<(&String, &Entry)> = index.tools.iter().collect();
    let per_tool: Vec<Vec<Problem>> = entries
        .par_iter()
        .map(|(name, entry)| check_entry(dirs, name, entry))
        .collect();
    report.problems.extend(per_tool.into_iter().flatten());
    report.healthy = report.problems.is_empty();
    report
}

fn check_entry(dirs: &Dirs, name: &str, entry: &Entry) -> Vec<Problem> {
    let mut found = Vec::new();
    check_binary(entry, &mut |check, message, fix| {
        found.push((check, message, fix))
    });
    // A metadata path outside the data dir is already reported by the schema check; it
    // is never read.
    if let Ok(meta) = entry.metadata_file(dirs) {
        check_metadata_file(&meta, entry, &mut |check, message, fix| {
            found.push((check, message, fix))
        });
    }
    found
        .into_iter()
        .map(|(check, message, fix)| Problem {
            tool: Some(name.to_string()),
            check,
            message,
            fix,
        })
        .collect()
}

/// The tool's program: still there, an executable file, and the one scanned (its sha256,
/// or its stat when no hash was pinned).
fn check_binary(entry: &Entry, problem: &mut dyn FnMut(Check, String, String)) {
    let bin = &entry.path;
    match std::fs::metadata(bin) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => problem(
            Check::BinaryMissing,
            format!("{} is gone", bin.display()),
            format!("{RESCAN} (it drops the tool), or reinstall the tool"),
        ),
        Err(e) => problem(
            Check::BinaryUnreadable,
            format!("failed to inspect {}: {e}", bin.display()),
            "check the permissions of the file and its directories".into(),
        ),
        Ok(m) if !m.is_file() || m.permissions().mode() & 0o111 == 0 || !executable(bin) => {
            problem(
                Check::BinaryNotExecutable,
                format!("{} is not an executable file any more", bin.display()),
                format!("restore its execute permission (chmod +x), or {RESCAN}"),
            )
        }
        Ok(m) if entry.hash.is_none() => {
            // Pinned by its stat alone (metadata found by name, spec/registry.md).
            if entry.fingerprint != Some(super::FileStamp::of(&m)) {
                problem(
                    Check::BinaryChanged,
                    format!(
                        "{} changed since it was scanned: its size, times or inode differ from what the scan recorded (no sha256 was pinned)",
                        bin.display()
                    ),
                    format!("{RESCAN}: the tool's metadata may have changed with it"),
                );
            }
        }
        Ok(_) => match sha256_file(bin) {
            Ok(h) if Some(&h) == entry.hash.as_ref() => {}
            Ok(h) => problem(
                Check::BinaryChanged,
                format!(
                    "{} changed since it was scanned: sha256 is {h}, the registry says {}",
                    bin.display(),
                    entry.hash.as_deref().unwrap_or_default()
                ),
                format!("{RESCAN}: the tool's metadata may have changed with it"),
            ),
            Err(e) => problem(
                Check::BinaryUnreadable,
                format!("failed to hash {}: {e}", bin.display()),
                "check that the file is readable".into(),
            ),
        },
    }
}

/// The tool's stored metadata file: readable, named by its sha256, valid ATIP metadata.
fn check_metadata_file(meta: &Path, entry: &Entry, problem: &mut dyn FnMut(Check, String, String)) {
    match std::fs::read(meta) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => problem(
            Check::MetadataMissing,
            format!("metadata file {} is gone", meta.display()),
            "run `atip scan --refresh` to read the tool's metadata again".into(),
        ),
        Err(e) => problem(
            Check::MetadataUnreadable,
            format!("failed to read metadata file {}: {e}", meta.display()),
            "check the data dir's permissions".into(),
        ),
        Ok(bytes) => {
            let named = entry.metadata_hex().unwrap_or_default();
            if sha256_hex(&bytes) != named {
                problem(
                    Check::MetadataTampered,
                    format!(
                        "metadata file {} does not hash to its name: it was modified or damaged",
                        meta.display()
                    ),
                    "run `atip scan --refresh` to read the tool's metadata again".into(),
                );
            }
            let invalid = match Metadata::from_slice(&bytes) {
                Err(e) => Some(e.to_string()),
                Ok(_) => {
                    let errors = errors_of(&bytes, None, None);
                    errors.first().map(|first| match errors.len() {
                        1 => first.clone(),
                        n => format!("{first} (and {} more)", n - 1),
                    })
                }
            };
            if let Some(why) = invalid {
                problem(
                    Check::MetadataInvalid,
                    format!(
                        "metadata file {} is not valid ATIP metadata: {why}",
                        meta.display()
                    ),
                    "run `atip scan --refresh` to read the tool's metadata again".into(),
                );
            }
        }
    }
}

fn executable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// Remarks about leftovers in the data dir that need no action.
fn notes(data: &Path) -> Vec<String> {
    let mut corrupt = Vec::new();
    if let Ok(read) = std::fs::read_dir(data) {
        for item in read.flatten() {
            let name = item.file_name().to_string_lossy().into_owned();
            if name.starts_with("registry.json.corrupt-") {
                corrupt.push(name);
            }
        }
    }
    corrupt.sort();
    corrupt
        .into_iter()
        .map(|n| {
            format!(
                "{} is a corrupt registry kept aside by an earlier scan; delete it when you no longer need it",
                data.join(n).display()
            )
        })
        .collect()
}
