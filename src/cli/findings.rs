//! The text `atip validate` and `atip lint` print for a person (spec/cli.md, terminal
//! output): the totals first, then one line per finding (where, severity, rule, what)
//! fitting the terminal, at most [`SHOWN`] of them; `--verbose` shows every finding in
//! full, with its source line, a caret under the value and the hint. JSON, SARIF and
//! GitHub output are the library's printers, unchanged.

use crate::Ctx;
use atip::output::term::{self, Cell, Paint, Style, Table};
use atip::output::{AtipError, OutputFormat};
use atip::validate::render::Format;
use atip::validate::run::{FileReport, Summary};
use atip::validate::{Input, Severity};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The inputs of `validate` and `lint`: the paths (`-` is standard input, at most once),
/// then `--exec TOOL` with its arguments.
pub fn inputs(
    paths: &[PathBuf],
    exec: Option<&OsString>,
    exec_arg: &[OsString],
) -> Result<Vec<Input>, AtipError> {
    let mut inputs: Vec<Input> = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            if inputs.iter().any(|i| matches!(i, Input::Stdin)) {
                return Err(AtipError::usage(
                    "`-` (standard input) is given more than once",
                ));
            }
            inputs.push(Input::Stdin);
        } else {
            inputs.push(Input::Path(p.clone()));
        }
    }
    if let Some(program) = exec {
        inputs.push(Input::Exec {
            program: program.clone(),
            args: exec_arg.to_vec(),
        });
    }
    Ok(inputs)
}

/// The findings printer's format for `--output` of `atip COMMAND` (markdown is not one
/// they print).
pub fn format(ctx: &Ctx, command: &str) -> Result<Format, AtipError> {
    Ok(match ctx.output {
        OutputFormat::Json => Format::Json,
        OutputFormat::Jsonl => Format::Jsonl,
        OutputFormat::Sarif => Format::Sarif,
        OutputFormat::Github => Format::Github,
        OutputFormat::Markdown => {
            return Err(AtipError::usage(format!(
                "atip {command} prints text, json, jsonl, sarif or github, not markdown"
            )));
        }
        OutputFormat::Text | OutputFormat::Auto => Format::Text {
            color: ctx.out.stdout_color(),
        },
    })
}

/// Findings shown as lines without `--verbose`; the rest are counted.
const SHOWN: usize = 20;

/// The findings of a run as they arrive, kept small: without `verbose` only the first
/// [`SHOWN`] lines; with it, each document's rendered findings.
pub struct Findings {
    verbose: bool,
    rows: Vec<Row>,
    more: usize,
    rendered: String,
    /// How many findings each rule made, in order of first appearance.
    by_rule: Vec<(String, usize)>,
}

struct Row {
    path: String,
    at: String,
    severity: Severity,
    rule: String,
    message: String,
}

impl Findings {
    /// `verbose`: keep every finding's full text (the reports must carry `rendered`).
    pub fn new(verbose: bool) -> Findings {
        Findings {
            verbose,
            rows: Vec::new(),
            more: 0,
            rendered: String::new(),
            by_rule: Vec::new(),
        }
    }

    /// Takes one document's findings.
    pub fn add(&mut self, report: &FileReport) {
        for d in &report.diagnostics {
            match self.by_rule.iter_mut().find(|(r, _)| *r == d.rule) {
                Some((_, n)) => *n += 1,
                None => self.by_rule.push((d.rule.clone(), 1)),
            }
        }
        if self.verbose {
            if let Some(r) = &report.rendered {
                self.rendered.push_str(r);
            } else if !report.diagnostics.is_empty() {
                self.rendered
                    .push_str(&atip::validate::render::text(report, false));
            }
            return;
        }
        for d in &report.diagnostics {
            if self.rows.len() >= SHOWN {
                self.more += 1;
                continue;
            }
            let at = match (d.line, d.column) {
                (Some(l), Some(c)) => format!("{l}:{c}"),
                (Some(l), None) => l.to_string(),
                _ => String::new(),
            };
            self.rows.push(Row {
                path: report.path.clone(),
                at,
                severity: d.severity,
                rule: d.rule.clone(),
                message: d.message.clone(),
            });
        }
    }

    /// The totals, then the findings.
    pub fn render(&self, summary: &Summary, width: Option<usize>, style: Style) -> String {
        let mut t = String::new();
        let (mark, paint) = if summary.invalid > 0 {
            ("✗", Paint::Red)
        } else if summary.warnings > 0 {
            ("!", Paint::Yellow)
        } else {
            ("✓", Paint::Green)
        };
        let line = summary.line();
        let line = term::fit(&format!("{mark} {line}"), width);
        let _ = writeln!(t, "{}", style.paint(Some(paint), &line));
        if let Some(line) = self.by_rule_line() {
            let _ = writeln!(t, "{}", term::fit(&line, width));
        }
        if self.verbose {
            if !self.rendered.is_empty() {
                t.push('\n');
                t.push_str(&term::fit_snippets(self.rendered.trim_end(), width));
                if !t.ends_with('\n') {
                    t.push('\n');
                }
            }
            return t;
        }
        if self.rows.is_empty() {
            return t;
        }
        self.rows_by_document(&mut t, width, style);
        if self.more > 0 {
            let findings = if self.more == 1 {
                "finding"
            } else {
                "findings"
            };
            let more = format!("and {} more {findings}", term::count(self.more));
            let _ = writeln!(t, "{}", term::fit(&more, width));
        }
        t.push('\n');
        t.push_str(&term::wrap(
            "",
            "Every finding in full, with its source line and how to fix it: run again with --verbose",
            width,
            0,
        ));
        t
    }

    /// With many findings from several rules: which rules made them, most first (four
    /// named, the rest counted).
    fn by_rule_line(&self) -> Option<String> {
        let total: usize = self.by_rule.iter().map(|(_, n)| n).sum();
        if self.by_rule.len() <= 1 || total <= SHOWN {
            return None;
        }
        let mut rules = self.by_rule.clone();
        rules.sort_by_key(|r| std::cmp::Reverse(r.1));
        let shown: Vec<String> = rules
            .iter()
            .take(4)
            .map(|(r, n)| format!("{r} {}", term::count(*n)))
            .collect();
        let rest = rules.len().saturating_sub(4);
        let mut line = format!("  by rule: {}", shown.join(", "));
        if rest > 0 {
            let _ = write!(line, " and {}", term::plural(rest, "other", "others"));
        }
        Some(line)
    }

    /// The kept rows: each document's name once, its findings in a table under it.
    fn rows_by_document(&self, t: &mut String, width: Option<usize>, style: Style) {
        for rows in self.rows.chunk_by(|a, b| a.path == b.path) {
            let path = term::fit(&term::one_line(&rows[0].path), width);
            t.push('\n');
            let _ = writeln!(t, "{}", style.paint(Some(Paint::Bold), &path));
            let mut table = Table::new(None).indent(2).flex(3).shrink(2, 12);
            for r in rows {
                let paint = match r.severity {
                    Severity::Error => Paint::Red,
                    Severity::Warning => Paint::Yellow,
                };
                table.row(vec![
                    Cell::new(r.at.as_str()),
                    Cell::painted(r.severity.as_str(), Some(paint)),
                    Cell::new(r.rule.as_str()),
                    Cell::new(term::one_line(&r.message)),
                ]);
            }
            t.push_str(&table.render(width, style));
        }
    }
}
