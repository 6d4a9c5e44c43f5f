//! Probing: running `TOOL --agent` (and, for `--probe help`, `TOOL --help`) through
//! [`crate::process::run`] and judging the answer.
//!
//! An answer counts only when the tool exits 0 within the timeout and stdout holds one
//! JSON document (at most the probe cap) that validates as ATIP metadata. Anything
//! else is a [`ProbeFailure`] with a reason. Must not spawn anything itself, and must
//! not use anything from the answer as a file name.

use super::report::{FailReason, ReportDiagnostic};
use crate::process::{self, Exit, Spawn};
use crate::validate::{Kind, Severity, check_bytes, check_with};
use std::path::Path;
use std::time::Duration;

/// A flag that, once set, kills running probes and stops new ones.
pub use crate::process::Cancel;

/// How a probe's child runs: the scan's cancel flag and the run's environment, which
/// the child inherits (its allowlisted variables).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Child<'a> {
    /// Set to kill the child early.
    pub cancel: Option<&'a Cancel>,
    /// The environment the child's variables come from.
    pub env: &'a crate::env::Env,
}

/// Bytes of `--help` output kept when looking for `--agent` in it.
pub const HELP_STDOUT_CAP: usize = 256 << 10;

/// A usable answer.
#[derive(Debug, Clone)]
pub struct ProbeAnswer {
    /// stdout, byte for byte.
    pub document: Vec<u8>,
    /// Warnings (validator warnings, a differing `name`).
    pub warnings: Vec<String>,
    /// `trust.source`, when declared.
    pub trust: Option<String>,
    /// What the registry's index records of `document`, from the model judged here:
    /// composing the same bytes later takes it instead of parsing them again (a 1 MB
    /// answer costs ~9 ms a parse, on the scan's critical path).
    pub summary: crate::registry::MetaSummary,
}

/// Why a probe gave nothing usable.
#[derive(Debug, Clone)]
pub struct ProbeFailure {
    /// The reason class.
    pub reason: FailReason,
    /// Details.
    pub message: String,
    /// Validator findings of an invalid answer.
    pub diagnostics: Vec<ReportDiagnostic>,
}

impl ProbeFailure {
    pub(crate) fn new(reason: FailReason, message: impl Into<String>) -> Self {
        ProbeFailure {
            reason,
            message: message.into(),
            diagnostics: Vec::new(),
        }
    }
}

pub(crate) fn stderr_tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let line: String = line.chars().take(160).collect();
    if line.is_empty() {
        String::new()
    } else {
        format!(" (stderr: {line})")
    }
}

/// [`run_checked`] with the probe's stdout cap, where only exit status 0 counts: a
/// non-zero status is [`FailReason::ExitStatus`], `what` (e.g. "`--agent`") naming the run.
pub(crate) fn run_to_success(
    path: &Path,
    args: &[&str],
    timeout: Duration,
    what: &str,
    child: Child<'_>,
) -> Result<process::Outcome, ProbeFailure> {
    let out = run_checked(
        path,
        args,
        timeout,
        process::DEFAULT_PROBE_STDOUT_CAP,
        child,
    )?;
    if let Exit::Code(code) = out.exit
        && code != 0
    {
        return Err(ProbeFailure::new(
            FailReason::ExitStatus,
            format!(
                "{what} exited with status {code}{}",
                stderr_tail(&out.stderr)
            ),
        ));
    }
    Ok(out)
}

/// Runs `path args…` under the process contract; a timeout, a kill, a spawn failure or
/// an output flood is a [`ProbeFailure`], any exit status is the caller's to judge.
pub(crate) fn run_checked(
    path: &Path,
    args: &[&str],
    timeout: Duration,
    cap: usize,
    child: Child<'_>,
) -> Result<process::Outcome, ProbeFailure> {
    let mut spawn = Spawn::new(path, args.iter().copied(), timeout);
    spawn.stdout_cap = cap;
    spawn.cancel = child.cancel.cloned();
    spawn.inherit = child.env.clone();
    let out = process::run(&spawn)
        .map_err(|e| ProbeFailure::new(FailReason::SpawnFailed, e.to_string()))?;
    let killed = matches!(out.exit, Exit::TimedOut | Exit::Cancelled);
    if out.stdout_truncated && cap == process::DEFAULT_PROBE_STDOUT_CAP {
        // A flood is the root cause even when the flooder was then killed at the timeout.
        return Err(ProbeFailure::new(
            FailReason::Oversize,
            format!(
                "stdout exceeded the {} MiB cap; the rest was discarded{}",
                cap >> 20,
                if killed {
                    " and the tool was killed at the timeout"
                } else {
                    ""
                }
            ),
        ));
    }
    match out.exit {
        Exit::TimedOut | Exit::Cancelled => Err(ProbeFailure::new(
            FailReason::Timeout,
            format!(
                "no answer within {}; the process group was killed",
                crate::units::format_duration(timeout)
            ),
        )),
        Exit::Signal(sig) => Err(ProbeFailure::new(
            FailReason::Signal,
            format!("killed by signal {sig}{}", stderr_tail(&out.stderr)),
        )),
        _ => Ok(out),
    }
}

/// Runs `TOOL --agent` and judges the answer. `name` is the executable's name, the
/// registry key; a metadata `name` that differs is a warning.
pub(crate) fn probe_agent(
    path: &Path,
    name: &str,
    timeout: Duration,
    child: Child<'_>,
) -> Result<ProbeAnswer, ProbeFailure> {
    let out = run_to_success(path, &["--agent"], timeout, "`--agent`", child)?;
    if out.stdout.iter().all(u8::is_ascii_whitespace) {
        return Err(ProbeFailure::new(
            FailReason::NoOutput,
            format!(
                "`--agent` printed nothing on stdout{}",
                stderr_tail(&out.stderr)
            ),
        ));
    }
    judge(out.stdout, name)
}

/// Judges a metadata document a tool gave (or atip converted for it): one JSON
/// document, valid ATIP metadata; a `name` other than the executable's is a warning.
///
/// A clean document (nearly every answer) is recognised on the validator's light path,
/// without a `serde_json::Value` of it: for a 1 MB answer that tree was several MB held
/// beside the model parsed below, on each probe thread. Only a document with findings
/// is checked again in full, for its diagnostics.
pub(crate) fn judge(document: Vec<u8>, name: &str) -> Result<ProbeAnswer, ProbeFailure> {
    let quick = check_with(&document, Some(Kind::Metadata), None, false);
    let mut warnings = if quick.diagnostics.is_empty() {
        Vec::new()
    } else {
        findings(&document)?
    };
    let model = match crate::model::Metadata::from_slice(&document) {
        Ok(m) => m,
        Err(e) => return Err(ProbeFailure::new(FailReason::Invalid, e.to_string())),
    };
    match model.name.as_deref() {
        Some(n) if n != name => warnings.push(format!(
            "the metadata names itself {n:?}; it is registered under its executable name {name:?}"
        )),
        _ => {}
    }
    let summary = crate::registry::MetaSummary::of(&model);
    let trust = model.trust.and_then(|t| t.source);
    Ok(ProbeAnswer {
        document,
        warnings,
        trust,
        summary,
    })
}

/// The full validation of a document with findings: a failure when it is not JSON or
/// has errors, else its warnings.
fn findings(document: &[u8]) -> Result<Vec<String>, ProbeFailure> {
    let checked = check_bytes(document, Some(Kind::Metadata), None);
    if checked.value.is_none() {
        let first = checked
            .diagnostics
            .first()
            .map(|d| d.message.clone())
            .unwrap_or_else(|| "not JSON".into());
        let mut f = ProbeFailure::new(
            FailReason::NotJson,
            format!("stdout is not one JSON document: {first}"),
        );
        f.diagnostics = checked
            .diagnostics
            .iter()
            .map(ReportDiagnostic::from)
            .collect();
        return Err(f);
    }
    if !checked.is_valid() {
        let errors: Vec<ReportDiagnostic> = checked
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(ReportDiagnostic::from)
            .collect();
        let mut f = ProbeFailure::new(
            FailReason::Invalid,
            format!(
                "the answer is not valid ATIP metadata ({} error(s); first: {})",
                errors.len(),
                errors.first().map(|d| d.message.as_str()).unwrap_or("")
            ),
        );
        f.diagnostics = errors;
        return Err(f);
    }
    Ok(checked
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .map(|d| format!("{} at {:?}: {}", d.rule, d.pointer, d.message))
        .collect())
}

/// `--probe help`'s first phase: whether `TOOL --help` (stdout or stderr, any exit
/// status) mentions `--agent`.
pub(crate) fn help_mentions_agent(
    path: &Path,
    timeout: Duration,
    child: Child<'_>,
) -> Result<bool, ProbeFailure> {
    let out = run_checked(path, &["--help"], timeout, HELP_STDOUT_CAP, child)?;
    let finder = memchr_find(b"--agent");
    Ok(finder(&out.stdout) || finder(&out.stderr))
}

fn memchr_find(needle: &'static [u8]) -> impl Fn(&[u8]) -> bool {
    move |hay: &[u8]| hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(doc: &str, name: &str) -> Result<ProbeAnswer, ProbeFailure> {
        judge(doc.as_bytes().to_vec(), name)
    }

    const CLEAN: &str = r#"{"atip": {"version": "0.6", "features": ["trust-v1"]}, "name": "t",
        "version": "1.0", "description": "A tool.", "trust": {"source": "native"}}"#;

    #[test]
    fn a_clean_answer_keeps_its_bytes_and_trust_without_warnings() {
        let a = answer(CLEAN, "t").unwrap();
        assert_eq!(a.document, CLEAN.as_bytes());
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        assert_eq!(a.trust.as_deref(), Some("native"));
    }

    #[test]
    fn the_answers_summary_is_the_one_its_bytes_give_when_composed() {
        let doc = r#"{"atip": {"version": "0.6"}, "name": "t", "version": "2.1",
            "description": "A tool.", "commands": {"rm": {"description": "Removes.",
            "effects": {"destructive": true}, "commands": {"all": {"description": "All."}}}}}"#;
        let a = answer(doc, "t").unwrap();
        let model = crate::model::Metadata::from_slice(doc.as_bytes()).unwrap();
        assert_eq!(a.summary, crate::registry::MetaSummary::of(&model));
        assert_eq!(a.summary.commands, 2);
        assert_eq!(a.summary.version.as_deref(), Some("2.1"));
    }

    #[test]
    fn a_clean_answer_under_another_name_is_a_warning() {
        let a = answer(CLEAN, "u").unwrap();
        assert_eq!(a.warnings.len(), 1);
        assert!(
            a.warnings[0].contains("names itself \"t\""),
            "{:?}",
            a.warnings
        );
    }

    #[test]
    fn findings_that_are_warnings_come_first_then_the_name() {
        let doc = r#"{"atip": "0.4", "name": "t", "version": "1.0", "description": "A tool."}"#;
        let a = answer(doc, "u").unwrap();
        assert_eq!(a.warnings.len(), 2, "{:?}", a.warnings);
        assert!(
            a.warnings[0].starts_with("legacy-version-form"),
            "{:?}",
            a.warnings
        );
        assert!(a.warnings[1].contains("names itself"), "{:?}", a.warnings);
        assert_eq!(a.trust, None);
    }

    #[test]
    fn not_json_and_invalid_answers_fail_with_their_reason() {
        let f = answer("{\"atip\": ", "t").err().unwrap();
        assert_eq!(f.reason, FailReason::NotJson);
        assert!(!f.diagnostics.is_empty());
        let f = answer(r#"{"atip": {"version": "0.6"}, "name": "t"}"#, "t")
            .err()
            .unwrap();
        assert_eq!(f.reason, FailReason::Invalid);
        assert!(
            f.message.contains("not valid ATIP metadata"),
            "{}",
            f.message
        );
    }
}
