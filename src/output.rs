//! Output conventions shared by every subcommand: the output format, the exit-code
//! table (sysexits style, see spec/exit-codes.md) and the one structured error type the
//! binary renders, as text or as JSON on stderr.
//!
//! Must not decide what a command does; it only says how results and failures look.

use serde::Serialize;
use serde_json::Value;
use std::io::IsTerminal;

/// Exit codes, one table for every subcommand.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// Failure: invalid input document, failed check.
    pub const FAILURE: u8 = 1;
    /// Usage error (bad flags).
    pub const USAGE: u8 = 2;
    /// Input data malformed.
    pub const DATA: u8 = 65;
    /// Input missing or unreadable.
    pub const NO_INPUT: u8 = 66;
    /// A needed service or tool is unavailable.
    pub const UNAVAILABLE: u8 = 69;
    /// Internal software error.
    pub const SOFTWARE: u8 = 70;
    /// Output cannot be created (read-only or full disk).
    pub const CANT_CREATE: u8 = 73;
    /// Temporary failure; retrying may work (lock held, timeout).
    pub const TEMP_FAIL: u8 = 75;
    /// Refused by policy or permissions.
    pub const NO_PERM: u8 = 77;
    /// Configuration error.
    pub const CONFIG: u8 = 78;
}

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

/// Broad kind of failure, for agents deciding what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The caller asked for something malformed.
    Usage,
    /// Input data is malformed.
    Data,
    /// Input is missing or unreadable.
    Input,
    /// A tool or service is unavailable.
    Unavailable,
    /// Output could not be written.
    Output,
    /// Try again later.
    Temporary,
    /// Refused by policy.
    Policy,
    /// Bad configuration.
    Config,
    /// A bug in atip.
    Internal,
}

impl Category {
    /// The exit code for this category.
    pub fn exit_code(self) -> u8 {
        match self {
            Category::Usage => exit::USAGE,
            Category::Data => exit::DATA,
            Category::Input => exit::NO_INPUT,
            Category::Unavailable => exit::UNAVAILABLE,
            Category::Output => exit::CANT_CREATE,
            Category::Temporary => exit::TEMP_FAIL,
            Category::Policy => exit::NO_PERM,
            Category::Config => exit::CONFIG,
            Category::Internal => exit::SOFTWARE,
        }
    }
}

/// A failure as atip reports it: `{"error": {code, category, message, hint, retryable, details}}`.
#[derive(Debug, Clone, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct AtipError {
    /// Stable machine-readable code, e.g. `input_not_found`.
    pub code: String,
    /// Broad kind; decides the exit code.
    pub category: Category,
    /// What went wrong, lowercase, naming the path or value.
    pub message: String,
    /// How to fix it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Whether retrying the same call may succeed.
    pub retryable: bool,
    /// Anything structured that helps (boxed: keeps `Result<_, AtipError>` small).
    #[serde(skip_serializing_if = "is_null")]
    pub details: Box<Value>,
}

impl AtipError {
    /// A new error with no hint or details.
    pub fn new(code: &str, category: Category, message: impl Into<String>) -> Self {
        AtipError {
            code: code.into(),
            category,
            message: message.into(),
            hint: None,
            retryable: category == Category::Temporary,
            details: Box::new(Value::Null),
        }
    }

    /// Adds a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Adds details.
    pub fn details(mut self, details: Value) -> Self {
        self.details = Box::new(details);
        self
    }

    /// The exit code the binary ends with.
    pub fn exit_code(&self) -> u8 {
        self.category.exit_code()
    }

    /// Prints the error on stderr, as JSON when `json` is set.
    pub fn report(&self, json: bool) {
        if json {
            let doc = serde_json::json!({ "error": self });
            eprintln!("{doc}");
        } else {
            eprintln!("error: {}", self.message);
            if let Some(hint) = &self.hint {
                eprintln!("  hint: {hint}");
            }
        }
    }
}

fn is_null(value: &Value) -> bool {
    value.is_null()
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
