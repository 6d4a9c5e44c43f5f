//! The one structured error atip reports, and the table of its codes.
//!
//! Every failure atip can end with has an [`ErrorCode`]; each code belongs to exactly one
//! [`Category`], and the category alone decides the exit code (sysexits style). The table
//! below is the single source: `spec/exit-codes.md` documents the same rows, and a test
//! checks that the two agree both ways. Adding a code is one entry in [`error_codes!`].

use serde::{Serialize, Serializer};
use serde_json::Value;

/// Exit codes, one table for every subcommand (see `spec/exit-codes.md`).
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
    /// Writing output failed part-way (stdout closed with an error, device full).
    pub const IO_ERR: u8 = 74;
    /// Temporary failure; retrying may work (lock held, timeout).
    pub const TEMP_FAIL: u8 = 75;
    /// Refused by policy or permissions.
    pub const NO_PERM: u8 = 77;
    /// Configuration error.
    pub const CONFIG: u8 = 78;
}

/// Broad kind of failure, for agents deciding what to do next; decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The caller asked for something malformed (exit 2).
    Usage,
    /// Input data is malformed (exit 65).
    Data,
    /// Input is missing or unreadable (exit 66).
    Input,
    /// A tool or service is unavailable (exit 69).
    Unavailable,
    /// Output could not be created (exit 73).
    Output,
    /// Writing output failed part-way (exit 74).
    Io,
    /// Try again later (exit 75).
    Temporary,
    /// Refused by policy, or needs confirmation (exit 77).
    Policy,
    /// Bad configuration (exit 78).
    Config,
    /// A bug in atip (exit 70).
    Internal,
}

impl Category {
    /// Every category, in table order.
    pub const ALL: &'static [Category] = &[
        Category::Usage,
        Category::Data,
        Category::Input,
        Category::Unavailable,
        Category::Output,
        Category::Io,
        Category::Temporary,
        Category::Policy,
        Category::Config,
        Category::Internal,
    ];

    /// The exit code for this category.
    pub fn exit_code(self) -> u8 {
        match self {
            Category::Usage => exit::USAGE,
            Category::Data => exit::DATA,
            Category::Input => exit::NO_INPUT,
            Category::Unavailable => exit::UNAVAILABLE,
            Category::Output => exit::CANT_CREATE,
            Category::Io => exit::IO_ERR,
            Category::Temporary => exit::TEMP_FAIL,
            Category::Policy => exit::NO_PERM,
            Category::Config => exit::CONFIG,
            Category::Internal => exit::SOFTWARE,
        }
    }

    /// The name used in JSON and in `spec/exit-codes.md`.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Usage => "usage",
            Category::Data => "data",
            Category::Input => "input",
            Category::Unavailable => "unavailable",
            Category::Output => "output",
            Category::Io => "io",
            Category::Temporary => "temporary",
            Category::Policy => "policy",
            Category::Config => "config",
            Category::Internal => "internal",
        }
    }
}

/// Declares [`ErrorCode`]: one line per code — variant, wire name, category, meaning.
macro_rules! error_codes {
    ($( $variant:ident = $name:literal, $category:ident, $meaning:literal; )*) => {
        /// A stable, machine-readable error code. Serialized as its snake_case name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $( #[doc = $meaning] $variant, )*
        }

        impl ErrorCode {
            /// Every code, in table order.
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$variant, )* ];

            /// The wire name, e.g. `tool_not_found`.
            pub fn as_str(self) -> &'static str {
                match self { $( ErrorCode::$variant => $name, )* }
            }

            /// The one category this code belongs to.
            pub(crate) fn category(self) -> Category {
                match self { $( ErrorCode::$variant => Category::$category, )* }
            }

            /// One line saying when the code is used.
            pub fn meaning(self) -> &'static str {
                match self { $( ErrorCode::$variant => $meaning.trim(), )* }
            }
        }
    };
}

error_codes! {
    Usage = "usage", Usage, " The command line is wrong: unknown flag, bad value, missing or conflicting argument.";
    InvalidGlob = "invalid_glob", Usage, " A glob pattern does not parse.";
    McpServerNotFound = "mcp_server_not_found", Usage, " No MCP server of this name is configured.";
    McpToolNotFound = "mcp_tool_not_found", Usage, " An MCP server has no tool of this name.";
    OutputDirNeeded = "output_dir_needed", Usage, " `export --format skill` of several tools needs `-o DIR`.";
    ArgsMalformed = "args_malformed", Data, " Tool-call arguments are not valid JSON.";
    ArgsInvalid = "args_invalid", Data, " Tool-call arguments are not an object matching the tool's input schema.";
    ArgsUnusable = "args_unusable", Data, " An argument value cannot be put on a command line.";
    CallsMalformed = "calls_malformed", Data, " A provider response (`exec --calls`) is not valid JSON.";
    CallsInvalid = "calls_invalid", Data, " A provider response does not have the provider's tool-call shape.";
    MetadataInvalid = "metadata_invalid", Data, " A metadata document (a file, stdin, or a stored registry file) cannot be used.";
    MetadataTampered = "metadata_tampered", Data, " A stored metadata file no longer matches the hash the registry recorded.";
    RegistryCorrupt = "registry_corrupt", Data, " `registry.json` is not a valid registry.";
    InputNotFound = "input_not_found", Input, " An input file or directory does not exist.";
    InputUnreadable = "input_unreadable", Input, " An input file, directory or stdin cannot be read.";
    RegistryNotFound = "registry_not_found", Input, " There is no registry yet (run `atip scan`).";
    RegistryUnreadable = "registry_unreadable", Input, " `registry.json` or a stored metadata file exists but cannot be read.";
    ToolNotFound = "tool_not_found", Input, " No registered tool has this name.";
    CommandNotFound = "command_not_found", Input, " A tool has no command at this path.";
    PolicyUnreadable = "policy_unreadable", Input, " The policy file cannot be read.";
    ToolUnavailable = "tool_unavailable", Unavailable, " A registered tool cannot be started.";
    CwdUnavailable = "cwd_unavailable", Unavailable, " The working directory cannot be read.";
    McpFailed = "mcp_failed", Unavailable, " The MCP session could not start or broke.";
    McpConnectFailed = "mcp_connect_failed", Unavailable, " An MCP server could not be started, reached or initialized.";
    McpServerExited = "mcp_server_exited", Unavailable, " The connection to an MCP server closed in the middle of a request.";
    McpServerError = "mcp_server_error", Unavailable, " An MCP server answered a request with a JSON-RPC error.";
    McpListCapped = "mcp_list_capped", Unavailable, " An MCP server's list (`tools/list`) ran past atip's cap on pages or bytes; atip stopped reading it.";
    RegistryWriteFailed = "registry_write_failed", Output, " The registry could not be written; the old one is untouched.";
    FileWriteFailed = "file_write_failed", Output, " An output file could not be created or written; no partial file is left.";
    StdoutWriteFailed = "stdout_write_failed", Io, " Writing to stdout failed (e.g. a full device); a closed pipe is not an error.";
    RegistryLocked = "registry_locked", Temporary, " Another atip run holds the registry lock too long.";
    Timeout = "timeout", Temporary, " A tool call ran past its timeout and was killed.";
    Cancelled = "cancelled", Temporary, " A tool call was cancelled and killed.";
    McpTimeout = "mcp_timeout", Temporary, " An MCP server did not answer within the timeout; its process group was killed.";
    Interrupted = "interrupted", Temporary, " atip was interrupted (SIGINT/SIGTERM) and wrote nothing.";
    Busy = "busy", Temporary, " `atip mcp` already runs `--jobs` calls and the policy refuses more (`limits.overflow: refuse`).";
    RateLimited = "rate_limited", Temporary, " An `atip mcp` session started more calls in a minute than `limits.callsPerMinute`.";
    SessionBudgetExceeded = "session_budget_exceeded", Temporary, " An `atip mcp` session ran `limits.maxSessionCalls` calls.";
    PolicyDenied = "policy_denied", Policy, " The policy refuses this call.";
    ConfirmationRequired = "confirmation_required", Policy, " The call needs confirmation (`--yes`, a terminal, or the policy).";
    ConfirmationDeclined = "confirmation_declined", Policy, " A human declined the call.";
    IntegrityChanged = "integrity_changed", Policy, " The executable changed since the scan (rule `integrity.changed`): not run.";
    PathOutsideRoots = "path_outside_roots", Policy, " A path argument lies outside the policy's allowed roots.";
    CallBudgetExceeded = "call_budget_exceeded", Policy, " More tool calls in one response than the policy allows.";
    EndpointRejected = "endpoint_rejected", Usage, " The model endpoint refused the request (HTTP 4xx other than 401, 403, 408, 409, 429): unknown model, bad request.";
    EndpointMalformed = "endpoint_malformed", Data, " The model endpoint's response is not JSON, or not the API's shape.";
    EndpointUnavailable = "endpoint_unavailable", Unavailable, " The model endpoint kept failing (HTTP 5xx, 408, 409) through the retries.";
    EndpointUnreachable = "endpoint_unreachable", Unavailable, " The model endpoint cannot be reached, or kept dropping the connection mid-response.";
    EndpointRateLimited = "endpoint_rate_limited", Temporary, " The model endpoint kept answering 429 through the retries.";
    EndpointTimeout = "endpoint_timeout", Temporary, " A model request ran past `--request-timeout` through the retries.";
    RunTimeout = "run_timeout", Temporary, " `atip chat` reached its `--run-timeout`.";
    TurnLimit = "turn_limit", Policy, " `atip chat`: the model still wanted tools after `--max-turns` requests.";
    CallLimit = "call_limit", Policy, " `atip chat`: the model still wanted tools after the `--max-calls` budget was spent.";
    CallBudgetExhausted = "call_budget_exhausted", Policy, " A tool call past `atip chat --max-calls`; it did not run (told to the model).";
    ModelBlocked = "model_blocked", Policy, " The model refused the conversation (Gemini `blockReason`).";
    ApiKeyMissing = "api_key_missing", Config, " No API key for a hosted model API (`atip chat`).";
    InsecureEndpoint = "insecure_endpoint", Config, " An API key would travel over plain http to another machine.";
    EndpointAuth = "endpoint_auth", Config, " The model endpoint refused the API key (HTTP 401 or 403).";
    ConfigInvalid = "config_invalid", Config, " `config.json` is invalid.";
    McpConfigInvalid = "mcp_config_invalid", Config, " An MCP server config (`mcp.json`, `.mcp.json`) is invalid.";
    McpConfigUntrusted = "mcp_config_untrusted", Policy, " A project's `.mcp.json` is not trusted (review it, then `atip mcp trust`), or sits where others can write it.";
    McpImportFailed = "mcp_import_failed", Config, " An agent host's MCP config cannot be imported.";
    McpHostConfigInvalid = "mcp_host_config_invalid", Config, " `atip mcp install|uninstall`: the agent host's config file is not valid JSON/TOML or not the host's shape; it was not changed.";
    PolicyInvalid = "policy_invalid", Config, " The policy file is invalid.";
    SigningKeyInvalid = "signing_key_invalid", Input, " A minisign key file cannot be read, or is not an unencrypted minisign key.";
    RemoteRegistryExists = "remote_registry_exists", Usage, " `atip registry add`: a registry of this name is already in `registries.json`.";
    RemoteRegistryNotFound = "remote_registry_not_found", Usage, " No remote registry of this name in `registries.json`.";
    RemoteRegistryUnreachable = "remote_registry_unreachable", Unavailable, " `atip registry add`: the URL could not be reached for its manifest (connection, timeout, HTTP error, auth); nothing was saved.";
    RegistryManifestInvalid = "registry_manifest_invalid", Data, " `atip registry add`: the URL has no `.well-known/atip-registry.json`, or not one atip reads; nothing was saved.";
    RegistriesInvalid = "registries_invalid", Config, " `registries.json` is invalid (or a registry's token variable is unset).";
    NoRegistries = "no_registries", Config, " `atip sync` with no enabled remote registry in `registries.json`.";
    SyncFailed = "sync_failed", Temporary, " A remote registry could not be reached or read; its cached shims and registry entries were kept.";
    ShimsRefused = "shims_refused", Data, " A remote registry published shims that failed verification (hash, validation or signature); they were not used.";
    CatalogRefused = "catalog_refused", Data, " A remote registry served a catalog older than (or differing from) the generation accepted before, without a generation, or expired; the accepted catalog was kept.";
    Internal = "internal", Internal, " A bug in atip: please report it.";
}

impl ErrorCode {
    /// The code with this wire name.
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == name)
    }

    /// The exit code an error with this code ends atip with.
    pub fn exit_code(self) -> u8 {
        self.category().exit_code()
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// What a caller (often a model) should do about an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SuggestedAction {
    /// Call again with the corrected input in `example`.
    RetryWithModifiedInput,
    /// Call a different tool or command (named in `example`).
    UseDifferentTool,
    /// Stop: retrying will not help without a human.
    Abort,
}

/// How far the `example` of a suggestion can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Applicability {
    /// Correct as given; can be applied without review.
    MachineApplicable,
    /// Probably what was meant, but a guess (e.g. the closest name).
    MaybeIncorrect,
    /// A template: parts in `<angle brackets>` must be filled in.
    HasPlaceholders,
}

/// An actionable fix: what to do, and a concrete corrected example when atip knows one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suggestion {
    /// What to do next.
    pub action: SuggestedAction,
    /// What to do differently, in words.
    pub fix: String,
    /// The corrected input: a command line, a tool name or an arguments object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<Value>,
    /// How far `example` can be trusted.
    pub applicability: Applicability,
}

impl Suggestion {
    /// A suggestion without an example.
    pub fn new(action: SuggestedAction, fix: impl Into<String>) -> Self {
        Suggestion {
            action,
            fix: fix.into(),
            example: None,
            applicability: Applicability::HasPlaceholders,
        }
    }

    /// Adds the corrected example and how far it can be trusted.
    pub fn example(mut self, example: impl Into<Value>, applicability: Applicability) -> Self {
        self.example = Some(example.into());
        self.applicability = applicability;
        self
    }
}

/// A failure as atip reports it:
/// `{"error": {code, category, message, hint, suggestion, retryable, details}}`.
#[derive(Debug, Clone, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct AtipError {
    /// Stable machine-readable code.
    pub code: ErrorCode,
    /// Broad kind; always `code.category()`; decides the exit code.
    pub category: Category,
    /// What went wrong, lowercase, naming the path or value.
    pub message: String,
    /// How to fix it, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// A structured fix with a corrected example, when atip knows one (boxed: keeps
    /// `Result<_, AtipError>` small).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<Box<Suggestion>>,
    /// Whether retrying the same call may succeed.
    pub retryable: bool,
    /// Anything structured that helps (boxed: keeps `Result<_, AtipError>` small).
    #[serde(skip_serializing_if = "is_null")]
    pub details: Box<Value>,
}

impl AtipError {
    /// A new error with no hint or details; the category follows from the code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let category = code.category();
        AtipError {
            code,
            category,
            message: message.into(),
            hint: None,
            suggestion: None,
            retryable: category == Category::Temporary,
            details: Box::new(Value::Null),
        }
    }

    /// A usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        AtipError::new(ErrorCode::Usage, message)
    }

    /// Reading `path` failed: `input_not_found` when it does not exist, else `input_unreadable`.
    pub fn read_failed(what: &str, path: &std::path::Path, e: &std::io::Error) -> Self {
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            ErrorCode::InputNotFound
        } else {
            ErrorCode::InputUnreadable
        };
        AtipError::new(
            code,
            format!("failed to read {what}{}: {e}", path.display()),
        )
        .details(serde_json::json!({ "path": path }))
    }

    /// Adds a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Adds a structured suggestion.
    pub fn suggest(mut self, suggestion: Suggestion) -> Self {
        self.suggestion = Some(Box::new(suggestion));
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

    /// The error as text lines: `error: MESSAGE`, then `  hint: …` and `  try: …`, each
    /// part wrapped to `width` columns when given (stderr's terminal), its continuation
    /// lines under the part's text.
    pub(crate) fn to_text_fitted(&self, width: Option<usize>) -> String {
        use super::term::wrap_diagnostic;
        let mut text = wrap_diagnostic("error: ", &self.message, width);
        if let Some(hint) = &self.hint {
            text.push_str(&wrap_diagnostic("  hint: ", hint, width));
        }
        if let Some(s) = &self.suggestion
            && let Some(example) = &s.example
        {
            let shown = match example {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            text.push_str(&wrap_diagnostic("  try: ", &shown, width));
        }
        text
    }

    /// The error as one JSON line: `{"error": {...}}`.
    pub(crate) fn to_json_line(&self) -> String {
        serde_json::json!({ "error": self }).to_string()
    }
}

fn is_null(value: &Value) -> bool {
    value.is_null()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            assert!(seen.insert(c.as_str()), "duplicate code {c}");
            assert!(
                c.as_str()
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch == '_'),
                "{c} is not snake_case"
            );
            assert_eq!(ErrorCode::from_name(c.as_str()), Some(*c));
        }
    }

    /// `spec/exit-codes.md` lists every code with its category and exit code, and
    /// nothing else: the table and the enum agree both ways.
    #[test]
    fn spec_table_matches_the_enum() {
        let spec = include_str!("../../../../spec/exit-codes.md");
        let section = spec
            .split("## Error codes")
            .nth(1)
            .expect("spec/exit-codes.md has an `## Error codes` section");
        let mut documented = Vec::new();
        for line in section.lines().take_while(|l| !l.starts_with("## ")) {
            let cells: Vec<&str> = line
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            if cells.len() < 3 || !cells[0].starts_with('`') {
                continue;
            }
            let name = cells[0].trim_matches('`');
            let category = cells[1].trim_matches('`');
            let exit: u8 = cells[2]
                .parse()
                .unwrap_or_else(|_| panic!("bad exit code in row {line}"));
            let code = ErrorCode::from_name(name).unwrap_or_else(|| {
                panic!("spec/exit-codes.md documents `{name}`, which ErrorCode lacks")
            });
            assert_eq!(code.category().as_str(), category, "category of {name}");
            assert_eq!(code.exit_code(), exit, "exit code of {name}");
            documented.push(code);
        }
        for c in ErrorCode::ALL {
            assert!(
                documented.contains(c),
                "ErrorCode::{c:?} (`{c}`) is missing from spec/exit-codes.md"
            );
        }
        assert_eq!(
            documented.len(),
            ErrorCode::ALL.len(),
            "a code is documented twice"
        );
    }

    /// Every other spec that names an error code beside an exit code says the exit code
    /// the enum gives it: in a table with an `exit` (or `atip`) column, each code named
    /// in a row exits with one of that cell's numbers (and is of the row's `category`,
    /// when there is one); in prose, `` `code` (…exit N) `` says N.
    #[test]
    fn every_spec_naming_a_code_agrees_with_the_enum() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec");
        let mut problems = Vec::new();
        let mut checked = 0;
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .filter(|p| !p.ends_with("exit-codes.md"))
            // `mcp` (the mcp-cli document's command) exits with the document's own
            // codes; its spec maps atip's codes onto them in a table of its own.
            .filter(|p| !p.ends_with("mcp-cli.md"))
            .collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            checked += spec_disagreements(&text, &file, &mut problems);
        }
        assert!(
            checked > 30,
            "the checks found only {checked} codes to check"
        );
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    /// The error codes named in backticks in `s`.
    fn named_codes(s: &str) -> Vec<ErrorCode> {
        s.split('`')
            .skip(1)
            .step_by(2)
            .filter_map(ErrorCode::from_name)
            .collect()
    }

    /// A markdown table row's cells, trimmed.
    fn cells(l: &str) -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    }

    /// Checks one spec's tables and prose; returns how many code mentions it checked.
    fn spec_disagreements(text: &str, file: &str, problems: &mut Vec<String>) -> usize {
        let mut checked = 0;
        // In the table being read: the column of atip's exit code, and of the category.
        let mut columns: Option<(usize, Option<usize>)> = None;
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            if !line.trim_start().starts_with('|') {
                columns = None;
            } else if lines
                .peek()
                .is_some_and(|n| n.trim_start().starts_with("|---"))
            {
                let head = cells(line);
                let exit = head
                    .iter()
                    .position(|h| matches!(h.to_lowercase().as_str(), "exit" | "atip"));
                let category = head.iter().position(|h| h.eq_ignore_ascii_case("category"));
                columns = exit.map(|e| (e, category));
                lines.next();
                continue;
            } else if let Some((exit, category)) = columns {
                checked += row_disagreements(line, exit, category, file, problems);
            }
            checked += prose_disagreements(line, file, problems);
        }
        checked
    }

    /// One table row: each code it names must exit with a number of its exit cell and
    /// belong to its category cell.
    fn row_disagreements(
        line: &str,
        exit: usize,
        category: Option<usize>,
        file: &str,
        problems: &mut Vec<String>,
    ) -> usize {
        let row = cells(line);
        let Some(cell) = row.get(exit) else { return 0 };
        let numbers: Vec<u8> = cell
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect();
        if numbers.is_empty() {
            return 0;
        }
        let mut checked = 0;
        for code in named_codes(line) {
            checked += 1;
            if !numbers.contains(&code.exit_code()) {
                problems.push(format!(
                    "{file}: `{code}` exits {}, the row says {cell}: {line}",
                    code.exit_code()
                ));
            }
            if let Some(c) = category.and_then(|c| row.get(c))
                && Category::ALL.iter().any(|k| k.as_str() == c.as_str())
                && code.category().as_str() != c
            {
                problems.push(format!(
                    "{file}: `{code}` is {}, the row says {c}: {line}",
                    code.category().as_str()
                ));
            }
        }
        checked
    }

    /// Prose: `code` (…exit N) must name the code's own exit status.
    fn prose_disagreements(line: &str, file: &str, problems: &mut Vec<String>) -> usize {
        let mut checked = 0;
        for (i, part) in line.split('`').enumerate().skip(1).step_by(2) {
            let Some(code) = ErrorCode::from_name(part) else {
                continue;
            };
            let after = line.split('`').nth(i + 1).unwrap_or("");
            let Some(paren) = after.strip_prefix(" (") else {
                continue;
            };
            let inside = paren.split(')').next().unwrap_or("");
            let Some(n) = inside
                .split("exit ")
                .nth(1)
                .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|d| d.parse::<u8>().ok())
            else {
                continue;
            };
            checked += 1;
            if n != code.exit_code() {
                problems.push(format!(
                    "{file}: `{code}` exits {}, the text says {n}: {line}",
                    code.exit_code()
                ));
            }
        }
        checked
    }

    #[test]
    fn a_spec_that_disagrees_is_caught() {
        let mut p = Vec::new();
        let text = "| code | category | exit |\n|---|---|---|\n| `tool_not_found` | input | 75 |\n\nA timeout is `mcp_timeout` (exit 130).\n";
        assert_eq!(spec_disagreements(text, "x.md", &mut p), 2);
        assert_eq!(p.len(), 2, "{p:?}");
        let mut ok = Vec::new();
        let good = "| atip | when |\n|---|---|\n| 66 | `tool_not_found` |\n";
        assert_eq!(spec_disagreements(good, "y.md", &mut ok), 1);
        assert!(ok.is_empty(), "{ok:?}");
    }

    #[test]
    fn categories_have_distinct_exit_codes() {
        let mut seen = std::collections::HashSet::new();
        for c in Category::ALL {
            assert!(seen.insert(c.exit_code()), "{c:?} shares an exit code");
        }
    }

    #[test]
    fn error_serializes_code_category_and_suggestion() {
        let e = AtipError::new(ErrorCode::ToolNotFound, "no tool named \"gti\"").suggest(
            Suggestion::new(SuggestedAction::UseDifferentTool, "call git instead")
                .example("git", Applicability::MaybeIncorrect),
        );
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["code"], "tool_not_found");
        assert_eq!(v["category"], "input");
        assert_eq!(v["suggestion"]["action"], "use_different_tool");
        assert_eq!(v["suggestion"]["applicability"], "maybe_incorrect");
        assert_eq!(v["suggestion"]["example"], "git");
        assert_eq!(e.exit_code(), 66);
        assert!(e.to_text_fitted(None).contains("try: git"));
    }
}
