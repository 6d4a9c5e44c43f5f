//! The scan report: what `atip scan` prints, as text or as the JSON object documented in
//! `spec/scan.md`. Key order is the field order here and never changes within a
//! report version.
//!
//! Must not decide anything: it only records what the scan did.

use super::ProbeMode;
use super::paths::{DirSkip, FileSkip};
use crate::registry::Source;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The JSON report's format version.
pub const REPORT_VERSION: u32 = 1;

/// Everything `atip scan` did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanReport {
    /// Always [`REPORT_VERSION`].
    pub report_version: u32,
    /// Whether this was a `--dry-run` (nothing probed, nothing written).
    pub dry_run: bool,
    /// Probe strategy used.
    pub probe: ProbeMode,
    /// Probe timeout, e.g. `2s`.
    pub timeout: String,
    /// Where the registry is and whether it was written.
    pub registry: RegistryInfo,
    /// Counts.
    pub summary: Summary,
    /// Registered tools (what this scan found), sorted by name.
    pub tools: Vec<ToolReport>,
    /// Names removed from the registry.
    pub removed: Vec<String>,
    /// Executables whose probe failed, sorted by name.
    pub failed: Vec<FailedTool>,
    /// Metadata sources (or parts of them) that could not be read: the entries they
    /// provided before are kept, and the scan exits 1.
    pub source_failures: Vec<FailedSource>,
    /// Remote registries consulted (`registries.json`): requests, cache use, refusals.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remote: Vec<crate::remote::sync::RegistrySync>,
    /// What was not scanned or probed, and why.
    pub skipped: Skipped,
    /// Shim and pattern files.
    pub shims: ShimSummary,
    /// With `--dry-run`: the executables that would be probed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_probe: Option<Vec<PlannedProbe>>,
    /// With `--explain NAME`: how that name was decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Explanation>,
    /// Warnings about the scan as a whole.
    pub warnings: Vec<String>,
    /// How to widen or fix the scan.
    pub hints: Vec<String>,
}

/// Registry location and write result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistryInfo {
    /// `registry.json`.
    pub path: PathBuf,
    /// Whether it was replaced (false when nothing changed, and in a dry run).
    pub written: bool,
    /// Where a corrupt registry was moved before it was rebuilt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrupt_backup: Option<PathBuf>,
}

/// Counts of the report.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Directories scanned.
    pub dirs: usize,
    /// Executables considered (files, after name resolution and dedupe).
    pub executables: usize,
    /// Names considered: every executable's names, links to one file included.
    pub names: usize,
    /// Executables run with `--agent` by this scan.
    pub probed: usize,
    /// Framework apps whose manifest this scan converted (by running their interpreter).
    pub converted: usize,
    /// Answers reused from the cache (unchanged files).
    pub cached: usize,
    /// Tools new to the registry.
    pub new: usize,
    /// Tools whose entry changed.
    pub updated: usize,
    /// Tools whose entry stayed the same.
    pub unchanged: usize,
    /// Entries kept from the previous scan because their source failed.
    pub kept: usize,
    /// Tools removed from the registry.
    pub removed: usize,
    /// Executables whose probe failed.
    pub failed: usize,
    /// Directories and files skipped with a reason (see `skipped`).
    pub skipped: usize,
    /// Executables not probed because they show no sign of supporting ATIP.
    pub no_sign: usize,
    /// Executables per evidence class: what their bytes show (`flag-key`, `flag-word`,
    /// `binary`, `script`, `none`), or why they were not read (`not-read`,
    /// `allowlisted`, `unreadable`).
    pub evidence: BTreeMap<String, usize>,
    /// Names per winning source class (`native`, `installed`, `override`, `converted`,
    /// `shim-hash`, `shim`, `inferred`) and `none`: names no source describes.
    pub sources: BTreeMap<String, usize>,
}

/// A metadata source that could not be read.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedSource {
    /// The source (`shims`, `installed`, …).
    pub source: String,
    /// What failed, naming the path.
    pub message: String,
}

/// `--explain NAME`: how one name was decided.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The name asked about.
    pub name: String,
    /// Its executable, when it is on the scanned PATH.
    pub path: Option<PathBuf>,
    /// Every piece of evidence looked at, in the order the scan looked.
    pub evidence: Vec<String>,
    /// Every candidate document, the winner first.
    pub candidates: Vec<ExplainedCandidate>,
    /// The decision, in one line.
    pub outcome: String,
}

/// One candidate in an explanation.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainedCandidate {
    /// Source class.
    pub source: Source,
    /// Its file, for file-backed sources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<PathBuf>,
    /// Found by the file's content hash.
    pub by_hash: bool,
    /// Trust it would be recorded with.
    pub trust: String,
    /// Whether it won.
    pub won: bool,
    /// Why it lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl Explanation {
    /// Text form of an explanation.
    pub fn to_text(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(t, "{}:", self.name);
        for e in &self.evidence {
            let _ = writeln!(t, "  {e}");
        }
        for c in &self.candidates {
            let source = serde_json::to_value(c.source)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let origin = c
                .origin
                .as_ref()
                .map(|p| format!(" {}", p.display()))
                .unwrap_or_default();
            match &c.why {
                None => {
                    let _ = writeln!(t, "  candidate {source}{origin}: wins");
                }
                Some(w) => {
                    let _ = writeln!(t, "  candidate {source}{origin}: loses, {w}");
                }
            }
        }
        let _ = writeln!(t, "  => {}", self.outcome);
        t
    }
}

/// How a registered tool compares with the registry before the scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolStatus {
    /// Not in the registry before.
    New,
    /// In the registry with different contents.
    Updated,
    /// The same as before.
    Unchanged,
    /// Would be registered (dry run).
    Planned,
    /// Kept as it was: the source that provided it failed this scan.
    Kept,
}

/// One registered tool.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolReport {
    /// Registry key: the executable's name.
    pub name: String,
    /// Executable.
    pub path: PathBuf,
    /// Winning source.
    pub source: Source,
    /// The file the metadata came from, for shim and override sources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shim: Option<PathBuf>,
    /// Trust source recorded.
    pub trust: String,
    /// New, updated or unchanged.
    pub status: ToolStatus,
    /// Pattern files merged into its metadata.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<PathBuf>,
    /// Warnings (e.g. the metadata names itself differently).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Why a probe gave nothing usable.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[rkyv(compare(PartialEq))]
#[serde(rename_all = "kebab-case")]
pub enum FailReason {
    /// Ran past the timeout and was killed.
    Timeout,
    /// Exited with a non-zero status.
    ExitStatus,
    /// Died of a signal.
    Signal,
    /// Printed more than the stdout cap.
    Oversize,
    /// Printed nothing on stdout.
    NoOutput,
    /// stdout was not one JSON document.
    NotJson,
    /// JSON that is not valid ATIP metadata.
    Invalid,
    /// Could not be started.
    SpawnFailed,
    /// Could not be read or hashed.
    Unreadable,
}

impl FailReason {
    /// The kebab-case name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailReason::Timeout => "timeout",
            FailReason::ExitStatus => "exit-status",
            FailReason::Signal => "signal",
            FailReason::Oversize => "oversize",
            FailReason::NoOutput => "no-output",
            FailReason::NotJson => "not-json",
            FailReason::Invalid => "invalid",
            FailReason::SpawnFailed => "spawn-failed",
            FailReason::Unreadable => "unreadable",
        }
    }
}

/// A validator finding, as kept in the report and the cache.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct ReportDiagnostic {
    /// `error` or `warning`.
    pub severity: String,
    /// Rule id.
    pub rule: String,
    /// JSON pointer.
    pub pointer: String,
    /// 1-based line, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// A stored finding compared in place with a rescan's (the scan cache's
/// `OldCache::holds`): written out because rkyv's derive does not compare its archived
/// `usize` with a `usize`. The pattern names every field, so a new one cannot be missed.
impl PartialEq<ReportDiagnostic> for ArchivedReportDiagnostic {
    fn eq(&self, other: &ReportDiagnostic) -> bool {
        let ReportDiagnostic {
            severity,
            rule,
            pointer,
            line,
            column,
            message,
        } = other;
        let same =
            |a: &rkyv::option::ArchivedOption<rkyv::primitive::ArchivedUsize>,
             b: &Option<usize>| { a.as_ref().map(|n| n.to_native() as usize) == *b };
        self.severity == *severity
            && self.rule == *rule
            && self.pointer == *pointer
            && same(&self.line, line)
            && same(&self.column, column)
            && self.message == *message
    }
}

impl From<&crate::validate::Diagnostic> for ReportDiagnostic {
    fn from(d: &crate::validate::Diagnostic) -> Self {
        ReportDiagnostic {
            severity: d.severity.as_str().into(),
            rule: d.rule.clone(),
            pointer: d.pointer.clone(),
            line: d.line,
            column: d.column,
            message: d.message.clone(),
        }
    }
}

/// An executable whose probe failed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedTool {
    /// Executable name.
    pub name: String,
    /// Executable.
    pub path: PathBuf,
    /// Why.
    pub reason: FailReason,
    /// Details.
    pub message: String,
    /// Whether this is the cached outcome of an earlier scan (the file is unchanged;
    /// `--refresh` probes it again).
    pub cached: bool,
    /// Validator findings for an invalid answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<ReportDiagnostic>,
}

/// What was skipped.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    /// PATH entries not scanned.
    pub dirs: Vec<DirSkip>,
    /// Files not considered.
    pub files: Vec<FileSkip>,
    /// Executables not probed for lack of a sign (`--probe auto`) or of a `--help`
    /// mention (`--probe help`); only counted, they are usually most of PATH.
    pub no_sign: usize,
    /// Count per reason over `dirs`, `files` and `noSign`.
    pub counts: BTreeMap<String, usize>,
}

/// A shim or pattern file that was refused.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RejectedFile {
    /// The file.
    pub path: PathBuf,
    /// Why, in one line.
    pub message: String,
    /// Validator findings.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<ReportDiagnostic>,
}

/// Shim and pattern files.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShimSummary {
    /// Shim directories looked at, lowest precedence first.
    pub dirs: Vec<PathBuf>,
    /// Valid shim files found.
    pub valid: usize,
    /// Shims that won for some tool.
    pub applied: usize,
    /// Shim files refused.
    pub rejected: Vec<RejectedFile>,
    /// Valid pattern files found.
    pub pattern_files: usize,
    /// Pattern files refused.
    pub rejected_patterns: Vec<RejectedFile>,
}

/// Why an executable would be probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeWhy {
    /// Its bytes show an ATIP sign.
    Sign,
    /// It is on the config allowlist.
    Allowlist,
    /// `--probe help`: its `--help` would be checked first.
    Help,
    /// `--probe all`.
    All,
    /// A recognised framework app (Tooli) the user allowed: its interpreter would print
    /// the manifest atip converts.
    Convert,
}

/// A probe a dry run would make.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedProbe {
    /// Executable name.
    pub name: String,
    /// Executable.
    pub path: PathBuf,
    /// Why it would be probed.
    pub why: ProbeWhy,
}
