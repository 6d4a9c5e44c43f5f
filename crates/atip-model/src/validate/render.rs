//! How validation and lint results look: rustc-style text, a JSON array, JSON Lines,
//! SARIF 2.1.0, GitHub workflow annotations.
//!
//! Owns the four printers, shared by `atip validate` and `atip lint` (which passes its own
//! rule catalogue for SARIF). Each streams: `begin`, one `file` per document as results
//! arrive, `end` with the totals, so a run over 10,000 files never holds them all.
//! Text uses `annotate-snippets` to show the offending source line with a caret.
//!
//! Must not check anything or choose exit codes.

use super::rules::{RULES, RuleInfo};
use super::run::{FileReport, Summary};
use super::{Diagnostic, Severity};
use annotate_snippets::{AnnotationKind, Group, Level, Origin, Renderer, Snippet};
use serde_json::{Value, json};
use std::io::{self, Write};
use std::ops::Range;

/// Output format of `atip validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Human-readable, with source snippets.
    Text {
        /// ANSI colours.
        color: bool,
    },
    /// One JSON array, one object per document (see `spec/validate.md`).
    Json,
    /// One JSON object per document per line.
    Jsonl,
    /// SARIF 2.1.0.
    Sarif,
    /// GitHub Actions workflow commands (`::error file=…,line=…::…`), one per finding.
    Github,
}

/// validate's catalogue alone.
static VALIDATE_ONLY: &[&[RuleInfo]] = &[RULES];

/// A streaming printer.
pub struct Printer<W: Write> {
    out: W,
    format: Format,
    first: bool,
    catalogues: &'static [&'static [RuleInfo]],
}

impl<W: Write> Printer<W> {
    /// A printer writing to `out`.
    pub fn new(out: W, format: Format) -> Self {
        Printer {
            out,
            format,
            first: true,
            catalogues: VALIDATE_ONLY,
        }
    }

    /// Uses these rule catalogues (in order) for SARIF's `rules` and `ruleIndex`
    /// instead of validate's alone.
    pub fn with_catalogues(mut self, catalogues: &'static [&'static [RuleInfo]]) -> Self {
        self.catalogues = catalogues;
        self
    }

    /// Writes what comes before the first document.
    pub fn begin(&mut self) -> io::Result<()> {
        match self.format {
            Format::Text { .. } | Format::Jsonl | Format::Github => Ok(()),
            Format::Json => self.out.write_all(b"["),
            Format::Sarif => {
                let head = sarif_head(self.catalogues);
                let text = serde_json::to_string(&head).map_err(io::Error::other)?;
                // Open the results array inside runs[0]: the head ends with `"results":[]}]}`.
                let cut = text.len() - "]}]}".len();
                self.out.write_all(&text.as_bytes()[..cut])
            }
        }
    }

    /// Writes one document's results.
    pub fn file(&mut self, report: &FileReport) -> io::Result<()> {
        match self.format {
            Format::Text { color } => {
                if let Some(rendered) = &report.rendered {
                    self.out.write_all(rendered.as_bytes())?;
                } else if !report.diagnostics.is_empty() {
                    self.out.write_all(text(report, color).as_bytes())?;
                }
                Ok(())
            }
            Format::Jsonl => {
                serde_json::to_writer(&mut self.out, report).map_err(io::Error::other)?;
                self.out.write_all(b"\n")
            }
            Format::Json => {
                let sep = if self.first { "\n" } else { ",\n" };
                self.first = false;
                self.out.write_all(sep.as_bytes())?;
                serde_json::to_writer(&mut self.out, report).map_err(io::Error::other)
            }
            Format::Sarif => {
                for d in &report.diagnostics {
                    let sep = if self.first { "" } else { "," };
                    self.first = false;
                    self.out.write_all(sep.as_bytes())?;
                    let result = sarif_result_in(self.catalogues, &report.path, d);
                    serde_json::to_writer(&mut self.out, &result).map_err(io::Error::other)?;
                }
                Ok(())
            }
            Format::Github => {
                for d in &report.diagnostics {
                    writeln!(self.out, "{}", github_annotation(&report.path, d))?;
                }
                Ok(())
            }
        }
    }

    /// Writes what comes after the last document.
    pub fn end(&mut self, summary: &Summary) -> io::Result<()> {
        match self.format {
            Format::Text { .. } | Format::Github => writeln!(self.out, "{}", summary.line())?,
            Format::Json => self
                .out
                .write_all(if self.first { b"]\n" } else { b"\n]\n" })?,
            Format::Sarif => self.out.write_all(b"]}]}\n")?,
            Format::Jsonl => {}
        }
        self.out.flush()
    }
}

/// Moves a byte index down to a char boundary.
fn floor_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Lines longer than this (minified JSON) are not shown; the position still is.
const MAX_SHOWN_LINE: usize = 512;

/// The source line holding `span` and the span within it (cut to that line), or `None`
/// when the line is too long to show. Costs at most `MAX_SHOWN_LINE` bytes of scanning,
/// so thousands of findings in a huge minified file stay cheap.
fn line_snippet<'s>(src: &'s str, span: &Range<usize>) -> Option<(&'s str, Range<usize>)> {
    let start = floor_boundary(src, span.start);
    let back = floor_boundary(src, start.saturating_sub(MAX_SHOWN_LINE));
    let line_start = match src[back..start].rfind('\n') {
        Some(i) => back + i + 1,
        None if back == 0 => 0,
        None => return None,
    };
    let ahead = floor_boundary(src, start + MAX_SHOWN_LINE);
    let line_end = match src[start..ahead].find('\n') {
        Some(i) => start + i,
        None if ahead == src.len() => src.len(),
        None => return None,
    };
    if line_end - line_start > MAX_SHOWN_LINE {
        return None;
    }
    let mut end = floor_boundary(src, span.end.clamp(start, line_end));
    if end <= start {
        // Point at one character (or just past the end of the line).
        end = src[start..line_end]
            .chars()
            .next()
            .map_or(start, |c| start + c.len_utf8());
    }
    Some((
        &src[line_start..line_end],
        start - line_start..end - line_start,
    ))
}

/// Renders one document's diagnostics like rustc: title with rule id, the source line
/// with a caret under the span, and the hint.
pub fn text(report: &FileReport, color: bool) -> String {
    text_with(report, report.source.as_deref(), color)
}

/// [`text`] with the source given separately (it need not live in the report).
pub fn text_with(report: &FileReport, source: Option<&[u8]>, color: bool) -> String {
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let source = source.map(|bytes| {
        let bytes = bytes.strip_prefix(super::parse::BOM).unwrap_or(bytes);
        String::from_utf8_lossy(bytes)
    });
    let mut out = String::new();
    for d in &report.diagnostics {
        let level = match d.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
        };
        let title = level.primary_title(d.message.as_str()).id(d.rule.as_str());
        let snippet = match (&source, &d.span) {
            (Some(src), Some(span)) => line_snippet(src, span),
            _ => None,
        };
        let mut group = match snippet {
            Some((line_text, span)) => {
                let label = d.pointer.clone();
                title.element(
                    Snippet::source(line_text)
                        .path(report.path.as_str())
                        .line_start(d.line.unwrap_or(1))
                        .annotation(AnnotationKind::Primary.span(span).label(label)),
                )
            }
            None => {
                let mut origin = Origin::path(report.path.as_str());
                if let (Some(line), Some(col)) = (d.line, d.column) {
                    origin = origin.line(line).char_column(col);
                }
                let g = title.element(origin);
                if d.pointer.is_empty() {
                    g
                } else {
                    g.element(Level::NOTE.message(format!("at {}", d.pointer)))
                }
            }
        };
        if let Some(hint) = &d.hint {
            group = group.element(Level::HELP.message(hint.as_str()));
        }
        let groups: [Group<'_>; 1] = [group];
        out.push_str(&renderer.render(&groups));
        out.push_str("\n\n");
    }
    out
}

fn sarif_level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// `runs[0]` without results: the tool and every rule of the catalogues.
fn sarif_head(catalogues: &[&[RuleInfo]]) -> Value {
    let rules: Vec<Value> = catalogues
        .iter()
        .flat_map(|c| c.iter())
        .map(|r| {
            json!({
                "id": r.id,
                "shortDescription": {"text": r.summary},
                "help": {"text": r.hint},
                "helpUri": r.help_uri,
                "defaultConfiguration": {"level": sarif_level(r.severity)}
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "atip",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://atip.dev",
                "rules": rules
            }},
            "columnKind": "unicodeCodePoints",
            "results": []
        }]
    })
}

/// A SARIF artifact URI for a path: relative paths stay relative, characters outside
/// the URI set are percent-encoded.
fn sarif_uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One SARIF result (rule indexes from validate's catalogue).
pub fn sarif_result(path: &str, d: &Diagnostic) -> Value {
    sarif_result_in(&[RULES], path, d)
}

/// One SARIF result, its `ruleIndex` counted over `catalogues` in order.
pub(crate) fn sarif_result_in(catalogues: &[&[RuleInfo]], path: &str, d: &Diagnostic) -> Value {
    let mut physical = json!({"artifactLocation": {"uri": sarif_uri(path)}});
    if let (Some(line), Some(col)) = (d.line, d.column) {
        physical["region"] = json!({"startLine": line, "startColumn": col});
    }
    let mut location = json!({"physicalLocation": physical});
    if !d.pointer.is_empty() {
        location["logicalLocations"] = json!([{"fullyQualifiedName": d.pointer, "kind": "member"}]);
    }
    let mut message = d.message.clone();
    if let Some(hint) = &d.hint {
        message.push_str(" (hint: ");
        message.push_str(hint);
        message.push(')');
    }
    let mut result = json!({
        "ruleId": d.rule,
        "level": sarif_level(d.severity),
        "message": {"text": message},
        "locations": [location],
        "properties": {"pointer": d.pointer}
    });
    let index = catalogues
        .iter()
        .flat_map(|c| c.iter())
        .position(|r| r.id == d.rule);
    debug_assert!(index.is_some(), "rule {} is in no catalogue", d.rule);
    if let Some(index) = index {
        result["ruleIndex"] = json!(index);
    }
    result
}

/// Escapes the message part of a GitHub workflow command.
fn github_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property value of a GitHub workflow command (also `:` and `,`).
fn github_property(text: &str) -> String {
    github_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// One GitHub Actions annotation, e.g.
/// `::warning file=shims/x.json,line=3,col=5,title=effects-unstated::message (hint: …)`.
pub(crate) fn github_annotation(path: &str, d: &Diagnostic) -> String {
    let mut props = format!("file={}", github_property(path));
    if let (Some(line), Some(col)) = (d.line, d.column) {
        props.push_str(&format!(",line={line},col={col}"));
    }
    props.push_str(&format!(",title={}", github_property(&d.rule)));
    let mut message = d.message.clone();
    if !d.pointer.is_empty() {
        message.push_str(&format!(" [at {}]", d.pointer));
    }
    if let Some(hint) = &d.hint {
        message.push_str(&format!(" (hint: {hint})"));
    }
    format!(
        "::{} {props}::{}",
        match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        },
        github_data(&message)
    )
}
