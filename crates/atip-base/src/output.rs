//! Output conventions shared by every subcommand: the output format, the error codes
//! with their exit codes (sysexits style, see spec/exit-codes.md) and the one structured
//! error type the binary renders, as text or as JSON on stderr.
//!
//! Must not decide what a command does; it only says how results and failures look.

mod error;
mod printer;
mod status;
pub mod term;
pub mod text;

pub use error::{Applicability, AtipError, Category, ErrorCode, SuggestedAction, Suggestion, exit};
pub use printer::{
    ColorChoice, Printer, PrinterLog, RAW_LOG, StdoutWriter, Verbosity, stdout_failed,
};
use serde::Serialize;
pub use status::ExitStatus;
use std::io::IsTerminal;

/// How results are printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// Text on a terminal, JSON when piped.
    Auto,
    /// Human-readable text.
    Text,
    /// Stable, documented JSON.
    Json,
    /// One JSON object per line (commands that print lists: list, search, validate, scan).
    Jsonl,
    /// SARIF 2.1.0 (`atip validate`, `atip lint`).
    Sarif,
    /// GitHub Actions workflow annotations (`atip validate`, `atip lint`).
    Github,
    /// Markdown, e.g. for a pull-request comment (`atip diff`).
    Markdown,
}

impl OutputFormat {
    /// Resolves `auto` against whether stdout is a terminal.
    pub fn resolve(self) -> OutputFormat {
        match self {
            OutputFormat::Auto if std::io::stdout().is_terminal() => OutputFormat::Text,
            OutputFormat::Auto => OutputFormat::Json,
            other => other,
        }
    }

    /// Whether JSON is wanted (after resolving `auto`); JSON Lines and SARIF are JSON too.
    pub fn is_json(self) -> bool {
        matches!(
            self.resolve(),
            OutputFormat::Json | OutputFormat::Jsonl | OutputFormat::Sarif
        )
    }

    /// The name as given on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            OutputFormat::Auto => "auto",
            OutputFormat::Text => "text",
            OutputFormat::Json => "json",
            OutputFormat::Jsonl => "jsonl",
            OutputFormat::Sarif => "sarif",
            OutputFormat::Github => "github",
            OutputFormat::Markdown => "markdown",
        }
    }

    /// Fails with a usage error unless this (resolved) format is one `command` supports.
    pub fn require(self, command: &str, supported: &[OutputFormat]) -> Result<(), AtipError> {
        if supported.contains(&self) {
            return Ok(());
        }
        let names: Vec<&str> = supported.iter().map(|f| f.name()).collect();
        Err(AtipError::usage(format!(
            "`atip {command}` cannot print --output {}",
            self.name()
        ))
        .hint(format!("use --output {}", names.join(", --output ")))
        .suggest(
            Suggestion::new(
                SuggestedAction::RetryWithModifiedInput,
                format!("choose one of: {}", names.join(", ")),
            )
            .example(
                format!("atip --output {} {command}", names[0]),
                Applicability::MaybeIncorrect,
            ),
        ))
    }
}
