//! `atip lint`: rules that make valid ATIP metadata better for agents.
//!
//! Owns the lint pipeline for one document: validate first (an invalid document is
//! reported with validate's errors and not linted further), read the model, run the
//! rules of [`rules::LINT_RULES`], apply the `.atip-lint.json` config ([`config`]),
//! locate every finding (line, column, span: the validate locator), and, with `--fix`,
//! apply the mechanical fixes ([`fix`]), write the file atomically and lint it again so
//! the report shows what is left. Results have validate's [`FileReport`] shape, so the
//! validate printers (text with caret, JSON, SARIF, GitHub) print them.
//!
//! Must not print or choose exit codes.

pub mod config;
pub mod fix;
pub mod rules;

use crate::model::Metadata;
use crate::validate::run::{Source, read_inputs};
use crate::validate::{self, Diagnostic, FileReport, Input, Kind, Severity, Summary};
use config::{Config, Level};
use rules::Finding;

/// How to lint.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// How inputs are read (size cap, `--exec` timeout, forced kind).
    pub read: validate::Options,
    /// Check that the described binary is on PATH (`binary-missing`).
    pub check_binary: bool,
    /// Apply mechanical fixes to files.
    pub fix: bool,
    /// Render text output with colour (`Some`) while the source is at hand.
    pub render_text: Option<bool>,
}

/// One document's lint result.
#[derive(Debug)]
pub struct Linted {
    /// Findings, validate's report shape.
    pub report: FileReport,
    /// Fixes applied to the file (0 without `--fix`).
    pub fixed: usize,
}

/// Totals of a lint run: validate's summary plus fixes.
#[derive(Debug, Clone, Default)]
pub struct LintSummary {
    /// Documents, errors, warnings, missing inputs.
    pub summary: Summary,
    /// Fixes applied over all files.
    pub fixed: usize,
}

fn apply_config(findings: Vec<Finding>, config: &Config) -> Vec<Finding> {
    findings
        .into_iter()
        .filter_map(|mut f| {
            let default = f.diagnostic.severity;
            match config.level(&f.diagnostic.rule, default) {
                Level::Off => None,
                Level::On(s) => {
                    f.diagnostic.severity = s;
                    Some(f)
                }
            }
        })
        .collect()
}

/// The text of a valid document (after a BOM), for locating findings.
fn text_of(bytes: &[u8]) -> &str {
    let bytes = bytes.strip_prefix(validate::parse::BOM).unwrap_or(bytes);
    std::str::from_utf8(bytes).unwrap_or("")
}

/// Lints one document's bytes. Returns the findings (located) and the fixes they offer.
pub fn lint_bytes(
    bytes: &[u8],
    kind: Option<Kind>,
    file_name: Option<&str>,
    config: &Config,
    check_binary: bool,
) -> (Option<Kind>, Vec<Finding>, Vec<Diagnostic>) {
    let checked = validate::check_with(bytes, kind, file_name, true);
    if !checked.is_valid() {
        let errors = checked
            .diagnostics
            .into_iter()
            .filter(|d| d.severity == Severity::Error)
            .collect();
        return (checked.kind, Vec::new(), errors);
    }
    let kind = checked.kind;
    if !matches!(kind, Some(Kind::Metadata | Kind::Shim)) {
        return (kind, Vec::new(), Vec::new());
    }
    let Some(value) = checked.value else {
        return (kind, Vec::new(), Vec::new());
    };
    let meta = match Metadata::from_value(value) {
        Ok(m) => m,
        Err(e) => {
            // The schema accepted it, the model did not: report it rather than guess.
            let d = Diagnostic::new("schema", "", format!("cannot read the document: {e}"));
            return (kind, Vec::new(), vec![d]);
        }
    };
    let mut findings = rules::check(&meta, kind.unwrap_or(Kind::Metadata), config);
    if check_binary && let Some(name) = meta.tool_name() {
        let binary = meta
            .binary
            .as_ref()
            .and_then(|b| b.name.as_deref())
            .unwrap_or(name);
        if which::which(binary).is_err() {
            let at = if meta.binary.as_ref().is_some_and(|b| b.name.is_some()) {
                "/binary/name"
            } else {
                "/name"
            };
            findings.push(rules::finding(
                "binary-missing",
                at,
                format!("`{binary}` is not on PATH"),
            ));
        }
    }
    let mut findings = apply_config(findings, config);
    let mut diags: Vec<Diagnostic> = findings.iter().map(|f| f.diagnostic.clone()).collect();
    validate::locate::resolve(text_of(bytes), 0, &mut diags);
    for (f, d) in findings.iter_mut().zip(diags) {
        f.diagnostic = d;
    }
    findings.sort_by_key(|f| {
        (
            f.diagnostic.line.is_none(),
            f.diagnostic.line,
            f.diagnostic.column,
        )
    });
    (kind, findings, Vec::new())
}

fn report(path: String, kind: Option<Kind>, diagnostics: Vec<Diagnostic>) -> FileReport {
    let valid = !diagnostics.iter().any(|d| d.severity == Severity::Error);
    FileReport {
        path,
        kind,
        valid,
        diagnostics,
        missing: false,
        source: None,
        rendered: None,
    }
}

/// `--agent` contract failures as `agent-contract` findings.
fn contract_findings(contract: &[Diagnostic], config: &Config) -> Vec<Finding> {
    let findings = contract
        .iter()
        .map(|d| {
            let mut f = rules::finding("agent-contract", "", d.message.clone());
            f.diagnostic.line = d.line;
            f.diagnostic.column = d.column;
            f
        })
        .collect();
    apply_config(findings, config)
}

fn lint_source(source: Source, config: &Config, opts: &Options) -> Result<Linted, FileReport> {
    let file_name = source
        .file
        .as_ref()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .map(str::to_string);
    let (kind, mut findings, errors) = lint_bytes(
        &source.bytes,
        opts.read.kind,
        file_name.as_deref(),
        config,
        opts.check_binary,
    );
    let mut bytes = source.bytes;
    let mut fixed = 0;
    if opts.fix
        && errors.is_empty()
        && let Some(path) = &source.file
        && findings.iter().any(|f| f.fix.is_some())
    {
        let fixes: Vec<fix::Fix> = findings.iter().filter_map(|f| f.fix.clone()).collect();
        let (text, count) = fixed_text(text_of(&bytes), &fixes);
        fixed = count;
        if fixed > 0 {
            crate::atomic::write_atomic(path, text.as_bytes(), crate::atomic::Options::SHARED)
                .map_err(|e| {
                    let mut r = report(
                        source.path.clone(),
                        kind,
                        vec![Diagnostic::new(
                            "input-unreadable",
                            "",
                            format!("failed to write the fixed file {}: {e}", path.display()),
                        )],
                    );
                    r.missing = true;
                    r
                })?;
            bytes = text.into_bytes();
            let again = lint_bytes(
                &bytes,
                opts.read.kind,
                file_name.as_deref(),
                config,
                opts.check_binary,
            );
            findings = again.1;
        }
    }
    let mut diagnostics: Vec<Diagnostic> = contract_findings(&source.contract, config)
        .into_iter()
        .map(|f| f.diagnostic)
        .collect();
    diagnostics.extend(errors);
    diagnostics.extend(findings.into_iter().map(|f| f.diagnostic));
    let mut r = report(source.path, kind, diagnostics);
    if let Some(color) = opts.render_text
        && !r.diagnostics.is_empty()
    {
        r.rendered = Some(validate::render::text_with(&r, Some(&bytes), color));
    }
    Ok(Linted { report: r, fixed })
}

/// The fixed text: edited in place so the author's layout survives; re-serialised (2-space
/// indent) only if an in-place edit could not be placed or would not give the same
/// document as applying the fixes to the parsed value.
fn fixed_text(original: &str, fixes: &[fix::Fix]) -> (String, usize) {
    let mut value: serde_json::Value =
        serde_json::from_str(original).expect("a valid document parses");
    let count = fix::apply(&mut value, fixes);
    if let Some((text, n)) = fix::apply_to_text(original, fixes)
        && n == count
        && serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .as_ref()
            == Some(&value)
    {
        return (text, n);
    }
    let mut text = serde_json::to_string_pretty(&value).expect("a value serializes");
    text.push('\n');
    (text, count)
}

/// Lints every input in order, calling `emit` for each document; returns the totals.
/// `config_for` picks the config of each input (the CLI uses one config for all).
pub fn lint_inputs(
    inputs: &[Input],
    config: &Config,
    opts: &Options,
    mut emit: impl FnMut(&Linted),
) -> LintSummary {
    let mut totals = LintSummary::default();
    read_inputs(inputs, &opts.read, |source| {
        let linted = match source {
            Ok(source) => match lint_source(source, config, opts) {
                Ok(l) => l,
                Err(r) => Linted {
                    report: r,
                    fixed: 0,
                },
            },
            Err(mut r) => {
                // Validate's input failures keep their rule ids; `--exec` contract
                // failures become `agent-contract`.
                let contract: Vec<Diagnostic> = r
                    .diagnostics
                    .iter()
                    .filter(|d| d.rule.starts_with("agent-") && d.rule != "agent-spawn")
                    .cloned()
                    .collect();
                if !contract.is_empty() {
                    r.diagnostics = contract_findings(&contract, config)
                        .into_iter()
                        .map(|f| f.diagnostic)
                        .collect();
                    r.valid = !r.diagnostics.iter().any(|d| d.severity == Severity::Error);
                }
                if let Some(color) = opts.render_text {
                    r.rendered = Some(validate::render::text(&r, color));
                }
                Linted {
                    report: r,
                    fixed: 0,
                }
            }
        };
        totals.add(&linted);
        emit(&linted);
    });
    totals
}

/// Why a registered document could not be linted (said in its `input-unreadable`
/// finding).
#[derive(Debug, thiserror::Error)]
enum RegisteredRead {
    #[error(transparent)]
    Registry(crate::registry::RegistryError),
    #[error("{size} bytes, more than --max-size {max}")]
    TooLarge { size: usize, max: u64 },
}

/// Lints every document the registry holds (`atip lint --registry`), in tool-name
/// order. Each is read as the registry reads it (its hash checked against the entry) and
/// reported as `NAME (tools/HEX.json)`; `--fix` never rewrites them (the files are named
/// by their content), and the content-addressed shim rule does not read their names. An
/// unreadable, oversized or changed document is a failed report.
pub fn lint_registry(
    dirs: &crate::dirs::Dirs,
    config: &Config,
    opts: &Options,
    mut emit: impl FnMut(&Linted),
) -> Result<LintSummary, crate::output::AtipError> {
    let entries = crate::compile::source::registry_entries(dirs, None)?;
    let mut totals = LintSummary::default();
    for (name, entry) in entries {
        let shown = format!("{name} ({})", entry.metadata);
        let read = crate::registry::Index::read_document(dirs, &entry)
            .map_err(RegisteredRead::Registry)
            .and_then(|bytes| {
                if bytes.len() as u64 > opts.read.max_size {
                    Err(RegisteredRead::TooLarge {
                        size: bytes.len(),
                        max: opts.read.max_size,
                    })
                } else {
                    Ok(bytes)
                }
            });
        let linted = match read {
            Ok(bytes) => {
                let source = Source {
                    path: shown,
                    file: None,
                    bytes,
                    contract: Vec::new(),
                };
                let no_fix = Options {
                    fix: false,
                    ..opts.clone()
                };
                match lint_source(source, config, &no_fix) {
                    Ok(l) => l,
                    Err(report) => Linted { report, fixed: 0 },
                }
            }
            Err(why) => {
                let mut report = FileReport {
                    path: shown.clone(),
                    kind: None,
                    valid: false,
                    diagnostics: vec![Diagnostic::new(
                        "input-unreadable",
                        "",
                        format!("cannot read the registered document of {shown}: {why}"),
                    )],
                    missing: false,
                    source: None,
                    rendered: None,
                };
                if let Some(color) = opts.render_text {
                    report.rendered = Some(validate::render::text(&report, color));
                }
                Linted { report, fixed: 0 }
            }
        };
        totals.add(&linted);
        emit(&linted);
    }
    Ok(totals)
}

impl LintSummary {
    /// Adds another run's totals (files given, then `--registry`).
    pub fn merge(&mut self, o: &LintSummary) {
        let (a, b) = (&mut self.summary, &o.summary);
        a.files += b.files;
        a.valid += b.valid;
        a.invalid += b.invalid;
        a.errors += b.errors;
        a.warnings += b.warnings;
        a.missing += b.missing;
        self.fixed += o.fixed;
    }

    fn add(&mut self, l: &Linted) {
        let r = &l.report;
        self.summary.files += 1;
        if r.valid {
            self.summary.valid += 1;
        } else {
            self.summary.invalid += 1;
        }
        self.summary.errors += r.count(Severity::Error);
        self.summary.warnings += r.count(Severity::Warning);
        if r.missing {
            self.summary.missing += 1;
        }
        self.fixed += l.fixed;
    }
}
