//! The one printer: every byte atip writes to stdout or stderr goes through it.
//!
//! Data goes to stdout; warnings, notes and errors go to stderr, once, in one style
//! (`warning: …`, `note: …`, `error: …`). A closed stdout pipe (`atip list | head -1`)
//! ends the output quietly: further writes are skipped and the command exits with its
//! own code. Any other write failure (a full device) is `stdout_write_failed`, exit 74.
//! The CLI layer owns the one `Printer`; library code returns warnings instead of
//! printing them, and what it must say while it works (a wait for the registry lock, a
//! failed audit-log write, an MCP server's log lines) goes to the `log` facade, which the
//! CLI points at [`PrinterLog`]: the same printer style, once. Library code never writes
//! to stdout or stderr itself.

use super::{AtipError, ErrorCode, OutputFormat};
use serde::Serialize;
use std::io::{ErrorKind, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// How much goes to stderr besides errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Verbosity {
    /// Errors only (`--quiet`).
    Quiet,
    /// Errors, warnings and notes.
    #[default]
    Normal,
    /// Also details of what atip is doing (`--verbose`).
    Verbose,
}

/// When to colour text output (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set to a non-empty value.
    #[default]
    Auto,
    /// Always, even into a pipe.
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// The choice with the run's environment applied: `auto` is `never` when `NO_COLOR`
    /// is set to a non-empty value.
    pub fn with_env(self, env: &crate::env::Env) -> ColorChoice {
        match self {
            ColorChoice::Auto if env.non_empty("NO_COLOR").is_some() => ColorChoice::Never,
            other => other,
        }
    }

    /// Whether to colour a stream that is (or is not) a terminal ([`ColorChoice::with_env`]
    /// already applied).
    pub(crate) fn enabled(self, is_terminal: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => is_terminal,
        }
    }
}

/// The printer the CLI hands every subcommand.
#[derive(Debug)]
pub struct Printer {
    format: OutputFormat,
    verbosity: Verbosity,
    color: ColorChoice,
    stdout_closed: AtomicBool,
}

impl Printer {
    /// A printer for `format` (`auto` is resolved here against stdout).
    pub fn new(format: OutputFormat, verbosity: Verbosity, color: ColorChoice) -> Printer {
        Printer {
            format: format.resolve(),
            verbosity,
            color,
            stdout_closed: AtomicBool::new(false),
        }
    }

    /// The output format, `auto` resolved.
    pub fn format(&self) -> OutputFormat {
        self.format
    }

    /// Whether results are JSON (json, jsonl or sarif).
    pub fn is_json(&self) -> bool {
        self.format.is_json()
    }

    /// Whether text on stdout may be coloured.
    pub fn stdout_color(&self) -> bool {
        self.color.enabled(std::io::stdout().is_terminal())
    }

    /// Whether text on stderr may be coloured.
    pub(crate) fn stderr_color(&self) -> bool {
        self.color.enabled(std::io::stderr().is_terminal())
    }

    /// Whether stderr may carry cursor movement, such as a progress bar redrawing
    /// itself: a terminal that is not `TERM=dumb`, with colour not turned off. Whoever
    /// sets `NO_COLOR` or `--color never` asks for text without escape sequences, and
    /// cursor codes are escape sequences too.
    /// `env` is the run's environment (for `TERM`).
    pub fn stderr_escapes(&self, env: &crate::env::Env) -> bool {
        std::io::stderr().is_terminal()
            && env.var_os("TERM").is_none_or(|t| t != "dumb")
            && self.color.enabled(true)
    }

    /// How much goes to stderr.
    pub fn verbosity(&self) -> Verbosity {
        self.verbosity
    }

    /// Whether the reader of stdout has gone away (further output is skipped).
    pub(crate) fn stdout_closed(&self) -> bool {
        self.stdout_closed.load(Ordering::Relaxed)
    }

    /// Writes bytes to stdout and flushes.
    pub fn write(&self, bytes: &[u8]) -> Result<(), AtipError> {
        let mut out = self.stdout();
        out.write_all(bytes)
            .and_then(|_| out.flush())
            .map_err(stdout_failed)
    }

    /// Writes text to stdout.
    pub fn text(&self, text: &str) -> Result<(), AtipError> {
        self.write(text.as_bytes())
    }

    /// Writes a value as pretty JSON and a newline, streamed through a buffer rather
    /// than built whole first: a scan's report of a big PATH is ~240 KB, and a string
    /// grown to it by doubling touched twice that in fresh pages and copied it on the
    /// way (~1 ms of a warm rescan's ~25).
    pub fn json<T: Serialize + ?Sized>(&self, value: &T) -> Result<(), AtipError> {
        let mut out = std::io::BufWriter::with_capacity(JSON_BUFFER, self.stdout());
        serde_json::to_writer_pretty(&mut out, value).map_err(json_failed)?;
        out.write_all(b"\n")
            .and_then(|_| out.flush())
            .map_err(stdout_failed)
    }

    /// Writes each item as one compact JSON line (JSON Lines).
    pub fn json_lines<T: Serialize>(
        &self,
        items: impl IntoIterator<Item = T>,
    ) -> Result<(), AtipError> {
        let mut out = std::io::BufWriter::new(self.stdout());
        for item in items {
            serde_json::to_writer(&mut out, &item).map_err(json_failed)?;
            out.write_all(b"\n").map_err(stdout_failed)?;
            if self.stdout_closed() {
                break;
            }
        }
        out.flush().map_err(stdout_failed)
    }

    /// Stdout as a writer for streaming output: a closed pipe swallows the rest.
    /// Map its errors with [`stdout_failed`].
    pub fn stdout(&self) -> StdoutWriter<'_> {
        StdoutWriter {
            printer: self,
            inner: std::io::stdout(),
        }
    }

    /// `warning: MESSAGE` on stderr, unless quiet.
    pub fn warn(&self, message: impl std::fmt::Display) {
        if self.verbosity >= Verbosity::Normal {
            self.label("warning", "33", &message.to_string());
        }
    }

    /// `note: MESSAGE` on stderr, unless quiet.
    pub fn note(&self, message: impl std::fmt::Display) {
        if self.verbosity >= Verbosity::Normal {
            self.label("note", "36", &message.to_string());
        }
    }

    /// `info: MESSAGE` on stderr, only with `--verbose`.
    pub fn info(&self, message: impl std::fmt::Display) {
        if self.verbosity >= Verbosity::Verbose {
            self.label("info", "2", &message.to_string());
        }
    }

    /// Warnings the library returned, each once.
    pub fn warnings<S: std::fmt::Display>(&self, warnings: impl IntoIterator<Item = S>) {
        for w in warnings {
            self.warn(w);
        }
    }

    /// The error on stderr: one JSON line when results are JSON, else text.
    pub fn error(&self, e: &AtipError) {
        if self.is_json() {
            eprint_all(&format!("{}\n", e.to_json_line()));
        } else {
            let text = e.to_text_fitted(super::term::stderr_width());
            if self.stderr_color() {
                let rest = text.strip_prefix("error:").unwrap_or(&text);
                eprint_all(&format!("\x1b[1;31merror\x1b[0m:{rest}"));
            } else {
                eprint_all(&text);
            }
        }
    }

    /// Raw text on stderr (a tool's own stderr passed through, a summary line).
    pub fn stderr(&self, text: &str) {
        eprint_all(text);
    }

    /// `LABEL: MESSAGE`, wrapped to stderr's terminal (spec/cli.md, terminal output).
    fn label(&self, label: &str, color: &str, message: &str) {
        let text = super::term::wrap_diagnostic(
            &format!("{label}: "),
            message,
            super::term::stderr_width(),
        );
        if self.stderr_color() {
            let rest = text.strip_prefix(label).unwrap_or(&text);
            eprint_all(&format!("\x1b[1;{color}m{label}\x1b[0m{rest}"));
        } else {
            eprint_all(&text);
        }
    }
}

/// The `log` target for lines passed through as they are, with no label: an MCP server's
/// own stderr, `--trace` frames, `atip mcp`'s banner and per-call lines.
pub const RAW_LOG: &str = "atip::raw";

/// The `log` facade's destination in the CLI: warnings as `warning:`, notes as `note:`,
/// debug lines as `info:` (with `--verbose`), [`RAW_LOG`] lines as they are.
#[derive(Debug)]
pub struct PrinterLog(pub Printer);

impl log::Log for PrinterLog {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }

    fn log(&self, record: &log::Record) {
        // Dependencies' own records (reqwest, rustls, rmcp) are not atip's to show.
        if !record.target().starts_with("atip") {
            return;
        }
        if record.target() == RAW_LOG {
            eprint_all(&format!("{}\n", record.args()));
            return;
        }
        match record.level() {
            log::Level::Error | log::Level::Warn => self.0.warn(record.args()),
            log::Level::Info => self.0.note(record.args()),
            log::Level::Debug | log::Level::Trace => self.0.info(record.args()),
        }
    }

    fn flush(&self) {}
}

/// Writes to stderr, ignoring failure: there is nowhere left to report it.
fn eprint_all(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|_| err.flush());
}

/// The error for a failed write to stdout (exit 74).
pub fn stdout_failed(e: std::io::Error) -> AtipError {
    AtipError::new(
        ErrorCode::StdoutWriteFailed,
        format!("failed to write to stdout: {e}"),
    )
    .hint("check the disk or device stdout goes to")
}

/// Stdout where a closed pipe ends the output quietly (see [`Printer::stdout`]).
pub struct StdoutWriter<'a> {
    printer: &'a Printer,
    inner: std::io::Stdout,
}

impl StdoutWriter<'_> {
    fn closed_on(&self, e: &std::io::Error) -> bool {
        if e.kind() == ErrorKind::BrokenPipe {
            self.printer.stdout_closed.store(true, Ordering::Relaxed);
            true
        } else {
            false
        }
    }
}

/// The buffer [`Printer::json`] writes through: a few large writes for a big report.
const JSON_BUFFER: usize = 64 << 10;

/// A failure to write JSON to stdout: the stream's ([`stdout_failed`]), or a value that
/// cannot be serialized (a defect of atip's).
fn json_failed(e: serde_json::Error) -> AtipError {
    if e.is_io() {
        stdout_failed(std::io::Error::from(e))
    } else {
        AtipError::new(ErrorCode::Internal, format!("failed to serialize: {e}"))
    }
}

impl Write for StdoutWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.printer.stdout_closed() {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Err(e) if self.closed_on(&e) => Ok(buf.len()),
            other => other,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.printer.stdout_closed() {
            return Ok(());
        }
        match self.inner.flush() {
            Err(e) if self.closed_on(&e) => Ok(()),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn color_choice_follows_flag_then_terminal() {
        assert!(ColorChoice::Always.enabled(false));
        assert!(!ColorChoice::Never.enabled(true));
        assert!(!ColorChoice::Auto.enabled(false));
        assert!(ColorChoice::Auto.enabled(true));
    }

    #[test]
    fn no_color_turns_auto_off_but_not_always() {
        use crate::env::Env;
        let set = Env::from_pairs([("NO_COLOR", "1")]);
        let empty = Env::from_pairs([("NO_COLOR", "")]);
        assert_eq!(ColorChoice::Auto.with_env(&set), ColorChoice::Never);
        assert_eq!(ColorChoice::Auto.with_env(&empty), ColorChoice::Auto);
        assert_eq!(ColorChoice::Always.with_env(&set), ColorChoice::Always);
    }
}
