//! Output conventions shared by every subcommand: the output format, the error codes
//! with their exit codes (sysexits style, see spec/exit-codes.md) and the one structured
//! error type the binary renders, as text or as JSON on stderr.
//!
//! Must not decide what a command does; it only says how results and failures look.

mod error;

pub use error::{Applicability, AtipError, Category, ErrorCode, SuggestedAction, Suggestion, exit};
use serde::Serialize;
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
    /// SARIF 2.1.0 (`atip validate`, `atip lint`; other commands print JSON).
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

    /// Whether JSON is wanted (after resolving `auto`); SARIF is JSON too.
    pub fn is_json(self) -> bool {
        matches!(self.resolve(), OutputFormat::Json | OutputFormat::Sarif)
    }
}

/// Writes a serializable value as pretty JSON plus newline to stdout; a closed pipe is not an error.
pub fn print_json<T: Serialize>(value: &T) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    match writeln!(out, "{text}").and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Whether colour may be used on stderr (a terminal, and `NO_COLOR` unset).
pub fn stderr_color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}
